//! Opening an ONNX file with the executor chosen ([`Executor`]): the native tree executor for a
//! tree ensemble it covers, ONNX Runtime where the graph needs it, tract (replaced by the native
//! dense executor once it reproduces tract on the data), each held against ONNX Runtime on the
//! data's rows where it is installed (`auto`).

use std::path::Path;
use std::sync::Arc;

use super::{check_protected_read, read_output, unused_features, versus_rest, Executor, OpenRequest, Opened};
use crate::error::ModelError;
use crate::inputs::InputPlan;
use crate::model::Model;
use crate::onnx::facts::{graph_facts, GraphFacts};
use crate::onnx::ort::OutputChoice;
use crate::onnx::runtime::runtime;
use crate::outputs::{ClassKey, Favourable};
use crate::trees::Graph as TreeGraph;
use crate::{OnnxModel, OrtModel, TreeModel};
use fairpipe_data::Dataset;

/// Rows on which tract (or the native executor) is compared with onnxruntime.
const REFERENCE_CHECK_ROWS: usize = 20_000;

/// Largest probability difference accepted between an executor and onnxruntime.
const REFERENCE_TOLERANCE: f64 = 1e-5;

/// What holding an executor against ONNX Runtime decided.
enum Reference {
    /// The executor stays: it reproduces ONNX Runtime, or ONNX Runtime cannot run the graph.
    Kept,
    /// The executor stays, unchecked: ONNX Runtime is not available.
    NoRuntime,
    /// ONNX Runtime runs the model instead: the executor differs from it.
    Replaced(Arc<dyn Model>),
}

/// Open the ONNX file `path` with the executor `request` chooses (see [`Executor`]).
pub(super) fn open(request: &OpenRequest, path: &Path, data: &Dataset, opened: &mut Opened) -> Result<Arc<dyn Model>, ModelError> {
    Onnx { request, path, data, opened }.load()
}

/// One ONNX file being opened for a dataset.
struct Onnx<'a> {
    request: &'a OpenRequest,
    path: &'a Path,
    data: &'a Dataset,
    opened: &'a mut Opened,
}

