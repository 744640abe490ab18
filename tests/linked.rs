//! Plausible counterfactuals: the load stage's warning of columns strongly associated with a
//! protected attribute (checked against contingency counts made here from the file's text), and
//! the `linked` key that changes such a column with its attribute.

use std::collections::HashMap;
use std::path::Path;

use crate::common::{bundled, run_pipeline, write};

/// Adult's rows (header stripped, cells trimmed) with no missing cell, as `missing = "drop"` keeps
/// them, and the header.
fn adult_rows() -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(bundled("data/adult.data.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(|c| c.trim().to_string()).collect();
    let rows = lines
        .map(|l| l.split(',').map(|c| c.trim().to_string()).collect::<Vec<_>>())
        .filter(|r| r.len() == header.len() && !r.iter().any(|c| c.is_empty() || c == "?" || c == "NA"))
        .collect();
    (header, rows)
}

/// Cramér's V from the text cells of two columns: the χ² of their contingency table.
fn cramers_v_of_text(a: &[&str], b: &[&str]) -> f64 {
    let n = a.len() as f64;
    let (mut ca, mut cb, mut cab) = (HashMap::new(), HashMap::new(), HashMap::new());
    for (x, y) in a.iter().zip(b) {
        *ca.entry(*x).or_insert(0.0) += 1.0;
        *cb.entry(*y).or_insert(0.0) += 1.0;
        *cab.entry((*x, *y)).or_insert(0.0) += 1.0;
    }
    let mut chi2 = 0.0;
    for (x, nx) in &ca {
        for (y, ny) in &cb {
            let e = nx * ny / n;
            let o = cab.get(&(*x, *y)).copied().unwrap_or(0.0);
            chi2 += (o - e) * (o - e) / e;
        }
    }
    (chi2 / n / (ca.len().min(cb.len()) as f64 - 1.0)).sqrt()
}

/// Adult with one more column, `planted`, independent of `sex` by construction: within each sex
/// the rows take levels a, b, c, d in turn.
fn adult_with_independent_column(dir: &Path) -> String {
    let (header, rows) = adult_rows();
    let sex = header.iter().position(|c| c == "sex").unwrap();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut text = format!("{},planted\n", header.join(","));
    for r in &rows {
        let k = seen.entry(r[sex].clone()).or_default();
        text.push_str(&format!("{},{}\n", r.join(","), ["a", "b", "c", "d"][*k % 4]));
        *k += 1;
    }
    let path = dir.join("adult-planted.csv");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// Adult loaded for a model's audit (a tree trained on it): the load stage's proxy warnings are
/// said only in a pipeline with a model stage, whose counterparts they concern.
fn loaded_for_a_model(data: &str, extra: &str) -> String {
    format!(
        "[pipeline]\nname = \"proxies\"\n\n[stages.data]\nkind = \"load\"\npath = {data:?}\nlabel = \"Y\"\nfavourable = \">50K\"\nprotected = [\"sex\", \"race\"]\nmissing = \"drop\"\n{extra}\n\n[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"tree\"\n"
    )
}

#[test]
fn the_load_stage_warns_of_relationship_for_sex_and_not_of_an_independent_column() {
    let dir = tempfile::tempdir().unwrap();
    let data = adult_with_independent_column(dir.path());
    let (header, rows) = adult_rows();
    let col = |name: &str| -> Vec<&str> {
        let i = header.iter().position(|c| c == name).unwrap();
        rows.iter().map(|r| r[i].as_str()).collect()
    };
    let expected = cramers_v_of_text(&col("sex"), &col("relationship"));
    assert!(expected > 0.6, "Adult's relationship determines sex for most rows: V = {expected}");

    let summary = run_pipeline(&write(dir.path(), "p.toml", &loaded_for_a_model(&data, "")), &dir.path().join("out"), &[]);
    let proxies = summary["stages"]["data"]["proxies"].as_array().unwrap();
    let relationship = proxies.iter().find(|p| p["protected"] == "sex" && p["column"] == "relationship").expect("relationship flagged");
    assert_eq!(relationship["measure"], "cramers_v");
    let got = relationship["value"].as_f64().unwrap();
    assert!((got - expected).abs() < 1e-9, "V {got} vs {expected} counted from the file's text");
    assert!(proxies.iter().all(|p| p["column"] != "planted"), "an independent column is no proxy: {proxies:?}");
    assert!(proxies.iter().all(|p| p["value"].as_f64().unwrap() >= 0.5), "only columns at the threshold: {proxies:?}");
    let warnings: Vec<&str> = summary["warnings"].as_array().unwrap().iter().map(|w| w["message"].as_str().unwrap()).collect();
    let warning = warnings.iter().find(|w| w.contains("`relationship`")).expect("a warning names relationship");
    assert!(warning.starts_with("stages.data.protected: `sex`"), "located at the key: {warning}");
    assert!(!warning.contains("planted"), "{warning}");
    assert_eq!(summary["stages"]["data"]["warnings"].as_array().unwrap().len(), warnings.len());

    // The threshold is the user's: above the relationship's V, nothing is flagged for sex.
    let strict = loaded_for_a_model(&data, &format!("proxy_threshold = {}\n", (expected + 0.01).min(1.0)));
    let summary = run_pipeline(&write(dir.path(), "strict.toml", &strict), &dir.path().join("strict"), &[]);
    assert!(summary["stages"]["data"]["proxies"].as_array().unwrap().iter().all(|p| p["protected"] != "sex"));
    assert!(summary["warnings"].as_array().is_none_or(|w| w.iter().all(|w| !w["message"].as_str().unwrap().contains("`relationship`"))));

    // No model stage, so no counterpart is made: the proxies are recorded, not warned of.
    let text = loaded_for_a_model(&data, "");
    let load_alone = &text[..text.find("[stages.model]").unwrap()];
    let summary = run_pipeline(&write(dir.path(), "alone.toml", load_alone), &dir.path().join("alone"), &[]);
    assert!(summary["stages"]["data"]["proxies"].as_array().unwrap().iter().any(|p| p["column"] == "relationship"));
    assert_eq!(summary["warnings"].as_array().map(Vec::len), Some(0), "{}", summary["warnings"]);
}

// ---------------------------------------------------------------------------------------------
// A planted model whose decision depends on sex, on race and on whether relationship agrees with
// sex: every expected count below is computed from the rule itself, by enumeration.

use std::sync::Arc;

use fairpipe_core::data::Dataset;
use fairpipe_core::error::ModelError;
use fairpipe_core::models::provided::{BoundModel, ModelSource, ProvidedModel};
use fairpipe_core::oracle::Model;
use fairpipe_core::run::{Pipeline, Run};
use fairpipe_core::stages::check::{CheckConfig, CheckFigures};
use fairpipe_core::stages::estimate::{EstimateConfig, EstimateFigures};
use fairpipe_core::stages::generate::GenerateConfig;
use fairpipe_core::stages::load::{LabelValue, LoadConfig};
use fairpipe_core::stages::load_model::LoadModelConfig;
use fairpipe_core::stages::options::Rows;
use fairpipe_core::stages::verify::{VerifyConfig, VerifyFigures};

const RELATIONSHIPS: [&str; 3] = ["Husband", "Own-child", "Wife"];

/// The planted rule on names: a + 2·[Male] + 4·[a spouse whose relationship agrees with sex] +
/// 2·[race A] ≥ 8.
fn favourable(a: i64, sex: &str, relationship: &str, race: &str) -> bool {
    let spouse = (sex == "Male" && relationship == "Husband") || (sex == "Female" && relationship == "Wife");
    a + 2 * i64::from(sex == "Male") + 4 * i64::from(spouse) + 2 * i64::from(race == "A") >= 8
}

/// The linked counterpart's relationship when sex becomes `sex`: Husband goes with Male, Wife
/// with Female, the rest is kept.
fn linked_relationship(relationship: &str, sex: &str) -> &'static str {
    match (relationship, sex) {
        ("Husband" | "Wife", "Male") => "Husband",
        ("Husband" | "Wife", "Female") => "Wife",
        _ => RELATIONSHIPS.iter().find(|r| **r == relationship).unwrap(),
    }
}

/// The other sex / race.
fn other(v: &str) -> &'static str {
    match v {
        "Male" => "Female",
        "Female" => "Male",
        "A" => "B",
        _ => "A",
    }
}

