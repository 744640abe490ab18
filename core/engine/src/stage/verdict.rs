//! The verdicts' types: the thresholds that grade them (`[pipeline.verdict]`), the severities,
//! and each protected attribute's verdict with the measures it rests on, as `summary.json`'s
//! `verdicts` holds them. [`crate::verdict`] computes them from a run's figures.

use serde::{Deserialize, Serialize};

/// The thresholds that grade the verdicts (`[pipeline.verdict]`; `summary.json`'s
/// `verdicts.thresholds`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A flip rate at least this is severe (default 0.10).
    pub flip_severe: f64,
    /// A flip rate at least this is notable (default 0.01).
    pub flip_notable: f64,
    /// An impact ratio below this fails, severe (default: each `group_metrics` stage's
    /// `impact_threshold`, itself 0.8 by default).
    pub impact_fail: Option<f64>,
    /// An impact ratio below this is notable (default 0.9).
    pub impact_notable: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { flip_severe: 0.10, flip_notable: 0.01, impact_fail: None, impact_notable: 0.9 }
    }
}

/// The keys of `[pipeline.verdict]`.
pub const THRESHOLD_KEYS: [&str; 4] = ["flip_severe", "flip_notable", "impact_fail", "impact_notable"];

/// Why a `[pipeline.verdict]` threshold is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    /// The value is not a share in (0, 1].
    #[error("[pipeline.verdict] `{key}` must be a share in (0, 1], found {value}")]
    NotAShare {
        /// The key.
        key: String,
        /// The value given.
        value: f64,
    },
    /// No such key.
    #[error("[pipeline.verdict]: unknown key `{key}`{hint}; accepted: {}", THRESHOLD_KEYS.join(", "))]
    UnknownKey {
        /// The key given.
        key: String,
        /// " (did you mean …?)" or "".
        hint: String,
    },
    /// `flip_notable` above `flip_severe`.
    #[error("[pipeline.verdict] `flip_notable` ({notable}) is above `flip_severe` ({severe}); a notable rate is the smaller one")]
    FlipsOutOfOrder {
        /// `flip_notable`.
        notable: f64,
        /// `flip_severe`.
        severe: f64,
    },
    /// `impact_fail` above `impact_notable`.
    #[error("[pipeline.verdict] `impact_fail` ({fail}) is above `impact_notable` ({notable}); the failing ratio is the smaller one")]
    ImpactsOutOfOrder {
        /// `impact_fail`.
        fail: f64,
        /// `impact_notable`.
        notable: f64,
    },
}

impl Thresholds {
    /// Set threshold `key` to `value`; refused when the key is unknown or the value is not a
    /// share in (0, 1].
    pub fn set(&mut self, key: &str, value: f64) -> Result<(), ThresholdError> {
        if !(value > 0.0 && value <= 1.0) {
            return Err(ThresholdError::NotAShare { key: key.to_string(), value });
        }
        match key {
            "flip_severe" => self.flip_severe = value,
            "flip_notable" => self.flip_notable = value,
            "impact_fail" => self.impact_fail = Some(value),
            "impact_notable" => self.impact_notable = value,
            other => return Err(ThresholdError::UnknownKey { key: other.to_string(), hint: crate::suggest::hint(other, &THRESHOLD_KEYS) }),
        }
        Ok(())
    }

    /// The thresholds' order, checked once all are set: `flip_notable ≤ flip_severe` and
    /// `impact_fail ≤ impact_notable`.
    pub fn check(&self) -> Result<(), ThresholdError> {
        if self.flip_notable > self.flip_severe {
            return Err(ThresholdError::FlipsOutOfOrder { notable: self.flip_notable, severe: self.flip_severe });
        }
        if let Some(fail) = self.impact_fail.filter(|f| *f > self.impact_notable) {
            return Err(ThresholdError::ImpactsOutOfOrder { fail, notable: self.impact_notable });
        }
        Ok(())
    }

    /// Grade a flip rate.
    pub fn grade_flips(&self, rate: f64) -> Severity {
        if !rate.is_finite() {
            Severity::NotMeasured
        } else if rate >= self.flip_severe {
            Severity::Severe
        } else if rate >= self.flip_notable {
            Severity::Notable
        } else {
            Severity::Ok
        }
    }

    /// Grade an impact ratio against `fail` (the failing line in force).
    pub fn grade_impact(&self, ratio: f64, fail: f64) -> Severity {
        if !ratio.is_finite() {
            Severity::NotMeasured
        } else if ratio < fail {
            Severity::Severe
        } else if ratio < self.impact_notable {
            Severity::Notable
        } else {
            Severity::Ok
        }
    }

