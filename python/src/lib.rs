//! `fairpipe_rs._native`: the fairpipe engine and its built-in methods as a Python extension
//! module. The public API (`fairpipe_rs.audit`, `fairpipe_rs.run`, `Run`) is written in Python
//! over these functions (python/fairpipe_rs/__init__.py); nothing here is meant to be called
//! directly.

mod arrow;
mod caller;
mod cli;
mod convert;
mod cost;
mod model;
mod progress;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fairpipe_core::error::{ConfigError, ConfigProblem, Error};
use fairpipe_core::models::provided::ProvidedModel;
use fairpipe_core::output::Table;
use fairpipe_core::preset::stage_names::{BIAS_AUDIT, CHECK, DATA, ESTIMATE, GROUP_METRICS, PAIRWISE, RANKING};
use fairpipe_core::preset::{standard_estimate, standard_generate, ModelStage, Search, Seeds, StandardAudit, SEARCH_METHOD};
use fairpipe_core::run::{Pipeline, Replacement};
use fairpipe_core::stages::bias_audit::BiasAuditConfig;
use fairpipe_core::stages::check::CheckConfig;
use fairpipe_core::stages::generate::GenerateConfig;
use fairpipe_core::stages::group_metrics::GroupMetricsConfig;
use fairpipe_core::stages::load::{LabelValue, LoadConfig};
use fairpipe_core::stages::load_model::LoadModelConfig;
use polars::prelude::{AnyValue, Column, DataFrame, NamedFrom, Series};
use pyo3::exceptions::{PyImportError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use serde_json::Value;

use arrow::{frame_from_py, ArrowTable};
use caller::{ArgumentError, AuditError};
use model::{LastError, PySource};

/// The column `audit` adds to say which rows are measured (`test`) when `test=` is given.
const SPLIT_COLUMN: &str = "__fairpipe_split";

/// A finished run: the summary, the result tables and the files written (when `out` was given).
#[pyclass(module = "fairpipe_rs._native", frozen)]
struct NativeRun {
    summary: fairpipe_core::run::Summary,
    tables: Vec<(String, Table)>,
    files: Vec<String>,
}

#[pymethods]
impl NativeRun {
    /// The summary (what `summary.json` holds) as a dict.
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.summary.to_json())
    }

    /// The names of the result tables: the stage's name, or `STAGE_SUFFIX` for a stage's second
    /// table (as the CSV files are named).
    fn table_names(&self) -> Vec<String> {
        self.tables.iter().map(|(stage, t)| table_name(stage, t)).collect()
    }

    /// Table `name` (see `table_names`) as an Arrow stream; `newest`: with string views.
    fn table(&self, name: &str, newest: bool) -> Option<ArrowTable> {
        self.tables.iter().find(|(stage, t)| table_name(stage, t) == name).map(|(_, t)| ArrowTable::new(t.frame.clone(), newest))
    }

    /// The HTML report (what `report.html` holds).
    fn report_html(&self, py: Python<'_>) -> String {
        py.detach(|| fairpipe_core::report::render(&self.summary, &self.tables))
    }

    /// The files written, when the run was given a folder.
    fn files(&self) -> Vec<String> {
        self.files.clone()
    }
}

/// `STAGE`, or `STAGE_SUFFIX` for a table with a suffix.
fn table_name(stage: &str, table: &Table) -> String {
    if table.suffix.is_empty() {
        stage.to_string()
    } else {
        format!("{stage}_{}", table.suffix)
    }
}

/// One problem as `fairpipe_rs.Problem` takes it.
struct Located {
    file: Option<String>,
    line: Option<usize>,
    column: Option<usize>,
    message: String,
}

/// The keys of the stage `audit` names `stage` (its kind's documented keys).
fn stage_keys(stage: &str) -> Vec<&'static str> {
    fairpipe_core::preset::stage_kind(stage).map(|k| k.all_keys()).unwrap_or_default()
}

/// A problem of the pipeline `audit` built in code (located at `<code>:1:1`, or a `<gate>`
/// condition), said of the argument that set it, unlocated.
fn in_callers_terms(problem: &fairpipe_core::error::ConfigProblem) -> Located {
    let file = problem.file.display().to_string();
    let message = match (file.as_str(), caller::split_stage(&problem.message)) {
        ("<code>", Some((stage, rest))) => {
            format!("argument `{}`: {rest}", caller::argument(stage, caller::first_key(rest, &stage_keys(stage))))
        }
        ("<gate>", _) => format!("argument `gate`: {}", problem.message),
        _ => problem.message.clone(),
    };
    Located { file: None, line: None, column: None, message: caller::without_column(&message, SPLIT_COLUMN) }
}

