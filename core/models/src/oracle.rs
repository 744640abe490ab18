//! The [`Oracle`]: every model under test, native or ONNX, behind one thread-safe, batched,
//! query-counting `predict_proba`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::ModelError;
use crate::score_cache::{CacheChoice, CacheSwitch, ScoreCache};

/// The trait the oracle calls, defined beside the executors in `models` (re-exported here, where
/// callers of the oracle look for it).
pub use crate::Model;

/// How the oracle computes a model's gradient for white-box methods (the generate stage's
/// `gradient` figure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradientMethod {
    /// Back-propagated through a network or a linear model run in this process.
    Exact,
    /// Central finite differences of P(class 1) ([`fairpipe_abi::gradient`]).
    FiniteDifferences,
}

impl GradientMethod {
    /// `"exact"` or `"finite_differences"`.
    pub fn name(self) -> &'static str {
        match self {
            GradientMethod::Exact => "exact",
            GradientMethod::FiniteDifferences => "finite_differences",
        }
    }
}

/// Rows per chunk when a large batch is spread over threads.
const PARALLEL_CHUNK: usize = 1024;

/// Rows per call for callers that merge their work, unless the model prefers more
/// ([`Model::rows_per_call`]).
pub const ROWS_PER_CALL: usize = 8192;

/// A model plus counters of how often and with how many rows it was queried, and the shared
/// cache of scored rows its plugins' queries go through ([`crate::score_cache`]).
#[derive(Clone)]
pub struct Oracle {
    model: Arc<dyn Model>,
    counters: Arc<Counters>,
    cache: Option<Arc<ScoreCache>>,
    /// `cache = "auto"`'s switch, when the cache may step aside for a cheap model.
    switch: Option<Arc<CacheSwitch>>,
}

/// What one call of [`Oracle::predict_proba_cached_into`] did with its rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheTally {
    /// Rows asked for.
    pub asked: u64,
    /// Rows sent to the model.
    pub scored: u64,
    /// Rows answered without the model: from the cache, or as a copy of the same row earlier in
    /// the call (`asked = scored + hits`).
    pub hits: u64,
}

impl CacheTally {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: CacheTally) {
        self.asked += other.asked;
        self.scored += other.scored;
        self.hits += other.hits;
    }
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    rows: AtomicU64,
    busy_nanos: AtomicU64,
}

impl std::fmt::Debug for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Oracle({}, {} calls, {} rows)", self.model.describe(), self.calls(), self.rows())
    }
}

impl Oracle {
    /// Wrap a model, with a score cache of the capacity `FAIRPIPE_CACHE_ROWS` gives (default
    /// [`crate::score_cache::DEFAULT_CACHE_ROWS`]; an unreadable value is refused by the stages
    /// that use the cache, and the default is used here).
    pub fn new(model: Arc<dyn Model>) -> Self {
        let rows = ScoreCache::capacity_from_env().unwrap_or(crate::score_cache::DEFAULT_CACHE_ROWS);
        Self::with_cache_rows(model, rows)
    }

    /// Wrap a model with a score cache of at most `rows` rows (`0`: no cache).
    pub fn with_cache_rows(model: Arc<dyn Model>, rows: usize) -> Self {
        let cache = (rows > 0).then(|| Arc::new(ScoreCache::new(rows)));
        Oracle { model, counters: Arc::default(), cache, switch: None }
    }

    /// The same model and counters, without the score cache: every row asked for through
    /// [`Oracle::predict_proba_cached_into`] is sent to the model.
    pub fn without_cache(&self) -> Self {
        Oracle { model: Arc::clone(&self.model), counters: Arc::clone(&self.counters), cache: None, switch: None }
    }

