//! `load_model`: load a model under test from an ONNX file or a model file saved by `train`.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::model_output::{model_output, ModelFigures};
use super::train::DATA_INPUT;
use crate::error::Result;
use crate::models::{Complement, ModelFile, OnnxModel};
use crate::oracle::Model;
use crate::pipeline::config::{configure, fields_of, Checks, StageConfig};
use crate::pipeline::kind::{KeyDoc, StageEnv, StageKind};
use crate::pipeline::stage::{figures_map, Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};

/// The `load_model` stage kind.
pub const KIND: StageKind = StageKind {
    name: "load_model",
    doc: "Load a model under test from an ONNX file (two-class probabilities [N,2], a sigmoid [N,1], or a scikit-learn export) or from a model file saved by a train stage (which can be retrained). Reports train and test accuracy on the dataset.",
    inputs: DATA_INPUT,
    output: ArtifactKind::Model,
    keys: &[
        KeyDoc::new("path", "path", "required", "an .onnx file, or a .json model saved by a train stage, relative to the pipeline file"),
        KeyDoc::new("output", "string", "first float output named *prob*, else first float output", "name of the output holding the probabilities"),
        KeyDoc::new(
            "executor",
            "\"auto\"|\"tract\"",
            "\"auto\"",
            "auto: run a plain dense-layer graph natively once it reproduces tract on every row of the data (no label change, |dp| <= 1e-5); tract: always tract",
        ),
    ],
    tag: None,
    example: "[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"models/census.onnx\"",
    configure: configure::<LoadModelConfig>,
    fields: fields_of::<LoadModelConfig>,
};

/// `executor = "auto" | "tract"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    /// The native dense executor when it reproduces tract on the data, else tract.
    #[default]
    Auto,
    /// Always tract.
    Tract,
}

/// The `load_model` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadModelConfig {
    /// An `.onnx` file or a `.json` model saved by a train stage, relative to the pipeline file.
    pub path: PathBuf,
    /// Name of the output holding the probabilities.
    #[serde(default)]
    pub output: Option<String>,
    /// Which executor runs an ONNX model.
    #[serde(default)]
    pub executor: Executor,
}

impl LoadModelConfig {
    /// A config loading `path` with the default output and executor.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        LoadModelConfig { path: path.into(), output: None, executor: Executor::Auto }
    }
}

impl StageConfig for LoadModelConfig {
    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, checks: &mut Checks<'_, '_>) {
        checks.existing_file("path", &self.path);
    }

    fn instantiate(self, env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(LoadModel { path: env.dir.join(&self.path), output: self.output, native: self.executor == Executor::Auto }))
    }
}

/// Figures of a `load_model` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadModelFigures {
    /// The recipe's algorithm, for a saved fairpipe model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// The ONNX output read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Rows the native executor was checked against tract on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_checked_rows: Option<usize>,
    /// Largest |P_native − P_tract| on them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_max_abs_diff: Option<f64>,
    /// Labels that differ between the two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_label_flips: Option<usize>,
    /// The executor that runs the model (ONNX).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
    /// The model's accuracy.
    #[serde(flatten)]
    pub model: ModelFigures,
}

struct LoadModel {
    path: PathBuf,
    output: Option<String>,
    native: bool,
}

impl Stage for LoadModel {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        let mut figures = LoadModelFigures {
            algorithm: None,
            output: None,
            native_checked_rows: None,
            native_max_abs_diff: None,
            native_label_flips: None,
            executor: None,
            model: ModelFigures::default(),
        };
        let (model, recipe): (Arc<dyn Model>, _) = if self.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            let names: Vec<String> = data.domain.attributes.iter().map(|a| a.name.clone()).collect();
            let file = ModelFile::load(&self.path, &names)?;
            figures.algorithm = Some(file.recipe.name().to_string());
            (file.model.into_model(), Some(file.recipe))
        } else {
            let mut model = OnnxModel::load(&self.path, data.domain.width(), self.output.as_deref())?;
            figures.output = Some(model.output_name().to_string());
            if self.native {
                let rows: Vec<f64> = data.x.iter().copied().collect();
                if let Some(check) = model.verify_native(&rows)? {
                    figures.native_checked_rows = Some(check.rows);
                    figures.native_max_abs_diff = Some(check.max_abs_diff);
                    figures.native_label_flips = Some(check.label_flips);
                }
            }
            figures.executor = Some(model.executor());
            let model: Arc<dyn Model> = if data.label_flipped { Arc::new(Complement(Arc::new(model))) } else { Arc::new(model) };
            (model, None)
        };
        let (artifact, model_figures, model_queries) = model_output(model, data, recipe)?;
        figures.model = model_figures;
        Ok(StageOutput { artifact: Artifact::Model(Arc::new(artifact)), figures: figures_map(&figures), tables: Vec::new(), model_queries })
    }
}
