//! Text classifiers under test: a trait for anything that maps texts to P(class 1), and the native
//! one — TF-IDF features ([`super::tfidf`]) and an L2-regularised logistic regression trained here
//! (scikit-learn's `LogisticRegression` objective with `C`, intercept unpenalised), so that a text
//! audit and its retraining run without Python or ONNX Runtime.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::tfidf::{SparseRow, Tfidf};
use crate::error::ModelError;

/// A binary text classifier: P(class 1) of each text.
pub trait TextClassifier: Send + Sync {
    /// P(class 1) of each of `texts` into `out`.
    fn predict_texts(&self, texts: &[&str], out: &mut [f64]) -> Result<(), ModelError>;
    /// Short description for summaries.
    fn describe(&self) -> String;
}

/// How the native text model is trained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TextLogisticConfig {
    /// Inverse regularisation strength (scikit-learn's `C`).
    pub c: f64,
    /// Iterations of the optimiser at most.
    pub max_iterations: usize,
    /// Stop when the gradient norm falls below this share of its start.
    pub tolerance: f64,
}

impl Default for TextLogisticConfig {
    fn default() -> Self {
        TextLogisticConfig { c: 1.0, max_iterations: 5000, tolerance: 1e-6 }
    }
}

/// TF-IDF + logistic regression, trained natively.
#[derive(Debug, Clone, PartialEq)]
pub struct TfidfLogistic {
    tfidf: Tfidf,
    weights: Vec<f64>,
    intercept: f64,
    /// Optimiser iterations used and the final gradient norm (relative), for the summary.
    pub iterations: usize,
    /// Final ‖∇‖ / (1 + ‖∇₀‖).
    pub converged_to: f64,
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

fn dot(row: &SparseRow, w: &[f64]) -> f64 {
    row.iter().map(|&(i, v)| v * w[i as usize]).sum()
}

/// Chunks the rows of [`objective`] are summed in, at most: partial sums are added in chunk order,
/// so the result does not depend on how rayon schedules them (a fold/reduce over threads adds
/// floating-point numbers in a varying order, and training would differ in the last bits between
/// runs of the same pipeline).
const OBJECTIVE_CHUNKS: usize = 64;

/// The objective C·Σ log(1 + e^(−yᵢ·(w·xᵢ + b))) + ½‖w‖² and its gradient (w first, b last).
fn objective(rows: &[SparseRow], y: &[u8], c: f64, theta: &[f64], grad: &mut [f64]) -> f64 {
    let (w, b) = theta.split_at(theta.len() - 1);
    let chunk = rows.len().div_ceil(OBJECTIVE_CHUNKS).max(256);
    let partials: Vec<(f64, Vec<f64>)> = rows
        .par_chunks(chunk)
        .zip(y.par_chunks(chunk))
        .map(|(rows, labels)| {
            let (mut loss, mut g) = (0.0, vec![0.0; theta.len()]);
            for (row, &label) in rows.iter().zip(labels) {
                let z = dot(row, w) + b[0];
                // log(1 + e^(−s·z)) with s = ±1, stably.
                let m = if label == 1 { -z } else { z };
                loss += if m > 0.0 { m + (-m).exp().ln_1p() } else { m.exp().ln_1p() };
                let r = sigmoid(z) - f64::from(label);
                for &(i, v) in row {
                    g[i as usize] += r * v;
                }
                *g.last_mut().expect("intercept") += r;
            }
            (loss, g)
        })
        .collect();
    let mut loss = 0.0;
    let mut g = vec![0.0; theta.len()];
    for (l, part) in partials {
        loss += l;
        g.iter_mut().zip(part).for_each(|(a, b)| *a += b);
    }
    let n = w.len();
    for (k, gk) in grad.iter_mut().enumerate() {
        *gk = c * g[k] + if k < n { theta[k] } else { 0.0 };
    }
    c * loss + 0.5 * w.iter().map(|v| v * v).sum::<f64>()
}

impl TfidfLogistic {
    /// Fit TF-IDF on `texts`, then the logistic regression on their features and `y` (0/1), by
    /// L-BFGS (10 corrections, backtracking line search) until the gradient norm falls below
    /// `tolerance` of its start, no step decreases the objective any more (f64's precision), or
    /// `max_iterations`.
    pub fn train<S: AsRef<str> + Sync>(texts: &[S], y: &[u8], config: &TextLogisticConfig) -> Result<Self, ModelError> {
        if texts.len() != y.len() || texts.is_empty() {
            return Err(ModelError::Train(format!("{} texts for {} labels", texts.len(), y.len())));
        }
        if y.iter().all(|&v| v == y[0]) {
            return Err(ModelError::Train("the training labels hold a single class".into()));
        }
        if config.c.is_nan() || config.c <= 0.0 {
            return Err(ModelError::Train(format!("C must be positive, found {}", config.c)));
        }
        let tfidf = Tfidf::fit(texts);
        let rows: Vec<SparseRow> = texts.par_iter().map(|t| tfidf.transform(t.as_ref())).collect();
        let dim = tfidf.n_features() + 1;
        let (theta, iterations, converged_to) =
            lbfgs(dim, config.max_iterations, config.tolerance, |theta, grad| objective(&rows, y, config.c, theta, grad));
        let intercept = theta[dim - 1];
        let mut weights = theta;
        weights.truncate(dim - 1);
        Ok(TfidfLogistic { tfidf, weights, intercept, iterations, converged_to })
    }

    /// The vectorizer.
    pub fn tfidf(&self) -> &Tfidf {
        &self.tfidf
    }

