//! `load`: read a CSV or Parquet file (or take a Polars `DataFrame` already in memory) into a
//! dataset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use polars::prelude::DataFrame;
use serde::{Deserialize, Serialize};

use crate::csv_check;
use crate::data::{self, ColumnOverride, LoadSpec, MissingPolicy, Split, SplitSpec};
use crate::error::{DataError, Result, StageError};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::{KeyType, StageKeys};
use crate::stage::kind::{FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};
use crate::suggest::hint;

/// The `load` stage kind.
pub const KIND: StageKind = StageKind {
    name: "load",
    doc: "Read a CSV or Parquet file into a dataset: domain (integer, continuous, categorical attributes with bounds), encoded features, binary label, train/test split.",
    inputs: &[],
    output: ArtifactKind::Dataset,
    keys: LoadConfig::keys,
    tag: None,
    example: "[stages.data]\nkind = \"load\"\npath = \"data/census.csv\"\ncodes = \"data/census.codes.toml\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"",
    configure: configure::<LoadConfig>,
    fields: fields_of::<LoadConfig>,
    read: read_debug::<LoadConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc::of::<LoadFigures>(),
};

pub use super::label_value::LabelValue;

/// `missing = "reject" | "drop"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum Missing {
    /// Stop at the first missing value.
    #[default]
    Reject,
    /// Drop rows with a missing value.
    Drop,
}

/// `columns.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnKind {
    /// Whole numbers.
    Integer,
    /// Real numbers.
    Continuous,
    /// Levels.
    Categorical,
}

/// One column's overrides: `columns.NAME = { kind, min, max, step, levels }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnConfig {
    /// The attribute kind.
    pub kind: Option<ColumnKind>,
    /// Lower bound.
    pub min: Option<f64>,
    /// Upper bound.
    pub max: Option<f64>,
    /// Grid step (positive).
    pub step: Option<f64>,
    /// Category levels in encoding order.
    pub levels: Option<Vec<LabelValue>>,
}

/// The `load` stage's config.
#[derive(Debug, Clone, Default, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct LoadConfig {
    /// CSV or Parquet file, relative to the pipeline file.
    #[key(default = "required")]
    pub path: Option<PathBuf>,
    /// Label column. Leave it out for a file with no outcome to train or score against (a
    /// vendor's decision log audited by `bias_audit` over its own columns): no stage may then read
    /// a label (`train`, `load_model`, a `bias_audit` without `column`).
    #[serde(default)]
    pub label: Option<String>,
    /// The favourable label value as written in the file.
    #[key(default = "1 for 0/1 labels")]
    pub favourable: Option<LabelValue>,
    /// Protected attribute columns (one or several).
    #[serde(default)]
    #[key(default = "required")]
    pub protected: Vec<String>,
    /// Columns to ignore (ids, row numbers).
    #[serde(default)]
    pub drop: Vec<String>,
    /// Feature columns in model-input order.
    #[key(default = "all other columns")]
    pub features: Option<Vec<String>>,
    /// Column holding train / val / test per row.
    pub split_column: Option<String>,
    /// Share of rows held out for test when there is no split column (seeded shuffle).
    #[serde(default = "default_test_fraction")]
    pub test_fraction: f64,
    /// Stop at a missing value, or drop rows that have one.
    #[serde(default)]
    pub missing: Missing,
    /// Cell texts that mean missing, as written: without "" an empty CSV field is a value (a blank
    /// sex or race is then an unknown category to bias_audit)
    #[key(default = "[\"\", \"?\", \"NA\"]")]
    pub missing_values: Option<Vec<String>>,
    /// CSV field separator (one character, or `\t`).
    #[key(default = "\",\"")]
    pub separator: Option<String>,
    /// Per-column overrides: columns.NAME = { kind, min, max, step, levels }.
    #[serde(default)]
    #[key(ty = "table")]
    pub columns: BTreeMap<String, ColumnConfig>,
    /// TOML file giving each category name its integer code, one ["column"] table of "name" =
    /// code lines (codes without gaps, from any start): data written with names encoded as a
    /// model was trained (data/census.codes.toml: the MAFT/EIDIG papers' encoding); the label's
    /// codes name the model's favourable class.
    pub codes: Option<PathBuf>,
    /// Warn of a column whose association with a protected attribute is at least this (Cramér's
    /// V for two categorical columns, the correlation ratio η for a categorical and a numeric
    /// one, |Pearson r| for two numeric ones): a counterfactual changing the attribute alone
    /// leaves it implausible; 1.0 warns only of a column the attribute determines.
    #[key(ty = "float in [0, 1]", default = "none: 0.5")]
    pub proxy_threshold: Option<f64>,
    /// Columns that change with a protected attribute whenever a counterpart is made, so that no
    /// counterpart is someone who could not exist: linked.COLUMN.ATTRIBUTE = { "column value" =
    /// "attribute value" } says which value of the (categorical) column goes with which value of
    /// the protected attribute, e.g. linked.relationship.sex = { Husband = "Male", Wife =
    /// "Female" }: a counterpart whose sex is set to Female has its Husband made Wife (values not
    /// listed are kept); honoured by check, estimate, verify and every search.
    #[serde(default)]
    #[key(ty = "table")]
    pub linked: BTreeMap<String, BTreeMap<String, BTreeMap<String, LabelValue>>>,
    /// A table already in memory, read instead of `path` (library use; not in TOML).
    #[serde(skip)]
    pub frame: Option<DataFrame>,
    /// The file's columns as validation read them from its header (kept for
    /// [`Stage::features_before_run`]).
    #[serde(skip)]
    header: std::sync::OnceLock<Vec<String>>,
}

