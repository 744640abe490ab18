//! The "Each model, measured the same way" table: each model (trained, loaded, retrained) beside
//! the others on the measurements taken of more than one of them.

use serde::Serialize;

use super::Stages;
use crate::stage::meaning::Measurement;
use crate::stages::model_output::ModelFigures;

/// The "Each model, measured the same way" table: a column per measurement, a row per model.
#[derive(Serialize)]
pub(super) struct Comparison {
    families: Vec<String>,
    rows: Vec<ComparedModel>,
}

/// A model's row of the [`Comparison`]: its test accuracy and its value of each measurement.
#[derive(Serialize)]
pub(super) struct ComparedModel {
    model: String,
    accuracy: f64,
    values: Vec<String>,
}

/// Each model (trained, loaded, retrained) beside the others, measured the same way: the same
/// estimate, the same generator from the same seeds, the same group scoring (each stage's kind
/// says what it measured, `StageFigures::measurement`). None when no
/// measurement was taken of more than one model.
pub(super) fn comparison(models: &[(String, ModelFigures)], stages: &Stages<'_>) -> Option<Comparison> {
    let mut families: Vec<String> = Vec::new();
    let mut cells: Vec<(String, String, String)> = Vec::new();
    for at in stages.in_run() {
        if let Some(Measurement { model, family, value }) = (at.meaning().measurement)(&at) {
            if !families.contains(&family) {
                families.push(family.clone());
            }
            cells.push((model, family, value));
        }
    }
    // Only measurements taken of more than one model compare anything.
    families
        .retain(|fam| cells.iter().filter(|(_, f, _)| f == fam).map(|(m, _, _)| m).collect::<std::collections::BTreeSet<_>>().len() > 1);
    if families.is_empty() {
        return None;
    }
    let rows = models
        .iter()
        .map(|(m, f)| ComparedModel {
            model: m.clone(),
            accuracy: f.accuracy_test,
            values: families
                .iter()
                .map(|fam| {
                    let values: Vec<&str> = cells.iter().filter(|(cm, cf, _)| cm == m && cf == fam).map(|(_, _, v)| v.as_str()).collect();
                    if values.is_empty() {
                        "—".to_string()
                    } else {
                        values.join("; ")
                    }
                })
                .collect(),
        })
        .collect();
    Some(Comparison { families, rows })
}
