//! The CI gate: conditions on the figures of `summary.json` (`[gate] conditions = [...]` in a
//! pipeline, `--gate` on the command line), checked after a run has written its results. A
//! condition is `STAGE.FIELD[.FIELD…] OP NUMBER` with OP one of `<`, `<=`, `>`, `>=`, `==`, `!=`;
//! a field holding spaces is quoted (`metrics.parity."sex × race".demographic_parity_ratio`), an
//! array element is its index (`groups.rules.0.score`), and `true`/`false` read as 1/0. A figure
//! that is missing or not a number (an undefined rate is written `null`) fails its condition.
//!
//! ```
//! use fairpipe_core::gate::{evaluate, Condition};
//! let c: Condition = "estimate.rate <= 0.02".parse().unwrap();
//! let summary = serde_json::json!({"pipeline": "p", "seed": 1, "stage_order": ["estimate"],
//!     "stages": {"estimate": {"kind": "estimate", "rate": 0.01}}});
//! let summary = fairpipe_core::stage::summary::Summary::from_json(&summary).unwrap();
//! let outcomes = evaluate(&[c], &summary);
//! assert!(outcomes[0].passed);
//! ```

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::stage::kind::{FigureName, StageKind};
/// A condition checked against a run (kept in `summary.json`'s `gate` section).
pub use crate::stage::summary::Outcome;
use crate::stage::summary::{Summary, RUNNER_FIGURES};

/// What a gate condition's text should look like, said after each syntax problem.
const USAGE: &str = "a gate condition is `STAGE.FIELD OP NUMBER`, e.g. `metrics.demographic_parity_ratio >= 0.8`";

/// Why the text of a gate condition is not one (`--gate`, `[gate]`, a merge's recorded gates).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{text}`: {problem}; {USAGE}")]
pub struct ConditionSyntaxError {
    /// The text as written.
    pub text: String,
    /// What is wrong with it.
    pub problem: SyntaxProblem,
}

/// What is wrong with a gate condition's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SyntaxProblem {
    /// None of `<`, `<=`, `>`, `>=`, `==`, `!=` outside quotes.
    #[error("no comparison operator (<, <=, >, >=, ==, !=)")]
    NoOperator,
    /// A `"` opened in the figure's path is not closed.
    #[error("an unclosed `\"` in the figure's path")]
    UnclosedQuote,
    /// Two dots in a row, or a dot at an end.
    #[error("an empty field in the figure's path (two dots, or a dot at an end)")]
    EmptyField,
    /// Only a stage before the operator.
    #[error("`{0}` names no field of a stage")]
    NoField(String),
    /// The right-hand side is not a finite number, `true` or `false`.
    #[error("`{0}` is not a number")]
    NotANumber(String),
}

/// Why a condition cannot be checked against a pipeline's stages (found at validate, before any
/// stage runs).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateNameError {
    /// The pipeline has no stage of that name.
    #[error("no stage `{stage}`{hint}")]
    NoStage {
        /// The stage named.
        stage: String,
        /// " (did you mean …?)" or "".
        hint: String,
    },
    /// The stage's kind writes no figure of that name.
    #[error("stage `{stage}` ({kind}) has no figure `{field}`{hint}; a {kind} stage writes {written}")]
    NoFigure {
        /// The stage.
        stage: String,
        /// Its kind.
        kind: String,
        /// The figure named.
        field: String,
        /// " (did you mean …?)" or "".
        hint: String,
        /// The kind's figures, as `` `a`, `b` ``.
        written: String,
    },
    /// The condition ends at a figure that is not a number; what it holds and where its numbers
    /// are.
    #[error("{0}")]
    NotANumber(String),
}

/// Why a `--gate` condition cannot be added to a pipeline.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AddGateError {
    /// The pipeline has no stage of the name the condition reads.
    #[error("--gate `{condition}`: no stage `{stage}` in {file}{hint}")]
    NoStage {
        /// The condition as written.
        condition: String,
        /// The stage it reads.
        stage: String,
        /// The pipeline file, as shown.
        file: String,
        /// " (did you mean …?)" or "".
        hint: String,
    },
    /// The stage is there, but its figure is not (or is not a number).
    #[error("--gate `{condition}`: {problem}")]
    Names {
        /// The condition as written.
        condition: String,
        /// What does not read.
        problem: Box<GateNameError>,
    },
}

