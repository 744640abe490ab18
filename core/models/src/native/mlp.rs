//! The papers' fully connected network (default 64-32-16-8-4 hidden units, ReLU, two-way softmax),
//! trained with Adam on mini-batches, in plain ndarray.
//!
//! Hand-written on purpose: at these layer widths a framework's dispatch costs more than the
//! arithmetic (measured in `../shared/DEPENDENCIES.md`: 2.3× faster training than burn, 5.7× than
//! candle), and it gives exact input gradients for free.

use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::Rng;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::native::standardise::Standardiser;
use crate::Model;

/// Training settings of the MLP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlpConfig {
    /// Hidden layer widths.
    pub hidden: Vec<usize>,
    /// Passes over the training data.
    pub epochs: usize,
    /// Rows per mini-batch.
    pub batch_size: usize,
    /// Adam step size.
    pub learning_rate: f64,
    /// Seed of initialisation and shuffling.
    pub seed: u64,
}

impl Default for MlpConfig {
    fn default() -> Self {
        MlpConfig { hidden: vec![64, 32, 16, 8, 4], epochs: 20, batch_size: 128, learning_rate: 1e-3, seed: 0 }
    }
}

/// A trained network. Inputs are standardised inside the model, so it takes encoded rows as they are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Mlp {
    /// Layer widths from input to the 2-unit output.
    pub sizes: Vec<usize>,
    weights: Vec<Array2<f64>>,
    biases: Vec<Array1<f64>>,
    #[serde(flatten)]
    standardiser: Standardiser,
}

struct Adam {
    m: Vec<Array2<f64>>,
    v: Vec<Array2<f64>>,
    mb: Vec<Array1<f64>>,
    vb: Vec<Array1<f64>>,
    t: i32,
}

impl Mlp {
    /// A network with He-uniform initial weights and identity standardisation.
    pub fn new(n_inputs: usize, hidden: &[usize], seed: u64) -> Self {
        let mut sizes = vec![n_inputs];
        sizes.extend_from_slice(hidden);
        sizes.push(2);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut weights = Vec::new();
        let mut biases = Vec::new();
        for w in sizes.windows(2) {
            let limit = (6.0 / w[0] as f64).sqrt();
            weights.push(Array2::from_shape_fn((w[0], w[1]), |_| rng.gen_range(-limit..limit)));
            biases.push(Array1::zeros(w[1]));
        }
        Mlp { sizes, weights, biases, standardiser: Standardiser::identity(n_inputs) }
    }

    /// Train a fresh network on `x`, `y` (classes 0/1).
    pub fn train(x: &Array2<f64>, y: &[u8], config: &MlpConfig) -> Result<Self, ModelError> {
        Self::train_shown(x, y, config, &indicatif::ProgressBar::hidden())
    }

    /// [`Mlp::train`], advancing `progress` by each epoch.
    pub fn train_shown(x: &Array2<f64>, y: &[u8], config: &MlpConfig, progress: &indicatif::ProgressBar) -> Result<Self, ModelError> {
        if x.nrows() == 0 || x.nrows() != y.len() {
            return Err(ModelError::Train(format!("{} rows of features for {} labels", x.nrows(), y.len())));
        }
        let mut net = Mlp::new(x.ncols(), &config.hidden, config.seed);
        net.standardiser = Standardiser::fit(x.view())?;
        let z = net.standardise(x.view());
        let mut adam = Adam {
            m: net.weights.iter().map(|w| Array2::zeros(w.raw_dim())).collect(),
            v: net.weights.iter().map(|w| Array2::zeros(w.raw_dim())).collect(),
            mb: net.biases.iter().map(|b| Array1::zeros(b.raw_dim())).collect(),
            vb: net.biases.iter().map(|b| Array1::zeros(b.raw_dim())).collect(),
            t: 0,
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(config.seed ^ 0x9e37_79b9_7f4a_7c15);
        let mut order: Vec<usize> = (0..x.nrows()).collect();
        for _ in 0..config.epochs {
            rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut rng);
            for batch in order.chunks(config.batch_size.max(1)) {
                let xb = z.select(Axis(0), batch);
                let yb: Vec<u8> = batch.iter().map(|&i| y[i]).collect();
                let (gw, gb, _) = net.gradients(xb.view(), &yb);
                net.adam_step(&mut adam, &gw, &gb, config.learning_rate);
            }
            progress.inc(1);
        }
        Ok(net)
    }

    fn standardise(&self, x: ArrayView2<f64>) -> Array2<f64> {
        self.standardiser.apply(x)
    }

