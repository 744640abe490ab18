//! Support vector classifier: trained by linfa-svm's SMO solver, queried in batches by fairpipe.
//!
//! linfa-svm holds the whole kernel matrix in memory (n² values: 7.7 GB for the 31k census rows)
//! and evaluates a prediction one support vector at a time. So training uses a seeded random
//! subsample of at most `max_rows` rows (the Aequitas paper's scikit-learn SVC caches kernel rows
//! instead; retraining keeps that subsample and adds the new rows, see [`Svm::train_augmented`]),
//! and prediction re-computes the decision function from linfa's dual coefficients as one matrix
//! product per batch: ‖x − s‖² = ‖x‖² + ‖s‖² − 2 x·s.

use linfa::prelude::*;
use ndarray::{Array1, Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::native::standardise::Standardiser;
use crate::Model;

/// The kernel of a support vector classifier.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kernel", rename_all = "lowercase")]
pub enum SvmKernel {
    /// K(a, b) = a·b.
    Linear,
    /// K(a, b) = exp(−γ‖a − b‖²), on standardised inputs.
    Rbf {
        /// γ; `None` is scikit-learn's "scale", 1 / (features × variance) = 1 / features after
        /// standardisation.
        gamma: Option<f64>,
    },
}

/// Training settings of a support vector classifier (C-SVC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SvmConfig {
    /// The kernel.
    #[serde(flatten)]
    pub kernel: SvmKernel,
    /// Penalty C of both classes (scikit-learn's default is 1).
    pub c: f64,
    /// Train on a random subsample of at most this many rows (the kernel matrix is rows²).
    pub max_rows: usize,
    /// Seed of the subsample.
    pub seed: u64,
}

/// How the decision function of a fitted SVM is evaluated.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "lowercase")]
enum Decision {
    /// w·z − ρ.
    Linear { weights: Array1<f64> },
    /// Σ αᵢ exp(−γ‖z − sᵢ‖²) − ρ.
    Rbf { gamma: f64, support: Array2<f64>, support_sq: Array1<f64>, coef: Array1<f64> },
}

/// A fitted support vector classifier over standardised inputs. Its label is the sign of the
/// decision function (as scikit-learn's `predict`); its score is the logistic of the decision
/// value: monotone in it, not a calibrated probability.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Svm {
    #[serde(flatten)]
    standardiser: Standardiser,
    rho: f64,
    decision: Decision,
    rows_trained: usize,
}

impl Svm {
    /// Fit a C-SVC on `x`, `y` (classes 0/1).
    pub fn train(x: &Array2<f64>, y: &[u8], config: &SvmConfig) -> Result<Self, ModelError> {
        Self::train_augmented(x, y, x.nrows(), config)
    }