/// Why a condition's figure could not be read from a run as a number (the outcome's note).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FigureReadError {
    /// The run has no such stage.
    #[error("no stage `{0}` in the run")]
    NoStage(String),
    /// The stage has no figure at that path.
    #[error("stage `{stage}` has no figure `{path}`")]
    NoFigure {
        /// The stage.
        stage: String,
        /// The figure's path inside it, as far as it was found.
        path: String,
    },
    /// The figure is there but is not a number: null, text, or a list or object (with the paths
    /// of the numbers inside).
    #[error("{0}")]
    NotANumber(String),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    const ALL: [(&'static str, Op); 6] = [("<=", Op::Le), (">=", Op::Ge), ("==", Op::Eq), ("!=", Op::Ne), ("<", Op::Lt), (">", Op::Gt)];

    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// One gate condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The condition as written.
    pub text: String,
    /// The stage, then the fields inside its figures.
    pub path: Vec<String>,
    /// The comparison.
    pub op: Op,
    /// The number compared with.
    pub value: f64,
}

impl Condition {
    /// The stage the condition reads.
    pub fn stage(&self) -> &str {
        &self.path[0]
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Split `path` on dots outside double quotes.
fn segments(path: &str) -> Result<Vec<String>, SyntaxProblem> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for ch in path.chars() {
        match ch {
            '"' => quoted = !quoted,
            '.' if !quoted => out.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    if quoted {
        return Err(SyntaxProblem::UnclosedQuote);
    }
    out.push(current);
    if out.iter().any(|s| s.trim().is_empty()) {
        return Err(SyntaxProblem::EmptyField);
    }
    Ok(out.into_iter().map(|s| s.trim().to_string()).collect())
}

impl FromStr for Condition {
    type Err = ConditionSyntaxError;

    fn from_str(text: &str) -> Result<Self, ConditionSyntaxError> {
        let refuse = |problem: SyntaxProblem| ConditionSyntaxError { text: text.to_string(), problem };
        // The operator: the first one found outside quotes.
        let mut quoted = false;
        let mut found = None;
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            if bytes[i] == b'"' {
                quoted = !quoted;
            }
            if quoted {
                continue;
            }
            if let Some((sym, op)) = Op::ALL.iter().find(|(sym, _)| text[i..].starts_with(sym)) {
                found = Some((i, *sym, *op));
                break;
            }
        }
        let Some((at, sym, op)) = found else { return Err(refuse(SyntaxProblem::NoOperator)) };
        let (lhs, rhs) = (text[..at].trim(), text[at + sym.len()..].trim());
        let path = segments(lhs).map_err(refuse)?;
        if path.len() < 2 {
            return Err(refuse(SyntaxProblem::NoField(lhs.to_string())));
        }
        let value = match rhs {
            "true" => 1.0,
            "false" => 0.0,
            r => r.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| refuse(SyntaxProblem::NotANumber(r.to_string())))?,
        };
        Ok(Condition { text: text.trim().to_string(), path, op, value })
    }
}

/// What a top-level figure holds (a kind's figures struct says, through its
/// `#[derive(FigureNames)]`); a condition ending at one that is not a number is refused at
/// validate instead of failing the gate after the run.
pub use crate::stage::kind::Shape;

/// Where the numbers inside a figure that is not one are, and a key of the example, for the
/// figures whose form is known before the run: an interval's bounds for every kind, the rest as
/// the figure's kind says ([`StageFigures::numbers_inside`](crate::stage::meaning::StageFigures::numbers_inside)).
fn numbers_inside(kind: &StageKind, figure: &str) -> Option<(&'static str, &'static str)> {
    match figure {
        "ci95" | "ci95_wilson" | "ratio_band" => Some(("its bounds, `.0` (lower) and `.1` (upper)", "0")),
        _ => (kind.figures.meaning.numbers_inside)(figure),
    }
}

/// Refuse a condition that ends at a top-level figure of `kind` (whose figures are `names`) that
/// is not a number, saying what the figure holds and where its numbers are.
fn refuse_non_number(condition: &Condition, kind: &StageKind, names: &[FigureName]) -> Result<(), GateNameError> {
    let [stage, field] = condition.path.as_slice() else { return Ok(()) };
    let Some(shape) = names.iter().find(|f| f.name == field).map(|f| f.shape) else { return Ok(()) };
    let what = match shape {
        Shape::Number => return Ok(()),
        Shape::Text => return Err(GateNameError::NotANumber(format!("`{stage}.{field}` is text, not a number: a gate compares numbers"))),
        Shape::List => "a list",
        Shape::Object => "an object",
    };
    let op = Op::ALL.iter().find(|(_, o)| *o == condition.op).map_or("", |(sym, _)| *sym);
    Err(GateNameError::NotANumber(match numbers_inside(kind, field) {
        Some((inside, key)) => {
            format!("`{stage}.{field}` is {what}, not a number: it holds {inside}; e.g. `{stage}.{field}.{key} {op} {}`", condition.value)
        }
        _ if shape == Shape::List => {
            format!("`{stage}.{field}` is {what}, not a number: name one of its elements by index, `{stage}.{field}.0…` (summary.json shows them)")
        }
        _ => {
            format!("`{stage}.{field}` is {what}, not a number: name one of its fields, `{stage}.{field}.NAME…` (summary.json shows them)")
        }
    }))
}

/// Check the names `condition` reads against the pipeline's `stages` (name, kind): the stage must
/// exist, and its first field must be one of the kind's figures (or, for a kind whose plugin adds
/// figures, any name), and a number when the condition ends there. The problem, with a "did you
/// mean", otherwise (to follow "`CONDITION`: ").
pub fn check_names(condition: &Condition, stages: &[(&str, &StageKind)]) -> Result<(), GateNameError> {
    let names: Vec<&str> = stages.iter().map(|(n, _)| *n).collect();
    let Some((stage, kind)) = stages.iter().find(|(n, _)| *n == condition.stage()) else {
        return Err(GateNameError::NoStage { stage: condition.stage().to_string(), hint: crate::suggest::hint(condition.stage(), &names) });
    };
    let figures = &kind.figures;
    let field = condition.path[1].as_str();
    let names = (figures.names)();
    let known: Vec<&str> = RUNNER_FIGURES.iter().copied().chain(names.iter().map(|f| f.name)).collect();
    if known.contains(&field) || figures.open {
        return refuse_non_number(condition, kind, &names);
    }
    Err(GateNameError::NoFigure {
        stage: stage.to_string(),
        kind: kind.name.to_string(),
        field: field.to_string(),
        hint: crate::suggest::hint(field, &known),
        written: names.iter().map(|n| format!("`{}`", n.name)).collect::<Vec<_>>().join(", "),
    })
}

/// Read the figure at `path` (stage first) in `summary`.
fn figure(summary: &Summary, path: &[String]) -> Result<f64, FigureReadError> {
    let entry = summary.stages.get(&path[0]).ok_or_else(|| FigureReadError::NoStage(path[0].clone()))?;
    let entry = Value::Object(entry.to_map());
    let mut v = &entry;
    for (k, seg) in path[1..].iter().enumerate() {
        let next = match v {
            Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => v.get(seg),
        };
        v = next.ok_or_else(|| FigureReadError::NoFigure { stage: path[0].clone(), path: path[1..=k + 1].join(".") })?;
    }
    let not_a_number = |what: &str| FigureReadError::NotANumber(what.to_string());
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| not_a_number("not a number")),
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        Value::Null => Err(not_a_number("null (undefined for this run)")),
        Value::String(_) => Err(not_a_number("not a number but text")),
        other => {
            let mut numbers = Vec::new();
            let shown: Vec<String> = path
                .iter()
                .map(|k| if k.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') { k.clone() } else { format!("\"{k}\"") })
                .collect();
            numbers_in(other, &shown.join("."), &mut numbers);
            let what = if other.is_object() { "an object" } else { "a list" };
            Err(FigureReadError::NotANumber(match numbers.len() {
                0 => format!("not a number but {what} holding no number"),
                n if n > 8 => format!("not a number but {what}; its numbers: {}, … ({n} in all)", numbers[..8].join(", ")),
                _ => format!("not a number but {what}; its numbers: {}", numbers.join(", ")),
            }))
        }
    }
}

/// The paths (from `at`) of the numbers inside `value`, `"quoted"` where a key is not a plain word.
fn numbers_in(value: &Value, at: &str, out: &mut Vec<String>) {
    match value {
        Value::Number(_) => out.push(at.to_string()),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| numbers_in(v, &format!("{at}.{i}"), out)),
        Value::Object(map) => {
            for (k, v) in map {
                let plain = k.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-');
                numbers_in(v, &if plain { format!("{at}.{k}") } else { format!("{at}.\"{k}\"") }, out);
            }
        }
        _ => {}
    }
}