/// Reads the dataset's encoded rows by name and answers the planted rule.
struct Planted {
    columns: [usize; 4],
    domain: fairpipe_core::domain::Domain,
}

impl Model for Planted {
    fn n_features(&self) -> usize {
        self.domain.width()
    }
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.domain.width();
        for (o, row) in out.iter_mut().zip(x.chunks_exact(width)) {
            let text = |k: usize| self.domain.attributes[self.columns[k]].decode(row[self.columns[k]]);
            let a: i64 = text(0).parse().unwrap();
            *o = if favourable(a, &text(1), &text(2), &text(3)) { 0.9 } else { 0.1 };
        }
        Ok(())
    }
    fn describe(&self) -> String {
        "planted sex/relationship rule".into()
    }
}

struct PlantedSource;

impl ModelSource for PlantedSource {
    fn describe(&self) -> String {
        "planted".into()
    }
    fn bind(&self, data: &Dataset) -> Result<BoundModel, ModelError> {
        let at = |n: &str| data.domain.index_of(n).unwrap();
        let model = Planted { columns: [at("a"), at("sex"), at("relationship"), at("race")], domain: data.domain.clone() };
        Ok(BoundModel {
            model: Arc::new(model),
            read: (0..data.domain.width()).collect(),
            input_contract: "encoded rows".into(),
            output_read: "P(favourable)".into(),
            favourable_class_assumed: false,
        })
    }
}

