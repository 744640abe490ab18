//! `fairpipe init DATA [--model MODEL.onnx] [--out PIPELINE.toml]`: a commented starter pipeline
//! for a data file the tool has never seen. The file is read with the engine's own reader (the same
//! structural pre-scan and encoding as the `load` stage), so the column kinds and bounds written in
//! the comments are the ones a run uses; the label and the protected attributes are guessed from
//! the column names and values and marked for the user to confirm; a given ONNX model's inputs are
//! matched to the columns with the engine's model-input contract. The pipeline validates as
//! written and a run gives group metrics, an estimate, a check of the real rows and a search.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use fairpipe_core::data::{self, ColumnProfile, LoadSpec, MissingPolicy, SplitSpec};
use fairpipe_core::domain::{AttributeKind, Domain};
use fairpipe_core::error::{DataError, ModelError};
use fairpipe_core::models::inputs::{self, InputPlan};
use fairpipe_core::models::onnx::facts::graph_facts;

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
    /// Overwrite `out` if it exists.
    pub force: bool,
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
        /// `--label` or `--protected`.
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
    /// The model cannot read this data's rows.
    #[error("{0}\n(fairpipe init wrote nothing: make the data's columns match the model's inputs, e.g. drop the columns it was not trained on, and run init again)")]
    Model(ModelError),
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
    /// Every protected attribute the group metrics measure (the above first).
    pub measured: Vec<String>,
}

/// The cells read as missing (the `load` stage's default `missing_values`).
fn missing_markers() -> Vec<String> {
    vec![String::new(), "?".into(), "NA".into()]
}

/// A name split into lower-case words: at `_`, `-`, `.`, spaces and lower-to-upper case changes
/// (`AgeInYears` → age, in, years; `native-country` → native, country).
pub fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Words of a label column's name, most telling first.
const LABEL_WORDS: &[&str] = &[
    "label", "target", "outcome", "class", "y", "income", "response", "result", "decision", "approved", "approval", "default", "recid",
    "churn", "hired", "admitted", "survived", "fraud", "credit", "rating", "risk",
];

/// Label words whose value 1 (or "yes") is the unfavourable outcome.
const UNFAVOURABLE_LABEL_WORDS: &[&str] = &["default", "recid", "churn", "fraud", "risk"];

/// Cell texts that read as the favourable outcome.
const FAVOURABLE_TEXTS: &[&str] =
    &["yes", "y", "true", "t", "good", "approved", "accepted", "granted", "hired", "admitted", "pass", "passed", "positive", "high"];
/// Cell texts that read as the unfavourable outcome.
const UNFAVOURABLE_TEXTS: &[&str] =
    &["no", "n", "false", "f", "bad", "denied", "rejected", "declined", "refused", "fail", "failed", "negative", "low"];

/// One kind of protected attribute: its name in messages, the column-name words that say it, and
/// cell values that say it.
struct ProtectedKind {
    name: &'static str,
    words: &'static [&'static str],
    values: &'static [&'static str],
}

/// The protected attributes fairpipe init recognises, in the order it prefers them for the search.
const PROTECTED_KINDS: &[ProtectedKind] = &[
    ProtectedKind { name: "sex", words: &["sex", "gender"], values: &["male", "female", "man", "woman", "men", "women"] },
    ProtectedKind {
        name: "race",
        words: &["race", "ethnicity", "ethnic", "racial"],
        values: &[
            "white",
            "black",
            "asian",
            "hispanic",
            "latino",
            "caucasian",
            "african-american",
            "asian-pac-islander",
            "amer-indian-eskimo",
        ],
    },
    ProtectedKind { name: "age", words: &["age"], values: &[] },
    ProtectedKind {
        name: "religion",
        words: &["religion", "religious", "faith"],
        values: &["christian", "muslim", "jewish", "hindu", "buddhist"],
    },
    ProtectedKind { name: "disability", words: &["disability", "disabled", "handicap"], values: &[] },
    ProtectedKind {
        name: "marital status",
        words: &["marital", "married", "marriage"],
        values: &["married", "single", "divorced", "widowed", "never-married", "married-civ-spouse", "separated"],
    },
    ProtectedKind {
        name: "nationality",
        words: &["nationality", "citizenship", "citizen", "foreign", "immigrant", "native", "birthplace"],
        values: &[],
    },
];

/// Why a column was proposed as protected.
#[derive(Debug, Clone, PartialEq)]
struct Proposed {
    column: String,
    kind: &'static str,
    by: &'static str,
}