    /// Fit on training rows `x[..original]` augmented with the rows after them: the subsample of
    /// the original rows is the one [`Svm::train`] takes, and the added rows are all kept (up to
    /// `max_rows` of them), so a retrained SVM differs from the first by the added evidence, not
    /// by a different draw.
    pub fn train_augmented(x: &Array2<f64>, y: &[u8], original: usize, config: &SvmConfig) -> Result<Self, ModelError> {
        if x.nrows() == 0 {
            return Err(ModelError::Train("no training rows".into()));
        }
        let original = original.min(x.nrows());
        let mut rows = subsample(original, config.max_rows, config.seed);
        let added = subsample(x.nrows() - original, config.max_rows, config.seed ^ 0xadd);
        rows.extend(added.into_iter().map(|r| original + r));
        let xs = x.select(Axis(0), &rows);
        let targets: Array1<bool> = rows.iter().map(|&r| y[r] == 1).collect();
        if targets.iter().all(|&t| t == targets[0]) {
            return Err(ModelError::Train("the training labels hold a single class".into()));
        }
        let standardiser = Standardiser::fit(xs.view())?;
        let z = standardiser.apply(xs.view());
        let params = linfa_svm::Svm::<f64, bool>::params().pos_neg_weights(config.c, config.c).eps(1e-3);
        let params = match config.kernel {
            SvmKernel::Linear => params.linear_kernel(),
            SvmKernel::Rbf { gamma } => params.gaussian_kernel(1.0 / Self::gamma(gamma, x.ncols())),
        };
        let data = linfa::Dataset::new(z.clone(), targets);
        let fitted = params.fit(&data).map_err(|e| ModelError::Train(e.to_string()))?;
        // linfa keeps the support vectors to itself but publishes the signed dual coefficients
        // of every training row; the support vectors are the rows whose coefficient is not ~0
        // (linfa's own cut-off).
        let keep: Vec<usize> = (0..rows.len()).filter(|&i| fitted.alpha[i].abs() > 100.0 * f64::EPSILON).collect();
        let support = z.select(Axis(0), &keep);
        let coef: Array1<f64> = keep.iter().map(|&i| fitted.alpha[i]).collect();
        let decision = match config.kernel {
            SvmKernel::Linear => Decision::Linear { weights: support.t().dot(&coef) },
            SvmKernel::Rbf { gamma } => Decision::Rbf {
                gamma: Self::gamma(gamma, x.ncols()),
                support_sq: support.outer_iter().map(|s| s.dot(&s)).collect(),
                support,
                coef,
            },
        };
        Ok(Svm { standardiser, rho: fitted.rho, decision, rows_trained: rows.len() })
    }

    fn gamma(gamma: Option<f64>, n_features: usize) -> f64 {
        gamma.unwrap_or(1.0 / n_features.max(1) as f64)
    }

    /// The decision value per row: positive means class 1.
    pub fn decision(&self, x: ArrayView2<f64>) -> Array1<f64> {
        let z = self.standardiser.apply(x);
        match &self.decision {
            Decision::Linear { weights } => z.dot(weights) - self.rho,
            Decision::Rbf { gamma, support, support_sq, coef } => {
                let mut k = z.dot(&support.t());
                for (mut row, zr) in k.outer_iter_mut().zip(z.outer_iter()) {
                    let zz = zr.dot(&zr);
                    row.iter_mut().zip(support_sq).for_each(|(v, ss)| *v = (-gamma * (zz + ss - 2.0 * *v).max(0.0)).exp());
                }
                k.dot(coef) - self.rho
            }
        }
    }

    /// Number of support vectors (for a linear kernel, folded into one weight vector: 0).
    pub fn n_support(&self) -> usize {
        match &self.decision {
            Decision::Linear { .. } => 0,
            Decision::Rbf { support, .. } => support.nrows(),
        }
    }
}

