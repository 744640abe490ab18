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
//! let summary = serde_json::json!({"stages": {"estimate": {"rate": 0.01}}});
//! let outcomes = evaluate(&[c], &summary);
//! assert!(outcomes[0].passed);
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
fn segments(path: &str) -> Result<Vec<String>, String> {
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
        return Err("an unclosed `\"` in the figure's path".into());
    }
    out.push(current);
    if out.iter().any(|s| s.trim().is_empty()) {
        return Err("an empty field in the figure's path (two dots, or a dot at an end)".into());
    }
    Ok(out.into_iter().map(|s| s.trim().to_string()).collect())
}

impl FromStr for Condition {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = "a gate condition is `STAGE.FIELD OP NUMBER`, e.g. `metrics.demographic_parity_ratio >= 0.8`";
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
        let Some((at, sym, op)) = found else { return Err(format!("`{text}`: no comparison operator (<, <=, >, >=, ==, !=); {usage}")) };
        let (lhs, rhs) = (text[..at].trim(), text[at + sym.len()..].trim());
        let path = segments(lhs).map_err(|e| format!("`{text}`: {e}; {usage}"))?;
        if path.len() < 2 {
            return Err(format!("`{text}`: `{lhs}` names no field of a stage; {usage}"));
        }
        let value = match rhs {
            "true" => 1.0,
            "false" => 0.0,
            r => r.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| format!("`{text}`: `{r}` is not a number; {usage}"))?,
        };
        Ok(Condition { text: text.trim().to_string(), path, op, value })
    }
}

/// The figures the runner writes into every stage's entry.
const RUNNER_FIGURES: [&str; 5] = ["kind", "elapsed_s", "model_queries", "inputs", "warnings"];

/// The top-level figures of one stage kind's entry in `summary.json` (its figures struct's
/// serialized fields, flattened ones included; a test holds the list against the struct).
#[derive(Debug, Clone, Copy)]
pub struct KindFigures {
    /// The stage kind.
    pub kind: &'static str,
    /// Whether a plugin adds figures of its own (so a name outside `names` may exist).
    pub open: bool,
    /// The figures the kind writes.
    pub names: &'static [&'static str],
}

