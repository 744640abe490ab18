//! TestSGD §4.1, Algorithm 1: rules on each sensitive feature, rule sets (at most one rule per
//! feature), and the frequent ones (support ≥ θ on the data).
//!
//! A feature with few values (categorical, or a grid of at most `bins` points) gets rules that are
//! sets of its values; any other feature is cut into `bins` equal-width bins and gets rules that are
//! runs of adjacent bins. With [`RuleShape::Subsets`] (the default) a rule is any non-empty proper
//! subset of the values (1 … |L|−1 of them) or any run of 1 … K−1 adjacent bins; with
//! [`RuleShape::Values`] it is a single value or a single bin, which is how the paper counts its
//! example (2 gender + 5 race + 10 age bins → 17 + 80 + 100 = 197 rule sets).

use fairpipe_abi::domain::{AttributeKind, Domain};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// What a single rule may be (`"subsets"` or `"values"` in the parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleShape {
    /// Subsets of values, runs of adjacent bins.
    Subsets,
    /// Single values, single bins.
    Values,
}

/// The condition of a rule on one attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The value is one of these.
    OneOf(Vec<f64>),
    /// `lower ≤ value < upper`, or `≤ upper` when `closed` (the last bin).
    Range {
        /// Inclusive lower bound.
        lower: f64,
        /// Upper bound.
        upper: f64,
        /// Whether `upper` is included.
        closed: bool,
    },
}

/// A rule: a condition on one sensitive attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Attribute index.
    pub attr: usize,
    /// Its condition.
    pub condition: Condition,
}

impl Rule {
    /// Whether `row` satisfies the rule.
    pub fn holds(&self, row: &[f64]) -> bool {
        let v = row[self.attr];
        match &self.condition {
            Condition::OneOf(values) => values.contains(&v),
            Condition::Range { lower, upper, closed } => v >= *lower && (v < *upper || (*closed && v <= *upper)),
        }
    }

    /// The rule as JSON for the report (the host decodes values to names).
    pub fn to_json(&self) -> Value {
        match &self.condition {
            Condition::OneOf(values) => json!({"attribute": self.attr, "values": values}),
            Condition::Range { lower, upper, closed } => {
                json!({"attribute": self.attr, "lower": lower, "upper": upper, "upper_inclusive": closed})
            }
        }
    }
}

/// The single rules of attribute `attr` of `domain`.
pub fn single_rules(domain: &Domain, attr: usize, bins: usize, shape: RuleShape) -> Vec<Rule> {
    let a = &domain.attributes[attr];
    let discrete = !matches!(a.kind, AttributeKind::Continuous);
    let grid = if discrete { a.grid() } else { Vec::new() };
    if discrete && (matches!(a.kind, AttributeKind::Categorical { .. }) || grid.len() <= bins) {
        let n = grid.len();
        if n < 2 {
            return Vec::new();
        }
        return match shape {
            RuleShape::Values => grid.iter().map(|&v| Rule { attr, condition: Condition::OneOf(vec![v]) }).collect(),
            RuleShape::Subsets => (1u64..(1u64 << n) - 1)
                .map(|mask| Rule { attr, condition: Condition::OneOf((0..n).filter(|i| mask >> i & 1 == 1).map(|i| grid[i]).collect()) })
                .collect(),
        };
    }
    let width = (a.upper - a.lower) / bins as f64;
    if width <= 0.0 {
        return Vec::new();
    }
    // On an integer grid a bin edge is moved up to the next grid point: `x ≥ 25.8` is `x ≥ 26`.
    let on_grid = |v: f64| if discrete { a.lower + ((v - a.lower) / a.step).ceil() * a.step } else { v };
    let edge = |i: usize| if i == bins { a.upper } else { on_grid(a.lower + width * i as f64) };
    let run = |first: usize, last: usize| Rule {
        attr,
        condition: Condition::Range { lower: edge(first), upper: edge(last + 1), closed: last + 1 == bins },
    };
    match shape {
        RuleShape::Values => (0..bins).map(|i| run(i, i)).collect(),
        RuleShape::Subsets => (0..bins)
            .flat_map(|first| (first..bins).map(move |last| (first, last)))
            .filter(|&(f, l)| !(f == 0 && l + 1 == bins))
            .map(|(f, l)| run(f, l))
            .collect(),
    }
}

/// A frequent rule set with its support.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSet {
    /// One rule per constrained attribute.
    pub rules: Vec<Rule>,
    /// Share of the data's rows satisfying every rule.
    pub support: f64,
}

impl RuleSet {
    /// Whether `row` satisfies every rule.
    pub fn holds(&self, row: &[f64]) -> bool {
        self.rules.iter().all(|r| r.holds(row))
    }
}