/// The `max_rows` rows (of `n`) with the smallest seeded per-row keys, in row order: a uniform
/// random subsample in which a row's fate depends on (seed, row) alone, so appending rows to `n`
/// keeps every picked row that the new ones do not displace.
fn subsample(n: usize, max_rows: usize, seed: u64) -> Vec<usize> {
    if n <= max_rows {
        return (0..n).collect();
    }
    let key = |i: usize| {
        // splitmix64 of (seed, row)
        let mut z = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut keyed: Vec<(u64, usize)> = (0..n).map(|i| (key(i), i)).collect();
    keyed.select_nth_unstable(max_rows - 1);
    let mut rows: Vec<usize> = keyed[..max_rows].iter().map(|&(_, i)| i).collect();
    rows.sort_unstable();
    rows
}

impl Model for Svm {
    /// The encoded vector, read as numbers: any real input is scored.
    fn takes_any_real_input(&self) -> bool {
        true
    }

    fn n_features(&self) -> usize {
        self.standardiser.width()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let view = ArrayView2::from_shape((out.len(), self.standardiser.width()), x).map_err(|e| ModelError::Inference(e.to_string()))?;
        out.iter_mut().zip(self.decision(view)).for_each(|(o, d)| *o = 1.0 / (1.0 + (-d).exp()));
        Ok(())
    }

    fn describe(&self) -> String {
        match &self.decision {
            Decision::Linear { .. } => format!("linear SVM (trained on {} rows)", self.rows_trained),
            Decision::Rbf { .. } => {
                format!("RBF-kernel SVM ({} support vectors, trained on {} rows)", self.n_support(), self.rows_trained)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two noisy rings: only a non-linear kernel separates them.
    fn rings() -> (Array2<f64>, Vec<u8>) {
        let n = 400;
        let x = Array2::from_shape_fn((n, 2), |(i, j)| {
            let radius = if i % 2 == 0 { 1.0 } else { 3.0 } + ((i * 7919) % 13) as f64 / 40.0;
            let angle = i as f64 * 0.37;
            radius * if j == 0 { angle.cos() } else { angle.sin() }
        });
        let y = (0..n).map(|i| (i % 2) as u8).collect();
        (x, y)
    }

    fn accuracy(model: &Svm, x: &Array2<f64>, y: &[u8]) -> f64 {
        let d = model.decision(x.view());
        d.iter().zip(y).filter(|(d, &l)| (**d > 0.0) == (l == 1)).count() as f64 / y.len() as f64
    }

    #[test]
    fn the_batched_decision_matches_linfa_and_separates_rings() {
        let (x, y) = rings();
        let config = SvmConfig { kernel: SvmKernel::Rbf { gamma: None }, c: 1.0, max_rows: 10_000, seed: 1 };
        let model = Svm::train(&x, &y, &config).unwrap();
        assert!(accuracy(&model, &x, &y) > 0.97, "rbf accuracy {}", accuracy(&model, &x, &y));
        // linfa's own prediction, row by row, on the same standardised inputs.
        let z = model.standardiser.apply(x.view());
        let targets: Array1<bool> = y.iter().map(|&v| v == 1).collect();
        let reference = linfa_svm::Svm::<f64, bool>::params()
            .pos_neg_weights(1.0, 1.0)
            .eps(1e-3)
            .gaussian_kernel(2.0)
            .fit(&linfa::Dataset::new(z.clone(), targets))
            .unwrap();
        let mine = model.decision(x.view());
        for (row, d) in z.outer_iter().zip(&mine) {
            let theirs = reference.weighted_sum(&row) - reference.rho;
            assert!((theirs - d).abs() < 1e-9, "linfa {theirs} vs batched {d}");
        }
        let linear = SvmConfig { kernel: SvmKernel::Linear, ..config };
        assert!(accuracy(&Svm::train(&x, &y, &linear).unwrap(), &x, &y) < 0.8, "a linear kernel cannot separate rings");
    }

    #[test]
    fn a_subsample_is_reproducible_and_bounded() {
        let (x, y) = rings();
        let config = SvmConfig { kernel: SvmKernel::Linear, c: 1.0, max_rows: 100, seed: 7 };
        let a = Svm::train(&x, &y, &config).unwrap();
        let b = Svm::train(&x, &y, &config).unwrap();
        assert_eq!(a.rows_trained, 100);
        assert_eq!(a.decision(x.view()), b.decision(x.view()));
        // Appending rows keeps the rows already picked, except those the new ones displace.
        let before = subsample(10_000, 1_000, 3);
        let after = subsample(10_100, 1_000, 3);
        let kept = before.iter().filter(|r| after.binary_search(r).is_ok()).count();
        assert!(kept >= 970, "kept {kept} of 1000");
        // Retraining keeps the original subsample and adds every added row.
        let mut grown = x.clone();
        for r in 0..30 {
            grown.push_row(x.row(r)).unwrap();
        }
        let grown_y: Vec<u8> = y.iter().chain(&y[..30]).copied().collect();
        let retrained = Svm::train_augmented(&grown, &grown_y, x.nrows(), &config).unwrap();
        assert_eq!(retrained.rows_trained, 130);
        let single = vec![1u8; x.nrows()];
        assert!(Svm::train(&x, &single, &config).unwrap_err().to_string().contains("single class"));
    }
}
