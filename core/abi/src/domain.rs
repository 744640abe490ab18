//! The input domain of a model under test: one [`Attribute`] per feature, with its kind, bounds, step
//! and whether it is protected. Rows are encoded as `f64` (categories as level indices).

use rand::Rng;
use serde::Serialize;

/// What values an attribute takes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttributeKind {
    /// Whole numbers between the bounds, on the grid `lower + k * step`.
    Integer,
    /// Any real number between the bounds; `step` is the perturbation size and the grid used when
    /// the attribute is protected and its values must be enumerated.
    Continuous,
    /// One of a fixed list of levels, encoded as the level's index counted from `lower` (0 unless
    /// declared codes start elsewhere: level `k` is `lower + k`).
    Categorical {
        /// Level names in encoding order (index = encoded value − `lower`).
        levels: Vec<String>,
    },
}

/// One feature of the domain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attribute {
    /// Column name in the data.
    pub name: String,
    /// Integer, continuous or categorical.
    #[serde(flatten)]
    pub kind: AttributeKind,
    /// Smallest encoded value.
    pub lower: f64,
    /// Largest encoded value.
    pub upper: f64,
    /// Grid step (1 for integers and categories).
    pub step: f64,
    /// Whether the attribute is protected (sex, race, age…).
    pub protected: bool,
}

impl Attribute {
    /// A whole-number attribute from `lower` to `upper` in steps of 1.
    pub fn integer(name: &str, lower: f64, upper: f64, protected: bool) -> Self {
        Attribute { name: name.into(), kind: AttributeKind::Integer, lower, upper, step: 1.0, protected }
    }

    /// A categorical attribute whose values are coded 0, 1, … in the order of `levels`.
    pub fn categorical(name: &str, levels: Vec<String>, protected: bool) -> Self {
        let upper = levels.len().saturating_sub(1) as f64;
        Attribute { name: name.into(), kind: AttributeKind::Categorical { levels }, lower: 0.0, upper, step: 1.0, protected }
    }

    /// Every value on the attribute's grid from `lower` to `upper`. Allocates [`Attribute::grid_len`]
    /// values: the host bounds the grids of protected attributes before any stage enumerates them.
    pub fn grid(&self) -> Vec<f64> {
        let n = self.grid_len();
        (0..n).map(|k| self.lower + k as f64 * self.step).collect()
    }

    /// Number of values on the grid (1 for a degenerate or non-finite range, saturating at
    /// `usize::MAX` for a grid too large to count).
    pub fn grid_len(&self) -> usize {
        if self.step.is_nan() || self.step <= 0.0 || self.lower.is_nan() || self.upper.is_nan() || self.upper < self.lower {
            return 1;
        }
        let steps = ((self.upper - self.lower) / self.step + 1e-9).floor();
        if !steps.is_finite() || steps >= usize::MAX as f64 {
            return usize::MAX;
        }
        (steps as usize).saturating_add(1)
    }

    /// Clamp `v` into the bounds and, unless continuous, onto the grid.
    pub fn clip(&self, v: f64) -> f64 {
        if self.lower.is_nan() || self.upper.is_nan() || self.lower > self.upper {
            return v;
        }
        let clamped = v.clamp(self.lower, self.upper);
        match self.kind {
            AttributeKind::Continuous => clamped,
            _ => {
                let k = ((clamped - self.lower) / self.step).round();
                (self.lower + k * self.step).min(self.upper)
            }
        }
    }

    /// Draw a value uniformly from the attribute's range (grid values for discrete kinds).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self.kind {
            AttributeKind::Continuous => {
                if self.upper > self.lower && (self.upper - self.lower).is_finite() {
                    rng.gen_range(self.lower..=self.upper)
                } else if self.upper > self.lower && self.lower.is_finite() && self.upper.is_finite() {
                    // `gen_range` panics when `upper - lower` overflows (bounds near ±f64::MAX):
                    // interpolate instead.
                    let u: f64 = rng.gen();
                    (self.lower * (1.0 - u) + self.upper * u).clamp(self.lower, self.upper)
                } else {
                    self.lower
                }
            }
            _ => (self.lower + rng.gen_range(0..self.grid_len()) as f64 * self.step).min(self.upper),
        }
    }

    /// Human-readable form of an encoded value: the level name for categories, the number otherwise.
    pub fn decode(&self, v: f64) -> String {
        match &self.kind {
            AttributeKind::Categorical { levels } => {
                let idx = (v - if self.lower.is_finite() { self.lower } else { 0.0 }).round();
                if idx >= 0.0 && (idx as usize) < levels.len() {
                    levels[idx as usize].clone()
                } else {
                    format!("<level {v}>")
                }
            }
            AttributeKind::Integer => format!("{}", v.round() as i64),
            AttributeKind::Continuous => format!("{v}"),
        }
    }

    /// Short name of the kind, for tables and messages.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            AttributeKind::Integer => "integer",
            AttributeKind::Continuous => "continuous",
            AttributeKind::Categorical { .. } => "categorical",
        }
    }
}

