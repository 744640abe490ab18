//! `fairpipe init DATA [--model MODEL.onnx] [--out PIPELINE.toml]`: a commented starter pipeline
//! for a data file the tool has never seen. The file is read with the engine's own reader (the same
//! structural pre-scan and encoding as the `load` stage), so the column kinds and bounds written in
//! the comments are the ones a run uses; the label and the protected attributes are guessed from
//! the column names and values and marked for the user to confirm; a given ONNX model's inputs are
//! matched to the columns with the engine's model-input contract, and the columns a model does not
//! read are dropped. What is guessed is [`guess`]; the pipeline is the engine's standard audit
//! (`fairpipe_core::preset`) written from its typed configs with comments ([`write`]). It
//! validates as written and a run gives group metrics per protected attribute, an estimate, a
//! check of the real rows and a search.

mod guess;
mod log;
mod write;

use std::path::{Path, PathBuf};

use fairpipe_core::data::{self, ColumnProfile, Dataset, LoadSpec, MissingPolicy, SplitSpec};
use fairpipe_core::error::{DataError, ModelError};
use fairpipe_core::models::inputs::{self, DeclaredInput, InputPlan};
use fairpipe_core::models::onnx::facts::{graph_facts, GraphFacts};
use fairpipe_core::preset::{self, ModelStage, Search, Seeds, StandardAudit};
use fairpipe_core::stages::bias_audit::BiasAuditConfig;
use fairpipe_core::stages::group_metrics::GroupMetricsConfig;
use fairpipe_core::stages::load::{LabelValue, LoadConfig, Missing};
use fairpipe_core::stages::load_model::LoadModelConfig;
use fairpipe_core::stages::options::Rows;
use fairpipe_core::stages::train::{Algorithm, MlpParams, TrainConfig};

pub use guess::words;
use guess::{CodesFound, Proposed};
pub use write::{default_out, pipeline_name, relative_to};

/// What `fairpipe init` is asked for.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// The data file (CSV with a header row, or Parquet).
    pub data: PathBuf,
    /// The model to audit (an ONNX file, or a `.json` model saved by a `train` stage); `None`
    /// writes a `train` stage instead.
    pub model: Option<PathBuf>,
    /// The pipeline file to write.
    pub out: PathBuf,
    /// The label column, instead of the guess.
    pub label: Option<String>,
    /// The protected attributes, instead of the guess.
    pub protected: Vec<String>,
    /// Columns to leave out (a model that reads fewer columns than the data has: those it does
    /// not read).
    pub drop: Vec<String>,
    /// Overwrite `out` if it exists.
    pub force: bool,
    /// The file is a decision log: audit its recorded decisions and scores (`bias_audit`), train
    /// nothing. Without it init decides so itself when the file looks like one ([`log`]).
    pub decisions: bool,
}

