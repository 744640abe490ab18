//! The standard audit, written once: load → model → group metrics / bias audit / estimate / check
//! → search + verify, with the default budgets. Python's `fairpipe_rs.audit` builds it in memory
//! ([`StandardAudit::builder`]), `fairpipe init` writes it as TOML ([`StandardAudit::tables`],
//! its comments around them), the library example and the crate's doctest run it. Every stage is
//! one of the stage kinds' typed configs, so a renamed key fails to compile here, and the TOML's
//! keys are the configs' own serde names (only those that differ from what reading the table
//! without them gives are written).
//!
//! ```no_run
//! use fairpipe_core::preset::{ModelStage, StandardAudit};
//! use fairpipe_core::stages::{load::LoadConfig, load_model::LoadModelConfig};
//! # let frame = polars::prelude::DataFrame::empty();
//! let audit = StandardAudit::new("audit", LoadConfig::from_frame(frame, "income", &["gender"]),
//!     ModelStage::Load(LoadModelConfig::new("pipelines/models/census.onnx")));
//! let run = audit.builder().build()?.execute(false)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

use crate::run::builder::PipelineBuilder;
use crate::run::Pipeline;
use crate::stage::config::StageConfig;
/// The TOML writers, with the stage keys' defaults (which are written with them).
pub use crate::stage::keys::{bare_or_quoted, quote, toml_value};
use crate::stage::kind::StageKind;
use crate::stages::bias_audit::BiasAuditConfig;
use crate::stages::check::CheckConfig;
use crate::stages::cluster::ClusterConfig;
use crate::stages::estimate::EstimateConfig;
use crate::stages::generate::GenerateConfig;
use crate::stages::group_metrics::GroupMetricsConfig;
use crate::stages::load::LoadConfig;
use crate::stages::load_model::LoadModelConfig;
use crate::stages::options::Rows;
use crate::stages::pairwise::PairwiseConfig;
use crate::stages::ranking::RankingConfig;
use crate::stages::train::{Algorithm, TrainConfig};
use crate::stages::verify::VerifyConfig;

/// Trials of the standard estimate.
pub const ESTIMATE_TRIALS: usize = 100;
/// Inputs per trial of the standard estimate: 100 × 1,000 = 100,000 random inputs in all.
pub const ESTIMATE_SAMPLES: usize = 1000;
/// Seeds a standard search starts from (k-means seeds of the data, or uniform random inputs).
pub const SEARCH_SEEDS: usize = 1000;
/// The standard search's budget: rows it may ask the model about (1,000,000; in-process Python
/// models score a few hundred thousand rows a second).
pub const SEARCH_MAX_QUERIES: u64 = 1_000_000;
/// The method of the standard search.
pub const SEARCH_METHOD: &str = "maft";

/// The model stage: a model loaded (a file, a server, a command or one handed over in code) or a
/// stand-in trained on the data.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // one per audit; boxing would only burden the callers
pub enum ModelStage {
    /// A `load_model` stage.
    Load(LoadModelConfig),
    /// A `train` stage.
    Train(TrainConfig),
}

/// Where a search's seeds come from.
#[derive(Clone)]
pub enum Seeds {
    /// A `cluster` stage named `seeds` over the data's rows (k-means).
    Clusters(ClusterConfig),
    /// The `generate` stage's own uniform random inputs (`random_seeds`).
    Random,
}

/// A search for individual discriminatory instances and its verification.
#[derive(Clone)]
pub struct Search {
    /// Where the seeds come from.
    pub seeds: Seeds,
    /// The `generate` stage (stage `search`); a `verify` stage named `verify` re-checks its cases.
    pub generate: GenerateConfig,
}

impl Search {
    /// The standard search with `method`: 1,000 seeds, at most [`SEARCH_MAX_QUERIES`] model
    /// rows, the method's own parameters at their defaults; seeds from `seeds`.
    pub fn standard(method: &str, seeds: Seeds) -> Search {
        Search { seeds, generate: standard_generate(method) }
    }
}

/// The standard `generate` config for `method`: [`SEARCH_SEEDS`] random seeds (when no seeds
/// stage feeds it) and the [`SEARCH_MAX_QUERIES`] budget.
pub fn standard_generate(method: &str) -> GenerateConfig {
    GenerateConfig {
        plugin: Some(method.to_string()),
        random_seeds: SEARCH_SEEDS,
        max_queries: SEARCH_MAX_QUERIES,
        ..GenerateConfig::default()
    }
}