/// The protected kind column `c` is, and whether its name or its values say so.
fn protected_kind(c: &ColumnProfile) -> Option<Proposed> {
    let w = words(&c.name);
    let joined = w.join("_");
    for kind in PROTECTED_KINDS {
        let named = kind.words.iter().any(|k| w.iter().any(|x| x == k))
            || (kind.name == "nationality" && (joined.contains("native_country") || joined.contains("country_of_birth")));
        if named {
            return Some(Proposed { column: c.name.clone(), kind: kind.name, by: "name" });
        }
    }
    for kind in PROTECTED_KINDS.iter().filter(|k| !k.values.is_empty()) {
        let hits = c.levels.iter().filter(|(v, _)| kind.values.contains(&v.to_lowercase().as_str())).count();
        // Most of a few-valued column's values are of this kind.
        if !c.levels.is_empty() && c.levels.len() <= 20 && hits * 2 >= c.levels.len() && hits > 0 {
            return Some(Proposed { column: c.name.clone(), kind: kind.name, by: "values" });
        }
    }
    None
}

/// Whether the column holds train/test (val) assignments.
fn is_split_column(c: &ColumnProfile) -> bool {
    c.levels.len() >= 2 && c.missing == 0 && c.levels.iter().all(|(v, _)| data::split_of_cell(v).is_ok())
}

/// Whether the column is a row number or identifier to drop: unique per row, and named like one or
/// text.
fn is_identifier(c: &ColumnProfile, rows: usize) -> bool {
    let w = words(&c.name);
    let named = c.name.trim().is_empty()
        || w.iter()
            .any(|x| matches!(x.as_str(), "id" | "row" | "index" | "idx" | "uuid" | "key" | "unnamed" | "rownum" | "no" | "nr" | "number"));
    let unique = c.distinct == rows && rows > 1;
    unique && (named || !c.numeric)
}

/// The label: `asked`, or the binary column named most like a label, or the last binary column
/// that is not protected-looking.
fn choose_label(path: &Path, columns: &[&ColumnProfile], asked: Option<&str>) -> Result<String, InitError> {
    if let Some(asked) = asked {
        let c = columns.iter().find(|c| c.name == asked).ok_or_else(|| no_column(path, columns, asked, "--label"))?;
        if c.distinct != 2 {
            let values: Vec<&str> = c.levels.iter().take(8).map(|(v, _)| v.as_str()).collect();
            return Err(InitError::LabelNotBinary {
                path: path.to_path_buf(),
                column: c.name.clone(),
                distinct: c.distinct,
                values: if values.is_empty() { String::new() } else { format!(" (it has {})", values.join(", ")) },
            });
        }
        return Ok(c.name.clone());
    }
    let binary: Vec<&&ColumnProfile> = columns.iter().filter(|c| c.distinct == 2).collect();
    for word in LABEL_WORDS {
        if let Some(c) = binary.iter().rev().find(|c| words(&c.name).iter().any(|w| w == word)) {
            return Ok(c.name.clone());
        }
    }
    if let Some(c) = binary.iter().rev().find(|c| protected_kind(c).is_none()) {
        return Ok(c.name.clone());
    }
    Err(InitError::NoLabel {
        path: path.to_path_buf(),
        columns: columns.iter().map(|c| format!("{} ({} values)", c.name, c.distinct)).collect::<Vec<_>>().join(", "),
    })
}

/// The favourable label value as written in the file (`None`: the default, 1 of a 0/1 label), and
/// why.
fn choose_favourable(label: &ColumnProfile) -> (Option<String>, String) {
    let values: Vec<&str> = label.levels.iter().map(|(v, _)| v.as_str()).collect();
    let zero_one = values.iter().all(|v| v.parse::<f64>().is_ok_and(|x| x == 0.0 || x == 1.0));
    let unfavourable_name = words(&label.name).iter().any(|w| UNFAVOURABLE_LABEL_WORDS.contains(&w.as_str()));
    if zero_one {
        if unfavourable_name {
            let zero = values.iter().find(|v| v.parse::<f64>() == Ok(0.0)).unwrap_or(&"0");
            return (Some(zero.to_string()), format!("`{}` reads as a bad outcome, so 0 is taken as favourable", label.name));
        }
        return (None, "1 is taken as favourable (the default for a 0/1 label)".into());
    }
    let lower = |v: &str| v.trim().to_lowercase();
    if let Some(v) = values.iter().find(|v| FAVOURABLE_TEXTS.contains(&lower(v).as_str())) {
        return (Some(v.to_string()), format!("{v:?} reads as the favourable outcome"));
    }
    if let Some(other) =
        values.iter().find(|v| UNFAVOURABLE_TEXTS.contains(&lower(v).as_str())).and_then(|bad| values.iter().find(|v| *v != bad))
    {
        return (
            Some(other.to_string()),
            format!("the other value reads as the unfavourable outcome, so {other:?} is taken as favourable"),
        );
    }
    // Income-like labels: ">50K" over "<=50K".
    if let Some(v) = values.iter().find(|v| v.trim_start().starts_with('>')) {
        return (Some(v.to_string()), format!("{v:?} reads as the higher outcome"));
    }
    let rarer = label.levels.iter().min_by_key(|(v, n)| (*n, v.clone())).map(|(v, _)| v.clone()).unwrap_or_default();
    (Some(rarer.clone()), format!("nothing says which is favourable, so the rarer value {rarer:?} was taken"))
}

