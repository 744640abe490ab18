//! The line `fairpipe run` prints under a `load_model` stage's figures: what ran the model (the
//! ONNX executor chosen, or the model itself: a server, a program, a model in process) and which
//! of its classes was taken as the data's favourable label, and how.

use serde_json::Value;

/// The line for the stage entry `figures` of `summary` (`summary.json` as JSON), when it is a
/// `load_model` stage: `runs on: native dense …; favourable: ">50K", read as column 1`, with
/// a note when the favourable class was assumed (numbered classes, no class named like the label).
pub fn model_line(summary: &Value, figures: &Value) -> Option<String> {
    if figures["kind"] != "load_model" {
        return None;
    }
    let runs_on = figures["executor"].as_str().or_else(|| figures["model"].as_str())?;
    let order = summary["stage_order"].as_array().into_iter().flatten().filter_map(Value::as_str);
    let favourable =
        order.filter_map(|name| summary["stages"].get(name)).find(|f| f["kind"] == "load").and_then(|f| f["label"]["favourable"].as_str());
    let mut line = format!("runs on: {runs_on}");
    match (favourable, figures["output_read"].as_str()) {
        (Some(label), Some(read)) => line.push_str(&format!("; favourable: {label:?}, read as {read}")),
        (Some(label), None) => line.push_str(&format!("; favourable: {label:?}")),
        (None, Some(read)) => line.push_str(&format!("; P(favourable) read as {read}")),
        (None, None) => {}
    }
    if figures["favourable_class_assumed"] == true {
        line.push_str(" (assumed: no class of the model is named like the label; `favourable_class` chooses another)");
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_model_stage_names_its_executor_and_favourable_class() {
        let summary = json!({"stage_order": ["data", "model", "metrics"], "stages": {
            "data": {"kind": "load", "label": {"favourable": ">50K"}},
            "model": {"kind": "load_model", "executor": "native dense (12-32-16-1)", "model": "m.onnx", "output_read": "column 1", "favourable_class_assumed": true},
            "metrics": {"kind": "group_metrics"}
        }});
        let line = model_line(&summary, &summary["stages"]["model"]).unwrap();
        assert!(line.starts_with("runs on: native dense (12-32-16-1); favourable: \">50K\", read as column 1 (assumed:"), "{line}");
        assert_eq!(model_line(&summary, &summary["stages"]["metrics"]), None);
        // A model without an ONNX executor: the model itself, as described.
        let served = json!({"kind": "load_model", "model": "V2 model `m` at http://localhost:8080", "output_read": "output `p`"});
        let line = model_line(&summary, &served).unwrap();
        assert_eq!(line, "runs on: V2 model `m` at http://localhost:8080; favourable: \">50K\", read as output `p`");
    }
}
