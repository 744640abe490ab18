//! `train_text`: train the native text classifier — TF-IDF features and an L2-regularised logistic
//! regression ([`crate::text::classifier::TfidfLogistic`], scikit-learn's defaults) — on the train
//! split of a `load_text` stage, so that a text audit runs without Python or ONNX Runtime.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::data::Split;
use crate::error::Result;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput, TextModelArtifact, TextsArtifact};
use crate::text::classifier::{TextClassifier, TextLogisticConfig, TfidfLogistic};

/// The input of stages that read texts.
pub(crate) const TEXTS_INPUT: &[InputDoc] =
    &[InputDoc { role: "data", accepts: &[ArtifactKind::Texts], required: true, doc: "the texts (a load_text stage)" }];

/// The input of stages that query a text model.
pub(crate) const TEXT_MODEL_INPUT: InputDoc =
    InputDoc { role: "model", accepts: &[ArtifactKind::TextModel], required: true, doc: "the text model (train_text or load_text_model)" };

/// The optional input of stages that can read other texts than their model's.
pub(crate) const OTHER_TEXTS_INPUT: InputDoc = InputDoc {
    role: "data",
    accepts: &[ArtifactKind::Texts],
    required: false,
    doc: "other texts (a load_text stage), e.g. templated sentences; default: the model's own",
};

/// The `train_text` stage kind.
pub const KIND: StageKind = StageKind {
    name: "train_text",
    doc: "Train a text classifier on the train split of a load_text stage: TF-IDF features (scikit-learn's TfidfVectorizer defaults) and an L2-regularised logistic regression (scikit-learn's objective, solved by L-BFGS), natively.",
    inputs: TEXTS_INPUT,
    output: ArtifactKind::TextModel,
    keys: TrainTextConfig::keys,
    tag: None,
    example: "[stages.model]\nkind = \"train_text\"\ndata = \"comments\"\nc = 1.0",
    configure: configure::<TrainTextConfig>,
    fields: fields_of::<TrainTextConfig>,
    read: read_debug::<TrainTextConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<TrainTextFigures>(),
};

/// The `train_text` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct TrainTextConfig {
    /// Inverse regularisation strength (scikit-learn's C).
    pub c: f64,
    /// Optimiser iterations at most.
    pub max_iterations: usize,
}

impl Default for TrainTextConfig {
    fn default() -> Self {
        let d = TextLogisticConfig::default();
        TrainTextConfig { c: d.c, max_iterations: d.max_iterations }
    }
}

impl StageConfig for TrainTextConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.within("c", self.c, 1e-12, 1e12);
        c.at_least("max_iterations", self.max_iterations, 1);
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of a `train_text` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct TrainTextFigures {
    /// The model.
    pub model: String,
    /// Texts trained on.
    pub trained_on: usize,
    /// Terms in the vocabulary.
    pub vocabulary: usize,
    /// Optimiser iterations used.
    pub iterations: usize,
    /// Final gradient norm relative to the first.
    pub converged_to: f64,
    /// Accuracy on the train split.
    pub accuracy_train: f64,
    /// Accuracy on the test split (NaN when it is empty).
    #[serde(deserialize_with = "crate::stage::nan_if_null")]
    pub accuracy_test: f64,
    /// Correct test texts.
    pub correct_test: usize,
    /// Test texts.
    pub total_test: usize,
}

/// The stage makes the model it passes on; the verdict reads nothing else of its figures.
impl StageFigures for TrainTextFigures {
    const HEADLINE: &'static [&'static str] = &["accuracy_train", "accuracy_test"];

    const MODEL_STAGE: bool = true;
}

/// Accuracy of `model` on the texts of `split`: (share correct, correct, total).
pub(crate) fn text_accuracy(model: &dyn TextClassifier, texts: &TextsArtifact, split: Split) -> Result<(f64, usize, usize)> {
    let rows = texts.rows(Some(split));
    let refs: Vec<&str> = rows.iter().map(|&i| texts.data.texts[i].as_str()).collect();
    let mut p = vec![0.0; refs.len()];
    model.predict_texts(&refs, &mut p)?;
    let correct = rows.iter().zip(&p).filter(|(&i, &q)| u8::from(q > 0.5) == texts.data.y[i]).count();
    Ok((if rows.is_empty() { f64::NAN } else { correct as f64 / rows.len() as f64 }, correct, rows.len()))
}

impl Stage for TrainTextConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let texts = inputs.texts("data")?;
        let train = texts.rows(Some(Split::Train));
        let train_texts: Vec<&str> = train.iter().map(|&i| texts.data.texts[i].as_str()).collect();
        let y: Vec<u8> = train.iter().map(|&i| texts.data.y[i]).collect();
        let config = TextLogisticConfig { c: self.c, max_iterations: self.max_iterations, ..TextLogisticConfig::default() };
        let model = TfidfLogistic::train(&train_texts, &y, &config)?;
        let (accuracy_train, _, _) = text_accuracy(&model, &texts, Split::Train)?;
        let (accuracy_test, correct_test, total_test) = text_accuracy(&model, &texts, Split::Test)?;
        let figures = TrainTextFigures {
            model: model.describe(),
            trained_on: train.len(),
            vocabulary: model.tfidf().n_features(),
            iterations: model.iterations,
            converged_to: model.converged_to,
            accuracy_train,
            accuracy_test,
            correct_test,
            total_test,
        };
        Ok(StageOutput {
            artifact: Artifact::TextModel(Arc::new(TextModelArtifact { model: Arc::new(model), texts, recipe: Some(config) })),
            figures: Arc::new(figures),
            tables: Vec::new(),
            model_queries: 0,
        })
    }
}