/// Drop every rule set whose rows on the data are exactly the rows outside an earlier one (`sex = 0`
/// after `sex = 1`): both are sampled from the same two sides of the data, so they estimate the
/// same score. Returns, per kept set, the complement that was dropped, if any.
pub fn drop_complements(sets: &mut Vec<RuleSet>, rows: &[f64], width: usize) -> Vec<Option<RuleSet>> {
    let n = rows.len() / width.max(1);
    let bits: Vec<Vec<u64>> = sets
        .iter()
        .map(|set| {
            let mut words = vec![0u64; n.div_ceil(64)];
            for (i, row) in rows.chunks_exact(width).enumerate() {
                if set.holds(row) {
                    words[i / 64] |= 1 << (i % 64);
                }
            }
            words
        })
        .collect();
    let flip = |w: &[u64]| -> Vec<u64> {
        let mut out: Vec<u64> = w.iter().map(|x| !x).collect();
        if n % 64 != 0 {
            if let Some(last) = out.last_mut() {
                *last &= (1u64 << (n % 64)) - 1;
            }
        }
        out
    };
    let mut first_of: std::collections::HashMap<&[u64], usize> = std::collections::HashMap::new();
    let mut complement_of: Vec<Option<usize>> = vec![None; sets.len()];
    let mut dropped = vec![false; sets.len()];
    for i in 0..sets.len() {
        let flipped = flip(&bits[i]);
        if let Some(&j) = first_of.get(flipped.as_slice()) {
            if !dropped[j] && complement_of[j].is_none() {
                dropped[i] = true;
                complement_of[j] = Some(i);
                continue;
            }
        }
        first_of.entry(bits[i].as_slice()).or_insert(i);
    }
    let complements: Vec<Option<RuleSet>> =
        (0..sets.len()).filter(|&i| !dropped[i]).map(|i| complement_of[i].map(|j| sets[j].clone())).collect();
    let mut k = 0;
    sets.retain(|_| {
        k += 1;
        !dropped[k - 1]
    });
    complements
}

/// Rule sets counted and kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Enumeration {
    /// Every candidate rule set: Π(|rules of s| + 1) − 1.
    pub generated: u128,
    /// The frequent ones, in enumeration order.
    pub kept: Vec<RuleSet>,
}