/// The Python exception for engine error `e`: `fairpipe_rs.PipelineError` with its problems,
/// chained to the Python exception a model raised, if that is what failed. With `audit`, the
/// pipeline was built by `audit` and its problems are said of its arguments ([`caller`]).
fn engine_error(py: Python<'_>, e: Error, last: &LastError, audit: bool) -> PyErr {
    let located: Vec<Located> = match &e {
        Error::Config(ConfigError { problems }) if audit => problems.iter().map(in_callers_terms).collect(),
        Error::Config(ConfigError { problems }) => problems
            .iter()
            .map(|p| Located {
                file: Some(p.file.display().to_string()),
                line: Some(p.line),
                column: Some(p.col),
                message: p.message.clone(),
            })
            .collect(),
        Error::Stage { stage, source, .. } if audit => {
            let argument = caller::argument(stage, e.refused_key());
            let message = caller::without_column(&format!("argument `{argument}`: {source}"), SPLIT_COLUMN);
            vec![Located { file: None, line: None, column: None, message }]
        }
        other if audit => {
            let message = caller::without_column(&caller::of_argument(&other.to_string()), SPLIT_COLUMN);
            vec![Located { file: None, line: None, column: None, message }]
        }
        other => vec![Located { file: None, line: None, column: None, message: other.to_string() }],
    };
    let summary = if audit { located.iter().map(|l| l.message.as_str()).collect::<Vec<_>>().join("\n") } else { e.to_string() };
    let stage = match &e {
        Error::Stage { stage, .. } => Some(stage.clone()),
        _ => None,
    };
    pipeline_error(py, summary, located, stage, last)
}

/// The Python exception for an argument `audit` refused before the engine ran: a
/// `fairpipe_rs.PipelineError` with one unlocated problem said of the argument.
fn argument_error(py: Python<'_>, refused: &ArgumentError, last: &LastError) -> PyErr {
    let message = caller::without_column(&format!("argument `{}`: {}", refused.argument, refused.message), SPLIT_COLUMN);
    let located = vec![Located { file: None, line: None, column: None, message: message.clone() }];
    pipeline_error(py, message, located, None, last)
}

/// `fairpipe_rs.PipelineError(summary, problems, stage)`, chained to the Python exception a model
/// raised, if that is what failed (a KeyboardInterrupt a model raised is raised as it is).
fn pipeline_error(py: Python<'_>, summary: String, located: Vec<Located>, stage: Option<String>, last: &LastError) -> PyErr {
    let cause = last.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(interrupt) = cause.as_ref().filter(|c| c.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)) {
        return interrupt.clone_ref(py);
    }
    let made = (|| -> PyResult<PyErr> {
        let problems = PyList::empty(py);
        for problem in located {
            let p = PyDict::new(py);
            p.set_item("file", problem.file)?;
            p.set_item("line", problem.line)?;
            p.set_item("column", problem.column)?;
            p.set_item("message", problem.message)?;
            problems.append(p)?;
        }
        let class = py.import("fairpipe_rs._errors")?.getattr("PipelineError")?;
        let error = PyErr::from_value(class.call1((summary, problems, stage))?);
        if let Some(cause) = cause {
            error.set_cause(py, Some(cause));
        }
        Ok(error)
    })();
    made.unwrap_or_else(|failed| failed)
}

/// Parse gate conditions (`STAGE.FIELD OP NUMBER`).
fn gate_conditions(gate: &[String]) -> Result<Vec<fairpipe_core::gate::Condition>, Error> {
    gate.iter()
        .map(|c| {
            c.parse::<fairpipe_core::gate::Condition>()
                .map_err(|e| Error::Config(one_problem(Path::new("<gate>"), format!("gate condition {c:?}: {e}"))))
        })
        .collect()
}

