//! The deployment examples in `deploy/` and `scripts/simulate-indexed-job.sh`: the manifests parse
//! as YAML and agree with themselves (shard count, volume, parts merged), and their very commands —
//! taken from the files, with the image's paths mapped to a temporary folder — run here and merge
//! into the unsharded result.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_norway::Value;

use crate::common;

/// A sweep of 3 combinations over the census model (estimate 10 × 100 each).
fn sweep_pipeline(dir: &Path) -> PathBuf {
    let text = format!(
        "[pipeline]\nname = \"deploy-test\"\nseed = 5\n\n{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 10\nsamples = 100\n\n[matrix]\n\"estimate.protected\" = [[\"gender\"], [\"race\"], [\"age\"]]\n",
        common::census_data_stage(),
        common::bundled("models/census.onnx")
    );
    std::fs::create_dir_all(dir).unwrap();
    common::write(dir, "sweep.toml", &text)
}

/// The YAML documents of `rel` under deploy/.
fn yaml_docs(rel: &str) -> Vec<Value> {
    let path = common::root().join("deploy").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_norway::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{}: not valid YAML: {e}", path.display())))
        .collect()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("expected a string, found {v:?}"))
}

/// Run shell command `cmd` with `fairpipe` on PATH (this build's binary) in `dir`, with `env`.
fn sh(cmd: &str, dir: &Path, env: &[(&str, String)]) -> std::process::Output {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_fairpipe"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let mut c = Command::new("/bin/sh");
    c.args(["-c", cmd]).current_dir(dir).env("PATH", path);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "`{cmd}` failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// The unsharded sweep's summary.json, timings aside.
fn unsharded(pipeline: &Path, out: &Path) -> serde_json::Value {
    let (ok, stdout, stderr) = common::fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(ok, "{stdout}{stderr}");
    read_summary(out)
}

fn read_summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn the_kubernetes_indexed_job_and_its_merge_agree_and_their_commands_merge_to_the_unsharded_sweep() {
    let docs = yaml_docs("kubernetes/indexed-job.yaml");
    assert_eq!(docs.len(), 2);
    let (pvc, job) = (&docs[0], &docs[1]);
    assert_eq!(s(&pvc["kind"]), "PersistentVolumeClaim");
    assert_eq!(s(&job["kind"]), "Job");
    assert_eq!(s(&job["apiVersion"]), "batch/v1");
    let spec = &job["spec"];
    assert_eq!(s(&spec["completionMode"]), "Indexed");
    let completions = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(completions));
    let pod = &spec["template"]["spec"];
    assert_eq!(s(&pod["restartPolicy"]), "Never");
    let container = &pod["containers"][0];
    let env = container["env"].as_sequence().unwrap();
    let count = env.iter().find(|e| s(&e["name"]) == "FAIRPIPE_SHARD_COUNT").expect("the shard count is set");
    assert_eq!(s(&count["value"]), completions.to_string(), "FAIRPIPE_SHARD_COUNT equals completions");
    assert_eq!(s(&pod["volumes"][0]["persistentVolumeClaim"]["claimName"]), s(&pvc["metadata"]["name"]));
    assert_eq!(s(&container["volumeMounts"][0]["mountPath"]), "/parts");
    let shard_cmd = s(&container["args"][0]).to_string();
    assert!(shard_cmd.contains("--shard env") && shard_cmd.contains("--out /parts/part-$JOB_COMPLETION_INDEX"), "{shard_cmd}");

    let merge_docs = yaml_docs("kubernetes/merge-job.yaml");
    let merge = &merge_docs[0];
    assert_eq!(s(&merge["kind"]), "Job");
    let merge_pod = &merge["spec"]["template"]["spec"];
    assert_eq!(merge_pod["volumes"][0]["persistentVolumeClaim"]["claimName"], pod["volumes"][0]["persistentVolumeClaim"]["claimName"]);
    let merge_cmd = s(&merge_pod["containers"][0]["args"][0]).to_string();
    let parts: Vec<String> = (0..completions).map(|k| format!("/parts/part-{k}")).collect();
    assert!(merge_cmd.contains(&format!("fairpipe merge {} --out /parts/merged", parts.join(" "))), "{merge_cmd}");

    // Run the pods' commands here: /pipelines and /parts mapped to a temporary folder.
    let dir = tempfile::tempdir().unwrap();
    let pipelines = dir.path().join("pipelines");
    let pipeline = sweep_pipeline(&pipelines);
    let volume = dir.path().join("parts");
    std::fs::create_dir_all(&volume).unwrap();
    let map = |cmd: &str| cmd.replace("/pipelines/", &format!("{}/", pipelines.display())).replace("/parts", &volume.display().to_string());
    for k in 0..completions {
        let env = env
            .iter()
            .map(|e| (s(&e["name"]), s(&e["value"]).to_string()))
            .chain([("JOB_COMPLETION_INDEX", k.to_string())])
            .collect::<Vec<_>>();
        sh(&map(&shard_cmd), dir.path(), &env);
    }
    sh(&map(&merge_cmd), dir.path(), &[]);
    let merged = read_summary(&volume.join("merged"));
    let reference = unsharded(&pipeline, &dir.path().join("unsharded"));
    assert_eq!(merged["combinations"], reference["combinations"]);
    assert_eq!(merged["matrix"]["combinations"], 3);
}