/// Distinct values of the label or a protected column that `validate` collects at most; a column
/// with more is left to the run.
const MAX_DISTINCT: usize = 1000;

fn default_test_fraction() -> f64 {
    0.2
}

/// The `proxy_threshold` when not given: strong by the usual reading of Cramér's V; on UCI Adult it
/// flags `relationship` for `sex` (V 0.65) and nothing for `race` (its strongest, `native-country`,
/// 0.41).
pub const PROXY_THRESHOLD: f64 = 0.5;

impl LoadConfig {
    /// A config reading `frame` (columns as in a file), with label column `label` and protected
    /// attributes `protected`; every other setting at its default.
    pub fn from_frame(frame: DataFrame, label: &str, protected: &[&str]) -> Self {
        LoadConfig {
            label: Some(label.to_string()),
            protected: protected.iter().map(|s| s.to_string()).collect(),
            test_fraction: default_test_fraction(),
            frame: Some(frame),
            ..LoadConfig::default()
        }
    }

    fn separator_byte(&self) -> Option<u8> {
        match self.separator.as_deref() {
            None => Some(b','),
            Some("\\t") => Some(b'\t'),
            Some(s) if s.len() == 1 => Some(s.as_bytes()[0]),
            Some(_) => None,
        }
    }

    /// The read spec, `path` resolved already.
    fn spec(&self, path: PathBuf, seed: u64) -> LoadSpec {
        let mut spec = LoadSpec::new(path, String::new());
        spec.label = self.label.clone();
        spec.favourable = self.favourable.as_ref().map(LabelValue::text);
        spec.protected = self.protected.clone();
        spec.drop = self.drop.clone();
        spec.features = self.features.clone();
        spec.split = match &self.split_column {
            Some(c) => SplitSpec::Column(c.clone()),
            None => SplitSpec::Fraction { test: self.test_fraction, seed },
        };
        spec.missing = match self.missing {
            Missing::Drop => MissingPolicy::Drop,
            Missing::Reject => MissingPolicy::Reject,
        };
        if let Some(m) = &self.missing_values {
            spec.missing_markers = m.clone();
        }
        spec.separator = self.separator_byte().unwrap_or(b',');
        spec.columns = self
            .columns
            .iter()
            .map(|(name, c)| {
                let over = ColumnOverride {
                    kind: c.kind.map(|k| {
                        match k {
                            ColumnKind::Integer => "integer",
                            ColumnKind::Continuous => "continuous",
                            ColumnKind::Categorical => "categorical",
                        }
                        .to_string()
                    }),
                    min: c.min,
                    max: c.max,
                    step: c.step,
                    levels: c.levels.as_ref().map(|l| l.iter().map(LabelValue::text).collect()),
                };
                (name.clone(), over)
            })
            .collect();
        spec
    }

