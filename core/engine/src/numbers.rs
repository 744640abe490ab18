//! Counts written for people: thousands separated by commas, as the page, the report, the verdict
//! and the stages' messages print them.

/// A count with thousands separated by commas ("16,281").
pub(crate) fn thousands(n: u64) -> String {
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
