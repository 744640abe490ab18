//! `bias_audit`: the tables of a New York City Local Law 144 bias audit (6 RCNY §5-301) — per sex
//! category, per race/ethnicity category and per intersection of the two: the number of people,
//! the number selected (or scoring above the whole sample's median score), the selection (scoring)
//! rate and the impact ratio against the highest rate; people of an unknown category counted
//! outside the ratios; categories under a share of the sample optionally left out of the ratios
//! but still listed. Beside the regulated figures, kept apart from them: each rate's Wilson
//! interval, Fisher's exact test of each category against the highest one (Holm's correction over
//! each table) and the EEOC's four-fifths line. The decisions come from the data itself (a column
//! of past selections or scores, or the label: no model needed) or from a model's labels or scores.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::label_value::LabelValues;
use super::options::Rows;
use crate::data::Dataset;
use crate::domain::{AttributeKind, Domain};
use crate::error::{Result, StageError};
use crate::fairness::situation::{situation_test, Flagged, Qualification};
use crate::output::{Table, TableBuilder};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::{KeyType, StageKeys};
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::{Impact, InRun, StageFigures};
use crate::stage::verdict::{ImpactMeasure, Thresholds};
use crate::stage::{
    Artifact, ArtifactKind, ColumnProblem, GroupMetricRow, GroupMetricsArtifact, Inputs, LabelUse, ScoreNeed, Stage, StageContext,
    StageOutput,
};
use crate::stats::{fisher_exact, holm, wilson};
use crate::suggest::hint;

/// The sex categories of the rules (EEO-1), in their order.
pub const SEX_CATEGORIES: &[&str] = &["Male", "Female"];

/// The race/ethnicity categories of the rules (EEO-1), in their order; all but the first are
/// "Not Hispanic or Latino".
pub const RACE_CATEGORIES: &[&str] = &[
    "Hispanic or Latino",
    "White",
    "Black or African American",
    "Native Hawaiian or Pacific Islander",
    "Asian",
    "Native American or Alaska Native",
    "Two or More Races",
];

/// The ethnicity categories of the rules (EEO-1): a `Hispanic or Latino` person is in that
/// race/ethnicity category whatever their race; a `Not Hispanic or Latino` one is in their race's.
pub const ETHNICITY_CATEGORIES: &[&str] = &["Hispanic or Latino", "Not Hispanic or Latino"];

/// The category a mapping sends data values of an unknown category to.
pub const UNKNOWN: &str = "Unknown";

/// The four-fifths line of the EEOC's Uniform Guidelines (the city's rules set no threshold).
pub const FOUR_FIFTHS: f64 = 0.8;

/// The `bias_audit` stage kind.
pub const KIND: StageKind = StageKind {
    name: "bias_audit",
    doc: "The tables of a NYC Local Law 144 bias audit (6 RCNY §5-301) per sex, race/ethnicity and their intersection: number of people, number selected (or scoring above the whole sample's median score), selection (scoring) rate and impact ratio to the highest rate; unknown categories counted outside the ratios; categories under `exclude_below` of the sample listed but left out of the ratios. Beside them: Wilson 95% intervals, Fisher's exact test against the highest category (Holm over each table) and the EEOC four-fifths line. Decisions from the data (a 0/1 or named column, a score column, or the label: no model needed) or from a model's labels or scores; writes bias_audit.html, a printable page.",
    inputs: &[
        InputDoc {
            role: "data",
            accepts: &[ArtifactKind::Dataset],
            required: false,
            doc: "a dataset of past decisions or scores (no model); give `data` or `model`",
        },
        InputDoc {
            role: "model",
            accepts: &[ArtifactKind::Model],
            required: false,
            doc: "a model whose labels or scores on its dataset's rows are audited; give `data` or `model`",
        },
    ],
    output: ArtifactKind::GroupMetrics,
    keys: BiasAuditConfig::keys,
    tag: None,
    example: "[stages.audit]\nkind = \"bias_audit\"\ndata = \"data\"\nsex = \"sex\"\nrace = \"race\"\ncolumn = \"selected\"\nexclude_below = 0.02\nexclusion_justification = \"under 2% of the sample\"\ntool = \"ResumeRank 3\"",
    configure: configure::<BiasAuditConfig>,
    fields: fields_of::<BiasAuditConfig>,
    read: read_debug::<BiasAuditConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc {
        compared: &["min_impact_ratio"],
        compare: compare_figures,
        ..FigureDoc::of::<BiasAuditFigures>()
    },
};

/// The figures a sweep compares a `bias_audit` stage on.
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    compare_as::<BiasAuditFigures>(entry, 1, |f| vec![f.min_impact_ratio.map(serde_json::Value::from).unwrap_or_default()])
}

/// What is audited: selections or scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Selected or not: selection rates.
    #[default]
    Selection,
    /// A score: scoring rates (share above the sample's median).
    Score,
}

/// Situation testing's neighbours per category by default (the paper tries 8, 16 and 32).
pub const SITUATION_K: usize = 16;

/// Situation testing's gap by default: on the planted logs of `tests/situation_testing.rs` it
/// finds nearly every discriminated applicant and lists 1.4% of a log with no discrimination.
pub const SITUATION_T: f64 = 0.3;

/// The `bias_audit` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct BiasAuditConfig {
    /// The column of sex categories (give `sex`, `race` or both).
    pub sex: Option<String>,
    /// The column of race/ethnicity categories.
    pub race: Option<String>,
    /// A column of Hispanic or Latino ethnicity beside `race` (a vendor's Y/N flag beside a race
    /// code): a Hispanic or Latino person is in that race/ethnicity category whatever `race` says,
    /// a Not Hispanic or Latino one in their race's, and an unknown ethnicity is unknown. Map its
    /// values in `categories.ethnicity` (e.g. { Y = "Hispanic or Latino", N = "Not Hispanic or
    /// Latino" }).
    #[key(default = "none (`race` alone gives the category)")]
    pub ethnicity: Option<String>,
    /// selection: selection rates; score: scoring rates (share above the whole sample's median
    /// score).
    pub outcome: Outcome,
    /// With `data`: the column of decisions (0/1, or see `selected`) or of scores; not with
    /// `model`, whose labels or P(favourable) are audited.
    #[key(default = "the label (selection); required for score")]
    pub column: Option<String>,
    /// The value (or values) of `column` that mean selected, e.g. "Yes" or ["Yes", "Advanced"].
    #[key(default = "1 (a 0/1 column)")]
    pub selected: Option<LabelValues>,
    /// The value (or values) of `column` that mean not selected. Every value of the column must be
    /// named in `selected`, `not_selected` or `exclude`; without `not_selected`, a column with
    /// one value besides the selected ones reads it as not selected, and more are refused.
    #[key(default = "0 with the default `selected`; else the one other value")]
    pub not_selected: Option<LabelValues>,
    /// Values of `column` whose rows are left out of the audit (e.g. "Withdrawn"): counted, with
    /// their number, on the page and in summary.json (`decision_values`), in no table.
    pub exclude: Vec<String>,
    /// Match `selected`, `not_selected` and `exclude` to the column's values ignoring case
    /// ("yes" is "Yes").
    pub ignore_case: bool,
    /// Rows audited.
    pub split: Rows,
    /// Data values meaning an unknown category (a blank cell, kept by a load with missing_values =
    /// [], always is one): counted, not in any ratio.
    pub unknown: Vec<String>,
    /// Map data values to the rules' EEO-1 categories, e.g. { sex = { M = "Male", F = "Female" },
    /// race = { H = "Hispanic or Latino" }, ethnicity = { Y = "Hispanic or Latino", N = "Not
    /// Hispanic or Latino" } }; rows then follow the rules' order; "Unknown" marks unknown values.
    #[key(ty = "table", default = "none (the data's values, in the data's order)")]
    pub categories: BTreeMap<String, BTreeMap<String, String>>,
    /// Categories under this share of the sample (the rules allow 0.02) are listed with their
    /// counts and rates but left out of the impact ratios.
    #[key(default = "none (every category in the ratios)")]
    pub exclude_below: Option<f64>,
    /// The auditor's reason for `exclude_below`, printed with the tables (the rules ask for it).
    pub exclusion_justification: Option<String>,
    /// Significance level of the tests after Holm's correction.
    pub alpha: f64,
    /// Beyond the rules, situation testing (Luong, Ruggieri & Turini, KDD 2011): the columns that
    /// say how qualified an applicant is (years of experience, education, a test score). Each
    /// applicant of a category who was not selected is compared with the `situation_k` applicants
    /// most like them on these columns in their own category and in the reference category; they
    /// are listed when the reference neighbours' selection rate is higher by at least
    /// `situation_t`. Needs no model.
    #[key(default = "none (no situation testing)")]
    pub qualifications: Vec<String>,
    /// Situation testing: the neighbours taken in each category (the paper tries 8, 16 and 32).
    pub situation_k: usize,
    /// Situation testing: the gap between the reference neighbours' selection rate and the own
    /// category's neighbours' at which an applicant is listed (the paper's t).
    pub situation_t: f64,
    /// Situation testing: the reference category of each table, e.g. { sex = "Male", race =
    /// "White" }.
    #[key(ty = "table", default = "each table's most selected category (the impact ratios' denominator)")]
    pub reference: BTreeMap<String, String>,
    /// Situation testing: a column naming each applicant (an id), printed beside the applicants
    /// listed.
    #[key(default = "none (applicants named by their row)")]
    pub applicant_id: Option<String>,
    /// What the page prints about the audit: its keys (`tool`, `auditor`, …) sit beside the
    /// others in the stage's table (`*`: read from the keys this struct does not declare).
    #[serde(rename(deserialize = "*page"))]
    pub page: AuditPage,
}

