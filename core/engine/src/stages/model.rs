//! Model stages: `train` (MLP, logistic regression, decision tree) and `load_model` (ONNX).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Map;

use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::models::{Complement, Logistic, Mlp, MlpConfig, OnnxModel, Tree};
use crate::oracle::{accuracy, Model, Oracle};
use crate::pipeline::params::{Params, Problems};
use crate::pipeline::registry::{InputDoc, ParamDoc, StageKind};
use crate::pipeline::stage::{put, Artifact, ArtifactKind, Inputs, ModelArtifact, Stage, StageContext, StageOutput};

const DATA_INPUT: &[InputDoc] =
    &[InputDoc { role: "data", accepts: &[ArtifactKind::Dataset], required: true, doc: "the dataset to train on / evaluate with" }];

/// The `train` stage kind.
pub const TRAIN: StageKind = StageKind {
    name: "train",
    doc: "Train a model under test on the dataset's train split: the papers' six-layer MLP, logistic regression or a decision tree. Reports train and test accuracy.",
    inputs: DATA_INPUT,
    output: ArtifactKind::Model,
    params: &[
        ParamDoc { name: "algorithm", ty: "\"mlp\"|\"logistic\"|\"tree\"", default: "\"mlp\"", doc: "model family" },
        ParamDoc { name: "hidden", ty: "int list", default: "[64, 32, 16, 8, 4]", doc: "MLP hidden layer widths" },
        ParamDoc { name: "epochs", ty: "int", default: "20", doc: "MLP passes over the training data" },
        ParamDoc { name: "batch_size", ty: "int", default: "128", doc: "MLP mini-batch size" },
        ParamDoc { name: "learning_rate", ty: "float", default: "0.001", doc: "MLP Adam step size" },
        ParamDoc { name: "max_depth", ty: "int", default: "10", doc: "decision tree depth limit" },
        ParamDoc { name: "max_iterations", ty: "int", default: "200", doc: "logistic regression L-BFGS iterations" },
        ParamDoc { name: "alpha", ty: "float", default: "1.0", doc: "logistic regression L2 penalty" },
    ],
    example: "[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"mlp\"\nepochs = 20",
    build: build_train,
};

/// The `load_model` stage kind.
pub const LOAD_MODEL: StageKind = StageKind {
    name: "load_model",
    doc: "Load a model under test from an ONNX file (two-class probabilities [N,2], a sigmoid [N,1], or a scikit-learn export). Reports train and test accuracy on the dataset.",
    inputs: DATA_INPUT,
    output: ArtifactKind::Model,
    params: &[
        ParamDoc { name: "path", ty: "path", default: "required", doc: "the .onnx file, relative to the pipeline file" },
        ParamDoc { name: "output", ty: "string", default: "first float output named *prob*, else first float output", doc: "name of the output holding the probabilities" },
        ParamDoc {
            name: "executor",
            ty: "\"auto\"|\"tract\"",
            default: "\"auto\"",
            doc: "auto: run a plain dense-layer graph natively once it reproduces tract on every row of the data (no label change, |dp| <= 1e-5); tract: always tract",
        },
    ],
    example: "[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"models/census.onnx\"",
    build: build_load,
};

enum Algorithm {
    Mlp(MlpConfig),
    Logistic { max_iterations: u64, alpha: f64 },
    Tree { max_depth: usize },
}

struct Train {
    algorithm: Algorithm,
}

struct LoadModel {
    path: PathBuf,
    output: Option<String>,
    native: bool,
}

fn build_train(params: &Params, p: &mut Problems, seed: u64) -> Option<Box<dyn Stage>> {
    let algorithm = match params.choice(p, "algorithm", &["mlp", "logistic", "tree"], "mlp").as_str() {
        "logistic" => Algorithm::Logistic {
            max_iterations: params.usize_min(p, "max_iterations", 200, 1) as u64,
            alpha: params.f64_in(p, "alpha", 1.0, 0.0, 1e9),
        },
        "tree" => Algorithm::Tree { max_depth: params.usize_min(p, "max_depth", 10, 1) },
        _ => {
            let defaults = MlpConfig::default();
            Algorithm::Mlp(MlpConfig {
                hidden: params.usize_list(p, "hidden").unwrap_or(defaults.hidden),
                epochs: params.usize_min(p, "epochs", defaults.epochs, 1),
                batch_size: params.usize_min(p, "batch_size", defaults.batch_size, 1),
                learning_rate: params.f64_in(p, "learning_rate", defaults.learning_rate, 1e-9, 10.0),
                seed,
            })
        }
    };
    Some(Box::new(Train { algorithm }))
}

fn build_load(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    let path = params.existing_path(p, "path", "the ONNX model file");
    let output = params.opt_str(p, "output").map(|s| s.v);
    let native = params.choice(p, "executor", &["auto", "tract"], "auto") == "auto";
    Some(Box::new(LoadModel { path: path?.v, output, native }))
}

/// Wrap a model and report its accuracy on the dataset's splits.
fn model_output(model: Arc<dyn Model>, data: Arc<Dataset>, mut figures: Map<String, serde_json::Value>) -> Result<StageOutput> {
    let oracle = Oracle::new(model);
    put(&mut figures, "model", oracle.model().describe());
    let (x_train, y_train) = data.subset(Split::Train);
    let (acc_train, _) = accuracy(&oracle, &x_train, &y_train)?;
    let (x_test, y_test) = data.subset(Split::Test);
    let (acc_test, correct_test) = accuracy(&oracle, &x_test, &y_test)?;
    put(&mut figures, "accuracy_train", acc_train);
    put(&mut figures, "accuracy_test", acc_test);
    put(&mut figures, "correct_test", correct_test);
    put(&mut figures, "total_test", y_test.len());
    let model_queries = oracle.rows();
    Ok(StageOutput { artifact: Artifact::Model(Arc::new(ModelArtifact { oracle, data })), figures, tables: Vec::new(), model_queries })
}

impl Stage for Train {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        let (x, y) = data.subset(Split::Train);
        let started = Instant::now();
        let model: Arc<dyn Model> = match &self.algorithm {
            Algorithm::Mlp(config) => Arc::new(Mlp::train(&x, &y, config)?),
            Algorithm::Logistic { max_iterations, alpha } => Arc::new(Logistic::train(&x, &y, *max_iterations, *alpha)?),
            Algorithm::Tree { max_depth } => Arc::new(Tree::train(&x, &y, Some(*max_depth))?),
        };
        let mut figures = Map::new();
        put(&mut figures, "train_elapsed_s", started.elapsed().as_secs_f64());
        model_output(model, data, figures)
    }
}

impl Stage for LoadModel {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        let mut model = OnnxModel::load(&self.path, data.domain.width(), self.output.as_deref())?;
        let mut figures = Map::new();
        put(&mut figures, "output", model.output_name());
        if self.native {
            let rows: Vec<f64> = data.x.iter().copied().collect();
            if let Some(check) = model.verify_native(&rows)? {
                put(&mut figures, "native_checked_rows", check.rows);
                put(&mut figures, "native_max_abs_diff", check.max_abs_diff);
                put(&mut figures, "native_label_flips", check.label_flips);
            }
        }
        put(&mut figures, "executor", model.executor());
        let model: Arc<dyn Model> = if data.label_flipped { Arc::new(Complement(Arc::new(model))) } else { Arc::new(model) };
        model_output(model, data, figures)
    }
}