/// The attributes of a model's input, in model-input order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Domain {
    /// One entry per feature column.
    pub attributes: Vec<Attribute>,
}

impl Domain {
    /// Number of features.
    pub fn width(&self) -> usize {
        self.attributes.len()
    }

    /// Indices of the protected attributes.
    pub fn protected_indices(&self) -> Vec<usize> {
        (0..self.width()).filter(|&i| self.attributes[i].protected).collect()
    }

    /// Indices of the attributes that are not protected.
    pub fn free_indices(&self) -> Vec<usize> {
        (0..self.width()).filter(|&i| !self.attributes[i].protected).collect()
    }

    /// Index of the attribute called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.attributes.iter().position(|a| a.name == name)
    }

    /// Every combination of protected values (cartesian product over the protected attributes'
    /// grids), each as one value per protected attribute in [`Domain::protected_indices`] order.
    /// Allocates [`Domain::protected_combination_count`] rows, which the host bounds before any
    /// stage runs.
    pub fn protected_combinations(&self) -> Vec<Vec<f64>> {
        let mut combos: Vec<Vec<f64>> = vec![Vec::new()];
        for idx in self.protected_indices() {
            let grid = self.attributes[idx].grid();
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    grid.iter().map(move |&v| {
                        let mut next = c.clone();
                        next.push(v);
                        next
                    })
                })
                .collect();
        }
        combos
    }

    /// Clamp every value of a row into its attribute's bounds and grid.
    pub fn clip_row(&self, row: &mut [f64]) {
        for (v, a) in row.iter_mut().zip(&self.attributes) {
            *v = a.clip(*v);
        }
    }

    /// TestSGD's small move (§4.3): one attribute drawn uniformly from `candidates`, moved by ± its
    /// step (a fair coin), clipped to the domain. Nothing happens when `candidates` is empty.
    pub fn nudge<R: Rng + ?Sized>(&self, row: &mut [f64], candidates: &[usize], rng: &mut R) {
        if candidates.is_empty() {
            return;
        }
        let a = candidates[rng.gen_range(0..candidates.len())];
        let dir = if rng.gen::<bool>() { 1.0 } else { -1.0 };
        let attr = &self.attributes[a];
        row[a] = attr.clip(row[a] + dir * attr.step);
    }

    /// Fill `out` (row-major, `n` rows) with rows drawn uniformly from the domain.
    pub fn sample_rows<R: Rng + ?Sized>(&self, rng: &mut R, n: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(n * self.width());
        for _ in 0..n {
            for a in &self.attributes {
                out.push(a.sample(rng));
            }
        }
        out
    }

    /// Number of protected combinations (the product of the protected attributes' grid sizes),
    /// `None` when it overflows; what [`Domain::protected_combinations`] would allocate.
    pub fn protected_combination_count(&self) -> Option<u128> {
        let mut total: u128 = 1;
        for i in self.protected_indices() {
            total = total.checked_mul(self.attributes[i].grid_len() as u128)?;
        }
        Some(total)
    }

    /// Number of points in the domain when every attribute is discrete, `None` when any is
    /// continuous or the count overflows.
    pub fn size(&self) -> Option<u128> {
        let mut total: u128 = 1;
        for a in &self.attributes {
            if matches!(a.kind, AttributeKind::Continuous) {
                return None;
            }
            total = total.checked_mul(a.grid_len() as u128)?;
        }
        Some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(name: &str, lo: f64, hi: f64, protected: bool) -> Attribute {
        Attribute::integer(name, lo, hi, protected)
    }

    #[test]
    fn protected_combinations_are_the_cartesian_product() {
        let d = Domain { attributes: vec![int("a", 0.0, 3.0, false), int("sex", 0.0, 1.0, true), int("race", 0.0, 2.0, true)] };
        let combos = d.protected_combinations();
        assert_eq!(combos.len(), 6);
        assert_eq!(combos[0], vec![0.0, 0.0]);
        assert_eq!(combos[5], vec![1.0, 2.0]);
        assert_eq!(d.size(), Some(24));
    }

    #[test]
    fn categories_coded_from_one_decode_by_their_offset() {
        let levels = vec!["17–25".to_string(), "26–45".to_string()];
        let a = Attribute { kind: AttributeKind::Categorical { levels }, ..int("age", 1.0, 2.0, true) };
        assert_eq!((a.decode(1.0), a.decode(2.0), a.decode(0.0)), ("17–25".into(), "26–45".into(), "<level 0>".into()));
    }

    #[test]
    fn clip_clamps_and_rounds_to_grid() {
        let a = Attribute { step: 2.0, ..int("x", 1.0, 9.0, false) };
        assert_eq!(a.clip(4.2), 5.0);
        assert_eq!(a.clip(-3.0), 1.0);
        assert_eq!(a.clip(40.0), 9.0);
        assert_eq!(a.grid(), vec![1.0, 3.0, 5.0, 7.0, 9.0]);
    }
}
