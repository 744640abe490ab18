//! A native executor for feed-forward networks of dense layers (x·W + b, then ReLU, sigmoid or a
//! two-way softmax): the shape of every reference model the papers test.
//!
//! Why not always tract: at these widths (12–50 inputs, layers of 30 units or fewer) a general
//! graph runtime spends more on per-call set-up and tensor plumbing than on arithmetic (measured
//! in the README's performance section). This executor converts a block of rows to f32 once, keeps
//! every intermediate in two reused buffers sized for one block, and runs each layer as one packed
//! GEMM (matrixmultiply, through ndarray, with its run-time AVX/FMA kernels).
//!
//! It is only used after it has reproduced tract's output on real rows (see
//! [`crate::onnx::tract::OnnxModel::verify_native`]).

/// Rows processed together: intermediates of a block stay in L1/L2.
const BLOCK: usize = 256;

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};

/// The nonlinearity after a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// None.
    Identity,
    /// max(0, z).
    Relu,
    /// 1 / (1 + e^−z) — as the last layer with one unit: P(class 1).
    Sigmoid,
    /// softmax over two units — as the last layer: P(class 1) = σ(z₁ − z₀).
    Softmax,
}

/// One dense layer: `out = act(x · w + b)`, `w` row-major `n_in × n_out`.
#[derive(Debug, Clone)]
pub struct DenseLayer {
    /// Inputs.
    pub n_in: usize,
    /// Outputs.
    pub n_out: usize,
    /// Weights, row-major `n_in × n_out`.
    pub w: Vec<f32>,
    /// Biases, `n_out`.
    pub b: Vec<f32>,
    /// Nonlinearity.
    pub act: Activation,
}

/// A stack of dense layers ending in a probability head.
#[derive(Debug, Clone)]
pub struct DenseNet {
    layers: Vec<DenseLayer>,
}

impl DenseNet {
    /// A network from its layers; `None` unless the shapes chain, hidden layers use Identity or
    /// ReLU, and the last layer is a one-unit sigmoid or a two-unit softmax.
    pub fn new(layers: Vec<DenseLayer>) -> Option<Self> {
        let last = layers.last()?;
        let head_ok = matches!((last.act, last.n_out), (Activation::Sigmoid, 1) | (Activation::Softmax, 2));
        let chained = layers.windows(2).all(|w| w[0].n_out == w[1].n_in);
        let shapes_ok = layers.iter().all(|l| l.w.len() == l.n_in * l.n_out && l.b.len() == l.n_out && l.n_in > 0);
        let hidden_ok = layers[..layers.len() - 1].iter().all(|l| matches!(l.act, Activation::Identity | Activation::Relu));
        (head_ok && chained && shapes_ok && hidden_ok).then_some(DenseNet { layers })
    }

    /// Number of inputs.
    pub fn n_features(&self) -> usize {
        self.layers[0].n_in
    }

    /// Multiply-adds of scoring one row: the weights of every layer.
    pub fn multiply_adds(&self) -> u64 {
        self.layers.iter().map(|l| (l.n_in * l.n_out) as u64).sum()
    }

    /// Layer widths from input to output ("12-30-20-1").
    pub fn shape(&self) -> String {
        let mut sizes = vec![self.n_features()];
        sizes.extend(self.layers.iter().map(|l| l.n_out));
        sizes.iter().map(usize::to_string).collect::<Vec<_>>().join("-")
    }

    /// P(class 1) of each row of `x` (row-major) into `out`.
    pub fn predict_into(&self, x: &[f64], out: &mut [f64]) {
        let width = self.n_features();
        let widest = self.layers.iter().map(|l| l.n_out.max(l.n_in)).max().unwrap_or(1);
        // Sized for the rows actually scored: a single row needs no 256-row buffers.
        let rows = out.len().clamp(1, BLOCK);
        let mut a = vec![0.0f32; rows * widest];
        let mut b = vec![0.0f32; rows * widest];
        for (xc, oc) in x.chunks(BLOCK * width).zip(out.chunks_mut(BLOCK)) {
            block(&self.layers, xc, oc, &mut a, &mut b);
        }
    }