/// Every stage kind's figures.
pub const KIND_FIGURES: &[KindFigures] = &[
    KindFigures { kind: "check", open: false, names: &["checked", "discriminatory", "rate", "ci95"] },
    KindFigures {
        kind: "check_text",
        open: false,
        names: &[
            "counterfactuals",
            "checked",
            "texts_with_terms",
            "swaps",
            "discriminatory_swaps",
            "discriminatory",
            "rate",
            "per_category",
            "texts_scored",
        ],
    },
    KindFigures { kind: "cluster", open: false, names: &["clusters", "cluster_sizes", "seeds"] },
    KindFigures {
        kind: "estimate",
        open: false,
        names: &["rate", "ci95", "ci95_wilson", "samples", "trials", "per_trial", "discriminatory", "variants_per_input"],
    },
    KindFigures {
        kind: "generate",
        open: true,
        names: &[
            "plugin",
            "params",
            "seed_source",
            "generated",
            "emitted",
            "run_elapsed_s",
            "model_time_s",
            "model_time_share",
            "queries_asked",
            "rows_scored",
            "cache_hits",
            "cache",
            "gradient",
            "gradient_rows",
            "gradient_model_rows",
            "stopped_by",
            "units",
            "duplicates_dropped",
            "unit_figures",
        ],
    },
    KindFigures {
        kind: "group_metrics",
        open: false,
        names: &[
            "rows",
            "selection_rate",
            "min_impact_ratio",
            "below_threshold",
            "groups",
            "threshold",
            "min_share",
            "decision_threshold",
            "selection",
            "probabilities",
            "reference",
            "ratio_band",
            "min_count",
            "alpha",
            "tests",
            "significant_groups",
            "parity",
            "parity_min_count",
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "equalized_odds_difference",
            "equalized_odds_ratio",
            "equal_opportunity_difference",
            "equal_opportunity_ratio",
            "predictive_parity_difference",
        ],
    },
    KindFigures {
        kind: "group_score",
        open: true,
        names: &[
            "plugin",
            "params",
            "run_elapsed_s",
            "groups",
            "top",
            "rules",
            "worst_score",
            "significant_rule_sets",
            "alpha",
            "stopped_by",
        ],
    },
    KindFigures {
        kind: "group_score_text",
        open: false,
        names: &[
            "rule_sets_kept",
            "rule_sets_per_second",
            "texts_scored",
            "worst_score",
            "leaders_reestimated",
            "significant_rule_sets",
            "alpha",
            "top",
        ],
    },
    KindFigures {
        kind: "load",
        open: false,
        names: &["rows", "rows_train", "rows_val", "rows_test", "dropped_rows", "features", "protected", "label", "domain"],
    },
    KindFigures {
        kind: "load_model",
        open: false,
        names: &[
            "algorithm",
            "output",
            "output_read",
            "labels_only",
            "favourable_class_assumed",
            "input_contract",
            "agreement",
            "unused_features",
            "native_checked_rows",
            "native_max_abs_diff",
            "native_label_flips",
            "executor",
            "executor_reason",
            "reference_check",
            "reference_checked_rows",
            "reference_max_abs_diff",
            "onnxruntime_path",
            "remote_inputs",
            "remote",
            "model",
            "accuracy_train",
            "accuracy_test",
            "correct_test",
            "total_test",
        ],
    },
    KindFigures {
        kind: "load_text",
        open: false,
        names: &[
            "rows",
            "rows_train",
            "rows_test",
            "dropped_rows",
            "label",
            "label_values",
            "class_1_share",
            "terms",
            "texts_per_category",
            "texts_per_term",
            "texts_with_terms",
        ],
    },
    KindFigures {
        kind: "load_text_model",
        open: false,
        names: &["model", "output_read", "accuracy_train", "accuracy_test", "correct_test", "total_test"],
    },
    KindFigures { kind: "predict", open: false, names: &["rows", "predicted_favourable", "mean_probability"] },
    KindFigures {
        kind: "retrain",
        open: false,
        names: &[
            "strategy",
            "measure",
            "label",
            "group",
            "select",
            "algorithm",
            "samples_available",
            "idis_available",
            "idis_unique_projections",
            "rounds",
            "added",
            "before",
            "after",
            "rate_reduction",
            "rate_before",
            "rate_after",
            "idis_before",
            "idis_after",
            "accuracy_before",
            "accuracy_after",
            "accuracy_change",
            "model",
            "accuracy_train",
            "accuracy_test",
            "correct_test",
            "total_test",
        ],
    },
    KindFigures {
        kind: "retrain_text",
        open: false,
        names: &[
            "strategy",
            "measure",
            "model",
            "group",
            "over_given",
            "label",
            "samples_available",
            "rounds",
            "added",
            "before",
            "after",
            "rate_reduction",
            "rate_before",
            "rate_after",
            "idis_before",
            "idis_after",
            "accuracy_before",
            "accuracy_after",
            "accuracy_change",
            "accuracy_train",
            "texts_scored",
        ],
    },
    KindFigures {
        kind: "train",
        open: false,
        names: &["train_elapsed_s", "saved", "model", "accuracy_train", "accuracy_test", "correct_test", "total_test"],
    },
    KindFigures {
        kind: "train_text",
        open: false,
        names: &[
            "model",
            "trained_on",
            "vocabulary",
            "iterations",
            "converged_to",
            "accuracy_train",
            "accuracy_test",
            "correct_test",
            "total_test",
        ],
    },
    KindFigures {
        kind: "verify",
        open: false,
        names: &[
            "checked",
            "confirmed",
            "rejected",
            "discriminatory",
            "discriminatory_full",
            "generated",
            "success_rate",
            "success_rate_projection",
            "search_queries",
            "search_elapsed_s",
            "per_second",
            "idis_over_time_s",
            "time_to_1000_idis_s",
        ],
    },
];

