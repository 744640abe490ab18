//! fairpipe's group metrics against Fairlearn's on the same fixed predictions: the predictions of
//! a logistic regression on the bundled COMPAS and census test splits, and Fairlearn 0.15's
//! `MetricFrame` and parity summaries on them, both written by `scripts/fairlearn_reference.py`
//! (which CI does not run). Every figure must agree to 1e-9.

use std::collections::BTreeMap;

use fairpipe_core::fairness::{parity, Confusion, Metric};
use serde_json::Value;

use crate::common;

/// The rows of a fixture CSV: sensitive columns by name, then y_true and y_pred.
struct Fixed {
    columns: BTreeMap<String, Vec<String>>,
    y_true: Vec<bool>,
    y_pred: Vec<bool>,
}

fn read(name: &str) -> Fixed {
    let path = common::root().join(format!("tests/fixtures/fairlearn/{name}_predictions.csv"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); header.len()];
    for line in lines {
        for (k, v) in line.split(',').enumerate() {
            cells[k].push(v.to_string());
        }
    }
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap_or_else(|| panic!("{name}: no column {n}"));
    let flag = |n: &str| cells[col(n)].iter().map(|v| v == "1").collect::<Vec<bool>>();
    let (y_true, y_pred) = (flag("y_true"), flag("y_pred"));
    let columns = header
        .iter()
        .enumerate()
        .filter(|(_, h)| !["y_true", "y_pred", "score"].contains(h))
        .map(|(k, h)| (h.to_string(), cells[k].clone()))
        .collect();
    Fixed { columns, y_true, y_pred }
}

/// Confusion counts per group of attribute set `attrs` (" × "-joined names, as Fairlearn's tuples
/// are written by the script).
fn confusion_by_group(f: &Fixed, attrs: &[&str]) -> BTreeMap<String, Confusion> {
    let mut out: BTreeMap<String, Confusion> = BTreeMap::new();
    for i in 0..f.y_true.len() {
        let key = attrs.iter().map(|a| f.columns[*a][i].as_str()).collect::<Vec<_>>().join(" × ");
        out.entry(key).or_default().add(f.y_true[i], f.y_pred[i]);
    }
    out
}

fn close(what: &str, ours: f64, theirs: f64) {
    assert!((ours - theirs).abs() <= 1e-9, "{what}: fairpipe {ours} vs Fairlearn {theirs}");
}

fn check_dataset(name: &str) {
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(common::root().join("tests/fixtures/fairlearn/reference.json")).unwrap()).unwrap();
    let fixed = read(name);
    let sets = reference[name].as_object().expect("the data set's attribute sets");
    assert_eq!(sets.len(), 4, "three attributes and one intersection");
    for (set, theirs) in sets {
        let attrs: Vec<&str> = set.split(" × ").collect();
        let groups = confusion_by_group(&fixed, &attrs);
        let by_group = theirs["by_group"].as_object().unwrap();
        assert_eq!(groups.keys().collect::<Vec<_>>(), by_group.keys().collect::<Vec<_>>(), "{name} {set}: the same groups");
        for (g, c) in &groups {
            let t = &by_group[g];
            let what = |m: &str| format!("{name} {set} {g} {m}");
            close(&what("count"), c.count() as f64, t["count"].as_f64().unwrap());
            close(&what("selection_rate"), c.rate(Metric::SelectionRate), t["selection_rate"].as_f64().unwrap());
            close(&what("tpr"), c.rate(Metric::Tpr), t["tpr"].as_f64().unwrap());
            close(&what("fpr"), c.rate(Metric::Fpr), t["fpr"].as_f64().unwrap());
            close(&what("ppv"), c.rate(Metric::Ppv), t["ppv"].as_f64().unwrap());
        }
        let ours = serde_json::to_value(parity(&groups.values().copied().collect::<Vec<_>>())).unwrap();
        for summary in [
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "equalized_odds_difference",
            "equalized_odds_ratio",
            "equal_opportunity_difference",
            "equal_opportunity_ratio",
            "predictive_parity_difference",
        ] {
            close(&format!("{name} {set} {summary}"), ours[summary].as_f64().unwrap(), theirs[summary].as_f64().unwrap());
        }
    }
}

#[test]
fn compas_parity_summaries_equal_fairlearns() {
    check_dataset("compas");
}

#[test]
fn census_parity_summaries_equal_fairlearns() {
    check_dataset("census");
}
