//! White-box search: the gradient the host hands to plugins through the ABI's
//! `gradient` callback, checked against an independent computation, and EIDIG on the bundled
//! reference census model with every case re-checked by the host.
//!
//! The plugin libraries must be built first: `cargo build --workspace --all-targets`.

use std::sync::Arc;

use crate::common;

use fairpipe_core::models::OnnxModel;
use fairpipe_core::oracle::{GradientMethod, Oracle};

/// The bundled census data and its reference network twice: as tract runs it (no exact gradient:
/// the oracle takes finite differences of tract's float32 outputs) and run natively (exact,
/// back-propagated).
fn census_two_ways() -> (Vec<f64>, usize, Oracle, Oracle) {
    let data = common::census_data();
    let width = data.domain.width();
    let path = common::root().join("pipelines/models/census.onnx");
    let rows: Vec<f64> = data.x.iter().copied().take(600 * width).collect();
    let tract = OnnxModel::load(&path, width, None).unwrap();
    let mut native = OnnxModel::load(&path, width, None).unwrap();
    assert!(native.verify_native(&rows).unwrap().is_some_and(|c| c.used), "the reference network runs natively");
    (rows, width, Oracle::new(Arc::new(tract)), Oracle::new(Arc::new(native)))
}

#[test]
fn the_exact_gradient_of_the_reference_network_matches_finite_differences_of_tract() {
    let (rows, width, tract, native) = census_two_ways();
    assert_eq!((tract.gradient_method(), native.gradient_method()), (GradientMethod::FiniteDifferences, GradientMethod::Exact));
    let n = rows.len() / width;
    let (mut p_exact, mut g_exact) = (vec![0.0; n], vec![0.0; rows.len()]);
    let (mut p_fd, mut g_fd) = (vec![0.0; n], vec![0.0; rows.len()]);
    assert_eq!(native.gradient_into(&rows, &mut p_exact, &mut g_exact).unwrap(), n as u64);
    assert_eq!(tract.gradient_into(&rows, &mut p_fd, &mut g_fd).unwrap(), (n * (1 + 2 * width)) as u64);
    for (a, b) in p_exact.iter().zip(&p_fd) {
        assert!((a - b).abs() < 1e-5, "P(class 1): native {a} against tract {b}");
    }
    // A ReLU network is piecewise linear: a central difference straddling a kink averages two
    // slopes, so a few components may differ; all others agree to float32 precision.
    // Every probability and component is a number (a NaN would pass the counts below unseen).
    common::finite_min(&p_exact);
    common::finite_min(&p_fd);
    common::finite_min(&g_fd);
    let scale = common::finite_max(&g_exact.iter().map(|g| g.abs()).collect::<Vec<_>>());
    let close = g_exact.iter().zip(&g_fd).filter(|(a, b)| (*a - *b).abs() <= 1e-3 * scale + 0.02 * a.abs()).count();
    assert!(scale > 1e-3, "the network is not flat at real rows");
    assert!(close as f64 >= 0.98 * g_exact.len() as f64, "{close} of {} components agree", g_exact.len());
    let flips = g_exact.iter().zip(&g_fd).filter(|(a, b)| a.abs() > 1e-2 * scale && a.signum() != b.signum()).count();
    assert!(flips * 200 <= g_exact.len(), "{flips} clear signs differ");
}

#[test]
fn eidig_on_the_reference_census_model_uses_exact_gradients_and_every_case_is_confirmed() {
    let run = common::bundled_run(&common::root().join("pipelines/census-eidig.toml"));
    let stages = &run.summary["stages"];
    for attr in ["gender", "race", "age"] {
        let search = &stages[format!("eidig_{attr}")];
        let verified = &stages[format!("{attr}_verified")];
        assert_eq!(search["gradient"], "exact", "{attr}: {search}");
        let gradient_rows = search["gradient_rows"].as_u64().unwrap();
        assert!(gradient_rows > 50 && search["gradient_model_rows"] == gradient_rows, "{attr}: {search}");
        let emitted = search["emitted"].as_u64().unwrap();
        assert!(emitted > 100, "{attr}: {emitted} IDIs from 50 seeds");
        assert_eq!(verified["checked"].as_u64(), Some(emitted), "{attr}");
        assert_eq!(verified["confirmed"].as_u64(), Some(emitted), "{attr}: the host confirms every case");
        assert_eq!(verified["discriminatory_full"].as_u64(), Some(emitted), "{attr}: distinct full instances, as the reference counts");
    }
}