/// The planted people: a from 0 to 9, both races, and the (sex, relationship) pairs people have:
/// Male Husband, Female Wife, and a child of either sex.
fn people() -> Vec<(i64, &'static str, &'static str, &'static str)> {
    let mut rows = Vec::new();
    for a in 0..10 {
        for (sex, relationship) in [("Male", "Husband"), ("Female", "Wife"), ("Male", "Own-child"), ("Female", "Own-child")] {
            for race in ["A", "B"] {
                rows.push((a, sex, relationship, race));
            }
        }
    }
    rows
}

fn planted_csv(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("a,relationship,race,sex,y\n");
    for (a, sex, relationship, race) in people() {
        text.push_str(&format!("{a},{relationship},{race},{sex},{}\n", u8::from(a >= 5)));
    }
    let path = dir.join("planted.csv");
    std::fs::write(&path, text).unwrap();
    path
}

fn run_planted(dir: &Path, linked: bool, search: bool) -> Run {
    fairpipe::register_builtins().expect("the built-ins register");
    let mut data = LoadConfig::default();
    data.path = Some(planted_csv(dir));
    data.label = Some("y".into());
    data.protected = vec!["sex".into(), "race".into()];
    data.test_fraction = 0.2;
    if linked {
        let values = [("Husband".to_string(), LabelValue::Text("Male".into())), ("Wife".to_string(), LabelValue::Text("Female".into()))];
        data.linked.insert("relationship".into(), [("sex".to_string(), values.into_iter().collect())].into_iter().collect());
    }
    let mut builder = Pipeline::builder("planted")
        .seed(5)
        .stage("data", data, &[])
        .stage("model", LoadModelConfig::provided(ProvidedModel(Arc::new(PlantedSource))), &[("data", "data")])
        .stage("check", CheckConfig { split: Rows::All, ..Default::default() }, &[("model", "model")])
        .stage("estimate", EstimateConfig { trials: 40, samples: 2500, ..Default::default() }, &[("model", "model")]);
    if search {
        let generate = GenerateConfig { plugin: Some("aequitas".into()), max_queries: 20_000, ..Default::default() };
        builder = builder.stage("search", generate, &[("model", "model")]).stage("verify", VerifyConfig {}, &[("cases", "search")]);
    }
    builder.build().expect("the planted pipeline builds").execute(false).expect("the planted pipeline runs")
}

