//! The machine-readable forms of `fairpipe validate` and `fairpipe list` (`--format json`). The
//! schemas are documented in the commands' help (`fairpipe validate --help`, `fairpipe list
//! --help`); the keys below are that contract: add keys freely, never rename one.

use std::path::{Path, PathBuf};

use fairpipe_core::error::ConfigError;
use fairpipe_core::plugin::{self, Plugin};
use fairpipe_core::run::registry::STAGE_KINDS;
use fairpipe_core::run::StageKind;
use fairpipe_core::sweep::Sweep;
use serde_json::{json, Value};

/// The JSON schema of `fairpipe validate --format json`, as its help shows it.
pub const VALIDATE_SCHEMA: &str = "\
With --format json, one JSON object on standard output (exit code 0 when valid, 1 when not):
  {\"file\": PATH, \"valid\": true|false,
   \"pipeline\": NAME, \"seed\": N,                     (when valid)
   \"stages\": [{\"name\": S, \"kind\": K, \"inputs\": {ROLE: STAGE}}],   (run order; when valid)
   \"matrix\": null | {\"keys\": [KEY], \"combinations\": N},        (when valid)
   \"problems\": [{\"file\": PATH, \"line\": N, \"col\": N, \"message\": TEXT}]}   (empty when valid)";

/// The JSON schema of `fairpipe list --format json`, as its help shows it.
pub const LIST_SCHEMA: &str = "\
With --format json, one JSON object on standard output:
  {\"stages\": [{\"kind\": K, \"doc\": TEXT, \"output\": ARTIFACT,
               \"inputs\": [{\"role\": R, \"accepts\": [ARTIFACT], \"required\": BOOL, \"doc\": TEXT}],
               \"params\": [{\"name\": KEY, \"type\": TYPE, \"default\": TEXT, \"doc\": TEXT, \"only\": [TAG]}],
               \"tag\": KEY|null, \"example\": TOML}],
   \"plugins\": [{\"name\": N, \"source\": \"built-in\"|PATH, \"status\": \"ok\"|\"shadowed\"|\"refused\",
                \"version\": V, \"kind\": \"generator\"|\"auditor\", \"abi\": [MAJOR, MINOR], \"needs_scores\": BOOL, \"doc\": TEXT,
                \"params\": [{\"name\": N, \"default\": VALUE, \"doc\": TEXT}],   (when not refused)
                \"error\": TEXT}]}                                           (when refused)
ARTIFACT is one of dataset, model, seeds, estimate, cases, groups, group_metrics, texts,
text_model, text_groups.";

/// `ArtifactKind::GroupMetrics` as `group_metrics`.
fn artifact_name(kind: fairpipe_core::run::ArtifactKind) -> String {
    let mut out = String::new();
    for (i, c) in format!("{kind:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// One stage kind as JSON.
fn stage_kind(k: &StageKind) -> Value {
    json!({
        "kind": k.name,
        "doc": k.doc,
        "output": artifact_name(k.output),
        "inputs": k.inputs.iter().map(|i| json!({
            "role": i.role,
            "accepts": i.accepts.iter().map(|a| artifact_name(*a)).collect::<Vec<_>>(),
            "required": i.required,
            "doc": i.doc,
        })).collect::<Vec<_>>(),
        "params": (k.keys)().iter().map(|p| json!({
            "name": p.name,
            "type": p.ty,
            "default": p.default,
            "doc": p.doc,
            "only": p.only,
        })).collect::<Vec<_>>(),
        "tag": k.tag,
        "example": k.example,
    })
}

/// One plugin as JSON, with its `status`.
fn plugin(p: &Plugin, status: &str) -> Value {
    json!({
        "name": p.name,
        "source": p.source.to_string(),
        "status": status,
        "version": p.version,
        "kind": p.kind_name(),
        "abi": [p.abi.0, p.abi.1],
        "needs_scores": p.needs_scores(),
        "doc": p.description["doc"].as_str().unwrap_or(""),
        "params": p.description["params"].as_array().into_iter().flatten().map(|param| json!({
            "name": param["name"],
            "default": param["default"],
            "doc": param["doc"],
        })).collect::<Vec<_>>(),
    })
}

/// `fairpipe list --format json`: every stage kind and every plugin (the built-ins, then the
/// files on the search path after `extra_dirs`), as [`LIST_SCHEMA`] describes.
pub fn list(extra_dirs: &[PathBuf]) -> Value {
    let plugins: Vec<Value> = plugin::installed(extra_dirs)
        .into_iter()
        .map(|installed| match (&installed.plugin, installed.shadowed) {
            (Ok(p), shadowed) => plugin(p, if shadowed { "shadowed" } else { "ok" }),
            (Err(e), _) => json!({
                "name": installed.name,
                "source": installed.source.to_string(),
                "status": "refused",
                "error": e.to_string(),
            }),
        })
        .collect();
    json!({ "stages": STAGE_KINDS.iter().map(stage_kind).collect::<Vec<_>>(), "plugins": plugins })
}

/// `fairpipe validate --format json` for pipeline `file` loaded as `loaded`, as
/// [`VALIDATE_SCHEMA`] describes; the bool says whether it is valid.
pub fn validate(file: &Path, loaded: Result<Sweep, ConfigError>) -> (bool, Value) {
    let problems = |e: ConfigError| -> Vec<Value> {
        e.problems
            .into_iter()
            .map(|p| json!({ "file": p.file.display().to_string(), "line": p.line, "col": p.col, "message": p.message }))
            .collect()
    };
    let invalid = |problems: Vec<Value>| (false, json!({ "file": file.display().to_string(), "valid": false, "problems": problems }));
    let sweep = match loaded {
        Ok(sweep) => sweep,
        Err(e) => return invalid(problems(e)),
    };
    let first = match sweep.pipeline(0) {
        Ok(p) => p,
        Err(e) => return invalid(problems(e)),
    };
    let stages: Vec<Value> = first.stages.iter().map(|s| json!({ "name": s.name, "kind": s.kind.name, "inputs": s.inputs })).collect();
    let matrix = if sweep.info.matrix { json!({ "keys": sweep.info.keys, "combinations": sweep.info.units.len() }) } else { Value::Null };
    (
        true,
        json!({
            "file": file.display().to_string(),
            "valid": true,
            "pipeline": sweep.info.pipeline,
            "seed": sweep.info.seed,
            "stages": stages,
            "matrix": matrix,
            "problems": [],
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_names_are_snake_case() {
        use fairpipe_core::run::ArtifactKind;
        assert_eq!(artifact_name(ArtifactKind::GroupMetrics), "group_metrics");
        assert_eq!(artifact_name(ArtifactKind::Dataset), "dataset");
        assert_eq!(artifact_name(ArtifactKind::TextGroups), "text_groups");
    }
}