    /// P(class 1) of each row of `x` (row-major) into `out` and its exact gradient with respect to
    /// each input into `grad` (as `x`), by back-propagation in f64 through the f32 weights. ReLU's
    /// derivative at 0 is taken as 0, as TensorFlow and PyTorch do.
    pub fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) {
        let width = self.n_features();
        // Pre-activations of every layer for one row, and the back-propagated deltas.
        let mut zs: Vec<Vec<f64>> = self.layers.iter().map(|l| vec![0.0; l.n_out]).collect();
        let widest = self.layers.iter().map(|l| l.n_out.max(l.n_in)).max().unwrap_or(1);
        let (mut delta, mut back) = (vec![0.0; widest], vec![0.0; widest]);
        for ((row, o), g) in x.chunks_exact(width).zip(out.iter_mut()).zip(grad.chunks_exact_mut(width)) {
            // Forward, keeping each layer's pre-activation.
            for (l, layer) in self.layers.iter().enumerate() {
                let (before, rest) = zs.split_at_mut(l);
                let z = &mut rest[0];
                for (zj, &b) in z.iter_mut().zip(&layer.b) {
                    *zj = f64::from(b);
                }
                let input: &[f64] = if l == 0 { row } else { &before[l - 1] };
                let relu_input = l > 0 && self.layers[l - 1].act == Activation::Relu;
                for (k, &v) in input.iter().enumerate() {
                    // NaN stays NaN (as ONNX Runtime computes it), never 0 as `max` would make it.
                    let a = if relu_input && v < 0.0 { 0.0 } else { v };
                    if a == 0.0 {
                        continue;
                    }
                    let w = &layer.w[k * layer.n_out..(k + 1) * layer.n_out];
                    for (zj, &wj) in z.iter_mut().zip(w) {
                        *zj += a * f64::from(wj);
                    }
                }
            }
            let last = self.layers.len() - 1;
            let z = &zs[last];
            let logit = if self.layers[last].act == Activation::Softmax { z[1] - z[0] } else { z[0] };
            let p = 1.0 / (1.0 + (-logit).exp());
            *o = p;
            // ∂p/∂logit = p(1 − p); a two-way softmax's logit is z₁ − z₀.
            let slope = p * (1.0 - p);
            if self.layers[last].act == Activation::Softmax {
                delta[..2].copy_from_slice(&[-slope, slope]);
            } else {
                delta[0] = slope;
            }
            // Backward: δ_in = W·δ_out, masked by the ReLU of the layer below.
            for l in (0..self.layers.len()).rev() {
                let layer = &self.layers[l];
                for (k, bk) in back[..layer.n_in].iter_mut().enumerate() {
                    let w = &layer.w[k * layer.n_out..(k + 1) * layer.n_out];
                    *bk = w.iter().zip(&delta[..layer.n_out]).map(|(&wj, &dj)| f64::from(wj) * dj).sum();
                }
                if l > 0 && self.layers[l - 1].act == Activation::Relu {
                    for (bk, &zk) in back[..layer.n_in].iter_mut().zip(&zs[l - 1]) {
                        if zk <= 0.0 {
                            *bk = 0.0;
                        }
                    }
                }
                std::mem::swap(&mut delta, &mut back);
            }
            g.copy_from_slice(&delta[..width]);
        }
    }
}

