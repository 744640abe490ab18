//! Model stages: `train` (MLP, logistic regression, decision tree) and `load_model` (ONNX).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Map;

use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::models::{Complement, MlpConfig, ModelFile, OnnxModel, Recipe, SvmConfig, SvmKernel};
use crate::oracle::{accuracy, Model, Oracle};
use crate::pipeline::params::{Params, Problems};
use crate::pipeline::registry::{InputDoc, ParamDoc, StageKind};
use crate::pipeline::stage::{put, Artifact, ArtifactKind, Inputs, ModelArtifact, Stage, StageContext, StageOutput};

const DATA_INPUT: &[InputDoc] =
    &[InputDoc { role: "data", accepts: &[ArtifactKind::Dataset], required: true, doc: "the dataset to train on / evaluate with" }];

/// The `train` stage kind.
pub const TRAIN: StageKind = StageKind {
    name: "train",
    doc: "Train a model under test on the dataset's train split: the papers' six-layer MLP, logistic regression, a decision tree, a random forest or a support vector machine. Reports train and test accuracy; `save` keeps the model in a file that load_model reads.",
    inputs: DATA_INPUT,
    output: ArtifactKind::Model,
    params: &[
        ParamDoc { name: "algorithm", ty: "\"mlp\"|\"logistic\"|\"tree\"|\"forest\"|\"svm\"", default: "\"mlp\"", doc: "model family" },
        ParamDoc { name: "hidden", ty: "int list", default: "[64, 32, 16, 8, 4]", doc: "MLP hidden layer widths" },
        ParamDoc { name: "epochs", ty: "int", default: "20", doc: "MLP passes over the training data" },
        ParamDoc { name: "batch_size", ty: "int", default: "128", doc: "MLP mini-batch size" },
        ParamDoc { name: "learning_rate", ty: "float", default: "0.001", doc: "MLP Adam step size" },
        ParamDoc { name: "max_depth", ty: "int", default: "10", doc: "decision tree (and forest tree) depth limit" },
        ParamDoc { name: "trees", ty: "int", default: "100", doc: "random forest size" },
        ParamDoc { name: "max_features", ty: "int", default: "ceil(2n/3)", doc: "features each forest tree is grown on (a random subset per tree)" },
        ParamDoc { name: "save", ty: "path", default: "none", doc: "write the trained model (JSON, with its recipe) here, relative to the pipeline file, when the run succeeds" },
        ParamDoc { name: "max_iterations", ty: "int", default: "200", doc: "logistic regression L-BFGS iterations" },
        ParamDoc { name: "alpha", ty: "float", default: "1.0", doc: "logistic regression L2 penalty" },
        ParamDoc { name: "kernel", ty: "\"rbf\"|\"linear\"", default: "\"rbf\"", doc: "SVM kernel (inputs are standardised)" },
        ParamDoc { name: "c", ty: "float", default: "1.0", doc: "SVM penalty C" },
        ParamDoc { name: "gamma", ty: "float", default: "1 / features", doc: "RBF kernel width (scikit-learn's \"scale\" on standardised inputs)" },
        ParamDoc {
            name: "max_rows",
            ty: "int",
            default: "5000",
            doc: "SVM trains on a seeded random subsample of at most this many rows: linfa-svm keeps the rows x rows kernel matrix in memory",
        },
    ],
    example: "[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"mlp\"\nepochs = 20",
    build: build_train,
};

