//! Property tests over the three readers of untrusted input — the TOML pipeline reader, the CSV
//! loader and the domain builder: whatever the input, they return a value or a located error and
//! never panic, and what they return holds together. Bounded for CI (256 cases each, a few seconds);
//! `FAIRPIPE_PROPTEST_CASES=N` runs a longer search.

use std::path::Path;

use fairpipe_core::data::{self, LoadSpec, SplitSpec};
use fairpipe_core::domain::{Attribute, AttributeKind, Domain};
use fairpipe_core::run::Pipeline;
use fairpipe_core::warnings::Warnings;
use proptest::prelude::*;
use rand::SeedableRng;

fn cases() -> u32 {
    std::env::var("FAIRPIPE_PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256)
}

/// A valid pipeline over a file that does not exist (so validation reads no data).
const BASE: &str = "[pipeline]\nseed = 7\nout = \"o\"\n\n[stages.data]\nkind = \"load\"\npath = \"none.csv\"\nlabel = \"y\"\nprotected = [\"s\"]\ncolumns.x = { min = 0, max = 9, step = 1 }\n\n[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"forest\"\ntrees = 3\n\n[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 4\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 10\nsamples = 100\ngamma = 0.1\n";

/// Pieces that make TOML and our checks interesting.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("99999999999999999999".to_string()),
        Just("-9223372036854775808".to_string()),
        Just("1.7e308".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("\"../../x\"".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("\"".to_string()),
        Just("=".to_string()),
        Just("\n".to_string()),
        Just("[stages.a]\nkind = \"estimate\"\nmodel = \"data\"\n".to_string()),
        Just("é".to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        "[a-z_.]{0,8}",
        "\\PC{0,6}",
    ]
}

/// The base pipeline with a few pieces inserted or written over at random places.
fn mutated_pipeline() -> impl Strategy<Value = String> {
    proptest::collection::vec((0..BASE.len(), 0usize..6, fragment()), 1..5).prop_map(|edits| {
        let mut text = BASE.to_string();
        for (at, cut, piece) in edits {
            let mut at = at.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + cut).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(at..end, &piece);
        }
        text
    })
}

/// Every problem is located inside the text (line and column from 1, line within the file).
fn check_located(text: &str, result: Result<Pipeline, fairpipe_core::error::ConfigError>) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        prop_assert!(!e.problems.is_empty());
        let lines = text.split('\n').count();
        for p in &e.problems {
            prop_assert!(p.line >= 1 && p.line <= lines && p.col >= 1, "{p} outside the text of {lines} lines");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // A long run (a million cases) meets proportionally more filtered-out domains.
        max_local_rejects: cases().saturating_mul(4).max(65_536),
        max_global_rejects: cases().saturating_mul(4).max(1024),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_pipeline_reader_locates_every_problem_and_never_panics(text in mutated_pipeline()) {
        let dir = tempfile::tempdir().unwrap();
        let result = Pipeline::parse(&dir.path().join("p.toml"), &text, None);
        check_located(&text, result)?;
    }

    #[test]
    fn the_pipeline_reader_survives_any_text(text in "\\PC{0,200}") {
        let result = Pipeline::parse(Path::new("/nonexistent/p.toml"), &text, None);
        check_located(&text, result)?;
    }

    #[test]
    fn the_csv_loader_returns_a_consistent_dataset_or_an_error(
        rows in proptest::collection::vec(proptest::collection::vec(cell(), 2..5), 1..30),
        header in proptest::collection::vec(prop_oneof![Just("x"), Just("s"), Just("y"), Just("z"), Just("x ")], 2..5),
        raw in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
    ) {
        let mut bytes = header.join(",").into_bytes();
        bytes.push(b'\n');
        for r in &rows {
            bytes.extend_from_slice(r.join(",").as_bytes());
            bytes.push(b'\n');
        }
        if let Some(raw) = raw {
            bytes.extend_from_slice(&raw);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.csv");
        std::fs::write(&path, &bytes).unwrap();
        let _ = fairpipe_core::csv_check::scan(&path, b',');
        let _ = data::column_names(&path, b',');
        let mut spec = LoadSpec::new(&path, "y");
        spec.protected = vec!["s".into()];
        spec.split = SplitSpec::Fraction { test: 0.2, seed: 1 };
        if let Ok(d) = data::load(&spec) {
            prop_assert_eq!(d.x.nrows(), d.y.len());
            prop_assert_eq!(d.x.ncols(), d.domain.width());
            for (j, a) in d.domain.attributes.iter().enumerate() {
                prop_assert!(a.lower.is_finite() && a.upper.is_finite() && a.lower <= a.upper && a.step > 0.0, "{a:?}");
                prop_assert!((a.upper - a.lower).is_finite());
                for v in d.x.column(j) {
                    prop_assert!(v.is_finite() && *v >= a.lower && *v <= a.upper, "{v} outside {a:?}");
                }
            }
            let count = d.domain.protected_combination_count();
            let refused = fairpipe_core::limits::check_protected_combinations(&d.domain, &Warnings::default()).is_err();
            prop_assert_eq!(refused, count.is_none_or(|n| n > fairpipe_core::limits::MAX_PROTECTED_COMBINATIONS));
        }
    }

    #[test]
    fn the_domain_never_panics_and_stays_in_bounds(attrs in proptest::collection::vec(attribute(), 1..5), seed in any::<u64>()) {
        let domain = Domain { attributes: attrs };
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let rows = domain.sample_rows(&mut rng, 20);
        for row in rows.chunks_exact(domain.width()) {
            for (v, a) in row.iter().zip(&domain.attributes) {
                prop_assert!(*v >= a.lower && *v <= a.upper, "{v} outside {a:?}");
                let c = a.clip(*v + a.step);
                prop_assert!(c >= a.lower && c <= a.upper, "clip gave {c} outside {a:?}");
            }
        }
        let mut row = rows[..domain.width()].to_vec();
        domain.nudge(&mut row, &domain.free_indices(), &mut rng);
        let _ = domain.size();
        // The limit refuses exactly the domains past it (or whose count overflows), before anything
        // enumerates them; below it the enumeration has the counted size.
        let count = domain.protected_combination_count();
        let refused = fairpipe_core::limits::check_protected_combinations(&domain, &Warnings::default()).is_err();
        prop_assert_eq!(refused, count.is_none_or(|n| n > fairpipe_core::limits::MAX_PROTECTED_COMBINATIONS));
        if let Some(n) = count.filter(|&n| n <= 10_000) {
            prop_assert_eq!(domain.protected_combinations().len() as u128, n);
        }
    }
}

/// A CSV cell: numbers (huge, tiny, negative, fractional), words, blanks, quotes.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        (0i64..5).prop_map(|i| i.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        Just("1.7e308".to_string()),
        Just("99999999999999999999".to_string()),
        Just(String::new()),
        Just("?".to_string()),
        Just("\"a,b\"".to_string()),
        Just("\"".to_string()),
        "[a-z]{1,3}",
    ]
}

/// An attribute with finite bounds (as the data layer guarantees) and any positive step.
fn attribute() -> impl Strategy<Value = Attribute> {
    (-1e308f64..1e308, 0.0f64..1e308, prop_oneof![1e-300f64..1e-6, 1e-6f64..10.0, 10.0f64..1e300], 0u8..3, any::<bool>()).prop_filter_map(
        "a finite range",
        |(lower, width, step, kind, protected)| {
            let upper = lower + width;
            if !upper.is_finite() || !(upper - lower).is_finite() {
                return None;
            }
            let (kind, lower, upper, step) = match kind {
                0 => (AttributeKind::Continuous, lower, upper, step),
                1 => (AttributeKind::Integer, lower.round(), upper.round().max(lower.round()), step.round().max(1.0)),
                _ => {
                    let n = (width % 50.0) as usize + 1;
                    (AttributeKind::Categorical { levels: (0..n).map(|i| format!("l{i}")).collect() }, 0.0, (n - 1) as f64, 1.0)
                }
            };
            Some(Attribute { name: "a".into(), kind, lower, upper, step, protected })
        },
    )
}