    /// Pre-activations and activations of every layer for standardised input `z`.
    fn forward(&self, z: ArrayView2<f64>) -> (Vec<Array2<f64>>, Array2<f64>) {
        let mut acts = vec![z.to_owned()];
        let last = self.weights.len() - 1;
        let mut logits = Array2::zeros((0, 0));
        for (l, (w, b)) in self.weights.iter().zip(&self.biases).enumerate() {
            let pre = acts[l].dot(w) + b;
            if l == last {
                logits = pre;
            } else {
                acts.push(pre.mapv(|v| v.max(0.0)));
            }
        }
        (acts, logits)
    }

    /// Mean cross-entropy gradients over a batch of standardised rows, and the mean loss.
    fn gradients(&self, z: ArrayView2<f64>, y: &[u8]) -> (Vec<Array2<f64>>, Vec<Array1<f64>>, f64) {
        let (acts, logits) = self.forward(z);
        let n = z.nrows() as f64;
        let mut delta = Array2::zeros(logits.raw_dim());
        let mut loss = 0.0;
        for (i, row) in logits.outer_iter().enumerate() {
            let p1 = sigmoid(row[1] - row[0]);
            let probs = [1.0 - p1, p1];
            let target = y[i] as usize;
            loss -= probs[target].max(1e-15).ln();
            for k in 0..2 {
                delta[[i, k]] = (probs[k] - f64::from(u8::from(k == target))) / n;
            }
        }
        let mut gw = vec![Array2::zeros((0, 0)); self.weights.len()];
        let mut gb = vec![Array1::zeros(0); self.weights.len()];
        for l in (0..self.weights.len()).rev() {
            gw[l] = acts[l].t().dot(&delta);
            gb[l] = delta.sum_axis(Axis(0));
            if l > 0 {
                let mut back = delta.dot(&self.weights[l].t());
                back.zip_mut_with(&acts[l], |d, &a| {
                    if a <= 0.0 {
                        *d = 0.0
                    }
                });
                delta = back;
            }
        }
        (gw, gb, loss / n)
    }

    fn adam_step(&mut self, adam: &mut Adam, gw: &[Array2<f64>], gb: &[Array1<f64>], lr: f64) {
        const B1: f64 = 0.9;
        const B2: f64 = 0.999;
        const EPS: f64 = 1e-8;
        adam.t += 1;
        let c1 = 1.0 - B1.powi(adam.t);
        let c2 = 1.0 - B2.powi(adam.t);
        for l in 0..self.weights.len() {
            adam.m[l].zip_mut_with(&gw[l], |m, &g| *m = B1 * *m + (1.0 - B1) * g);
            adam.v[l].zip_mut_with(&gw[l], |v, &g| *v = B2 * *v + (1.0 - B2) * g * g);
            ndarray::Zip::from(&mut self.weights[l]).and(&adam.m[l]).and(&adam.v[l]).for_each(|w, &m, &v| {
                *w -= lr * (m / c1) / ((v / c2).sqrt() + EPS);
            });
            adam.mb[l].zip_mut_with(&gb[l], |m, &g| *m = B1 * *m + (1.0 - B1) * g);
            adam.vb[l].zip_mut_with(&gb[l], |v, &g| *v = B2 * *v + (1.0 - B2) * g * g);
            ndarray::Zip::from(&mut self.biases[l]).and(&adam.mb[l]).and(&adam.vb[l]).for_each(|b, &m, &v| {
                *b -= lr * (m / c1) / ((v / c2).sqrt() + EPS);
            });
        }
    }

    /// P(class 1) of each row of `x` (encoded, not standardised).
    pub fn predict(&self, x: ArrayView2<f64>) -> Array1<f64> {
        let (_, logits) = self.forward(self.standardise(x).view());
        logits.outer_iter().map(|r| sigmoid(r[1] - r[0])).collect()
    }

    /// Exact gradient of P(class 1) with respect to each encoded input feature, one row per input.
    pub fn input_gradient(&self, x: ArrayView2<f64>) -> Array2<f64> {
        let (acts, logits) = self.forward(self.standardise(x).view());
        let mut delta = Array2::zeros(logits.raw_dim());
        for (i, row) in logits.outer_iter().enumerate() {
            let p = sigmoid(row[1] - row[0]);
            let d = p * (1.0 - p);
            delta[[i, 0]] = -d;
            delta[[i, 1]] = d;
        }
        for l in (0..self.weights.len()).rev() {
            let mut back = delta.dot(&self.weights[l].t());
            if l > 0 {
                back.zip_mut_with(&acts[l], |d, &a| {
                    if a <= 0.0 {
                        *d = 0.0
                    }
                });
            }
            delta = back;
        }
        delta / self.standardiser.scale()
    }
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

impl Model for Mlp {
    /// The encoded vector, read as numbers: any real input is scored.
    fn takes_any_real_input(&self) -> bool {
        true
    }