/// Forward one block of rows (`out.len()` ≤ [`BLOCK`]) through every layer: per layer one packed
/// f32 GEMM (matrixmultiply, with its own run-time AVX/FMA kernels) onto the broadcast bias.
fn block<'a>(layers: &[DenseLayer], x: &[f64], out: &mut [f64], mut a: &'a mut [f32], mut b: &'a mut [f32]) {
    let rows = out.len();
    for (dst, &v) in a.iter_mut().zip(x) {
        *dst = v as f32;
    }
    for layer in layers {
        let (n_in, n_out) = (layer.n_in, layer.n_out);
        for acc in b[..rows * n_out].chunks_exact_mut(n_out) {
            acc.copy_from_slice(&layer.b);
        }
        let input = ArrayView2::from_shape((rows, n_in), &a[..rows * n_in]).expect("block buffer holds rows × n_in");
        let weights = ArrayView2::from_shape((n_in, n_out), &layer.w).expect("weights are n_in × n_out");
        let mut acc = ArrayViewMut2::from_shape((rows, n_out), &mut b[..rows * n_out]).expect("block buffer holds rows × n_out");
        general_mat_mul(1.0, &input, &weights, 1.0, &mut acc);
        if layer.act == Activation::Relu {
            // `v < 0 → 0` keeps a NaN, which `max(0)` would turn into 0 and hide.
            b[..rows * n_out].iter_mut().for_each(|v| *v = if *v < 0.0 { 0.0 } else { *v });
        }
        std::mem::swap(&mut a, &mut b);
    }
    let last = &layers[layers.len() - 1];
    for (r, o) in out.iter_mut().enumerate() {
        let z = &a[r * last.n_out..(r + 1) * last.n_out];
        let logit = if last.act == Activation::Softmax { z[1] - z[0] } else { z[0] };
        *o = 1.0 / (1.0 + (-f64::from(logit)).exp());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(n_in: usize, n_out: usize, act: Activation, seed: u32) -> DenseLayer {
        let w = (0..n_in * n_out).map(|i| (((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0) - 1.0).collect();
        let b = (0..n_out).map(|i| ((i as f32) - 1.5) * 0.1).collect();
        DenseLayer { n_in, n_out, w, b, act }
    }

    /// The same network evaluated naively in f64.
    fn naive(layers: &[DenseLayer], row: &[f64]) -> f64 {
        let mut v: Vec<f64> = row.to_vec();
        for l in layers {
            let mut next: Vec<f64> = l.b.iter().map(|&b| f64::from(b)).collect();
            for (k, &vk) in v.iter().enumerate() {
                for (j, acc) in next.iter_mut().enumerate() {
                    *acc += vk * f64::from(l.w[k * l.n_out + j]);
                }
            }
            if l.act == Activation::Relu {
                next.iter_mut().for_each(|x| *x = x.max(0.0));
            }
            v = next;
        }
        let logit = if v.len() == 2 { v[1] - v[0] } else { v[0] };
        1.0 / (1.0 + (-logit).exp())
    }

    #[test]
    fn matches_a_naive_forward_pass_across_blocks() {
        for head in [Activation::Sigmoid, Activation::Softmax] {
            let n_out = if head == Activation::Sigmoid { 1 } else { 2 };
            let layers = vec![layer(5, 7, Activation::Relu, 1), layer(7, 3, Activation::Relu, 2), layer(3, n_out, head, 3)];
            let net = DenseNet::new(layers.clone()).unwrap();
            assert_eq!(net.shape(), format!("5-7-3-{n_out}"));
            let rows = 300; // more than two blocks, and a partial one
            let x: Vec<f64> = (0..rows * 5).map(|i| ((i * 7919) % 23) as f64 / 4.0 - 2.0).collect();
            let mut out = vec![0.0; rows];
            net.predict_into(&x, &mut out);
            for (r, &p) in out.iter().enumerate() {
                let expected = naive(&layers, &x[r * 5..(r + 1) * 5]);
                assert!((p - expected).abs() < 1e-5, "row {r}: {p} vs {expected}");
            }
        }
    }

    #[test]
    fn the_gradient_matches_central_differences_of_the_forward_pass() {
        for head in [Activation::Sigmoid, Activation::Softmax] {
            let n_out = if head == Activation::Sigmoid { 1 } else { 2 };
            let layers = vec![layer(5, 7, Activation::Relu, 1), layer(7, 3, Activation::Relu, 2), layer(3, n_out, head, 3)];
            let net = DenseNet::new(layers.clone()).unwrap();
            let rows = 40;
            let x: Vec<f64> = (0..rows * 5).map(|i| ((i * 7919) % 23) as f64 / 4.0 - 2.0 + 0.013).collect();
            let (mut p, mut grad) = (vec![0.0; rows], vec![0.0; rows * 5]);
            net.gradient_into(&x, &mut p, &mut grad);
            let mut slopes = 0;
            for r in 0..rows {
                let row = &x[r * 5..(r + 1) * 5];
                assert!((p[r] - naive(&layers, row)).abs() < 1e-9);
                for i in 0..5 {
                    let h = 1e-6;
                    let (mut up, mut down) = (row.to_vec(), row.to_vec());
                    up[i] += h;
                    down[i] -= h;
                    let fd = (naive(&layers, &up) - naive(&layers, &down)) / (2.0 * h);
                    assert!((grad[r * 5 + i] - fd).abs() < 1e-6, "row {r} input {i}: {} against {fd}", grad[r * 5 + i]);
                    slopes += usize::from(fd.abs() > 1e-3);
                }
            }
            assert!(slopes > rows, "the network is not flat at these rows ({slopes} slopes)");
        }
    }

    #[test]
    fn refuses_networks_without_a_probability_head() {
        assert!(DenseNet::new(vec![layer(4, 3, Activation::Relu, 1)]).is_none());
        assert!(DenseNet::new(vec![layer(4, 2, Activation::Sigmoid, 1)]).is_none());
        assert!(
            DenseNet::new(vec![layer(4, 3, Activation::Relu, 1), layer(4, 1, Activation::Sigmoid, 2)]).is_none(),
            "shapes do not chain"
        );
        assert!(DenseNet::new(vec![]).is_none());
    }
}
