//! How figures are written on the report's pages: numbers, shares, p-values and counts for
//! display ("—" for a figure that is not there), and HTML escaping for text written outside the
//! templates.

use serde_json::Value;

/// A count with thousands separated by commas ("16,281").
pub(super) fn thousands(n: usize) -> String {
    crate::verdict::thousands(n as u64)
}

/// Escape text for HTML written outside the templates (which escape what they print).
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A number for display.
fn num(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.abs() >= 1000.0 || f == f.trunc() {
                format!("{f:.0}")
            } else {
                format!("{f:.4}")
            }
        }
        Value::Null => "—".into(),
        Value::String(s) => esc(s),
        other => esc(&other.to_string()),
    }
}

/// A share (a JSON number) as a percentage with two decimals ("—" when it is not a number).
fn pct(v: &Value) -> String {
    v.as_f64().map(|f| format!("{:.2}%", 100.0 * f)).unwrap_or_else(|| "—".into())
}

/// A figure for display (a non-finite one was written as `null`: "—").
pub(super) fn numf(f: f64) -> String {
    num(&Value::from(f))
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

/// A count for display.
pub(super) fn count(n: impl Into<u64>) -> String {
    n.into().to_string()
}

/// A share as a percentage (a non-finite one: "—").
pub(super) fn pctf(f: f64) -> String {
    pct(&Value::from(f))
}

/// A figure drawn on a chart: a non-finite one (written as `null`) counts as 0.
pub(super) fn or0(f: f64) -> f64 {
    if f.is_finite() {
        f
    } else {
        0.0
    }
}
