//! The command line's output for scripts: `run --quiet` prints the results folder and nothing
//! else (errors and a failed gate on standard error), `validate --format json` and `list --format
//! json` print one JSON object each, parsed here as a script would.

use crate::common;

use common::*;

/// A run that states a warning (50 seeds asked of a dozen rows) and fails a gate, quietly: standard
/// output is the results folder's path alone; standard error holds the failed gate only (the
/// warning is in summary.json).
#[test]
fn quiet_prints_the_results_path_and_only_errors() {
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..12).map(|i| format!("{},{},{}\n", i % 7, i % 2, (i / 3) % 2)).collect();
    write(dir.path(), "small.csv", &format!("x,s,y\n{rows}"));
    let text = "[pipeline]\nseed = 1\n\n[stages.data]\nkind = \"load\"\npath = \"small.csv\"\nlabel = \"y\"\nprotected = [\"s\"]\n\n\
                [stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 2\nseeds = 50\n";
    let pipeline = write(dir.path(), "p.toml", text);
    let out = dir.path().join("out");
    let (ok, stdout, stderr) = fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, format!("{}\n", out.display()));
    assert_eq!(stderr, "", "nothing but errors on standard error");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["stages"]["seeds"]["warnings"].as_array().map(Vec::len), Some(1), "the warning is kept");

    // The same run not quiet prints the warning, the stage table and the files.
    let loud = dir.path().join("loud");
    let (ok, stdout, stderr) = fairpipe(&["run", pipeline.to_str().unwrap(), "--out", loud.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("warning: stage `seeds`"), "{stderr}");
    assert!(stdout.lines().count() > 5 && stdout.contains("results: "), "{stdout}");

    // A failed gate, quietly: the path on standard output, the verdict and conditions on standard
    // error, exit code 3.
    let gated = write(dir.path(), "g.toml", &format!("{text}\n[gate]\nconditions = [\"seeds.seeds > 100\"]\n"));
    let out = dir.path().join("gated");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", gated.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(stdout, format!("{}\n", out.display()));
    assert!(stderr.starts_with("gate: FAILED") && stderr.contains("seeds.seeds > 100"), "{stderr}");
}