impl Default for BiasAuditConfig {
    fn default() -> Self {
        BiasAuditConfig {
            sex: None,
            race: None,
            ethnicity: None,
            outcome: Outcome::Selection,
            column: None,
            selected: None,
            not_selected: None,
            exclude: Vec::new(),
            ignore_case: false,
            split: Rows::All,
            unknown: vec![UNKNOWN.to_string()],
            categories: BTreeMap::new(),
            exclude_below: None,
            exclusion_justification: None,
            alpha: 0.05,
            qualifications: Vec::new(),
            situation_k: SITUATION_K,
            situation_t: SITUATION_T,
            reference: BTreeMap::new(),
            applicant_id: None,
            page: AuditPage::default(),
        }
    }
}

/// The rules' categories of axis `axis` (`sex`, `race` or `ethnicity`).
fn rules_categories(axis: &str) -> Option<&'static [&'static str]> {
    match axis {
        "sex" => Some(SEX_CATEGORIES),
        "race" => Some(RACE_CATEGORIES),
        "ethnicity" => Some(ETHNICITY_CATEGORIES),
        _ => None,
    }
}

/// The axes `categories` maps, with the key naming each one's column.
const AXES: &[&str] = &["sex", "race", "ethnicity"];

impl StageConfig for BiasAuditConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        if self.sex.is_none() && self.race.is_none() {
            c.missing("sex", "the column of sex categories, or `race`: the column of race/ethnicity categories (or both)");
        }
        if self.sex.is_some() && self.sex == self.race {
            c.problem("race", "`sex` and `race` name the same column");
        }
        if let Some(ethnicity) = &self.ethnicity {
            if self.race.is_none() {
                c.problem(
                    "ethnicity",
                    "`ethnicity` is read beside `race` (Hispanic or Latino, else the race's category): name the column of race categories in `race`",
                );
            }
            if [&self.sex, &self.race].iter().any(|c| c.as_ref() == Some(ethnicity)) {
                c.problem("ethnicity", format!("`ethnicity` names `{ethnicity}`, which `sex` or `race` names too"));
            }
        }
        if self.outcome == Outcome::Score {
            for key in self.decision_keys_given() {
                c.problem(key, format!("`{key}` names values of a column of decisions; with outcome = \"score\" the rate is the share above the median score"));
            }
        }
        let fold = |v: &str| if self.ignore_case { v.to_lowercase() } else { v.to_string() };
        let selected: Vec<String> = self.selected.iter().flat_map(|v| v.texts()).map(|v| fold(&v)).collect();
        let not_selected: Vec<String> = self.not_selected.iter().flat_map(|v| v.texts()).map(|v| fold(&v)).collect();
        if let Some(both) = not_selected.iter().find(|v| selected.contains(v)) {
            c.problem("not_selected", format!("{both:?} is named in both `selected` and `not_selected`"));
        }
        if let Some(both) = self.exclude.iter().find(|v| selected.contains(&fold(v)) || not_selected.contains(&fold(v))) {
            c.problem(
                "exclude",
                format!("{both:?} is excluded and also named in `selected` or `not_selected`: a value is one of the three"),
            );
        }
        if let Some(share) = self.exclude_below {
            if !(share > 0.0 && share < 1.0) {
                c.problem("exclude_below", format!("`exclude_below` must lie in (0, 1) (the rules allow 0.02), found {share}"));
            }
            if self.exclusion_justification.as_deref().is_none_or(|s| s.trim().is_empty()) {
                c.missing(
                    "exclusion_justification",
                    "the rules ask for the auditor's justification of leaving categories out of the impact ratios",
                );
            }
        } else if self.exclusion_justification.is_some() {
            c.problem("exclusion_justification", "a justification without `exclude_below`: no category is left out");
        }
        c.within("alpha", self.alpha, 1e-12, 0.5);
        self.validate_situation_testing(c);
        for (axis, mapping) in &self.categories {
            let Some(allowed) = rules_categories(axis) else {
                let span = c.nested_key_span("categories", axis);
                let fix = match axis.to_lowercase().as_str() {
                    "gender" => "; write `categories.sex` (the rules' axis is sex, whatever the column is called)".to_string(),
                    "race_ethnicity" | "race/ethnicity" | "hispanic" | "hispanic_latino" => {
                        "; write `categories.race` for the race column and `categories.ethnicity` for a Hispanic or Latino flag".to_string()
                    }
                    _ => hint(axis, AXES),
                };
                c.at(
                    &span,
                    format!("`categories.{axis}`: the rules' categories are of `sex` and `race` (and `ethnicity` beside `race`){fix}"),
                );
                continue;
            };
            let column = self.column_of(axis);
            if column.is_none() {
                let span = c.nested_key_span("categories", axis);
                c.at(&span, format!("`categories.{axis}` maps the values of `{axis}`, which is not given"));
            }
            for (value, category) in mapping {
                if category != UNKNOWN && !allowed.contains(&category.as_str()) {
                    let span = c.nested_key_span("categories", axis);
                    c.at(
                        &span,
                        format!(
                            "`categories.{axis}` maps {value:?} to {category:?}, not one of the rules' categories{}: {}, or \"{UNKNOWN}\"",
                            hint(category, allowed),
                            allowed.join(", ")
                        ),
                    );
                }
            }
        }
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// One category's row of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    /// The category ("Female", "Hispanic or Latino", "Male × White").
    pub category: String,
    /// Its sex category (the sex and intersection tables).
    #[serde(default)]
    pub sex: Option<String>,
    /// Its race/ethnicity category (the race and intersection tables).
    #[serde(default)]
    pub race: Option<String>,
    /// People in the category.
    pub count: usize,
    /// People selected (or scoring above the sample's median).
    pub selected: usize,
    /// `selected / count`: the selection (or scoring) rate.
    pub rate: f64,
    /// `count` / the sample's size.
    pub share: f64,
    /// Left out of the impact ratios (under `exclude_below`).
    pub excluded: bool,
    /// The rate / the highest rate of the table's categories in the ratios (`null`: excluded, or
    /// every rate is 0).
    pub impact_ratio: Option<f64>,
    /// Beside the rules: the rate's Wilson 95% interval.
    pub ci95: [f64; 2],
    /// Beside the rules: Fisher's exact test against the highest category (`null` for that
    /// category and excluded ones).
    pub p_value: Option<f64>,
    /// The p-value after Holm's correction over the table.
    pub p_adjusted: Option<f64>,
    /// `p_adjusted <= alpha`.
    pub significant: bool,
    /// Beside the rules: the impact ratio is under 0.8, the EEOC's four-fifths line.
    pub below_four_fifths: bool,
    /// The category with the highest rate (the ratios' denominator).
    pub highest: bool,
}

/// How a value of a decisions column is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Decision {
    /// Selected (moved forward).
    #[serde(rename = "selected")]
    Selected,
    /// Not selected.
    #[serde(rename = "not selected")]
    NotSelected,
    /// Left out of the audit (`exclude`).
    #[serde(rename = "excluded")]
    Excluded,
}

impl Decision {
    /// As summary.json and the page write it.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Selected => "selected",
            Decision::NotSelected => "not selected",
            Decision::Excluded => "excluded",
        }
    }
}

/// One value of a decisions column: how many rows hold it and how it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionValue {
    /// The value as written in the data.
    pub value: String,
    /// Rows holding it (of the rows audited before any was excluded).
    pub count: usize,
    /// `selected`, `not selected` or `excluded` (left out of the audit).
    pub read_as: Decision,
}

