//! What the terminal prints of a run's stages, as each stage's kind says it: the figures on a
//! stage's line ([`StageFigures::HEADLINE`](crate::stage::meaning::StageFigures::HEADLINE)) and
//! the line under it ([`StageFigures::model_line`](crate::stage::meaning::StageFigures::model_line)):
//! a model stage's executor and favourable class.

use serde_json::Value;

use crate::stage::meaning::InRun;
use crate::stage::summary::{StageSummary, Summary};

/// The figures of `entry` its kind shows on the stage's line, as `name value` (a fraction to 4
/// decimals, an interval as `[lo, hi]`), those the run does not have left out.
pub fn headline(entry: &StageSummary) -> Vec<String> {
    let figures = entry.figures.to_map();
    let shown = |v: &Value| match v {
        Value::Number(n) if n.is_f64() => format!("{:.4}", n.as_f64().unwrap_or(0.0)),
        Value::Array(a) => {
            format!("[{}]", a.iter().map(|x| x.as_f64().map(|f| format!("{f:.4}")).unwrap_or_default()).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    };
    (crate::stages::meaning(&entry.kind).headline)
        .iter()
        .filter_map(|name| figures.get(*name).map(|v| format!("{name} {}", shown(v))))
        .collect()
}

/// The line printed under stage `stage` of `summary`, if its kind has one.
pub fn model_line(summary: &Summary, stage: &str) -> Option<String> {
    let at = InRun::named(summary, stage, crate::stages::meaning)?;
    (at.meaning().model_line)(&at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A run's summary with a load stage, a model stage of `model` figures and a metrics stage.
    fn summary(model: serde_json::Value) -> Summary {
        let mut stage = json!({"kind": "load_model", "elapsed_s": 0.1, "model_queries": 0, "inputs": {"data": "data"},
            "accuracy_train": 0.8, "accuracy_test": 0.8, "correct_test": 8, "total_test": 10});
        for (k, v) in model.as_object().unwrap() {
            stage[k] = v.clone();
        }
        Summary::from_json(&json!({"pipeline": "p", "seed": 1, "stage_order": ["data", "model", "metrics"], "stages": {
            "data": {"kind": "load", "elapsed_s": 0.1, "model_queries": 0, "inputs": {}, "rows": 10, "rows_train": 5, "rows_val": 0,
                "rows_test": 5, "dropped_rows": 0, "features": 3, "protected": ["sex"], "domain": [],
                "label": {"column": "income", "values": ["<=50K", ">50K"], "favourable": ">50K", "favourable_share": 0.3}},
            "model": stage,
            "metrics": {"kind": "group_metrics", "elapsed_s": 0.1, "model_queries": 0, "inputs": {"model": "model"}}
        }}))
        .unwrap()
    }

    #[test]
    fn a_model_stage_names_its_executor_and_favourable_class() {
        let run = summary(
            json!({"executor": "native dense (12-32-16-1)", "model": "m.onnx", "output_read": "column 1", "favourable_class_assumed": true}),
        );
        let line = model_line(&run, "model").unwrap();
        assert!(line.starts_with("runs on: native dense (12-32-16-1); favourable: \">50K\", read as column 1 (assumed:"), "{line}");
        assert_eq!(model_line(&run, "metrics"), None);
        assert_eq!(model_line(&run, "data"), None);
        // A model without an ONNX executor: the model itself, as described.
        let served = summary(json!({"model": "V2 model `m` at http://localhost:8080", "output_read": "output `p`"}));
        let line = model_line(&served, "model").unwrap();
        assert_eq!(line, "runs on: V2 model `m` at http://localhost:8080; favourable: \">50K\", read as output `p`");
    }
}