    /// What one pass over the file's label and protected columns says against the keys, before
    /// anything runs: the label's values against `favourable` (the run's own rule, located at
    /// `favourable`, or at the stage when it is not written) and a protected column that takes a
    /// single value (at its item of `protected`). Only what the rows a run drops for a missing
    /// value cannot change is refused here; the run checks the rest.
    fn check_values(&self, checks: &mut Checks<'_, '_>, path: &Path) {
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet")) {
            return;
        }
        let spec = self.spec(path.to_path_buf(), 0);
        let mut columns: Vec<String> = self.label.iter().cloned().collect();
        columns.extend(self.protected.iter().cloned());
        let Ok(values) = csv_check::distinct_cells(path, spec.separator, &columns, &spec.missing_markers, MAX_DISTINCT) else {
            return;
        };
        let protected = match &self.label {
            Some(label) => {
                let Some((cells, protected)) = values.split_first() else { return };
                self.check_label(checks, path, label, cells);
                protected
            }
            None => &values[..],
        };
        for (i, (name, cells)) in self.protected.iter().zip(protected).enumerate() {
            // Codes or an override may give the column levels the file does not hold.
            if cells.len() == 1 && self.codes.is_none() && !self.columns.contains_key(name) {
                let span = checks.item_span("protected", i);
                let message = "is protected but takes a single value; a protected attribute needs at least two".to_string();
                checks.at(&span, DataError::Column { path: path.to_path_buf(), column: name.clone(), message });
            }
        }
    }

    /// The label's distinct `cells` against `favourable`, by the rule the run applies
    /// ([`data::encode_label`]), when the rows a run drops cannot change the verdict.
    fn check_label(&self, checks: &mut Checks<'_, '_>, path: &Path, label: &str, cells: &std::collections::BTreeSet<String>) {
        if cells.is_empty() || cells.len() >= MAX_DISTINCT {
            return;
        }
        let texts: Vec<&str> = cells.iter().map(String::as_str).collect();
        let numbers: Option<Vec<f64>> = texts.iter().map(|t| t.parse::<f64>().ok()).collect();
        let zero_one = numbers.as_ref().is_some_and(|v| v.iter().all(|&x| x == 0.0 || x == 1.0));
        let favourable = self.favourable.as_ref().map(LabelValue::text);
        if numbers.is_some() && !zero_one && favourable.is_some() {
            // Whether the favourable number occurs depends on how the reader writes numbers
            // ("2" read as 2.0): left to the run.
            return;
        }
        let certain = match self.missing {
            Missing::Reject => true,
            // Dropping rows only takes values away: a 0/1 label stays one, and a favourable
            // value that is no number and not in the file never appears.
            Missing::Drop => zero_one || favourable.as_deref().is_some_and(|f| f.parse::<f64>().is_err() && !cells.contains(f)),
        };
        if certain {
            if let Err(e) = data::encode_label(path, label, &texts, favourable.as_deref()) {
                let span = checks.span("favourable");
                checks.at(&span, e);
            }
        }
    }
}