/// People of an unknown category in one table: counted, in no ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnknownCount {
    /// People.
    pub count: usize,
    /// Of whom selected (or above the median).
    pub selected: usize,
}

/// One of the three tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditTable {
    /// `sex`, `race` or `intersection`.
    pub table: String,
    /// Its categories, in the rules' order (mapped) or the data's.
    pub rows: Vec<AuditRow>,
    /// People of an unknown category.
    pub unknown: UnknownCount,
}

/// What the page prints about the audit (the keys as written), read from the stage's keys and kept
/// in its figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct AuditPage {
    /// The automated employment decision tool audited, as printed on the page.
    pub tool: Option<String>,
    /// The independent auditor, as printed.
    pub auditor: Option<String>,
    /// The date of the audit, as printed.
    pub audit_date: Option<String>,
    /// The tool's distribution date, as printed.
    pub distribution_date: Option<String>,
    /// The source and explanation of the data, as printed.
    pub data_source: Option<String>,
    /// First date of the data, as printed.
    pub data_from: Option<String>,
    /// Last date of the data, as printed.
    pub data_to: Option<String>,
}

/// Figures of a `bias_audit` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct BiasAuditFigures {
    /// `selection` or `score`.
    pub outcome: String,
    /// Where the decisions came from ("data column `selected`", "model `model`'s labels").
    pub source: String,
    /// People audited (unknown categories included).
    pub rows: usize,
    /// The whole sample's selection (scoring) rate.
    pub rate: f64,
    /// The whole sample's median score (scores only).
    pub median_score: Option<f64>,
    /// The lowest impact ratio over the three tables.
    pub min_impact_ratio: Option<f64>,
    /// The lowest impact ratio of the sex table.
    pub min_impact_ratio_sex: Option<f64>,
    /// The lowest impact ratio of the race/ethnicity table.
    pub min_impact_ratio_race: Option<f64>,
    /// The lowest impact ratio of the intersection table.
    pub min_impact_ratio_intersection: Option<f64>,
    /// Categories under the four-fifths line (beside the rules).
    pub below_four_fifths: usize,
    /// Categories whose rate differs from the highest one's at `alpha` after Holm's correction.
    pub significant: usize,
    /// The significance level.
    pub alpha: f64,
    /// The share under which categories are left out of the ratios.
    pub exclude_below: Option<f64>,
    /// The auditor's reason for leaving them out.
    pub exclusion_justification: Option<String>,
    /// The axes whose values were mapped to the rules' categories.
    pub mapped: Vec<String>,
    /// The tables: sex, race, intersection (those whose columns are given).
    pub tables: Vec<AuditTable>,
    /// What the page prints about the audit.
    pub page: AuditPage,
    /// The data's column of sex categories (the `sex` key).
    #[serde(default)]
    pub sex_column: Option<String>,
    /// The data's column of race/ethnicity categories (the `race` key).
    #[serde(default)]
    pub race_column: Option<String>,
    /// The data's column of Hispanic or Latino ethnicity read beside `race` (the `ethnicity` key).
    #[serde(default)]
    pub ethnicity_column: Option<String>,
    /// Rows of the data file the load stage dropped for a missing value: people in no table, not
    /// even as unknown (the page says so).
    #[serde(default)]
    pub left_out_at_load: usize,
    /// Each value of the decisions column (a `column` of decisions), its number of rows and how it
    /// was read: selected, not selected, or excluded (`exclude`: left out, in no table). Empty for
    /// scores, the label and a model.
    #[serde(default)]
    pub decision_values: Vec<DecisionValue>,
    /// Rows left out of the audit for their decision value (`exclude`).
    #[serde(default)]
    pub excluded_decisions: usize,
    /// Each value of the sex, race and ethnicity columns among the rows audited, its number of
    /// rows and the category it was read as ("Unknown" included): what the page's table of the
    /// data's values shows.
    #[serde(default)]
    pub category_values: Vec<ValueCategory>,
    /// Situation testing's columns (`qualifications`; absent: none ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qualifications: Vec<String>,
    /// Beyond the rules, situation testing: each category of the sex and race tables against its
    /// table's reference category (absent: none ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub situation_testing: Vec<SituationTesting>,
}

/// The most applicants of one category kept in summary.json's `situation_testing` (every one is in
/// `<stage>_situation.csv`).
pub const SITUATION_LISTED_IN_SUMMARY: usize = 200;

/// Situation testing of one category against its table's reference category
/// ([`crate::fairness::situation`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SituationTesting {
    /// `sex` or `race`.
    pub table: String,
    /// The category tested ("Female").
    pub category: String,
    /// The reference category ("Male").
    pub reference: String,
    /// The neighbours taken in each category: `situation_k`, or fewer when a category is smaller.
    pub k: usize,
    /// The gap that lists an applicant (`situation_t`).
    pub t: f64,
    /// Applicants of the category.
    pub count: usize,
    /// Of them, those not selected: the ones tested.
    pub tested: usize,
    /// Tested applicants whose reference neighbours were selected at a rate higher than their own
    /// neighbours' by at least `t`.
    pub listed: usize,
    /// `listed / tested` (null when no one is tested).
    pub share: Option<f64>,
    /// The Wilson 95% interval of `share`.
    pub ci95: Option<[f64; 2]>,
    /// The mean gap (reference neighbours' rate − own neighbours') over the tested applicants.
    pub mean_diff: Option<f64>,
    /// The listed applicants, largest gap first, at most [`SITUATION_LISTED_IN_SUMMARY`].
    pub applicants: Vec<SituationApplicant>,
}

/// An applicant listed by situation testing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SituationApplicant {
    /// The applicant's row among the data's rows as loaded (1 = the first).
    pub row: usize,
    /// Their `applicant_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The selection rate of their k nearest applicants of their own category.
    pub own_rate: f64,
    /// The selection rate of their k nearest applicants of the reference category.
    pub reference_rate: f64,
    /// `reference_rate − own_rate`.
    pub diff: f64,
}

/// One value of a category column (sex, race or ethnicity) and what the audit read it as: the
/// page's table of which data values became each category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueCategory {
    /// `sex`, `race` or `ethnicity`.
    pub axis: String,
    /// The data's column.
    pub column: String,
    /// The value as written in the data ("" for a blank cell).
    pub value: String,
    /// Rows audited holding it.
    pub count: usize,
    /// The category it was read as, or "Unknown".
    pub category: String,
}

/// One axis of the audit read from the rows: each row's category (`None`: unknown), the
/// categories in order, and how each data value was read.
struct Axis {
    of_row: Vec<Option<usize>>,
    names: Vec<String>,
    values: Vec<ValueCategory>,
}

/// The decisions audited.
struct Outcomes {
    /// The dataset the rows are of.
    dataset: Arc<Dataset>,
    /// The rows audited (rows whose decision is excluded left out).
    rows: Vec<usize>,
    /// Each audited row's outcome: 0/1 or a score.
    outcome: Vec<f64>,
    /// Where the outcomes came from, as the page says it.
    source: String,
    /// Each value of a decisions column, its count and how it was read (empty otherwise).
    decision_values: Vec<DecisionValue>,
}

/// How a decisions column's values are read (every value checked to be named).
struct Decisions {
    /// Every value of the column with its count and reading, selected ones first.
    values: Vec<DecisionValue>,
}

impl Decisions {
    /// The decision of a row whose value is `text` (a value of the column: read, as checked).
    fn of(&self, text: &str) -> Decision {
        self.values.iter().find(|v| v.value == text).map_or(Decision::NotSelected, |v| v.read_as)
    }

