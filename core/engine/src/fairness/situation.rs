//! Situation testing by k nearest neighbours (Luong, Ruggieri and Turini, "k-NN as an
//! implementation of situation testing for discrimination discovery and prevention", KDD 2011):
//! for each applicant of a protected group who was not selected, the k applicants most like them
//! in their own group and the k most like them in the reference group; the gap between the
//! reference neighbours' selection rate and the own-group neighbours' is the evidence that this
//! applicant would have been treated better in the reference group.
//!
//! As in the paper:
//! - the distance of two applicants is the mean, over the qualification columns, of a per-column
//!   distance: for a number, the absolute difference of the two values' z-scores (mean and
//!   standard deviation over every applicant compared); for a category, 0 when equal and 1
//!   otherwise (the overlap measure);
//! - `diff(r) = p1 − p2`, with `p1` the share not selected among r's k neighbours in its own group
//!   and `p2` the same share among its k neighbours in the reference group (equivalently, the
//!   reference neighbours' selection rate minus the own neighbours'); r is flagged when
//!   `diff(r) ≥ t`;
//! - only applicants not selected are tested (a selected applicant suffered no adverse decision).
//!
//! Choices the paper leaves open, made here: r is not its own neighbour (the own-group
//! neighbours are the k nearest *other* members of its group); ties in distance go to the earlier
//! row, so that the result does not depend on thread timing; with fewer than k others in a group
//! every one of them is a neighbour (the `k` actually used is reported). The share of tested
//! applicants flagged carries a Wilson 95% interval (each applicant a Bernoulli trial; the
//! neighbourhoods overlap, so read it as a guide, not a sampling guarantee).
//!
//! ```
//! use fairpipe_core::fairness::situation::{situation_test, Qualification};
//! // One number (years of experience); group 0 is protected, group 1 the reference.
//! let years = [1.0, 2.0, 3.0, 1.0, 2.0, 3.0];
//! let group = [Some(0), Some(0), Some(0), Some(1), Some(1), Some(1)];
//! // Every protected applicant rejected, every reference applicant selected.
//! let selected = [false, false, false, true, true, true];
//! let q = [Qualification::Number(&years)];
//! let r = situation_test(&q, &group, &selected, 0, 1, 2, 0.5);
//! assert_eq!((r.tested, r.flagged.len()), (3, 3));
//! assert!(r.flagged.iter().all(|f| f.diff == 1.0));
//! ```

use rayon::prelude::*;

use crate::stats::wilson;

/// One qualification column over the applicants compared (one value per applicant).
#[derive(Debug, Clone, Copy)]
pub enum Qualification<'a> {
    /// An interval-scaled number (years, a test score): compared by z-score.
    Number(&'a [f64]),
    /// A category (its code): equal or not.
    Category(&'a [f64]),
}

impl Qualification<'_> {
    fn len(&self) -> usize {
        match self {
            Qualification::Number(v) | Qualification::Category(v) => v.len(),
        }
    }
}

/// A column ready for the distance: z-scores of a number, codes of a category.
enum Scaled {
    /// z-scores (all 0 when the column is constant).
    Number(Vec<f64>),
    /// Category codes.
    Category(Vec<f64>),
}

impl Scaled {
    /// `q` scaled for the distance, a number's mean and standard deviation taken over the
    /// applicants `compared` (rows outside them keep a value that is never read).
    fn of(q: &Qualification<'_>, compared: &[usize]) -> Scaled {
        match q {
            Qualification::Category(v) => Scaled::Category(v.to_vec()),
            Qualification::Number(v) => {
                let n = compared.len().max(1) as f64;
                let mean = compared.iter().map(|&i| v[i]).sum::<f64>() / n;
                let sd = (compared.iter().map(|&i| (v[i] - mean).powi(2)).sum::<f64>() / n).sqrt();
                Scaled::Number(v.iter().map(|x| if sd > 0.0 { (x - mean) / sd } else { 0.0 }).collect())
            }
        }
    }

    fn distance(&self, a: usize, b: usize) -> f64 {
        match self {
            Scaled::Number(z) => (z[a] - z[b]).abs(),
            Scaled::Category(c) => f64::from(u8::from(c[a] != c[b])),
        }
    }
}