/// A starter pipeline could not be written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The data file does not exist.
    #[error("{0}: no such file; `fairpipe init` needs a CSV (or Parquet) file with a header row and a binary label column")]
    NoData(PathBuf),
    /// The data file could not be read.
    #[error(transparent)]
    Data(#[from] DataError),
    /// No column can be the label.
    #[error(
        "{path}: no plausible label: expected a column with exactly two values (0/1, yes/no or two categories), \
         ideally named like label, target, class, outcome, income or y; the columns are: {columns}. \
         Name the label with --label COLUMN"
    )]
    NoLabel {
        /// The data file.
        path: PathBuf,
        /// Every column with its number of distinct values.
        columns: String,
    },
    /// The label named with `--label` is not binary.
    #[error("{path}: column `{column}` has {distinct} distinct values; the label must have exactly two{values}")]
    LabelNotBinary {
        /// The data file.
        path: PathBuf,
        /// The column.
        column: String,
        /// Its distinct values.
        distinct: usize,
        /// Some of them, for the message.
        values: String,
    },
    /// A column named on the command line is not in the file.
    #[error("{path}: no column `{column}` (given as {role}); the file has: {available}{hint}")]
    NoColumn {
        /// The data file.
        path: PathBuf,
        /// The column asked for.
        column: String,
        /// `--label`, `--protected` or `--drop`.
        role: &'static str,
        /// The columns of the file.
        available: String,
        /// A "did you mean" hint, possibly empty.
        hint: String,
    },
    /// No column looks like a protected attribute.
    #[error(
        "{path}: no column looks like a protected attribute (sex, gender, race, ethnicity, age, religion, nationality, \
         native country, disability, marital status); the columns are: {columns}. Name one or more with --protected COLUMN"
    )]
    NoProtected {
        /// The data file.
        path: PathBuf,
        /// The candidate columns.
        columns: String,
    },
    /// A model of one vector input reads fewer columns than the data has, and which it leaves out
    /// cannot be told.
    #[error(
        "{model}: the model reads {reads} feature columns, the data has {has} ({columns}); init cannot tell which {left} \
         it leaves out{guessed}. Name them with --drop COL,... and run init again"
    )]
    Subset {
        /// The model.
        model: PathBuf,
        /// Columns it reads.
        reads: usize,
        /// Feature columns of the data.
        has: usize,
        /// How many it leaves out.
        left: usize,
        /// The feature columns.
        columns: String,
        /// What was guessed, for the message (possibly empty).
        guessed: String,
    },
    /// The model cannot read this data's rows.
    #[error("{0}\n(fairpipe init wrote nothing: make the data's columns match the model's inputs, e.g. drop the columns it was not trained on, and run init again)")]
    Model(ModelError),
    /// `--decisions` on a file that is no decision log init can read.
    #[error(
        "{path}: --decisions needs a column of sex or race categories (found: {protected}) and a column of decisions \
         (named like advanced, selected, decision, hired, status: 0/1 or a few values) or of scores (named like score or \
         rating; found: {outcomes}); the columns are: {columns}"
    )]
    NotALog {
        /// The data file.
        path: PathBuf,
        /// The sex and race columns found.
        protected: String,
        /// The decision and score columns found.
        outcomes: String,
        /// Every column.
        columns: String,
    },
    /// The pipeline file exists already.
    #[error("{0} exists already; choose another --out or pass --force to overwrite it")]
    Exists(PathBuf),
    /// Writing the pipeline failed.
    #[error("{path}: cannot write: {message}")]
    Write {
        /// The pipeline file.
        path: PathBuf,
        /// The error.
        message: String,
    },
}

/// What `fairpipe init` wrote.
#[derive(Debug, Clone)]
pub struct Init {
    /// The pipeline file written.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// The label column chosen.
    pub label: String,
    /// The protected attributes of the `load` stage.
    pub protected: Vec<String>,
    /// Every protected attribute a group metrics stage measures (one stage each).
    pub measured: Vec<String>,
    /// The columns left out, each with why.
    pub dropped: Vec<(String, String)>,
    /// For a decision log: what its audit reads ("decisions `advanced`, scores `score`; sex
    /// `gender`, race `race_cd` with ethnicity `hispanic_latino`"); `None` for a model's audit.
    pub log: Option<String>,
}