/// `validate --format json` on a bundled pipeline gives its stages in run order with their
/// inputs; on a broken one, `valid: false` with each problem located, and exit code 1.
#[test]
fn validate_json_lists_the_stages_or_the_located_problems() {
    let (ok, stdout, stderr) = fairpipe(&["validate", "pipelines/census-full-audit.toml", "--format", "json"]);
    assert!(ok, "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(v["valid"], true);
    assert_eq!(v["problems"], serde_json::json!([]));
    assert_eq!(v["matrix"], serde_json::Value::Null);
    let stages = v["stages"].as_array().unwrap();
    let names: Vec<&str> = stages.iter().map(|s| s["name"].as_str().unwrap()).collect();
    // Run order: every stage comes after the stages it reads.
    for (i, s) in stages.iter().enumerate() {
        for target in s["inputs"].as_object().unwrap().values() {
            let at = names.iter().position(|n| *n == target.as_str().unwrap()).expect("an input names a stage");
            assert!(at < i, "{} reads {target}, which runs later", names[i]);
        }
    }
    assert!(stages.iter().any(|s| s["kind"] == "estimate"), "{stdout}");
    // The text form names the same stages.
    let (_, text, _) = fairpipe(&["validate", "pipelines/census-full-audit.toml"]);
    assert!(text.contains(&format!("{} stages", names.len())), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.toml",
        &format!("{}\n[stages.e]\nkind = \"estimat\"\n\n[stages.m]\nkind = \"group_metrics\"\nmodel = \"nothing\"\n", census_data_stage()),
    );
    let (ok, stdout, _) = fairpipe(&["validate", bad.to_str().unwrap(), "--format", "json"]);
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(v["valid"], false);
    let problems = v["problems"].as_array().unwrap();
    assert!(problems.len() >= 2, "{stdout}");
    assert!(problems.iter().all(|p| p["line"].as_u64().unwrap() > 0 && p["col"].as_u64().unwrap() > 0), "{stdout}");
    assert!(problems.iter().any(|p| p["message"].as_str().unwrap().contains("estimat")), "{stdout}");
}

/// `list --format json` holds every stage kind with its keys and every built-in plugin with its
/// parameters, and the help documents the schema.
#[test]
fn list_json_describes_every_kind_and_plugin() {
    let (ok, stdout, stderr) = fairpipe(&["list", "--format", "json"]);
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let kinds: Vec<&str> = v["stages"].as_array().unwrap().iter().map(|k| k["kind"].as_str().unwrap()).collect();
    let expected: Vec<&str> = fairpipe_core::run::registry::STAGE_KINDS.iter().map(|k| k.name).collect();
    assert_eq!(kinds, expected);
    let estimate = v["stages"].as_array().unwrap().iter().find(|k| k["kind"] == "estimate").unwrap();
    assert_eq!(estimate["output"], "estimate");
    assert!(estimate["inputs"].as_array().unwrap().iter().any(|i| i["role"] == "model" && i["required"] == true), "{estimate}");
    assert!(estimate["params"].as_array().unwrap().iter().any(|p| p["name"] == "trials"), "{estimate}");
    let plugins = v["plugins"].as_array().unwrap();
    for (name, _) in fairpipe::BUILTINS {
        let p = plugins.iter().find(|p| p["name"] == *name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(p["source"], "built-in");
        assert_eq!(p["status"], "ok");
        assert_eq!(p["abi"][0], fairpipe_ffi::ABI_MAJOR);
    }
    let maft = plugins.iter().find(|p| p["name"] == "maft").unwrap();
    assert_eq!(maft["kind"], "generator");
    assert_eq!(maft["needs_scores"], true, "maft follows the probability's gradient");
    let grft = plugins.iter().find(|p| p["name"] == "grft").unwrap();
    assert_eq!(grft["needs_scores"], false, "grft runs on labels only");
    assert!(!maft["params"].as_array().unwrap().is_empty());

    for command in ["list", "validate"] {
        let (ok, help, _) = fairpipe(&[command, "--help"]);
        assert!(ok);
        assert!(help.contains("--format json") && help.contains("\"stages\""), "{command} --help lacks the schema:\n{help}");
    }
}

/// The ONNX Runtime hint (printed when a model needs the runtime and it is not found) names the
/// `load_model` stage's `onnxruntime` key: validate accepts it there, and refuses it in
/// `[pipeline]`.
#[test]
fn the_onnx_runtime_key_of_the_hint_validates() {
    let advice = fairpipe_core::models::onnx::runtime::install_advice();
    assert!(advice.contains("load_model stage's key `onnxruntime = \"PATH\"`"), "{advice}");
    let dir = tempfile::tempdir().unwrap();
    let library = write(dir.path(), "libonnxruntime.so", "");
    let stage = |extra: &str| {
        format!(
            "{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n{extra}",
            census_data_stage(),
            bundled("models/census.onnx")
        )
    };
    let good = write(dir.path(), "good.toml", &stage(&format!("onnxruntime = \"{}\"\n", library.display())));
    let (ok, stdout, stderr) = fairpipe(&["validate", good.to_str().unwrap()]);
    assert!(ok, "{stdout}{stderr}");
    let bad = write(dir.path(), "bad.toml", &format!("[pipeline]\nonnxruntime = \"{}\"\n\n{}", library.display(), stage("")));
    let (ok, _, stderr) = fairpipe(&["validate", bad.to_str().unwrap()]);
    assert!(!ok && stderr.contains("onnxruntime"), "{stderr}");
}

/// On a terminal every long stage shows a bar with its position, total and time left (MLP epochs,
/// estimate trials, rows checked, a search's budget, cases verified, a sweep's combinations); on a
/// pipe nothing is drawn. The terminal is `script`'s (util-linux).
#[test]
fn progress_bars_on_a_terminal_and_nothing_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[pipeline]\nseed = 1\n\n{}\n[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"mlp\"\nepochs = 3\n\n\
         [stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 50\nsamples = 200\n\n\
         [stages.check]\nkind = \"check\"\nmodel = \"model\"\n\n\
         [stages.search]\nkind = \"generate\"\nmodel = \"model\"\nplugin = \"aequitas\"\nrandom_seeds = 50\nmax_queries = 20000\n\n\
         [stages.verified]\nkind = \"verify\"\ncases = \"search\"\n",
        census_data_stage()
    );
    let pipeline = write(dir.path(), "p.toml", &text);
    let sweep = write(dir.path(), "s.toml", &format!("{text}\n[matrix]\npipeline.seed = [1, 2]\n"));
    let bin = env!("CARGO_BIN_EXE_fairpipe");
    let on_terminal = |file: &std::path::Path, out: &str| -> String {
        let command = format!("{bin} run {} --out {}", file.display(), dir.path().join(out).display());
        let o = std::process::Command::new("script")
            .args(["-qfec", &command, "/dev/null"])
            .env("COLUMNS", "160")
            .output()
            .expect("`script` (util-linux) runs the command on a terminal; install util-linux");
        let shown = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{shown}{}", String::from_utf8_lossy(&o.stderr));
        shown
    };
    let shown = on_terminal(&pipeline, "out");
    for bar in ["/3 epochs", "/50 trials", "/9,769 rows checked", "/20,000 model rows of max_queries", "cases checked"] {
        assert!(shown.contains(bar), "no {bar:?} bar on the terminal:\n{shown}");
    }
    assert!(shown.contains("ETA"), "{shown}");
    assert!(on_terminal(&sweep, "sweep").contains("/2 combinations"));

    // On a pipe: standard error is empty (no bar, no spinner).
    let (ok, _, stderr) = fairpipe(&["run", pipeline.to_str().unwrap(), "--out", dir.path().join("piped").to_str().unwrap()]);
    assert!(ok);
    // Warnings (the census data's proxy of gender, say) are the run's; nothing else is written.
    assert!(stderr.lines().all(|l| l.starts_with("warning: ")), "something was drawn on a pipe:\n{stderr}");
}

/// The stage table `run` prints names, under the model stage, the executor that ran the model and
/// the class taken as favourable (the census model: a dense network, ">50K" read from its column 1).
#[test]
fn the_terminal_names_the_executor_and_the_favourable_class() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[pipeline]\nseed = 1\n\n{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n",
        census_data_stage(),
        bundled("models/census.onnx")
    );
    let pipeline = write(dir.path(), "p.toml", &text);
    let out = dir.path().join("out");
    let (ok, stdout, stderr) = fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let model = &summary["stages"]["model"];
    let executor = model["executor"].as_str().unwrap();
    let read = model["output_read"].as_str().unwrap();
    let line = stdout.lines().find(|l| l.contains("runs on: ")).unwrap_or_else(|| panic!("no executor line in\n{stdout}"));
    assert!(line.contains(&format!("runs on: {executor}; favourable: \">50K\", read as {read}")), "{line}");
}