    /// The same model and counters with a new, empty score cache of the same capacity as this
    /// one's (or, when this one has none, the capacity `FAIRPIPE_CACHE_ROWS` gives). The host gives
    /// each plugin run its own ([`crate::score_cache`] says why).
    pub fn with_fresh_cache(&self) -> Self {
        let rows = match &self.cache {
            Some(cache) => cache.capacity(),
            None => ScoreCache::capacity_from_env().unwrap_or(crate::score_cache::DEFAULT_CACHE_ROWS),
        };
        let cache = (rows > 0).then(|| Arc::new(ScoreCache::new(rows)));
        Oracle { model: Arc::clone(&self.model), counters: Arc::clone(&self.counters), cache, switch: None }
    }

    /// The oracle one plugin run asks through, as a `cache` key chooses: without a cache
    /// (`Off`), with a fresh one (`On`), or (`Auto`) with a fresh one that, for a model whose cost
    /// per row is known ([`Model::multiply_adds_per_row`]), steps aside after a warm-up when too
    /// few rows repeat to pay for the look-ups ([`CacheSwitch`]).
    pub fn for_plugin_run(&self, choice: CacheChoice) -> Self {
        match choice {
            CacheChoice::Off => self.without_cache(),
            CacheChoice::On => self.with_fresh_cache(),
            CacheChoice::Auto => {
                let mut oracle = self.with_fresh_cache();
                if oracle.cache.is_some() {
                    oracle.switch = self.model.multiply_adds_per_row().map(|m| Arc::new(CacheSwitch::new(m)));
                }
                oracle
            }
        }
    }

    /// After a plugin run through [`Oracle::for_plugin_run`]`(choice)`: whether a cache answered
    /// its queries (for some of them at least), and what was done and why, in words.
    pub fn cache_choice(&self, choice: CacheChoice) -> (bool, String) {
        match (&self.cache, &self.switch) {
            (None, _) if choice == CacheChoice::Off => (false, "off (cache = false)".into()),
            (None, _) => (false, format!("off ({} = 0)", crate::score_cache::CACHE_ROWS_ENV)),
            (Some(_), Some(switch)) => (true, switch.describe()),
            (Some(_), None) if choice == CacheChoice::On => (true, "on (cache = true)".into()),
            (Some(_), None) => (true, "on (auto: the model's cost per row is not known here)".into()),
        }
    }

    /// The score cache, when there is one.
    pub fn cache(&self) -> Option<&Arc<ScoreCache>> {
        self.cache.as_ref()
    }

    /// As [`Oracle::predict_proba_into`], through the score cache: rows already scored (or
    /// repeated within `x`) are answered from it, the others are scored in one batch and
    /// remembered. Without a cache every row is scored. Returns what happened to the rows.
    pub fn predict_proba_cached_into(&self, x: &[f64], out: &mut [f64]) -> Result<CacheTally, ModelError> {
        let width = self.n_features();
        let rows = out.len();
        // `cache = "auto"` sends the rows past the cache while too few repeat to pay for it, and
        // counts every call's repeats once the call is answered.
        let switched_off = self.switch.as_ref().is_some_and(|s| s.is_off());
        let scored = match self.cache.as_deref().filter(|_| width > 0 && rows > 0 && !switched_off) {
            None => {
                self.predict_proba_into(x, out)?;
                rows as u64
            }
            Some(cache) => {
                if x.len() != rows * width {
                    return Err(ModelError::Width { expected: width, found: x.len() / rows });
                }
                cache.answer(x, width, out, |batch, answers| self.predict_proba_into(&batch, answers))? as u64
            }
        };
        if let Some(switch) = &self.switch {
            switch.record(x, width);
        }
        Ok(CacheTally { asked: rows as u64, scored, hits: rows as u64 - scored })
    }

    /// The wrapped model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    /// Number of input features.
    pub fn n_features(&self) -> usize {
        self.model.n_features()
    }

    /// Rows a call should carry when the caller can merge its work: [`ROWS_PER_CALL`], or more
    /// when the model says so ([`Model::rows_per_call`]).
    pub fn rows_per_call(&self) -> usize {
        self.model.rows_per_call().map_or(ROWS_PER_CALL, |rows| rows.max(ROWS_PER_CALL))
    }

