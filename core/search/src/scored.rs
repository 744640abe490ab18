//! Inputs scored together with all their protected variants, and how the search reads and emits
//! them.

use fairpipe_abi::sdk::{CaseSink, Host, PluginError};
use rand::Rng;

/// Scores of one input: `[f(x), f(x with combination 0), f(x with combination 1), …]`.
pub type Scores = Vec<f64>;

/// Score `rows` (row-major) and every protected variant of each in one model call; one [`Scores`]
/// per row.
pub fn score(host: &mut Host, rows: &[f64]) -> Result<Vec<Scores>, PluginError> {
    let flat = host.scores(rows)?;
    Ok(flat.chunks_exact(host.variants.n_variants() + 1).map(<[f64]>::to_vec).collect())
}

/// Score `rows` (row-major) and every protected variant of each in one model call, as
/// [`Host::scores`] lays them out (`[f(x), f(x with combination 0), …]` per row), without asking
/// the model again for the variant that is the row itself: a binary protected attribute costs two
/// model rows per input instead of three, so a query budget stretches further.
pub fn scores_without_own(host: &mut Host, rows: &[f64]) -> Result<Vec<f64>, PluginError> {
    let (mut batch, mut own) = (Vec::new(), Vec::new());
    host.variants.batch_without_own(rows, &mut batch, &mut own);
    let scored = host.predict(&batch)?;
    let mut out = Vec::with_capacity(own.len() * (host.variants.n_variants() + 1));
    host.variants.spread(&scored, &own, &mut out);
    Ok(out)
}

/// How many of `units` — consecutive blocks of `rows_per_unit` rows of `rows` (row-major) — the
/// query budget still affords through [`scores_without_own`] (each row costs its other protected
/// variants and itself): for a batched method to score a partial last step rather than none.
pub fn affordable_without_own(host: &Host, rows: &[f64], rows_per_unit: usize) -> usize {
    let (w, n) = (host.domain.width(), host.variants.n_variants());
    let mut left = host.queries_left();
    let mut units = 0;
    for unit in rows.chunks(rows_per_unit.max(1) * w) {
        let cost: u64 = unit.chunks_exact(w).map(|r| if host.variants.own_combo(r).is_some() { n as u64 } else { n as u64 + 1 }).sum();
        if cost > left {
            break;
        }
        left -= cost;
        units += 1;
    }
    units
}

/// IsDiscriminatory: some variant is treated differently from the input.
pub fn is_discriminatory(host: &Host, s: &[f64]) -> bool {
    s[1..].iter().any(|&q| host.variants.differs(s[0], q))
}

/// `max_diff` of the reference: the combination whose prediction is farthest from the input's
/// (the first one on ties, as `argmax`).
pub fn max_diff(s: &[f64]) -> usize {
    let mut best = 0;
    for (c, &q) in s[1..].iter().enumerate() {
        if (q - s[0]).abs() > (s[1 + best] - s[0]).abs() {
            best = c;
        }
    }
    best
}

/// `FindPair` of the reference: a combination drawn uniformly among those treated differently;
/// [`max_diff`] when there is none.
pub fn find_pair<R: Rng>(host: &Host, s: &[f64], rng: &mut R) -> usize {
    let differing: Vec<usize> = (0..s.len() - 1).filter(|&c| host.variants.differs(s[0], s[1 + c])).collect();
    if differing.is_empty() {
        max_diff(s)
    } else {
        differing[rng.gen_range(0..differing.len())]
    }
}

/// `random_pick` of the reference: index i with probability `p[i]` (cumulative sum against one
/// uniform draw; the last index if rounding leaves the draw uncovered).
pub fn random_pick<R: Rng>(p: &[f64], rng: &mut R) -> usize {
    let u: f64 = rng.gen();
    let mut cumulative = 0.0;
    for (i, &pi) in p.iter().enumerate() {
        cumulative += pi;
        if cumulative > u {
            return i;
        }
    }
    p.len() - 1
}

/// Emit `row` (scored `s`, a discriminatory input) through `sink` unless it was emitted before;
/// `true` when it was new.
pub fn found(sink: &mut CaseSink, host: &mut Host, row: &[f64], s: &[f64], origin: u32) -> Result<bool, PluginError> {
    let verdict = host.variants.verdict(s[0], &s[1..]);
    sink.emit(host, row, &verdict, origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn max_diff_takes_the_first_largest_gap() {
        assert_eq!(max_diff(&[0.6, 0.6, 0.1, 0.1, 0.9]), 1);
        assert_eq!(max_diff(&[0.6, 0.6, 0.5]), 1);
        assert_eq!(max_diff(&[0.6, 0.6]), 0);
    }

    #[test]
    fn random_pick_follows_the_probabilities() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[random_pick(&[0.2, 0.0, 0.8], &mut rng)] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!((counts[0] as f64 / 30_000.0 - 0.2).abs() < 0.01, "{counts:?}");
    }
}
