//! The plugin conformance suite, run against every plugin crate under `plugins/` (a new plugin gets it
//! for free) in both its forms — linked into the binary (built-in) and loaded from its cdylib —
//! which must behave identically: descriptor sane, unknown parameters refused, an injected panic
//! returned as an error (the host survives), same seed → same cases, every case confirmed by the
//! host's own check, the conformance library's rules; a deliberately mismatched plugin refused with
//! both ABI versions named, and a plugin built for the previous minor still run.
//!
//! The plugin libraries must be built first: `cargo build --workspace --all-targets`.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use fairpipe_core::check::Checker;
use fairpipe_core::data::Dataset;
use fairpipe_core::models::OnnxModel;
use fairpipe_core::oracle::Oracle;
use fairpipe_core::plugin::{self, Plugin, PluginHostError, RunSpec};
use fairpipe_ffi::FfiBudget;
use serde_json::json;

/// Names of the plugin crates under plugins/.
fn plugin_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(common::root().join("plugins"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.contains(&"aequitas".to_string()) && names.contains(&"random".to_string()), "{names:?}");
    names
}

fn census() -> (Dataset, Oracle) {
    let data = common::census_data();
    let model = OnnxModel::load(&common::root().join("pipelines/models/census.onnx"), data.domain.width(), None).unwrap();
    (data, Oracle::new(Arc::new(model)))
}

fn run(
    name: &str,
    params: serde_json::Value,
    seed: u64,
    data: &Dataset,
    oracle: &Oracle,
) -> Result<plugin::GenerateOutput, PluginHostError> {
    run_with(common::plugin(name), params, seed, data, oracle)
}

fn run_with(
    plugin: &Plugin,
    params: serde_json::Value,
    seed: u64,
    data: &Dataset,
    oracle: &Oracle,
) -> Result<plugin::GenerateOutput, PluginHostError> {
    let seeds: Vec<f64> = data.x.iter().copied().take(200 * data.domain.width()).collect();
    let spec = RunSpec {
        params: &params,
        seeds: &seeds,
        rng_seed: seed,
        budget: FfiBudget { max_queries: 1_500_000, ..Default::default() },
        gamma: None,
    };
    plugin.generate(oracle, &data.domain, &spec, &indicatif::ProgressBar::hidden())
}

#[test]
fn descriptors_are_sane() {
    for name in plugin_names() {
        let plugin = common::plugin(&name);
        assert_eq!(plugin.name, name);
        assert!(!plugin.version.is_empty());
        let d = &plugin.description;
        assert_eq!(d["name"], name.as_str());
        assert!(d["doc"].as_str().unwrap().len() > 20, "{name} lacks a doc");
        for p in d["params"].as_array().unwrap() {
            assert!(p["doc"].as_str().is_some_and(|s| !s.is_empty()), "{name}: parameter without doc: {p}");
            assert!(!p["default"].is_null(), "{name}: parameter without default: {p}");
            // Every default passes the plugin's own validation.
            plugin.validate(&json!({ p["name"].as_str().unwrap(): p["default"] })).unwrap();
        }
    }
}

#[test]
fn unknown_parameters_are_refused_with_a_suggestion() {
    for name in plugin_names() {
        let plugin = common::plugin(&name);
        let err = plugin.validate(&json!({"definitely_not_a_parameter": 1})).unwrap_err().to_string();
        assert!(err.contains("unknown parameter `definitely_not_a_parameter`"), "{name}: {err}");
        let first = plugin.description["params"][0]["name"].as_str().unwrap().to_string();
        let typo = format!("{}x", first);
        let err = plugin.validate(&json!({ typo.clone(): 1 })).unwrap_err().to_string();
        assert!(err.contains(&format!("did you mean `{first}`")), "{name}: {err}");
    }
}

#[test]
fn an_injected_panic_comes_back_as_an_error_and_the_host_survives() {
    let (data, oracle) = census();
    for name in plugin_names() {
        let err = run(&name, json!({"_inject_panic": true}), 1, &data, &oracle).unwrap_err();
        match &err {
            PluginHostError::Failed { what, message, .. } => {
                assert_eq!(what, "panic", "{name}: {err}");
                assert!(message.contains("injected panic"), "{name}: {message}");
            }
            other => panic!("{name}: expected a panic error, got {other}"),
        }
        // The same plugin still works after the panic.
        run(&name, json!({}), 1, &data, &oracle).unwrap();
    }
}

fn is_auditor(name: &str) -> bool {
    common::plugin(name).kind() == fairpipe_ffi::kind::AUDITOR
}