    /// P(class 1) for each row of `x` (row-major). Batches larger than a few thousand rows are split
    /// across the rayon pool. Counts one call and `rows` rows.
    pub fn predict_proba(&self, x: &[f64]) -> Result<Vec<f64>, ModelError> {
        let mut out = vec![0.0; x.len() / self.n_features().max(1)];
        self.predict_proba_into(x, &mut out)?;
        Ok(out)
    }

    /// As [`Oracle::predict_proba`], writing into `out` (one slot per row).
    pub fn predict_proba_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.n_features();
        if x.len() != out.len() * width {
            return Err(ModelError::Width { expected: width, found: if out.is_empty() { 0 } else { x.len() / out.len() } });
        }
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        self.counters.rows.fetch_add(out.len() as u64, Ordering::Relaxed);
        let started = Instant::now();
        let result = if out.len() <= 2 * PARALLEL_CHUNK || rayon::current_num_threads() == 1 || !self.model.wants_thread_chunks() {
            self.model.predict_into(x, out)
        } else {
            x.par_chunks(PARALLEL_CHUNK * width)
                .zip(out.par_chunks_mut(PARALLEL_CHUNK))
                .try_for_each(|(xc, oc)| self.model.predict_into(xc, oc))
        };
        self.counters.busy_nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        result?;
        // A NaN would compare false everywhere and read as "never discriminatory": refuse it here,
        // whatever the model.
        if let Some(row) = out.iter().position(|p| !p.is_finite()) {
            return Err(ModelError::NotFinite {
                output: format!("P(favourable) of {}", self.model.describe()),
                row,
                value: out[row],
                features: x[row * width..(row + 1) * width].to_vec(),
            });
        }
        Ok(())
    }

    /// How [`Oracle::gradient_into`] computes the gradient of this model.
    pub fn gradient_method(&self) -> GradientMethod {
        if self.model.has_exact_gradient() {
            GradientMethod::Exact
        } else {
            GradientMethod::FiniteDifferences
        }
    }

    /// P(class 1) of each row of `x` into `out` and its gradient with respect to each input into
    /// `grad` (row-major, as `x`): exact when the model allows it ([`Model::has_exact_gradient`]),
    /// otherwise central finite differences ([`fairpipe_abi::gradient`]: 1 + 2·width rows scored per
    /// row). Large batches are spread over the rayon pool. Returns the model rows evaluated (one
    /// forward and backward pass per row counts as one); a value that is not finite is refused.
    pub fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) -> Result<u64, ModelError> {
        let width = self.n_features();
        if x.len() != out.len() * width || grad.len() != x.len() {
            return Err(ModelError::Width { expected: width, found: if out.is_empty() { 0 } else { x.len() / out.len() } });
        }
        if !self.model.has_exact_gradient() {
            let mut probes = Vec::new();
            fairpipe_abi::gradient::push_difference_rows(x, width, &mut probes);
            let scores = self.predict_proba(&probes)?;
            fairpipe_abi::gradient::differences_to_gradient(x, width, &scores, out, grad);
            return Ok(scores.len() as u64);
        }
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        self.counters.rows.fetch_add(out.len() as u64, Ordering::Relaxed);
        let started = Instant::now();
        let result = if out.len() <= 2 * PARALLEL_CHUNK || rayon::current_num_threads() == 1 {
            self.model.gradient_into(x, out, grad)
        } else {
            x.par_chunks(PARALLEL_CHUNK * width)
                .zip(out.par_chunks_mut(PARALLEL_CHUNK))
                .zip(grad.par_chunks_mut(PARALLEL_CHUNK * width))
                .try_for_each(|((xc, oc), gc)| self.model.gradient_into(xc, oc, gc))
        };
        self.counters.busy_nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        result?;
        let bad = out.iter().position(|p| !p.is_finite()).map(|row| (row, out[row]));
        let bad = bad.or_else(|| grad.iter().position(|g| !g.is_finite()).map(|i| (i / width.max(1), grad[i])));
        if let Some((row, value)) = bad {
            return Err(ModelError::NotFinite {
                output: format!("P(favourable) or its gradient of {}", self.model.describe()),
                row,
                value,
                features: x[row * width..(row + 1) * width].to_vec(),
            });
        }
        Ok(out.len() as u64)
    }

    /// Predicted class (P > 0.5) of each row.
    pub fn predict_labels(&self, x: &[f64]) -> Result<Vec<u8>, ModelError> {
        Ok(self.predict_proba(x)?.into_iter().map(|p| u8::from(p > 0.5)).collect())
    }

    /// Number of calls so far.
    pub fn calls(&self) -> u64 {
        self.counters.calls.load(Ordering::Relaxed)
    }

    /// Wall-clock seconds spent inside the model so far (summed over calls).
    pub fn busy_seconds(&self) -> f64 {
        self.counters.busy_nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// Number of rows scored so far.
    pub fn rows(&self) -> u64 {
        self.counters.rows.load(Ordering::Relaxed)
    }
}