    /// The values read as each decision, for the page's source line.
    fn describe(&self) -> String {
        [Decision::Selected, Decision::NotSelected, Decision::Excluded]
            .iter()
            .filter_map(|read_as| {
                let v: Vec<String> = self.values.iter().filter(|v| v.read_as == *read_as).map(|v| format!("{:?}", v.value)).collect();
                (!v.is_empty()).then(|| format!("{}: {}", read_as.name(), v.join(", ")))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl BiasAuditConfig {
    /// The situation testing keys: `qualifications` names columns other than the audit's own, and
    /// the other keys come with it.
    fn validate_situation_testing(&self, c: &mut Checks<'_, '_>) {
        if self.qualifications.is_empty() {
            // A key at its default changes nothing; another value would be silently unused.
            let changed = [
                ("situation_k", self.situation_k != SITUATION_K),
                ("situation_t", self.situation_t != SITUATION_T),
                ("reference", !self.reference.is_empty()),
                ("applicant_id", self.applicant_id.is_some()),
            ];
            for (key, _) in changed.into_iter().filter(|(_, changed)| *changed) {
                c.problem(key, format!("`{key}` sets situation testing, which runs when `qualifications` names the columns that say how qualified an applicant is (e.g. [\"years_experience\", \"education\"])"));
            }
            return;
        }
        let own = [
            ("sex", &self.sex),
            ("race", &self.race),
            ("ethnicity", &self.ethnicity),
            ("column", &self.column),
            ("applicant_id", &self.applicant_id),
        ];
        for (i, q) in self.qualifications.iter().enumerate() {
            if let Some((key, _)) = own.iter().find(|(_, c)| c.as_deref() == Some(q.as_str())) {
                let span = c.item_span("qualifications", i);
                c.at(&span, format!("`qualifications` names `{q}`, the column `{key}` names: qualifications are what makes applicants comparable (experience, education, a test score), not their category, decision or name"));
            }
            if self.qualifications[..i].contains(q) {
                let span = c.item_span("qualifications", i);
                c.at(&span, format!("`qualifications` names `{q}` twice"));
            }
        }
        c.at_least("situation_k", self.situation_k, 1);
        if !(self.situation_t > 0.0 && self.situation_t <= 1.0) {
            c.problem("situation_t", format!("`situation_t` is a gap between two selection rates, in (0, 1]; found {}", self.situation_t));
        }
        for (axis, category) in &self.reference {
            let column = match axis.as_str() {
                "sex" => &self.sex,
                "race" => &self.race,
                _ => {
                    let span = c.nested_key_span("reference", axis);
                    c.at(
                        &span,
                        format!(
                            "`reference.{axis}`: situation testing compares within the `sex` and `race` tables{}",
                            hint(axis, &["sex", "race"])
                        ),
                    );
                    continue;
                }
            };
            if column.is_none() {
                let span = c.nested_key_span("reference", axis);
                c.at(&span, format!("`reference.{axis}` = {category:?}, but `{axis}` names no column"));
            }
        }
    }

    /// The column axis `axis` (`sex`, `race` or `ethnicity`) is read from.
    fn column_of(&self, axis: &str) -> &Option<String> {
        match axis {
            "sex" => &self.sex,
            "race" => &self.race,
            _ => &self.ethnicity,
        }
    }

    /// The race/ethnicity axis: `race` alone, or with `ethnicity` beside it, Hispanic or Latino
    /// whatever the race, a Not Hispanic or Latino person's race, and an unknown ethnicity
    /// unknown (a Not Hispanic or Latino person of unknown race too).
    fn race_axis(&self, column: &str, data: &Dataset, rows: &[usize]) -> Result<Axis> {
        let race = self.axis("race", column, data, rows)?;
        let Some(flag) = &self.ethnicity else { return Ok(race) };
        let ethnicity = self.axis("ethnicity", flag, data, rows)?;
        if let Some(other) = ethnicity.names.iter().find(|n| !ETHNICITY_CATEGORIES.contains(&n.as_str())) {
            return Err(StageError::cannot(
                "categories",
                format!(
                    "column `{flag}` (`ethnicity`) holds {other:?}: map its values in `categories.ethnicity` to \"{}\", \"{}\" or \"{UNKNOWN}\" (e.g. {{ Y = \"{}\", N = \"{}\" }})",
                    ETHNICITY_CATEGORIES[0], ETHNICITY_CATEGORIES[1], ETHNICITY_CATEGORIES[0], ETHNICITY_CATEGORIES[1]
                ),
            ));
        }
        let hispanic_name = ETHNICITY_CATEGORIES[0];
        let mut names = race.names.clone();
        let hispanic = names.iter().position(|n| n == hispanic_name).unwrap_or_else(|| {
            names.push(hispanic_name.to_string());
            names.len() - 1
        });
        let of_row: Vec<Option<usize>> = race
            .of_row
            .iter()
            .zip(&ethnicity.of_row)
            .map(|(r, e)| match e.map(|k| ethnicity.names[k].as_str()) {
                Some(n) if n == hispanic_name => Some(hispanic),
                Some(_) => *r,
                None => None,
            })
            .collect();
        // The rules' order when the race is mapped, else Hispanic or Latino first and the race
        // column's values in the data's order.
        let rank = |n: &String| match self.categories.contains_key("race") {
            true => RACE_CATEGORIES.iter().position(|o| o == n).unwrap_or(RACE_CATEGORIES.len()),
            false => usize::from(n != hispanic_name),
        };
        let (names, remap) = reordered(&names, rank);
        Ok(Axis {
            of_row: of_row.into_iter().map(|i| i.map(|i| remap[i])).collect(),
            names,
            values: race.values.into_iter().chain(ethnicity.values).collect(),
        })
    }

    /// The keys naming values of a decisions column (`selected`, `not_selected`, `exclude`) that
    /// the stage gives.
    fn decision_keys_given(&self) -> impl Iterator<Item = &'static str> + '_ {
        [("selected", self.selected.is_some()), ("not_selected", self.not_selected.is_some()), ("exclude", !self.exclude.is_empty())]
            .into_iter()
            .filter_map(|(key, given)| given.then_some(key))
    }

    /// The decisions and the rows audited: (dataset, row indices, outcome per row as 0/1 or a
    /// score, source description).
    fn outcomes(&self, inputs: &Inputs) -> Result<Outcomes> {
        let data = inputs.by_role.get("data").map(|_| inputs.dataset("data")).transpose()?;
        let model = inputs.by_role.get("model").map(|_| inputs.model("model")).transpose()?;
        let dataset = match (&data, &model) {
            (Some(d), None) => d.clone(),
            (None, Some(m)) => m.data.clone(),
            (Some(_), Some(_)) => {
                return Err(StageError::cannot(
                    "model",
                    "give `data` (decisions or scores read from the data) or `model` (the model's labels or scores), not both",
                ))
            }
            (None, None) => {
                return Err(StageError::cannot(
                    "data",
                    "no input: name a load stage as `data` (decisions or scores in the data) or a model stage as `model`",
                ))
            }
        };
        let rows: Vec<usize> = match self.split.split() {
            Some(s) => dataset.rows_in(s),
            None => (0..dataset.len()).collect(),
        };
        if rows.is_empty() {
            return Err(StageError::cannot("split", format!("no rows in split {:?} to audit", self.split).to_lowercase()));
        }
        if let Some(model) = model {
            if self.column.is_some() {
                return Err(StageError::cannot(
                    "column",
                    "with a `model` input the audit reads the model's labels or scores; `column` reads decisions from the data: connect the load stage as `data` instead, or leave `column` out",
                ));
            }
            let width = dataset.domain.width();
            let x: Vec<f64> = rows.iter().flat_map(|&r| dataset.x.row(r).to_vec()).collect();
            debug_assert_eq!(x.len(), rows.len() * width);
            // A model that rates (an LLM with `answers.scale`) is audited on its expected ratings,
            // in the scale's points (the median split, and so every rate, is the same either way).
            let scale = model.oracle.model().score_scale();
            let out = match (self.outcome, scale) {
                (Outcome::Selection, _) => model.oracle.predict_labels(&x)?.into_iter().map(f64::from).collect(),
                (Outcome::Score, None) => model.oracle.predict_proba(&x)?,
                (Outcome::Score, Some([low, high])) => {
                    model.oracle.predict_proba(&x)?.into_iter().map(|p| low + p * (high - low)).collect()
                }
            };
            let what = match (self.outcome, scale) {
                (Outcome::Selection, None) => "labels (P(favourable) > 0.5)".to_string(),
                (Outcome::Selection, Some([low, high])) => format!("labels (an expected rating above {})", (low + high) / 2.0),
                (Outcome::Score, None) => "scores (P(favourable))".to_string(),
                (Outcome::Score, Some([low, high])) => format!("expected ratings ({low} to {high})"),
            };
            let source = format!("the model's {what}: {}", model.oracle.model().describe());
            return Ok(Outcomes { dataset, rows, outcome: out, source, decision_values: Vec::new() });
        }
        let Some(column) = &self.column else {
            if self.outcome == Outcome::Score {
                return Err(StageError::cannot(
                    "column",
                    "outcome = \"score\" reads the scores from a column of the data: name it in `column`",
                ));
            }
            if let Some(key) = self.decision_keys_given().next() {
                return Err(StageError::cannot(
                    key,
                    format!("`{key}` applies to `column`; the label's selected value is the load stage's `favourable`"),
                ));
            }
            self.reads_label().map_or(Ok(()), |u| u.check(&dataset))?;
            if dataset.label_values[0] == format!("not {}", dataset.label_values[1]) {
                return Err(StageError::cannot(
                    "column",
                    format!(
                        "the label `{}` holds more values than {:?} and one other, and the load stage reads every one but {:?} as not selected; every decision must be counted: leave `label` out of the load stage and audit `column = {:?}` with `selected`, `not_selected` and `exclude` naming each value",
                        dataset.label_name, dataset.label_values[1], dataset.label_values[1], dataset.label_name
                    ),
                ));
            }
            let out = rows.iter().map(|&r| f64::from(dataset.y[r])).collect();
            let source = format!("the data's label `{}` (selected: {:?})", dataset.label_name, dataset.label_values[1]);
            return Ok(Outcomes { dataset, rows, outcome: out, source, decision_values: Vec::new() });
        };
        let j = feature_index(&dataset.domain, column, "column")?;
        let attr = &dataset.domain.attributes[j];
        let cells: Vec<f64> = rows.iter().map(|&r| dataset.x[[r, j]]).collect();
        let out = match self.outcome {
            Outcome::Score => {
                if matches!(attr.kind, AttributeKind::Categorical { .. }) {
                    return Err(StageError::cannot(
                        "column",
                        format!("outcome = \"score\" needs a numeric column, but `{column}` holds categories ({})", levels_of(attr)),
                    ));
                }
                cells
            }
            Outcome::Selection => {
                let texts: Vec<String> = cells.iter().map(|&v| attr.decode(v)).collect();
                let decisions = self.decisions(column, &texts)?;
                let (rows, out) = rows
                    .iter()
                    .zip(&texts)
                    .filter_map(|(&r, text)| match decisions.of(text) {
                        Decision::Selected => Some((r, 1.0)),
                        Decision::NotSelected => Some((r, 0.0)),
                        Decision::Excluded => None,
                    })
                    .unzip::<_, _, Vec<usize>, Vec<f64>>();
                if rows.is_empty() {
                    return Err(StageError::cannot(
                        "exclude",
                        format!("every row audited has a value of `{column}` listed in `exclude`: no one is left to audit"),
                    ));
                }
                let source = format!("the data's decisions in column `{column}` ({})", decisions.describe());
                return Ok(Outcomes { dataset, rows, outcome: out, source, decision_values: decisions.values });
            }
        };
        let source = format!("the data's scores in column `{column}`");
        Ok(Outcomes { dataset, rows, outcome: out, source, decision_values: Vec::new() })
    }

    /// How each value of the decisions column `column` (its rows' `texts`) is read: every value
    /// named in `selected`, `not_selected` or `exclude` (matched as written, or ignoring case),
    /// else refused with each unnamed value and its count.
    fn decisions(&self, column: &str, texts: &[String]) -> Result<Decisions> {
        let fold = |v: &str| if self.ignore_case { v.to_lowercase() } else { v.to_string() };
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for t in texts {
            *counts.entry(t.as_str()).or_default() += 1;
        }
        let named = |values: &Option<LabelValues>, default: &str| -> Vec<String> {
            match values {
                Some(v) => v.texts().iter().map(|t| fold(t)).collect(),
                None => vec![default.to_string()],
            }
        };
        let selected = named(&self.selected, "1");
        let excluded: Vec<String> = self.exclude.iter().map(|v| fold(v)).collect();
        let mut not_selected = match (&self.selected, &self.not_selected) {
            (_, Some(_)) | (None, None) => named(&self.not_selected, "0"),
            (Some(_), None) => Vec::new(),
        };
        let unnamed = |not_selected: &[String]| -> Vec<(&str, usize)> {
            counts
                .iter()
                .filter(|(v, _)| {
                    let v = fold(v);
                    !selected.contains(&v) && !not_selected.contains(&v) && !excluded.contains(&v)
                })
                .map(|(v, n)| (*v, *n))
                .collect()
        };
        let inferred = self.selected.is_some() && self.not_selected.is_none();
        if inferred {
            // `selected` alone: the one other value is the not-selected one.
            if let [(only, _)] = unnamed(&[])[..] {
                not_selected.push(fold(only));
            }
        }
        let rest = unnamed(&not_selected);
        if !rest.is_empty() {
            let listed = rest
                .iter()
                .map(|(v, n)| format!("{v:?} {} {}", crate::numbers::thousands(*n as u64), if *n == 1 { "row" } else { "rows" }))
                .collect::<Vec<_>>();
            let named =
                |key: &str, v: &[String]| format!("`{key}` = [{}]", v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", "));
            let mut read = vec![named("selected", &selected)];
            if !inferred {
                read.push(named("not_selected", &not_selected));
            }
            if !excluded.is_empty() {
                read.push(named("exclude", &excluded));
            }
            let case = if self.ignore_case { "" } else { " (matched as written: `ignore_case = true` matches \"yes\" to \"Yes\")" };
            return Err(StageError::cannot(
                if inferred { "not_selected" } else { "selected" },
                format!(
                    "column `{column}` holds values that {} does not name: {}. Every decision must be counted: name them in `selected` / `not_selected`, or leave their rows out with `exclude`{case}",
                    read.join(", "),
                    listed.join(", ")
                ),
            ));
        }
        let mut values: Vec<DecisionValue> = counts
            .iter()
            .map(|(v, n)| {
                let f = fold(v);
                let read_as = if selected.contains(&f) {
                    Decision::Selected
                } else if excluded.contains(&f) {
                    Decision::Excluded
                } else {
                    Decision::NotSelected
                };
                DecisionValue { value: v.to_string(), count: *n, read_as }
            })
            .collect();
        if !values.iter().any(|v| v.read_as == Decision::Selected) {
            let present: Vec<String> = counts.keys().map(|v| v.to_string()).collect();
            let value = self.selected.as_ref().map_or("1".to_string(), |v| v.texts().join(", "));
            return Err(StageError::NotInData { key: "selected", column: column.to_string(), value, present }.into());
        }
        values.sort_by_key(|v| v.read_as);
        Ok(Decisions { values })
    }

    /// Read axis `axis` (`sex` or `race`) from `column` over `rows`.
    fn axis(&self, axis: &'static str, column: &str, data: &Dataset, rows: &[usize]) -> Result<Axis> {
        let j = feature_index(&data.domain, column, axis)?;
        let attr = &data.domain.attributes[j];
        let mapping = self.categories.get(axis);
        // Distinct encoded values in the domain's order (the data's order).
        let mut values: Vec<f64> = rows.iter().map(|&r| data.x[[r, j]]).collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        let mut names: Vec<String> = Vec::new();
        let mut index_of_value: BTreeMap<u64, Option<usize>> = BTreeMap::new();
        let category_of = |text: &str| -> Result<Option<String>> {
            // A blank cell (kept by a load with `missing_values = []`) is an unknown category.
            if text.trim().is_empty() || self.unknown.iter().any(|u| u == text) {
                return Ok(None);
            }
            match mapping {
                None => Ok(Some(text.to_string())),
                Some(m) => match m.get(text) {
                    Some(c) if c == UNKNOWN => Ok(None),
                    Some(c) => Ok(Some(c.clone())),
                    None => Err(StageError::cannot(
                        "categories",
                        format!(
                            "column `{column}` holds {text:?}, which `categories.{axis}` does not map (it maps {}) and `unknown` does not list; map it to one of the rules' categories or to \"{UNKNOWN}\"",
                            m.keys().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")
                        ),
                    )),
                },
            }
        };
        for v in &values {
            let category = category_of(&attr.decode(*v))?;
            let index = category.map(|c| match names.iter().position(|n| *n == c) {
                Some(i) => i,
                None => {
                    names.push(c);
                    names.len() - 1
                }
            });
            index_of_value.insert(v.to_bits(), index);
        }
        // Mapped: the rules' order (a category they do not name first).
        if let Some(order) = mapping.and(rules_categories(axis)) {
            let remap;
            (names, remap) = reordered(&names, |n| order.iter().position(|o| *o == n.as_str()).map_or(0, |p| p + 1));
            for v in index_of_value.values_mut() {
                *v = v.map(|i| remap[i]);
            }
        }
        let of_row: Vec<Option<usize>> = rows.iter().map(|&r| index_of_value[&data.x[[r, j]].to_bits()]).collect();
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for &r in rows {
            *counts.entry(data.x[[r, j]].to_bits()).or_default() += 1;
        }
        let mut read: Vec<ValueCategory> = values
            .iter()
            .map(|v| ValueCategory {
                axis: axis.to_string(),
                column: column.to_string(),
                value: attr.decode(*v),
                count: counts[&v.to_bits()],
                category: index_of_value[&v.to_bits()].map_or_else(|| UNKNOWN.to_string(), |i| names[i].clone()),
            })
            .collect();
        // In the order of the categories, unknown last; the data's values in order within each.
        read.sort_by_key(|v| (names.iter().position(|n| *n == v.category).unwrap_or(names.len()), v.value.clone()));
        Ok(Axis { of_row, names, values: read })
    }
}

/// `names` sorted by `rank` (stably: equal ranks keep their order), with each old index's new
/// index.
fn reordered(names: &[String], rank: impl Fn(&String) -> usize) -> (Vec<String>, Vec<usize>) {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| rank(&names[i]));
    let mut remap = vec![0; names.len()];
    for (to, &from) in order.iter().enumerate() {
        remap[from] = to;
    }
    (order.iter().map(|&i| names[i].clone()).collect(), remap)
}

/// The level names of a categorical attribute, for messages.
fn levels_of(attr: &crate::domain::Attribute) -> String {
    match &attr.kind {
        AttributeKind::Categorical { levels } => levels.join(", "),
        _ => String::new(),
    }
}

/// The index of feature `column` in `domain`, or a refusal at `key` naming the features.
fn feature_index(domain: &Domain, column: &str, key: &'static str) -> Result<usize> {
    domain.index_of(column).ok_or_else(|| {
        let names: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
        StageError::cannot(
            key,
            format!(
                "`{key}` names column `{column}`, which is not a feature column{}; features: {}",
                hint(column, &names),
                names.join(", ")
            ),
        )
    })
}

/// The median of `v` (the mean of the two middle values of an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// One table from each row's category (`None`: unknown) and selection.
fn table(
    name: &str,
    of_row: &[Option<usize>],
    names: &[(Option<String>, Option<String>, String)],
    selected: &[bool],
    total: usize,
    exclude_below: Option<f64>,
    alpha: f64,
) -> AuditTable {
    let mut count = vec![0usize; names.len()];
    let mut chosen = vec![0usize; names.len()];
    let mut unknown = UnknownCount { count: 0, selected: 0 };
    for (c, &s) in of_row.iter().zip(selected) {
        match c {
            Some(i) => {
                count[*i] += 1;
                chosen[*i] += usize::from(s);
            }
            None => {
                unknown.count += 1;
                unknown.selected += usize::from(s);
            }
        }
    }
    let present: Vec<usize> = (0..names.len()).filter(|&i| count[i] > 0).collect();
    let share = |i: usize| count[i] as f64 / total as f64;
    let excluded = |i: usize| exclude_below.is_some_and(|t| share(i) < t);
    let rate = |i: usize| chosen[i] as f64 / count[i] as f64;
    // The highest rate among the categories in the ratios (first in order on a tie).
    let highest = present.iter().copied().filter(|&i| !excluded(i)).fold(None, |best: Option<usize>, i| match best {
        Some(b) if rate(b) >= rate(i) => Some(b),
        _ => Some(i),
    });
    let top = highest.map_or(f64::NAN, rate);
    let mut rows: Vec<AuditRow> = present
        .iter()
        .map(|&i| {
            let ratio = (!excluded(i) && top > 0.0).then(|| rate(i) / top);
            AuditRow {
                category: names[i].2.clone(),
                sex: names[i].0.clone(),
                race: names[i].1.clone(),
                count: count[i],
                selected: chosen[i],
                rate: rate(i),
                share: share(i),
                excluded: excluded(i),
                impact_ratio: ratio,
                ci95: wilson(chosen[i], count[i], 1.96),
                p_value: None,
                p_adjusted: None,
                significant: false,
                below_four_fifths: ratio.is_some_and(|r| r < FOUR_FIFTHS),
                highest: Some(i) == highest,
            }
        })
        .collect();
    if let Some(h) = highest {
        let tested: Vec<usize> = (0..rows.len()).filter(|&k| !rows[k].excluded && !rows[k].highest).collect();
        let p: Vec<f64> = tested
            .iter()
            .map(|&k| {
                let r = &rows[k];
                fisher_exact(r.selected, r.count - r.selected, chosen[h], count[h] - chosen[h])
            })
            .collect();
        for ((&k, &p), adj) in tested.iter().zip(&p).zip(holm(&p)) {
            rows[k].p_value = Some(p);
            rows[k].p_adjusted = Some(adj);
            rows[k].significant = adj <= alpha;
        }
    }
    AuditTable { table: name.to_string(), rows, unknown }
}

/// The lowest impact ratio of `tables`.
fn lowest<'a>(tables: impl Iterator<Item = &'a AuditTable>) -> Option<f64> {
    tables.flat_map(|t| t.rows.iter().filter_map(|r| r.impact_ratio)).reduce(f64::min)
}

impl BiasAuditConfig {
    /// The audit of `outcome` (0/1 or scores) per axis.
    fn audit(&self, sex: Option<&Axis>, race: Option<&Axis>, outcome: &[f64], source: String) -> BiasAuditFigures {
        let n = outcome.len();
        let (median_score, selected) = self.selected(outcome);
        let mut tables = Vec::new();
        if let Some(a) = sex {
            let names: Vec<_> = a.names.iter().map(|s| (Some(s.clone()), None, s.clone())).collect();
            tables.push(table("sex", &a.of_row, &names, &selected, n, self.exclude_below, self.alpha));
        }
        if let Some(a) = race {
            let names: Vec<_> = a.names.iter().map(|r| (None, Some(r.clone()), r.clone())).collect();
            tables.push(table("race", &a.of_row, &names, &selected, n, self.exclude_below, self.alpha));
        }
        if let (Some(s), Some(r)) = (sex, race) {
            // The rules' order when both are mapped: Hispanic or Latino by sex, then each sex by
            // the other races; else sex by race in the data's order.
            let both_mapped = self.categories.contains_key("sex") && (self.categories.contains_key("race") || self.ethnicity.is_some());
            let hispanic = r.names.iter().position(|n| n == RACE_CATEGORIES[0]).filter(|_| both_mapped);
            let mut order: Vec<(usize, usize)> = Vec::new();
            if let Some(h) = hispanic {
                order.extend((0..s.names.len()).map(|i| (i, h)));
            }
            for i in 0..s.names.len() {
                order.extend((0..r.names.len()).filter(|&k| Some(k) != hispanic).map(|k| (i, k)));
            }
            let names: Vec<_> = order
                .iter()
                .map(|&(i, k)| (Some(s.names[i].clone()), Some(r.names[k].clone()), format!("{} × {}", s.names[i], r.names[k])))
                .collect();
            let position: BTreeMap<(usize, usize), usize> = order.iter().enumerate().map(|(p, &ik)| (ik, p)).collect();
            let of_row: Vec<Option<usize>> = s.of_row.iter().zip(&r.of_row).map(|(a, b)| Some(position[&((*a)?, (*b)?)])).collect();
            tables.push(table("intersection", &of_row, &names, &selected, n, self.exclude_below, self.alpha));
        }
        let by = |name: &str| lowest(tables.iter().filter(|t| t.table == name));
        BiasAuditFigures {
            outcome: match self.outcome {
                Outcome::Selection => "selection",
                Outcome::Score => "score",
            }
            .into(),
            source,
            rows: n,
            rate: selected.iter().filter(|s| **s).count() as f64 / n as f64,
            median_score,
            min_impact_ratio: lowest(tables.iter()),
            min_impact_ratio_sex: by("sex"),
            min_impact_ratio_race: by("race"),
            min_impact_ratio_intersection: by("intersection"),
            below_four_fifths: tables.iter().flat_map(|t| &t.rows).filter(|r| r.below_four_fifths).count(),
            significant: tables.iter().flat_map(|t| &t.rows).filter(|r| r.significant).count(),
            alpha: self.alpha,
            exclude_below: self.exclude_below,
            exclusion_justification: self.exclusion_justification.clone(),
            mapped: self.categories.keys().cloned().collect(),
            tables,
            page: self.page.clone(),
            sex_column: self.sex.clone(),
            race_column: self.race.clone(),
            ethnicity_column: self.ethnicity.clone(),
            left_out_at_load: 0,
            decision_values: Vec::new(),
            excluded_decisions: 0,
            category_values: sex.into_iter().chain(race).flat_map(|a| a.values.iter().cloned()).collect(),
            qualifications: Vec::new(),
            situation_testing: Vec::new(),
        }
    }