/// The standard k-means seeds: 4 clusters (the papers'), [`SEARCH_SEEDS`] seeds.
pub fn standard_seeds() -> ClusterConfig {
    ClusterConfig { k: 4, seeds: SEARCH_SEEDS, ..ClusterConfig::default() }
}

/// The standard estimate: [`ESTIMATE_TRIALS`] × [`ESTIMATE_SAMPLES`] random inputs.
pub fn standard_estimate() -> EstimateConfig {
    EstimateConfig { trials: ESTIMATE_TRIALS, samples: ESTIMATE_SAMPLES, ..EstimateConfig::default() }
}

/// The standard audit: its stages' configs, by the names they run under.
#[derive(Clone)]
pub struct StandardAudit {
    /// The pipeline's name (`[pipeline] name`; the out folder `out/<name>`).
    pub name: String,
    /// The run seed.
    pub seed: u64,
    /// Stage `data`.
    pub data: LoadConfig,
    /// Stage `model`.
    pub model: ModelStage,
    /// Group metrics stages by name (e.g. one per protected attribute).
    pub group_metrics: Vec<(String, GroupMetricsConfig)>,
    /// Stage `bias_audit` (a Local Law 144 bias audit of the model's decisions).
    pub bias_audit: Option<BiasAuditConfig>,
    /// Stage `estimate`.
    pub estimate: Option<EstimateConfig>,
    /// Stage `check`.
    pub check: Option<CheckConfig>,
    /// Stage `pairwise` (an LLM asked to choose between two candidates that differ in a
    /// protected attribute).
    pub pairwise: Option<PairwiseConfig>,
    /// Stage `ranking` (an LLM asked to pick one of several candidates, each protected value
    /// listed equally often).
    pub ranking: Option<RankingConfig>,
    /// Stages `seeds` (when from clusters), `search` and `verify`.
    pub search: Option<Search>,
}

/// The names of the standard audit's stages: Python's `audit` names its checks, its options and
/// the arguments its errors point at by them.
pub mod stage_names {
    /// The data (a `load` stage).
    pub const DATA: &str = "data";
    /// The model under test (`load_model`, or `train`).
    pub const MODEL: &str = "model";
    /// The group rates (`group_metrics`), when one stage measures them.
    pub const GROUP_METRICS: &str = "group_metrics";
    /// The Local Law 144 tables (`bias_audit`).
    pub const BIAS_AUDIT: &str = "bias_audit";
    /// The rate over the domain (`estimate`).
    pub const ESTIMATE: &str = "estimate";
    /// The real rows checked (`check`).
    pub const CHECK: &str = "check";
    /// An LLM's choices between two candidates (`pairwise`).
    pub const PAIRWISE: &str = "pairwise";
    /// An LLM's pick of one among several candidates (`ranking`).
    pub const RANKING: &str = "ranking";
    /// The search's seeds (`cluster`).
    pub const SEEDS: &str = "seeds";
    /// The search (`generate`).
    pub const SEARCH: &str = "search";
    /// The host's re-check of the search's cases (`verify`).
    pub const VERIFY: &str = "verify";
}

/// The kind of the standard audit's stage called `stage` (a model it is given is loaded); a name
/// it does not use is read as a kind's own name.
pub fn stage_kind(stage: &str) -> Option<&'static StageKind> {
    use crate::stages as k;
    use stage_names::*;
    Some(match stage {
        DATA => &k::load::KIND,
        MODEL => &k::load_model::KIND,
        GROUP_METRICS => &k::group_metrics::KIND,
        BIAS_AUDIT => &k::bias_audit::KIND,
        ESTIMATE => &k::estimate::KIND,
        CHECK => &k::check::KIND,
        PAIRWISE => &k::pairwise::KIND,
        RANKING => &k::ranking::KIND,
        SEEDS => &k::cluster::KIND,
        SEARCH => &k::generate::KIND,
        VERIFY => &k::verify::KIND,
        other => return k::kind(other),
    })
}

/// One stage's config, whatever its kind (a short-lived list: the sizes of its variants do not
/// matter).
#[allow(clippy::large_enum_variant)]
enum Config {
    Load(LoadConfig),
    LoadModel(LoadModelConfig),
    Train(TrainConfig),
    GroupMetrics(GroupMetricsConfig),
    BiasAudit(BiasAuditConfig),
    Estimate(EstimateConfig),
    Check(CheckConfig),
    Pairwise(PairwiseConfig),
    Ranking(RankingConfig),
    Cluster(ClusterConfig),
    Generate(GenerateConfig),
    Verify(VerifyConfig),
}

