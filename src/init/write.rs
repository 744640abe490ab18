//! How `fairpipe init` writes the pipeline: the standard audit's tables
//! (`fairpipe_core::preset`, written from the stages' typed configs), each with comments saying
//! what was guessed and what to confirm.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fairpipe_core::data::ColumnProfile;
use fairpipe_core::domain::{AttributeKind, Domain};
use fairpipe_core::preset::{quote, StageTable, StandardAudit};

use super::guess::{CodesFound, Proposed};

/// `target` as a path relative to folder `base` when both are under a common folder other than the
/// root, else `target` absolute.
pub fn relative_to(target: &Path, base: &Path) -> PathBuf {
    let abs = |p: &Path| p.canonicalize().or_else(|_| std::path::absolute(p)).unwrap_or_else(|_| p.to_path_buf());
    let (target, base) = (abs(target), abs(base));
    // Only the root in common (or a different drive): absolute is clearer than ../../..
    fairpipe_core::trail::relative(&target, &base).unwrap_or(target)
}

/// A name's words for a pipeline name: `adult.data.csv` → `adult-data`.
fn slug(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let name: String = stem.chars().map(|c| if c.is_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    name.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
}

/// The pipeline's name, after the data and the model (two models of one data file get two
/// names, so two out folders): `adult.data.csv` and `xgb.onnx` → `adult-data-xgb-audit`.
pub fn pipeline_name(data: &Path, model: Option<&Path>) -> String {
    let mut parts = vec![slug(data)];
    if let Some(model) = model {
        let m = slug(model);
        if m != parts[0] {
            parts.push(m);
        }
    }
    parts.retain(|p| !p.is_empty());
    if parts.is_empty() {
        "audit".into()
    } else {
        format!("{}-audit", parts.join("-"))
    }
}

/// The pipeline file `fairpipe init DATA [--model MODEL]` writes when `--out` is not given: named
/// after the data and the model, in the current folder (`adult.data.csv` → `adult-data-audit.toml`;
/// with `--model xgb.onnx`, `adult-data-xgb-audit.toml`).
pub fn default_out(data: &Path, model: Option<&Path>) -> PathBuf {
    PathBuf::from(format!("{}.toml", pipeline_name(data, model)))
}

/// A path as the pipeline writes it: `/` separators.
pub(super) fn forward(p: &Path) -> PathBuf {
    PathBuf::from(p.to_string_lossy().replace('\\', "/"))
}

/// One attribute of the domain as a comment line: kind and bounds or levels.
pub(super) fn describe_attribute(a: &fairpipe_core::domain::Attribute) -> String {
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

/// The docs' explanation of a codes file.
pub(super) const CODES_DOCS: &str = "see docs/pipelines.md#category-names-and-their-codes";

/// Everything the pipeline's comments are made from; its stages are `audit`'s.
pub(super) struct Render<'a> {
    /// The data file.
    pub(super) data: &'a Path,
    /// Its rows.
    pub(super) rows: usize,
    /// Its rows a run keeps (without a missing cell, when those are dropped).
    pub(super) kept_rows: usize,
    /// The features as the load stage encodes them.
    pub(super) domain: &'a Domain,
    /// The label column.
    pub(super) label: &'a ColumnProfile,
    /// Why the favourable value was taken.
    pub(super) favourable_why: &'a str,
    /// The protected attributes proposed.
    pub(super) proposed: &'a [Proposed],
    /// Those the search, the estimate and the check vary (the load stage's `protected`).
    pub(super) searched: &'a [String],
    /// Those with a group metrics stage.
    pub(super) measured: &'a [String],
    /// The train/test column.
    pub(super) split_column: Option<&'a str>,
    /// Columns left out, each with why.
    pub(super) dropped: &'a [(String, String)],
    /// What was found of the model.
    pub(super) model_notes: &'a [String],
    /// A codes file beside the data.
    pub(super) codes: &'a CodesFound,
    /// Columns of names no codes file codes.
    pub(super) uncoded_names: &'a [&'a str],
    /// The stages.
    pub(super) audit: &'a StandardAudit,
}