/// The "no such column" error for `asked`.
fn no_column(path: &Path, columns: &[&ColumnProfile], asked: &str, role: &'static str) -> InitError {
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    InitError::NoColumn {
        path: path.to_path_buf(),
        column: asked.to_string(),
        role,
        available: names.join(", "),
        hint: fairpipe_core::suggest::hint(asked, &names),
    }
}

/// The separator of a CSV file: `,` unless its header is one column holding `;` or tabs.
fn separator_of(path: &Path) -> Result<u8, DataError> {
    let names = data::column_names(path, b',')?;
    if names.len() == 1 {
        for sep in [b';', b'\t', b'|'] {
            if names[0].contains(sep as char) {
                return Ok(sep);
            }
        }
    }
    Ok(b',')
}

/// `target` as a path relative to folder `base` when both are under a common folder other than the
/// root, else `target` absolute.
pub fn relative_to(target: &Path, base: &Path) -> PathBuf {
    let abs = |p: &Path| p.canonicalize().or_else(|_| std::path::absolute(p)).unwrap_or_else(|_| p.to_path_buf());
    let (target, base) = (abs(target), abs(base));
    let t: Vec<Component> = target.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    // Only the root in common (or a different drive): absolute is clearer than ../../..
    if common <= 1 {
        return target;
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML list of strings.
fn quote_list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", "))
}

/// A path for TOML, with `/` separators.
fn toml_path(p: &Path) -> String {
    quote(&p.to_string_lossy().replace('\\', "/"))
}

/// A pipeline name from a file name: `adult.data.csv` → `adult-data`.
fn pipeline_name(data: &Path) -> String {
    let stem = data.file_stem().and_then(|s| s.to_str()).unwrap_or("data");
    let name: String = stem.chars().map(|c| if c.is_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let name = name.trim_matches('-').to_string();
    if name.is_empty() {
        "audit".into()
    } else {
        format!("{name}-audit")
    }
}

/// One attribute of the domain as a comment line: kind and bounds or levels.
fn describe_attribute(a: &fairpipe_core::domain::Attribute) -> String {
    let number = |v: f64| if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v}") };
    match &a.kind {
        AttributeKind::Categorical { levels } => {
            // As many levels as fit a comment line.
            let mut shown: Vec<&str> = Vec::new();
            let mut width = 0;
            for l in levels {
                if !shown.is_empty() && width + l.len() > 60 {
                    break;
                }
                width += l.len() + 2;
                shown.push(l);
            }
            let more = if levels.len() > shown.len() { format!(", … ({} more)", levels.len() - shown.len()) } else { String::new() };
            format!("categorical  {} levels: {}{more}", levels.len(), shown.join(", "))
        }
        AttributeKind::Integer => format!("integer      {} … {}", number(a.lower), number(a.upper)),
        AttributeKind::Continuous => format!("continuous   {} … {} (step {})", number(a.lower), number(a.upper), number(a.step)),
    }
}

/// The product of the protected grid sizes of `columns` in `domain`.
fn combinations(domain: &Domain, columns: &[String]) -> u128 {
    columns
        .iter()
        .filter_map(|c| domain.attributes.iter().find(|a| &a.name == c))
        .map(|a| a.grid_len() as u128)
        .fold(1u128, |acc, n| acc.saturating_mul(n))
}

/// Most protected combinations the proposed search covers (every audited input is tried with each).
const MAX_SEARCHED_COMBINATIONS: u128 = 1_000;

/// The pipeline file `fairpipe init DATA` writes when `--out` is not given: DATA's name with
/// `-audit.toml`, in the current folder (`adult.data.csv` → `adult-data-audit.toml`).
pub fn default_out(data: &Path) -> PathBuf {
    PathBuf::from(format!("{}.toml", pipeline_name(data)))
}