/// Rows satisfying a rule, as a bitset over the data.
#[derive(Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn of(rows: &[f64], width: usize, rule: &Rule) -> Self {
        let n = rows.len() / width;
        let mut words = vec![0u64; n.div_ceil(64)];
        for (i, row) in rows.chunks_exact(width).enumerate() {
            if rule.holds(row) {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        Bits(words)
    }
    fn and(&self, other: &Bits) -> Bits {
        Bits(self.0.iter().zip(&other.0).map(|(a, b)| a & b).collect())
    }
    fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// Algorithm 1 over the sensitive attributes `sensitive` of `domain`, with support measured on
/// `rows` (row-major): every combination of at most one rule per attribute, kept when its support
/// is at least `theta` and the support of its complement at least `theta_out`. Support only
/// shrinks as rules are added, so combinations are extended only from frequent prefixes (the kept
/// sets are the same as filtering the full product).
pub fn frequent_rule_sets(
    domain: &Domain,
    sensitive: &[usize],
    rows: &[f64],
    theta: f64,
    theta_out: f64,
    bins: usize,
    shape: RuleShape,
) -> Enumeration {
    let width = domain.width();
    let n = (rows.len() / width.max(1)).max(1) as f64;
    let per_attr: Vec<Vec<(Rule, Bits)>> = sensitive
        .iter()
        .map(|&a| {
            single_rules(domain, a, bins, shape)
                .into_iter()
                .map(|r| {
                    let b = Bits::of(rows, width, &r);
                    (r, b)
                })
                .collect()
        })
        .collect();
    let generated = per_attr.iter().map(|r| r.len() as u128 + 1).product::<u128>() - 1;
    let mut kept = Vec::new();
    let mut prefix: Vec<Rule> = Vec::new();
    extend(&per_attr, 0, None, &mut prefix, n, theta, &mut kept);
    kept.retain(|s| 1.0 - s.support >= theta_out);
    Enumeration { generated, kept }
}

fn extend(
    per_attr: &[Vec<(Rule, Bits)>],
    next: usize,
    bits: Option<&Bits>,
    prefix: &mut Vec<Rule>,
    n: f64,
    theta: f64,
    kept: &mut Vec<RuleSet>,
) {
    if next == per_attr.len() {
        if let Some(b) = bits {
            kept.push(RuleSet { rules: prefix.clone(), support: b.count() as f64 / n });
        }
        return;
    }
    // This attribute unconstrained.
    extend(per_attr, next + 1, bits, prefix, n, theta, kept);
    for (rule, rule_bits) in &per_attr[next] {
        let joined = match bits {
            Some(b) => b.and(rule_bits),
            None => rule_bits.clone(),
        };
        if (joined.count() as f64) / n < theta {
            continue;
        }
        prefix.push(rule.clone());
        extend(per_attr, next + 1, Some(&joined), prefix, n, theta, kept);
        prefix.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairpipe_abi::domain::Attribute;

    fn attr(name: &str, kind: AttributeKind, upper: f64) -> Attribute {
        Attribute { name: name.into(), kind, lower: 0.0, upper, step: 1.0, protected: true }
    }

    /// The paper's example schema: 2 genders, 5 races, age in 10 bins (an integer 0..=99).
    fn schema() -> Domain {
        Domain {
            attributes: vec![
                attr("gender", AttributeKind::Categorical { levels: vec!["F".into(), "M".into()] }, 1.0),
                attr("race", AttributeKind::Categorical { levels: (0..5).map(|i| format!("r{i}")).collect() }, 4.0),
                attr("age", AttributeKind::Integer, 99.0),
            ],
        }
    }

    #[test]
    fn single_values_give_the_papers_197_rule_sets() {
        let d = schema();
        let counts: Vec<usize> = (0..3).map(|a| single_rules(&d, a, 10, RuleShape::Values).len()).collect();
        assert_eq!(counts, vec![2, 5, 10]);
        // No support threshold: every combination is kept.
        let rows: Vec<f64> = (0..100).flat_map(|i| [f64::from(i % 2), f64::from(i % 5), f64::from(i)]).collect();
        let e = frequent_rule_sets(&d, &[0, 1, 2], &rows, 0.0, 0.0, 10, RuleShape::Values);
        // 17 with one feature + 80 with two + 100 with three (the paper's hand count).
        assert_eq!(e.generated, 197);
        assert_eq!(e.kept.len(), 197);
        assert_eq!(e.kept.iter().filter(|s| s.rules.len() == 1).count(), 17);
        assert_eq!(e.kept.iter().filter(|s| s.rules.len() == 2).count(), 80);
    }

    #[test]
    fn subsets_and_runs_by_hand_count() {
        let d = schema();
        // gender: {F}, {M} = 2; race: 2^5 − 2 = 30; age: runs of 1..9 adjacent bins of 10 = 55 − 1 = 54.
        let counts: Vec<usize> = (0..3).map(|a| single_rules(&d, a, 10, RuleShape::Subsets).len()).collect();
        assert_eq!(counts, vec![2, 30, 54]);
        let e = frequent_rule_sets(&d, &[0, 1, 2], &[0.0, 0.0, 0.0], 0.0, 0.0, 10, RuleShape::Subsets);
        assert_eq!(e.generated, 3 * 31 * 55 - 1);
    }

    #[test]
    fn support_threshold_keeps_exactly_the_frequent_sets() {
        let d = schema();
        // 100 rows: gender alternates, race cycles, age = row index.
        let rows: Vec<f64> = (0..100).flat_map(|i| [f64::from(i % 2), f64::from(i % 5), f64::from(i)]).collect();
        let e = frequent_rule_sets(&d, &[0, 1, 2], &rows, 0.05, 0.0, 10, RuleShape::Values);
        for set in &e.kept {
            let direct = rows.chunks(3).filter(|r| set.holds(r)).count();
            assert!((direct as f64 / 100.0 - set.support).abs() < 1e-12);
            assert!(set.support >= 0.05);
        }
        // gender ∧ race ∧ age-bin has 1 row in 100 (support 1%): none kept; every pair is.
        assert_eq!(e.kept.iter().filter(|s| s.rules.len() == 3).count(), 0);
        // gender × age bin: 10 of the 20 have 5 rows (5%), the rest... every bin of 10 ages holds 5 of each gender.
        assert_eq!(e.kept.iter().filter(|s| s.rules.len() == 2 && s.rules[0].attr == 0 && s.rules[1].attr == 2).count(), 20);
    }

    #[test]
    fn bins_are_half_open_except_the_last_and_integer_edges_sit_on_the_grid() {
        let d = schema();
        let rules = single_rules(&d, 2, 10, RuleShape::Values);
        // Width 9.9: the edge 9.9 becomes 10 on the integer grid.
        assert_eq!(rules[0].condition, Condition::Range { lower: 0.0, upper: 10.0, closed: false });
        assert!(rules[0].holds(&[0.0, 0.0, 9.0]) && !rules[0].holds(&[0.0, 0.0, 10.0]));
        assert!(rules[9].holds(&[0.0, 0.0, 99.0]));
    }

    #[test]
    fn complements_below_theta_out_are_dropped() {
        let d = schema();
        let rows: Vec<f64> = (0..100).flat_map(|i| [f64::from(u8::from(i < 97)), f64::from(i % 5), f64::from(i)]).collect();
        let all = frequent_rule_sets(&d, &[0], &rows, 0.0, 0.0, 10, RuleShape::Values);
        assert_eq!(all.kept.len(), 2);
        // gender = 1 covers 97%: its complement (3%) is below 5%.
        let kept = frequent_rule_sets(&d, &[0], &rows, 0.0, 0.05, 10, RuleShape::Values);
        assert_eq!(kept.kept.len(), 1);
        assert!((kept.kept[0].support - 0.03).abs() < 1e-12);
    }
}
