//! Every built-in search holds its output to a floor: each method runs on the census network with
//! fixed seeds and budgets of counts (tests/fixtures/search_floors/census-floors.toml), and its
//! verified IDI count (testsgd: its top group score) must stay at or above the floor recorded in
//! tests/fixtures/search_floors/floors.toml, 90% of the count measured when it was recorded.
//! MAFT once lost nine IDIs in ten (its gradient probes were held onto category levels) and every
//! test stayed green: a drop like that now fails here, naming the method, the count and the floor.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::common;

/// One method's floor.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Floor {
    /// The stage of census-floors.toml whose figure is held.
    stage: String,
    /// The figure (`discriminatory_full` of a `verify` stage; `worst_score` of a `group_score`).
    figure: String,
    /// The value measured when the floor was recorded.
    measured: f64,
    /// The least value that passes: 90% of `measured`, rounded down for counts.
    floor: f64,
}

/// floors.toml: one table per built-in method.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Floors {
    methods: BTreeMap<String, Floor>,
}

fn floors() -> Floors {
    let path = common::root().join("tests/fixtures/search_floors/floors.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// 90% of `measured`, rounded down to a whole count when the figure is one.
fn ninety_percent(measured: f64) -> f64 {
    let floor = 0.9 * measured;
    if measured.fract() == 0.0 {
        floor.floor()
    } else {
        floor
    }
}

#[test]
fn every_built_in_method_has_a_floor_that_is_ninety_percent_of_its_measured_count() {
    let floors = floors();
    for (name, _) in fairpipe::BUILTINS {
        let floor = floors.methods.get(*name).unwrap_or_else(|| {
            panic!("the built-in `{name}` has no floor in tests/fixtures/search_floors/floors.toml: add its stage to census-floors.toml and record it")
        });
        assert!(floor.measured > 0.0, "{name}: the recorded count is {}: a floor of nothing holds nothing", floor.measured);
        assert_eq!(
            floor.floor,
            ninety_percent(floor.measured),
            "{name}: the floor {} is not 90% of the measured {}",
            floor.floor,
            floor.measured
        );
    }
    for name in floors.methods.keys() {
        assert!(fairpipe::BUILTINS.iter().any(|(b, _)| b == name), "floors.toml names `{name}`, which is not a built-in method");
    }
}

#[test]
fn every_built_in_method_finds_at_least_its_floor_on_the_census_network() {
    let floors = floors();
    let out = tempfile::tempdir().unwrap();
    let pipeline = common::root().join("tests/fixtures/search_floors/census-floors.toml");
    let summary = common::run_pipeline(&pipeline, out.path(), &[]);
    let mut below = Vec::new();
    let mut measured = Vec::new();
    for (name, floor) in &floors.methods {
        let value = summary["stages"][&floor.stage][&floor.figure]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: no number at stages.{}.{} of summary.json", floor.stage, floor.figure));
        measured.push(format!("{name} {value} (floor {})", floor.floor));
        if value < floor.floor {
            below.push(format!(
                "{name}: {} {value} on census-floors.toml, below its floor {} (90% of {} measured when recorded)",
                floor.figure, floor.floor, floor.measured
            ));
        }
    }
    eprintln!("search floors: {}", measured.join(", "));
    assert!(below.is_empty(), "{}", below.join("\n"));
}