/// Check every condition against `summary`.
pub fn evaluate(conditions: &[Condition], summary: &Summary) -> Vec<Outcome> {
    conditions
        .iter()
        .map(|c| match figure(summary, &c.path) {
            Ok(v) => Outcome { condition: c.text.clone(), value: Some(v), passed: c.op.holds(v, c.value), note: None },
            Err(note) => Outcome { condition: c.text.clone(), value: None, passed: false, note: Some(note.to_string()) },
        })
        .collect()
}

/// A plain-text table of the outcomes, one condition a line, for the terminal.
pub fn table(outcomes: &[Outcome]) -> String {
    let width = outcomes.iter().map(|o| o.condition.chars().count()).max().unwrap_or(9).max(9);
    let mut s = format!("{:<width$}  {:>12}  result\n", "condition", "value");
    for o in outcomes {
        let value = o.value.map(|v| format!("{v:.6}")).unwrap_or_else(|| "—".into());
        let result =
            if o.passed { "pass".to_string() } else { format!("FAIL{}", o.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()) };
        s.push_str(&format!("{:<width$}  {:>12}  {result}\n", o.condition, value));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn summary() -> Summary {
        Summary::from_json(&json!({"pipeline": "p", "seed": 1, "stage_order": ["metrics", "verify", "groups"], "stages": {
            "metrics": {"kind": "group_metrics", "demographic_parity_ratio": 0.75, "parity": {"sex × race": {"equalized_odds_difference": 0.1}}, "rate": null},
            "verify": {"kind": "verify", "discriminatory": 0, "ok": true},
            "groups": {"kind": "group_score", "rules": [{"score": 0.3}]}
        }}))
        .unwrap()
    }

    fn check(text: &str) -> Outcome {
        evaluate(&[text.parse().unwrap()], &summary()).remove(0)
    }

    #[test]
    fn conditions_compare_figures_by_path() {
        assert!(!check("metrics.demographic_parity_ratio >= 0.8").passed);
        assert_eq!(check("metrics.demographic_parity_ratio >= 0.8").value, Some(0.75));
        assert!(check("metrics.demographic_parity_ratio<0.8").passed);
        assert!(check("verify.discriminatory == 0").passed);
        assert!(check("verify.ok == true").passed);
        assert!(check("metrics.parity.\"sex × race\".equalized_odds_difference <= 0.1").passed);
        assert!(check("groups.rules.0.score != 0.2").passed);
    }

    #[test]
    fn missing_and_null_figures_fail_with_a_reason() {
        let o = check("metrics.rate <= 0.1");
        assert!(!o.passed && o.value.is_none());
        assert!(o.note.unwrap().contains("null"));
        assert!(check("estimate.rate <= 0.1").note.unwrap().contains("no stage `estimate`"));
        assert!(check("metrics.parity.sex.x <= 0.1").note.unwrap().contains("no figure `parity.sex`"));
    }

    #[test]
    fn malformed_conditions_say_what_is_expected() {
        for (bad, says) in [
            ("metrics.ratio 0.8", "no comparison operator"),
            ("metrics >= 0.8", "names no field"),
            ("metrics.ratio >= high", "`high` is not a number"),
            ("metrics..ratio >= 1", "empty field"),
        ] {
            let e = bad.parse::<Condition>().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("STAGE.FIELD OP NUMBER"), "{bad}: {e}");
        }
    }

    #[test]
    fn names_are_checked_against_the_stages_and_their_kinds_figures() {
        use crate::stages;
        let stages = [("metrics", &stages::group_metrics::KIND), ("search", &stages::generate::KIND), ("model", &stages::load_model::KIND)];
        let check = |text: &str| check_names(&text.parse().unwrap(), &stages).map_err(|e| e.to_string());
        assert!(check("metrics.demographic_parity_ratio >= 0.8").is_ok());
        assert!(check("metrics.parity.\"sex × race\".equalized_odds_difference <= 0.1").is_ok());
        assert!(check("metrics.elapsed_s < 60").is_ok(), "the runner's figures");
        assert!(check("model.agreement.auc > 0.5").is_ok());
        assert!(check("search.coverage > 0.5").is_ok(), "a plugin may add figures to generate");
        let e = check("metrics.demographic_parity_ration >= 0.8").unwrap_err();
        assert!(
            e.starts_with(
                "stage `metrics` (group_metrics) has no figure `demographic_parity_ration` (did you mean `demographic_parity_ratio`?)"
            ),
            "{e}"
        );
        let e = check("metricz.rows > 0").unwrap_err();
        assert_eq!(e, "no stage `metricz` (did you mean `metrics`?)");
    }

    #[test]
    fn a_condition_ending_at_a_figure_that_is_not_a_number_is_refused_naming_the_numbers_inside() {
        use crate::stages;
        let stages =
            [("metrics", &stages::group_metrics::KIND), ("estimate", &stages::estimate::KIND), ("model", &stages::load_model::KIND)];
        let check = |text: &str| check_names(&text.parse().unwrap(), &stages).map_err(|e| e.to_string());
        let e = check("metrics.min_impact_ratio >= 0.8").unwrap_err();
        assert!(
            e.starts_with("`metrics.min_impact_ratio` is an object, not a number: it holds one number per set of protected attributes"),
            "{e}"
        );
        assert!(e.contains("`min_impact_ratio.sex`") && e.ends_with("e.g. `metrics.min_impact_ratio.sex >= 0.8`"), "{e}");
        assert!(check("metrics.min_impact_ratio.sex >= 0.8").is_ok());
        let e = check("estimate.ci95 < 0.1").unwrap_err();
        assert!(e.contains("is a list, not a number") && e.ends_with("e.g. `estimate.ci95.0 < 0.1`"), "{e}");
        assert!(check("estimate.ci95.1 < 0.1").is_ok());
        let e = check("model.executor == 1").unwrap_err();
        assert_eq!(e, "`model.executor` is text, not a number: a gate compares numbers");
        let e = check("metrics.groups > 0").unwrap_err();
        assert!(e.contains("name one of its elements by index, `metrics.groups.0…`"), "{e}");
        // Found deeper at run time, the note lists the numbers it holds.
        let summary = Summary::from_json(&json!({"pipeline": "p", "seed": 1, "stage_order": ["metrics"], "stages": {
            "metrics": {"kind": "group_metrics", "parity": {"sex × race": {"ratio": 0.5, "note": "x"}, "sex": {"ratio": 0.9}}}
        }}))
        .unwrap();
        let outcome = evaluate(&["metrics.parity >= 0.8".parse().unwrap()], &summary).remove(0);
        assert_eq!(
            outcome.note.as_deref(),
            Some("not a number but an object; its numbers: metrics.parity.sex.ratio, metrics.parity.\"sex × race\".ratio")
        );
    }

    #[test]
    fn the_table_lists_every_condition_with_its_value() {
        let outcomes = evaluate(&["verify.discriminatory == 0".parse().unwrap(), "metrics.rate <= 1".parse().unwrap()], &summary());
        let t = table(&outcomes);
        assert!(t.contains("verify.discriminatory == 0") && t.contains("pass"));
        assert!(t.contains("FAIL (null"));
        assert!(!crate::stage::summary::GateSection::new(outcomes).passed);
    }
}
