//! `load_text_model`: a text classifier exported to ONNX with one string input (scikit-learn's
//! `TfidfVectorizer` + `LogisticRegression` through skl2onnx, say), run by ONNX Runtime, with its
//! accuracy on the texts of a `load_text` stage.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::train_text::{text_accuracy, TEXTS_INPUT};
use crate::data::Split;
use crate::error::Result;
use crate::models::onnx::runtime::{install_advice, runtime};
use crate::models::outputs::{Favourable, OutputChoice, OutputTransform};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput, TextModelArtifact};
use crate::text::classifier::TextClassifier;
use crate::text::onnx_text::OrtTextModel;

/// The `load_text_model` stage kind.
pub const KIND: StageKind = StageKind {
    name: "load_text_model",
    doc: "Load a text classifier exported to ONNX with one string input ([N, 1] or [N]) and run it with ONNX Runtime; the output holding P(favourable) is chosen as for load_model (probabilities first, ZipMaps and labels read too). Reports its accuracy on the texts.",
    inputs: TEXTS_INPUT,
    output: ArtifactKind::TextModel,
    keys: LoadTextModelConfig::keys,
    tag: None,
    example: "[stages.model]\nkind = \"load_text_model\"\ndata = \"comments\"\npath = \"models/wikitalk_tfidf_lr.onnx\"",
    configure: configure::<LoadTextModelConfig>,
    fields: fields_of::<LoadTextModelConfig>,
    read: read_debug::<LoadTextModelConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<LoadTextModelFigures>(),
};

/// The `load_text_model` stage's config.
#[derive(Debug, Clone, Default, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct LoadTextModelConfig {
    /// The .onnx file, relative to the pipeline file.
    pub path: PathBuf,
    /// The output to read.
    #[key(default = "the probabilities")]
    pub output: Option<String>,
    /// libonnxruntime.so (or the folder holding it) to load, relative to the pipeline file.
    #[key(default = "ORT_DYLIB_PATH, then python3's onnxruntime package")]
    pub onnxruntime: Option<PathBuf>,
}

impl StageConfig for LoadTextModelConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, checks: &mut Checks<'_, '_>) {
        checks.existing_file("path", &self.path);
        if let Some(lib) = &self.onnxruntime {
            if !checks.dir().join(lib).exists() {
                checks.problem("onnxruntime", format!("{} does not exist; {}", lib.display(), install_advice()));
            }
        }
    }

    fn instantiate(mut self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        self.path = env.dir.join(&self.path);
        self.onnxruntime = self.onnxruntime.map(|p| env.dir.join(p));
        Ok(Box::new(self))
    }
}

/// Figures of a `load_text_model` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct LoadTextModelFigures {
    /// The model.
    pub model: String,
    /// How its output is read.
    pub output_read: String,
    /// Accuracy on the train split.
    #[serde(deserialize_with = "crate::stage::nan_if_null")]
    pub accuracy_train: f64,
    /// Accuracy on the test split.
    #[serde(deserialize_with = "crate::stage::nan_if_null")]
    pub accuracy_test: f64,
    /// Correct test texts.
    pub correct_test: usize,
    /// Test texts.
    pub total_test: usize,
}

/// The stage makes the model it passes on; the verdict reads nothing else of its figures.
impl StageFigures for LoadTextModelFigures {
    const HEADLINE: &'static [&'static str] = &["accuracy_train", "accuracy_test"];

    const MODEL_STAGE: bool = true;
}

impl Stage for LoadTextModelConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let texts = inputs.texts("data")?;
        let runtime = runtime(self.onnxruntime.as_deref()).map_err(|e| crate::error::ModelError::RuntimeMissing {
            path: self.path.clone(),
            reason: "a text model (string input)".into(),
            message: e.to_string(),
        })?;
        let favourable = Favourable { label: texts.data.label_values[1].clone(), is_zero: texts.data.label_flipped, code: None };
        let classes = crate::models::onnx::facts::graph_facts(&self.path)?.classes;
        let choice = OutputChoice { name: self.output.as_deref(), transform: OutputTransform::default(), favourable, classes };
        let model = OrtTextModel::load(&self.path, runtime, choice, &texts.data.text_refs())?;
        let (accuracy_train, _, _) = text_accuracy(&model, &texts, Split::Train)?;
        let (accuracy_test, correct_test, total_test) = text_accuracy(&model, &texts, Split::Test)?;
        let figures = LoadTextModelFigures {
            model: model.describe(),
            output_read: model.reader().describe(),
            accuracy_train,
            accuracy_test,
            correct_test,
            total_test,
        };
        // The accuracy of both splits scores every text once.
        let model_queries = texts.data.texts.len() as u64;
        Ok(StageOutput {
            artifact: Artifact::TextModel(Arc::new(TextModelArtifact { model: Arc::new(model), texts, recipe: None })),
            figures: Arc::new(figures),
            tables: Vec::new(),
            model_queries,
        })
    }
}
