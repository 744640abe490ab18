//! Reading P(favourable) from what a model returns: a `[N, 2]` probability tensor, a `[N, 1]` or
//! `[N]` sigmoid, a scikit-learn `ZipMap` (one map from class to probability per row), or labels
//! only. String class labels (`"<=50K"`, `">50K"`) are matched against the data's favourable label.
//!
//! Every value read is checked: NaN or infinity is an error naming the row; values outside
//! [0, 1], or two-class rows that do not sum to 1, are refused with the fix
//! (`output_transform = "sigmoid" | "softmax"`), so logits are never read as probabilities.

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::inputs::ElementType;

/// What a model returns for a batch of `rows` rows, read from one of its outputs.
#[derive(Debug, Clone, PartialEq)]
pub enum RawOutput {
    /// A float tensor, `columns` values per row.
    Floats {
        /// Values, row-major.
        values: Vec<f64>,
        /// Values per row.
        columns: usize,
    },
    /// Integer class labels, one per row.
    IntLabels(Vec<i64>),
    /// Text class labels, one per row.
    TextLabels(Vec<String>),
    /// One map from class to probability per row (a `ZipMap`).
    Maps(Vec<Vec<(ClassKey, f64)>>),
}

/// A class as a model names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClassKey {
    /// An integer class (0, 1).
    Int(i64),
    /// A text class (">50K").
    Text(String),
}

impl std::fmt::Display for ClassKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClassKey::Int(i) => write!(f, "{i}"),
            ClassKey::Text(t) => write!(f, "{t:?}"),
        }
    }
}

/// `output_transform`: what turns the chosen output into probabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, fairpipe_keys::KeyType)]
#[serde(rename_all = "snake_case")]
pub enum OutputTransform {
    /// The output already holds probabilities (checked).
    #[default]
    None,
    /// Logistic function of a one-column logit (or of each column).
    Sigmoid,
    /// Softmax across the columns of each row (logits of the classes).
    Softmax,
}

/// The favourable label as the data writes it, and how the data's 0/1 label maps to the model's
/// classes.
#[derive(Debug, Clone, PartialEq)]
pub struct Favourable {
    /// The favourable label's text in the data (">50K", "1").
    pub label: String,
    /// Whether the data's favourable class is the label 0 (`favourable = 0`).
    pub is_zero: bool,
    /// The favourable label's code when the data declares its label's codes (`codes` on the
    /// load stage): the model's integer class of that number is favourable.
    pub code: Option<i64>,
}

/// Why an output cannot be read as P(favourable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClassError {
    /// The data's favourable label is none of a two-class model's classes.
    #[error("the data's favourable label {label:?} is not one of the model's classes [{classes}]; set `favourable` in the load stage to one of them")]
    NotAClass {
        /// The data's favourable label.
        label: String,
        /// The model's classes, comma-separated.
        classes: String,
    },
    /// A model of three or more classes, none of them named favourable.
    #[error("the model has {count} classes [{classes}] and none is the data's favourable label {label:?}; name the favourable one by its value with `favourable = \"…\"` on the load stage (the label column must hold the model's class values): the audit is then that class against the rest")]
    NoneNamed {
        /// How many classes.
        count: usize,
        /// The model's classes, comma-separated.
        classes: String,
        /// The data's favourable label.
        label: String,
    },
    /// An output with a column per class of a model that does not name its classes.
    #[error("output {name} ({ty}) has {columns} columns per row, one per class, but the model does not name its classes (found {found}); a binary classifier's has 1 or 2")]
    UnnamedColumns {
        /// The output.
        name: String,
        /// Its element type.
        ty: String,
        /// Columns per row.
        columns: usize,
        /// Classes the model names.
        found: usize,
    },
    /// A map output of fewer than two classes.
    #[error("output {name} maps {count} class; a classifier's maps 2 or more")]
    TooFewMapped {
        /// The output.
        name: String,
        /// Classes it maps.
        count: usize,
    },
}