    fn n_features(&self) -> usize {
        self.sizes[0]
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        // Blocks of rows keep the per-layer intermediates in cache (a 32k-row batch at once ran at a
        // third of the speed of 4k-row batches).
        const BLOCK: usize = 512;
        let width = self.sizes[0];
        if x.len() != out.len() * width {
            return Err(ModelError::Width { expected: width, found: x.len() / out.len().max(1) });
        }
        for (xc, oc) in x.chunks(BLOCK * width).zip(out.chunks_mut(BLOCK)) {
            let view = ArrayView2::from_shape((oc.len(), width), xc).map_err(|e| ModelError::Inference(e.to_string()))?;
            for (o, p) in oc.iter_mut().zip(self.predict(view)) {
                *o = p;
            }
        }
        Ok(())
    }

    fn has_exact_gradient(&self) -> bool {
        true
    }

    fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) -> Result<(), ModelError> {
        let width = self.sizes[0];
        if x.len() != out.len() * width || grad.len() != x.len() {
            return Err(ModelError::Width { expected: width, found: x.len() / out.len().max(1) });
        }
        let view = ArrayView2::from_shape((out.len(), width), x).map_err(|e| ModelError::Inference(e.to_string()))?;
        for (o, p) in out.iter_mut().zip(self.predict(view)) {
            *o = p;
        }
        for (g, v) in grad.iter_mut().zip(self.input_gradient(view).iter()) {
            *g = *v;
        }
        Ok(())
    }

    fn multiply_adds_per_row(&self) -> Option<u64> {
        Some(self.sizes.windows(2).map(|w| (w[0] * w[1]) as u64).sum())
    }

    fn describe(&self) -> String {
        format!("mlp {}", self.sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("-"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> (Array2<f64>, Vec<u8>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let x = Array2::from_shape_fn((64, 5), |_| rng.gen_range(-2.0..2.0));
        let y = x.outer_iter().map(|r| u8::from(r[0] + 0.5 * r[2] > 0.0)).collect();
        (x, y)
    }

    #[test]
    fn weight_gradients_match_finite_differences() {
        let (x, y) = toy();
        let net = Mlp::new(5, &[6, 4], 3);
        let (gw, gb, _) = net.gradients(x.view(), &y);
        let h = 1e-6;
        for l in 0..net.weights.len() {
            for &(i, j) in &[(0usize, 0usize), (1, 1), (2, 0)] {
                if i >= net.weights[l].nrows() || j >= net.weights[l].ncols() {
                    continue;
                }
                let mut plus = net.clone();
                plus.weights[l][[i, j]] += h;
                let mut minus = net.clone();
                minus.weights[l][[i, j]] -= h;
                let numeric = (plus.gradients(x.view(), &y).2 - minus.gradients(x.view(), &y).2) / (2.0 * h);
                assert!((numeric - gw[l][[i, j]]).abs() < 1e-6, "layer {l} w[{i},{j}]: {numeric} vs {}", gw[l][[i, j]]);
            }
            let mut plus = net.clone();
            plus.biases[l][0] += h;
            let mut minus = net.clone();
            minus.biases[l][0] -= h;
            let numeric = (plus.gradients(x.view(), &y).2 - minus.gradients(x.view(), &y).2) / (2.0 * h);
            assert!((numeric - gb[l][0]).abs() < 1e-6, "layer {l} bias: {numeric} vs {}", gb[l][0]);
        }
    }

    #[test]
    fn input_gradient_matches_finite_differences() {
        let (x, y) = toy();
        let net = Mlp::train(&x, &y, &MlpConfig { hidden: vec![8, 4], epochs: 3, ..Default::default() }).unwrap();
        let rows = x.slice(ndarray::s![0..4, ..]).to_owned();
        let grad = net.input_gradient(rows.view());
        let h = 1e-6;
        for i in 0..4 {
            for j in 0..5 {
                let mut p = rows.clone();
                p[[i, j]] += h;
                let mut m = rows.clone();
                m[[i, j]] -= h;
                let numeric = (net.predict(p.view())[i] - net.predict(m.view())[i]) / (2.0 * h);
                assert!((numeric - grad[[i, j]]).abs() < 1e-6, "row {i} feature {j}: {numeric} vs {}", grad[[i, j]]);
            }
        }
    }

    #[test]
    fn training_learns_a_separable_rule() {
        let (x, y) = toy();
        let net = Mlp::train(&x, &y, &MlpConfig { hidden: vec![16, 8], epochs: 200, batch_size: 16, ..Default::default() }).unwrap();
        let p = net.predict(x.view());
        let correct = p.iter().zip(&y).filter(|(p, y)| u8::from(**p > 0.5) == **y).count();
        assert!(correct >= 60, "only {correct}/64 correct");
    }
}
