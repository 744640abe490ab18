//! The shared cache of scored rows: a search finds exactly the same cases with
//! and without it, and the per-stage figures (`queries_asked`, `rows_scored`, `cache_hits`) are
//! what a model that counts its own rows sees.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::common;

use fairpipe_core::domain::{Attribute, Domain};
use fairpipe_core::error::ModelError;
use fairpipe_core::oracle::{Model, Oracle};
use fairpipe_core::plugin::RunSpec;
use fairpipe_ffi::FfiBudget;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::json;

/// Favourable when a + b + c + 4·sex ≥ 20 (a smooth score thresholded at 0.5); counts every row
/// it is asked to score.
struct Counted {
    rows: AtomicU64,
}

impl Model for Counted {
    fn n_features(&self) -> usize {
        4
    }
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        self.rows.fetch_add(out.len() as u64, Ordering::Relaxed);
        for (o, r) in out.iter_mut().zip(x.chunks_exact(4)) {
            *o = 1.0 / (1.0 + (-(r[0] + r[1] + r[2] + 4.0 * r[3] - 19.5)).exp());
        }
        Ok(())
    }
    fn describe(&self) -> String {
        "counted".into()
    }
}

fn domain() -> Domain {
    let attr = |name: &str, upper: f64, protected: bool| Attribute::integer(name, 0.0, upper, protected);
    Domain { attributes: vec![attr("a", 10.0, false), attr("b", 10.0, false), attr("c", 10.0, false), attr("sex", 1.0, true)] }
}

#[test]
fn every_plugin_finds_the_same_cases_with_and_without_the_cache_and_the_counts_are_the_models() {
    let domain = domain();
    let seeds = domain.sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(5), 100);
    let plugins = [
        ("random", json!({ "samples": 2000 })),
        ("aequitas", json!({ "strategy": "fully_directed", "global_iterations": 200, "local_iterations": 200 })),
        ("maft", json!({ "global_num": 100, "local_num": 200 })),
        ("eidig", json!({ "global_num": 100, "local_num": 200 })),
        ("sg", json!({ "sample_limit": 100, "lime_samples": 300 })),
    ];
    for (name, params) in plugins {
        let spec = RunSpec { params: &params, seeds: &seeds, rng_seed: 11, budget: FfiBudget::default(), gamma: None };
        let plugin = common::plugin(name);
        let run = |cached: bool| {
            let model = Arc::new(Counted { rows: AtomicU64::new(0) });
            let oracle = Oracle::with_cache_rows(model.clone(), 100_000);
            let oracle = if cached { oracle } else { oracle.without_cache() };
            let out = plugin.generate(&oracle, &domain, &spec, &indicatif::ProgressBar::hidden()).unwrap();
            // Gradients (EIDIG's, by finite differences of this model) bypass the cache.
            let gradient_rows = out.gradient.map_or(0, |g| g.model_rows);
            (out, model.rows.load(Ordering::Relaxed) - gradient_rows, oracle.rows() - gradient_rows)
        };
        let (with, model_rows_with, oracle_rows_with) = run(true);
        let (without, model_rows_without, _) = run(false);
        let cases = |o: &fairpipe_core::plugin::GenerateOutput| {
            o.cases.iter().map(|c| (c.instance.clone(), c.counterpart.clone(), c.origin)).collect::<Vec<_>>()
        };
        assert!(!with.cases.is_empty(), "{name} found nothing");
        assert_eq!(cases(&with), cases(&without), "{name}: the cache changed the cases");
        assert_eq!(with.generated, without.generated, "{name}");
        // The plugin asks for the same rows either way; without the cache all of them reach the model.
        assert_eq!(with.tally.asked, without.tally.asked, "{name}");
        assert_eq!((without.tally.scored, without.tally.hits), (without.tally.asked, 0), "{name}");
        assert_eq!(without.tally.scored, model_rows_without, "{name}");
        // With it, the rows scored are exactly the rows the model saw, and the rest were hits.
        assert_eq!(with.tally.scored, model_rows_with, "{name}");
        assert_eq!(with.tally.scored, oracle_rows_with, "{name}");
        assert_eq!(with.tally.scored + with.tally.hits, with.tally.asked, "{name}");
        // On a domain of 1,331 × 2 points every plugin repeats itself: the model sees each row once.
        assert!(with.tally.hits > 0, "{name}: no hit in {:?}", with.tally);
        assert!(with.tally.scored <= 11 * 11 * 11 * 2 + 11 * 11 * 11 * 2 * 4, "{name}: {:?}", with.tally);
    }
}

