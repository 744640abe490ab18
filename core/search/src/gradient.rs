//! MAFT Algorithm 2, the vectored zero-order gradient, batched over many inputs.
//!
//! For an input x the model is scored on the rows x + δ_i·e_i (one per attribute i); with f(x) the
//! probability of class 1 the estimate is g_i = (f(x + δ_i·e_i) − f(x)) / δ_i, returned as is when
//! f(x) > 0.5 and negated otherwise, so that it is the gradient of the predicted class's probability
//! (Algorithm 2, lines 9–13). f(x) itself is always known to the caller from the discrimination
//! check, so only the perturbed rows are scored.
//!
//! Only the attributes listed in `attrs` are perturbed: MAFT never reads the gradient of a protected
//! attribute (its direction and selection probability are zero), so those rows would be wasted.

use fairpipe_abi::sdk::{Host, PluginError};

/// Where the two-phase search's gradients come from: MAFT's zero-order estimate ([`Perturbation`])
/// or, for a white-box method such as EIDIG, the model's own gradient from the host.
pub trait GradientSource {
    /// The attributes the search moves and reads gradients of (the non-protected ones).
    fn attrs(&self) -> &[usize];

    /// The gradient of the predicted class's probability (that of class 1 when f(x) > 0.5,
    /// negated otherwise) at each row of `xs` (row-major, `width` wide), whose f(x) is `ps[i]`;
    /// one vector over all `width` attributes per row, in one batched host call.
    fn gradients(&self, host: &mut Host, xs: &[f64], ps: &[f64]) -> Result<Vec<Vec<f64>>, PluginError>;
}

impl GradientSource for Perturbation {
    fn attrs(&self) -> &[usize] {
        &self.attrs
    }

    fn gradients(&self, host: &mut Host, xs: &[f64], ps: &[f64]) -> Result<Vec<Vec<f64>>, PluginError> {
        let width = host.domain.width();
        if ps.is_empty() {
            return Ok(Vec::new());
        }
        let mut rows = Vec::with_capacity(ps.len() * self.rows_per_gradient() * width);
        for x in xs.chunks_exact(width) {
            self.push_rows(x, &mut rows);
        }
        let scores = if rows.is_empty() { Vec::new() } else { host.predict(&rows)? };
        let per = self.rows_per_gradient();
        Ok(ps.iter().enumerate().map(|(k, &p)| self.gradient(p, &scores[k * per..(k + 1) * per], width)).collect())
    }
}

/// Which attributes are perturbed and by how much.
#[derive(Debug, Clone)]
pub struct Perturbation {
    /// Attribute indices whose partial derivatives are estimated.
    pub attrs: Vec<usize>,
    /// δ_i for each entry of `attrs`.
    pub deltas: Vec<f64>,
}

impl Perturbation {
    /// Perturb each of `attrs` by `size` times its step (`steps[i]`, the domain's granularity; 1 for
    /// the papers' discretised data, where this is exactly the paper's h).
    pub fn new(attrs: Vec<usize>, steps: &[f64], size: f64) -> Self {
        let deltas = attrs.iter().map(|&i| size * steps[i]).collect();
        Perturbation { attrs, deltas }
    }

    /// Rows scored per gradient.
    pub fn rows_per_gradient(&self) -> usize {
        self.attrs.len()
    }

    /// Append the perturbed rows of `x` (one per attribute in `attrs`) to `out`.
    pub fn push_rows(&self, x: &[f64], out: &mut Vec<f64>) {
        for (&i, &d) in self.attrs.iter().zip(&self.deltas) {
            let start = out.len();
            out.extend_from_slice(x);
            out[start + i] += d;
        }
    }

    /// The estimated gradient of the predicted class's probability, over all `width` attributes
    /// (zero where not perturbed), from f(x) = `p` and the scores of the rows of [`Self::push_rows`].
    pub fn gradient(&self, p: f64, scores: &[f64], width: usize) -> Vec<f64> {
        let sign = if p > 0.5 { 1.0 } else { -1.0 };
        let mut g = vec![0.0; width];
        for ((&i, &d), &q) in self.attrs.iter().zip(&self.deltas).zip(scores) {
            g[i] = sign * (q - p) / d;
        }
        g
    }
}

/// np.sign: −1, 0 or 1.
pub fn sign(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// The local phase's attribute-selection probabilities (EIDIG/MAFT `normalization`): for each
/// attribute in `attrs`, the reciprocal of |g1_a| + |g2_a| + ε, normalised to sum to one — attributes
/// with little influence on the model are picked more often, so the label tends to survive.
pub fn selection_probabilities(g1: &[f64], g2: &[f64], attrs: &[usize], epsilon: f64) -> Vec<f64> {
    let raw: Vec<f64> = attrs.iter().map(|&a| 1.0 / (g1[a].abs() + g2[a].abs() + epsilon)).collect();
    let total: f64 = raw.iter().sum();
    raw.into_iter().map(|r| r / total).collect()
}

/// Cosine similarity of two vectors (0 when either is zero).
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f(x) = x0² + 3·x1 at x = (2, 5): the paper's worked example (f'(2) ≈ 4.001 at h = 0.001).
    #[test]
    fn forward_difference_matches_the_papers_example() {
        let pert = Perturbation::new(vec![0, 1], &[1.0, 1.0], 0.001);
        let x = [2.0, 5.0];
        let mut rows = Vec::new();
        pert.push_rows(&x, &mut rows);
        assert_eq!(rows, vec![2.001, 5.0, 2.0, 5.001]);
        let f = |r: &[f64]| r[0] * r[0] + 3.0 * r[1];
        let fx = f(&x);
        let scores: Vec<f64> = rows.chunks(2).map(f).collect();
        // Treat f as a "probability" above 0.5: the sign is kept.
        let g = pert.gradient(fx, &scores, 2);
        assert!((g[0] - 4.001).abs() < 1e-6, "{g:?}");
        assert!((g[1] - 3.0).abs() < 1e-6, "{g:?}");
    }

    #[test]
    fn gradient_is_negated_for_the_negative_class() {
        let pert = Perturbation::new(vec![1], &[1.0, 2.0, 1.0], 1.0);
        let mut rows = Vec::new();
        pert.push_rows(&[0.0, 0.0, 0.0], &mut rows);
        assert_eq!(rows, vec![0.0, 2.0, 0.0], "δ is the size times the attribute's step");
        let g = pert.gradient(0.3, &[0.4], 3);
        assert_eq!((g[0], g[2]), (0.0, 0.0));
        assert!((g[1] + 0.05).abs() < 1e-12, "{g:?}");
        let g = pert.gradient(0.7, &[0.8], 3);
        assert!((g[1] - 0.05).abs() < 1e-12);
    }

    #[test]
    fn selection_prefers_attributes_with_small_gradients() {
        let g1 = [0.0, 1.0, 0.1, 9.0];
        let g2 = [0.0, -1.0, 0.1, 0.0];
        let p = selection_probabilities(&g1, &g2, &[1, 2], 1e-6);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // 1/2 vs 1/0.2: attribute 2 is ten times as likely.
        assert!((p[1] / p[0] - 10.0).abs() < 1e-4, "{p:?}");
    }

    #[test]
    fn cosine_of_parallel_and_opposite_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-12);
        assert!((cosine(&[1.0, 2.0], &[-1.0, -2.0]) + 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
    }
}
