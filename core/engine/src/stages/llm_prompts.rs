//! What the stages that ask an LLM prompts of their own (`pairwise`, `ranking`) share: the LLM
//! behind their model input, their template's check at validate, and a mean over their units
//! with its interval.

use std::path::Path;

use crate::clustered::ClusterSums;
use crate::error::{Result, StageError};
use crate::models::llm::LlmModel;
use crate::stage::config::Checks;
use crate::stage::ModelArtifact;
use crate::stats::t_ci95;

/// The LLM behind `model`, which a stage of kind `kind` asks `what` (e.g. "to choose between two
/// candidates"); any other model is refused, naming the fix.
pub(crate) fn asked_llm<'a>(model: &'a ModelArtifact, kind: &str, what: &str) -> Result<&'a LlmModel> {
    model.oracle.model().as_any().and_then(|m| m.downcast_ref::<LlmModel>()).ok_or_else(|| {
        StageError::cannot(
            "model",
            format!(
                "`{kind}` asks an LLM {what}, but the model is {}: connect a `load_model` stage with an `llm = {{ … }}` block",
                model.oracle.model().describe()
            ),
        )
    })
}

/// A `prompt` key that names no file is a problem at validate (`what`: "pairwise", "ranking").
pub(crate) fn check_template(c: &mut Checks<'_, '_>, prompt: &Path, what: &str) {
    if !c.dir().join(prompt).is_file() {
        c.problem("prompt", format!("the {what} template {} does not exist (paths are relative to the pipeline file)", prompt.display()));
    }
}

/// A mean over a stage's units (pairs, documents) and its 95% interval.
pub(crate) struct UnitMean {
    /// The mean.
    pub mean: f64,
    /// Its interval: cluster-robust over the ways when there are any, else Student's t; none
    /// under two units (or two clusters).
    pub ci95: Option<[f64; 2]>,
    /// Its standard error.
    pub se: f64,
    /// The degrees of freedom of its t quantile.
    pub df: usize,
    /// The clusters of each way (empty without ways).
    pub clusters: std::collections::BTreeMap<String, usize>,
    /// Student's t interval treating the units as independent.
    pub independent: Option<[f64; 2]>,
}

/// The [`UnitMean`] of `values`, unit `i`'s value being `values[i].1` and its clusters' keys
/// `values[i].0` in `ways`.
pub(crate) fn unit_mean(ways: &[String], values: &[(Vec<String>, f64)]) -> UnitMean {
    let n = values.len();
    let mean = if n == 0 { f64::NAN } else { values.iter().map(|v| v.1).sum::<f64>() / n as f64 };
    let sd = if n < 2 { f64::NAN } else { (values.iter().map(|v| (v.1 - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() };
    let independent = t_ci95(mean, sd, n);
    if ways.is_empty() {
        return UnitMean {
            mean,
            ci95: independent,
            se: sd / (n as f64).sqrt(),
            df: n.saturating_sub(1),
            clusters: Default::default(),
            independent,
        };
    }
    let mut sums = ClusterSums::new(ways.to_vec());
    for (keys, v) in values {
        sums.push(keys, *v);
    }
    let clustered = sums.interval();
    UnitMean {
        mean,
        ci95: clustered.as_ref().map(|c| c.ci95),
        se: clustered.as_ref().map_or(f64::NAN, |c| c.se),
        df: clustered.as_ref().map_or(0, |c| c.df),
        clusters: clustered.map(|c| c.clusters).unwrap_or_default(),
        independent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::t_quantile;

    #[test]
    fn a_mean_without_ways_is_students_t_over_the_units() {
        let values: Vec<(Vec<String>, f64)> = [0.2, 0.4, 0.9].iter().map(|v| (Vec::new(), *v)).collect();
        let m = unit_mean(&[], &values);
        assert!((m.mean - 0.5).abs() < 1e-12);
        let sd = (((0.2f64 - 0.5).powi(2) + (0.4f64 - 0.5).powi(2) + (0.9f64 - 0.5).powi(2)) / 2.0).sqrt();
        let half = t_quantile(0.975, 2) * sd / 3f64.sqrt();
        let [lo, hi] = m.ci95.unwrap();
        assert!((lo - (0.5 - half)).abs() < 1e-12 && (hi - (0.5 + half)).abs() < 1e-12, "{lo} {hi}");
        assert_eq!((m.df, m.ci95), (2, m.independent));
    }
}