#[test]
fn a_second_search_on_the_same_model_is_answered_from_the_first_ones_rows() {
    let domain = domain();
    let seeds = domain.sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(5), 50);
    let params = json!({ "strategy": "fully_directed", "global_iterations": 100, "local_iterations": 100 });
    let spec = RunSpec { params: &params, seeds: &seeds, rng_seed: 3, budget: FfiBudget::default(), gamma: None };
    let model = Arc::new(Counted { rows: AtomicU64::new(0) });
    let oracle = Oracle::with_cache_rows(model.clone(), 100_000);
    let plugin = common::plugin("aequitas");
    let first = plugin.generate(&oracle, &domain, &spec, &indicatif::ProgressBar::hidden()).unwrap();
    let second = plugin.generate(&oracle, &domain, &spec, &indicatif::ProgressBar::hidden()).unwrap();
    let cases = |o: &fairpipe_core::plugin::GenerateOutput| o.cases.iter().map(|c| (c.instance.clone(), c.origin)).collect::<Vec<_>>();
    assert!(!first.cases.is_empty());
    assert_eq!(cases(&first), cases(&second));
    assert_eq!(second.tally.scored, 0, "the same search again needs no model row: {:?}", second.tally);
    assert_eq!(second.tally.hits, second.tally.asked);
    assert_eq!(model.rows.load(Ordering::Relaxed), first.tally.scored);
}

/// Aequitas fully directed (the paper's 1000 × 1000) on the reference German Credit model, age
/// protected: the benchmark where its walks repeat themselves most.
/// `cache` is the key's TOML value.
fn credit_pipeline(dir: &std::path::Path, cache: &str) -> std::path::PathBuf {
    let text = format!(
        "[pipeline]\nname = \"cache\"\nseed = 7\n\n[stages.data]\nkind = \"load\"\npath = \"{}\"\nlabel = \"label_CREDITRATING_eq_1\"\nprotected = [\"AgeInYears\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\n\n[stages.search]\nkind = \"generate\"\nmodel = \"model\"\nseeds = \"seeds\"\nplugin = \"aequitas\"\ncache = {cache}\nparams = {{ strategy = \"fully_directed\" }}\n\n[stages.verified]\nkind = \"verify\"\ncases = \"search\"\n",
        common::bundled("data/credit.csv"),
        common::bundled("models/credit.onnx"),
    );
    common::write(dir, &format!("cache-{}.toml", cache.trim_matches('"')), &text)
}

#[test]
fn credit_aequitas_finds_the_same_idis_with_five_times_fewer_model_rows() {
    let dir = tempfile::tempdir().unwrap();
    let with = common::run_pipeline(&credit_pipeline(dir.path(), "true"), &dir.path().join("with"), &[]);
    let without = common::run_pipeline(&credit_pipeline(dir.path(), "false"), &dir.path().join("without"), &[]);
    let (s_with, s_without) = (&with["stages"]["search"], &without["stages"]["search"]);
    for key in ["emitted", "generated", "queries_asked"] {
        assert_eq!(s_with[key], s_without[key], "{key}");
    }
    for key in ["discriminatory", "discriminatory_full", "confirmed", "rejected"] {
        assert_eq!(with["stages"]["verified"][key], without["stages"]["verified"][key], "{key}");
    }
    assert!(with["stages"]["verified"]["discriminatory_full"].as_u64().unwrap() > 1000, "{}", with["stages"]["verified"]);
    // More than 1,000 IDIs: the time to the 1,000th is within the search.
    let to_1000 = with["stages"]["verified"]["time_to_1000_idis_s"].as_f64().expect("time_to_1000_idis_s");
    assert!(to_1000 > 0.0 && to_1000 <= s_with["run_elapsed_s"].as_f64().unwrap(), "{to_1000} s");
    let read = |out: &str| std::fs::read(dir.path().join(out).join("verified.csv")).unwrap();
    assert_eq!(read("with"), read("without"), "the verified cases differ");
    let n = |s: &serde_json::Value, k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} missing in {s}"));
    assert_eq!(n(s_without, "rows_scored"), n(s_without, "queries_asked"));
    assert_eq!(n(s_without, "cache_hits"), 0);
    assert_eq!(n(s_with, "rows_scored") + n(s_with, "cache_hits"), n(s_with, "queries_asked"));
    assert_eq!(n(s_with, "rows_scored"), n(s_with, "model_queries"));
    let (asked, scored) = (n(s_with, "queries_asked"), n(s_with, "rows_scored"));
    assert!(scored * 5 <= asked, "only {asked} / {scored} = {:.1}× fewer model rows", asked as f64 / scored as f64);
}

