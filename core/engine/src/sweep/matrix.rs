//! The `[matrix]` table of a pipeline: lists of values for stage parameters, whose cartesian
//! product is the sweep's combinations.
//!
//! A key names what it replaces as `STAGE.KEY` (or deeper, `STAGE.params.NAME`), or
//! `pipeline.seed`; written quoted (`"model.path" = [...]`) or as TOML dotted keys
//! (`model.path = [...]`), both read the same. Each combination is the pipeline with those values
//! put in place (a key the stage does not set is added), validated like any pipeline: a wrong
//! value is reported at the value's own place in `[matrix]`.
//!
//! Values that must change together (a model with its data and its protected attributes) form a
//! **group**: a key without a dot whose list holds tables of `STAGE.KEY = value` (and an optional
//! `name`, the combination folders' label), e.g.
//! `models = [{ name = "census", "model.path" = "census.onnx", "data.path" = "census.csv" }, …]`;
//! the group is one axis of the product.

use std::collections::BTreeMap;
use std::ops::Range;

use super::compare::Best;
use crate::run::registry;
use crate::stage::problems::Problems;
use crate::suggest::hint;
use fairpipe_data::toml_spans::{Sp, Val};

/// At most this many combinations in one sweep.
pub const MAX_COMBINATIONS: usize = 10_000;

/// One axis of the product: a swept key and the values it takes, or a group of keys set together.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The key as written, e.g. `model.path` (a group's name, e.g. `models`).
    pub key: String,
    /// Its segments, e.g. `["model", "path"]` (a group: its name alone).
    pub path: Vec<String>,
    /// The values, in the order listed (a group: its tables).
    pub values: Vec<Sp<Val>>,
    /// Per value, what it sets: (key path, value) — one pair for a swept key, a group's entries.
    pub settings: Vec<Vec<(Vec<String>, Sp<Val>)>>,
    /// Per value, a group entry's `name`, if given.
    pub names: Vec<Option<String>>,
}

/// The `[matrix]` table, read and checked.
#[derive(Debug, Clone, Default)]
pub struct Matrix {
    /// The swept keys, in file order.
    pub axes: Vec<Axis>,
    /// `best = "min|max STAGE.FIGURE"`, with its span.
    pub best: Option<(Best, Range<usize>)>,
}

/// A combination: one value per axis (indices into each axis's values).
pub type Combination = Vec<usize>;