/// Run `pipeline`; with `out`, write its files there as the CLI does; `draw`: the command line's
/// progress bars on standard error (when it is a terminal).
fn execute(pipeline: &Pipeline, out: Option<&Path>, draw: bool) -> Result<NativeRun, Error> {
    let run = pipeline.execute(draw)?;
    let files = match out {
        Some(out) => run.write(out, pipeline.report)?.iter().map(|p| p.display().to_string()).collect(),
        None => Vec::new(),
    };
    Ok(NativeRun { summary: run.summary, tables: run.tables, files })
}

/// Run a TOML pipeline (`text`, read from `file`; `from_file`: read it from `file` instead),
/// with the `load` stages in `data` reading a frame and the `load_model` stages in `models` using
/// a Python model (`fairpipe_rs._model.ModelSpec`); `progress` as [`progress::Show::from_py`]
/// reads it.
#[pyfunction]
#[pyo3(signature = (file, text=None, seed=None, out=None, gate=Vec::new(), data=Vec::new(), models=Vec::new(), progress=None))]
#[allow(clippy::too_many_arguments)]
fn run_pipeline(
    py: Python<'_>,
    file: PathBuf,
    text: Option<String>,
    seed: Option<u64>,
    out: Option<PathBuf>,
    gate: Vec<String>,
    data: Vec<(String, Bound<'_, PyAny>)>,
    models: Vec<(String, Bound<'_, PyAny>)>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<NativeRun> {
    let last: LastError = LastError::default();
    let show = progress::Show::from_py(progress)?;
    let mut replacements = Vec::new();
    for (stage, frame) in &data {
        replacements.push((stage.clone(), Replacement::Frame(frame_from_py(frame, &format!("data[{stage:?}]"))?)));
    }
    for (stage, spec) in &models {
        replacements.push((stage.clone(), Replacement::Model(ProvidedModel(Arc::new(PySource::new(spec, Arc::clone(&last))?)))));
    }
    let result = progress::followed(py, show, |draw| -> Result<NativeRun, Error> {
        let mut pipeline = match text {
            Some(text) => Pipeline::parse(&file, &text, seed)?,
            None => Pipeline::load(&file, seed)?,
        };
        for (stage, replacement) in replacements {
            pipeline.replace_input(&stage, replacement)?;
        }
        pipeline.gate.extend(gate_conditions(&gate)?);
        execute(&pipeline, out.as_deref(), draw)
    });
    result.map_err(|e| engine_error(py, e, &last, false))
}

/// `config` (a stage config type) from JSON `options` over `defaults`.
fn config_from<C: serde::de::DeserializeOwned>(stage: &str, defaults: Value, options: Option<&Value>) -> Result<C, ArgumentError> {
    let mut merged = match defaults {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    match options {
        Some(Value::Object(given)) => merged.extend(given.clone()),
        Some(Value::Null) | None => {}
        Some(other) => {
            return Err(ArgumentError::new(format!("options[{stage:?}]"), format!("must be a dict of the stage's keys, found {other}")))
        }
    }
    caller::read_keys(&format!("options[{stage:?}]"), Value::Object(merged))
}

/// `data` with a split column: `test` where `mask` is true.
fn with_split(mut frame: DataFrame, mask: &[u8]) -> Result<DataFrame, ArgumentError> {
    if mask.len() != frame.height() {
        return Err(ArgumentError::new("test", format!("the mask has {} values for {} rows of data", mask.len(), frame.height())));
    }
    if !mask.contains(&1) {
        return Err(ArgumentError::new("test", "the mask selects no row"));
    }
    let split: Vec<&str> = mask.iter().map(|&m| if m != 0 { "test" } else { "train" }).collect();
    frame.with_column(Column::from(Series::new(SPLIT_COLUMN.into(), split))).map_err(|e| ArgumentError::new("test", e.to_string()))?;
    Ok(frame)
}

/// `frame` with the split column saying `split` on every row.
fn labelled(mut frame: DataFrame, split: &str) -> Result<DataFrame, ArgumentError> {
    let n = frame.height();
    frame
        .with_column(Column::from(Series::new(SPLIT_COLUMN.into(), vec![split; n])))
        .map_err(|e| ArgumentError::new("test", e.to_string()))?;
    Ok(frame)
}

/// `data` with the rows of a second table `test` as its test split. When every row of `test` is
/// also a row of `data` (a table cut from the data, `df.drop(train.index)`), those rows of `data`
/// are the test split and the rest the train split, so no row is counted twice and no test row as
/// a training row; otherwise `data` (split `train`) above `test` (split `test`).
fn with_test_frame(data: DataFrame, test: DataFrame) -> Result<DataFrame, ArgumentError> {
    if data.schema() == test.schema() && test.height() > 0 {
        if let Some(mask) = rows_of(&data, &test)? {
            return with_split(data, &mask);
        }
    }
    stacked(data, test)
}

/// For each row of `data`, 1 where it stands for a row of `test`, each row of `data` standing for
/// one row of `test` at most (the first of equal rows first); `None` when a row of `test` is not
/// in `data` (as often as it stands in `test`).
fn rows_of(data: &DataFrame, test: &DataFrame) -> Result<Option<Vec<u8>>, ArgumentError> {
    let mut rows: std::collections::HashMap<String, Vec<usize>> = std::collections::HashMap::new();
    for (i, key) in row_keys(data)?.into_iter().enumerate().rev() {
        rows.entry(key).or_default().push(i);
    }
    let mut mask = vec![0u8; data.height()];
    for key in row_keys(test)? {
        match rows.get_mut(&key).and_then(Vec::pop) {
            Some(i) => mask[i] = 1,
            None => return Ok(None),
        }
    }
    Ok(Some(mask))
}

/// A text per row of `frame`, equal for rows whose cells are equal (a float by its bits, every NaN
/// alike; text quoted, so no cell runs into the next).
fn row_keys(frame: &DataFrame) -> Result<Vec<String>, ArgumentError> {
    let mut keys = vec![String::new(); frame.height()];
    for column in frame.columns() {
        for (i, key) in keys.iter_mut().enumerate() {
            let cell = column.get(i).map_err(|e| ArgumentError::new("test", e.to_string()))?;
            let float = |f: f64| if f.is_nan() { "NaN".to_string() } else { f.to_bits().to_string() };
            let text = match cell {
                AnyValue::Null => "null".to_string(),
                AnyValue::Float64(f) => float(f),
                AnyValue::Float32(f) => float(f64::from(f)),
                other => format!("{:?}", other.str_value()),
            };
            key.push_str(&text);
            key.push(',');
        }
    }
    Ok(keys)
}

/// `data` (split `train`) above `test` (split `test`).
fn stacked(data: DataFrame, test: DataFrame) -> Result<DataFrame, ArgumentError> {
    let mut data = labelled(data, "train")?;
    let test = labelled(test, "test")?;
    if data.schema() != test.schema() {
        let show = |f: &DataFrame| f.columns().iter().map(|c| format!("{}: {}", c.name(), c.dtype())).collect::<Vec<_>>().join(", ");
        return Err(ArgumentError::new(
            "test",
            format!(
                "the test frame's columns must be the data's, with the same types; data has [{}], test has [{}]",
                show(&data),
                show(&test)
            ),
        ));
    }
    data.vstack_mut(&test).map_err(|e| ArgumentError::new("test", e.to_string()))?;
    Ok(data)
}

/// The common audit in one call (`fairpipe_rs.audit` documents the arguments).
#[pyfunction]
#[pyo3(signature = (data, label, protected, favourable=None, features=None, drop=Vec::new(), test_mask=None, test_frame=None, model_spec=None, model_config=None, seed=0, checks=Vec::new(), search=None, gate=Vec::new(), options=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn audit(
    py: Python<'_>,
    data: Bound<'_, PyAny>,
    label: String,
    protected: Vec<String>,
    favourable: Option<Bound<'_, PyAny>>,
    features: Option<Vec<String>>,
    drop: Vec<String>,
    test_mask: Option<Bound<'_, PyBytes>>,
    test_frame: Option<Bound<'_, PyAny>>,
    model_spec: Option<Bound<'_, PyAny>>,
    model_config: Option<Bound<'_, PyAny>>,
    seed: u64,
    checks: Vec<String>,
    search: Option<Bound<'_, PyAny>>,
    gate: Vec<String>,
    options: Option<Bound<'_, PyAny>>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<NativeRun> {
    let last: LastError = LastError::default();
    let show = progress::Show::from_py(progress)?;
    let frame = frame_from_py(&data, "data")?;
    let test_frame = test_frame.map(|t| frame_from_py(&t, "test")).transpose()?;
    let mask = test_mask.map(|m| m.as_bytes().to_vec());
    let source = model_spec.map(|spec| PySource::new(&spec, Arc::clone(&last))).transpose()?;
    let read = |what: &str, obj: Option<Bound<'_, PyAny>>| obj.map(|o| convert::from_py(&o, what)).transpose();
    let favourable: Option<Value> = read("favourable", favourable)?;
    let search: Option<Value> = read("search", search)?;
    let options: Value = read("options", options)?.unwrap_or(Value::Null);
    let model_config: Option<Value> = read("model", model_config)?;
    let result = progress::followed(py, show, |draw| -> Result<NativeRun, AuditError> {
        let measured = mask.is_some() || test_frame.is_some();
        let frame = match (mask, test_frame) {
            (Some(mask), _) => with_split(frame, &mask)?,
            (None, Some(test)) => with_test_frame(frame, test)?,
            (None, None) => frame,
        };
        let protected_refs: Vec<&str> = protected.iter().map(String::as_str).collect();
        let mut load = LoadConfig::from_frame(frame, &label, &protected_refs);
        load.favourable = favourable
            .map(|f| serde_json::from_value::<LabelValue>(f).map_err(|e| ArgumentError::new("favourable", e.to_string())))
            .transpose()?;
        load.features = features;
        load.drop = drop;
        if measured {
            load.split_column = Some(SPLIT_COLUMN.into());
        }
        let model = match (source, model_config) {
            (Some(source), _) => LoadModelConfig::provided(ProvidedModel(Arc::new(source))),
            (None, Some(config)) => caller::read_keys("model", config)?,
            (None, None) => {
                return Err(ArgumentError::new("model", "give a model object, an ONNX path or a dict of load_model keys").into())
            }
        };
        // The standard audit (fairpipe_core::preset, the pipeline `fairpipe init` writes): its
        // budgets under the caller's options.
        let rows = if measured { "test" } else { "all" };
        let option = |stage: &str| options.get(stage);
        let with_split = |mut config: Value| -> Value {
            if let Value::Object(map) = &mut config {
                map.insert("split".into(), Value::from(rows));
            }
            config
        };
        let mut audit = StandardAudit::new("audit", load, ModelStage::Load(model));
        audit.seed = seed;
        audit.group_metrics.clear();
        audit.estimate = None;
        audit.check = None;
        for check in &checks {
            match check.as_str() {
                GROUP_METRICS => {
                    let defaults = with_split(serde_json::to_value(GroupMetricsConfig::default()).unwrap_or_default());
                    audit.group_metrics.push((GROUP_METRICS.into(), config_from(check, defaults, option(check))?));
                }
                ESTIMATE => {
                    let defaults = serde_json::to_value(standard_estimate()).unwrap_or_default();
                    audit.estimate = Some(config_from(check, defaults, option(check))?);
                }
                CHECK => {
                    let defaults = with_split(serde_json::to_value(CheckConfig::default()).unwrap_or_default());
                    audit.check = Some(config_from(check, defaults, option(check))?);
                }
                BIAS_AUDIT => {
                    // The model's decisions on the measured rows; the axes come in its options.
                    audit.bias_audit = Some(config_from(check, with_split(Value::Object(Default::default())), option(check))?);
                }
                PAIRWISE => {
                    // An LLM's choices between two candidates of each measured row: its `prompt`
                    // (the pair's template) and other keys come in its options.
                    audit.pairwise = Some(config_from(check, with_split(Value::Object(Default::default())), option(check))?);
                }
                RANKING => {
                    // An LLM's pick among several candidates of the measured rows: its `prompt`
                    // (the list's template) and other keys come in its options.
                    audit.ranking = Some(config_from(check, with_split(Value::Object(Default::default())), option(check))?);
                }
                other => {
                    return Err(ArgumentError::new(
                        "checks",
                        format!("unknown check {other:?}; the checks are group_metrics, estimate, check, bias_audit, pairwise and ranking"),
                    )
                    .into())
                }
            }
        }
        if let Some(search) = search {
            let given = search.as_object().cloned().unwrap_or_default();
            let method = given.get("plugin").and_then(Value::as_str).unwrap_or(SEARCH_METHOD).to_string();
            let mut merged = match serde_json::to_value(standard_generate(&method)).unwrap_or_default() {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            if !given.contains_key("plugin") {
                merged.remove("plugin");
            }
            merged.extend(given);
            let generate: GenerateConfig = caller::read_keys("search", Value::Object(merged))?;
            audit.search = Some(Search { seeds: Seeds::Random, generate });
        }
        let mut pipeline = audit.build().map_err(Error::from)?;
        pipeline.gate = gate_conditions(&gate)?;
        Ok(execute(&pipeline, None, draw)?)
    });
    result.map_err(|e| match e {
        AuditError::Argument(refused) => argument_error(py, &refused, &last),
        AuditError::Engine(e) => engine_error(py, e, &last, true),
    })
}

/// The version of the engine inside.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The fairpipe clone this module was built from (where `pipelines/data` is, while it exists).
#[pyfunction]
fn source_tree() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/..")
}

/// The built-in methods: name, kind and description, as `fairpipe list` shows them.
#[pyfunction]
fn builtin_reference() -> String {
    fairpipe_builtins::builtin_reference()
}

/// The configuration keys of stage kind `kind` (its inputs left out), as `fairpipe list` prints
/// them: Python reads which keys of a `search=` dict are the `generate` stage's own from here.
#[pyfunction]
fn kind_keys(kind: &str) -> PyResult<Vec<&'static str>> {
    let found = fairpipe_core::stages::kind(kind).ok_or_else(|| PyValueError::new_err(format!("no stage kind {kind:?}")))?;
    Ok((found.keys)().iter().map(|k| k.name).collect())
}

/// A Local Law 144 bias audit of a decision log given as a frame (no model, no label): `keys` are
/// the `bias_audit` stage's (`sex`, `race`, `ethnicity`, `column`, `outcome`, `selected`, …); the
/// frame is read with no missing-value markers (a blank category is Unknown, no row dropped),
/// only the columns those keys name.
#[pyfunction]
#[pyo3(signature = (data, keys, progress=None))]
fn bias_audit(py: Python<'_>, data: Bound<'_, PyAny>, keys: Bound<'_, PyAny>, progress: Option<Bound<'_, PyAny>>) -> PyResult<NativeRun> {
    let last: LastError = LastError::default();
    let show = progress::Show::from_py(progress)?;
    let frame = frame_from_py(&data, "data")?;
    let keys: Value = convert::from_py(&keys, "keys")?;
    let result = progress::followed(py, show, |draw| -> Result<NativeRun, AuditError> {
        let config: BiasAuditConfig = caller::read_keys(BIAS_AUDIT, keys)?;
        let mut read: Vec<String> =
            [&config.sex, &config.race, &config.ethnicity, &config.column, &config.applicant_id].into_iter().flatten().cloned().collect();
        read.extend(config.qualifications.iter().filter(|q| !read.contains(q)).cloned().collect::<Vec<_>>());
        let protected: Vec<&str> = [&config.sex, &config.race].into_iter().flatten().map(String::as_str).collect();
        let mut load = LoadConfig::from_frame(frame, "", &protected);
        load.label = None;
        load.features = Some(read);
        load.missing_values = Some(Vec::new());
        let pipeline = Pipeline::builder("bias-audit")
            .stage(DATA, load, &[])
            .stage(BIAS_AUDIT, config, &[("data", DATA)])
            .build()
            .map_err(Error::from)?;
        Ok(execute(&pipeline, None, draw)?)
    });
    result.map_err(|e| match e {
        AuditError::Argument(refused) => argument_error(py, &refused, &last),
        AuditError::Engine(e) => engine_error(py, e, &last, false),
    })
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    fairpipe::record_build_commit();
    fairpipe_builtins::register_builtins()
        .map_err(|e| PyImportError::new_err(format!("fairpipe's built-in methods did not register: {e}")))?;
    m.add_class::<NativeRun>()?;
    m.add_class::<ArrowTable>()?;
    m.add_function(wrap_pyfunction!(run_pipeline, m)?)?;
    m.add_function(wrap_pyfunction!(audit, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::arrow_buffer_addresses, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_reference, m)?)?;
    m.add_function(wrap_pyfunction!(kind_keys, m)?)?;
    m.add_function(wrap_pyfunction!(bias_audit, m)?)?;
    m.add_function(wrap_pyfunction!(source_tree, m)?)?;
    m.add_function(wrap_pyfunction!(cost::audit_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli, m)?)?;
    Ok(())
}

/// A single problem at the top of `file`.
fn one_problem(file: &Path, message: String) -> ConfigError {
    ConfigError { problems: vec![ConfigProblem { file: file.to_path_buf(), line: 1, col: 1, message }] }
}