impl Onnx<'_> {
    /// Load the ONNX model with the executor chosen.
    fn load(&mut self) -> Result<Arc<dyn Model>, ModelError> {
        let (request, data) = (self.request, self.data);
        let mut facts = graph_facts(self.path)?;
        if !request.inputs.is_empty() {
            // Only ONNX Runtime's input plan follows the map.
            facts.needs_onnxruntime.push("the `inputs` map".into());
        }
        let favourable = request.favourable(data);
        let rows: Vec<f64> = data.x.iter().copied().collect();
        let mut needs = facts.needs_onnxruntime.join(", ");
        // A tree ensemble: the native tree executor when it covers the graph.
        if matches!(request.executor, Executor::Auto | Executor::Native) && !facts.needs_onnxruntime.is_empty() && request.inputs.is_empty()
        {
            match TreeGraph::read(self.path, data.domain.width()) {
                Ok(graph) => return self.load_trees(favourable, &facts, graph, &rows),
                Err(uncovered) if request.executor == Executor::Native => {
                    return Err(self.refused(format!(
                        "executor = \"native\" cannot run it: the native tree executor does not cover {uncovered}; use executor = \"auto\" or \"onnxruntime\""
                    )));
                }
                Err(uncovered) if facts.needs_onnxruntime.iter().any(|n| n.contains("TreeEnsemble")) => {
                    needs = format!("{needs} (the native tree executor does not cover {uncovered})");
                }
                Err(_) => {}
            }
        }
        match request.executor {
            Executor::Onnxruntime => return self.load_ort(favourable, &facts, &rows, "executor = \"onnxruntime\""),
            Executor::Auto if !facts.needs_onnxruntime.is_empty() => {
                return self.load_ort(favourable, &facts, &rows, &needs);
            }
            Executor::Native | Executor::Tract if !facts.needs_onnxruntime.is_empty() => {
                return Err(self.refused(format!(
                    "executor = \"{}\" cannot run {needs}; use executor = \"onnxruntime\" (or \"auto\")",
                    request.executor.name()
                )));
            }
            _ => {}
        }
        let mut model = match OnnxModel::load(self.path, data.domain.width(), request.output.as_deref()) {
            Ok(model) => model,
            Err(refused) if request.executor == Executor::Auto => {
                let reason = format!("a graph that tract refuses ({refused})");
                return self.load_ort(favourable, &facts, &rows, &reason);
            }
            Err(refused) => return Err(refused),
        };
        let probe = &rows[..rows.len().min(256 * data.domain.width())];
        model.read_output_as(&favourable, request.transform, probe)?;
        model.refuse_hidden_nan(&rows[..rows.len().min(REFERENCE_CHECK_ROWS * data.domain.width())])?;
        self.opened.output = Some(model.output_name().to_string());
        self.opened.output_read = Some(model.reader().describe());
        self.opened.favourable_class_assumed = Some(model.reader().assumed_class);
        versus_rest(self.opened, model.reader());
        self.opened.input_contract = Some(format!("one float32 input [N,{}] (encoded features)", data.domain.width()));
        if request.executor != Executor::Tract {
            match model.verify_native(&rows)? {
                Some(check) => {
                    self.opened.native_checked_rows = Some(check.rows);
                    self.opened.native_max_abs_diff = Some(check.max_abs_diff);
                    self.opened.native_label_flips = Some(check.label_flips);
                    if request.executor == Executor::Native && !check.used {
                        return Err(self.refused(format!(
                            "executor = \"native\": the native dense executor does not reproduce tract on the data ({} label flips, max |dp| {:e}); use \"auto\" or \"tract\"",
                            check.label_flips, check.max_abs_diff
                        )));
                    }
                }
                None if request.executor == Executor::Native => {
                    return Err(self.refused(
                        "executor = \"native\": the graph is not a plain stack of dense layers; use \"auto\" or \"tract\"".into(),
                    ));
                }
                None => {}
            }
        }
        self.opened.executor = Some(model.executor());
        if request.executor == Executor::Auto {
            let executor = model.executor();
            if let Reference::Replaced(reference) =
                self.check_against_onnxruntime(&model, model.output_name(), &executor, favourable, facts.classes, &rows)?
            {
                return Ok(reference);
            }
        }
        Ok(Arc::new(model))
    }

    /// The file refused, saying why.
    fn refused(&self, message: String) -> ModelError {
        ModelError::Onnx { path: self.path.to_path_buf(), message }
    }

    /// Where ONNX Runtime is installed, hold tract's (or the native executor's) probabilities
    /// against it on the data's rows: a graph that tract runs differently (seen: `Sqrt` of a
    /// negative number, NaN in onnxruntime, a number in tract) is then run by ONNX Runtime, and
    /// its NaN refused, instead of audited on tract's figures. Without ONNX Runtime the check is
    /// skipped, and `reference_check` says so.
    fn check_against_onnxruntime(
        &mut self,
        model: &dyn Model,
        output: &str,
        executor: &str,
        favourable: Favourable,
        classes: Vec<ClassKey>,
        rows: &[f64],
    ) -> Result<Reference, ModelError> {
        let (request, data) = (self.request, self.data);
        let Ok(runtime) = runtime(request.onnxruntime.as_deref()) else {
            self.opened.reference_check = Some("skipped: ONNX Runtime is not available".into());
            return Ok(Reference::NoRuntime);
        };
        let choice = OutputChoice { name: Some(output), transform: request.transform, favourable, classes };
        let reference = match OrtModel::load(self.path, runtime, &data.domain, &request.feeding(data), choice, rows) {
            Ok(reference) => reference,
            Err(e @ ModelError::NotFinite { .. }) => return Err(e),
            Err(e) => {
                self.opened.reference_check = Some(format!("not made: onnxruntime cannot run it ({e})"));
                return Ok(Reference::Kept);
            }
        };
        let width = data.domain.width();
        let n = (rows.len() / width.max(1)).min(REFERENCE_CHECK_ROWS);
        let rows = &rows[..n * width];
        let mut ours = vec![0.0; n];
        model.predict_into(rows, &mut ours)?;
        let mut theirs = vec![0.0; n];
        reference.predict_into(rows, &mut theirs)?;
        let max_abs_diff =
            ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs()).fold(0.0, |m: f64, d| if d.is_nan() || d > m { d } else { m }); // a NaN on one side is a difference
        let flips = ours.iter().zip(&theirs).filter(|(a, b)| (**a > 0.5) != (**b > 0.5)).count();
        let opened = &mut *self.opened;
        opened.reference_checked_rows = Some(n);
        opened.reference_max_abs_diff = Some(max_abs_diff);
        if flips == 0 && max_abs_diff <= REFERENCE_TOLERANCE {
            opened.reference_check = Some(format!("{executor} reproduces onnxruntime {}", reference.runtime().version));
            return Ok(Reference::Kept);
        }
        opened.reference_check = Some(format!(
            "{executor} differs from onnxruntime {} ({flips} label flips, max |dp| {max_abs_diff:e}): onnxruntime runs it",
            reference.runtime().version
        ));
        opened.executor = Some(reference.executor());
        opened.executor_reason =
            Some(format!("{}'s probabilities differ from onnxruntime's", executor.split(' ').next().unwrap_or(executor)));
        opened.onnxruntime_path = Some(reference.runtime().path.display().to_string());
        opened.native_checked_rows = None;
        opened.native_max_abs_diff = None;
        opened.native_label_flips = None;
        Ok(Reference::Replaced(Arc::new(reference)))
    }

    /// Load the model with ONNX Runtime, `reason` saying why it runs it.
    fn load_ort(&mut self, favourable: Favourable, facts: &GraphFacts, rows: &[f64], reason: &str) -> Result<Arc<dyn Model>, ModelError> {
        let (request, data) = (self.request, self.data);
        let runtime = runtime(request.onnxruntime.as_deref()).map_err(|e| ModelError::RuntimeMissing {
            path: self.path.to_path_buf(),
            reason: reason.to_string(),
            message: e.message,
        })?;
        self.refuse_numbered_class(facts)?;
        let choice =
            OutputChoice { name: request.output.as_deref(), transform: request.transform, favourable, classes: facts.classes.clone() };
        let model = OrtModel::load(self.path, runtime, &data.domain, &request.feeding(data), choice, rows)?;
        let read = model.input_plan().attributes_read(data.domain.width());
        check_protected_read(self.path, data, &read)?;
        check_known_categories(self.path, data, model.input_plan(), facts)?;
        read_output(self.opened, model.output_name(), model.reader());
        self.opened.input_contract = Some(model.input_plan().describe());
        self.opened.unused_features = unused_features(data, &read);
        self.opened.executor = Some(model.executor());
        self.opened.executor_reason = Some(reason.to_string());
        self.opened.onnxruntime_path = Some(model.runtime().path.display().to_string());
        Ok(Arc::new(model))
    }

    /// `favourable_class` names a numbered class: refused for a model that names its classes by
    /// text (they are matched to the data's label by name).
    fn refuse_numbered_class(&self, facts: &GraphFacts) -> Result<(), ModelError> {
        if let Some(class) = self.request.favourable_class {
            if facts.classes.iter().any(|c| matches!(c, ClassKey::Text(_))) {
                let names: Vec<String> = facts.classes.iter().map(ToString::to_string).collect();
                return Err(self.refused(format!(
                    "`favourable_class = {class}` names a numbered class, but the model names its classes [{}] and they are matched to the data's label by name: leave `favourable_class` out, and set `favourable` on the load stage to the one that is favourable",
                    names.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// Load a tree ensemble the native tree executor covers, and hold it against ONNX Runtime on
    /// the data's rows when ONNX Runtime is installed: with `auto`, a difference hands the model
    /// to ONNX Runtime; with `native`, it is an error. Without ONNX Runtime the model runs
    /// unchecked, and `executor_reason` says so.
    fn load_trees(
        &mut self,
        favourable: Favourable,
        facts: &GraphFacts,
        graph: TreeGraph,
        rows: &[f64],
    ) -> Result<Arc<dyn Model>, ModelError> {
        let request = self.request;
        self.refuse_numbered_class(facts)?;
        let operators = graph.operators().join(", ");
        let choice = OutputChoice {
            name: request.output.as_deref(),
            transform: request.transform,
            favourable: favourable.clone(),
            classes: facts.classes.clone(),
        };
        let model = TreeModel::load(self.path, graph, choice, rows)?;
        read_output(self.opened, model.output_name(), model.reader());
        self.opened.input_contract = Some(format!("one float32 input [N,{}] (encoded features)", self.data.domain.width()));
        let executor = model.executor();
        self.opened.executor = Some(executor.clone());
        let covers = format!("the native tree executor covers every operator of the graph ({operators})");
        self.opened.executor_reason = Some(covers.clone());
        let reference = self.check_against_onnxruntime(&model, model.output_name(), &executor, favourable, facts.classes.clone(), rows)?;
        match reference {
            Reference::Replaced(_) if request.executor == Executor::Native => Err(self.refused(format!(
                "executor = \"native\": {}; use executor = \"auto\" or \"onnxruntime\"",
                self.opened.reference_check.clone().unwrap_or_default()
            ))),
            Reference::Replaced(reference) => Ok(reference),
            Reference::NoRuntime => {
                self.opened.executor_reason =
                    Some(format!("{covers}; ONNX Runtime is not available, so the reference check against it was skipped"));
                Ok(Arc::new(model))
            }
            Reference::Kept => Ok(Arc::new(model)),
        }
    }
}

/// A string input whose model knows a fixed list of categories (a `OneHotEncoder` ignores an
/// unknown one, a `LabelEncoder` turns it into −1): a data category outside that list would be
/// scored as something else, silently. Refuse it.
fn check_known_categories(path: &Path, data: &Dataset, plan: &InputPlan, facts: &GraphFacts) -> Result<(), ModelError> {
    let InputPlan::Named(feeds) = plan else { return Ok(()) };
    for feed in feeds {
        let Some(known) = facts.categories.get(&feed.input) else { continue };
        let attribute = &data.domain.attributes[feed.attribute];
        let fairpipe_abi::domain::AttributeKind::Categorical { levels } = &attribute.kind else { continue };
        let unknown: Vec<&String> = levels.iter().filter(|l| !known.contains(l)).collect();
        if !unknown.is_empty() {
            return Err(ModelError::Onnx {
                path: path.to_path_buf(),
                message: format!(
                    "column {:?} has categories the model's input {} does not know: {unknown:?} (it knows {known:?}); it would score them as something else. Remove those rows from the data, or map them to known categories",
                    attribute.name, feed.input
                ),
            });
        }
    }
    Ok(())
}