    /// [`Thresholds::grade_impact`], held to notable when the ratio fails but its difference was
    /// tested and is not significant (`significant == Some(false)`): it may be chance.
    pub fn grade_impact_tested(&self, ratio: f64, fail: f64, significant: Option<bool>) -> Severity {
        match self.grade_impact(ratio, fail) {
            Severity::Severe if significant == Some(false) => Severity::Notable,
            severity => severity,
        }
    }
}

/// How serious a measure is, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Nothing measured it.
    NotMeasured,
    /// Under every threshold.
    Ok,
    /// At least the notable threshold.
    Notable,
    /// At least the severe threshold (an impact ratio that fails).
    Severe,
}

impl Severity {
    /// The word shown for it ("SEVERE", "NOTABLE", "OK", "NOT MEASURED").
    pub fn word(self) -> &'static str {
        match self {
            Severity::NotMeasured => "NOT MEASURED",
            Severity::Ok => "OK",
            Severity::Notable => "NOTABLE",
            Severity::Severe => "SEVERE",
        }
    }
}

/// One measure of flipped decisions an attribute's verdict rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlipMeasure {
    /// The stage that measured it.
    pub stage: String,
    /// `"check"` (real rows), `"estimate"` (inputs drawn from the domain) or `"search"`.
    pub measure: String,
    /// The share flipped (`None` for a search, which does not measure a share).
    pub rate: Option<f64>,
    /// Its 95% interval.
    pub ci95: Option<[f64; 2]>,
    /// Rows (or inputs, or IDIs found) that flip.
    pub flipped: u64,
    /// Rows (or inputs, or inputs generated) looked at.
    pub of: u64,
    /// The protected attributes the stage changed together, when more than one (its flips
    /// cannot be told apart by attribute).
    pub changed_with: Vec<String>,
    /// Its grade.
    pub severity: Severity,
}

/// The kind of an impact measure written before `measure` was.
fn group_metrics_kind() -> String {
    "group_metrics".to_string()
}

/// The worst impact ratio of an attribute's groups, the measure of its group rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImpactMeasure {
    /// The stage that measured it: a `group_metrics` or a `bias_audit` stage.
    pub stage: String,
    /// That stage's kind (`group_metrics`, `bias_audit`).
    #[serde(default = "group_metrics_kind")]
    pub measure: String,
    /// The group with the lowest impact ratio among those the four-fifths rule judges.
    pub group: String,
    /// Its rows.
    pub n: usize,
    /// Its selection rate.
    pub selection_rate: f64,
    /// The group the ratio divides by: the most selected group of at least `min_share` of the rows.
    pub reference: String,
    /// The reference group's selection rate.
    pub reference_rate: f64,
    /// The impact ratio.
    #[serde(deserialize_with = "crate::serde_nan::nan_if_null")]
    pub impact_ratio: f64,
    /// The failing line in force.
    pub fail_below: f64,
    /// Whether the group's selection rate differs significantly from the reference's (after
    /// Holm's correction); `None` when the stage tested it against another group (its `reference`
    /// key) or not at all.
    pub significant: Option<bool>,
    /// Its grade.
    pub severity: Severity,
    /// The rates are scoring rates (the share scoring above the whole sample's median score, a
    /// `bias_audit` with `outcome = "score"`), said as such.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scored: bool,
}

/// The verdict on one protected attribute of one model (or on attributes a stage changed
/// together).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeVerdict {
    /// The protected attribute (`"sex + race"` for attributes changed together).
    pub attribute: String,
    /// The attributes changed together, when the verdict is on more than one (empty otherwise).
    #[serde(default)]
    pub together: Vec<String>,
    /// The stage of the model audited.
    pub model: String,
    /// The worst of its measures.
    pub severity: Severity,
    /// The verdict in one line of words.
    pub line: String,
    /// What to do next.
    pub next: String,
    /// The flipped-decision measures that changed the attribute (the graded one first).
    pub flips: Vec<FlipMeasure>,
    /// The group-rate measure, when a `group_metrics` stage measured the attribute.
    pub impact: Option<ImpactMeasure>,
}

/// `summary.json`'s `verdicts`: the thresholds and one verdict per protected attribute and model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictSection {
    /// The thresholds in force.
    pub thresholds: Thresholds,
    /// One per protected attribute of each audited model, in the data's order, then one per set
    /// of attributes a stage changed together.
    pub attributes: Vec<AttributeVerdict>,
}
