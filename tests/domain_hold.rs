//! No row outside the domain ever reaches a model, whatever a search proposes: every built-in
//! method runs against a model over category columns that records each value it is given, and
//! none lies outside its attribute's bounds or (for a category) off its levels. MAFT's gradient
//! probes step one level past a category's last (its reference does not clip them): the host
//! holds them to the domain, and says how many it held.

use std::sync::{Arc, Mutex};

use crate::common;

use fairpipe_core::domain::{Attribute, AttributeKind, Domain};
use fairpipe_core::error::ModelError;
use fairpipe_core::oracle::{Model, Oracle};
use fairpipe_core::plugin::RunSpec;
use fairpipe_ffi::FfiBudget;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::json;

/// A category column of `n` levels (codes 0..n).
fn category(name: &str, n: usize, protected: bool) -> Attribute {
    let levels: Vec<String> = (0..n).map(|k| format!("{name}{k}")).collect();
    Attribute::categorical(name, levels, protected)
}

fn domain() -> Domain {
    Domain {
        attributes: vec![
            category("work", 4, false),
            category("edu", 7, false),
            Attribute::integer("hours", 0.0, 10.0, false),
            category("sex", 2, true),
            category("race", 3, true),
        ],
    }
}

/// A logistic of the codes (favouring sex 1), with its exact gradient (so that the host takes
/// no finite differences of its own), that records every value outside the domain it is given.
struct Recording {
    domain: Domain,
    outside: Mutex<Vec<String>>,
    rows: Mutex<u64>,
}

impl Recording {
    fn look(&self, x: &[f64]) {
        let width = self.domain.width();
        *self.rows.lock().unwrap() += (x.len() / width) as u64;
        for row in x.chunks_exact(width) {
            for (a, &v) in self.domain.attributes.iter().zip(row) {
                let off_level = matches!(a.kind, AttributeKind::Categorical { .. }) && v.fract() != 0.0;
                if !(a.lower..=a.upper).contains(&v) || off_level {
                    self.outside.lock().unwrap().push(format!("{} = {v} in {row:?}", a.name));
                }
            }
        }
    }
}

const WEIGHTS: [f64; 5] = [0.4, 0.5, 0.3, 2.0, 0.2];

impl Model for Recording {
    fn n_features(&self) -> usize {
        5
    }
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        self.look(x);
        for (o, r) in out.iter_mut().zip(x.chunks_exact(5)) {
            let margin: f64 = r.iter().zip(WEIGHTS).map(|(v, w)| v * w).sum::<f64>() - 5.5;
            *o = 1.0 / (1.0 + (-margin).exp());
        }
        Ok(())
    }
    fn describe(&self) -> String {
        "recording".into()
    }
    fn has_exact_gradient(&self) -> bool {
        true
    }
    fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) -> Result<(), ModelError> {
        self.predict_into(x, out)?;
        for (g, &p) in grad.chunks_exact_mut(5).zip(out.iter()) {
            for (gi, w) in g.iter_mut().zip(WEIGHTS) {
                *gi = p * (1.0 - p) * w;
            }
        }
        Ok(())
    }
}

/// Small parameters of each built-in method.
fn params(name: &str) -> serde_json::Value {
    match name {
        "random" => json!({ "samples": 2000 }),
        "aequitas" => json!({ "global_iterations": 200, "local_iterations": 200 }),
        "maft" | "eidig" => json!({ "global_num": 100, "local_num": 200 }),
        "sg" => json!({ "sample_limit": 200, "lime_samples": 500 }),
        "grft" => json!({ "num_seeds": 100, "local_num": 200 }),
        "aft" => json!({ "train_samples": 500, "max_tests": 5000 }),
        "testsgd" => json!({}),
        other => panic!("no parameters for the built-in `{other}`: add them here"),
    }
}

