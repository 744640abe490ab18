//! How figures are written on the report's pages: numbers, shares, p-values and counts for
//! display ("—" for a figure that is not there), and HTML escaping for text written outside the
//! templates.

/// A count with thousands separated by commas ("16,281").
pub(super) fn thousands(n: usize) -> String {
    crate::verdict::thousands(n as u64)
}

/// Escape text for HTML written outside the templates (which escape what they print).
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A figure for display (a non-finite one was written as `null`: "—").
pub(super) fn numf(f: f64) -> String {
    crate::numbers::figure(f)
}

/// A p-value for display: small ones in scientific notation ("—" when there is none).
pub(super) fn pvalue(p: f64) -> String {
    if p.is_nan() {
        "—".into()
    } else if p < 1e-300 {
        "<1e-300".into()
    } else if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// A share as a percentage (a non-finite one: "—").
pub(super) fn pctf(f: f64) -> String {
    crate::numbers::percent_or_dash(f)
}

/// A figure drawn on a chart: a non-finite one (written as `null`) counts as 0.
pub(super) fn or0(f: f64) -> f64 {
    if f.is_finite() {
        f
    } else {
        0.0
    }
}