/// Per person: flipped by any combination, by sex alone, by race alone, with or without the link.
fn expected_flips(a: i64, sex: &str, relationship: &str, race: &str, linked: bool) -> (bool, bool, bool) {
    let own = favourable(a, sex, relationship, race);
    let variant = |s: &str, r: &str| {
        let rel = if linked && s != sex { linked_relationship(relationship, s) } else { relationship };
        favourable(a, s, rel, r) != own
    };
    let by_sex = variant(other(sex), race);
    let by_race = variant(sex, other(race));
    (by_sex || by_race || variant(other(sex), other(race)), by_sex, by_race)
}

fn counted(linked: bool) -> (usize, usize, usize) {
    people().iter().fold((0, 0, 0), |(t, s, r), &(a, sex, rel, race)| {
        let (any, by_sex, by_race) = expected_flips(a, sex, rel, race, linked);
        (t + usize::from(any), s + usize::from(by_sex), r + usize::from(by_race))
    })
}

#[test]
fn a_linked_counterpart_changes_relationship_with_sex_and_the_flips_are_the_planted_rules() {
    let dir = tempfile::tempdir().unwrap();
    let (unlinked_total, unlinked_sex, unlinked_race) = counted(false);
    let (linked_total, linked_sex, linked_race) = counted(true);
    // The planted rule makes the difference: a Female Husband loses the spouse bonus, a Female
    // Wife keeps it.
    assert!(unlinked_sex > linked_sex && linked_sex > 0, "{unlinked_sex} vs {linked_sex}");
    assert_eq!(unlinked_race, linked_race, "race has no link");

    for (linked, (total, by_sex, by_race)) in [(false, counted(false)), (true, counted(true))] {
        let run = run_planted(dir.path(), linked, false);
        let check: CheckFigures = run.figures("check").unwrap();
        assert_eq!(check.checked, people().len());
        assert_eq!(check.discriminatory, total, "linked = {linked}: together");
        assert_eq!(check.discriminatory_alone["sex"], by_sex, "linked = {linked}: sex alone");
        assert_eq!(check.discriminatory_alone["race"], by_race, "linked = {linked}: race alone");
        assert!((check.rate_alone["sex"] - by_sex as f64 / people().len() as f64).abs() < 1e-12);
        // The check's counterparts: the relationship is written beside sex when it is linked, and
        // no counterpart is a Female Husband or a Male Wife.
        let table = run.table("check").expect("the check's table");
        let column = |name: &str| -> Vec<String> {
            table.column(name).unwrap().str().unwrap().iter().map(|v| v.unwrap_or_default().to_string()).collect()
        };
        let sexes = column("sex_counterpart");
        if linked {
            let relationships = column("relationship_counterpart");
            let impossible =
                sexes.iter().zip(&relationships).filter(|(s, r)| (*s == "Female") == (*r == "Husband") && *r != "Own-child").count();
            assert_eq!(impossible, 0, "a linked counterpart is never a Female Husband or a Male Wife");
            assert!(relationships.iter().any(|r| r == "Wife") && relationships.iter().any(|r| r == "Husband"));
        } else {
            assert!(table.column("relationship_counterpart").is_err(), "no link, no relationship counterpart column");
            let relationships = column("relationship");
            let female_husbands = sexes.iter().zip(&relationships).filter(|(s, r)| *s == "Female" && *r == "Husband").count();
            assert!(female_husbands > 0, "without the link the check's counterparts include Female Husbands");
        }
    }
    assert_ne!((unlinked_total, unlinked_sex), (linked_total, linked_sex));
}