impl Matrix {
    /// Read `[matrix]` from the document `root` (absent: no axes), recording problems: keys must
    /// name a stage of the file and a key its kind accepts (or `pipeline.seed`), values must be
    /// non-empty lists without repeats.
    pub fn read(root: &Sp<Val>, p: &mut Problems) -> Matrix {
        let mut matrix = Matrix::default();
        let Val::Table(top) = &root.v else { return matrix };
        let Some((_, table)) = top.iter().find(|(k, _)| k.v == "matrix") else { return matrix };
        let Val::Table(entries) = &table.v else {
            p.at(&table.span, format!("`matrix` must be a table of lists (`\"STAGE.KEY\" = [...]`), found {}", table.v.type_name()));
            return matrix;
        };
        // Stage name → kind name, as written (broken stages are judged by the pipeline reader).
        let mut stages: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        if let Some((_, Sp { v: Val::Table(st), .. })) = top.iter().find(|(k, _)| k.v == "stages") {
            for (name, body) in st {
                let kind = match &body.v {
                    Val::Table(e) => e.iter().find(|(k, _)| k.v == "kind").and_then(|(_, v)| match &v.v {
                        Val::Str(s) => Some(s.as_str()),
                        _ => None,
                    }),
                    _ => None,
                };
                stages.insert(name.v.as_str(), kind);
            }
        }
        let mut leaves = Vec::new();
        flatten(entries, &[], &mut leaves);
        for (path, key_span, value) in leaves {
            let key = path.join(".");
            if path.len() == 1 && path[0] == "best" {
                match &value.v {
                    Val::Str(s) => match s.parse::<Best>() {
                        Ok(b) => {
                            if let Some(problem) = best_problem(&b, &stages) {
                                p.at(&value.span, format!("[matrix] best {problem}"));
                            }
                            matrix.best = Some((b, value.span.clone()));
                        }
                        Err(e) => p.at(&value.span, format!("[matrix] best {e}")),
                    },
                    other => p.at(
                        &value.span,
                        format!("[matrix] `best` must be a string like \"min estimate.rate\", found {}", other.type_name()),
                    ),
                }
                continue;
            }
            if path.len() == 1 {
                if let Val::Array(values) = &value.v {
                    if let Some(axis) = read_group(&key, &value.span, values, &stages, p) {
                        matrix.axes.push(axis);
                    }
                    continue;
                }
            }
            if let Some(problem) = key_problem(&path, &stages) {
                p.at(&key_span, format!("[matrix] `{key}`: {problem}"));
                continue;
            }
            let Val::Array(values) = &value.v else {
                p.at(&value.span, format!("[matrix] `{key}` must list the values to sweep (`[a, b, …]`), found {}", value.v.type_name()));
                continue;
            };
            if values.is_empty() {
                p.at(&value.span, format!("[matrix] `{key}` lists no values; give at least one"));
                continue;
            }
            let mut ok = true;
            for (i, v) in values.iter().enumerate() {
                if values[..i].iter().any(|w| w.v == v.v) {
                    p.at(&v.span, format!("[matrix] `{key}` lists this value twice"));
                    ok = false;
                }
            }
            if matrix.axes.iter().any(|a| a.key == key) {
                p.at(&key_span, format!("[matrix] `{key}` is listed twice"));
                ok = false;
            }
            if ok {
                let settings = values.iter().map(|v| vec![(path.clone(), v.clone())]).collect();
                matrix.axes.push(Axis { key, path, values: values.clone(), settings, names: vec![None; values.len()] });
            }
        }
        // A key set by two axes (a group and a swept key, or two groups) has no single value.
        let mut setters: BTreeMap<String, &str> = BTreeMap::new();
        for axis in &matrix.axes {
            let mut keys: Vec<String> = axis.settings.iter().flatten().map(|(path, _)| path.join(".")).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                if let Some(other) = setters.insert(k.clone(), &axis.key) {
                    p.at(&table.span, format!("[matrix] `{k}` is set by both `{other}` and `{}`; set each key in one place", axis.key));
                }
            }
        }
        let count = matrix.axes.iter().try_fold(1usize, |n, a| n.checked_mul(a.values.len()));
        match count {
            Some(n) if n <= MAX_COMBINATIONS => {}
            _ => p.at(
                &table.span,
                format!(
                    "[matrix] gives {} combinations; at most {MAX_COMBINATIONS} (fewer values, or split the sweep into several files)",
                    count.map(|n| n.to_string()).unwrap_or_else(|| "more than 2^64".into())
                ),
            ),
        }
        matrix
    }

    /// The combinations in a fixed order: the first axis varies slowest.
    pub fn combinations(&self) -> Vec<Combination> {
        let mut out: Vec<Combination> = vec![Vec::new()];
        for axis in &self.axes {
            out = out.into_iter().flat_map(|c| (0..axis.values.len()).map(move |i| [c.clone(), vec![i]].concat())).collect();
        }
        out
    }

    /// The folder name of combination number `index`: its number (zero-padded to the count's
    /// width) and, per axis, the key's last segment and a short label of the value, e.g.
    /// `03_path=census_protected=race_seed=2`; letters, digits, `.`, `-`, `_`, `=` and `+` only.
    pub fn name(&self, index: usize, combination: &Combination) -> String {
        let count = self.axes.iter().map(|a| a.values.len()).product::<usize>().max(1);
        let width = (count - 1).to_string().len().max(2);
        let mut name = format!("{index:0width$}");
        for (axis, &i) in self.axes.iter().zip(combination) {
            let last = axis.path.last().map(String::as_str).unwrap_or("value");
            let value = match (&axis.names[i], axis.path.len()) {
                (Some(n), _) => sanitise(n),
                (None, 1) => (i + 1).to_string(),
                (None, _) => label(&axis.values[i].v),
            };
            name.push_str(&format!("_{}={value}", sanitise(last)));
        }
        name
    }

    /// The root document with combination `combination` applied and `[matrix]` left in place
    /// (the pipeline reader skips it in a sweep).
    pub fn apply(&self, root: &Sp<Val>, combination: &Combination) -> Sp<Val> {
        let mut doc = root.clone();
        for (axis, &i) in self.axes.iter().zip(combination) {
            for (path, value) in &axis.settings[i] {
                let (first, rest) = path.split_first().expect("a key has segments");
                let Val::Table(top) = &mut doc.v else { break };
                if first == "pipeline" {
                    set(top, &["pipeline".to_string()], rest, value);
                } else {
                    set(top, &["stages".to_string(), first.clone()], rest, value);
                }
            }
        }
        doc
    }

    /// The value of every axis in `combination`, as JSON keyed by the axis key.
    pub fn values_json(&self, combination: &Combination) -> serde_json::Map<String, serde_json::Value> {
        self.axes
            .iter()
            .zip(combination)
            .map(|(a, &i)| (a.key.clone(), a.names[i].as_ref().map(|n| serde_json::json!(n)).unwrap_or_else(|| a.values[i].v.to_json())))
            .collect()
    }

    /// The keys (`STAGE.KEY`) that value `value` of axis `axis` sets.
    pub fn settings_of(&self, axis: usize, value: usize) -> Vec<String> {
        self.axes[axis].settings[value].iter().map(|(path, _)| path.join(".")).collect()
    }

    /// Whether some axis sets `pipeline.seed`.
    pub fn sweeps_seed(&self) -> bool {
        self.axes.iter().any(|a| a.settings.iter().flatten().any(|(path, _)| path.len() == 2 && path[0] == "pipeline" && path[1] == "seed"))
    }
}