impl LoadConfig {
    /// Refuse column roles that make an audit meaningless: the label (or the split column) among
    /// the features, protected or dropped; a protected column dropped; a column named twice.
    fn check_roles(&self, checks: &mut Checks<'_, '_>) {
        // A file with no label: no column can be it (an empty name matches no column).
        let label = &self.label.clone().unwrap_or_default();
        for (i, c) in self.features.iter().flatten().enumerate() {
            let span = checks.item_span("features", i);
            if c == label {
                checks.at(&span, format!("the label `{label}` is listed among the features; a model trained on its own label leaks it (remove it from `features`)"));
            }
            if self.split_column.as_ref() == Some(c) {
                checks.at(&span, format!("the split column `{c}` is listed among the features; remove it from `features`"));
            }
            if self.features.iter().flatten().take(i).any(|f| f == c) {
                checks.at(&span, format!("feature `{c}` is listed twice"));
            }
        }
        for (i, c) in self.protected.iter().enumerate() {
            let span = checks.item_span("protected", i);
            if c == label {
                checks.at(&span, format!("the label `{label}` cannot be a protected attribute; name the columns of sex, race, age…"));
            }
            if self.drop.contains(c) {
                checks.at(&span, format!("protected attribute `{c}` is also in `drop`; an audited attribute must stay a feature"));
            }
            if self.features.as_ref().is_some_and(|f| !f.contains(c)) {
                checks.at(&span, format!("protected attribute `{c}` is not among the listed `features`; add it there"));
            }
            if self.protected.iter().take(i).any(|p| p == c) {
                checks.at(&span, format!("protected attribute `{c}` is listed twice"));
            }
        }
        for (i, c) in self.drop.iter().enumerate() {
            let span = checks.item_span("drop", i);
            if c == label {
                checks.at(&span, format!("the label `{label}` is in `drop`; the label is never a feature, so remove it from `drop`"));
            }
            if self.features.as_ref().is_some_and(|f| f.contains(c)) {
                checks.at(&span, format!("column `{c}` is both dropped and listed in `features`; keep it in one"));
            }
        }
        for (column, attributes) in &self.linked {
            let span = checks.nested_key_span("linked", column);
            if self.protected.contains(column) {
                checks.at(
                    &span,
                    format!("linked.{column}: `{column}` is protected; a linked column is one that changes with a protected attribute"),
                );
            }
            if column == label || self.drop.contains(column) || self.split_column.as_ref() == Some(column) {
                checks.at(&span, format!("linked.{column}: `{column}` is not a feature (the label, the split column or dropped); only a feature can be linked"));
            }
            if attributes.is_empty() {
                checks.at(&span, format!("linked.{column}: name the protected attribute it goes with, e.g. linked.{column}.sex = {{ … }}"));
            }
            for (attribute, values) in attributes {
                if !self.protected.contains(attribute) {
                    checks.at(
                        &span,
                        format!("linked.{column}.{attribute}: `{attribute}` is not among `protected` ({}); link a column to a protected attribute", self.protected.join(", ")),
                    );
                }
                if values.is_empty() {
                    checks
                        .at(&span, format!("linked.{column}.{attribute}: list which `{column}` value goes with which `{attribute}` value"));
                }
                let mut seen = std::collections::BTreeMap::new();
                for (value, with) in values {
                    if let Some(first) = seen.insert(with.text(), value) {
                        checks.at(
                            &span,
                            format!("linked.{column}.{attribute}: `{first}` and `{value}` both go with {attribute} = {:?}; a counterpart could become either, so give each {attribute} value one `{column}` value", with.text()),
                        );
                    }
                }
            }
        }
        if self.split_column.as_ref() == Some(label) {
            let span = checks.span("split_column");
            checks.at(&span, format!("the split column is the label `{label}`; name the column holding train / test"));
        }
    }
}

impl LoadConfig {
    /// The `codes` file: readable, well formed, naming columns of the data, not also overridden in
    /// `columns`. Problems inside the file carry its own `file:line:col`.
    fn check_codes(&self, checks: &mut Checks<'_, '_>, names: &[String], source: &str) {
        let Some(path) = &self.codes else { return };
        let resolved = checks.existing_file("codes", path);
        if !resolved.is_file() {
            return;
        }
        let codes = match crate::codes::read(&resolved) {
            Ok(codes) => codes,
            Err(problems) => {
                for p in problems {
                    checks.problem("codes", p);
                }
                return;
            }
        };
        for p in codes.unknown_columns(names, source) {
            checks.problem("codes", p);
        }
        for c in &codes.columns {
            if self.columns.get(&c.column).is_some_and(|o| o.kind.is_some() || o.levels.is_some()) {
                let span = checks.nested_key_span("columns", &c.column);
                checks.at(
                    &span,
                    format!("column `{}` has codes in {}; drop its kind and levels here (the codes fix both)", c.column, c.at_text()),
                );
            }
        }
    }
}