impl Favourable {
    /// Which of `classes` is favourable: the class written like the data's favourable label, else
    /// (integer classes 0/1 for text labels) class 1. Returns the class and whether it was assumed.
    pub fn class_among(&self, classes: &[ClassKey]) -> Result<(ClassKey, bool), ClassError> {
        if let Some(c) = classes.iter().find(|c| match c {
            ClassKey::Text(t) => t.trim() == self.label.trim(),
            ClassKey::Int(i) => self.code == Some(*i) || self.label.trim().parse::<f64>().is_ok_and(|v| v == *i as f64),
        }) {
            return Ok((c.clone(), false));
        }
        let ints = classes.iter().all(|c| matches!(c, ClassKey::Int(_)));
        if ints && classes.contains(&ClassKey::Int(1)) {
            return Ok((ClassKey::Int(1), true));
        }
        let names: Vec<String> = classes.iter().map(ToString::to_string).collect();
        Err(ClassError::NotAClass { label: self.label.clone(), classes: names.join(", ") })
    }

    /// The favourable class of a model with three or more `classes`: it must be named (matched by
    /// the data's favourable label or its code), never assumed; the refusal lists the classes.
    pub fn named_among(&self, classes: &[ClassKey]) -> Result<ClassKey, ClassError> {
        match self.class_among(classes) {
            Ok((class, false)) => Ok(class),
            _ => {
                let names: Vec<String> = classes.iter().map(ToString::to_string).collect();
                Err(ClassError::NoneNamed { count: classes.len(), classes: names.join(", "), label: self.label.clone() })
            }
        }
    }
}

/// How the probability of the favourable class is read from one output.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadRule {
    /// Column `column` of a `[N, columns]` float tensor.
    Column {
        /// The favourable class's column.
        column: usize,
    },
    /// A one-column sigmoid: P(class 1), complemented when the favourable class is 0.
    Sigmoid {
        /// Read 1 − p.
        complement: bool,
    },
    /// The favourable class's entry of each row's map.
    MapEntry(ClassKey),
    /// Labels only: 1 when the row's label is the favourable class, else 0.
    Label(ClassKey),
}

/// The chosen output and how to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputReader {
    /// The output's name.
    pub name: String,
    /// How P(favourable) is read from it.
    pub rule: ReadRule,
    /// What is applied first.
    pub transform: OutputTransform,
    /// Whether the favourable class had to be assumed (integer classes, text labels in the data).
    pub assumed_class: bool,
    /// The model's classes when it has three or more: P(favourable) is then that of the named
    /// class, and the audit is that class against the rest. Empty for a binary model.
    pub classes: Vec<ClassKey>,
}

/// Largest amount by which a probability may leave [0, 1], or a two-class row's sum may differ
/// from 1, before the output is refused as not probabilities.
const PROBABILITY_SLACK: f64 = 1e-4;

impl OutputReader {
    /// Whether P(favourable) is 1 − P(class 1) of the output (column 0 of two, or a complemented
    /// sigmoid): how an executor that computes P(class 1) itself, as the native dense one does,
    /// reads its result.
    pub fn favourable_is_complement(&self) -> bool {
        self.classes.is_empty() && matches!(self.rule, ReadRule::Column { column: 0 } | ReadRule::Sigmoid { complement: true })
    }

    /// Whether the model gives labels only.
    pub fn labels_only(&self) -> bool {
        matches!(self.rule, ReadRule::Label(_))
    }

    /// "probabilities [N,2] column 1", "ZipMap entry \">50K\"", "labels only".
    pub fn describe(&self) -> String {
        let base = match &self.rule {
            ReadRule::Column { column } => format!("column {column}"),
            ReadRule::Sigmoid { complement: false } => "one-column probability".into(),
            ReadRule::Sigmoid { complement: true } => "one-column probability read as 1 - p".into(),
            ReadRule::MapEntry(key) => format!("ZipMap entry {key}"),
            ReadRule::Label(key) => format!("labels only (favourable {key})"),
        };
        let base = if self.classes.is_empty() { base } else { format!("{base}, {}", self.versus_rest()) };
        match self.transform {
            OutputTransform::None => base,
            OutputTransform::Sigmoid => format!("{base} after sigmoid"),
            OutputTransform::Softmax => format!("{base} after softmax"),
        }
    }

    /// "favourable vs the rest of 3 classes [0, 1, 2]" (for a model with three or more classes).
    pub fn versus_rest(&self) -> String {
        let names: Vec<String> = self.classes.iter().map(ToString::to_string).collect();
        format!("favourable vs the rest of {} classes [{}]", self.classes.len(), names.join(", "))
    }