/// A group axis `key = [{ name = "…", "STAGE.KEY" = value, … }, …]`, its problems recorded.
fn read_group(key: &str, span: &Range<usize>, values: &[Sp<Val>], stages: &BTreeMap<&str, Option<&str>>, p: &mut Problems) -> Option<Axis> {
    let mut ok = !values.is_empty();
    if values.is_empty() {
        p.at(span, format!("[matrix] group `{key}` lists no values; give at least one table"));
    }
    let mut settings = Vec::new();
    let mut names = Vec::new();
    for (i, entry) in values.iter().enumerate() {
        let Val::Table(entries) = &entry.v else {
            p.at(
                &entry.span,
                format!(
                    "[matrix] `{key}`: a key without a dot is a group and lists tables of `\"STAGE.KEY\" = value` set together, found {}; to sweep one key write `STAGE.KEY = [...]`",
                    entry.v.type_name()
                ),
            );
            ok = false;
            continue;
        };
        if values[..i].iter().any(|w| w.v == entry.v) {
            p.at(&entry.span, format!("[matrix] `{key}` lists this value twice"));
            ok = false;
        }
        let mut leaves = Vec::new();
        flatten(entries, &[], &mut leaves);
        let mut set_here = Vec::new();
        let mut name = None;
        let mut bad_key = false;
        for (path, key_span, value) in leaves {
            if path.len() == 1 && path[0] == "name" {
                match &value.v {
                    Val::Str(s) => name = Some(s.clone()),
                    other => {
                        p.at(
                            &value.span,
                            format!("[matrix] `{key}`: `name` labels the entry and must be a string, found {}", other.type_name()),
                        );
                        ok = false;
                    }
                }
                continue;
            }
            if let Some(problem) = key_problem(&path, stages) {
                p.at(&key_span, format!("[matrix] `{key}`: `{}`: {problem}", path.join(".")));
                ok = false;
                bad_key = true;
                continue;
            }
            set_here.push((path, value.clone()));
        }
        if set_here.is_empty() && !bad_key {
            p.at(&entry.span, format!("[matrix] `{key}`: this entry sets no `STAGE.KEY`"));
            ok = false;
        }
        settings.push(set_here);
        names.push(name);
    }
    let labels: Vec<&String> = names.iter().flatten().collect();
    if labels.iter().enumerate().any(|(i, n)| labels[..i].contains(n)) {
        p.at(span, format!("[matrix] `{key}`: two entries have the same `name`"));
        ok = false;
    }
    ok.then(|| Axis { key: key.to_string(), path: vec![key.to_string()], values: values.to_vec(), settings, names })
}

/// `[matrix]` leaves: (path, span of the key, value); dotted TOML keys become paths.
fn flatten<'a>(entries: &'a [(Sp<String>, Sp<Val>)], prefix: &[String], out: &mut Vec<(Vec<String>, Range<usize>, &'a Sp<Val>)>) {
    for (k, v) in entries {
        let mut path = prefix.to_vec();
        path.extend(k.v.split('.').map(str::to_string));
        match &v.v {
            Val::Table(inner) if path.len() < 2 || (path.len() == 2 && path[1] == "params") => {
                flatten(inner, &path, out);
            }
            _ => out.push((path, k.span.clone(), v)),
        }
    }
}

