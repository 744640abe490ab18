//! Retraining on a model with planted bias: the data's label depends on sex by construction, the
//! trained model inherits it, and retraining with the verified IDIs removes most of it without
//! costing accuracy; plus the census MLP end to end (the full audit pipeline).

use crate::common;

use common::*;

/// `n` rows drawn from a, b in 0..=49 and sex in {0, 1} (a fixed LCG); favourable when
/// a + b + 20·sex ≥ 50. With 600 rows the verified IDIs outnumber the training rows (the domain has
/// 5,000 points).
fn planted_csv(n: usize) -> String {
    let mut csv = String::from("a,b,sex,y,split\n");
    let mut state: u64 = 12345;
    let mut next = |n: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    for i in 0..n {
        let (a, b, sex) = (next(50), next(50), next(2));
        let y = u64::from(a + b + 20 * sex >= 50);
        csv += &format!("{a},{b},{sex},{y},{}\n", if i % 5 == 0 { "test" } else { "train" });
    }
    csv
}

fn pipeline(data: &std::path::Path, strategy: &str) -> String {
    format!(
        r#"[stages.data]
kind = "load"
path = "{}"
label = "y"
protected = ["sex"]
split_column = "split"

[stages.model]
kind = "train"
data = "data"
algorithm = "logistic"

[stages.search]
kind = "generate"
model = "model"
plugin = "aequitas"
params = {{ global_iterations = 1000, local_iterations = 1000 }}

[stages.verified]
kind = "verify"
cases = "search"

[stages.fairer]
kind = "retrain"
model = "model"
cases = "verified"
strategy = "{strategy}"
trials = 50
samples = 500
"#,
        data.display()
    )
}

#[test]
fn retraining_removes_most_of_a_planted_bias() {
    let dir = tempfile::tempdir().unwrap();
    let data = write(dir.path(), "planted.csv", &planted_csv(600));
    for strategy in ["pairs", "aequitas"] {
        let file = write(dir.path(), &format!("{strategy}.toml"), &pipeline(&data, strategy));
        let summary = run_pipeline(&file, &dir.path().join(strategy), &[]);
        let f = &summary["stages"]["fairer"];
        let (before, after) = (f["before"]["rate"].as_f64().unwrap(), f["after"]["rate"].as_f64().unwrap());
        // By construction every input with a + b in 30..=49 is discriminatory (about a third of the domain).
        assert!(before > 0.2, "{strategy}: the trained model should inherit the planted bias, rate {before}");
        assert!(after <= before, "{strategy}: retraining made it worse: {before} -> {after}");
        if strategy == "pairs" {
            assert!(after < 0.5 * before, "pairs retraining removed too little: {before} -> {after}");
        }
        let (acc_before, acc_after) = (f["before"]["accuracy_test"].as_f64().unwrap(), f["after"]["accuracy_test"].as_f64().unwrap());
        eprintln!("{strategy}: rate {before:.3} -> {after:.3}, test accuracy {acc_before:.3} -> {acc_after:.3}");
        // The output contract's fields (docs/output-contract.md).
        assert_eq!(f["rate_before"], f["before"]["rate"]);
        assert_eq!(f["accuracy_after"], f["after"]["accuracy_test"]);
        let (idis_before, idis_after) = (f["idis_before"].as_u64().unwrap(), f["idis_after"].as_u64().unwrap());
        assert!(idis_after < idis_before, "{strategy}: {idis_before} IDIs used, {idis_after} still discriminatory");
        // The retrained model is passed on: its accuracy is the stage's own figure.
        assert_eq!(f["accuracy_test"], f["after"]["accuracy_test"]);
    }
}

#[test]
fn a_loaded_model_cannot_be_retrained_and_says_why() {
    let text = std::fs::read_to_string(root().join("pipelines/census-maft.toml")).unwrap();
    let text = common::with_bundled_paths(&text).replace("global_num = 100, local_num = 1000", "global_num = 10, local_num = 10")
        + "\n[stages.fairer]\nkind = \"retrain\"\nmodel = \"model\"\ncases = \"gender_verified\"\n";
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", &text);
    let stderr = run_failing(&file, &dir.path().join("out"));
    assert!(stderr.contains("stage `fairer` (retrain) failed: retrain needs a model trained by a `train` stage"), "{stderr}");
    // The key to change, located in the pipeline file (the last stage's `model` line).
    let line = text.lines().count() - 1;
    assert!(stderr.contains(&format!("(pipeline: the key `model` is at {}:{line}:", file.display())), "{stderr}");
}