    /// Write P(favourable) of each row of `raw` into `out`, checking every value. `first_row` is
    /// the index of the batch's first row in the caller's numbering (for messages).
    pub fn read(&self, raw: RawOutput, out: &mut [f64], first_row: usize) -> Result<(), ModelError> {
        let rows = out.len();
        let short = |found: usize| ModelError::Inference(format!("output {} returned {found} rows for {rows}", self.name));
        match (&self.rule, raw) {
            (ReadRule::Column { column }, RawOutput::Floats { mut values, columns }) => {
                if values.len() != rows * columns || *column >= columns {
                    return Err(short(values.len() / columns.max(1)));
                }
                self.transform_rows(&mut values, columns);
                for (r, row) in values.chunks_exact(columns).enumerate() {
                    self.check_row(row, first_row + r)?;
                    out[r] = row[*column];
                }
            }
            (ReadRule::Sigmoid { complement }, RawOutput::Floats { mut values, columns }) => {
                if values.len() != rows || columns != 1 {
                    return Err(short(values.len()));
                }
                self.transform_rows(&mut values, 1);
                for (r, v) in values.iter().enumerate() {
                    self.check_row(std::slice::from_ref(v), first_row + r)?;
                    out[r] = if *complement { 1.0 - v } else { *v };
                }
            }
            (ReadRule::MapEntry(key), RawOutput::Maps(maps)) => {
                if maps.len() != rows {
                    return Err(short(maps.len()));
                }
                for (r, map) in maps.into_iter().enumerate() {
                    let mut values: Vec<f64> = map.iter().map(|(_, v)| *v).collect();
                    let columns = values.len().max(1);
                    self.transform_rows(&mut values, columns);
                    self.check_row(&values, first_row + r)?;
                    let position = map.iter().position(|(k, _)| k == key).ok_or_else(|| {
                        ModelError::Inference(format!("row {}: output {} has no entry for class {key}", first_row + r, self.name))
                    })?;
                    out[r] = values[position];
                }
            }
            (ReadRule::Label(key), RawOutput::IntLabels(labels)) => {
                if labels.len() != rows {
                    return Err(short(labels.len()));
                }
                for (o, l) in out.iter_mut().zip(labels) {
                    *o = f64::from(u8::from(ClassKey::Int(l) == *key));
                }
            }
            (ReadRule::Label(key), RawOutput::TextLabels(labels)) => {
                if labels.len() != rows {
                    return Err(short(labels.len()));
                }
                for (o, l) in out.iter_mut().zip(labels) {
                    *o = f64::from(u8::from(ClassKey::Text(l) == *key));
                }
            }
            (rule, raw) => {
                return Err(ModelError::Inference(format!("output {} changed form: read as {rule:?}, returned {}", self.name, raw.form())))
            }
        }
        Ok(())
    }

    fn transform_rows(&self, values: &mut [f64], columns: usize) {
        match self.transform {
            OutputTransform::None => {}
            OutputTransform::Sigmoid => values.iter_mut().for_each(|v| *v = 1.0 / (1.0 + (-*v).exp())),
            OutputTransform::Softmax => {
                for row in values.chunks_exact_mut(columns) {
                    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    row.iter_mut().for_each(|v| *v = (*v - max).exp());
                    let sum: f64 = row.iter().sum();
                    row.iter_mut().for_each(|v| *v /= sum);
                }
            }
        }
    }

    fn check_row(&self, row: &[f64], index: usize) -> Result<(), ModelError> {
        if let Some(v) = row.iter().find(|v| !v.is_finite()) {
            return Err(ModelError::NotFinite { output: self.name.clone(), row: index, value: *v, features: Vec::new() });
        }
        let out_of_range = row.iter().any(|v| *v < -PROBABILITY_SLACK || *v > 1.0 + PROBABILITY_SLACK);
        let sum: f64 = row.iter().sum();
        let unnormalised = row.len() > 1 && (sum - 1.0).abs() > PROBABILITY_SLACK * row.len() as f64;
        if out_of_range || unnormalised {
            let fix = match (self.transform, row.len()) {
                (OutputTransform::None, 1) => "if it holds a logit, set `output_transform = \"sigmoid\"`",
                (OutputTransform::None, _) => "if it holds logits, set `output_transform = \"softmax\"`; if another output holds the probabilities, name it with `output = \"…\"`",
                _ => "the transform does not yield probabilities either; choose another `output`",
            };
            return Err(ModelError::NotProbabilities {
                output: self.name.clone(),
                row: index,
                values: row.to_vec(),
                problem: if out_of_range { "values outside [0, 1]".into() } else { format!("the row sums to {sum}, not 1") },
                fix: fix.into(),
            });
        }
        Ok(())
    }
}