/// Most protected combinations one group metrics stage measures together (a tenth of the engine's
/// limit, so no warning either).
const MAX_MEASURED_COMBINATIONS: u128 = fairpipe_core::limits::MAX_PROTECTED_COMBINATIONS / 10;

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
    let separator = if is_parquet { b',' } else { separator_of(path)? };
    let (rows, profiles) = data::profile(path, separator, &missing_markers())?;
    let all: Vec<&ColumnProfile> = profiles.iter().collect();

    // Columns that are not features: the split, identifiers.
    let split_column = all.iter().find(|c| is_split_column(c)).map(|c| c.name.clone());
    let drop: Vec<String> =
        all.iter().filter(|c| Some(&c.name) != split_column.as_ref() && is_identifier(c, rows)).map(|c| c.name.clone()).collect();
    let usable: Vec<&ColumnProfile> =
        all.iter().copied().filter(|c| Some(&c.name) != split_column.as_ref() && !drop.contains(&c.name)).collect();

    let label = choose_label(path, &usable, options.label.as_deref())?;
    let label_profile = usable.iter().find(|c| c.name == label).copied().expect("the label is a usable column");
    let (favourable, favourable_why) = choose_favourable(label_profile);
    let features: Vec<&ColumnProfile> = usable.iter().copied().filter(|c| c.name != label).collect();

    // Protected attributes: asked for, or proposed from names and values.
    let proposed: Vec<Proposed> = if options.protected.is_empty() {
        let mut found: Vec<Proposed> = features
            .iter()
            .filter_map(|c| protected_kind(c))
            .filter(|p| features.iter().any(|c| c.name == p.column && c.distinct >= 2))
            .collect();
        found.sort_by_key(|p| PROTECTED_KINDS.iter().position(|k| k.name == p.kind));
        found
    } else {
        options
            .protected
            .iter()
            .map(|asked| {
                features
                    .iter()
                    .find(|c| &c.name == asked)
                    .map(|c| Proposed { column: c.name.clone(), kind: "", by: "--protected" })
                    .ok_or_else(|| no_column(path, &features, asked, "--protected"))
            })
            .collect::<Result<_, _>>()?
    };
    if proposed.is_empty() {
        return Err(InitError::NoProtected {
            path: path.to_path_buf(),
            columns: features.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
        });
    }

    // Read the data as the load stage will, for the domain (kinds, bounds) the comments state.
    let missing_rows = features.iter().chain([&label_profile]).any(|c| c.missing > 0);
    let mut spec = LoadSpec::new(path, label.clone());
    spec.favourable = favourable.clone();
    spec.drop = drop.clone();
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
    let codes = if named_columns.is_empty() { CodesFound::None } else { find_codes(path) };
    let (dataset, codes) = match codes {
        CodesFound::Read(codes) => {
            let mut coded = spec.clone();
            coded.codes = Some(codes.clone());
            match data::load(&coded) {
                Ok(dataset) => (dataset, CodesFound::Read(codes)),
                Err(e) => (data::load(&spec)?, CodesFound::Unusable(codes.path, e.to_string().replace('\n', " "))),
            }
        }
        other => (data::load(&spec)?, other),
    };
    let domain = &dataset.domain;
    let coded_columns: Vec<String> = match &codes {
        CodesFound::Read(c) => c.columns.iter().map(|c| c.column.clone()).collect(),
        _ => Vec::new(),
    };
    let uncoded_names: Vec<&str> = named_columns.iter().filter(|c| !coded_columns.contains(c)).map(String::as_str).collect();

    // The search's protected attributes: the preferred ones while their combinations stay few.
    let mut searched: Vec<String> = Vec::new();
    for p in &proposed {
        let mut with = searched.clone();
        with.push(p.column.clone());
        if searched.is_empty() || (searched.len() < 2 && combinations(domain, &with) <= MAX_SEARCHED_COMBINATIONS) {
            searched = with;
        }
    }
    // The group metrics: every proposed attribute, in as few stages as keep each stage's
    // combinations (and intersections) few.
    let mut metric_sets: Vec<Vec<String>> = Vec::new();
    for p in &proposed {
        let fits = metric_sets.iter().position(|set| {
            let mut with = set.clone();
            with.push(p.column.clone());
            combinations(domain, &with) <= MAX_MEASURED_COMBINATIONS
        });
        match fits {
            Some(i) => metric_sets[i].push(p.column.clone()),
            None => metric_sets.push(vec![p.column.clone()]),
        }
    }
    let measured: Vec<String> = proposed.iter().map(|p| p.column.clone()).collect();

    // The model's inputs against the columns.
    let out_dir = options.out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let mut model_notes: Vec<String> = Vec::new();
    if let Some(model) = &options.model {
        if !model.exists() {
            return Err(InitError::Model(ModelError::Onnx { path: model.clone(), message: "no such file".into() }));
        }
        let is_json = model.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if !is_json {
            let facts = graph_facts(model).map_err(InitError::Model)?;
            let mut load_domain = domain.clone();
            for a in &mut load_domain.attributes {
                a.protected = searched.contains(&a.name);
            }
            let feeding = inputs::Feeding { coded: dataset.coded.clone(), ..Default::default() };
            match inputs::plan(model, &facts.inputs, &load_domain, &feeding).map_err(InitError::Model)? {
                InputPlan::Vector { input, width, .. } => {
                    let encoding = if coded_columns.is_empty() {
                        "categories as level codes, levels sorted"
                    } else if uncoded_names.iter().all(|c| *c == label) {
                        "categories as their codes from the codes file"
                    } else {
                        "categories as their codes from the codes file, the others' as level codes, levels sorted"
                    };
                    model_notes.push(format!(
                        "The model's one input `{input}` takes the {width} feature columns as encoded vectors, in file order \
                         ({encoding}): check that the model was trained on this encoding."
                    ));
                    let features_named: Vec<&str> = uncoded_names.iter().copied().filter(|c| *c != label).collect();
                    if !features_named.is_empty() {
                        model_notes.push(format!(
                            "CONFIRM the encoding: the model reads numbers, but {} hold{} names. Unless the model was trained on \
                             these level indices, it needs a codes file giving each name the number it was trained on \
                             (`codes` on the load stage; {CODES_DOCS}): {}.",
                            features_named.join(", "),
                            if features_named.len() == 1 { "s" } else { "" },
                            match &codes {
                                CodesFound::Read(c) => format!("add them to {}", c.path.display()),
                                CodesFound::Unusable(p, _) => format!("fix {} (see the load stage) and run init again", p.display()),
                                CodesFound::None => {
                                    format!("write {} and run init again, which then proposes it", codes_path_of(path).display())
                                }
                            }
                        ));
                    }
                }
                InputPlan::Named(feeds) => {
                    model_notes.push(format!("The model's {} named inputs, matched to columns by name:", feeds.len()));
                    for f in &feeds {
                        model_notes.push(format!("  {:<20} <- column {} ({})", f.input, domain.attributes[f.attribute].name, f.ty));
                    }
                    let unread: Vec<&str> = domain
                        .attributes
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !feeds.iter().any(|f| f.attribute == *i))
                        .map(|(_, a)| a.name.as_str())
                        .collect();
                    if !unread.is_empty() {
                        model_notes
                            .push(format!("Columns the model does not read (add them to `drop` to leave them out): {}", unread.join(", ")));
                    }
                }
            }
            if !facts.needs_onnxruntime.is_empty() {
                model_notes.push(format!(
                    "It needs ONNX Runtime ({}): {}.",
                    facts.needs_onnxruntime.join(", "),
                    fairpipe_core::models::onnx::runtime::install_advice()
                ));
            }
        }
    }

    let text = render(&Render {
        data: path,
        data_in_pipeline: relative_to(path, &out_dir),
        model_in_pipeline: options.model.as_deref().map(|m| relative_to(m, &out_dir)),
        rows,
        kept_rows: dataset.len(),
        domain,
        label: label_profile,
        favourable: favourable.as_deref(),
        favourable_why: &favourable_why,
        proposed: &proposed,
        searched: &searched,
        metric_sets: &metric_sets,
        split_column: split_column.as_deref(),
        drop: &drop,
        missing_rows,
        separator,
        model_notes: &model_notes,
        codes: &codes,
        codes_in_pipeline: match &codes {
            CodesFound::Read(c) => Some(relative_to(&c.path, &out_dir)),
            _ => None,
        },
        uncoded_names: &uncoded_names,
        name: pipeline_name(path),
    });
    if let Some(parent) = options.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| InitError::Write { path: options.out.clone(), message: e.to_string() })?;
    }
    std::fs::write(&options.out, &text).map_err(|e| InitError::Write { path: options.out.clone(), message: e.to_string() })?;
    Ok(Init { path: options.out.clone(), text, label, protected: searched, measured })
}

