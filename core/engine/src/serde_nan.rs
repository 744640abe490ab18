//! A serde helper for figures read back from JSON, which has no NaN or infinity.

/// Deserialize a number that may have been written as `null` (JSON has no NaN or infinity; a
/// figure that was NaN reads back as NaN).
pub fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}