#[test]
fn the_estimate_draws_plausible_inputs_and_its_per_attribute_rates_match_the_enumeration() {
    // The domain: a 0..9, relationship of 3, race of 2, sex of 2, drawn uniformly; with the link,
    // each input is made plausible before it is checked (a drawn Female Husband is a Female Wife).
    let exact = |linked: bool| {
        let (mut n, mut any, mut by_sex, mut by_race) = (0.0, 0.0, 0.0, 0.0);
        for a in 0..10 {
            for rel in RELATIONSHIPS {
                for race in ["A", "B"] {
                    for sex in ["Female", "Male"] {
                        let rel = if linked { linked_relationship(rel, sex) } else { rel };
                        let (t, s, r) = expected_flips(a, sex, rel, race, linked);
                        n += 1.0;
                        any += f64::from(u8::from(t));
                        by_sex += f64::from(u8::from(s));
                        by_race += f64::from(u8::from(r));
                    }
                }
            }
        }
        (any / n, by_sex / n, by_race / n)
    };
    let dir = tempfile::tempdir().unwrap();
    for linked in [false, true] {
        let (rate, sex, race) = exact(linked);
        let estimate: EstimateFigures = run_planted(dir.path(), linked, false).figures("estimate").unwrap();
        assert_eq!(estimate.samples, 100_000);
        // 100,000 inputs: a standard error under 0.0016; 0.01 is six of them.
        assert!((estimate.rate - rate).abs() < 0.01, "linked = {linked}: {} vs exact {rate}", estimate.rate);
        assert!((estimate.rate_alone["sex"] - sex).abs() < 0.01, "linked = {linked}: sex alone {} vs {sex}", estimate.rate_alone["sex"]);
        assert!(
            (estimate.rate_alone["race"] - race).abs() < 0.01,
            "linked = {linked}: race alone {} vs {race}",
            estimate.rate_alone["race"]
        );
        assert_eq!(estimate.discriminatory_alone["sex"] as f64 / 100_000.0, estimate.rate_alone["sex"]);
    }
    assert!(
        exact(false).1 - exact(true).1 > 0.05,
        "the link changes the planted rate of sex alone: {:?} vs {:?}",
        exact(false),
        exact(true)
    );
}

#[test]
fn a_search_through_the_plugin_abi_gets_linked_counterparts() {
    let dir = tempfile::tempdir().unwrap();
    let impossible_counterparts = |run: &Run| {
        let table = run.table("verify").expect("the verify table");
        let column = |name: &str| -> Vec<String> {
            table.column(name).unwrap().str().unwrap().iter().map(|v| v.unwrap_or_default().to_string()).collect()
        };
        let sexes = column("sex_counterpart");
        let rel = if table.column("relationship_counterpart").is_ok() { "relationship_counterpart" } else { "relationship" };
        let relationships = column(rel);
        let a: Vec<i64> = table.column("a").unwrap().i64().unwrap().iter().map(|v| v.unwrap()).collect();
        let (own_rel, own_sex, own_race, race_c) = (column("relationship"), column("sex"), column("race"), column("race_counterpart"));
        // Every confirmed case flips by the planted rule, as the linked counterpart is written.
        for i in 0..sexes.len() {
            assert_ne!(
                favourable(a[i], &own_sex[i], &own_rel[i], &own_race[i]),
                favourable(a[i], &sexes[i], &relationships[i], &race_c[i]),
                "case {i} is no flip of the planted rule"
            );
        }
        (
            sexes.iter().zip(&relationships).filter(|(s, r)| (*s == "Female" && *r == "Husband") || (*s == "Male" && *r == "Wife")).count(),
            sexes.len(),
        )
    };
    let unlinked = run_planted(dir.path(), false, true);
    let (bad, found) = impossible_counterparts(&unlinked);
    assert!(found > 0 && bad > 0, "without the link the search finds Female Husbands: {bad} of {found}");
    let linked = run_planted(dir.path(), true, true);
    let (bad, found) = impossible_counterparts(&linked);
    let verify: VerifyFigures = linked.figures("verify").unwrap();
    assert!(found > 0, "the linked search still finds cases");
    assert_eq!(verify.rejected, 0, "the host confirms every linked case the plugin emitted");
    assert_eq!(bad, 0, "no linked counterpart is a Female Husband or a Male Wife");
}