/// The docs' explanation of a codes file.
const CODES_DOCS: &str = "see docs/pipelines.md#category-names-and-their-codes";

/// The codes file `fairpipe init` looks for beside a data file: `census.csv` → `census.codes.toml`.
fn codes_path_of(data: &Path) -> PathBuf {
    let stem = data.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    data.with_file_name(format!("{stem}.codes.toml"))
}

/// A codes file beside the data.
#[derive(Debug)]
enum CodesFound {
    /// None there (or the data has no column of names).
    None,
    /// One that reads and encodes the data.
    Read(fairpipe_core::codes::Codes),
    /// One that does not read, or does not fit the data: its path and why.
    Unusable(PathBuf, String),
}

/// The codes file beside `data`, read.
fn find_codes(data: &Path) -> CodesFound {
    let path = codes_path_of(data);
    if !path.is_file() {
        return CodesFound::None;
    }
    match fairpipe_core::codes::read(&path) {
        Ok(codes) => CodesFound::Read(codes),
        Err(problems) => CodesFound::Unusable(path, problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")),
    }
}

/// The load stage's `codes` line (or why there is none) with the columns of names it leaves to
/// sorted level codes.
fn write_codes(t: &mut String, r: &Render<'_>) {
    match (r.codes, &r.codes_in_pipeline) {
        (CodesFound::Read(codes), Some(path)) => {
            let columns: Vec<&str> = codes.columns.iter().map(|c| c.column.as_str()).collect();
            let _ = writeln!(
                t,
                "# CONFIRM the codes: {} beside the data gives the category names of these columns the integers a model\n\
                 # reading numbers gets (tables and reports keep the names; {CODES_DOCS}):\n#   {}",
                path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                columns.join(", ")
            );
            let _ = writeln!(t, "codes = {}", toml_path(path));
        }
        (CodesFound::Unusable(path, why), _) => {
            let _ = writeln!(t, "# {} is not used: {why}", path.display());
        }
        _ => {}
    }
    let features: Vec<&str> = r.uncoded_names.iter().copied().filter(|c| *c != r.label.name).collect();
    if matches!(r.codes, CodesFound::Read(_)) && !features.is_empty() {
        let _ = writeln!(t, "# Not in the codes file (encoded as level codes, levels sorted): {}.", features.join(", "));
    }
}

/// Everything the pipeline text is made from.
struct Render<'a> {
    data: &'a Path,
    data_in_pipeline: PathBuf,
    model_in_pipeline: Option<PathBuf>,
    rows: usize,
    kept_rows: usize,
    domain: &'a Domain,
    label: &'a ColumnProfile,
    favourable: Option<&'a str>,
    favourable_why: &'a str,
    proposed: &'a [Proposed],
    searched: &'a [String],
    metric_sets: &'a [Vec<String>],
    split_column: Option<&'a str>,
    drop: &'a [String],
    missing_rows: bool,
    separator: u8,
    model_notes: &'a [String],
    codes: &'a CodesFound,
    codes_in_pipeline: Option<PathBuf>,
    uncoded_names: &'a [&'a str],
    name: String,
}