/// What is wrong with a swept key, if anything.
fn key_problem(path: &[String], stages: &BTreeMap<&str, Option<&str>>) -> Option<String> {
    if path.iter().any(String::is_empty) || path.len() < 2 {
        return Some("expected `STAGE.KEY` (e.g. \"model.path\"), `STAGE.params.NAME` or `pipeline.seed`".into());
    }
    if path[0] == "pipeline" {
        return (path.len() != 2 || path[1] != "seed").then(|| "of [pipeline], only `seed` can be swept".to_string());
    }
    let names: Vec<&str> = stages.keys().copied().collect();
    let Some(kind) = stages.get(path[0].as_str()) else {
        return Some(format!("no stage `{}` in [stages]{}", path[0], hint(&path[0], &names)));
    };
    let kind = registry::find((*kind)?)?;
    let keys = kind.all_keys();
    if !keys.contains(&path[1].as_str()) {
        return Some(format!(
            "stage `{}` ({}) has no key `{}`{}; keys: {}",
            path[0],
            kind.name,
            path[1],
            hint(&path[1], &keys),
            keys.join(", ")
        ));
    }
    if path.len() > 2 && path[1] != "params" {
        return Some(format!("only `params` has sub-keys (`{}.params.NAME`)", path[0]));
    }
    None
}

/// What is wrong with `best`, if anything: its stage must exist and its figure be one the
/// comparison table has for that stage's kind.
fn best_problem(best: &Best, stages: &BTreeMap<&str, Option<&str>>) -> Option<String> {
    let (stage, figure) = best.column.split_once('.')?;
    if stage == "gate" {
        return (figure != "passed").then(|| "`gate` has one figure: `gate.passed`".to_string());
    }
    let names: Vec<&str> = stages.keys().copied().collect();
    let Some(kind) = stages.get(stage) else {
        return Some(format!("`{}`: no stage `{stage}`{}", best.column, hint(stage, &names)));
    };
    let figures = super::compare::figures_of_kind((*kind)?);
    if figures.is_empty() {
        return Some(format!("`{}`: the comparison has no figure of a `{}` stage", best.column, kind.unwrap_or("?")));
    }
    (!figures.contains(&figure))
        .then(|| format!("`{}`: a `{}` stage's figures are {}", best.column, kind.unwrap_or("?"), figures.join(", ")))
}

/// Put `value` at `rest` inside the table at `at` (tables created as needed, spanned at the value).
fn set(top: &mut Vec<(Sp<String>, Sp<Val>)>, at: &[String], rest: &[String], value: &Sp<Val>) {
    let full: Vec<&String> = at.iter().chain(rest).collect();
    let mut table = top;
    for (depth, seg) in full.iter().enumerate() {
        let last = depth + 1 == full.len();
        let pos = table.iter().position(|(k, _)| &k.v == *seg);
        let pos = match pos {
            Some(i) => i,
            None => {
                let fresh = if last { value.clone() } else { Sp { v: Val::Table(Vec::new()), span: value.span.clone() } };
                table.push((Sp { v: (*seg).clone(), span: value.span.clone() }, fresh));
                table.len() - 1
            }
        };
        if last {
            table[pos].1 = value.clone();
            return;
        }
        if !matches!(table[pos].1.v, Val::Table(_)) {
            // Not a table where one is needed: the pipeline reader reports the original value.
            return;
        }
        let Val::Table(inner) = &mut table[pos].1.v else { return };
        table = inner;
    }
}

/// A short, file-name-safe label of a value: a path's file stem, a list joined with `+`.
fn label(v: &Val) -> String {
    let text = match v {
        Val::Str(s) => {
            let base = s.rsplit(['/', '\\']).next().unwrap_or(s);
            match base.rsplit_once('.') {
                Some((stem, ext))
                    if !stem.is_empty()
                        && ext.chars().all(|c| c.is_ascii_alphanumeric())
                        && ext.len() <= 8
                        && s.contains(['/', '.'])
                        && !ext.chars().all(|c| c.is_ascii_digit()) =>
                {
                    stem.to_string()
                }
                _ => base.to_string(),
            }
        }
        Val::Array(items) => items.iter().map(|i| label(&i.v)).collect::<Vec<_>>().join("+"),
        Val::Table(entries) => entries.iter().map(|(k, v)| format!("{}-{}", k.v, label(&v.v))).collect::<Vec<_>>().join("+"),
        other => other.to_json().to_string(),
    };
    let mut s = sanitise(&text);
    if s.len() > 40 {
        s.truncate(40);
    }
    s
}