    /// The median score (scores only) and who counts as selected: a decision of 1, or a score
    /// above the median.
    fn selected(&self, outcome: &[f64]) -> (Option<f64>, Vec<bool>) {
        let median_score = (self.outcome == Outcome::Score).then(|| median(outcome));
        let selected = match median_score {
            Some(m) => outcome.iter().map(|&s| s > m).collect(),
            None => outcome.iter().map(|&s| s == 1.0).collect(),
        };
        (median_score, selected)
    }

    /// Situation testing (`qualifications`) over the audited `rows` of `data`: each category of
    /// each table in `axes` against the table's reference category (`reference`, else the table's
    /// most selected); the figures and the table of every applicant listed.
    fn situation_testing(
        &self,
        data: &Dataset,
        rows: &[usize],
        outcome: &[f64],
        tables: &[AuditTable],
        axes: [(&'static str, Option<&Axis>); 2],
    ) -> Result<(Vec<SituationTesting>, Table)> {
        let (_, selected) = self.selected(outcome);
        let mut columns = Vec::new();
        for q in &self.qualifications {
            let j = feature_index(&data.domain, q, "qualifications")?;
            let values: Vec<f64> = rows.iter().map(|&r| data.x[[r, j]]).collect();
            columns.push((j, matches!(data.domain.attributes[j].kind, AttributeKind::Categorical { .. }), values));
        }
        let qualifications: Vec<Qualification<'_>> = columns
            .iter()
            .map(|(_, categorical, v)| if *categorical { Qualification::Category(v) } else { Qualification::Number(v) })
            .collect();
        let id = self.applicant_id.as_ref().map(|c| feature_index(&data.domain, c, "applicant_id")).transpose()?;
        let text = |j: usize, r: usize| data.domain.attributes[j].decode(data.x[[r, j]]);
        let mut figures = Vec::new();
        // The table's rows: (table, category, reference, audited position, result).
        let mut listed: Vec<(&str, String, String, Flagged)> = Vec::new();
        for (table, axis) in axes {
            let Some(axis) = axis else { continue };
            let reference = match self.reference.get(table) {
                Some(name) => axis.names.iter().position(|n| n == name).ok_or_else(|| {
                    StageError::cannot(
                        "reference",
                        format!(
                            "`reference.{table}` = {name:?} is not a category of the {table} table{}; its categories: {}",
                            hint(name, &axis.names.iter().map(String::as_str).collect::<Vec<_>>()),
                            axis.names.join(", ")
                        ),
                    )
                })?,
                None => {
                    let highest = tables.iter().find(|t| t.table == table).and_then(|t| t.rows.iter().find(|r| r.highest));
                    let Some(highest) = highest else { continue };
                    axis.names
                        .iter()
                        .position(|n| *n == highest.category)
                        .ok_or_else(|| crate::error::Error::Internal(format!("{table}: no category {:?}", highest.category)))?
                }
            };
            for (category, name) in axis.names.iter().enumerate().filter(|(c, _)| *c != reference) {
                let r = situation_test(&qualifications, &axis.of_row, &selected, category, reference, self.situation_k, self.situation_t);
                let mut flagged = r.flagged.clone();
                flagged.sort_by(|a, b| b.diff.total_cmp(&a.diff).then(a.applicant.cmp(&b.applicant)));
                let applicants = flagged
                    .iter()
                    .take(SITUATION_LISTED_IN_SUMMARY)
                    .map(|f| SituationApplicant {
                        row: rows[f.applicant] + 1,
                        id: id.map(|j| text(j, rows[f.applicant])),
                        own_rate: f.own_rate,
                        reference_rate: f.reference_rate,
                        diff: f.diff,
                    })
                    .collect();
                figures.push(SituationTesting {
                    table: table.to_string(),
                    category: name.clone(),
                    reference: axis.names[reference].clone(),
                    k: r.k_used,
                    t: self.situation_t,
                    count: r.count,
                    tested: r.tested,
                    listed: r.flagged.len(),
                    share: r.share.is_finite().then_some(r.share),
                    ci95: r.share.is_finite().then_some(r.ci95),
                    mean_diff: r.mean_diff.is_finite().then_some(r.mean_diff),
                    applicants,
                });
                listed.extend(flagged.into_iter().map(|f| (table, name.clone(), axis.names[reference].clone(), f)));
            }
        }
        let mut builder = TableBuilder::new()
            .str("table", listed.iter().map(|l| l.0.to_string()).collect())
            .str("category", listed.iter().map(|l| l.1.clone()).collect())
            .str("reference", listed.iter().map(|l| l.2.clone()).collect())
            .i64("row", listed.iter().map(|l| rows[l.3.applicant] as i64 + 1).collect());
        if let (Some(j), Some(name)) = (id, &self.applicant_id) {
            builder = builder.str(name, listed.iter().map(|l| text(j, rows[l.3.applicant])).collect());
        }
        for ((j, _, _), name) in columns.iter().zip(&self.qualifications) {
            builder = builder.str(name, listed.iter().map(|l| text(*j, rows[l.3.applicant])).collect());
        }
        let table = builder
            .f64("own_rate", listed.iter().map(|l| l.3.own_rate).collect())
            .f64("reference_rate", listed.iter().map(|l| l.3.reference_rate).collect())
            .f64("diff", listed.iter().map(|l| l.3.diff).collect())
            .build("situation")?;
        Ok((figures, table))
    }
}

/// The stage's table: every category of every table, and each table's unknown count.
fn audit_table(f: &BiasAuditFigures) -> Result<Table> {
    let mut rows: Vec<(&str, AuditRow, bool)> = Vec::new();
    for t in &f.tables {
        for r in &t.rows {
            rows.push((t.table.as_str(), r.clone(), false));
        }
        let u = &t.unknown;
        let rate = if u.count > 0 { u.selected as f64 / u.count as f64 } else { f64::NAN };
        rows.push((
            t.table.as_str(),
            AuditRow {
                category: UNKNOWN.into(),
                sex: None,
                race: None,
                count: u.count,
                selected: u.selected,
                rate,
                share: u.count as f64 / f.rows as f64,
                excluded: true,
                impact_ratio: None,
                ci95: if u.count > 0 { wilson(u.selected, u.count, 1.96) } else { [f64::NAN; 2] },
                p_value: None,
                p_adjusted: None,
                significant: false,
                below_four_fifths: false,
                highest: false,
            },
            true,
        ));
    }
    let text = |v: Option<&String>| v.cloned().unwrap_or_default();
    let yes = |b: bool| if b { "yes" } else { "" }.to_string();
    let num = |v: Option<f64>| v.unwrap_or(f64::NAN);
    Ok(TableBuilder::new()
        .str("table", rows.iter().map(|r| r.0.to_string()).collect())
        .str("category", rows.iter().map(|r| r.1.category.clone()).collect())
        .str("sex", rows.iter().map(|r| text(r.1.sex.as_ref())).collect())
        .str("race", rows.iter().map(|r| text(r.1.race.as_ref())).collect())
        .str("unknown", rows.iter().map(|r| yes(r.2)).collect())
        .i64("count", rows.iter().map(|r| r.1.count as i64).collect())
        .i64("selected", rows.iter().map(|r| r.1.selected as i64).collect())
        .f64("rate", rows.iter().map(|r| r.1.rate).collect())
        .f64("share", rows.iter().map(|r| r.1.share).collect())
        .str("excluded", rows.iter().map(|r| yes(r.1.excluded && !r.2)).collect())
        .f64("impact_ratio", rows.iter().map(|r| num(r.1.impact_ratio)).collect())
        .str("highest", rows.iter().map(|r| yes(r.1.highest)).collect())
        .f64("ci95_low", rows.iter().map(|r| r.1.ci95[0]).collect())
        .f64("ci95_high", rows.iter().map(|r| r.1.ci95[1]).collect())
        .f64("p_value", rows.iter().map(|r| num(r.1.p_value)).collect())
        .f64("p_adjusted", rows.iter().map(|r| num(r.1.p_adjusted)).collect())
        .str("significant", rows.iter().map(|r| yes(r.1.significant)).collect())
        .str("below_four_fifths", rows.iter().map(|r| yes(r.1.below_four_fifths)).collect())
        .build("")?)
}

/// A bias audit's sex and race tables measure those attributes' selection rates: the worst impact
/// ratio of each grades its verdict. Decisions recorded in the data audit no model: they stand for
/// themselves, under the stage's own name.
impl StageFigures for BiasAuditFigures {
    const HEADLINE: &'static [&'static str] = &["rows", "rate"];

    fn impacts(&self, at: &InRun<'_>, t: &Thresholds) -> Vec<Impact> {
        let model = if at.entry.inputs.contains_key("model") { at.audited_model().map(|m| m.name) } else { Some(at.name) };
        let Some(model) = model else { return Vec::new() };
        let mut out = Vec::new();
        for (table, column) in [("sex", &self.sex_column), ("race", &self.race_column)] {
            let (Some(column), Some(table)) = (column, self.tables.iter().find(|x| x.table == table)) else { continue };
            let scored = self.outcome == "score";
            out.push(Impact { model: model.to_string(), attribute: column.clone(), measure: bias_audit_impact(t, at.name, table, scored) });
        }
        out
    }

    fn impact_next_step(m: &ImpactMeasure, attribute: &str) -> Option<String> {
        let unequal = if m.scored {
            format!("scoring scores {attribute} categories above the median unequally")
        } else {
            format!("threshold selects {attribute} categories unequally")
        };
        Some(format!(
            "Read the audit page `{}.html` (what the law asks to publish: every category's rate and impact ratio) and, beside it, whether the gap is significant; then find what in the tool's inputs or {unequal}, change it, and audit again.",
            m.stage
        ))
    }
}

/// The impact ratios of one table (`sex`, `race`) of a `bias_audit` stage: its worst category
/// among those in the ratios (the lowest ratio, the larger category on a tie) against the most
/// selected one, graded as [`grade_group`] grades a group: below the failing line (the four-fifths
/// line unless `[pipeline.verdict]` sets `impact_fail`) is severe, held to notable when Fisher's
/// test after Holm's correction finds the difference not significant.
pub fn bias_audit_impact(t: &Thresholds, stage: &str, table: &AuditTable, scored: bool) -> Option<ImpactMeasure> {
    let reference = table.rows.iter().find(|r| r.highest && !r.excluded)?;
    let worst = table
        .rows
        .iter()
        .filter(|r| !r.excluded && !r.highest)
        .filter_map(|r| Some((r, r.impact_ratio.filter(|v| v.is_finite())?)))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(b.0.count.cmp(&a.0.count)))?;
    let fail_below = t.impact_fail.unwrap_or(FOUR_FIFTHS);
    let significant = worst.0.p_adjusted.filter(|p| p.is_finite()).map(|_| worst.0.significant);
    let severity = t.grade_impact_tested(worst.1, fail_below, significant);
    Some(ImpactMeasure {
        stage: stage.to_string(),
        measure: KIND.name.to_string(),
        group: worst.0.category.clone(),
        n: worst.0.count,
        selection_rate: worst.0.rate,
        reference: reference.category.clone(),
        reference_rate: reference.rate,
        impact_ratio: worst.1,
        fail_below,
        significant,
        severity,
        scored,
    })
}

impl Stage for BiasAuditConfig {
    /// Scores of a model are its probabilities.
    fn score_needs(&self) -> Vec<ScoreNeed> {
        match self.outcome {
            Outcome::Score => vec![ScoreNeed {
                key: "outcome",
                what: "outcome = \"score\" (the model's P(favourable) as its score)".into(),
                instead: "audit its labels: outcome = \"selection\"".into(),
            }],
            Outcome::Selection => Vec::new(),
        }
    }

