//! The one way the suites compare two columns of numbers (ours against a reference's): it fails
//! on NaN on either side, on columns of different lengths, and on the first row whose values
//! differ by more than the tolerance, naming that row and both values. A fold with `f64::max`
//! would read a NaN as a difference of 0 and a shorter column as a match.

/// Compare `ours` with `theirs` row by row, failing (naming `what`) when the lengths differ,
/// when either side holds NaN, or at the first row where `|ours − theirs| > tolerance` (equal
/// infinities agree). Returns the largest difference, to report.
pub fn assert_close(what: &str, ours: &[f64], theirs: &[f64], tolerance: f64) -> f64 {
    assert!(tolerance >= 0.0, "{what}: a tolerance of {tolerance}");
    assert_eq!(ours.len(), theirs.len(), "{what}: {} values against the reference's {}", ours.len(), theirs.len());
    let mut worst = 0.0f64;
    for (row, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
        assert!(!a.is_nan() && !b.is_nan(), "{what}: row {row} is NaN: ours {a}, the reference's {b}");
        let d = if a == b { 0.0 } else { (a - b).abs() };
        assert!(d <= tolerance, "{what}: row {row} differs by {d:e} (above {tolerance:e}): ours {a:?}, the reference's {b:?}");
        worst = worst.max(d);
    }
    worst
}

/// Compare `ours` with `theirs` bit for bit (`f64::to_bits`: -0 differs from 0, every NaN from
/// every number), failing (naming `what`) on a length difference or at the first row that
/// differs, with both values and their bits.
pub fn assert_bits_equal(what: &str, ours: &[f64], theirs: &[f64]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: {} values against the reference's {}", ours.len(), theirs.len());
    if let Some(row) = ours.iter().zip(theirs).position(|(a, b)| a.to_bits() != b.to_bits()) {
        let (a, b) = (ours[row], theirs[row]);
        panic!("{what}: row {row} differs: ours {a:?} ({:#018x}), the reference's {b:?} ({:#018x})", a.to_bits(), b.to_bits());
    }
}

/// The panic message of `f`, which must panic.
#[cfg(test)]
fn failure_of(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("the comparison passed");
    payload.downcast_ref::<String>().cloned().or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

#[test]
fn the_comparison_fails_on_nan_on_either_side_on_lengths_and_names_the_first_differing_row() {
    let worst = assert_close("close", &[0.25, 1.0, f64::INFINITY], &[0.25, 1.0 + 1e-12, f64::INFINITY], 1e-9);
    assert!(worst > 0.9e-12 && worst < 1.1e-12, "{worst}");
    let ours_nan = failure_of(|| {
        assert_close("p", &[0.1, f64::NAN], &[0.1, 0.2], 1.0);
    });
    assert!(ours_nan.contains("p: row 1 is NaN: ours NaN, the reference's 0.2"), "{ours_nan}");
    let theirs_nan = failure_of(|| {
        assert_close("p", &[0.1, 0.2], &[f64::NAN, 0.2], 1.0);
    });
    assert!(theirs_nan.contains("p: row 0 is NaN: ours 0.1, the reference's NaN"), "{theirs_nan}");
    let short = failure_of(|| {
        assert_close("p", &[0.1], &[0.1, 0.2], 1.0);
    });
    assert!(short.contains("p: 1 values against the reference's 2"), "{short}");
    let far = failure_of(|| {
        assert_close("p", &[0.1, 0.5, 0.9], &[0.1, 0.4, 0.0], 1e-6);
    });
    assert!(far.contains("p: row 1 differs by") && far.contains("ours 0.5, the reference's 0.4"), "{far}");
    let infinite = failure_of(|| {
        assert_close("p", &[f64::INFINITY], &[f64::NEG_INFINITY], 1e300);
    });
    assert!(infinite.contains("row 0 differs"), "{infinite}");
    assert_bits_equal("bits", &[0.5, f64::MAX], &[0.5, f64::MAX]);
    let signed_zero = failure_of(|| assert_bits_equal("bits", &[1.0, 0.0], &[1.0, -0.0]));
    assert!(
        signed_zero.contains("bits: row 1 differs: ours 0.0 (0x0000000000000000), the reference's -0.0 (0x8000000000000000)"),
        "{signed_zero}"
    );
    let ulp = failure_of(|| assert_bits_equal("bits", &[0.1], &[f64::from_bits(0.1f64.to_bits() + 1)]));
    assert!(ulp.contains("row 0 differs"), "{ulp}");
}