/// The `load_model` stage kind.
pub const LOAD_MODEL: StageKind = StageKind {
    name: "load_model",
    doc: "Load a model under test from an ONNX file (two-class probabilities [N,2], a sigmoid [N,1], or a scikit-learn export) or from a model file saved by a train stage (which can be retrained). Reports train and test accuracy on the dataset.",
    inputs: DATA_INPUT,
    output: ArtifactKind::Model,
    params: &[
        ParamDoc { name: "path", ty: "path", default: "required", doc: "an .onnx file, or a .json model saved by a train stage, relative to the pipeline file" },
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

struct Train {
    recipe: Recipe,
    save: Option<PathBuf>,
}

struct LoadModel {
    path: PathBuf,
    output: Option<String>,
    native: bool,
}

fn build_train(params: &Params, p: &mut Problems, seed: u64) -> Option<Box<dyn Stage>> {
    let recipe = match params.choice(p, "algorithm", &["mlp", "logistic", "tree", "forest", "svm"], "mlp").as_str() {
        "logistic" => Recipe::Logistic {
            max_iterations: params.usize_min(p, "max_iterations", 200, 1) as u64,
            alpha: params.f64_in(p, "alpha", 1.0, 0.0, 1e9),
        },
        "tree" => Recipe::Tree { max_depth: params.usize_min(p, "max_depth", 10, 1) },
        "forest" => Recipe::Forest {
            trees: params.usize_min(p, "trees", 100, 1),
            max_depth: params.usize_min(p, "max_depth", 10, 1),
            max_features: params.raw("max_features").map(|_| params.usize_min(p, "max_features", 1, 1)),
            seed,
        },
        "svm" => Recipe::Svm(SvmConfig {
            kernel: match params.choice(p, "kernel", &["rbf", "linear"], "rbf").as_str() {
                "linear" => SvmKernel::Linear,
                _ => SvmKernel::Rbf { gamma: params.raw("gamma").map(|_| params.f64_in(p, "gamma", 1.0, 1e-12, 1e12)) },
            },
            c: params.f64_in(p, "c", 1.0, 1e-12, 1e12),
            max_rows: params.usize_min(p, "max_rows", 5000, 2),
            seed,
        }),
        _ => {
            let defaults = MlpConfig::default();
            Recipe::Mlp(MlpConfig {
                hidden: params.usize_list(p, "hidden").unwrap_or(defaults.hidden),
                epochs: params.usize_min(p, "epochs", defaults.epochs, 1),
                batch_size: params.usize_min(p, "batch_size", defaults.batch_size, 1),
                learning_rate: params.f64_in(p, "learning_rate", defaults.learning_rate, 1e-9, 10.0),
                seed,
            })
        }
    };
    let save = params.opt_path(p, "save").map(|s| s.v);
    Some(Box::new(Train { recipe, save }))
}

fn build_load(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    let path = params.existing_path(p, "path", "the ONNX model file");
    let output = params.opt_str(p, "output").map(|s| s.v);
    let native = params.choice(p, "executor", &["auto", "tract"], "auto") == "auto";
    Some(Box::new(LoadModel { path: path?.v, output, native }))
}

/// Wrap a model and report its accuracy on the dataset's splits.
pub(crate) fn model_output(
    model: Arc<dyn Model>,
    data: Arc<Dataset>,
    recipe: Option<Recipe>,
    mut figures: Map<String, serde_json::Value>,
) -> Result<StageOutput> {
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
    Ok(StageOutput {
        artifact: Artifact::Model(Arc::new(ModelArtifact { oracle, data, recipe })),
        figures,
        tables: Vec::new(),
        model_queries,
    })
}

impl Stage for Train {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        let (x, y) = data.subset(Split::Train);
        let started = Instant::now();
        let fitted = self.recipe.fit(&x, &y)?;
        let mut figures = Map::new();
        put(&mut figures, "train_elapsed_s", started.elapsed().as_secs_f64());
        if let Some(path) = &self.save {
            let names = data.domain.attributes.iter().map(|a| a.name.clone()).collect();
            let file = ModelFile::new(names, self.recipe.clone(), fitted.clone());
            ctx.write_later(path.clone(), file.to_json()?.into_bytes());
            put(&mut figures, "saved", path.display().to_string());
        }
        let model = fitted.into_model();
        model_output(model, data, Some(self.recipe.clone()), figures)
    }
}

impl Stage for LoadModel {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        if self.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            let names: Vec<String> = data.domain.attributes.iter().map(|a| a.name.clone()).collect();
            let file = ModelFile::load(&self.path, &names)?;
            let mut figures = Map::new();
            put(&mut figures, "algorithm", file.recipe.name());
            return model_output(file.model.into_model(), data, Some(file.recipe), figures);
        }
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
        model_output(model, data, None, figures)
    }
}