/// Write the starter pipeline as `options` say.
pub fn init(options: &InitOptions) -> Result<Init, InitError> {
    let path = options.data.as_path();
    if !path.exists() {
        return Err(InitError::NoData(path.to_path_buf()));
    }
    if options.out.exists() && !options.force {
        return Err(InitError::Exists(options.out.clone()));
    }
    let is_parquet =
        path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("parquet") || e.eq_ignore_ascii_case("pq"));
    let separator = if is_parquet { b',' } else { guess::separator_of(path)? };
    let (rows, profiles) = data::profile(path, separator, &guess::missing_markers())?;
    let all: Vec<&ColumnProfile> = profiles.iter().collect();

    // Columns that are not features: those given with --drop, the split, identifiers.
    let mut dropped: Vec<(String, String)> = Vec::new();
    for asked in &options.drop {
        if !all.iter().any(|c| &c.name == asked) {
            return Err(guess::no_column(path, &all, asked, "--drop"));
        }
        dropped.push((asked.clone(), "given with --drop".into()));
    }
    let is_dropped = |dropped: &[(String, String)], c: &str| dropped.iter().any(|(d, _)| d == c);
    let split_column = all.iter().find(|c| !is_dropped(&dropped, &c.name) && guess::is_split_column(c)).map(|c| c.name.clone());
    for c in &all {
        if Some(&c.name) != split_column.as_ref() && !is_dropped(&dropped, &c.name) && guess::is_identifier(c, rows) {
            dropped.push((c.name.clone(), "an identifier, unique per row".into()));
        }
    }
    let usable: Vec<&ColumnProfile> =
        all.iter().copied().filter(|c| Some(&c.name) != split_column.as_ref() && !is_dropped(&dropped, &c.name)).collect();

    if options.model.is_none() && options.label.is_none() {
        let columns = log::log_columns(&usable, options.decisions);
        let complete = (columns.sex.is_some() || columns.race.is_some()) && (columns.decision.is_some() || columns.score.is_some());
        if options.decisions && !complete {
            let names = |cs: &[Option<&ColumnProfile>]| {
                let found: Vec<String> = cs.iter().flatten().map(|c| format!("`{}`", c.name)).collect();
                if found.is_empty() {
                    "none".to_string()
                } else {
                    found.join(", ")
                }
            };
            return Err(InitError::NotALog {
                path: path.to_path_buf(),
                protected: names(&[columns.sex, columns.race]),
                outcomes: names(&[columns.decision, columns.score]),
                columns: all.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
            });
        }
        if options.decisions || log::looks_like_a_log(&columns, &usable) {
            return write_log(options, path, rows, &columns);
        }
    }
    let label = guess::choose_label(path, &usable, options.label.as_deref())?;
    let label_profile = usable.iter().find(|c| c.name == label).copied().expect("the label is a usable column");
    let (favourable, favourable_why) = guess::choose_favourable(label_profile);
    let features: Vec<&ColumnProfile> = usable.iter().copied().filter(|c| c.name != label).collect();
    let proposed = guess::propose_protected(path, &features, &options.protected)?;

    // Read the data as the load stage will, for the domain (kinds, bounds) the comments state.
    let missing_rows = features.iter().chain([&label_profile]).any(|c| c.missing > 0);
    let mut spec = LoadSpec::new(path, label.clone());
    spec.favourable = favourable.clone();
    spec.separator = separator;
    spec.missing = if missing_rows { MissingPolicy::Drop } else { MissingPolicy::Reject };
    spec.split = match &split_column {
        Some(c) => SplitSpec::Column(c.clone()),
        None => SplitSpec::Fraction { test: 0.2, seed: 1 },
    };
    spec.protected = proposed.iter().map(|p| p.column.clone()).collect();
    // Columns holding names (not numbers) are encoded by a codes file beside the data when there is
    // one that reads and covers the data; else by their sorted levels.
    let named_columns: Vec<String> = features.iter().chain([&label_profile]).filter(|c| !c.numeric).map(|c| c.name.clone()).collect();
    let codes = if named_columns.is_empty() { CodesFound::None } else { guess::find_codes(path) };
    spec.drop = dropped.iter().map(|(d, _)| d.clone()).collect();
    let (mut dataset, mut codes) = read(&spec, codes)?;

    // The measured attributes (those protected in law, or given), and those the search varies:
    // the preferred ones while their combinations stay few.
    let mut measured: Vec<String> = proposed.iter().filter(|p| p.measured()).map(|p| p.column.clone()).collect();
    if measured.is_empty() {
        measured = proposed.iter().map(|p| p.column.clone()).collect();
    }
    let mut searched: Vec<String> = Vec::new();
    for column in &measured {
        let mut with = searched.clone();
        with.push(column.clone());
        if searched.is_empty() || (searched.len() < 2 && guess::combinations(&dataset.domain, &with) <= guess::MAX_SEARCHED_COMBINATIONS) {
            searched = with;
        }
    }

    // The model's inputs against the columns: a model reading fewer has the others dropped.
    let out_dir = options.out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let mut model_notes: Vec<String> = Vec::new();
    if let Some(model) = &options.model {
        if !model.exists() {
            return Err(InitError::Model(ModelError::Onnx { path: model.clone(), message: "no such file".into() }));
        }
        let is_json = model.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if !is_json {
            let facts = graph_facts(model).map_err(InitError::Model)?;
            let left_out = unread_columns(model, &facts, &dataset, &searched, &proposed, &label)?;
            if !left_out.is_empty() {
                dropped.extend(left_out);
                spec.drop = dropped.iter().map(|(d, _)| d.clone()).collect();
                (dataset, codes) = read(&spec, codes)?;
            }
            model_notes = describe_model(model, &facts, &dataset, &searched, &codes, &named_columns, &label)?;
        }
    }

    let coded_columns: Vec<String> = match &codes {
        CodesFound::Read(c) => c.columns.iter().map(|c| c.column.clone()).collect(),
        _ => Vec::new(),
    };
    let uncoded_names: Vec<&str> =
        named_columns.iter().filter(|c| !coded_columns.contains(c) && !is_dropped(&dropped, c)).map(String::as_str).collect();
    let audit = standard_audit(&StandardInputs {
        data: path,
        model: options.model.as_deref(),
        out_dir: &out_dir,
        label: &label,
        favourable: favourable.as_deref(),
        searched: &searched,
        measured: &measured,
        proposed: &proposed,
        dropped: &dropped,
        split_column: split_column.as_deref(),
        missing_rows,
        separator,
        codes: &codes,
    });
    let text = write::render(&write::Render {
        data: path,
        rows,
        kept_rows: dataset.len(),
        domain: &dataset.domain,
        label: label_profile,
        favourable_why: &favourable_why,
        proposed: &proposed,
        searched: &searched,
        measured: &measured,
        split_column: split_column.as_deref(),
        dropped: &dropped,
        model_notes: &model_notes,
        codes: &codes,
        uncoded_names: &uncoded_names,
        audit: &audit,
    });
    if let Some(parent) = options.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| InitError::Write { path: options.out.clone(), message: e.to_string() })?;
    }
    std::fs::write(&options.out, &text).map_err(|e| InitError::Write { path: options.out.clone(), message: e.to_string() })?;
    Ok(Init { path: options.out.clone(), text, label, protected: searched, measured, dropped, log: None })
}