/// Keep letters, digits, `.`, `-`, `_`, `+`; anything else becomes `-`.
fn sanitise(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+') { c } else { '-' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairpipe_data::toml_spans;

    fn read(text: &str) -> (Matrix, Vec<String>) {
        let root = toml_spans::parse(text).unwrap();
        let mut p = Problems::new(std::path::Path::new("p.toml"), text);
        let m = Matrix::read(&root, &mut p);
        let problems = p
            .into_result()
            .err()
            .map(|e| e.problems.into_iter().map(|q| format!("{}:{}: {}", q.line, q.col, q.message)).collect())
            .unwrap_or_default();
        (m, problems)
    }

    const STAGES: &str = "[stages.model]\nkind = \"load_model\"\n[stages.est]\nkind = \"estimate\"\n";

    #[test]
    fn dotted_and_quoted_keys_read_the_same_and_combinations_vary_the_last_axis_fastest() {
        let (a, pa) = read(&format!("[matrix]\n\"model.path\" = [\"m/a.onnx\", \"m/b.onnx\"]\n\"pipeline.seed\" = [1, 2, 3]\n{STAGES}"));
        let (b, pb) = read(&format!("[matrix]\nmodel.path = [\"m/a.onnx\", \"m/b.onnx\"]\npipeline.seed = [1, 2, 3]\n{STAGES}"));
        assert!(pa.is_empty() && pb.is_empty(), "{pa:?} {pb:?}");
        assert_eq!(a.axes.iter().map(|x| &x.key).collect::<Vec<_>>(), b.axes.iter().map(|x| &x.key).collect::<Vec<_>>());
        let c = a.combinations();
        assert_eq!(c.len(), 6);
        assert_eq!(c[1], vec![0, 1]);
        assert_eq!(a.name(4, &c[4]), "04_path=b_seed=2");
    }

    #[test]
    fn unknown_stages_keys_and_non_lists_are_located() {
        let (_, p) = read(&format!("[matrix]\n\"modl.path\" = [1]\n\"est.trails\" = [1]\n\"est.trials\" = 5\n\"pipeline.name\" = [\"a\"]\nbest = \"lowest est.rate\"\n{STAGES}"));
        assert_eq!(p.len(), 5, "{p:?}");
        assert!(
            p[0].starts_with("2:1: [matrix] `modl.path`: no stage `modl` in [stages]") && p[0].contains("did you mean `model`"),
            "{p:?}"
        );
        assert!(
            p[1].starts_with("3:1: [matrix] `est.trails`: stage `est` (estimate) has no key `trails`") && p[1].contains("`trials`"),
            "{p:?}"
        );
        assert!(p[2].starts_with("4:16: [matrix] `est.trials` must list the values"), "{p:?}");
        assert!(p[3].starts_with("5:1: [matrix] `pipeline.name`: of [pipeline], only `seed`"), "{p:?}");
        assert!(p[4].starts_with("6:8: [matrix] best `lowest est.rate`: expected `min STAGE.FIGURE`"), "{p:?}");
    }

    #[test]
    fn repeated_values_and_an_unknown_best_figure_are_refused() {
        let (_, p) = read(&format!("[matrix]\n\"est.trials\" = [10, 10]\nbest = \"max est.accuracy\"\n{STAGES}"));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("2:21: [matrix] `est.trials` lists this value twice"), "{p:?}");
        assert!(p[1].contains("a `estimate` stage's figures are rate, ci95_low, ci95_high"), "{p:?}");
    }

    #[test]
    fn a_group_sets_its_keys_together_and_its_problems_are_located() {
        let (m, p) = read(&format!(
            "[matrix]\nmodels = [{{ name = \"a\", \"model.path\" = \"m/a.onnx\", \"est.trials\" = 10 }}, {{ \"model.path\" = \"m/b.onnx\" }}]\npipeline.seed = [1, 2]\n{STAGES}"
        ));
        assert!(p.is_empty(), "{p:?}");
        let c = m.combinations();
        assert_eq!(c.len(), 4);
        assert_eq!(m.name(0, &c[0]), "00_models=a_seed=1");
        assert_eq!(m.name(3, &c[3]), "03_models=2_seed=2", "an entry without a name is labelled by its number");
        assert_eq!(m.settings_of(0, 0), ["model.path", "est.trials"]);
        assert_eq!(m.values_json(&c[0])["models"], "a");
        let (_, p) =
            read(&format!("[matrix]\nmodels = [{{ \"model.pth\" = 1 }}, 3, {{ name = 5, \"est.trials\" = 1 }}]\nestimates = []\n{STAGES}"));
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(p[0].starts_with("2:13: [matrix] `models`: `model.pth`: stage `model` (load_model) has no key `pth`"), "{p:?}");
        assert!(p[1].starts_with("2:32: [matrix] `models`: a key without a dot is a group"), "{p:?}");
        assert!(p[2].contains("`name` labels the entry and must be a string, found"), "{p:?}");
        assert!(p[3].contains("group `estimates` lists no values"), "{p:?}");
    }
}