/// The pipeline's text: the comments around the standard audit's tables.
pub(super) fn render(r: &Render<'_>) -> String {
    let mut t = String::new();
    let file = r.data.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let _ = writeln!(t, "# A starter fairness audit of {file}, written by `fairpipe init` (fairpipe {}).", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(t, "# Read the lines marked CONFIRM, then: fairpipe validate THIS_FILE && fairpipe run THIS_FILE");
    let _ = writeln!(t, "# (`fairpipe list` documents every stage kind and key.)");
    let _ = writeln!(t, "#");
    let kept = if r.kept_rows < r.rows { format!("; {} without a missing cell", r.kept_rows) } else { String::new() };
    let _ = writeln!(t, "# The features as read from the file ({} rows{kept}), kind and bounds as a run encodes them", r.rows);
    let _ = writeln!(t, "# (override one with columns.NAME = {{ kind, min, max, step, levels }} in the load stage):");
    let width = r.domain.attributes.iter().map(|a| a.name.len()).chain(r.dropped.iter().map(|(d, _)| d.len())).max().unwrap_or(8).max(8);
    for a in &r.domain.attributes {
        let mark = if r.searched.contains(&a.name) {
            "  [protected]"
        } else if r.measured.contains(&a.name) {
            "  [measured]"
        } else {
            ""
        };
        let _ = writeln!(t, "#   {:<width$}  {}{mark}", a.name, describe_attribute(a));
    }
    let label_values: Vec<String> = r.label.levels.iter().map(|(v, n)| format!("{v:?} ({n} rows)")).collect();
    let _ = writeln!(t, "#   {:<width$}  the label: {}", r.label.name, label_values.join(", "));
    if let Some(split) = r.split_column {
        let _ = writeln!(t, "#   {split:<width$}  the train/test split");
    }
    for (d, why) in r.dropped {
        let _ = writeln!(t, "#   {d:<width$}  dropped: {why}");
    }
    t.push('\n');
    let _ = writeln!(t, "[pipeline]\nname = {}\nseed = {}\n", quote(&r.audit.name), r.audit.seed);
    let mut metrics_said = false;
    for table in r.audit.tables() {
        let comment = match table.kind {
            "load" => {
                write_load(&mut t, r, &table, width);
                continue;
            }
            "load_model" => {
                let mut c = "# The model under test.\n".to_string();
                for note in r.model_notes {
                    let _ = writeln!(c, "# {note}");
                }
                c
            }
            "train" => "# No model given: a stand-in trained on the data's training rows (the papers' six-layer network).\n\
                        # To audit your own model, replace this stage with\n\
                        #   kind = \"load_model\"\n#   data = \"data\"\n#   path = \"MODEL.onnx\"\n\
                        # (or run `fairpipe init DATA --model MODEL.onnx`).\n"
                .to_string(),
            "group_metrics" if !metrics_said => {
                metrics_said = true;
                format!(
                    "# Outcomes per group on the test rows, one stage per protected attribute (so each stage's headline figures,\n\
                     # e.g. demographic_parity_ratio, are that attribute's): selection rates, the four-fifths rule, error rates\n\
                     # with significance, against the largest group. A gate on them, e.g.\n\
                     #   fairpipe run THIS_FILE --gate \"{}.demographic_parity_ratio >= 0.8\"\n",
                    table.name
                )
            }
            "bias_audit" => "# The tables of a NYC Local Law 144 bias audit (docs/bias-audit.md) of the model's decisions: per sex,\n\
                             # race/ethnicity and their intersection, the number of people, selection rate and impact ratio, with intervals\n\
                             # and tests apart; it also writes bias_audit.html to print. To audit a file of past decisions without a model,\n\
                             # write data = \"data\" instead of model = \"model\" and name the decisions (0/1) in column = \"...\"\n\
                             # (or leave `column` out to audit the label); for scores, add outcome = \"score\".\n"
                .to_string(),
            "estimate" => "# The share of the input domain where changing only the protected attributes changes the decision, with a\n\
                           # 95% interval (trials x samples random inputs).\n"
                .to_string(),
            "check" => "# The real test rows whose decision flips when only their protected attributes change.\n".to_string(),
            "cluster" => "# A search for individual discriminatory instances (IDIs: inputs whose decision changes with the protected\n\
                          # attributes alone) from k-means seeds of the training rows, held to max_queries rows asked of the model;\n\
                          # every case found is checked again.\n"
                .to_string(),
            _ => String::new(),
        };
        t.push_str(&comment);
        t.push_str(&table.to_toml());
    }
    while t.ends_with("\n\n") {
        t.pop();
    }
    t
}

/// The load stage, each key with what was guessed about it.
fn write_load(t: &mut String, r: &Render<'_>, table: &StageTable, width: usize) {
    let _ = writeln!(t, "[stages.{}]\nkind = {}", table.name, quote(table.kind));
    let has = |k: &str| table.key(k).is_some();
    for (key, value) in &table.keys {
        match key.as_str() {
            "label" => {
                let _ = writeln!(
                    t,
                    "# CONFIRM the label: `{}` was guessed (a column with two values, named like a label or the last such column).",
                    r.label.name
                );
            }
            "favourable" => {
                let _ = writeln!(t, "# CONFIRM the favourable outcome: {}.", r.favourable_why);
            }
            "protected" => write_protected(t, r, width),
            "drop" => {
                let names: Vec<&str> = r.dropped.iter().map(|(d, _)| d.as_str()).collect();
                let _ = writeln!(t, "# Columns left out (why: in the list above): {}.", names.join(", "));
            }
            "test_fraction" if r.split_column.is_none() => {
                let _ = writeln!(t, "# No train/test column: a seeded 20% of the rows is held out for test.");
            }
            "missing" => {
                let _ = writeln!(t, "# Some cells are missing (empty, \"?\" or \"NA\"): rows with one are left out.");
            }
            "codes" => write_codes(t, r),
            _ => {}
        }
        let _ = writeln!(t, "{key} = {value}");
        if key == "label" && !has("favourable") {
            let _ = writeln!(t, "# CONFIRM the favourable outcome: {}.\n# favourable = 1", r.favourable_why);
        }
    }
    if r.split_column.is_none() && !has("test_fraction") {
        let _ = writeln!(t, "# No train/test column: a seeded 20% of the rows is held out for test (test_fraction, default 0.2).");
    }
    if !has("codes") {
        write_codes(t, r);
    }
    t.push('\n');
}

/// The protected attributes proposed, and what is done with each.
fn write_protected(t: &mut String, r: &Render<'_>, width: usize) {
    let _ = writeln!(t, "# CONFIRM the protected attributes. Proposed from the columns:");
    for p in r.proposed {
        let how = match p.by {
            "--protected" => "given with --protected".to_string(),
            by => format!("{} by its {by}", p.kind),
        };
        let role = if r.searched.contains(&p.column) {
            "searched and measured"
        } else if r.measured.contains(&p.column) {
            "measured by its group metrics stage"
        } else {
            "protected in some laws only (e.g. the US Equal Credit Opportunity Act): not measured; add it with --protected"
        };
        let _ = writeln!(t, "#   {:<width$}  {how}; {role}", p.column);
    }
    if r.searched.len() < r.measured.len() {
        let _ = writeln!(
            t,
            "# The search, the estimate and the check vary these protected attributes together (each audited input is tried\n\
             # with every combination of their values, so few are kept here); each measured one has its group metrics stage."
        );
    }
}

/// The load stage's `codes` line (or why there is none) with the columns of names it leaves to
/// sorted level codes.
fn write_codes(t: &mut String, r: &Render<'_>) {
    match r.codes {
        CodesFound::Read(codes) => {
            let columns: Vec<&str> = codes.columns.iter().map(|c| c.column.as_str()).collect();
            let _ = writeln!(
                t,
                "# CONFIRM the codes: {} beside the data gives the category names of these columns the integers a model\n\
                 # reading numbers gets (tables and reports keep the names; {CODES_DOCS}):\n#   {}",
                codes.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                columns.join(", ")
            );
        }
        CodesFound::Unusable(path, why) => {
            let _ = writeln!(t, "# {} is not used: {why}", path.display());
        }
        CodesFound::None => {}
    }
    let features: Vec<&str> = r.uncoded_names.iter().copied().filter(|c| *c != r.label.name).collect();
    if matches!(r.codes, CodesFound::Read(_)) && !features.is_empty() {
        let _ = writeln!(t, "# Not in the codes file (encoded as level codes, levels sorted): {}.", features.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_pipeline_folder_and_names_follow_data_and_model() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/data")).unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("a/data/x.csv"), "").unwrap();
        assert_eq!(relative_to(&dir.path().join("a/data/x.csv"), &dir.path().join("a")), PathBuf::from("data/x.csv"));
        assert_eq!(relative_to(&dir.path().join("a/data/x.csv"), &dir.path().join("b")), PathBuf::from("../a/data/x.csv"));
        assert_eq!(pipeline_name(Path::new("pipelines/data/adult.data.csv"), None), "adult-data-audit");
        assert_eq!(pipeline_name(Path::new("adult.data.csv"), Some(Path::new("m/XGB_v2.onnx"))), "adult-data-xgb-v2-audit");
        assert_eq!(pipeline_name(Path::new("census.csv"), Some(Path::new("census.onnx"))), "census-audit");
        assert_eq!(default_out(Path::new("d.csv"), Some(Path::new("lgbm.onnx"))), PathBuf::from("d-lgbm-audit.toml"));
    }
}
