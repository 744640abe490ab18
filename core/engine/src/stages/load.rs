//! `load`: read a CSV or Parquet file into a dataset.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map};

use crate::data::{self, ColumnOverride, LoadSpec, MissingPolicy, Split, SplitSpec};
use crate::error::{hint, Result};
use crate::pipeline::params::{Params, Problems};
use crate::pipeline::registry::{ParamDoc, StageKind};
use crate::pipeline::stage::{put, Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};
use crate::pipeline::toml_spans::Val;

/// The `load` stage kind.
pub const KIND: StageKind = StageKind {
    name: "load",
    doc: "Read a CSV or Parquet file into a dataset: domain (integer, continuous, categorical attributes with bounds), encoded features, binary label, train/test split.",
    inputs: &[],
    output: ArtifactKind::Dataset,
    params: &[
        ParamDoc { name: "path", ty: "path", default: "required", doc: "CSV or Parquet file, relative to the pipeline file" },
        ParamDoc { name: "label", ty: "string", default: "required", doc: "label column" },
        ParamDoc { name: "favourable", ty: "string|int", default: "1 for 0/1 labels", doc: "the favourable label value as written in the file" },
        ParamDoc { name: "protected", ty: "string list", default: "required", doc: "protected attribute columns (one or several)" },
        ParamDoc { name: "drop", ty: "string list", default: "[]", doc: "columns to ignore (ids, row numbers)" },
        ParamDoc { name: "features", ty: "string list", default: "all other columns", doc: "feature columns in model-input order" },
        ParamDoc { name: "split_column", ty: "string", default: "none", doc: "column holding train / val / test per row" },
        ParamDoc { name: "test_fraction", ty: "float", default: "0.2", doc: "share of rows held out for test when there is no split column (seeded shuffle)" },
        ParamDoc { name: "missing", ty: "\"reject\"|\"drop\"", default: "\"reject\"", doc: "stop at a missing value, or drop rows that have one" },
        ParamDoc { name: "missing_values", ty: "string list", default: "[\"\", \"?\", \"NA\"]", doc: "cell texts that mean missing" },
        ParamDoc { name: "separator", ty: "string", default: "\",\"", doc: "CSV field separator (one character)" },
        ParamDoc { name: "columns", ty: "table", default: "{}", doc: "per-column overrides: columns.NAME = { kind, min, max, step, levels }" },
    ],
    example: "[stages.data]\nkind = \"load\"\npath = \"data/census.csv\"\nlabel = \"income\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"",
    build,
};

struct Load {
    spec: LoadSpec,
}