/// One applicant found discriminated against: `diff ≥ t`.
#[derive(Debug, Clone, PartialEq)]
pub struct Flagged {
    /// The applicant's index among those compared.
    pub applicant: usize,
    /// The selection rate of their k neighbours in their own group.
    pub own_rate: f64,
    /// The selection rate of their k neighbours in the reference group.
    pub reference_rate: f64,
    /// `reference_rate − own_rate` (the paper's p1 − p2).
    pub diff: f64,
}

/// The result of testing one protected group against the reference group.
#[derive(Debug, Clone, PartialEq)]
pub struct SituationResult {
    /// Applicants of the protected group.
    pub count: usize,
    /// Of them, those not selected: the ones tested.
    pub tested: usize,
    /// The neighbours taken in each group: k, or fewer when a group is smaller.
    pub k_used: usize,
    /// The mean `diff` over the tested applicants (NaN when none is tested).
    pub mean_diff: f64,
    /// The tested applicants with `diff ≥ t`, in the applicants' order.
    pub flagged: Vec<Flagged>,
    /// `flagged / tested` (NaN when none is tested).
    pub share: f64,
    /// Wilson 95% interval of `share`.
    pub ci95: [f64; 2],
}

/// Tests every not-selected applicant of group `protected` against group `reference`:
/// `qualifications` are the columns compared (each one value per applicant), `group` each
/// applicant's group (`None`: unknown, in neither group), `selected` each one's decision, `k` the
/// neighbours per group and `t` the gap that flags an applicant.
///
/// # Panics
/// When the columns, groups and decisions differ in length (a caller's bug).
pub fn situation_test(
    qualifications: &[Qualification<'_>],
    group: &[Option<usize>],
    selected: &[bool],
    protected: usize,
    reference: usize,
    k: usize,
    t: f64,
) -> SituationResult {
    let n = group.len();
    assert_eq!(selected.len(), n, "one decision per applicant");
    assert!(qualifications.iter().all(|q| q.len() == n), "one value per applicant in every column");
    // The z-scores are over every applicant compared: both groups.
    let members = |g: usize| -> Vec<usize> { (0..n).filter(|&i| group[i] == Some(g)).collect() };
    let own_group = members(protected);
    let reference_group = members(reference);
    let compared: Vec<usize> = (0..n).filter(|&i| group[i] == Some(protected) || group[i] == Some(reference)).collect();
    let scaled: Vec<Scaled> = qualifications.iter().map(|q| Scaled::of(q, &compared)).collect();
    let m = scaled.len().max(1) as f64;
    let distance = |a: usize, b: usize| scaled.iter().map(|s| s.distance(a, b)).sum::<f64>() / m;
    let k_used = k.min(own_group.len().saturating_sub(1)).min(reference_group.len());
    // The selection rate of the k nearest of `r` among `pool` (r itself left out).
    let rate_of_nearest = |r: usize, pool: &[usize]| -> f64 {
        let mut d: Vec<(f64, usize)> = pool.iter().filter(|&&i| i != r).map(|&i| (distance(r, i), i)).collect();
        if k_used == 0 || d.is_empty() {
            return f64::NAN;
        }
        let by = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        if d.len() > k_used {
            d.select_nth_unstable_by(k_used - 1, by);
            d.truncate(k_used);
        }
        d.iter().filter(|(_, i)| selected[*i]).count() as f64 / d.len() as f64
    };
    let tested: Vec<usize> = own_group.iter().copied().filter(|&i| !selected[i]).collect();
    let diffs: Vec<Flagged> = tested
        .par_iter()
        .map(|&r| {
            let own_rate = rate_of_nearest(r, &own_group);
            let reference_rate = rate_of_nearest(r, &reference_group);
            Flagged { applicant: r, own_rate, reference_rate, diff: reference_rate - own_rate }
        })
        .collect();
    let mean_diff = if diffs.is_empty() { f64::NAN } else { diffs.iter().map(|f| f.diff).sum::<f64>() / diffs.len() as f64 };
    let flagged: Vec<Flagged> = diffs.into_iter().filter(|f| f.diff >= t).collect();
    let share = if tested.is_empty() { f64::NAN } else { flagged.len() as f64 / tested.len() as f64 };
    SituationResult {
        count: own_group.len(),
        tested: tested.len(),
        k_used,
        mean_diff,
        ci95: if tested.is_empty() { [f64::NAN; 2] } else { wilson(flagged.len(), tested.len(), 1.96) },
        flagged,
        share,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A brute-force reading of the paper's definitions, written apart from the code above: every
    /// distance computed, sorted, the first k taken.
    fn by_hand(x: &[f64], cat: &[f64], group: &[Option<usize>], selected: &[bool], r: usize, pool: usize, k: usize) -> f64 {
        let idx: Vec<usize> = (0..x.len()).filter(|&i| group[i].is_some()).collect();
        let mean = idx.iter().map(|&i| x[i]).sum::<f64>() / idx.len() as f64;
        let sd = (idx.iter().map(|&i| (x[i] - mean).powi(2)).sum::<f64>() / idx.len() as f64).sqrt();
        let mut d: Vec<(f64, usize)> = (0..x.len())
            .filter(|&i| i != r && group[i] == Some(pool))
            .map(|i| ((((x[i] - x[r]) / sd).abs() + if cat[i] == cat[r] { 0.0 } else { 1.0 }) / 2.0, i))
            .collect();
        d.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        d.truncate(k);
        d.iter().filter(|(_, i)| selected[*i]).count() as f64 / k as f64
    }

    #[test]
    fn every_diff_equals_a_brute_force_reading_of_the_definition() {
        // 60 applicants in two groups with a number and a category; decisions from a rule that
        // favours group 1.
        let mut x = Vec::new();
        let mut cat = Vec::new();
        let mut group = Vec::new();
        let mut selected = Vec::new();
        for i in 0..60usize {
            let v = ((i * 37) % 23) as f64 + 0.5 * (i % 3) as f64;
            x.push(v);
            cat.push((i % 4) as f64);
            group.push(Some(i % 2));
            selected.push(v + if i % 2 == 1 { 6.0 } else { 0.0 } > 14.0);
        }
        let q = [Qualification::Number(&x), Qualification::Category(&cat)];
        let k = 5;
        let r = situation_test(&q, &group, &selected, 0, 1, k, 0.0);
        assert_eq!(r.count, 30);
        assert_eq!(r.tested, (0..60).filter(|&i| i % 2 == 0 && !selected[i]).count());
        // t = 0: every tested applicant with a non-negative diff is listed; check each listed one.
        assert!(!r.flagged.is_empty());
        for f in &r.flagged {
            let own = by_hand(&x, &cat, &group, &selected, f.applicant, 0, k);
            let reference = by_hand(&x, &cat, &group, &selected, f.applicant, 1, k);
            assert!((f.own_rate - own).abs() < 1e-12 && (f.reference_rate - reference).abs() < 1e-12, "applicant {}", f.applicant);
        }
        // A higher t flags a subset.
        let strict = situation_test(&q, &group, &selected, 0, 1, k, 0.6);
        assert!(strict.flagged.len() < r.flagged.len());
        assert!(strict.flagged.iter().all(|f| f.diff >= 0.6 && r.flagged.contains(f)));
    }

    #[test]
    fn equal_treatment_flags_no_one_and_unknown_applicants_are_in_neither_group() {
        let x: Vec<f64> = (0..40).map(|i| (i / 2) as f64).collect();
        let group: Vec<Option<usize>> = (0..40).map(|i| if i == 7 { None } else { Some(i % 2) }).collect();
        // The same threshold for both groups.
        let selected: Vec<bool> = x.iter().map(|v| *v >= 10.0).collect();
        let r = situation_test(&[Qualification::Number(&x)], &group, &selected, 0, 1, 3, 0.5);
        assert_eq!(r.count, 20);
        assert!(r.flagged.is_empty(), "{:?}", r.flagged);
        assert_eq!(r.share, 0.0);
        assert!(r.ci95[0] == 0.0 && r.ci95[1] > 0.0);
    }

    #[test]
    fn a_group_smaller_than_k_uses_every_member() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let group = [Some(0), Some(0), Some(1), Some(1)];
        let selected = [false, false, true, false];
        let r = situation_test(&[Qualification::Number(&x)], &group, &selected, 0, 1, 8, 0.1);
        assert_eq!(r.k_used, 1);
        assert_eq!(r.tested, 2);
    }
}