#[test]
fn no_built_in_method_hands_a_model_a_row_outside_the_domain() {
    let domain = domain();
    let seeds = domain.sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(3), 100);
    for (name, _) in fairpipe::BUILTINS {
        let model = Arc::new(Recording { domain: domain.clone(), outside: Mutex::new(Vec::new()), rows: Mutex::new(0) });
        let params = params(name);
        let spec = RunSpec { params: &params, seeds: &seeds, rng_seed: 7, budget: FfiBudget::default(), gamma: None };
        let out = common::plugin(name)
            .generate(&Oracle::new(Arc::clone(&model) as Arc<dyn Model>), &domain, &spec, &indicatif::ProgressBar::hidden())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let rows = *model.rows.lock().unwrap();
        assert!(rows > 0, "{name} never asked the model");
        let outside = model.outside.lock().unwrap();
        assert!(
            outside.is_empty(),
            "{name} handed the model {} values outside the domain, e.g. {:?}",
            outside.len(),
            &outside[..3.min(outside.len())]
        );
        if *name == "maft" {
            // Its gradient probes step past the last level of a category: held, not shown.
            assert!(out.held > 0, "maft proposed no row outside the domain: this test no longer sees the hold at work");
        } else {
            // Every other method asks only rows inside the domain, so whether the host holds rows
            // (a model that does not take any real input) or not changes none of its counts.
            assert_eq!(out.held, 0, "{name} asked the model rows outside the domain: the hold changes what it finds");
        }
    }
}

#[test]
fn rows_are_held_onto_bounds_and_levels_and_left_alone_inside() {
    let domain = domain();
    let inside = [3.0, 6.0, 2.5, 1.0, 0.0];
    let (same, held) = fairpipe_core::plugin::run::held_to_domain(&domain, &inside);
    assert!(matches!(same, std::borrow::Cow::Borrowed(_)) && held == 0, "an integer between grid points is inside the bounds");
    let rows = [4.0, 7.0, 11.0, 1.4, -1.0, /* second row inside */ 0.0, 0.0, 0.0, 0.0, 0.0];
    let (out, held) = fairpipe_core::plugin::run::held_to_domain(&domain, &rows);
    assert_eq!(held, 1);
    assert_eq!(&out[..], &[3.0, 6.0, 10.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}

/// The recording model, reading its inputs as numbers (a network over the encoded vector).
struct RealInputs(Recording);

impl Model for RealInputs {
    fn n_features(&self) -> usize {
        self.0.n_features()
    }
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        self.0.predict_into(x, out)
    }
    fn describe(&self) -> String {
        "recording, real inputs".into()
    }
    fn takes_any_real_input(&self) -> bool {
        true
    }
}

/// A model that takes any real input is shown MAFT's zero-order gradient probes as the reference
/// code shows them (a category's code at x + h, past its last level included), so that the
/// estimate sees the model move; nothing is held. (The regression this guards: holding every probe
/// onto a level zeroed the gradient and MAFT found a tenth of its IDIs on the census network.)
#[test]
fn a_model_that_takes_any_real_input_sees_maft_probes_as_asked() {
    let domain = domain();
    let seeds = domain.sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(3), 100);
    let model = Arc::new(RealInputs(Recording { domain: domain.clone(), outside: Mutex::new(Vec::new()), rows: Mutex::new(0) }));
    let params = params("maft");
    let spec = RunSpec { params: &params, seeds: &seeds, rng_seed: 7, budget: FfiBudget::default(), gamma: None };
    let out = common::plugin("maft")
        .generate(&Oracle::new(Arc::clone(&model) as Arc<dyn Model>), &domain, &spec, &indicatif::ProgressBar::hidden())
        .unwrap_or_else(|e| panic!("maft: {e}"));
    assert_eq!(out.held, 0, "a model that takes any real input has nothing held");
    let outside = model.0.outside.lock().unwrap();
    assert!(!outside.is_empty(), "maft's probes past a category's last level reach a model that takes any real input");
    assert!(!out.cases.is_empty(), "maft finds discriminatory cases on a model favouring sex 1");
}
