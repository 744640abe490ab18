//! Models behind MLflow's scoring server (`protocol = "mlflow"`): a real
//! `mlflow models serve` (mlflow-skinny, `--env-manager local`) serves the scikit-learn model of
//! `tests/fixtures/remote/census-lr/` saved as an MLflow model by `make_census_mlflow.py`, and the
//! audit over HTTP equals the audit of the same parameters in-process. The labels-only variant
//! (MLflow's default pyfunc `predict`) is read as labels.
//!
//! MLflow is found through `FAIRPIPE_MLFLOW` (the `mlflow` executable of a venv that also holds
//! uvicorn) or on PATH; without it the tests fail naming the install, never pass silently.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use crate::remote_models::{audit_figures, fixtures, free_port, in_process, pipeline, run, Server, AUDIT};

const INSTALL: &str = "python3 -m venv ~/.cache/fairpipe/mlflow-venv && ~/.cache/fairpipe/mlflow-venv/bin/pip install mlflow-skinny==3.17.2 pandas==3.1.1 scikit-learn==1.9.1, then FAIRPIPE_MLFLOW=~/.cache/fairpipe/mlflow-venv/bin/mlflow (.ci/run does this)";

fn mlflow_executable() -> PathBuf {
    if let Some(path) = std::env::var_os("FAIRPIPE_MLFLOW") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("mlflow")).find(|p| p.is_file()));
    found.unwrap_or_else(|| panic!("MLflow is not installed (neither FAIRPIPE_MLFLOW nor `mlflow` on PATH): {INSTALL}"))
}

/// `mlflow models serve` of `census-lr-mlflow/VARIANT` on a free port of 127.0.0.1, its venv's
/// bin first on PATH (it runs `uvicorn` from there).
fn start_mlflow(variant: &str) -> Server {
    let executable = mlflow_executable();
    let bin = executable.parent().expect("the mlflow executable's folder").to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("mlflow.log");
    let out = std::fs::File::create(&log).unwrap();
    let path =
        std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    let child = Command::new(&executable)
        .args(["models", "serve", "--env-manager", "local", "--host", "127.0.0.1", "--port", &port.to_string(), "-m"])
        .arg(fixtures().join("census-lr-mlflow").join(variant))
        .env("PATH", path)
        .env("MLFLOW_TRACKING_URI", dir.path().join("mlruns"))
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}; {INSTALL}", executable.display()));
    Server { child, port, metrics_port: 0, grpc_port: 0, log, _dir: dir }.wait_for("/ping", Duration::from_secs(120))
}

fn keys(server: &Server, extra: &str) -> String {
    format!("url = \"http://127.0.0.1:{}\"\nprotocol = \"mlflow\"\n{extra}", server.port)
}

#[test]
fn a_model_served_by_mlflow_is_audited_as_the_same_model_in_process() {
    let server = start_mlflow("proba");
    let (remote, remote_p) = run(&pipeline(&keys(&server, "batch_size = 512\nconcurrency = 2"), AUDIT));
    let (local, local_p) = run(&pipeline(&in_process(), AUDIT));
    // scikit-learn's predict_proba behind MLflow's pyfunc, and fairpipe's logistic regression on
    // the same parameters.
    assert_eq!(remote_p.len(), 9769, "the bundled census test split");
    compare::assert_close("p_mlflow against p_in_process", &remote_p, &local_p, 1e-9);
    assert_eq!(audit_figures(&remote), audit_figures(&local), "same seed, same model: same audit");
    let model = &remote["stages"]["model"];
    assert_eq!(model["output"], "predictions", "{model}");
    assert_eq!(model["labels_only"], false, "{model}");
    assert_eq!(model["input_contract"], "12 named inputs (raw columns)", "{model}");
    assert_eq!(model["remote_inputs"], "the data's 12 columns by name (dataframe_split)", "{model}");
    assert_eq!(model["executor"], format!("mlflow http://127.0.0.1:{}/invocations", server.port), "{model}");
    let usage = &model["remote"];
    assert!(usage["cache_hits"].as_u64().unwrap() >= 9769, "predict's rows come from the cache: {usage}");
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("POST /invocations HTTP/1.1\" 200"), "the server scored the rows:\n{log}");
}

#[test]
fn a_labels_only_mlflow_model_is_read_as_labels() {
    // MLflow's default pyfunc predict of a scikit-learn classifier answers labels: each row's
    // probability is then 1 for the favourable label, 0 otherwise, and scikit-learn's label is the
    // class whose probability is above one half.
    let server = start_mlflow("labels");
    let (remote, remote_p) = run(&pipeline(&keys(&server, ""), ""));
    let (_, local_p) = run(&pipeline(&in_process(), ""));
    let model = &remote["stages"]["model"];
    assert_eq!(model["labels_only"], true, "{model}");
    assert_eq!(model["output_read"], "labels only (favourable 1)", "{model}");
    let disagree = remote_p.iter().zip(&local_p).filter(|(r, l)| **r != if **l > 0.5 { 1.0 } else { 0.0 }).count();
    assert_eq!(disagree, 0, "labels equal to the thresholded probabilities");
}

#[test]
fn keys_that_mlflow_does_not_take_are_refused_at_validate_with_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", free_port());
    let text =
        pipeline(&format!("url = \"{url}\"\nprotocol = \"mlflow\"\nmodel = \"m\"\noutputs = [\"predict_proba\"]\nmax_queries = 0"), "");
    let file = write(dir.path(), "p.toml", &text);
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok);
    let line_of = |key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    for (key, says) in [("model", "`model` is for protocol = \"v2\""), ("outputs", "pyfunc_predict_fn"), ("max_queries", "at least 1")] {
        let place = format!("p.toml:{}:", line_of(key));
        assert!(stderr.lines().any(|l| l.contains(&place) && l.contains(says)), "{key} at {place}: {stderr}");
    }
    // The server is looked for at /ping.
    assert!(stderr.contains(&format!("{url}/ping")) && stderr.contains("cannot connect"), "{stderr}");
    // A protocol without a server.
    let text = pipeline(&format!("{}\nprotocol = \"mlflow\"", in_process()), "");
    let file = write(dir.path(), "program.toml", &text);
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    let line = text.lines().position(|l| l.starts_with("protocol")).unwrap() + 1;
    assert!(!ok && stderr.contains(&format!("program.toml:{line}:")) && stderr.contains("give its `url`"), "{stderr}");
}
