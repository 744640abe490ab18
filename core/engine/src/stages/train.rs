//! `train`: train a model under test on the dataset's train split (MLP, logistic regression,
//! decision tree, random forest, SVM).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::model_output::{model_output, ModelFigures};
use crate::data::Split;
use crate::error::Result;
use crate::models::{MlpConfig, ModelFile, Recipe, SvmConfig, SvmKernel};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::{KeyType, StageKeys};
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, LabelUse, Stage, StageContext, StageOutput};

/// The input of the model stages: the dataset.
pub(crate) const DATA_INPUT: &[InputDoc] =
    &[InputDoc { role: "data", accepts: &[ArtifactKind::Dataset], required: true, doc: "the dataset to train on / evaluate with" }];

/// The `train` stage kind.
pub const KIND: StageKind = StageKind {
    name: "train",
    doc: "Train a model under test on the dataset's train split: the papers' six-layer MLP, logistic regression, a decision tree, a random forest or a support vector machine. Reports train and test accuracy; `save` keeps the model in a file that load_model reads.",
    inputs: DATA_INPUT,
    output: ArtifactKind::Model,
    keys: TrainConfig::keys,
    tag: Some("algorithm"),
    example: "[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"mlp\"\nepochs = 20",
    configure: configure::<TrainConfig>,
    fields: fields_of::<TrainConfig>,
    read: read_debug::<TrainConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc {
        compared: &["accuracy_test"],
        compare: compare_figures,
        ..FigureDoc::of::<TrainFigures>()
    },
};

/// The figures a sweep compares a `train` stage on (`FigureDoc::compared`).
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    use serde_json::Value;
    compare_as::<TrainFigures>(entry, 1, |f| vec![Value::from(f.model.accuracy_test)])
}

/// The `train` stage's config: the algorithm (with its own keys) and where to save the model.
#[derive(Debug, Clone, PartialEq, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Model family (`algorithm = "..."`), with keys of its own.
    #[serde(rename = "+algorithm")]
    pub algorithm: Algorithm,
    /// Write the trained model (JSON, with its recipe) here, relative to the pipeline file, when
    /// the run succeeds.
    #[serde(default)]
    pub save: Option<PathBuf>,
}

/// `algorithm = "..."` and the keys of that algorithm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// The papers' MLP.
    Mlp(MlpParams),
    /// Logistic regression.
    Logistic(LogisticParams),
    /// A decision tree.
    Tree(TreeParams),
    /// A random forest.
    Forest(ForestParams),
    /// A support vector machine.
    Svm(SvmParams),
}

/// Keys of `algorithm = "mlp"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct MlpParams {
    /// Hidden layer widths.
    pub hidden: Vec<usize>,
    /// Passes over the training data.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch_size: usize,
    /// Step size of the Adam optimiser.
    pub learning_rate: f64,
}

impl Default for MlpParams {
    fn default() -> Self {
        let d = MlpConfig::default();
        MlpParams { hidden: d.hidden, epochs: d.epochs, batch_size: d.batch_size, learning_rate: d.learning_rate }
    }
}

/// Keys of `algorithm = "logistic"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct LogisticParams {
    /// L-BFGS iterations.
    pub max_iterations: u64,
    /// L2 penalty.
    pub alpha: f64,
}

impl Default for LogisticParams {
    fn default() -> Self {
        LogisticParams { max_iterations: 200, alpha: 1.0 }
    }
}

/// Keys of `algorithm = "tree"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct TreeParams {
    /// Depth limit (of each tree, in a forest).
    pub max_depth: usize,
}

impl Default for TreeParams {
    fn default() -> Self {
        TreeParams { max_depth: 10 }
    }
}

/// Keys of `algorithm = "forest"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct ForestParams {
    /// Number of trees.
    pub trees: usize,
    /// Depth limit (of each tree, in a forest).
    pub max_depth: usize,
    /// Features each tree is grown on (a random subset per tree).
    #[key(default = "ceil(2n/3)")]
    pub max_features: Option<usize>,
}

impl Default for ForestParams {
    fn default() -> Self {
        ForestParams { trees: 100, max_depth: 10, max_features: None }
    }
}

/// `kernel = "rbf" | "linear"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// Radial basis function.
    #[default]
    Rbf,
    /// Linear.
    Linear,
}

/// Keys of `algorithm = "svm"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct SvmParams {
    /// Kernel (inputs are standardised).
    pub kernel: Kernel,
    /// Penalty C.
    pub c: f64,
    /// RBF kernel width (scikit-learn's "scale" on standardised inputs).
    #[key(default = "1 / features")]
    pub gamma: Option<f64>,
    /// Rows trained on at most: a seeded random subsample of this many, as linfa-svm keeps the rows
    /// x rows kernel matrix in memory.
    pub max_rows: usize,
}

impl Default for SvmParams {
    fn default() -> Self {
        SvmParams { kernel: Kernel::Rbf, c: 1.0, gamma: None, max_rows: 5000 }
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig { algorithm: Algorithm::Mlp(MlpParams::default()), save: None }
    }
}