/// `cache = "auto"` (the default) on the German Credit network: Aequitas' walks repeat enough
/// of their rows for the cache to pay, so it stays on (the run says why), finds the same cases as
/// with `cache = true`, and takes the same decisions when run again.
#[test]
fn auto_keeps_the_cache_where_repeats_pay_and_finds_the_same_cases() {
    let dir = tempfile::tempdir().unwrap();
    let auto = common::run_pipeline(&credit_pipeline(dir.path(), "\"auto\""), &dir.path().join("auto"), &[]);
    let with = common::run_pipeline(&credit_pipeline(dir.path(), "true"), &dir.path().join("with"), &[]);
    let (s_auto, s_with) = (&auto["stages"]["search"], &with["stages"]["search"]);
    let why = s_auto["cache_choice"].as_str().unwrap();
    assert!(why.starts_with("auto: the model takes 3355 multiply-adds a row"), "{why}");
    assert_eq!(s_with["cache_choice"], "on (cache = true)");
    assert_eq!(s_auto["cache"], true);
    let n = |s: &serde_json::Value, k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} missing in {s}"));
    assert_eq!(n(s_auto, "queries_asked"), n(s_with, "queries_asked"));
    assert_eq!(n(s_auto, "rows_scored") + n(s_auto, "cache_hits"), n(s_auto, "queries_asked"));
    assert!(n(s_auto, "rows_scored") * 4 < n(s_auto, "queries_asked"), "{s_auto}");
    let read = |out: &str| std::fs::read(dir.path().join(out).join("verified.csv")).unwrap();
    assert_eq!(read("auto"), read("with"), "the verified cases differ");
    let again = common::run_pipeline(&credit_pipeline(dir.path(), "\"auto\""), &dir.path().join("again"), &[]);
    assert_eq!(again["stages"]["search"]["cache_choice"], s_auto["cache_choice"]);
    assert_eq!(again["stages"]["search"]["rows_scored"], s_auto["rows_scored"]);
}

/// `cache = "auto"` on SG over the census network: its explanation batches repeat too few rows
/// (well under the 88% the census network needs) for the look-ups to pay, so after the first
/// window the rows go to the model directly, and the run says so.
#[test]
fn auto_steps_the_cache_aside_for_sg_on_the_census_network() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[pipeline]\nname = \"auto\"\nseed = 42\n\n[stages.data]\nkind = \"load\"\npath = \"{}\"\ncodes = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 4\nseeds = 300\n\n[stages.sg]\nkind = \"generate\"\nmodel = \"model\"\nseeds = \"seeds\"\nplugin = \"sg\"\nparams = {{ sample_limit = 300 }}\n",
        common::bundled("data/census.csv"),
        common::bundled("data/census.codes.toml"),
        common::bundled("models/census.onnx"),
    );
    let summary = common::run_pipeline(&common::write(dir.path(), "sg.toml", &text), &dir.path().join("out"), &[]);
    let sg = &summary["stages"]["sg"];
    let why = sg["cache_choice"].as_str().unwrap();
    assert!(why.starts_with("auto: the model takes 1645 multiply-adds a row in this process, the cache pays above 88% repeats"), "{why}");
    assert!(why.contains("on from the start, off from row 2"), "{why}");
    let n = |k: &str| sg[k].as_u64().unwrap_or_else(|| panic!("{k} missing in {sg}"));
    assert!(n("queries_asked") > 1_000_000, "{sg}");
    // Only the first window or two went through the cache.
    assert!(n("cache_hits") < 200_000 && n("rows_scored") + n("cache_hits") == n("queries_asked"), "{sg}");
}
