//! The "Each model, measured the same way" table: each model (trained, loaded, retrained) beside
//! the others on the measurements taken of more than one of them.

use serde::Serialize;

use super::{count, numf, pctf, Head, Stages};
use crate::stage::summary::StageSummary;
use crate::stages::estimate::EstimateFigures;
use crate::stages::generate::GenerateFigures;
use crate::stages::group_score::GroupScoreFigures;
use crate::stages::model_output::ModelFigures;
use crate::stages::verify::VerifyFigures;

/// One measurement of a model: the model, the family it belongs to (the same measurement taken of
/// another model has the same family) and its value.
pub(super) fn measurement(stages: &Stages<'_>, head: &Head, f: &StageSummary) -> Option<(String, String, String)> {
    let model = |head: &Head| head.inputs.get("model").cloned();
    match head.kind.as_str() {
        "estimate" => {
            let e = f.figures::<EstimateFigures>().ok()?;
            Some((
                model(head)?,
                format!("estimated rate ({} inputs)", count(e.samples as u64)),
                format!("{} [{}, {}]", pctf(e.rate), pctf(e.ci95[0]), pctf(e.ci95[1])),
            ))
        }
        "verify" => {
            let v = f.figures::<VerifyFigures>().ok()?;
            let (_, source_head, source) = stages.get(head.inputs.get("cases")?)?;
            // The cases come from a generate stage (or a check stage, which has no plugin).
            let g = source.figures::<GenerateFigures>().ok();
            let plugin = g.as_ref().map(|g| g.plugin.as_str()).unwrap_or("?").split(' ').next().unwrap_or("?").to_string();
            let seed_source = g.as_ref().map_or_else(|| "—".to_string(), |g| g.seed_source.clone());
            let params = g.as_ref().map(|g| g.params.to_string()).unwrap_or_else(|| "null".into());
            Some((
                model(source_head)?,
                format!("cases found by {plugin} from {seed_source}, params {params}"),
                format!("{} of {} inputs", count(v.discriminatory as u64), count(v.generated)),
            ))
        }
        "group_score" => {
            let g = f.figures::<GroupScoreFigures>().ok()?;
            Some((model(head)?, "worst group score".into(), g.worst_score.map(numf).unwrap_or_else(|| "—".into())))
        }
        _ => None,
    }
}

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
/// estimate, the same generator from the same seeds, the same group scoring. None when no
/// measurement was taken of more than one model.
pub(super) fn comparison(models: &[(String, ModelFigures)], stages: &Stages<'_>) -> Option<Comparison> {
    let mut families: Vec<String> = Vec::new();
    let mut cells: Vec<(String, String, String)> = Vec::new();
    for (_, head, f) in &stages.entries {
        if let Some((model, family, value)) = measurement(stages, head, f) {
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
