//! Solving a path constraint (a conjunction of predicates `x_f < v` / `x_f ≥ v`) within the domain
//! for the input closest in L1 distance to a reference input — the FSE'19 "sticky" solution, so that
//! attributes the constraint does not mention keep their values.
//!
//! The linear program (good_lp with clarabel, a pure-Rust interior-point solver): variables x_i in
//! the domain bounds tightened by the predicates, d_i ≥ |x_i − ref_i|, minimise Σ d_i. Strict
//! inequalities are tightened before solving: on an integer or categorical grid `x < v` becomes
//! `x ≤` the largest grid point below v, and `x ≥ v` becomes `x ≥` the smallest grid point from v;
//! on a continuous attribute `x < v` becomes `x ≤ v − 1e-6·(upper − lower)`. Clarabel is continuous
//! only, so integer attributes are handled by this tightening followed by rounding each solution
//! value to the grid (the tightened bounds are grid points, so rounding cannot leave them) and
//! re-checking every predicate: a solution that fails the check is dropped. An empty bound
//! interval is infeasible without calling the solver.

use fairpipe_abi::domain::{AttributeKind, Domain};
use good_lp::{clarabel, constraint, variable, variables, Expression, Solution, SolverModel};

use crate::explain::Predicate;

/// The solution of `constraint` closest to `reference`, or `None` when infeasible.
pub fn closest(domain: &Domain, constraint: &[Predicate], reference: &[f64]) -> Option<Vec<f64>> {
    let width = domain.width();
    let mut lower: Vec<f64> = domain.attributes.iter().map(|a| a.lower).collect();
    let mut upper: Vec<f64> = domain.attributes.iter().map(|a| a.upper).collect();
    for p in constraint {
        let a = &domain.attributes[p.feature];
        let discrete = !matches!(a.kind, AttributeKind::Continuous);
        if p.less {
            let bound = if discrete {
                // Largest grid point strictly below the threshold.
                let k = ((p.threshold - a.lower) / a.step).ceil() - 1.0;
                a.lower + k * a.step
            } else {
                p.threshold - 1e-6 * (a.upper - a.lower).max(1e-9)
            };
            upper[p.feature] = upper[p.feature].min(bound);
        } else {
            let bound = if discrete { a.lower + ((p.threshold - a.lower) / a.step).ceil() * a.step } else { p.threshold };
            lower[p.feature] = lower[p.feature].max(bound);
        }
    }
    if (0..width).any(|i| lower[i] > upper[i] + 1e-12) {
        return None;
    }
    let mut vars = variables!();
    let x: Vec<_> = (0..width).map(|i| vars.add(variable().min(lower[i]).max(upper[i]))).collect();
    let d: Vec<_> = (0..width).map(|_| vars.add(variable().min(0.0))).collect();
    let objective: Expression = d.iter().copied().sum();
    let mut problem = vars.minimise(objective).using(clarabel);
    for i in 0..width {
        problem = problem.with(constraint!(x[i] - reference[i] <= d[i])).with(constraint!(reference[i] - x[i] <= d[i]));
    }
    let solution = problem.solve().ok()?;
    let mut out: Vec<f64> = (0..width)
        .map(|i| {
            let v = solution.value(x[i]).clamp(lower[i], upper[i]);
            let a = &domain.attributes[i];
            if matches!(a.kind, AttributeKind::Continuous) {
                v
            } else {
                a.clip(v)
            }
        })
        .collect();
    // Untouched attributes keep their exact value (the solver returns them to within ~1e-8).
    for i in 0..width {
        if (out[i] - reference[i]).abs() < 1e-6 && reference[i] >= lower[i] && reference[i] <= upper[i] {
            out[i] = reference[i];
        }
    }
    constraint.iter().all(|p| p.holds(&out)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairpipe_abi::domain::Attribute;

    fn domain() -> Domain {
        let a = |name: &str, kind: AttributeKind, upper: f64| Attribute {
            name: name.into(),
            kind,
            lower: 0.0,
            upper,
            step: 1.0,
            protected: false,
        };
        Domain {
            attributes: vec![
                a("age", AttributeKind::Integer, 9.0),
                a("hours", AttributeKind::Integer, 9.0),
                a("rate", AttributeKind::Continuous, 1.0),
            ],
        }
    }

    fn pred(feature: usize, threshold: f64, less: bool) -> Predicate {
        Predicate { feature, threshold, less, confidence: 1.0 }
    }

    #[test]
    fn the_solution_is_the_closest_point_of_the_box_and_sticks_elsewhere() {
        let d = domain();
        // age ≥ 6.5 and hours < 2.5: the closest integer point to (3, 7, 0.4) is (7, 2, 0.4).
        let s = closest(&d, &[pred(0, 6.5, false), pred(1, 2.5, true)], &[3.0, 7.0, 0.4]).unwrap();
        assert_eq!(s, vec![7.0, 2.0, 0.4]);
        // A continuous attribute lands just inside a strict bound.
        let s = closest(&d, &[pred(2, 0.25, true)], &[3.0, 7.0, 0.4]).unwrap();
        assert!(s[2] < 0.25 && s[2] > 0.2499, "{s:?}");
        assert_eq!((s[0], s[1]), (3.0, 7.0));
    }

    #[test]
    fn contradictions_and_empty_grid_intervals_are_infeasible() {
        let d = domain();
        assert!(closest(&d, &[pred(0, 5.0, true), pred(0, 6.0, false)], &[3.0, 3.0, 0.5]).is_none());
        // 4.2 ≤ age < 4.9 holds no integer.
        assert!(closest(&d, &[pred(0, 4.2, false), pred(0, 4.9, true)], &[3.0, 3.0, 0.5]).is_none());
        // Beyond the domain.
        assert!(closest(&d, &[pred(1, 9.5, false)], &[3.0, 3.0, 0.5]).is_none());
    }
}