#[test]
fn auditors_report_well_formed_reproducible_groups() {
    let (data, oracle) = census();
    let auditors: Vec<String> = plugin_names().into_iter().filter(|n| is_auditor(n)).collect();
    assert!(auditors.contains(&"testsgd".to_string()), "{auditors:?}");
    for name in auditors {
        let a = run(&name, json!({}), 7, &data, &oracle).unwrap();
        let b = run(&name, json!({}), 7, &data, &oracle).unwrap();
        assert!(a.cases.is_empty(), "{name}: an auditor emits no cases");
        let report = a.report.expect("an auditor sends a report");
        assert_eq!(
            Some(report.clone()).map(|r| r["groups"].clone()),
            b.report.map(|r| r["groups"].clone()),
            "{name}: same seed, same groups"
        );
        let groups = report["groups"].as_array().expect("groups");
        assert!(!groups.is_empty(), "{name} reported no group");
        let mut previous = f64::INFINITY;
        for g in groups {
            for c in g["conditions"].as_array().unwrap() {
                let attr = c["attribute"].as_u64().unwrap() as usize;
                assert!(data.domain.attributes[attr].protected, "{name}: a condition on an unprotected attribute: {c}");
            }
            let score = g["score"].as_f64().unwrap();
            assert!(score <= previous, "{name}: groups are not ranked by score");
            previous = score;
            let (rin, rout) = (g["rate_in"].as_f64().unwrap(), g["rate_out"].as_f64().unwrap());
            assert!((score - (rin - rout).abs()).abs() < 1e-12);
        }
        let c = run(&name, json!({}), 8, &data, &oracle).unwrap().report.unwrap();
        assert_ne!(report["groups"], c["groups"], "{name}: another seed draws other samples");
    }
}

#[test]
fn same_seed_gives_the_same_cases_and_every_case_verifies() {
    let (data, oracle) = census();
    let checker = Checker::new(&data.domain, None);
    for name in plugin_names().into_iter().filter(|n| !is_auditor(n)) {
        let a = run(&name, json!({}), 7, &data, &oracle).unwrap();
        let b = run(&name, json!({}), 7, &data, &oracle).unwrap();
        assert!(!a.cases.is_empty(), "{name} found nothing on the census model");
        assert_eq!(a.cases.len(), b.cases.len(), "{name}");
        for (x, y) in a.cases.iter().zip(&b.cases) {
            assert_eq!((&x.instance, &x.counterpart, x.origin), (&y.instance, &y.counterpart, y.origin), "{name}");
        }
        let c = run(&name, json!({}), 8, &data, &oracle).unwrap();
        assert_ne!(
            a.cases.iter().map(|c| c.instance.clone()).collect::<Vec<_>>(),
            c.cases.iter().map(|c| c.instance.clone()).collect::<Vec<_>>(),
            "{name}: another seed gives other cases"
        );
        // The host's independent re-check confirms every case, and the counterpart is a real variant.
        let rows: Vec<f64> = a.cases.iter().flat_map(|c| c.instance.clone()).collect();
        let verdicts = checker.check(&oracle, &rows).unwrap();
        let protected = data.domain.protected_indices();
        for (case, v) in a.cases.iter().zip(&verdicts) {
            assert!(v.discriminatory, "{name}: case {:?} does not verify", case.instance);
            for j in 0..data.domain.width() {
                if !protected.contains(&j) {
                    assert_eq!(case.instance[j], case.counterpart[j], "{name}");
                }
            }
            let p = oracle.predict_proba(&case.counterpart).unwrap()[0];
            assert_ne!(p > 0.5, v.p > 0.5, "{name}: the counterpart does not flip the label");
        }
        assert!(a.generated > 0, "{name} reported no generated inputs");
    }
}

/// A test fixture library (outside the `fairpipe_plugin_` name space, so no listing shows it).
fn fixture(crate_name: &str) -> PathBuf {
    let file = format!("{}{}{}", std::env::consts::DLL_PREFIX, crate_name, std::env::consts::DLL_SUFFIX);
    let path = common::plugin_dir().join(file);
    assert!(path.exists(), "{} is built by cargo build --workspace", path.display());
    path
}

#[test]
fn a_plugin_built_for_another_abi_major_is_refused_naming_both_versions() {
    let err = plugin::load_path(&fixture("fixture_abi_mismatch")).unwrap_err().to_string();
    let host = format!("{}.{}", fairpipe_ffi::ABI_MAJOR, fairpipe_ffi::ABI_MINOR);
    let plugin = format!("{}.7", fairpipe_ffi::ABI_MAJOR + 1);
    assert!(err.contains(&format!("plugin ABI version {plugin} does not match the host's {host}")), "{err}");
}

#[test]
fn plugins_built_for_earlier_minors_still_load_and_run() {
    // The host is 1.4; 1.2 has no `gradient` (nor its cost, 1.4), 1.1 no `last_error` and the
    // plain entry symbol.
    assert_eq!(fairpipe_ffi::ABI_MINOR, 4);
    let (data, oracle) = census();
    for (name, minor) in [("fixture_abi_1_2", 2), ("fixture_abi_1_1", 1)] {
        let plugin = plugin::load_path(&fixture(name)).unwrap();
        assert_eq!(plugin.abi, (fairpipe_ffi::ABI_MAJOR, minor));
        assert_eq!(plugin.name, name);
        plugin.validate(&json!({})).unwrap();
        let seeds: Vec<f64> = data.x.iter().copied().take(2000 * data.domain.width()).collect();
        let spec = RunSpec { params: &json!({}), seeds: &seeds, rng_seed: 1, budget: FfiBudget::default(), gamma: None };
        let out = plugin.generate(&oracle, &data.domain, &spec, &indicatif::ProgressBar::hidden()).unwrap();
        assert_eq!(out.generated, 2000, "{name}: progress reached the host");
        assert!(!out.cases.is_empty(), "{name}: the census model treats some of 2000 rows differently by gender");
        assert!(out.gradient.is_none(), "{name} knows no gradient");
        let checker = Checker::new(&data.domain, None);
        let rows: Vec<f64> = out.cases.iter().flat_map(|c| c.instance.clone()).collect();
        assert!(
            checker.check(&oracle, &rows).unwrap().iter().all(|v| v.discriminatory),
            "{name}: every case the old plugin emitted is real"
        );
    }
}