impl TrainConfig {
    /// The training recipe, seeded with `seed`.
    pub fn recipe(&self, seed: u64) -> Recipe {
        match &self.algorithm {
            Algorithm::Logistic(p) => Recipe::Logistic { max_iterations: p.max_iterations, alpha: p.alpha },
            Algorithm::Tree(p) => Recipe::Tree { max_depth: p.max_depth },
            Algorithm::Forest(p) => Recipe::Forest { trees: p.trees, max_depth: p.max_depth, max_features: p.max_features, seed },
            Algorithm::Svm(p) => Recipe::Svm(SvmConfig {
                kernel: match p.kernel {
                    Kernel::Linear => SvmKernel::Linear,
                    Kernel::Rbf => SvmKernel::Rbf { gamma: p.gamma },
                },
                c: p.c,
                max_rows: p.max_rows,
                seed,
            }),
            Algorithm::Mlp(p) => Recipe::Mlp(MlpConfig {
                hidden: p.hidden.clone(),
                epochs: p.epochs,
                batch_size: p.batch_size,
                learning_rate: p.learning_rate,
                seed,
            }),
        }
    }
}

impl StageConfig for TrainConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        if let Some(save) = &self.save {
            c.writable_file("save", save);
        }
        match &self.algorithm {
            Algorithm::Mlp(p) => {
                if p.hidden.contains(&0) {
                    c.problem("hidden", "`hidden` must be a list of positive integers");
                }
                c.at_least("epochs", p.epochs, 1);
                c.at_most("epochs", p.epochs as u128, u128::from(crate::limits::MAX_ITERATIONS));
                c.at_least("batch_size", p.batch_size, 1);
                c.within("learning_rate", p.learning_rate, 1e-9, 10.0);
            }
            Algorithm::Logistic(p) => {
                c.at_least("max_iterations", p.max_iterations.min(usize::MAX as u64) as usize, 1);
                c.at_most("max_iterations", u128::from(p.max_iterations), u128::from(crate::limits::MAX_ITERATIONS));
                c.within("alpha", p.alpha, 0.0, 1e9);
            }
            Algorithm::Tree(p) => c.at_least("max_depth", p.max_depth, 1),
            Algorithm::Forest(p) => {
                c.at_least("trees", p.trees, 1);
                c.at_least("max_depth", p.max_depth, 1);
                if let Some(m) = p.max_features {
                    c.at_least("max_features", m, 1);
                }
            }
            Algorithm::Svm(p) => {
                if let Some(g) = p.gamma {
                    c.within("gamma", g, 1e-12, 1e12);
                }
                c.within("c", p.c, 1e-12, 1e12);
                c.at_least("max_rows", p.max_rows, 2);
            }
        }
    }

    fn instantiate(self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(Train { recipe: self.recipe(env.seed), save: self.save.map(|s| env.dir.join(s)) }))
    }
}

/// Figures of a `train` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct TrainFigures {
    /// Seconds spent training.
    pub train_elapsed_s: f64,
    /// Where the model is saved, when `save` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved: Option<String>,
    /// The trained model's accuracy.
    #[serde(flatten)]
    pub model: ModelFigures,
}

/// The stage makes the model it passes on; the verdict reads nothing else of its figures.
impl StageFigures for TrainFigures {
    const HEADLINE: &'static [&'static str] = &["accuracy_train", "accuracy_test"];

    const MODEL_STAGE: bool = true;
}

struct Train {
    recipe: Recipe,
    save: Option<PathBuf>,
}

impl Stage for Train {
    fn reads_label(&self) -> Option<LabelUse> {
        Some(LabelUse {
            key: None,
            why: "`train` fits a model to the data's label: give the load stage `label` (the outcome column)".into(),
        })
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        self.reads_label().map_or(Ok(()), |u| u.check(&data))?;
        if let Recipe::Forest { max_features: Some(m), .. } = &self.recipe {
            if *m > data.domain.width() {
                return Err(crate::error::StageError::AboveAvailable {
                    key: "max_features",
                    value: *m,
                    what: "the data's features",
                    available: data.domain.width(),
                }
                .into());
            }
        }
        let (x, y) = data.subset(Split::Train);
        let started = Instant::now();
        let fitted = self.recipe.fit_shown(&x, &y, &ctx.progress).map_err(|e| one_class_refusal(e, &data, &y))?;
        let train_elapsed_s = started.elapsed().as_secs_f64();
        let mut saved = None;
        if let Some(path) = &self.save {
            let file = ModelFile::new(&data.domain, self.recipe.clone(), fitted.clone());
            ctx.write_later(path.clone(), file.to_json()?.into_bytes());
            saved = Some(path.display().to_string());
        }
        let (artifact, model, model_queries) = model_output(fitted.into_model(), data, Some(self.recipe.clone()))?;
        let figures = TrainFigures { train_elapsed_s, saved, model };
        Ok(StageOutput {
            artifact: Artifact::Model(std::sync::Arc::new(artifact)),
            figures: Arc::new(figures),
            tables: Vec::new(),
            model_queries,
        })
    }
}

/// A training failure on rows whose label holds one class, located at the `label` key of the
/// stage that loaded the data (the data, its split or the label column is what to change); any
/// other failure as it is.
fn one_class_refusal(e: crate::error::ModelError, data: &crate::data::Dataset, y: &[u8]) -> crate::error::Error {
    let Some(&first) = y.first() else { return e.into() };
    if y.iter().any(|&c| c != first) {
        return e.into();
    }
    let why = format!(
        "{}: the label `{}` is {:?} in all {} training rows, so no classifier can be trained on them ({e}); check that `label` names the outcome column and that the training rows hold both outcomes",
        data.path.display(),
        data.label_name,
        data.label_values[usize::from(first.min(1))],
        y.len()
    );
    crate::error::Error::Refused(crate::error::StageError::InputContradicts {
        role: "data",
        key: "label",
        source: Box::new(crate::error::Error::Invalid(why)),
    })
}