/// A stage to add: its name, its config and its inputs (role, stage).
type Planned = (String, Config, Vec<(&'static str, String)>);

/// A stage as a pipeline file's table: `[stages.NAME]`, `kind`, its inputs, then its keys.
#[derive(Debug, Clone, PartialEq)]
pub struct StageTable {
    /// The stage's name.
    pub name: String,
    /// Its kind.
    pub kind: &'static str,
    /// Role → the stage it reads.
    pub inputs: Vec<(&'static str, String)>,
    /// Its keys as `(key, TOML value)`, those that differ from the kind's defaults.
    pub keys: Vec<(String, String)>,
}

impl StageTable {
    /// The table as TOML text (a header, `kind`, the inputs, the keys; a blank line after).
    pub fn to_toml(&self) -> String {
        let mut t = format!("[stages.{}]\nkind = {}\n", bare_or_quoted(&self.name), quote(self.kind));
        for (role, stage) in &self.inputs {
            t.push_str(&format!("{role} = {}\n", quote(stage)));
        }
        for (key, value) in &self.keys {
            t.push_str(&format!("{} = {value}\n", bare_or_quoted(key)));
        }
        t.push('\n');
        t
    }

    /// The TOML value written for `key`, if it is written.
    pub fn key(&self, key: &str) -> Option<&str> {
        self.keys.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

impl StandardAudit {
    /// The standard audit of `model` on `data`: one `group_metrics` stage on the data's protected
    /// attributes, the standard estimate ([`standard_estimate`]), a check of the test rows; no
    /// bias audit, no search (add them with [`Search::standard`]).
    pub fn new(name: &str, data: LoadConfig, model: ModelStage) -> StandardAudit {
        StandardAudit {
            name: name.to_string(),
            seed: 0,
            data,
            model,
            group_metrics: vec![("group_metrics".into(), GroupMetricsConfig { split: Rows::Test, ..GroupMetricsConfig::default() })],
            bias_audit: None,
            estimate: Some(standard_estimate()),
            check: Some(CheckConfig { split: Rows::Test, ..CheckConfig::default() }),
            pairwise: None,
            ranking: None,
            search: None,
        }
    }

    /// The stages in order, with their inputs.
    fn stages(self) -> Vec<Planned> {
        // (Consumes the audit: `tables` clones it first; the frame and a provided model are shared.)
        use stage_names::*;
        let on_model = || vec![("model", MODEL.to_string())];
        let mut out = vec![(DATA.to_string(), Config::Load(self.data), Vec::new())];
        let model = match self.model {
            ModelStage::Load(c) => Config::LoadModel(c),
            ModelStage::Train(c) => Config::Train(c),
        };
        out.push((MODEL.into(), model, vec![("data", DATA.into())]));
        for (name, c) in self.group_metrics {
            out.push((name, Config::GroupMetrics(c), on_model()));
        }
        if let Some(c) = self.bias_audit {
            out.push((BIAS_AUDIT.into(), Config::BiasAudit(c), on_model()));
        }
        if let Some(c) = self.estimate {
            out.push((ESTIMATE.into(), Config::Estimate(c), on_model()));
        }
        if let Some(c) = self.check {
            out.push((CHECK.into(), Config::Check(c), on_model()));
        }
        if let Some(c) = self.pairwise {
            out.push((PAIRWISE.into(), Config::Pairwise(c), on_model()));
        }
        if let Some(c) = self.ranking {
            out.push((RANKING.into(), Config::Ranking(c), on_model()));
        }
        if let Some(search) = self.search {
            let mut inputs = on_model();
            if let Seeds::Clusters(c) = search.seeds {
                out.push((SEEDS.into(), Config::Cluster(c), vec![("data", DATA.into())]));
                inputs.push(("seeds", SEEDS.into()));
            }
            out.push((SEARCH.into(), Config::Generate(search.generate), inputs));
            out.push((VERIFY.into(), Config::Verify(VerifyConfig {}), vec![("cases", SEARCH.into())]));
        }
        out
    }

    /// A builder of the pipeline, for a run in memory (add a gate, or build and execute it).
    pub fn builder(self) -> PipelineBuilder {
        let mut b = Pipeline::builder(&self.name).seed(self.seed);
        for (name, config, inputs) in self.stages() {
            let inputs: Vec<(&str, &str)> = inputs.iter().map(|(r, s)| (*r, s.as_str())).collect();
            b = match config {
                Config::Load(c) => b.stage(&name, c, &inputs),
                Config::LoadModel(c) => b.stage(&name, c, &inputs),
                Config::Train(c) => b.stage(&name, c, &inputs),
                Config::GroupMetrics(c) => b.stage(&name, c, &inputs),
                Config::BiasAudit(c) => b.stage(&name, c, &inputs),
                Config::Estimate(c) => b.stage(&name, c, &inputs),
                Config::Check(c) => b.stage(&name, c, &inputs),
                Config::Pairwise(c) => b.stage(&name, c, &inputs),
                Config::Ranking(c) => b.stage(&name, c, &inputs),
                Config::Cluster(c) => b.stage(&name, c, &inputs),
                Config::Generate(c) => b.stage(&name, c, &inputs),
                Config::Verify(c) => b.stage(&name, c, &inputs),
            };
        }
        b
    }

    /// The pipeline, built and checked, with its TOML rendering ([`StandardAudit::to_toml`]) as
    /// its text, so the run's audit trail records what ran (`summary.json`'s `trail.pipeline`).
    pub fn build(self) -> Result<Pipeline, crate::error::ConfigError> {
        let text = format!(
            "# Built in code: the standard audit of fairpipe_core::preset (a table or model given in code is not named here).\n{}",
            self.to_toml()
        );
        let mut pipeline = self.builder().build()?;
        pipeline.text = text;
        Ok(pipeline)
    }

    /// The stages as a pipeline file's tables, in order (a data frame or a model given in code
    /// is not written: give the `load` stage a `path`).
    pub fn tables(&self) -> Vec<StageTable> {
        self.clone()
            .stages()
            .into_iter()
            .map(|(name, config, inputs)| {
                let (kind, keys) = match &config {
                    Config::Load(c) => (kind_of(c), written_keys(c, &["label"])),
                    Config::LoadModel(c) => (kind_of(c), written_keys(c, &[])),
                    Config::Train(c) => (kind_of(c), train_keys(c)),
                    Config::GroupMetrics(c) => (kind_of(c), written_keys(c, &[])),
                    Config::BiasAudit(c) => (kind_of(c), written_keys(c, &[])),
                    Config::Estimate(c) => (kind_of(c), written_keys(c, &["trials", "samples"])),
                    Config::Check(c) => (kind_of(c), written_keys(c, &[])),
                    Config::Pairwise(c) => (kind_of(c), written_keys(c, &["prompt"])),
                    Config::Ranking(c) => (kind_of(c), written_keys(c, &["prompt"])),
                    Config::Cluster(c) => (kind_of(c), written_keys(c, &["k", "seeds"])),
                    Config::Generate(c) => (kind_of(c), written_keys(c, &["plugin", "max_queries"])),
                    Config::Verify(c) => (kind_of(c), written_keys(c, &[])),
                };
                StageTable { name, kind, inputs, keys }
            })
            .collect()
    }

    /// The whole pipeline file, without comments: `[pipeline]` (name, seed) and the stages.
    pub fn to_toml(&self) -> String {
        let mut t = format!("[pipeline]\nname = {}\nseed = {}\n\n", quote(&self.name), self.seed);
        for table in self.tables() {
            t.push_str(&table.to_toml());
        }
        t
    }
}

/// The kind name of config `C`.
fn kind_of<C: StageConfig>(_: &C) -> &'static str {
    C::kind().name
}

/// `config`'s keys whose value differs from what reading a table with only its `required` keys
/// gives (the serde defaults, as the pipeline reader fills them in), as TOML values; `required`
/// keys (a `load` stage's label, the budgets a reader should see) are always written.
fn written_keys<C: StageConfig + Serialize>(config: &C, required: &[&str]) -> Vec<(String, String)> {
    let Ok(Value::Object(values)) = serde_json::to_value(config) else {
        return Vec::new();
    };
    let baseline: Map<String, Value> = {
        let given: Map<String, Value> =
            values.iter().filter(|(k, _)| required.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
        match serde_json::from_value::<C>(Value::Object(given)).ok().and_then(|c| serde_json::to_value(c).ok()) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        }
    };
    let mut keys: Vec<(String, String)> = values
        .into_iter()
        .filter(|(k, v)| !v.is_null() && (required.contains(&k.as_str()) || baseline.get(k) != Some(v)))
        .map(|(k, v)| {
            let text = toml_value(&v);
            (k, text)
        })
        .collect();
    // In the order the kind documents its keys (`fairpipe list`, the reference).
    let documented = (C::kind().keys)();
    keys.sort_by_key(|(k, _)| documented.iter().position(|d| d.name == k).unwrap_or(usize::MAX));
    keys
}

/// A `train` stage's keys: `algorithm` and that algorithm's keys that differ from its defaults.
fn train_keys(c: &TrainConfig) -> Vec<(String, String)> {
    use crate::stages::train::{ForestParams, LogisticParams, MlpParams, SvmParams, TreeParams};
    let json = |v: serde_json::Result<Value>| v.unwrap_or(Value::Null);
    let (name, params, defaults) = match &c.algorithm {
        Algorithm::Mlp(p) => ("mlp", json(serde_json::to_value(p)), json(serde_json::to_value(MlpParams::default()))),
        Algorithm::Logistic(p) => ("logistic", json(serde_json::to_value(p)), json(serde_json::to_value(LogisticParams::default()))),
        Algorithm::Tree(p) => ("tree", json(serde_json::to_value(p)), json(serde_json::to_value(TreeParams::default()))),
        Algorithm::Forest(p) => ("forest", json(serde_json::to_value(p)), json(serde_json::to_value(ForestParams::default()))),
        Algorithm::Svm(p) => ("svm", json(serde_json::to_value(p)), json(serde_json::to_value(SvmParams::default()))),
    };
    let mut keys = vec![("algorithm".to_string(), quote(name))];
    if let Value::Object(params) = params {
        for (k, v) in params {
            if !v.is_null() && defaults.get(&k) != Some(&v) {
                keys.push((k, toml_value(&v)));
            }
        }
    }
    if let Some(save) = &c.save {
        keys.push(("save".into(), quote(&save.to_string_lossy().replace('\\', "/"))));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::train::MlpParams;

    fn audit() -> StandardAudit {
        let mut data = LoadConfig::default();
        data.path = Some("d.csv".into());
        data.label = Some("y".into());
        data.protected = vec!["sex".into()];
        data.test_fraction = 0.2;
        let mut a = StandardAudit::new("a", data, ModelStage::Train(TrainConfig::default()));
        a.search = Some(Search::standard(SEARCH_METHOD, Seeds::Clusters(standard_seeds())));
        a
    }

    /// Each table reads back, through the pipeline reader, into the config it was written from.
    #[test]
    fn the_written_pipeline_reads_back_into_the_same_configs() {
        let text = audit().to_toml();
        let root: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let stages = root["stages"].as_table().unwrap();
        let names: Vec<&str> = stages.keys().map(String::as_str).collect();
        for name in ["data", "model", "group_metrics", "estimate", "check", "seeds", "search", "verify"] {
            assert!(names.contains(&name), "{name} missing: {text}");
        }
        // A table's keys without `kind` and its inputs, as the pipeline reader gives them to the config.
        let read = |stage: &str, inputs: &[&str]| -> Value {
            let mut t = stages[stage].as_table().unwrap().clone();
            for k in ["kind"].iter().chain(inputs) {
                t.remove(*k);
            }
            serde_json::to_value(t).unwrap()
        };
        let estimate: EstimateConfig = serde_json::from_value(read("estimate", &["model"])).unwrap();
        assert_eq!(estimate, standard_estimate());
        assert_eq!((estimate.trials, estimate.samples), (100, 1000), "{text}");
        let generate: GenerateConfig = serde_json::from_value(read("search", &["model", "seeds"])).unwrap();
        assert_eq!(generate, standard_generate("maft"));
        assert_eq!(generate.max_queries, 1_000_000);
        let cluster: ClusterConfig = serde_json::from_value(read("seeds", &["data"])).unwrap();
        assert_eq!(cluster, standard_seeds());
        let check: CheckConfig = serde_json::from_value(read("check", &["model"])).unwrap();
        assert_eq!(check.split, Rows::Test);
        assert_eq!(stages["search"]["seeds"].as_str(), Some("seeds"));
        assert_eq!(stages["model"]["algorithm"].as_str(), Some("mlp"));
        assert_eq!(stages["data"]["path"].as_str(), Some("d.csv"));
        assert!(stages["verify"].as_table().unwrap().len() == 2, "kind and cases only: {text}");
    }

    #[test]
    fn only_keys_off_their_defaults_are_written() {
        let mlp = MlpParams { epochs: 3, ..MlpParams::default() };
        let keys = train_keys(&TrainConfig { algorithm: Algorithm::Mlp(mlp), save: None });
        assert_eq!(keys, vec![("algorithm".to_string(), "\"mlp\"".to_string()), ("epochs".to_string(), "3".to_string())]);
        let g =
            written_keys(&GenerateConfig { params: Some(serde_json::json!({"a b": 1, "c": [1.5, "x"]})), ..standard_generate("sg") }, &[]);
        assert!(g.contains(&("params".to_string(), "{ \"a b\" = 1, c = [1.5, \"x\"] }".to_string())), "{g:?}");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