/// Validate a pipeline of the bundled census data and model (lines 1–12) followed by `stages`
/// (from line 13); returns (success, stderr).
fn validate_census_with(stages: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[stages.data]\nkind = \"load\"\npath = \"{}\"\ncodes = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n{stages}",
        common::bundled("data/census.csv"),
        common::bundled("data/census.codes.toml"),
        common::bundled("models/census.onnx")
    );
    let file = common::write(dir.path(), "p.toml", &text);
    let (ok, _, stderr) = common::fairpipe(&["validate", file.to_str().unwrap()]);
    (ok, stderr)
}

#[test]
fn pipelines_report_unknown_plugins_and_plugin_parameters_at_their_line() {
    let (ok, stderr) = validate_census_with("[stages.a]\nkind = \"generate\"\nmodel = \"model\"\nplugin = \"aequitas\"\nparams = { strategy = \"fully_directed\", global_iteration = 5 }\n\n[stages.b]\nkind = \"generate\"\nmodel = \"model\"\nplugin = \"aequitass\"\n");
    assert!(!ok);
    assert!(
        stderr.contains("p.toml:19:10:") && stderr.contains("unknown parameter `global_iteration` (did you mean `global_iterations`?)"),
        "{stderr}"
    );
    assert!(stderr.contains("p.toml:24:10:") && stderr.contains("no plugin `aequitass` found (did you mean `aequitas`?)"), "{stderr}");
}

#[test]
fn a_plugin_of_the_wrong_kind_is_refused_where_it_is_named() {
    let (ok, stderr) = validate_census_with("[stages.a]\nkind = \"generate\"\nmodel = \"model\"\nplugin = \"testsgd\"\n\n[stages.b]\nkind = \"group_score\"\nmodel = \"model\"\nplugin = \"maft\"\n");
    assert!(!ok);
    assert!(
        stderr.contains("p.toml:18:10:") && stderr.contains("plugin `testsgd` is an auditor; use it in a group_score stage"),
        "{stderr}"
    );
    assert!(stderr.contains("p.toml:23:10:") && stderr.contains("plugin `maft` is a generator; group_score needs an auditor"), "{stderr}");
}

#[test]
fn every_plugin_crate_is_a_builtin() {
    let builtins: Vec<String> = fairpipe::BUILTINS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(plugin_names(), builtins, "add a new plugin crate to fairpipe::BUILTINS (src/lib.rs) and the root Cargo.toml");
}

#[test]
fn both_forms_of_every_builtin_describe_and_run_identically() {
    let (data, oracle) = census();
    for name in plugin_names() {
        let (linked, loaded) = (common::plugin(&name), common::library(&name));
        assert!(linked.is_builtin() && !loaded.is_builtin());
        assert_eq!((&linked.name, &linked.version, linked.abi), (&loaded.name, &loaded.version, loaded.abi), "{name}");
        assert_eq!(linked.description, loaded.description, "{name}");
        let a = run_with(linked, json!({}), 11, &data, &oracle).unwrap();
        let b = run_with(loaded, json!({}), 11, &data, &oracle).unwrap();
        assert_eq!(a.generated, b.generated, "{name}");
        assert_eq!(a.cases.len(), b.cases.len(), "{name}");
        for (x, y) in a.cases.iter().zip(&b.cases) {
            assert_eq!((&x.instance, &x.counterpart, x.origin), (&y.instance, &y.counterpart, y.origin), "{name}");
        }
        assert_eq!(a.report.map(|r| r["groups"].clone()), b.report.map(|r| r["groups"].clone()), "{name}");
    }
}

/// The conformance library (`fairpipe-conformance`, what plugin authors run) over both forms of
/// every plugin.
#[test]
fn every_plugin_passes_the_conformance_library_in_both_forms() {
    let mut failures = Vec::new();
    for (name, entry) in fairpipe::BUILTINS {
        let path = common::plugin_dir().join(plugin::library_file_name(name));
        let loaded = fairpipe_conformance::Subject::from_library(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let linked = fairpipe_conformance::Subject::from_entry(*entry).unwrap();
        for subject in [linked, loaded] {
            assert_eq!(subject.name(), *name);
            failures.extend(fairpipe_conformance::check(&subject, &fairpipe_conformance::Setup::planted()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
