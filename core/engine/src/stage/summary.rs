//! The typed summary of a run: what `summary.json` holds (the output contract), and what the
//! report, the gate, a sweep's comparison and [`crate::run::Run::figures`] read. Each stage's
//! entry keeps the stage's own figures struct ([`Figures`]); an entry read back from a file keeps
//! the figures as JSON and reads them into the struct when asked.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::models::RemoteUsage;

/// A stage kind's figures: its `*Figures` struct, serialized into the stage's entry of
/// `summary.json` and read back typed (any `Serialize` struct is one).
pub trait Figures: Any + Send + Sync + Debug {
    /// The figures as the object `summary.json` holds (empty if they do not serialize to one).
    fn to_map(&self) -> Map<String, Value>;
    /// The figures as `Any`, to read them back as their own type.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Serialize + Any + Send + Sync + Debug> Figures for T {
    fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Why a stage's figures could not be read as the type asked for.
#[derive(Debug, thiserror::Error)]
#[error("stage `{stage}`: {problem}")]
pub struct FiguresError {
    /// The stage.
    pub stage: String,
    /// What went wrong.
    pub problem: String,
}

/// One stage's entry in `summary.json`: what the runner records of every stage (kind, time,
/// model rows, inputs, warnings, a model server's traffic) and the stage's own figures.
#[derive(Debug, Clone)]
pub struct StageSummary {
    /// The stage's kind.
    pub kind: String,
    /// Wall-clock seconds the stage took.
    pub elapsed_s: f64,
    /// Model rows the stage scored.
    pub model_queries: u64,
    /// Role → name of the stage it read.
    pub inputs: BTreeMap<String, String>,
    /// What the stage warned of (absent from the file when none).
    pub warnings: Vec<String>,
    /// A model server's traffic over the whole run, under the stage that loaded the model.
    pub remote: Option<RemoteUsage>,
    /// The stage's figures: its `*Figures` struct after a run, a JSON object when read from a file.
    pub figures: Arc<dyn Figures>,
}

/// The names the runner writes into every stage's entry besides the stage's figures (`remote`
/// only beside a model, so `load_model` lists it among its figures).
pub const RUNNER_FIGURES: [&str; 5] = ["kind", "elapsed_s", "model_queries", "inputs", "warnings"];

impl StageSummary {
    /// The stage's figures as `F`: the struct itself after a run, or read from the entry's JSON.
    pub fn figures<F: Figures + DeserializeOwned + Clone>(&self) -> Result<F, serde_json::Error> {
        match self.figures.as_any().downcast_ref::<F>() {
            Some(f) => Ok(f.clone()),
            None => F::deserialize(Value::Object(self.to_map())),
        }
    }

    /// The entry as `summary.json` holds it: the runner's names and the stage's figures.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("kind".into(), Value::from(self.kind.clone()));
        map.insert("elapsed_s".into(), Value::from(self.elapsed_s));
        map.insert("model_queries".into(), Value::from(self.model_queries));
        map.insert("inputs".into(), serde_json::to_value(&self.inputs).unwrap_or(Value::Null));
        for (k, v) in self.figures.to_map() {
            map.insert(k, v);
        }
        if !self.warnings.is_empty() {
            map.insert("warnings".into(), serde_json::to_value(&self.warnings).unwrap_or(Value::Null));
        }
        if let Some(remote) = &self.remote {
            map.insert("remote".into(), serde_json::to_value(remote).unwrap_or(Value::Null));
        }
        map
    }

    /// An entry read from `summary.json`: the runner's names taken out, the rest kept as the
    /// figures (as JSON).
    pub fn from_map(mut map: Map<String, Value>) -> Result<StageSummary, serde_json::Error> {
        let mut take = |k: &str| map.remove(k).unwrap_or(Value::Null);
        let kind = String::deserialize(take("kind"))?;
        let elapsed_s = crate::serde_nan::nan_if_null(take("elapsed_s"))?;
        let model_queries = Option::<u64>::deserialize(take("model_queries"))?.unwrap_or(0);
        let inputs = Option::<BTreeMap<String, String>>::deserialize(take("inputs"))?.unwrap_or_default();
        let warnings = Option::<Vec<String>>::deserialize(take("warnings"))?.unwrap_or_default();
        let remote = Option::<RemoteUsage>::deserialize(take("remote"))?;
        Ok(StageSummary { kind, elapsed_s, model_queries, inputs, warnings, remote, figures: Arc::new(map) })
    }
}

impl Serialize for StageSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for StageSummary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        StageSummary::from_map(map).map_err(serde::de::Error::custom)
    }
}