/// The pipeline's text.
fn render(r: &Render<'_>) -> String {
    let mut t = String::new();
    let file = r.data.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let _ = writeln!(t, "# A starter fairness audit of {file}, written by `fairpipe init` (fairpipe {}).", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(t, "# Read the lines marked CONFIRM, then: fairpipe validate THIS_FILE && fairpipe run THIS_FILE");
    let _ = writeln!(t, "# (`fairpipe list` documents every stage kind and key.)");
    let _ = writeln!(t, "#");
    let kept = if r.kept_rows < r.rows { format!("; {} without a missing cell", r.kept_rows) } else { String::new() };
    let _ = writeln!(t, "# The features as read from the file ({} rows{kept}), kind and bounds as a run encodes them", r.rows);
    let _ = writeln!(t, "# (override one with columns.NAME = {{ kind, min, max, step, levels }} in the load stage):");
    let width = r.domain.attributes.iter().map(|a| a.name.len()).max().unwrap_or(8).max(8);
    for a in &r.domain.attributes {
        let mark = match r.proposed.iter().find(|p| p.column == a.name) {
            Some(_) if r.searched.contains(&a.name) => "  [protected]",
            Some(_) => "  [measured]",
            None => "",
        };
        let _ = writeln!(t, "#   {:<width$}  {}{mark}", a.name, describe_attribute(a));
    }
    let label_values: Vec<String> = r.label.levels.iter().map(|(v, n)| format!("{v:?} ({n} rows)")).collect();
    let _ = writeln!(t, "#   {:<width$}  the label: {}", r.label.name, label_values.join(", "));
    if let Some(split) = r.split_column {
        let _ = writeln!(t, "#   {split:<width$}  the train/test split");
    }
    for d in r.drop {
        let _ = writeln!(t, "#   {d:<width$}  dropped: an identifier, unique per row");
    }
    t.push('\n');
    let _ = writeln!(t, "[pipeline]\nname = {}\nseed = 1\n", quote(&r.name));

    // Load.
    let _ = writeln!(t, "[stages.data]\nkind = \"load\"");
    let _ = writeln!(t, "path = {}", toml_path(&r.data_in_pipeline));
    let _ = writeln!(
        t,
        "# CONFIRM the label: `{}` was guessed (a column with two values, named like a label or the last such column).",
        r.label.name
    );
    let _ = writeln!(t, "label = {}", quote(&r.label.name));
    write_codes(&mut t, r);
    let _ = writeln!(t, "# CONFIRM the favourable outcome: {}.", r.favourable_why);
    match r.favourable {
        Some(f) if f.parse::<i64>().is_ok() => {
            let _ = writeln!(t, "favourable = {f}");
        }
        Some(f) => {
            let _ = writeln!(t, "favourable = {}", quote(f));
        }
        None => {
            let _ = writeln!(t, "# favourable = 1");
        }
    }
    let _ = writeln!(t, "# CONFIRM the protected attributes. Proposed from the columns:");
    for p in r.proposed {
        let how = match p.by {
            "--protected" => "given with --protected".to_string(),
            by => format!("{} by its {by}", p.kind),
        };
        let role = if r.searched.contains(&p.column) { "searched and measured" } else { "measured by the group metrics" };
        let _ = writeln!(t, "#   {:<width$}  {how}; {role}", p.column);
    }
    if r.searched.len() < r.proposed.len() {
        let _ = writeln!(
            t,
            "# The search and the estimate vary these protected attributes together (each audited input is tried with every\n\
             # combination of their values, so few are kept here); add others to search them too, or audit them in turn."
        );
    }
    let _ = writeln!(t, "protected = {}", quote_list(r.searched));
    if !r.drop.is_empty() {
        let _ = writeln!(t, "drop = {}", quote_list(r.drop));
    }
    match r.split_column {
        Some(s) => {
            let _ = writeln!(t, "split_column = {}", quote(s));
        }
        None => {
            let _ = writeln!(t, "# No train/test column: a seeded 20% of the rows is held out for test.\ntest_fraction = 0.2");
        }
    }
    if r.missing_rows {
        let _ = writeln!(t, "# Some cells are missing (empty, \"?\" or \"NA\"): rows with one are left out.\nmissing = \"drop\"");
    }
    if r.separator != b',' {
        let sep = if r.separator == b'\t' { "\\t".to_string() } else { (r.separator as char).to_string() };
        let _ = writeln!(t, "separator = {}", quote(&sep));
    }
    t.push('\n');

    // Model.
    match &r.model_in_pipeline {
        Some(model) => {
            let _ = writeln!(t, "# The model under test.");
            for note in r.model_notes {
                let _ = writeln!(t, "# {note}");
            }
            let _ = writeln!(t, "[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = {}\n", toml_path(model));
        }
        None => {
            let _ = writeln!(
                t,
                "# No model given: a stand-in trained on the data's training rows (the papers' six-layer network).\n\
                 # To audit your own model, replace this stage with\n\
                 #   kind = \"load_model\"\n#   data = \"data\"\n#   path = \"MODEL.onnx\"\n\
                 # (or run `fairpipe init DATA --model MODEL.onnx`)."
            );
            let _ = writeln!(t, "[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"mlp\"\nepochs = 10\n");
        }
    }

    // Group metrics.
    let _ = writeln!(
        t,
        "# Outcomes per group and intersection on the test rows: selection rates, the four-fifths rule, error rates\n\
         # with significance, against the largest group."
    );
    if r.metric_sets.len() > 1 {
        let _ = writeln!(
            t,
            "# (The protected attributes are measured in {} stages: together they have too many intersections.)",
            r.metric_sets.len()
        );
    }
    for (i, set) in r.metric_sets.iter().enumerate() {
        let name = if i == 0 { "metrics".to_string() } else { format!("metrics_{}", i + 1) };
        let _ = writeln!(t, "[stages.{name}]\nkind = \"group_metrics\"\nmodel = \"model\"\nsplit = \"test\"");
        if set.as_slice() != r.searched {
            let _ = writeln!(t, "protected = {}", quote_list(set));
        }
        t.push('\n');
    }

    write_bias_audit(&mut t, r);

    // Estimate.
    let _ = writeln!(
        t,
        "# The share of the input domain where changing only the protected attributes changes the decision, with a\n\
         # 95% interval (trials x samples random inputs)."
    );
    let _ = writeln!(t, "[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 100\nsamples = 1000\n");

    // Check.
    let _ = writeln!(t, "# The real test rows whose decision flips when only their protected attributes change.");
    let _ = writeln!(t, "[stages.check]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"test\"\n");

    // Search.
    let _ = writeln!(
        t,
        "# A search for individual discriminatory instances (IDIs: inputs whose decision changes with the protected\n\
         # attributes alone) with MAFT from k-means seeds of the training rows; every case found is checked again."
    );
    let _ = writeln!(t, "[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 4\nseeds = 1000\n");
    let _ = writeln!(
        t,
        "[stages.search]\nkind = \"generate\"\nmodel = \"model\"\nseeds = \"seeds\"\nplugin = \"maft\"\nparams = {{ global_num = 100, local_num = 1000 }}\n"
    );
    let _ = writeln!(t, "[stages.search_verified]\nkind = \"verify\"\ncases = \"search\"");
    t
}

/// The bias audit of a Local Law 144 audit, when a sex or a race/ethnicity column is proposed: of
/// the model's decisions (the data's label when audited without a model, say how).
fn write_bias_audit(t: &mut String, r: &Render<'_>) {
    let of = |kind: &str| r.proposed.iter().find(|p| p.kind == kind).map(|p| p.column.clone());
    let (sex, race) = (of("sex"), of("race"));
    if sex.is_none() && race.is_none() {
        return;
    }
    let _ = writeln!(
        t,
        "# The tables of a NYC Local Law 144 bias audit (docs/bias-audit.md) of the model's decisions: per sex,\n\
         # race/ethnicity and their intersection, the number of people, selection rate and impact ratio, with intervals\n\
         # and tests apart; it also writes bias_audit.html to print. To audit a file of past decisions without a model,\n\
         # write data = \"data\" instead of model = \"model\" and name the decisions (0/1) in column = \"...\"\n\
         # (or leave `column` out to audit the label); for scores, add outcome = \"score\"."
    );
    let _ = writeln!(t, "[stages.bias_audit]\nkind = \"bias_audit\"\nmodel = \"model\"");
    for (key, column) in [("sex", sex), ("race", race)] {
        if let Some(c) = column {
            let _ = writeln!(t, "{key} = {}", quote(&c));
        }
    }
    t.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, levels: &[(&str, usize)]) -> ColumnProfile {
        let numeric = levels.iter().all(|(v, _)| v.parse::<f64>().is_ok());
        ColumnProfile {
            name: name.into(),
            distinct: levels.len(),
            levels: levels.iter().map(|(v, n)| (v.to_string(), *n)).collect(),
            numeric,
            integer: numeric,
            range: None,
            missing: 0,
        }
    }

    #[test]
    fn names_split_into_words_at_separators_and_case_changes() {
        assert_eq!(words("AgeInYears"), ["age", "in", "years"]);
        assert_eq!(words("native-country"), ["native", "country"]);
        assert_eq!(words("label_CREDITRATING_eq_1"), ["label", "creditrating", "eq", "1"]);
        assert_eq!(words("PersonStatusSex"), ["person", "status", "sex"]);
        assert_eq!(words(" Y"), ["y"]);
        // "percentage" holds "age" but is not the word age.
        assert!(protected_kind(&column("percentage", &[("1", 3), ("2", 4)])).is_none());
    }

    #[test]
    fn protected_attributes_are_proposed_from_names_and_values() {
        let by = |c: ColumnProfile| protected_kind(&c).map(|p| (p.kind, p.by));
        assert_eq!(by(column("sex", &[("Female", 1), ("Male", 2)])), Some(("sex", "name")));
        assert_eq!(by(column("AgeInYears", &[("30", 1), ("40", 2)])), Some(("age", "name")));
        assert_eq!(by(column("native-country", &[("Cuba", 1), ("Peru", 2)])), Some(("nationality", "name")));
        assert_eq!(by(column("marital-status", &[("Divorced", 1), ("Married-civ-spouse", 2)])), Some(("marital status", "name")));
        assert_eq!(by(column("ForeignWorker", &[("1", 1), ("2", 2)])), Some(("nationality", "name")));
        assert_eq!(by(column("pk", &[("female", 1), ("male", 2)])), Some(("sex", "values")));
        assert_eq!(by(column("grp", &[("Asian", 1), ("Black", 2), ("Other", 3), ("White", 4)])), Some(("race", "values")));
        assert_eq!(by(column("hours", &[("40", 1), ("50", 2)])), None);
    }

    #[test]
    fn the_label_is_the_binary_column_named_like_one_else_the_last_binary_column() {
        let p = Path::new("d.csv");
        let sex = column("sex", &[("F", 1), ("M", 1)]);
        let y = column("y", &[("0", 1), ("1", 1)]);
        let other = column("flag", &[("a", 1), ("b", 1)]);
        let many = column("hours", &[("1", 1), ("2", 1), ("3", 1)]);
        assert_eq!(choose_label(p, &[&y, &sex, &other, &many], None).unwrap(), "y");
        assert_eq!(choose_label(p, &[&other, &sex, &many], None).unwrap(), "flag", "the last binary column not protected-looking");
        assert!(matches!(choose_label(p, &[&many], None), Err(InitError::NoLabel { .. })));
        assert!(matches!(choose_label(p, &[&many], Some("hours")), Err(InitError::LabelNotBinary { distinct: 3, .. })));
        assert!(matches!(choose_label(p, &[&many], Some("hour")), Err(InitError::NoColumn { .. })));
    }

    #[test]
    fn the_favourable_value_follows_the_label_and_its_values() {
        let fav = |c: ColumnProfile| choose_favourable(&c).0;
        assert_eq!(fav(column("income", &[("<=50K", 24720), (">50K", 7841)])), Some(">50K".into()));
        assert_eq!(fav(column("y", &[("0", 5), ("1", 3)])), None);
        assert_eq!(fav(column("two_year_recid", &[("0", 5), ("1", 3)])), Some("0".into()));
        assert_eq!(fav(column("outcome", &[("approved", 5), ("denied", 3)])), Some("approved".into()));
        assert_eq!(fav(column("decision", &[("bad", 5), ("ok", 3)])), Some("ok".into()));
        assert_eq!(fav(column("thing", &[("p", 5), ("q", 3)])), Some("q".into()), "the rarer value");
    }

    #[test]
    fn paths_are_relative_to_the_pipeline_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/data")).unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("a/data/x.csv"), "").unwrap();
        assert_eq!(relative_to(&dir.path().join("a/data/x.csv"), &dir.path().join("a")), PathBuf::from("data/x.csv"));
        assert_eq!(relative_to(&dir.path().join("a/data/x.csv"), &dir.path().join("b")), PathBuf::from("../a/data/x.csv"));
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(pipeline_name(Path::new("pipelines/data/adult.data.csv")), "adult-data-audit");
    }
}