    /// P(class 1) of one text.
    pub fn predict_one(&self, text: &str) -> f64 {
        sigmoid(dot(&self.tfidf.transform(text), &self.weights) + self.intercept)
    }
}

impl TextClassifier for TfidfLogistic {
    fn predict_texts(&self, texts: &[&str], out: &mut [f64]) -> Result<(), ModelError> {
        if texts.len() != out.len() {
            return Err(ModelError::Inference(format!("{} texts for {} outputs", texts.len(), out.len())));
        }
        texts.par_iter().zip(out.par_iter_mut()).for_each(|(t, o)| *o = self.predict_one(t));
        Ok(())
    }

    fn describe(&self) -> String {
        format!("tf-idf ({} terms) + logistic regression, trained natively", self.tfidf.n_features())
    }
}

/// Minimise `f` (which writes its gradient) from zero by L-BFGS; returns the point, the iterations
/// used and the final gradient norm relative to the first.
fn lbfgs(dim: usize, max_iterations: usize, tolerance: f64, mut f: impl FnMut(&[f64], &mut [f64]) -> f64) -> (Vec<f64>, usize, f64) {
    const MEMORY: usize = 10;
    let dotv = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut x = vec![0.0; dim];
    let mut g = vec![0.0; dim];
    let mut fx = f(&x, &mut g);
    let g0 = dotv(&g, &g).sqrt().max(1e-300);
    let (mut s_hist, mut y_hist): (Vec<Vec<f64>>, Vec<Vec<f64>>) = (Vec::new(), Vec::new());
    let mut iterations = 0;
    let mut x_new = vec![0.0; dim];
    let mut g_new = vec![0.0; dim];
    while iterations < max_iterations && dotv(&g, &g).sqrt() > tolerance * g0 {
        iterations += 1;
        // Two-loop recursion: d = −H·g.
        let mut q = g.clone();
        let mut alphas = Vec::with_capacity(s_hist.len());
        for (s, yv) in s_hist.iter().zip(&y_hist).rev() {
            let a = dotv(s, &q) / dotv(yv, s);
            q.iter_mut().zip(yv).for_each(|(qi, yi)| *qi -= a * yi);
            alphas.push(a);
        }
        if let (Some(s), Some(yv)) = (s_hist.last(), y_hist.last()) {
            let gamma = dotv(s, yv) / dotv(yv, yv);
            q.iter_mut().for_each(|v| *v *= gamma);
        } else {
            let scale = 1.0 / g0;
            q.iter_mut().for_each(|v| *v *= scale);
        }
        for ((s, yv), a) in s_hist.iter().zip(&y_hist).zip(alphas.into_iter().rev()) {
            let b = dotv(yv, &q) / dotv(yv, s);
            q.iter_mut().zip(s).for_each(|(qi, si)| *qi += (a - b) * si);
        }
        let mut slope = -dotv(&g, &q);
        if slope >= 0.0 {
            // Not a descent direction: restart from steepest descent.
            s_hist.clear();
            y_hist.clear();
            q.clone_from(&g);
            q.iter_mut().for_each(|v| *v /= g0);
            slope = -dotv(&g, &q);
        }
        // Backtracking (Armijo) line search along −q.
        let mut step = 1.0;
        let f_new = loop {
            x_new.iter_mut().zip(&x).zip(&q).for_each(|((n, xi), qi)| *n = xi - step * qi);
            let value = f(&x_new, &mut g_new);
            if value <= fx + 1e-4 * step * slope || step < 1e-12 {
                break value;
            }
            step *= 0.5;
        };
        let s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
        let yv: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        if dotv(&s, &yv) > 1e-12 {
            s_hist.push(s);
            y_hist.push(yv);
            if s_hist.len() > MEMORY {
                s_hist.remove(0);
                y_hist.remove(0);
            }
        }
        std::mem::swap(&mut x, &mut x_new);
        std::mem::swap(&mut g, &mut g_new);
        fx = f_new;
        if step < 1e-12 {
            // No step decreases f any more: the gradient is at the precision of f64.
            break;
        }
    }
    (x, iterations, dotv(&g, &g).sqrt() / g0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lbfgs_minimises_a_quadratic() {
        // f = Σ (i+1)·(x_i − i)²
        let (x, iterations, rel) = lbfgs(5, 200, 1e-9, |x, g| {
            let mut f = 0.0;
            for i in 0..5 {
                let d = x[i] - i as f64;
                f += (i + 1) as f64 * d * d;
                g[i] = 2.0 * (i + 1) as f64 * d;
            }
            f
        });
        assert!(rel < 1e-9 && iterations < 50, "{iterations} iterations, {rel}");
        for (i, v) in x.iter().enumerate() {
            assert!((v - i as f64).abs() < 1e-5, "{x:?}");
        }
    }

    #[test]
    fn learns_a_word_that_decides_the_label() {
        let texts: Vec<String> =
            (0..200).map(|i| if i % 2 == 0 { format!("you are awful number{i}") } else { format!("you are kind number{i}") }).collect();
        let y: Vec<u8> = (0..200).map(|i| u8::from(i % 2 == 0)).collect();
        let model = TfidfLogistic::train(&texts, &y, &TextLogisticConfig::default()).unwrap();
        assert!(model.converged_to < 1e-6, "{}", model.converged_to);
        let mut p = [0.0; 2];
        model.predict_texts(&["so awful", "so kind"], &mut p).unwrap();
        assert!(p[0] > 0.7 && p[1] < 0.3, "{p:?}");
        assert!(TfidfLogistic::train(&texts, &[1; 200], &TextLogisticConfig::default()).is_err());
        let again = TfidfLogistic::train(&texts, &y, &TextLogisticConfig::default()).unwrap();
        assert_eq!(again, model, "training is deterministic");
    }
}