/// The figures of stage kind `kind` (`None` for a kind this table does not know).
pub fn kind_figures(kind: &str) -> Option<&'static KindFigures> {
    KIND_FIGURES.iter().find(|k| k.kind == kind)
}

/// Check the names `condition` reads against the pipeline's `stages` (name, kind): the stage must
/// exist, and its first field must be one of the kind's figures (or, for a kind whose plugin adds
/// figures, any name). The problem, with a "did you mean", otherwise (to follow "`CONDITION`: ").
pub fn check_names(condition: &Condition, stages: &[(&str, &str)]) -> Result<(), String> {
    let names: Vec<&str> = stages.iter().map(|(n, _)| *n).collect();
    let Some((stage, kind)) = stages.iter().find(|(n, _)| *n == condition.stage()) else {
        return Err(format!("no stage `{}`{}", condition.stage(), crate::suggest::hint(condition.stage(), &names)));
    };
    let Some(figures) = kind_figures(kind) else { return Ok(()) };
    let field = condition.path[1].as_str();
    let known: Vec<&str> = RUNNER_FIGURES.iter().chain(figures.names).copied().collect();
    if known.contains(&field) || figures.open {
        return Ok(());
    }
    let hint = crate::suggest::hint(field, &known);
    Err(format!(
        "stage `{stage}` ({kind}) has no figure `{field}`{hint}; a {kind} stage writes {}",
        figures.names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    ))
}

/// A condition checked against a run's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The condition as written.
    pub condition: String,
    /// The figure's value (`None`: missing or not a number).
    pub value: Option<f64>,
    /// Whether the condition holds.
    pub passed: bool,
    /// Why there is no value, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Read the figure at `path` (stage first) in `summary`.
fn figure(summary: &Value, path: &[String]) -> Result<f64, String> {
    let mut v = summary["stages"].get(&path[0]).ok_or_else(|| format!("no stage `{}` in the run", path[0]))?;
    for (k, seg) in path[1..].iter().enumerate() {
        let next = match v {
            Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => v.get(seg),
        };
        v = next.ok_or_else(|| format!("stage `{}` has no figure `{}`", path[0], path[1..=k + 1].join(".")))?;
    }
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| "not a number".into()),
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        Value::Null => Err("null (undefined for this run)".into()),
        other => Err(format!("not a number but {}", if other.is_object() { "an object" } else { "a list or text" })),
    }
}

/// Check every condition against `summary`.
pub fn evaluate(conditions: &[Condition], summary: &Value) -> Vec<Outcome> {
    conditions
        .iter()
        .map(|c| match figure(summary, &c.path) {
            Ok(v) => Outcome { condition: c.text.clone(), value: Some(v), passed: c.op.holds(v, c.value), note: None },
            Err(note) => Outcome { condition: c.text.clone(), value: None, passed: false, note: Some(note) },
        })
        .collect()
}