/// Write the audit of the decision log `path` (its `rows` rows, `columns` found).
fn write_log(options: &InitOptions, path: &Path, rows: usize, columns: &log::LogColumns<'_>) -> Result<Init, InitError> {
    let out_dir = options.out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let text = log::render(path, rows, columns, &out_dir, &write::pipeline_name(path, None));
    if let Some(parent) = options.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| InitError::Write { path: options.out.clone(), message: e.to_string() })?;
    }
    std::fs::write(&options.out, &text).map_err(|e| InitError::Write { path: options.out.clone(), message: e.to_string() })?;
    let named = |what: &str, c: Option<&ColumnProfile>| c.map(|c| format!("{what} `{}`", c.name));
    let outcomes: Vec<String> = [named("decisions", columns.decision), named("scores", columns.score)].into_iter().flatten().collect();
    let mut axes: Vec<String> = [named("sex", columns.sex), named("race", columns.race)].into_iter().flatten().collect();
    if let Some(e) = columns.ethnicity {
        axes.push(format!("ethnicity `{}`", e.name));
    }
    Ok(Init {
        path: options.out.clone(),
        text,
        label: String::new(),
        protected: [columns.sex, columns.race].into_iter().flatten().map(|c| c.name.clone()).collect(),
        measured: Vec::new(),
        dropped: Vec::new(),
        log: Some(format!("{} by {}", outcomes.join(" and "), axes.join(", "))),
    })
}