impl StageConfig for LoadConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, checks: &mut Checks<'_, '_>) {
        if self.protected.is_empty() {
            checks.missing("protected", "the protected attribute columns");
        }
        if self.label.is_none() && self.favourable.is_some() {
            checks.problem(
                "favourable",
                "`favourable` names a value of the label, and no `label` is given: name the label column, or leave `favourable` out",
            );
        }
        checks.within("test_fraction", self.test_fraction, 0.0, 0.99);
        if let Some(t) = self.proxy_threshold {
            checks.within("proxy_threshold", t, 0.0, 1.0);
        }
        if self.separator_byte().is_none() {
            let s = self.separator.clone().unwrap_or_default();
            checks.problem("separator", format!("`separator` must be one character, found {s:?}"));
        }
        for (name, c) in &self.columns {
            let span = checks.nested_key_span("columns", name);
            if c.step.is_some_and(|s| !s.is_finite() || s <= 0.0) {
                checks.at(&span, format!("columns.{name}.step: expected a positive finite number"));
            }
            for (key, bound) in [("min", c.min), ("max", c.max)] {
                if bound.is_some_and(|b| !b.is_finite()) {
                    checks.at(&span, format!("columns.{name}.{key}: expected a finite number"));
                }
            }
            if let (Some(min), Some(max)) = (c.min, c.max) {
                if min > max {
                    checks.at(&span, format!("columns.{name}: min {min} is greater than max {max}"));
                } else if !(max - min).is_finite() {
                    // The domain's arithmetic (steps, ranges, perturbations) needs max − min.
                    checks.at(
                        &span,
                        format!("columns.{name}: min {min:?} and max {max:?} span a range too wide to compute with (max − min is not a finite number); narrow the bounds or rescale the column"),
                    );
                }
            }
            if let Some(levels) = &c.levels {
                let texts: Vec<String> = levels.iter().map(LabelValue::text).collect();
                if texts.is_empty() {
                    checks.at(&span, format!("columns.{name}.levels: list at least one level"));
                }
                let mut seen = std::collections::BTreeSet::new();
                if let Some(dup) = texts.iter().find(|t| !seen.insert(t.as_str())) {
                    checks.at(&span, format!("columns.{name}.levels: level {dup:?} is listed twice"));
                }
                if c.kind.is_some_and(|k| k != ColumnKind::Categorical) {
                    checks.at(&span, format!("columns.{name}: `levels` belong to a categorical column, but kind is not categorical"));
                }
                if c.min.is_some() || c.max.is_some() || c.step.is_some() {
                    checks.at(&span, format!("columns.{name}: a categorical column takes `levels`, not min/max/step"));
                }
            }
        }
        self.check_roles(checks);
        // The columns named must exist: checked against the file's header now, so `validate`
        // catches typos.
        let (names, source): (Vec<String>, String) = match (&self.frame, &self.path) {
            (Some(frame), _) => (frame.get_column_names().iter().map(|s| s.to_string()).collect(), "the data frame".into()),
            (None, Some(path)) => {
                let resolved = checks.existing_file("path", path);
                if !resolved.is_file() {
                    return;
                }
                match data::column_names(&resolved, self.separator_byte().unwrap_or(b',')) {
                    Ok(names) => (names, resolved.display().to_string()),
                    Err(e) => {
                        checks.problem("path", e);
                        return;
                    }
                }
            }
            (None, None) => {
                checks.missing("path", "the data file");
                return;
            }
        };
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let check = |checks: &mut Checks<'_, '_>, col: &str, span: std::ops::Range<usize>, role: &str| {
            if !names.iter().any(|n| n == col) {
                checks.at(&span, format!("{role} `{col}` is not a column of {source}{}; columns: {}", hint(col, &refs), names.join(", ")));
            }
        };
        if let Some(label) = &self.label {
            let label_span = checks.span("label");
            check(checks, label, label_span, "label");
        }
        for (i, c) in self.protected.iter().enumerate() {
            let span = checks.item_span("protected", i);
            check(checks, c, span, "protected attribute");
        }
        for (i, c) in self.drop.iter().enumerate() {
            let span = checks.item_span("drop", i);
            check(checks, c, span, "dropped column");
        }
        for (i, c) in self.features.iter().flatten().enumerate() {
            let span = checks.item_span("features", i);
            check(checks, c, span, "feature");
        }
        if let Some(c) = &self.split_column {
            let span = checks.span("split_column");
            check(checks, c, span, "split column");
        }
        for c in self.columns.keys() {
            let span = checks.nested_key_span("columns", c);
            check(checks, c, span, "column override");
        }
        for c in self.linked.keys() {
            let span = checks.nested_key_span("linked", c);
            check(checks, c, span, "linked column");
        }
        self.check_codes(checks, &names, &source);
        let _ = self.header.set(names.clone());
        if let (None, Some(path)) = (&self.frame, &self.path) {
            let file = checks.dir().join(path);
            self.check_values(checks, &file);
        }
    }

    fn instantiate(self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        let path = match (&self.frame, &self.path) {
            (None, Some(p)) => env.dir.join(p),
            _ => PathBuf::from("<data frame>"),
        };
        let features = self.header.get().map(|names| match &self.features {
            Some(features) => features.clone(),
            None => names
                .iter()
                .filter(|n| Some(*n) != self.label.as_ref() && Some(*n) != self.split_column.as_ref() && !self.drop.contains(n))
                .cloned()
                .collect(),
        });
        let mut spec = self.spec(path, env.seed);
        if let Some(codes) = &self.codes {
            let file = env.dir.join(codes);
            spec.codes = Some(crate::codes::read(&file).map_err(|problems| crate::error::DataError::Read {
                path: file,
                message: problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
            })?);
        }
        Ok(Box::new(Load {
            spec,
            frame: self.frame,
            features,
            proxy_threshold: self.proxy_threshold.unwrap_or(PROXY_THRESHOLD),
            audits_a_model: env.audits_a_model,
            linked: self.linked,
        }))
    }
}

