//! A flip rate asked until it is precise enough: the confidence sequence of the verdicts so far
//! ([`crate::sequential`]), read at the effective sample size where the observations are clustered
//! ([`crate::clustered`]), and the judgement that the clusters alone keep it from the precision.
//!
//! Where the verdicts share clusters (an LLM's names, the documents, `cluster_by` columns), the
//! sequence's half-width is multiplied by √d, d the design effect of the verdicts so far (Kish's
//! effective sample size: an approximation, not a sequence proved valid under clustering), and so
//! is its interval, about its middle. More observations over the same clusters do not shrink the
//! clusters' own spread: the part `reached · √(1 − 1/d)` of the half-width is its floor, and once
//! [`FLOOR_AFTER`] observations show the floor above the precision, asking stops, unmet.

use crate::clustered::{widened, ClusterSums};
use crate::sequential::{ConfidenceSequence, PrecisionStop};

/// Observations taken before the clusters may be judged to keep the rate from its precision
/// (before, their spread is read off too few).
pub const FLOOR_AFTER: u64 = 2_000;

/// What a look at a [`FlipSequence`] decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Look {
    /// Keep asking.
    Continue,
    /// The half-width is within the precision.
    Reached,
    /// The clusters' own spread keeps the half-width above the precision (the floor given).
    Floor(f64),
}

/// The verdicts of a flip rate asked until precise, with their clusters.
#[derive(Debug, Clone)]
pub struct FlipSequence {
    sequence: ConfidenceSequence,
    clusters: Option<ClusterSums>,
    floor: Option<f64>,
}

impl FlipSequence {
    /// An empty sequence; `clustered` when the verdicts come with their clusters.
    pub fn new(clustered: bool) -> FlipSequence {
        FlipSequence { sequence: ConfidenceSequence::new(0.05), clusters: clustered.then(ClusterSums::default), floor: None }
    }

    /// Take the next verdicts, in order, and (when clustered) their sums per cluster.
    pub fn take(&mut self, flips: impl IntoIterator<Item = bool>, clusters: Option<&ClusterSums>) {
        for flip in flips {
            self.sequence.push(f64::from(u8::from(flip)));
        }
        if let (Some(all), Some(sums)) = (self.clusters.as_mut(), clusters) {
            all.add(sums);
        }
    }

    /// The verdicts so far summed per cluster (`None` unless clustered).
    pub fn clusters(&self) -> Option<&ClusterSums> {
        self.clusters.as_ref()
    }

    /// The design effect of the verdicts so far (1 unless clustered).
    pub fn design_effect(&self) -> f64 {
        self.clusters.as_ref().map_or(1.0, |c| c.share_clustering().design_effect)
    }

    /// The sequence's half-width times √(design effect).
    pub fn half_width(&self) -> f64 {
        self.sequence.half_width() * self.design_effect().sqrt()
    }

    /// Whether to stop at `precision` now.
    pub fn look(&mut self, precision: f64) -> Look {
        if self.half_width() <= precision {
            return Look::Reached;
        }
        if self.clusters.is_some() {
            let floor = self.half_width() * (1.0 - 1.0 / self.design_effect()).sqrt();
            self.floor = Some(floor);
            if floor > precision && self.sequence.n() >= FLOOR_AFTER {
                return Look::Floor(floor);
            }
        }
        Look::Continue
    }

    /// Whether asking for `precision` stops now: the half-width reached, or the clusters' floor
    /// above it (said in `warnings` as the stage kind `kind`'s); never for a plan's
    /// `placeholders` answers, which say nothing (a plan lists everything the run may ask).
    pub fn should_stop(&mut self, precision: f64, placeholders: bool, kind: &str, warnings: &crate::warnings::Warnings) -> bool {
        if placeholders {
            return false;
        }
        match self.look(precision) {
            Look::Continue => false,
            Look::Reached => true,
            Look::Floor(floor) => {
                warnings.warn(floor_warning(kind, precision, floor, self.most_clusters()));
                true
            }
        }
    }

    /// The clusters of the way with the most (for a warning's words); 0 unless clustered.
    pub fn most_clusters(&self) -> usize {
        self.clusters.as_ref().and_then(ClusterSums::variance).map_or(0, |(_, _, c)| c.values().copied().max().unwrap_or(0))
    }

    /// How asking for `precision` stopped (its `model_rows` and `requests` left for the caller),
    /// with the interval valid there (widened where clustered), and the sequence's own interval.
    pub fn stop(&self, precision: f64) -> (PrecisionStop, [f64; 2]) {
        let [low, high] = self.sequence.interval();
        let interval = if self.clusters.is_some() { widened([low, high], (low + high) / 2.0, self.design_effect()) } else { [low, high] };
        let mut stop = PrecisionStop::new(precision, self.half_width(), self.sequence.n(), interval);
        stop.cluster_floor = self.floor;
        (stop, [low, high])
    }
}

/// The warning of a stage of kind `kind` whose flip rate stopped at `floor` above `precision`,
/// over `clusters` clusters.
pub fn floor_warning(kind: &str, precision: f64, floor: f64, clusters: usize) -> String {
    format!(
        "the {kind} stopped before `precision = {precision}`: its rows show {clusters} sets of names (or other clusters), \
         and the spread between those clusters alone keeps the flip rate's 95% interval ±{floor:.3} wide however many \
         prompts are asked (more names in the `names` table, or a wider `precision`, reach it)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unclustered_it_is_the_confidence_sequence_and_clustered_it_widens_by_the_design_effect() {
        let flips: Vec<bool> = (0..3000).map(|i| i % 5 == 0).collect();
        let mut plain = FlipSequence::new(false);
        plain.take(flips.iter().copied(), None);
        let mut sequence = ConfidenceSequence::new(0.05);
        flips.iter().for_each(|&f| sequence.push(f64::from(u8::from(f))));
        assert_eq!(plain.half_width(), sequence.half_width());
        assert_eq!(plain.stop(0.01).0.ci95, sequence.interval());
        // Two clusters, all the flips in one: a design effect far above 1, a floor above ±0.01.
        let mut sums = ClusterSums::new(vec!["names".into()]);
        for (i, &f) in flips.iter().enumerate() {
            sums.push(&[if i % 5 == 0 { "a".to_string() } else { format!("b{}", i % 3) }], f64::from(u8::from(f)));
        }
        let mut clustered = FlipSequence::new(true);
        clustered.take(flips.iter().copied(), Some(&sums));
        let d = clustered.design_effect();
        assert!(d > 10.0, "{d}");
        assert!((clustered.half_width() - sequence.half_width() * d.sqrt()).abs() < 1e-15);
        let Look::Floor(floor) = clustered.look(0.01) else { panic!("the clusters keep it from ±0.01") };
        assert!((floor - clustered.half_width() * (1.0 - 1.0 / d).sqrt()).abs() < 1e-15);
        let (stop, own) = clustered.stop(0.01);
        assert_eq!((own, stop.met, stop.cluster_floor), (sequence.interval(), false, Some(floor)));
        assert!(stop.ci95[1] - stop.ci95[0] > own[1] - own[0]);
    }
}
