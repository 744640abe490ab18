//! The setting a plugin is checked in: a small domain with one protected attribute, seed rows, and
//! a model whose discrimination is known by construction, so every emitted case can be refuted or
//! confirmed independently of the plugin.

use std::sync::Arc;

use fairpipe_ffi::{attribute_kind, FfiBudget};
use serde_json::Value;

/// One attribute of the domain, as the host describes it to a plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeSpec {
    /// Column name.
    pub name: String,
    /// One of `fairpipe_ffi::attribute_kind`.
    pub kind: u32,
    /// Whether it is protected.
    pub protected: bool,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Grid step.
    pub step: f64,
}

/// The model under test: P(favourable) of one row.
pub type ModelFn = Arc<dyn Fn(&[f64]) -> f64 + Send + Sync>;

/// One emitted case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The instance.
    pub instance: Vec<f64>,
    /// Its counterpart.
    pub counterpart: Vec<f64>,
    /// The plugin's P(favourable) of the instance.
    pub p: f64,
    /// The plugin's P(favourable) of the counterpart.
    pub p_counterpart: f64,
    /// Origin code.
    pub origin: u32,
}

/// Everything a conformance run needs.
#[derive(Clone)]
pub struct Setup {
    /// The domain.
    pub attributes: Vec<AttributeSpec>,
    /// Seed rows, row-major (for an auditor: the data's rows).
    pub seeds: Vec<f64>,
    /// The model.
    pub model: ModelFn,
    /// The plugin parameters of the plain runs (usually `{}`: the defaults).
    pub params: Value,
    /// γ of Aequitas Definition 4.1 (`None`: compare labels).
    pub gamma: Option<f64>,
    /// The budget of every run.
    pub budget: FfiBudget,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("attributes", &self.attributes)
            .field("seeds", &(self.seeds.len() / self.attributes.len().max(1)))
            .finish()
    }
}

impl Setup {
    /// Four integer attributes `a`, `b` in 0..=9 and `c` in 0..=4, the protected binary
    /// categorical `sex`, and a model that favours `a + b + 4·sex ≥ 10` (a logistic of that sum):
    /// rows with 6 ≤ a + b ≤ 9 are discriminatory by construction. 400 seed rows drawn uniformly
    /// with a fixed seed; default parameters.
    pub fn planted() -> Setup {
        let int = |name: &str, upper: f64| AttributeSpec {
            name: name.into(),
            kind: attribute_kind::INTEGER,
            protected: false,
            lower: 0.0,
            upper,
            step: 1.0,
        };
        let attributes = vec![
            int("a", 9.0),
            int("b", 9.0),
            int("c", 4.0),
            AttributeSpec { name: "sex".into(), kind: attribute_kind::CATEGORICAL, protected: true, lower: 0.0, upper: 1.0, step: 1.0 },
        ];
        let mut state = 0x5eed_u64;
        let mut seeds = Vec::new();
        for _ in 0..400 {
            for a in &attributes {
                let levels = ((a.upper - a.lower) / a.step) as u64 + 1;
                seeds.push(a.lower + (splitmix(&mut state) % levels) as f64 * a.step);
            }
        }
        let model: ModelFn = Arc::new(|row: &[f64]| {
            let z = row[0] + row[1] + 4.0 * row[3] - 9.5;
            1.0 / (1.0 + (-2.0 * z).exp())
        });
        Setup { attributes, seeds, model, params: Value::Object(Default::default()), gamma: None, budget: crate::default_budget() }
    }

    /// Why `case` is not a real discriminatory case, if it is not.
    pub fn refute(&self, case: &Case) -> Option<String> {
        if case.instance.len() != self.attributes.len() || case.counterpart.len() != self.attributes.len() {
            return Some(format!("a case of {} values for {} attributes", case.instance.len(), self.attributes.len()));
        }
        for (j, a) in self.attributes.iter().enumerate() {
            let (x, y) = (case.instance[j], case.counterpart[j]);
            if !a.protected && x != y {
                return Some(format!("the counterpart of {:?} differs in the unprotected `{}`", case.instance, a.name));
            }
            if !(a.lower..=a.upper).contains(&x) || !(a.lower..=a.upper).contains(&y) {
                return Some(format!("the case {:?} / {:?} leaves the bounds of `{}`", case.instance, case.counterpart, a.name));
            }
        }
        let (p, q) = ((self.model)(&case.instance), (self.model)(&case.counterpart));
        let differs = match self.gamma {
            Some(g) => (p - q).abs() > g,
            None => (p > 0.5) != (q > 0.5),
        };
        (!differs).then(|| format!("the case {:?} / {:?} is not discriminatory (p = {p}, {q})", case.instance, case.counterpart))
    }
}

/// SplitMix64: a tiny fixed generator for the seed rows (no dependency on the SDK's RNG).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planted_model_discriminates_exactly_where_constructed() {
        let s = Setup::planted();
        let case = |a: f64, b: f64| Case {
            instance: vec![a, b, 0.0, 0.0],
            counterpart: vec![a, b, 0.0, 1.0],
            p: 0.0,
            p_counterpart: 0.0,
            origin: 0,
        };
        assert!(s.refute(&case(3.0, 4.0)).is_none(), "a + b = 7 flips with sex");
        assert!(s.refute(&case(9.0, 9.0)).is_some(), "a + b = 18 is favourable either way");
        assert!(s.refute(&case(1.0, 2.0)).is_some(), "a + b = 3 is unfavourable either way");
        let mut moved = case(3.0, 4.0);
        moved.counterpart[2] = 1.0;
        assert!(s.refute(&moved).unwrap().contains("unprotected `c`"));
        assert_eq!(s.seeds.len(), 400 * 4);
    }
}