/// Figures of a `load` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct LoadFigures {
    /// Rows kept.
    pub rows: usize,
    /// Rows in the train split.
    pub rows_train: usize,
    /// Rows in the validation split.
    pub rows_val: usize,
    /// Rows in the test split.
    pub rows_test: usize,
    /// Rows dropped for missing values.
    pub dropped_rows: usize,
    /// Feature columns.
    pub features: usize,
    /// Protected attribute names.
    pub protected: Vec<String>,
    /// The label (`null`: the file was read with no label).
    pub label: Option<LabelFigures>,
    /// The domain's attributes (name, kind, bounds, step, protected).
    pub domain: serde_json::Value,
    /// Columns associated with a protected attribute at least as strongly as `proxy_threshold`
    /// ([`crate::association::strong`]); empty in a summary written before this was recorded.
    #[serde(default)]
    pub proxies: Vec<crate::association::Association>,
}

/// A load stage's figures name its data's protected attributes (the verdicts' attributes when a
/// measure recorded none) and its favourable label (the model line's).
impl StageFigures for LoadFigures {
    const HEADLINE: &'static [&'static str] = &["rows"];

    fn protected(&self) -> Vec<String> {
        self.protected.clone()
    }

    fn favourable_label(&self) -> Option<String> {
        self.label.as_ref().map(|l| l.favourable.clone())
    }
}

/// The label column of a `load` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelFigures {
    /// Column name.
    pub column: String,
    /// `[unfavourable, favourable]` as written in the file.
    pub values: [String; 2],
    /// The favourable value.
    pub favourable: String,
    /// Share of rows with the favourable label.
    #[serde(deserialize_with = "crate::stage::nan_if_null")]
    pub favourable_share: f64,
}

struct Load {
    spec: LoadSpec,
    frame: Option<DataFrame>,
    /// The feature columns, when validation read the file's header.
    features: Option<Vec<String>>,
    /// The `proxy_threshold` key.
    proxy_threshold: f64,
    /// Whether the pipeline has a model stage: only then are proxies warned of (they matter to
    /// counterparts, which only a model's audit makes); they are recorded in the figures always.
    audits_a_model: bool,
    /// The `linked` key.
    linked: BTreeMap<String, BTreeMap<String, BTreeMap<String, LabelValue>>>,
}

impl Load {
    /// A data error located at the key that fixes it: the label's values at `favourable`, a
    /// protected column's at `protected`, a column whose bounds `columns.NAME` declares (the
    /// data outside them, or a range too wide) at `columns`.
    fn refused(&self, e: crate::error::DataError) -> crate::error::Error {
        let bounded = |column: &String| self.spec.columns.get(column).is_some_and(|c| c.min.is_some() || c.max.is_some());
        match &e {
            crate::error::DataError::Column { column, .. } if Some(column) == self.spec.label.as_ref() => {
                StageError::contradicts("favourable", e)
            }
            crate::error::DataError::Column { column, .. } if self.spec.protected.contains(column) => {
                StageError::contradicts("protected", e)
            }
            crate::error::DataError::Column { column, .. } if bounded(column) => StageError::contradicts("columns", e),
            _ => e.into(),
        }
    }
}

impl Stage for Load {
    fn features_before_run(&self) -> Option<Vec<String>> {
        self.features.clone()
    }

    fn label_before_run(&self) -> Option<Option<String>> {
        Some(self.spec.label.clone())
    }