#[test]
fn the_github_actions_matrix_workflow_runs_every_shard_and_merges_them() {
    let docs = yaml_docs("github-actions/fairpipe-sweep.yml");
    let wf = &docs[0];
    let shard = &wf["jobs"]["shard"];
    let shards: Vec<u64> = shard["strategy"]["matrix"]["shard"].as_sequence().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let n = shards.len();
    assert_eq!(shards, (0..n as u64).collect::<Vec<_>>(), "shards are 0..N");
    let steps = shard["steps"].as_sequence().unwrap();
    let run = steps.iter().filter_map(|st| st["run"].as_str()).find(|r| r.contains("--shard")).expect("a step runs the shard");
    assert!(run.contains(&format!("--shard ${{{{ matrix.shard }}}}/{n}")), "{run}");
    let upload = steps.iter().find(|st| st["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact"))).unwrap();
    assert_eq!(s(&upload["with"]["name"]), "part-${{ matrix.shard }}");
    let merge = &wf["jobs"]["merge"];
    assert_eq!(s(&merge["needs"]), "shard");
    let merge_run =
        merge["steps"].as_sequence().unwrap().iter().filter_map(|st| st["run"].as_str()).find(|r| r.contains("fairpipe merge")).unwrap();
    let parts: Vec<String> = (0..n).map(|k| format!("part-{k}")).collect();
    assert!(merge_run.contains(&format!("fairpipe merge {} --out merged", parts.join(" "))), "{merge_run}");

    // The steps' commands, one runner after another, in a checkout holding pipelines/sweep.toml.
    let dir = tempfile::tempdir().unwrap();
    let pipeline = sweep_pipeline(&dir.path().join("pipelines"));
    for k in &shards {
        sh(&run.replace("${{ matrix.shard }}", &k.to_string()), dir.path(), &[]);
    }
    sh(merge_run, dir.path(), &[]);
    let reference = unsharded(&pipeline, &dir.path().join("unsharded"));
    assert_eq!(read_summary(&dir.path().join("merged"))["combinations"], reference["combinations"]);
}

#[test]
fn the_indexed_job_simulation_runs_n_processes_and_merges_them() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = sweep_pipeline(&dir.path().join("pipelines"));
    let script = common::root().join("scripts/simulate-indexed-job.sh");
    let out = dir.path().join("sim");
    let status = Command::new(&script)
        .args([pipeline.to_str().unwrap(), "2", out.to_str().unwrap()])
        .env("FAIRPIPE", env!("CARGO_BIN_EXE_fairpipe"))
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let manifests: Vec<serde_json::Value> = (0..2)
        .map(|k| serde_json::from_str(&std::fs::read_to_string(out.join(format!("parts/part-{k}/manifest.json"))).unwrap()).unwrap())
        .collect();
    assert_eq!(manifests[0]["units_here"].as_array().unwrap().len() + manifests[1]["units_here"].as_array().unwrap().len(), 3);
    assert_eq!(manifests[1]["shard"]["index"], 1);
    let reference = unsharded(&pipeline, &dir.path().join("unsharded"));
    assert_eq!(read_summary(&out.join("merged"))["combinations"], reference["combinations"]);
    // A bad count is refused before anything runs.
    let bad = Command::new(&script).args([pipeline.to_str().unwrap(), "0", out.to_str().unwrap()]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("N must be a whole number of at least 1"));
}
