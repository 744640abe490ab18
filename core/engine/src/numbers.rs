//! Counts and shares written for people: thousands separated by commas, shares as percentages, as
//! the page, the report, the verdict and the stages' messages print them.

/// A count with thousands separated by commas ("16,281").
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share as a percentage with two decimals ("15.00%").
pub(crate) fn percent(v: f64) -> String {
    format!("{:.2}%", 100.0 * v)
}

/// A share as a percentage with two decimals, "—" when it is not a number (a figure written as
/// `null`).
pub(crate) fn percent_or_dash(v: f64) -> String {
    if v.is_finite() {
        percent(v)
    } else {
        "—".into()
    }
}

/// A figure for display: a whole number or one of at least 1,000 without decimals, else four
/// decimals; "—" when it is not a number.
pub(crate) fn figure(f: f64) -> String {
    if !f.is_finite() {
        "—".into()
    } else if f.abs() >= 1000.0 || f == f.trunc() {
        format!("{f:.0}")
    } else {
        format!("{f:.4}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_separated_from_the_right() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(16_281), "16,281");
        assert_eq!(super::thousands(1_234_567), "1,234,567");
    }
}