/// The data read with `spec` and the codes file `codes` when it reads and encodes it (else the
/// codes file marked unusable, and the data read without it).
fn read(spec: &LoadSpec, codes: CodesFound) -> Result<(Dataset, CodesFound), InitError> {
    Ok(match codes {
        CodesFound::Read(codes) => {
            let mut coded = spec.clone();
            coded.codes = Some(codes.clone());
            match data::load(&coded) {
                Ok(dataset) => (dataset, CodesFound::Read(codes)),
                Err(e) => (data::load(spec)?, CodesFound::Unusable(codes.path, e.to_string().replace('\n', " "))),
            }
        }
        other => (data::load(spec)?, other),
    })
}

/// The feature columns a model does not read, each with why: those a model of named inputs has
/// no input for (a protected attribute is kept: the audit varies it), or, for a model of one
/// vector input narrower than the data, the columns that repeat another or are sampling weights
/// when they are exactly as many as the model leaves out.
fn unread_columns(
    model: &Path,
    facts: &GraphFacts,
    dataset: &Dataset,
    searched: &[String],
    proposed: &[Proposed],
    label: &str,
) -> Result<Vec<(String, String)>, InitError> {
    let domain = searched_domain(dataset, searched);
    let feeding = inputs::Feeding { coded: dataset.coded.clone(), ..Default::default() };
    let keep = |name: &str| name == label || proposed.iter().any(|p| p.column == name);
    match inputs::plan(model, &facts.inputs, &domain, &feeding) {
        Ok(InputPlan::Named(feeds)) => Ok(domain
            .attributes
            .iter()
            .enumerate()
            .filter(|(i, a)| !feeds.iter().any(|f| f.attribute == *i) && !keep(&a.name))
            .map(|(_, a)| (a.name.clone(), "the model has no input for it".to_string()))
            .collect()),
        Ok(InputPlan::Vector { .. }) => Ok(Vec::new()),
        Err(refused) => {
            let has = domain.attributes.len();
            let Some(reads) = vector_width(&facts.inputs).filter(|w| *w < has) else {
                return Err(InitError::Model(refused));
            };
            let mut guessed: Vec<(String, String)> = domain
                .attributes
                .iter()
                .filter(|a| guess::is_weight(&a.name) && !keep(&a.name))
                .map(|a| (a.name.clone(), "guessed: named like a sampling weight (CONFIRM)".to_string()))
                .collect();
            for (drop, repeats) in guess::redundant_columns(dataset) {
                if !keep(&drop) && !guessed.iter().any(|(g, _)| *g == drop) {
                    guessed.push((drop, format!("guessed: it repeats `{repeats}` value for value (CONFIRM)")));
                }
            }
            if guessed.len() == has - reads {
                return Ok(guessed);
            }
            let names: Vec<&str> = guessed.iter().map(|(g, _)| g.as_str()).collect();
            Err(InitError::Subset {
                model: model.to_path_buf(),
                reads,
                has,
                left: has - reads,
                columns: domain.attributes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
                guessed: if names.is_empty() {
                    String::new()
                } else {
                    format!(" (columns that repeat another or are sampling weights: {}, {} of them)", names.join(", "), names.len())
                },
            })
        }
    }
}

/// The width of a model's one `[N, width]` input, if that is what it has.
fn vector_width(inputs: &[DeclaredInput]) -> Option<usize> {
    match inputs {
        [one] if one.shape.len() == 2 && one.shape[1] > 0 => usize::try_from(one.shape[1]).ok(),
        _ => None,
    }
}

/// The data's domain with the searched attributes marked protected, as the load stage marks them.
fn searched_domain(dataset: &Dataset, searched: &[String]) -> fairpipe_core::domain::Domain {
    let mut domain = dataset.domain.clone();
    for a in &mut domain.attributes {
        a.protected = searched.contains(&a.name);
    }
    domain
}