impl RawOutput {
    /// "a [N,2] float tensor", "maps", "integer labels", "text labels".
    pub fn form(&self) -> String {
        match self {
            RawOutput::Floats { columns, .. } => format!("a [N,{columns}] float tensor"),
            RawOutput::IntLabels(_) => "integer labels".into(),
            RawOutput::TextLabels(_) => "text labels".into(),
            RawOutput::Maps(_) => "one class→probability map per row (ZipMap)".into(),
        }
    }

    /// The classes that occur in this output (map keys or labels), sorted.
    pub fn classes(&self) -> Vec<ClassKey> {
        let mut keys: Vec<ClassKey> = match self {
            RawOutput::Maps(maps) => maps.iter().flat_map(|m| m.iter().map(|(k, _)| k.clone())).collect(),
            RawOutput::IntLabels(l) => l.iter().map(|i| ClassKey::Int(*i)).collect(),
            RawOutput::TextLabels(l) => l.iter().map(|t| ClassKey::Text(t.clone())).collect(),
            RawOutput::Floats { .. } => Vec::new(),
        };
        keys.sort();
        keys.dedup();
        keys
    }
}

/// How to read `raw` (an output named `name` of element type `ty`, returned for probe rows), or why
/// it cannot be read. `classes` are the model's classes where they are known beyond the probe
/// (a label output's values).
pub fn reader_for(
    name: &str,
    ty: &ElementType,
    raw: &RawOutput,
    favourable: &Favourable,
    transform: OutputTransform,
    classes: &[ClassKey],
) -> Result<OutputReader, ClassError> {
    let int_classes = [ClassKey::Int(0), ClassKey::Int(1)];
    let mut many = Vec::new();
    let (rule, assumed_class) = match raw {
        RawOutput::Floats { columns: 1, .. } => {
            let known = if classes.is_empty() { &int_classes[..] } else { classes };
            let (class, assumed) = favourable.class_among(known)?;
            let first = known.first().cloned().unwrap_or(ClassKey::Int(0));
            (ReadRule::Sigmoid { complement: class == first && known.len() == 2 }, assumed)
        }
        RawOutput::Floats { columns: 2, .. } => {
            let known = if classes.len() == 2 { classes } else { &int_classes[..] };
            let (class, assumed) = favourable.class_among(known)?;
            let column = known.iter().position(|c| *c == class).unwrap_or(1);
            (ReadRule::Column { column }, assumed)
        }
        RawOutput::Floats { columns, .. } => {
            if classes.len() != *columns {
                return Err(ClassError::UnnamedColumns {
                    name: name.to_string(),
                    ty: ty.to_string(),
                    columns: *columns,
                    found: classes.len(),
                });
            }
            let class = favourable.named_among(classes)?;
            many = classes.to_vec();
            (ReadRule::Column { column: classes.iter().position(|c| *c == class).unwrap_or(0) }, false)
        }
        RawOutput::Maps(_) => {
            let known = raw.classes();
            if known.len() < 2 {
                return Err(ClassError::TooFewMapped { name: name.to_string(), count: known.len() });
            }
            if known.len() > 2 {
                let class = favourable.named_among(&known)?;
                many = known;
                (ReadRule::MapEntry(class), false)
            } else {
                let (class, assumed) = favourable.class_among(&known)?;
                (ReadRule::MapEntry(class), assumed)
            }
        }
        RawOutput::IntLabels(_) | RawOutput::TextLabels(_) => {
            let mut known = raw.classes();
            known.extend(classes.iter().cloned());
            known.sort();
            known.dedup();
            if known.len() == 1 && matches!(known[0], ClassKey::Int(_)) {
                known = int_classes.to_vec();
            }
            if known.len() > 2 {
                let class = favourable.named_among(&known)?;
                many = known;
                (ReadRule::Label(class), false)
            } else {
                let (class, assumed) = favourable.class_among(&known)?;
                (ReadRule::Label(class), assumed)
            }
        }
    };
    Ok(OutputReader { name: name.to_string(), rule, transform, assumed_class, classes: many })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fav(label: &str) -> Favourable {
        Favourable { label: label.into(), is_zero: label == "0", code: None }
    }

    #[test]
    fn logits_are_refused_with_the_transform_named() {
        let raw = RawOutput::Floats { values: vec![2.0, -1.0, 0.3, 0.1], columns: 2 };
        let reader = reader_for("logits", &ElementType::Float32, &raw, &fav(">50K"), OutputTransform::None, &[]).unwrap();
        let err = reader.read(raw.clone(), &mut [0.0; 2], 10).unwrap_err().to_string();
        assert!(err.contains("row 10") && err.contains("output_transform = \"softmax\""), "{err}");
        let softmax = OutputReader { transform: OutputTransform::Softmax, ..reader };
        let mut out = [0.0; 2];
        softmax.read(raw, &mut out, 0).unwrap();
        assert!((out[0] - (-1f64).exp() / (2f64.exp() + (-1f64).exp())).abs() < 1e-12);
    }

    #[test]
    fn nan_names_the_row() {
        let raw = RawOutput::Floats { values: vec![0.2, f64::NAN], columns: 1 };
        let reader = reader_for("p", &ElementType::Float32, &raw, &fav("1"), OutputTransform::None, &[]).unwrap();
        let err = reader.read(raw, &mut [0.0; 2], 5).unwrap_err().to_string();
        assert!(err.contains("row 6") && err.contains("NaN"), "{err}");
    }

    #[test]
    fn a_zipmap_with_text_classes_reads_the_favourable_entry() {
        let row = |p: f64| vec![(ClassKey::Text("<=50K".into()), 1.0 - p), (ClassKey::Text(">50K".into()), p)];
        let raw = RawOutput::Maps(vec![row(0.25), row(0.75)]);
        let reader = reader_for("output_probability", &ElementType::Float32, &raw, &fav(">50K"), OutputTransform::None, &[]).unwrap();
        let mut out = [0.0; 2];
        reader.read(raw, &mut out, 0).unwrap();
        assert_eq!(out, [0.25, 0.75]);
        let err = reader_for("o", &ElementType::Float32, &RawOutput::Maps(vec![row(0.5)]), &fav("rich"), OutputTransform::None, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"rich\" is not one of the model's classes"), "{err}");
    }

    #[test]
    fn favourable_zero_reads_column_zero() {
        let raw = RawOutput::Floats { values: vec![0.9, 0.1], columns: 2 };
        let reader = reader_for("p", &ElementType::Float32, &raw, &fav("0"), OutputTransform::None, &[]).unwrap();
        let mut out = [0.0; 1];
        reader.read(raw, &mut out, 0).unwrap();
        assert_eq!(out, [0.9]);
    }

    #[test]
    fn three_classes_read_the_named_class_against_the_rest_and_refuse_an_assumed_one() {
        let classes = [ClassKey::Int(0), ClassKey::Int(1), ClassKey::Int(2)];
        let raw = RawOutput::Floats { values: vec![0.2, 0.3, 0.5, 0.6, 0.3, 0.1], columns: 3 };
        let reader = reader_for("probabilities", &ElementType::Float32, &raw, &fav("2"), OutputTransform::None, &classes).unwrap();
        let mut out = [0.0; 2];
        reader.read(raw.clone(), &mut out, 0).unwrap();
        assert_eq!(out, [0.5, 0.1]);
        assert_eq!(reader.describe(), "column 2, favourable vs the rest of 3 classes [0, 1, 2]");
        assert!(!reader.assumed_class && !reader.favourable_is_complement());
        // Text labels in the data, numbered classes: nothing names the favourable class.
        let err = reader_for("probabilities", &ElementType::Float32, &raw, &fav(">50K"), OutputTransform::None, &classes)
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 classes [0, 1, 2]") && err.contains("favourable = "), "{err}");
        // Labels only, three classes: the same refusal rather than class 1 assumed.
        let labels = RawOutput::IntLabels(vec![0, 1, 2]);
        assert!(reader_for("label", &ElementType::Int64, &labels, &fav(">50K"), OutputTransform::None, &[])
            .unwrap_err()
            .to_string()
            .contains("3 classes"));
        // A ZipMap with string classes: the named entry.
        let row = |a: f64, d: f64| {
            vec![
                (ClassKey::Text("approved".into()), a),
                (ClassKey::Text("denied".into()), d),
                (ClassKey::Text("review".into()), 1.0 - a - d),
            ]
        };
        let maps = RawOutput::Maps(vec![row(0.7, 0.1), row(0.2, 0.5)]);
        let reader = reader_for("output_probability", &ElementType::Float32, &maps, &fav("approved"), OutputTransform::None, &[]).unwrap();
        let mut out = [0.0; 2];
        reader.read(maps.clone(), &mut out, 0).unwrap();
        assert_eq!(out, [0.7, 0.2]);
        assert_eq!(reader.classes.len(), 3);
        let err =
            reader_for("output_probability", &ElementType::Float32, &maps, &fav("1"), OutputTransform::None, &[]).unwrap_err().to_string();
        assert!(err.contains("[\"approved\", \"denied\", \"review\"]"), "{err}");
    }
}