    fn reads_label(&self) -> Option<LabelUse> {
        (self.column.is_none() && self.outcome == Outcome::Selection).then(|| LabelUse {
            key: Some("column"),
            why: "with no `column` the decisions audited are the data's label: name the column of decisions in `column` (with `selected`, and `not_selected` or `exclude`)".into(),
        })
    }

    fn check_features(&self, features: &[String], label: Option<&str>) -> Vec<ColumnProblem> {
        let names: Vec<&str> = features.iter().map(String::as_str).collect();
        let qualifications = self.qualifications.iter().map(|q| ("qualifications", Some(q)));
        [("sex", self.sex.as_ref()), ("race", self.race.as_ref()), ("ethnicity", self.ethnicity.as_ref()), ("column", self.column.as_ref())]
            .into_iter()
            .chain(qualifications)
            .chain([("applicant_id", self.applicant_id.as_ref())])
            .filter_map(|(key, column)| {
                let column = column?;
                if features.contains(column) {
                    return None;
                }
                if key == "column" && Some(column.as_str()) == label {
                    let message = match self.outcome {
                        Outcome::Selection => format!("`column` names `{column}`, the load stage's label: leave `column` out (the label's favourable value is then the selected one), or leave `label` out of the load stage and name the values here with `selected` / `not_selected`"),
                        Outcome::Score => format!("`column` names `{column}`, the load stage's label, which is read as two classes, not scores: leave `label` out of the load stage (or name another label), so that `{column}` is read as numbers"),
                    };
                    return Some(ColumnProblem { key, nested: None, message });
                }
                Some(ColumnProblem {
                    key,
                    nested: None,
                    message: format!(
                        "`{key}` names column `{column}`, which is not a feature column of the data{}; features: {} (the label and dropped columns are not features)",
                        hint(column, &names),
                        features.join(", ")
                    ),
                })
            })
            .collect()
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let before = inputs.by_role.get("model").map(|_| inputs.model("model")).transpose()?.map(|m| m.oracle.rows());
        let Outcomes { dataset: data, rows, outcome, source, decision_values } = self.outcomes(inputs)?;
        if data.dropped_rows > 0 {
            let keep = if inputs.by_role.contains_key("model") {
                "a missing value in another feature is a row the model cannot score"
            } else {
                "decisions recorded in the data need no other feature, so no one need be dropped"
            };
            ctx.warn(format!(
                "the load stage dropped {} rows with a missing value: those people are in no table, not even as unknown (the page says how many). A missing sex or race belongs to the unknown category: load the data with `missing_values = []` (a blank sex or race is then unknown here) or write it as a value listed in `unknown`; {keep}",
                data.dropped_rows
            ));
        }
        if let Some(at) = outcome.iter().position(|v| !v.is_finite()) {
            let key = if inputs.by_role.contains_key("model") { "model" } else { "column" };
            return Err(StageError::cannot(
                key,
                format!("{}: row {} of the rows audited has the score {}, not a finite number", source, rows[at] + 1, outcome[at]),
            ));
        }
        let sex = self.sex.as_ref().map(|c| self.axis("sex", c, &data, &rows)).transpose()?;
        let race = self.race.as_ref().map(|c| self.race_axis(c, &data, &rows)).transpose()?;
        let mut figures = self.audit(sex.as_ref(), race.as_ref(), &outcome, source);
        figures.left_out_at_load = data.dropped_rows;
        figures.excluded_decisions = decision_values.iter().filter(|v| v.read_as == Decision::Excluded).map(|v| v.count).sum();
        figures.decision_values = decision_values;
        let mut tables = vec![audit_table(&figures)?];
        if !self.qualifications.is_empty() {
            let (situation, table) =
                self.situation_testing(&data, &rows, &outcome, &figures.tables, [("sex", sex.as_ref()), ("race", race.as_ref())])?;
            figures.qualifications = self.qualifications.clone();
            figures.situation_testing = situation;
            tables.push(table);
        }
        let model_queries = match before {
            Some(b) => inputs.model("model")?.oracle.rows() - b,
            None => 0,
        };
        let artifact_rows = figures
            .tables
            .iter()
            .flat_map(|t| {
                t.rows.iter().map(|r| GroupMetricRow {
                    attributes: t.table.clone(),
                    group: r.category.clone(),
                    n: r.count,
                    selected: r.selected,
                    rate: r.rate,
                    ci95: r.ci95,
                    impact_ratio: r.impact_ratio.unwrap_or(f64::NAN),
                })
            })
            .collect();
        Ok(StageOutput {
            artifact: Artifact::GroupMetrics(Arc::new(GroupMetricsArtifact { rows: artifact_rows })),
            figures: Arc::new(figures),
            tables,
            model_queries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn excluded_categories_are_listed_but_neither_in_the_ratios_nor_the_highest() {
        // Category 2 selects everyone but is 1 of 101 people (under 2%).
        let mut of_row = vec![Some(0); 50];
        of_row.extend(vec![Some(1); 50]);
        of_row.push(Some(2));
        let mut selected = vec![false; 101];
        for s in selected.iter_mut().take(25) {
            *s = true; // category 0: 25 of 50
        }
        for s in selected.iter_mut().skip(50).take(10) {
            *s = true; // category 1: 10 of 50
        }
        selected[100] = true;
        let names: Vec<_> = ["a", "b", "c"].iter().map(|n| (None, None, n.to_string())).collect();
        let t = table("race", &of_row, &names, &selected, 101, Some(0.02), 0.05);
        assert_eq!(t.rows.len(), 3);
        assert!(t.rows[0].highest && t.rows[2].excluded && t.rows[2].impact_ratio.is_none());
        assert_eq!(t.rows[1].impact_ratio, Some(0.2 / 0.5));
        assert!(t.rows[1].p_value.is_some() && t.rows[2].p_value.is_none());
        // Without the exclusion the small category is the highest.
        let t = table("race", &of_row, &names, &selected, 101, None, 0.05);
        assert!(t.rows[2].highest);
        assert_eq!(t.rows[0].impact_ratio, Some(0.5));
    }
}
