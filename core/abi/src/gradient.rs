//! Central finite differences of a model's P(class 1): the gradient a white-box method receives
//! when the model under test has no exact one. The host uses them behind the ABI's `gradient`
//! callback (minor 3) for a model it cannot differentiate, and [`crate::sdk::Host::gradient`]
//! uses them through `predict` under a host older than minor 3 — one definition for both.
//!
//! For an input x of `cols` features, the rows scored are x itself, then x + hᵢ·eᵢ and x − hᵢ·eᵢ
//! for every feature i, with hᵢ = 10⁻³·max(1, |xᵢ|) ([`difference_step`]); the gradient is
//! (f(x + hᵢ·eᵢ) − f(x − hᵢ·eᵢ)) / 2hᵢ. Steps are not clipped to the domain: the model is
//! evaluated just outside a bound, as a gradient at the bound requires.

/// Rows scored per input: the input, then a pair per feature.
pub fn rows_per_input(cols: usize) -> usize {
    1 + 2 * cols
}

/// The step hᵢ for a feature of value `v`: 10⁻³·max(1, |v|), small against the features'
/// scales and large enough for a model evaluated in f32 (whose probabilities carry about seven
/// digits) to show the difference.
pub fn difference_step(v: f64) -> f64 {
    1e-3 * v.abs().max(1.0)
}

/// Append, for every row of `x` (`cols` wide), the [`rows_per_input`] rows to score: the row,
/// then the row with feature i raised and lowered by its step, for each i.
pub fn push_difference_rows(x: &[f64], cols: usize, out: &mut Vec<f64>) {
    out.reserve(x.len() * rows_per_input(cols));
    for row in x.chunks_exact(cols) {
        out.extend_from_slice(row);
        for (i, &v) in row.iter().enumerate() {
            let h = difference_step(v);
            for sign in [1.0, -1.0] {
                let start = out.len();
                out.extend_from_slice(row);
                out[start + i] = v + sign * h;
            }
        }
    }
}

/// From the scores of the rows of [`push_difference_rows`] for `x`, write P(class 1) of each row
/// into `p` and its central-difference gradient into `grad` (`x.len()` values).
pub fn differences_to_gradient(x: &[f64], cols: usize, scores: &[f64], p: &mut [f64], grad: &mut [f64]) {
    let per = rows_per_input(cols);
    for (r, row) in x.chunks_exact(cols).enumerate() {
        let s = &scores[r * per..(r + 1) * per];
        p[r] = s[0];
        for (i, &v) in row.iter().enumerate() {
            grad[r * cols + i] = (s[1 + 2 * i] - s[2 + 2 * i]) / (2.0 * difference_step(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f(x) = x0² + 3·x1 + x0·x1: ∂/∂x0 = 2·x0 + x1, ∂/∂x1 = 3 + x0; central differences are exact
    /// for quadratics up to rounding.
    #[test]
    fn central_differences_of_a_quadratic_are_exact() {
        let f = |r: &[f64]| r[0] * r[0] + 3.0 * r[1] + r[0] * r[1];
        let x = [2.0, 5.0, -40.0, 0.5];
        let mut rows = Vec::new();
        push_difference_rows(&x, 2, &mut rows);
        assert_eq!(rows.len(), 2 * rows_per_input(2) * 2);
        assert_eq!(&rows[..6], &[2.0, 5.0, 2.002, 5.0, 1.998, 5.0], "h = 10⁻³·|2|");
        let scores: Vec<f64> = rows.chunks_exact(2).map(f).collect();
        let (mut p, mut grad) = (vec![0.0; 2], vec![0.0; 4]);
        differences_to_gradient(&x, 2, &scores, &mut p, &mut grad);
        assert_eq!(p, vec![f(&x[..2]), f(&x[2..])]);
        let expected = [2.0 * 2.0 + 5.0, 3.0 + 2.0, 2.0 * -40.0 + 0.5, 3.0 - 40.0];
        for (g, e) in grad.iter().zip(expected) {
            assert!((g - e).abs() < 1e-6, "{grad:?} against {expected:?}");
        }
    }

    #[test]
    fn the_step_grows_with_the_value() {
        assert_eq!(difference_step(0.0), 1e-3);
        assert_eq!(difference_step(-0.5), 1e-3);
        assert!((difference_step(-2000.0) - 2.0).abs() < 1e-12);
    }
}