/// Share of rows whose predicted class equals `y`, and the count of correct rows.
pub fn accuracy(oracle: &Oracle, x: &ndarray::Array2<f64>, y: &[u8]) -> Result<(f64, usize), ModelError> {
    if y.is_empty() {
        return Ok((f64::NAN, 0));
    }
    let flat: Vec<f64> = x.iter().copied().collect();
    let labels = oracle.predict_labels(&flat)?;
    let correct = labels.iter().zip(y).filter(|(a, b)| a == b).count();
    Ok((correct as f64 / y.len() as f64, correct))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Counting;

    fn rows(pairs: &[(f64, f64)]) -> Vec<f64> {
        pairs.iter().flat_map(|&(a, b)| [a, b]).collect()
    }

    #[test]
    fn repeated_rows_are_scored_once_and_answered_the_same() {
        let model = Arc::new(Counting(AtomicU64::new(0)));
        let oracle = Oracle::with_cache_rows(model.clone(), 1000);
        let x = rows(&[(1.0, 2.0), (3.0, 4.0), (1.0, 2.0), (1.0, 2.0)]);
        let mut out = vec![0.0; 4];
        let tally = oracle.predict_proba_cached_into(&x, &mut out).unwrap();
        assert_eq!(out, [0.05, 0.11, 0.05, 0.05]);
        assert_eq!(tally, CacheTally { asked: 4, scored: 2, hits: 2 });
        assert_eq!(model.0.load(Ordering::Relaxed), 2);
        let x = rows(&[(3.0, 4.0), (5.0, 6.0)]);
        let mut out = vec![0.0; 2];
        let tally = oracle.predict_proba_cached_into(&x, &mut out).unwrap();
        assert_eq!(out, [0.11, 0.17]);
        assert_eq!(tally, CacheTally { asked: 2, scored: 1, hits: 1 });
        assert_eq!(model.0.load(Ordering::Relaxed), 3);
        assert_eq!(oracle.rows(), 3, "the oracle's row count is the rows the model scored");
    }

    #[test]
    fn without_a_cache_every_row_is_scored() {
        let model = Arc::new(Counting(AtomicU64::new(0)));
        let oracle = Oracle::with_cache_rows(model.clone(), 1000).without_cache();
        let x = rows(&[(1.0, 2.0), (1.0, 2.0)]);
        let mut out = vec![0.0; 2];
        let tally = oracle.predict_proba_cached_into(&x, &mut out).unwrap();
        assert_eq!(tally, CacheTally { asked: 2, scored: 2, hits: 0 });
        assert_eq!(model.0.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn large_batches_under_rayon_give_the_same_answers_and_counts() {
        let model = Arc::new(Counting(AtomicU64::new(0)));
        let oracle = Oracle::with_cache_rows(model.clone(), 1 << 20);
        // 20,000 rows over 5,000 distinct ones, asked from several threads at once.
        let x: Vec<f64> = (0..20_000).flat_map(|i| [f64::from(i % 100), f64::from((i / 100) % 50)]).collect();
        let want: Vec<f64> = x.chunks_exact(2).map(|r| (r[0] + 2.0 * r[1]) / 100.0).collect();
        let tallies: Vec<CacheTally> = (0..4)
            .into_par_iter()
            .map(|_| {
                let mut out = vec![0.0; 20_000];
                let tally = oracle.predict_proba_cached_into(&x, &mut out).unwrap();
                assert_eq!(out, want);
                tally
            })
            .collect();
        let mut total = CacheTally::default();
        tallies.iter().for_each(|t| total.add(*t));
        assert_eq!(total.asked, 80_000);
        assert_eq!(total.scored + total.hits, total.asked);
        assert_eq!(total.scored, model.0.load(Ordering::Relaxed));
        // Each distinct row is scored at least once and at most once per concurrent caller.
        assert!((5_000..=20_000).contains(&total.scored), "{total:?}");
    }

    /// A logistic model over two inputs, with its gradient known in closed form.
    struct Linear {
        exact: bool,
    }

    impl Model for Linear {
        fn n_features(&self) -> usize {
            2
        }
        fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
            for (o, r) in out.iter_mut().zip(x.chunks_exact(2)) {
                *o = 1.0 / (1.0 + (-(0.5 * r[0] - 2.0 * r[1] + 1.0)).exp());
            }
            Ok(())
        }
        fn describe(&self) -> String {
            "linear".into()
        }
        fn has_exact_gradient(&self) -> bool {
            self.exact
        }
        fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) -> Result<(), ModelError> {
            self.predict_into(x, out)?;
            for (g, &p) in grad.chunks_exact_mut(2).zip(out.iter()) {
                g.copy_from_slice(&[0.5 * p * (1.0 - p), -2.0 * p * (1.0 - p)]);
            }
            Ok(())
        }
    }

    #[test]
    fn gradients_are_exact_when_the_model_allows_and_finite_differences_otherwise() {
        let x: Vec<f64> = (0..6000).map(|i| (i % 17) as f64 / 5.0 - 1.5).collect();
        let rows = x.len() / 2;
        let mut results = Vec::new();
        for exact in [true, false] {
            let oracle = Oracle::with_cache_rows(Arc::new(Linear { exact }), 0);
            assert_eq!(oracle.gradient_method(), if exact { GradientMethod::Exact } else { GradientMethod::FiniteDifferences });
            let (mut p, mut g) = (vec![0.0; rows], vec![0.0; x.len()]);
            let evaluated = oracle.gradient_into(&x, &mut p, &mut g).unwrap();
            assert_eq!(evaluated, if exact { rows as u64 } else { (rows * 5) as u64 });
            assert_eq!(oracle.rows(), evaluated);
            results.push((p, g));
        }
        assert_eq!(results[0].0, results[1].0);
        for (a, b) in results[0].1.iter().zip(&results[1].1) {
            assert!((a - b).abs() < 1e-6, "{a} against {b}");
        }
        let oracle = Oracle::with_cache_rows(Arc::new(Linear { exact: true }), 0);
        assert!(oracle.gradient_into(&x[..4], &mut [0.0; 2], &mut [0.0; 3]).is_err(), "a gradient buffer of the wrong size");
    }

    #[test]
    fn a_wrong_width_is_an_error() {
        let oracle = Oracle::with_cache_rows(Arc::new(Counting(AtomicU64::new(0))), 10);
        let mut out = vec![0.0; 2];
        assert!(matches!(oracle.predict_proba_cached_into(&[1.0, 2.0, 3.0], &mut out), Err(ModelError::Width { .. })));
    }
}