#[test]
fn testsgd_mitigation_shrinks_the_worst_group_score_within_the_accuracy_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    // TestSGD adds at most 10% of the training rows: 5,000 rows allow rounds of 50 … 400 samples.
    let data = write(dir.path(), "planted.csv", &planted_csv(5000));
    let retrain = |name: &str, select: &str| {
        format!("[stages.{name}]\nkind = \"retrain\"\nmodel = \"model\"\ngroups = \"groups\"\nstrategy = \"testsgd\"\naccuracy_tolerance = 0.2\n{select}\n")
    };
    let text = format!(
        "[stages.data]\nkind = \"load\"\npath = {:?}\nlabel = \"y\"\nprotected = [\"sex\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"logistic\"\n\n[stages.groups]\nkind = \"group_score\"\nmodel = \"model\"\n\n{}\n{}",
        data.display().to_string(),
        retrain("fairer", ""),
        retrain("fairer_relabel", "select = \"relabel\"")
    );
    let file = write(dir.path(), "p.toml", &text);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let scores = |stage: &str| {
        let f = &summary["stages"][stage];
        assert!(f["group"].as_str().unwrap().starts_with("sex = "), "{}", f["group"]);
        let drop = f["before"]["accuracy_test"].as_f64().unwrap() - f["after"]["accuracy_test"].as_f64().unwrap();
        assert!(drop <= 0.2 + 1e-12, "{stage}: accuracy dropped by {drop}, more than the tolerance");
        (f["before"]["group_score"].as_f64().unwrap(), f["after"]["group_score"].as_f64().unwrap())
    };
    // The paper's selection is the default: samples the original model already labels favourably.
    assert_eq!(summary["stages"]["fairer"]["select"], "opposite");
    assert_eq!(summary["stages"]["fairer_relabel"]["select"], "relabel");
    let ((before, paper), (_, relabel)) = (scores("fairer"), scores("fairer_relabel"));
    eprintln!("testsgd: group score {before:.3} -> {paper:.3} (paper's samples), {relabel:.3} (relabelled)");
    assert!(before > 0.2, "the planted bias shows as a group score: {before}");
    // Measured: 0.31 -> 0.30 with the paper's samples, which a linear model already puts on the
    // favourable side and so barely moves for; 0.31 -> 0.18 relabelled. The planted label itself
    // depends on sex and at most 10% of the training rows are added, so part of the bias stays.
    assert!(relabel < 0.75 * before, "relabelled samples removed too little: {before} -> {relabel}");
    assert!(relabel < paper, "relabelled samples push harder than the paper's: {relabel} against {paper}");
}

/// The issue's target on census with the MLP (the README's first command): each retraining lowers
/// its measure while test accuracy drops by at most one point, and MAFT finds fewer IDIs from the
/// same fresh seeds after `pairs` retraining.
#[test]
fn census_full_audit_retraining_lowers_discrimination_within_one_accuracy_point() {
    let run = bundled_run(&root().join("pipelines/census-full-audit.toml"));
    let stages = &run.summary["stages"];
    for (stage, strategy) in [("fairer", "aequitas"), ("fairer_pairs", "pairs"), ("fairer_groups", "testsgd")] {
        let f = &stages[stage];
        assert_eq!(f["strategy"], strategy);
        let (before, after) = (f["rate_before"].as_f64().unwrap(), f["rate_after"].as_f64().unwrap());
        assert!(after < before, "{strategy}: {} {before} -> {after}", f["measure"]);
        let drop = f["accuracy_before"].as_f64().unwrap() - f["accuracy_after"].as_f64().unwrap();
        assert!(drop <= 0.01, "{strategy}: test accuracy dropped by {drop}");
    }
    // The retrained model's own estimate stage agrees that pairs retraining helped.
    assert!(stages["estimate_after_pairs"]["rate"].as_f64().unwrap() < stages["estimate"]["rate"].as_f64().unwrap());
    let (fresh, after) = (
        stages["maft_fresh_verified"]["discriminatory"].as_u64().unwrap(),
        stages["maft_after_verified"]["discriminatory"].as_u64().unwrap(),
    );
    assert!(after < fresh / 2, "MAFT from the same fresh seeds: {fresh} IDIs before, {after} after pairs retraining");
    // Aequitas re-run from the same fresh seeds finds fewer IDIs in both IDI-retrained models, and
    // the group scoring ranks lower worst groups after TestSGD mitigation.
    let idis = |stage: &str| stages[stage]["discriminatory"].as_u64().unwrap();
    assert!(idis("aequitas_after_verified") < idis("aequitas_fresh_verified"));
    assert!(idis("aequitas_after_pairs_verified") < idis("aequitas_after_verified"));
    assert!(stages["groups_after"]["worst_score"].as_f64().unwrap() < stages["groups"]["worst_score"].as_f64().unwrap());
    // The report puts every model beside the others, measured the same way.
    let html = std::fs::read_to_string(run.out.path().join("report.html")).unwrap();
    let section = &html[html.find("Each model, measured the same way").expect("the comparison section")..];
    for model in ["model", "fairer", "fairer_groups", "fairer_pairs"] {
        assert!(section.contains(&format!("<tr><td>{model}</td>")), "{model} missing from the comparison");
    }
}