/// What the pipeline's comments say of the model: how its inputs are fed, and which executor
/// will run it (the native tree executor for a tree ensemble it covers, ONNX Runtime where the
/// graph needs it, else tract or the native dense executor), as the `load_model` stage chooses.
fn describe_model(
    model: &Path,
    facts: &GraphFacts,
    dataset: &Dataset,
    searched: &[String],
    codes: &CodesFound,
    named_columns: &[String],
    label: &str,
) -> Result<Vec<String>, InitError> {
    let domain = searched_domain(dataset, searched);
    let feeding = inputs::Feeding { coded: dataset.coded.clone(), ..Default::default() };
    let mut notes = Vec::new();
    let coded_columns: Vec<&str> = match codes {
        CodesFound::Read(c) => c.columns.iter().map(|c| c.column.as_str()).collect(),
        _ => Vec::new(),
    };
    let features_named: Vec<&str> = named_columns
        .iter()
        .map(String::as_str)
        .filter(|c| *c != label && !coded_columns.contains(c) && domain.attributes.iter().any(|a| a.name == *c))
        .collect();
    match inputs::plan(model, &facts.inputs, &domain, &feeding).map_err(InitError::Model)? {
        InputPlan::Vector { input, width, .. } => {
            let encoding = if coded_columns.is_empty() {
                "categories as level codes, levels sorted"
            } else if features_named.is_empty() {
                "categories as their codes from the codes file"
            } else {
                "categories as their codes from the codes file, the others' as level codes, levels sorted"
            };
            notes.push(format!(
                "The model's one input `{input}` takes the {width} feature columns as encoded vectors, in file order \
                 ({encoding}): check that the model was trained on this encoding."
            ));
            if !features_named.is_empty() {
                notes.push(format!(
                    "CONFIRM the encoding: the model reads numbers, but {} hold{} names. Unless the model was trained on \
                     these level indices, it needs a codes file giving each name the number it was trained on \
                     (`codes` on the load stage; {}): {}.",
                    features_named.join(", "),
                    if features_named.len() == 1 { "s" } else { "" },
                    write::CODES_DOCS,
                    match codes {
                        CodesFound::Read(c) => format!("add them to {}", c.path.display()),
                        CodesFound::Unusable(p, _) => format!("fix {} (see the load stage) and run init again", p.display()),
                        CodesFound::None => {
                            format!("write {} and run init again, which then proposes it", guess::codes_path_of(&dataset.path).display())
                        }
                    }
                ));
            }
        }
        InputPlan::Named(feeds) => {
            notes.push(format!("The model's {} named inputs, matched to columns by name:", feeds.len()));
            for f in &feeds {
                notes.push(format!("  {:<20} <- column {} ({})", f.input, domain.attributes[f.attribute].name, f.ty));
            }
            let unread: Vec<&str> = domain
                .attributes
                .iter()
                .enumerate()
                .filter(|(i, _)| !feeds.iter().any(|f| f.attribute == *i))
                .map(|(_, a)| a.name.as_str())
                .collect();
            if !unread.is_empty() {
                notes.push(format!(
                    "Kept though the model does not read them (protected attributes the audit varies): {}.",
                    unread.join(", ")
                ));
            }
        }
    }
    if facts.needs_onnxruntime.is_empty() {
        notes
            .push("It needs no ONNX Runtime: tract runs it (or fairpipe's native dense executor, where that gives tract's scores).".into());
    } else {
        match fairpipe_core::models::trees::Graph::read(model, domain.width()) {
            Ok(graph) => notes.push(format!(
                "It runs on fairpipe's native tree executor ({} trees; ONNX Runtime is not needed, executor = \"onnxruntime\" \
                 on the model stage uses it instead).",
                graph.trees()
            )),
            Err(uncovered) => {
                let trees = facts.needs_onnxruntime.iter().any(|n| n.contains("TreeEnsemble"));
                notes.push(format!(
                    "It needs ONNX Runtime ({}{}): {}.",
                    facts.needs_onnxruntime.join(", "),
                    if trees { format!("; the native tree executor does not cover {uncovered}") } else { String::new() },
                    fairpipe_core::models::onnx::runtime::install_advice()
                ));
            }
        }
    }
    Ok(notes)
}

