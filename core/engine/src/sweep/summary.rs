//! What a sweep run or a merge produced, typed to the caller: a plain pipeline's [`Summary`], or a
//! sweep's [`MatrixSummary`]. The CLI, Python and the tests read these types; JSON is made once,
//! where `summary.json` is written ([`MatrixSummary::to_json`], [`Summary::to_json`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::compare::Comparison;
use super::SweepInfo;
use crate::stage::summary::Summary;

/// The top-level `summary.json` of a sweep over a `[matrix]`: its identity, the matrix, one row of
/// compared figures per combination and, when the combinations have gates, which failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixSummary {
    /// `[pipeline] name`.
    pub pipeline: String,
    /// The pipeline file's name.
    pub file: Option<String>,
    /// The run seed.
    pub seed: u64,
    /// The fairpipe version that ran it.
    pub fairpipe_version: String,
    /// FNV-1a 64 of the pipeline text and the `--gate` conditions.
    pub pipeline_hash: String,
    /// The matrix: its keys, their values, how the best combination is chosen.
    pub matrix: MatrixFacts,
    /// One row per combination, in combination order.
    pub combinations: Vec<CombinationRow>,
    /// Every combination's gate together (absent when no combination has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<MatrixGate>,
}

/// The `matrix` object of a sweep's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixFacts {
    /// The matrix keys in file order.
    pub keys: Vec<String>,
    /// Each key's values, in the order the combinations first use them.
    pub values: Map<String, Value>,
    /// How many combinations ran.
    pub combinations: usize,
    /// How the best combination is chosen (`None`: not asked).
    pub best: Option<String>,
    /// The best combination's name (`None` when not asked or when no combination has the figure).
    pub best_combination: Option<String>,
}

/// One combination's row: its name, its matrix values, its seed and its compared figures
/// (`STAGE.FIGURE` → value, and `gate.passed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CombinationRow {
    /// The combination's folder name.
    pub name: String,
    /// Matrix key → value.
    pub values: Map<String, Value>,
    /// Its run's seed.
    pub seed: Value,
    /// Column → value.
    pub figures: Map<String, Value>,
}

/// The gates of a sweep's combinations, together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixGate {
    /// Whether every combination's gate passed.
    pub passed: bool,
    /// The combinations whose gate failed.
    pub failed_combinations: Vec<String>,
}

impl MatrixSummary {
    /// The summary of a sweep `info` whose combinations compare as `comparison`; `failed` are the
    /// combinations whose gate failed, `gate_passed` whether all passed (`None`: no gate).
    pub fn new(info: &SweepInfo, comparison: &Comparison, gate_passed: Option<bool>, failed: Vec<String>) -> MatrixSummary {
        let mut values = Map::new();
        for key in &info.keys {
            let mut seen: Vec<Value> = Vec::new();
            for v in info.units.iter().filter_map(|u| u.values.get(key)) {
                if !seen.contains(v) {
                    seen.push(v.clone());
                }
            }
            values.insert(key.clone(), Value::Array(seen));
        }
        MatrixSummary {
            pipeline: info.pipeline.clone(),
            file: info.file.clone(),
            seed: info.seed,
            fairpipe_version: info.fairpipe_version.clone(),
            pipeline_hash: info.pipeline_hash.clone(),
            matrix: MatrixFacts {
                keys: info.keys.clone(),
                values,
                combinations: info.units.len(),
                best: info.best.as_ref().map(|b| b.to_string()),
                best_combination: comparison.best_row.clone(),
            },
            combinations: comparison
                .rows
                .iter()
                .map(|r| CombinationRow {
                    name: r.name.clone(),
                    values: r.values.clone(),
                    seed: r.seed.clone(),
                    figures: r.figures.iter().cloned().collect(),
                })
                .collect(),
            gate: gate_passed.map(|passed| MatrixGate { passed, failed_combinations: failed }),
        }
    }

    /// The summary as `summary.json` holds it.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What a run of a pipeline file produced: one run's summary, or a sweep's.
#[derive(Debug, Clone)]
pub enum SweepSummary {
    /// A plain pipeline's run (also one merged from shards or pieces).
    Run(Box<Summary>),
    /// A sweep over a `[matrix]`.
    Matrix(Box<MatrixSummary>),
}

impl SweepSummary {
    /// The summary as the top-level `summary.json` holds it.
    pub fn to_json(&self) -> Value {
        match self {
            SweepSummary::Run(summary) => summary.to_json(),
            SweepSummary::Matrix(summary) => summary.to_json(),
        }
    }
}