    fn run(&self, ctx: &StageContext, _inputs: &Inputs) -> Result<StageOutput> {
        let mut data = match &self.frame {
            Some(frame) => data::load_frame(frame.clone(), &self.spec),
            None => data::load(&self.spec),
        }
        .map_err(|e| self.refused(e))?;
        data.links = super::linked::resolve(&self.linked, &data.domain)?;
        // Too many protected combinations: a coarser `columns.NAME.step` (or fewer levels) fixes it.
        crate::limits::check_protected_combinations(&data.domain, &ctx.warnings).map_err(|e| StageError::contradicts("columns", e))?;
        warn_of_one_class(ctx, &data);
        let proxies = crate::association::strong(&data.domain, &data.x, self.proxy_threshold);
        let linked = |a: &crate::association::Association| self.linked.get(&a.column).is_some_and(|l| l.contains_key(&a.protected));
        let proxies: Vec<_> = proxies.into_iter().map(|a| (linked(&a), a)).collect();
        let unlinked: Vec<_> = proxies.iter().filter(|(l, _)| !l).map(|(_, a)| a.clone()).collect();
        if self.audits_a_model {
            warn_of_proxies(ctx, &unlinked, self.proxy_threshold);
        }
        let figures = LoadFigures {
            rows: data.len(),
            rows_train: data.rows_in(Split::Train).len(),
            rows_val: data.rows_in(Split::Val).len(),
            rows_test: data.rows_in(Split::Test).len(),
            dropped_rows: data.dropped_rows,
            features: data.domain.width(),
            protected: data.domain.protected_indices().iter().map(|&i| data.domain.attributes[i].name.clone()).collect(),
            label: data.labelled.then(|| LabelFigures {
                column: data.label_name.clone(),
                values: data.label_values.clone(),
                favourable: data.label_values[1].clone(),
                favourable_share: data.y.iter().filter(|&&v| v == 1).count() as f64 / data.len() as f64,
            }),
            domain: serde_json::to_value(&data.domain.attributes).unwrap_or_default(),
            proxies: proxies.into_iter().map(|(_, a)| a).collect(),
        };
        Ok(StageOutput { artifact: Artifact::Dataset(Arc::new(data)), figures: Arc::new(figures), tables: Vec::new(), model_queries: 0 })
    }
}

/// A label that takes one value in every row is no outcome to measure a classifier against: the
/// audit's selection rates, estimate, check and searches need no label and still stand, but its
/// accuracy, the check that the model is not read the wrong way round, TPR/FPR, AUC and calibration
/// mean nothing — said loudly, with the likely fix (a wrong `label` column, or a filtered file).
fn warn_of_one_class(ctx: &StageContext, data: &crate::data::Dataset) {
    let favourable = data.y.iter().filter(|&&v| v == 1).count();
    if !data.labelled || data.is_empty() || (favourable != 0 && favourable != data.len()) {
        return;
    }
    let value = if favourable == 0 { &data.label_values[0] } else { &data.label_values[1] };
    ctx.warn(format!(
        "the label `{}` takes one value only ({value:?} in all {} rows): the model's accuracy, the check that its classes are not read the wrong way round, TPR/FPR, AUC and calibration mean nothing; check that `label` names the outcome column and that the file holds both outcomes (selection rates, the estimate, the check and the searches need no label)",
        data.label_name,
        data.len()
    ));
}

/// One warning per protected attribute that has proxies, located at the stage's `protected` key:
/// the columns, their measure and value against the threshold, and what follows for the
/// counterfactual checks.
fn warn_of_proxies(ctx: &StageContext, proxies: &[crate::association::Association], threshold: f64) {
    let mut attributes: Vec<&str> = proxies.iter().map(|a| a.protected.as_str()).collect();
    attributes.dedup();
    for attribute in attributes {
        let columns: Vec<String> = proxies
            .iter()
            .filter(|a| a.protected == attribute)
            .map(|a| format!("`{}` ({} {:.2})", a.column, a.measure.label(), a.value))
            .collect();
        ctx.warn(format!(
            "stages.{}.protected: `{attribute}` is strongly associated with {} (at least proxy_threshold = {threshold}): a counterpart that changes `{attribute}` alone keeps them and may be no one who could exist (a \"Female Husband\"); to change a column with `{attribute}`, say which of its values goes with which in `linked` (e.g. linked.relationship.sex = {{ Husband = \"Male\", Wife = \"Female\" }})",
            ctx.name,
            columns.join(", ")
        ));
    }
}