/// What the standard audit of the data is made of.
struct StandardInputs<'a> {
    data: &'a Path,
    model: Option<&'a Path>,
    out_dir: &'a Path,
    label: &'a str,
    favourable: Option<&'a str>,
    searched: &'a [String],
    measured: &'a [String],
    proposed: &'a [Proposed],
    dropped: &'a [(String, String)],
    split_column: Option<&'a str>,
    missing_rows: bool,
    separator: u8,
    codes: &'a CodesFound,
}

/// The engine's standard audit ([`fairpipe_core::preset`]) of the data: the load stage as guessed,
/// the model (or a stand-in MLP), one group metrics stage per measured attribute, a Local Law 144
/// bias audit when there is a sex or race column, the standard estimate, check and MAFT search.
fn standard_audit(s: &StandardInputs<'_>) -> StandardAudit {
    let in_pipeline = |p: &Path| write::forward(&relative_to(p, s.out_dir));
    let mut data = LoadConfig::default();
    data.path = Some(in_pipeline(s.data));
    data.label = Some(s.label.to_string());
    data.favourable = s.favourable.map(|f| match f.parse::<i64>() {
        Ok(i) => LabelValue::Int(i),
        Err(_) => LabelValue::Text(f.to_string()),
    });
    data.protected = s.searched.to_vec();
    data.drop = s.dropped.iter().map(|(d, _)| d.clone()).collect();
    data.split_column = s.split_column.map(str::to_string);
    data.test_fraction = 0.2;
    data.missing = if s.missing_rows { Missing::Drop } else { Missing::Reject };
    data.separator = match s.separator {
        b',' => None,
        b'\t' => Some("\\t".into()),
        other => Some((other as char).to_string()),
    };
    data.codes = match s.codes {
        CodesFound::Read(c) => Some(in_pipeline(&c.path)),
        _ => None,
    };
    let model = match s.model {
        Some(m) => ModelStage::Load(LoadModelConfig::new(in_pipeline(m))),
        None => ModelStage::Train(TrainConfig { algorithm: Algorithm::Mlp(MlpParams { epochs: 10, ..MlpParams::default() }), save: None }),
    };
    let mut audit = StandardAudit::new(&pipeline_name(s.data, s.model), data, model);
    audit.seed = 1;
    let mut names: Vec<String> = Vec::new();
    audit.group_metrics = s
        .measured
        .iter()
        .map(|column| {
            let mut name = format!("metrics_{}", stage_word(column));
            while names.contains(&name) {
                name.push('_');
            }
            names.push(name.clone());
            (name, GroupMetricsConfig { split: Rows::Test, protected: Some(vec![column.clone()]), ..GroupMetricsConfig::default() })
        })
        .collect();
    let of = |kind: &str| s.proposed.iter().find(|p| p.kind == kind).map(|p| p.column.clone());
    let (sex, race) = (of("sex"), of("race"));
    if sex.is_some() || race.is_some() {
        audit.bias_audit = Some(BiasAuditConfig { sex, race, ..BiasAuditConfig::default() });
    }
    audit.search = Some(Search::standard(preset::SEARCH_METHOD, Seeds::Clusters(preset::standard_seeds())));
    audit
}

/// A column name as a stage name's word: letters, digits and `_` (`native-country` →
/// `native_country`).
fn stage_word(column: &str) -> String {
    let w: String = column.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    let w = w.trim_matches('_').to_string();
    if w.is_empty() {
        "attribute".into()
    } else {
        w
    }
}