/// A warning of the run, with the stage that gave it (`summary.json`'s `warnings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunWarning {
    /// The stage.
    #[serde(default)]
    pub stage: String,
    /// The warning.
    #[serde(default)]
    pub message: String,
}

/// A gate condition checked against a run.
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

/// The `gate` section of `summary.json`: whether every condition held, and each with its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateSection {
    /// Whether every condition held.
    pub passed: bool,
    /// Every condition with its value.
    pub conditions: Vec<Outcome>,
}

impl GateSection {
    /// The section of `outcomes`.
    pub fn new(outcomes: Vec<Outcome>) -> GateSection {
        GateSection { passed: outcomes.iter().all(|o| o.passed), conditions: outcomes }
    }
}

/// A run's summary: what `summary.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// `[pipeline] name`, or the file stem.
    pub pipeline: String,
    /// The pipeline file's name.
    #[serde(default)]
    pub file: Option<String>,
    /// The run seed.
    pub seed: u64,
    /// The version of fairpipe that ran.
    #[serde(default)]
    pub fairpipe_version: String,
    /// The stages' names in run order.
    pub stage_order: Vec<String>,
    /// Every stage's entry, by name.
    pub stages: BTreeMap<String, StageSummary>,
    /// Every stage's warnings, in run order.
    #[serde(default)]
    pub warnings: Vec<RunWarning>,
    /// The gate's verdict, when the pipeline has conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateSection>,
    /// One verdict per protected attribute of each audited model, graded against the
    /// thresholds (absent when no stage measures discrimination, and in older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<crate::stage::verdict::VerdictSection>,
    /// What exactly was audited: the inputs' hashes, version, commit, platform, executors and the
    /// pipeline's text ([`crate::trail`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trail: Option<crate::trail::Trail>,
}

impl Summary {
    /// The summary as `summary.json` holds it.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A summary read from `summary.json`'s contents.
    pub fn from_json(value: &Value) -> Result<Summary, serde_json::Error> {
        Summary::deserialize(value)
    }

    /// The stages in run order, with their entries (a name without an entry is skipped).
    pub fn in_order(&self) -> impl Iterator<Item = (&str, &StageSummary)> {
        self.stage_order.iter().filter_map(|n| self.stages.get(n).map(|e| (n.as_str(), e)))
    }

    /// Stage `stage`'s figures as `F`, e.g. `summary.figures::<EstimateFigures>("estimate")`.
    pub fn figures<F: Figures + DeserializeOwned + Clone>(&self, stage: &str) -> Result<F, FiguresError> {
        let entry =
            self.stages.get(stage).ok_or_else(|| FiguresError { stage: stage.to_string(), problem: "no such stage in the run".into() })?;
        entry.figures::<F>().map_err(|e| FiguresError {
            stage: stage.to_string(),
            problem: format!("its {} figures do not read as {}: {e}", entry.kind, std::any::type_name::<F>()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Demo {
        rate: f64,
        ci95: [f64; 2],
    }

    fn summary() -> Summary {
        let entry = StageSummary {
            kind: "estimate".into(),
            elapsed_s: 0.5,
            model_queries: 20,
            inputs: BTreeMap::from([("model".to_string(), "m".to_string())]),
            warnings: vec!["few rows".into()],
            remote: None,
            figures: Arc::new(Demo { rate: 0.25, ci95: [0.2, 0.3] }),
        };
        Summary {
            pipeline: "p".into(),
            file: Some("p.toml".into()),
            seed: 7,
            fairpipe_version: "0".into(),
            stage_order: vec!["est".into()],
            stages: BTreeMap::from([("est".to_string(), entry)]),
            warnings: vec![RunWarning { stage: "est".into(), message: "few rows".into() }],
            gate: None,
            verdicts: None,
            trail: None,
        }
    }

    #[test]
    fn the_summary_reads_back_from_its_json_with_the_same_figures() {
        let s = summary();
        let json = s.to_json();
        assert_eq!(json["stages"]["est"]["rate"], 0.25);
        assert_eq!(json["stages"]["est"]["kind"], "estimate");
        assert_eq!(json["stages"]["est"]["warnings"][0], "few rows");
        assert!(json.get("gate").is_none(), "no gate, no section");
        let back = Summary::from_json(&json).unwrap();
        assert_eq!(back.to_json(), json);
        assert_eq!(back.figures::<Demo>("est").unwrap(), Demo { rate: 0.25, ci95: [0.2, 0.3] });
        assert_eq!(s.figures::<Demo>("est").unwrap().ci95, [0.2, 0.3]);
        assert!(s.figures::<Demo>("nope").unwrap_err().to_string().contains("no such stage"));
        assert_eq!(back.stages["est"].model_queries, 20);
    }
}