/// The `gate` section of `summary.json`: `passed` and every condition with its value.
pub fn section(outcomes: &[Outcome]) -> Value {
    json!({ "passed": outcomes.iter().all(|o| o.passed), "conditions": outcomes })
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

    fn summary() -> Value {
        json!({"stages": {
            "metrics": {"demographic_parity_ratio": 0.75, "parity": {"sex × race": {"equalized_odds_difference": 0.1}}, "rate": null},
            "verify": {"discriminatory": 0, "ok": true},
            "groups": {"rules": [{"score": 0.3}]}
        }})
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
            let e = bad.parse::<Condition>().unwrap_err();
            assert!(e.contains(says) && e.contains("STAGE.FIELD OP NUMBER"), "{bad}: {e}");
        }
    }

    #[test]
    fn names_are_checked_against_the_stages_and_their_kinds_figures() {
        let stages = [("metrics", "group_metrics"), ("search", "generate"), ("model", "load_model")];
        let check = |text: &str| check_names(&text.parse().unwrap(), &stages);
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

    /// The fields a figures struct serializes at its top level, read from the source: `pub` fields,
    /// flattened structs recursed into; `true` when a flattened map lets a plugin add names.
    fn struct_fields(source: &str, name: &str) -> (Vec<String>, bool) {
        let start = source.find(&format!("pub struct {name} {{")).unwrap_or_else(|| panic!("no struct {name}"));
        let body = &source[start..];
        let body = &body[..body.find("\n}").unwrap()];
        let (mut fields, mut open, mut flatten) = (Vec::new(), false, false);
        for line in body.lines().skip(1).map(str::trim) {
            if line.starts_with("#[") {
                flatten |= line.contains("flatten");
                continue;
            }
            let Some(rest) = line.strip_prefix("pub ") else { continue };
            let (field, ty) = rest.split_once(": ").unwrap();
            let ty = ty.trim_end_matches(',');
            if std::mem::take(&mut flatten) {
                if ty.contains("Map<") {
                    open = true;
                } else {
                    let (inner, inner_open) = struct_fields(source, ty);
                    fields.extend(inner);
                    open |= inner_open;
                }
            } else {
                fields.push(field.to_string());
            }
        }
        (fields, open)
    }

    #[test]
    fn every_kind_lists_exactly_the_figures_its_struct_writes() {
        let source = [
            include_str!("stages/check.rs"),
            include_str!("stages/check_text.rs"),
            include_str!("stages/cluster.rs"),
            include_str!("stages/estimate.rs"),
            include_str!("stages/generate.rs"),
            include_str!("stages/group_metrics.rs"),
            include_str!("stages/group_score.rs"),
            include_str!("stages/group_score_text.rs"),
            include_str!("stages/load.rs"),
            include_str!("stages/load_model.rs"),
            include_str!("stages/load_text.rs"),
            include_str!("stages/load_text_model.rs"),
            include_str!("stages/predict.rs"),
            include_str!("stages/retrain.rs"),
            include_str!("stages/retrain_text.rs"),
            include_str!("stages/train.rs"),
            include_str!("stages/train_text.rs"),
            include_str!("stages/verify.rs"),
            include_str!("stages/model_output.rs"),
            include_str!("fairness.rs"),
        ]
        .join("\n");
        for (kind, figures_struct) in [
            ("check", "CheckFigures"),
            ("check_text", "CheckTextFigures"),
            ("cluster", "ClusterFigures"),
            ("estimate", "EstimateFigures"),
            ("generate", "GenerateFigures"),
            ("group_metrics", "GroupMetricsFigures"),
            ("group_score", "GroupScoreFigures"),
            ("group_score_text", "GroupScoreTextFigures"),
            ("load", "LoadFigures"),
            ("load_model", "LoadModelFigures"),
            ("load_text", "LoadTextFigures"),
            ("load_text_model", "LoadTextModelFigures"),
            ("predict", "PredictFigures"),
            ("retrain", "RetrainFigures"),
            ("retrain_text", "RetrainTextFigures"),
            ("train", "TrainFigures"),
            ("train_text", "TrainTextFigures"),
            ("verify", "VerifyFigures"),
        ] {
            let (fields, open) = struct_fields(&source, figures_struct);
            let listed = kind_figures(kind).unwrap_or_else(|| panic!("KIND_FIGURES lacks {kind}"));
            assert_eq!(listed.names, fields, "{kind}: KIND_FIGURES against {figures_struct}'s fields");
            assert_eq!(listed.open, open, "{kind}: whether a plugin adds figures");
        }
        for kind in crate::run::registry::STAGE_KINDS {
            assert!(kind_figures(kind.name).is_some(), "KIND_FIGURES lacks the kind {}", kind.name);
        }
    }

    #[test]
    fn the_table_lists_every_condition_with_its_value() {
        let outcomes = evaluate(&["verify.discriminatory == 0".parse().unwrap(), "metrics.rate <= 1".parse().unwrap()], &summary());
        let t = table(&outcomes);
        assert!(t.contains("verify.discriminatory == 0") && t.contains("pass"));
        assert!(t.contains("FAIL (null"));
        assert_eq!(section(&outcomes)["passed"], json!(false));
    }
}