/// What to read from the model and how.
#[derive(Debug, Clone)]
pub struct OutputChoice<'a> {
    /// The output to read (`output = "…"`), or `None` to find the probabilities.
    pub name: Option<&'a str>,
    /// `output_transform`.
    pub transform: OutputTransform,
    /// The favourable label.
    pub favourable: Favourable,
    /// The model's classes in its own order, when the graph names them.
    pub classes: Vec<ClassKey>,
}

/// Choose the output holding P(favourable): the one named, else the first output (outputs whose
/// name mentions "prob" first, labels last) that reads as probabilities on the probe rows.
///
/// Shared by every executor that lists its outputs (ONNX Runtime, a remote server): `source` names
/// the model in a NaN error, `fail` turns a refusal into the executor's own error.
pub fn choose_output(
    source: &str,
    outputs: &[(String, ElementType)],
    raw: &[Option<RawOutput>],
    choice: &OutputChoice<'_>,
    probe_rows: usize,
    fail: &dyn Fn(String) -> ModelError,
) -> Result<OutputReader, ModelError> {
    let rank = |i: usize| -> u8 {
        let name = outputs[i].0.to_lowercase();
        match &raw[i] {
            Some(RawOutput::IntLabels(_) | RawOutput::TextLabels(_)) => 3,
            _ if name.contains("prob") => 0,
            Some(RawOutput::Maps(_)) => 1,
            _ => 2,
        }
    };
    let mut order: Vec<usize> = match choice.name {
        Some(name) => outputs.iter().position(|(n, _)| n == name).into_iter().collect(),
        None => (0..outputs.len()).collect(),
    };
    order.sort_by_key(|&i| rank(i));
    // Classes: the graph's own list, else the labels any label output returned.
    let mut classes = choice.classes.clone();
    if classes.is_empty() {
        for value in raw.iter().flatten() {
            if matches!(value, RawOutput::IntLabels(_) | RawOutput::TextLabels(_)) {
                classes.extend(value.classes());
            }
        }
        classes.sort();
        classes.dedup();
    }
    let mut refusals = Vec::new();
    for i in order {
        let (name, ty) = &outputs[i];
        let Some(value) = &raw[i] else { continue };
        let reader = match reader_for(name, ty, value, &choice.favourable, choice.transform, &classes) {
            Ok(reader) => reader,
            Err(why) => {
                refusals.push(why.to_string());
                continue;
            }
        };
        let mut out = vec![0.0; probe_rows];
        match reader.read(value.clone(), &mut out, 0) {
            Ok(()) => return Ok(reader),
            Err(ModelError::NotFinite { output, row, value, features }) => {
                return Err(ModelError::NotFinite { output: format!("{output} of {source}"), row, value, features });
            }
            Err(e) if choice.name.is_some() => return Err(fail(e.to_string())),
            Err(e) => refusals.push(e.to_string()),
        }
    }
    Err(fail(format!(
        "no output reads as the probability of the favourable class: {}",
        if refusals.is_empty() { "it has no output fairpipe can read".into() } else { refusals.join("; ") }
    )))
}