fn build(params: &Params, p: &mut Problems, seed: u64) -> Option<Box<dyn Stage>> {
    let path = params.existing_path(p, "path", "the data file");
    let label = params.str(p, "label", "the label column");
    let favourable = params.raw("favourable").and_then(|v| match &v.v {
        Val::Str(s) => Some(s.clone()),
        Val::Int(i) => Some(i.to_string()),
        Val::Bool(b) => Some(b.to_string()),
        other => {
            p.at(&v.span, format!("stage `{}`: `favourable` must be a string or an integer, found {}", params.stage(), other.type_name()));
            None
        }
    });
    let protected = params.str_list(p, "protected");
    if protected.is_empty() {
        p.at(params.header(), format!("stage `{}`: missing `protected` (the protected attribute columns)", params.stage()));
    }
    let drop = params.str_list(p, "drop");
    let features = params.raw("features").map(|_| params.str_list(p, "features"));
    let split_column = params.opt_str(p, "split_column");
    let test_fraction = params.f64_in(p, "test_fraction", 0.2, 0.0, 0.99);
    let missing = match params.choice(p, "missing", &["reject", "drop"], "reject").as_str() {
        "drop" => MissingPolicy::Drop,
        _ => MissingPolicy::Reject,
    };
    let markers = params.raw("missing_values").map(|_| params.str_list(p, "missing_values").into_iter().map(|s| s.v).collect());
    let separator = match params.opt_str(p, "separator") {
        None => b',',
        Some(s) if s.v.len() == 1 => s.v.as_bytes()[0],
        Some(s) if s.v == "\\t" => b'\t',
        Some(s) => {
            p.at(&s.span, format!("stage `{}`: `separator` must be one character, found {:?}", params.stage(), s.v));
            b','
        }
    };
    let mut columns = BTreeMap::new();
    for (name, value) in params.table(p, "columns").unwrap_or(&[]) {
        let Val::Table(entries) = &value.v else {
            p.at(&value.span, format!("stage `{}`: columns.{} must be a table like {{ min = 0, max = 9 }}", params.stage(), name.v));
            continue;
        };
        let mut over = ColumnOverride::default();
        for (k, v) in entries {
            let number = match v.v {
                Val::Int(i) => Some(i as f64),
                Val::Float(f) => Some(f),
                _ => None,
            };
            match (k.v.as_str(), &v.v) {
                ("kind", Val::Str(s)) if ["integer", "continuous", "categorical"].contains(&s.as_str()) => over.kind = Some(s.clone()),
                ("min", _) if number.is_some() => over.min = number,
                ("max", _) if number.is_some() => over.max = number,
                ("step", _) if number.is_some_and(|s| s > 0.0) => over.step = number,
                ("levels", Val::Array(items)) => {
                    over.levels = Some(
                        items
                            .iter()
                            .map(|i| match &i.v {
                                Val::Str(s) => s.clone(),
                                other => format!("{}", other.to_json()),
                            })
                            .collect(),
                    )
                }
                ("kind" | "min" | "max" | "step" | "levels", _) => p.at(
                    &v.span,
                    format!(
                        "stage `{}`: columns.{}.{}: expected {}",
                        params.stage(),
                        name.v,
                        k.v,
                        match k.v.as_str() {
                            "kind" => "\"integer\", \"continuous\" or \"categorical\"",
                            "levels" => "a list of level names",
                            "step" => "a positive number",
                            _ => "a number",
                        }
                    ),
                ),
                (other, _) => p.at(
                    &k.span,
                    format!(
                        "stage `{}`: columns.{}: unknown key `{other}`{}; accepted: kind, min, max, step, levels",
                        params.stage(),
                        name.v,
                        hint(other, &["kind", "min", "max", "step", "levels"])
                    ),
                ),
            }
        }
        columns.insert(name.v.clone(), (name.span.clone(), over));
    }

    let (path, label) = (path?, label?);
    // Check every named column against the file's header now, so `validate` catches typos.
    if let Ok(names) = data::column_names(&path.v, separator) {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut check = |col: &str, span: &std::ops::Range<usize>, role: &str| {
            if !names.iter().any(|n| n == col) {
                p.at(
                    span,
                    format!(
                        "stage `{}`: {role} `{col}` is not a column of {}{}; columns: {}",
                        params.stage(),
                        path.v.display(),
                        hint(col, &refs),
                        names.join(", ")
                    ),
                );
            }
        };
        check(&label.v, &label.span, "label");
        for c in &protected {
            check(&c.v, &c.span, "protected attribute");
        }
        for c in &drop {
            check(&c.v, &c.span, "dropped column");
        }
        for c in features.iter().flatten() {
            check(&c.v, &c.span, "feature");
        }
        if let Some(c) = &split_column {
            check(&c.v, &c.span, "split column");
        }
        for (c, (span, _)) in &columns {
            check(c, span, "column override");
        }
    }
    let mut spec = LoadSpec::new(path.v, label.v);
    spec.favourable = favourable;
    spec.protected = protected.into_iter().map(|s| s.v).collect();
    spec.drop = drop.into_iter().map(|s| s.v).collect();
    spec.features = features.map(|f| f.into_iter().map(|s| s.v).collect());
    spec.split = match split_column {
        Some(c) => SplitSpec::Column(c.v),
        None => SplitSpec::Fraction { test: test_fraction, seed },
    };
    spec.missing = missing;
    if let Some(m) = markers {
        spec.missing_markers = m;
    }
    spec.separator = separator;
    spec.columns = columns.into_iter().map(|(k, (_, o))| (k, o)).collect();
    Some(Box::new(Load { spec }))
}

impl Stage for Load {
    fn run(&self, _ctx: &StageContext, _inputs: &Inputs) -> Result<StageOutput> {
        let data = data::load(&self.spec)?;
        let mut figures = Map::new();
        put(&mut figures, "rows", data.len());
        put(&mut figures, "rows_train", data.rows_in(Split::Train).len());
        put(&mut figures, "rows_val", data.rows_in(Split::Val).len());
        put(&mut figures, "rows_test", data.rows_in(Split::Test).len());
        put(&mut figures, "dropped_rows", data.dropped_rows);
        put(&mut figures, "features", data.domain.width());
        put(
            &mut figures,
            "protected",
            data.domain.protected_indices().iter().map(|&i| data.domain.attributes[i].name.clone()).collect::<Vec<_>>(),
        );
        put(
            &mut figures,
            "label",
            json!({
                "column": data.label_name,
                "values": data.label_values,
                "favourable": data.label_values[1],
                "favourable_share": data.y.iter().filter(|&&v| v == 1).count() as f64 / data.len() as f64,
            }),
        );
        put(&mut figures, "domain", serde_json::to_value(&data.domain.attributes).unwrap_or_default());
        Ok(StageOutput { artifact: Artifact::Dataset(Arc::new(data)), figures, tables: Vec::new(), model_queries: 0 })
    }
}
