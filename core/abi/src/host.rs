//! [`Host`]: the host as a plugin sees it — domain, seeds, the model, the case sink, the budget and
//! cancellation — over a [`Backend`]: the real host's C callbacks ([`crate::export`]) or a mock
//! ([`crate::testing::MockHost`]).

use std::time::Instant;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::Value;

use crate::domain::Domain;
use crate::error::{HostCall, HostCallError, PluginError};
use crate::ffi::FfiBudget;
use crate::variants::{RowCheck, Variants};

/// What a [`Host`] calls: the host's side of a run. A refusal carries the host's message.
pub(crate) trait Backend {
    /// Score the rows of `x` (`cols` wide) into `out`, one P(class 1) per row.
    fn predict(&mut self, x: &[f64], cols: usize, out: &mut [f64]) -> Result<(), HostCallError>;
    /// Whether the host has the `gradient` callback (ABI ≥ 1.3).
    fn has_gradient(&self) -> bool;
    /// Model rows the host evaluates for each row of a [`Backend::gradient`] call over rows of
    /// `cols` attributes: 1 when exact, `1 + 2·cols` by finite differences (ABI ≥ 1.4; an older
    /// host's rows count one each).
    fn gradient_cost(&self, cols: usize) -> u64;
    /// P(class 1) of the rows of `x` into `p` and its gradient into `grad` (as `x`); only called
    /// when [`Backend::has_gradient`].
    fn gradient(&mut self, x: &[f64], cols: usize, p: &mut [f64], grad: &mut [f64]) -> Result<(), HostCallError>;
    /// Take one case.
    fn emit(&mut self, instance: &[f64], counterpart: &[f64], p: f64, p_counterpart: f64, origin: u32) -> Result<(), HostCallError>;
    /// Take an auditor's report (a JSON document).
    fn report(&mut self, json: &str) -> Result<(), HostCallError>;
    /// Progress: `done` inputs generated so far.
    fn progress(&mut self, done: u64);
    /// Whether the host asks the plugin to stop.
    fn should_stop(&mut self) -> bool;
}

/// Everything a run starts from, besides the backend.
pub(crate) struct RunInput {
    /// The input domain.
    pub domain: Domain,
    /// Seed rows, row-major.
    pub seeds: Vec<f64>,
    /// Seed of the run's random generator.
    pub rng_seed: u64,
    /// Limits.
    pub budget: FfiBudget,
    /// γ of Aequitas Definition 4.1, `None` to compare labels.
    pub gamma: Option<f64>,
}

/// The host as a plugin sees it: domain, seeds, model, case sink, budget.
pub struct Host<'a> {
    backend: Box<dyn Backend + 'a>,
    budget: FfiBudget,
    /// The input domain (categorical levels are not sent; only their count via the bounds).
    pub domain: Domain,
    /// Protected variants and the verdict rule.
    pub variants: Variants,
    /// Seed rows, row-major.
    pub seeds: Vec<f64>,
    /// Number of seed rows.
    pub n_seeds: usize,
    /// The run's random generator, seeded by the host.
    pub rng: Xoshiro256PlusPlus,
    queries: u64,
    iterations: u64,
    generated: u64,
    started: Instant,
}

impl<'a> Host<'a> {
    /// A host over `backend`; refuses a domain without a protected attribute and seeds of the
    /// wrong width.
    pub(crate) fn new(input: RunInput, backend: Box<dyn Backend + 'a>) -> Result<Self, PluginError> {
        let RunInput { domain, seeds, rng_seed, budget, gamma } = input;
        if domain.protected_indices().is_empty() {
            return Err(PluginError::InvalidInput("the domain has no protected attribute".into()));
        }
        let width = domain.width();
        if width == 0 || seeds.len() % width != 0 {
            return Err(PluginError::InvalidInput(format!("{} seed values are not whole rows of {width} attributes", seeds.len())));
        }
        Ok(Host {
            backend,
            budget,
            variants: Variants::new(&domain, gamma),
            n_seeds: seeds.len() / width,
            seeds,
            domain,
            rng: Xoshiro256PlusPlus::seed_from_u64(rng_seed),
            queries: 0,
            iterations: 0,
            generated: 0,
            started: Instant::now(),
        })
    }

    /// Seed row `i`.
    pub fn seed(&self, i: usize) -> &[f64] {
        let w = self.domain.width();
        &self.seeds[i * w..(i + 1) * w]
    }

    /// Number of seeds the budget allows.
    pub fn seed_limit(&self) -> usize {
        match self.budget.max_seeds {
            0 => self.n_seeds,
            m => self.n_seeds.min(usize::try_from(m).unwrap_or(usize::MAX)),
        }
    }

    /// The first seeds, row-major: at most `max` of them and at most [`Host::seed_limit`] (the
    /// host passes them in round-robin order over the clusters, so a prefix is a fair share).
    pub fn seed_rows(&self, max: usize) -> &[f64] {
        &self.seeds[..max.min(self.seed_limit()) * self.domain.width()]
    }

    /// P(class 1) for each row of `x`; [`PluginError::Stopped`] once the query budget is spent,
    /// [`PluginError::Host`] with the host's message when the model fails.
    pub fn predict(&mut self, x: &[f64]) -> Result<Vec<f64>, PluginError> {
        let cols = self.domain.width();
        let rows = x.len() / cols;
        self.admit_queries(rows)?;
        let mut out = vec![0.0; rows];
        self.backend.predict(&x[..rows * cols], cols, &mut out).map_err(|error| PluginError::Host { call: HostCall::Predict, error })?;
        self.queries += rows as u64;
        Ok(out)
    }

    /// P(class 1) of each row of `x` and its gradient with respect to every attribute (row-major,
    /// as `x`), in one call: for white-box methods. The host computes the gradient exactly when
    /// the model allows it and by central finite differences otherwise (its stage summary says
    /// which); under a host older than ABI 1.3 the SDK takes the same central differences through
    /// [`Host::predict`] ([`crate::gradient`]). Each row counts against the query budget as the
    /// model rows it costs: one when the gradient is exact, 1 + 2·width when it is taken by finite
    /// differences (the host says which, ABI ≥ 1.4; under a 1.3 host each row counts one), so
    /// that `max_queries` bounds the rows the stage reports as asked.
    pub fn gradient(&mut self, x: &[f64]) -> Result<(Vec<f64>, Vec<f64>), PluginError> {
        let cols = self.domain.width();
        let rows = x.len() / cols;
        let x = &x[..rows * cols];
        let (mut p, mut grad) = (vec![0.0; rows], vec![0.0; rows * cols]);
        if rows == 0 {
            return Ok((p, grad));
        }
        if !self.backend.has_gradient() {
            let mut probes = Vec::new();
            crate::gradient::push_difference_rows(x, cols, &mut probes);
            let scores = self.predict(&probes)?;
            crate::gradient::differences_to_gradient(x, cols, &scores, &mut p, &mut grad);
            return Ok((p, grad));
        }
        let cost = (rows as u64).saturating_mul(self.backend.gradient_cost(cols));
        self.admit(cost)?;
        self.backend.gradient(x, cols, &mut p, &mut grad).map_err(|error| PluginError::Host { call: HostCall::Gradient, error })?;
        self.queries += cost;
        Ok((p, grad))
    }

    /// [`PluginError::Stopped`] when `rows` more queries would exceed the query budget.
    fn admit_queries(&self, rows: usize) -> Result<(), PluginError> {
        self.admit(rows as u64)
    }

    /// [`PluginError::Stopped`] when `cost` more model rows would exceed the query budget: a
    /// call is made whole or not at all, so the rows asked never pass `max_queries`.
    fn admit(&self, cost: u64) -> Result<(), PluginError> {
        let max = self.budget.max_queries;
        if max > 0 && self.queries.saturating_add(cost) > max {
            return Err(PluginError::Stopped);
        }
        Ok(())
    }

    /// Model rows the query budget still allows (`u64::MAX` without a `max_queries`): for a
    /// method that cuts its next batch to fit rather than stop.
    pub fn queries_left(&self) -> u64 {
        match self.budget.max_queries {
            0 => u64::MAX,
            max => max.saturating_sub(self.queries),
        }
    }

    /// Check rows (row-major) for discrimination in one batched model call.
    pub fn check(&mut self, rows: &[f64]) -> Result<Vec<RowCheck>, PluginError> {
        let scores = self.scores(rows)?;
        Ok(self.variants.verdicts(&scores))
    }

    /// Score each row of `rows` and all its protected variants in one model call: per row,
    /// `[f(x), f(x with combination 0), f(x with combination 1), …]`, concatenated.
    pub fn scores(&mut self, rows: &[f64]) -> Result<Vec<f64>, PluginError> {
        let mut batch = Vec::new();
        self.variants.batch(rows, &mut batch);
        self.predict(&batch)
    }

    /// Emit a case: `row` and its counterpart combination from a [`RowCheck`]. The host
    /// re-checks it; see [`crate::sdk::CaseSink`] to emit each input once.
    pub fn emit(&mut self, row: &[f64], verdict: &RowCheck, origin: u32) -> Result<(), PluginError> {
        let counterpart = self.variants.variant(row, verdict.counterpart);
        self.backend
            .emit(row, &counterpart, verdict.p, verdict.p_counterpart, origin)
            .map_err(|error| PluginError::Host { call: HostCall::Emit, error })
    }

    /// Send an auditor's report to the host.
    pub fn report(&mut self, report: &Value) -> Result<(), PluginError> {
        self.backend.report(&report.to_string()).map_err(|error| PluginError::Host { call: HostCall::Report, error })
    }

    /// Count `n` generated test inputs (reported to the host as progress).
    pub fn count_generated(&mut self, n: u64) {
        self.generated += n;
        self.backend.progress(self.generated);
    }

    /// Test inputs counted so far.
    pub fn generated(&self) -> u64 {
        self.generated
    }

    /// Count one iteration; [`PluginError::Stopped`] when the iteration or time budget is spent or
    /// the host asks to stop. Call it at least every few milliseconds of work: it is how a time
    /// budget or a user's interrupt ends a run.
    pub fn tick(&mut self) -> Result<(), PluginError> {
        self.iterations += 1;
        if self.should_stop() {
            return Err(PluginError::Stopped);
        }
        Ok(())
    }

    /// Whether to stop now (iteration budget, host request, time budget), without counting an
    /// iteration. The host is asked before the plugin's own clock is read, so that a host that
    /// answers the time budget itself (ABI ≥ 1.2) records that it stopped the run; the clock is
    /// for older hosts.
    pub fn should_stop(&mut self) -> bool {
        let b = self.budget;
        (b.max_iterations > 0 && self.iterations >= b.max_iterations)
            || self.backend.should_stop()
            || (b.max_seconds > 0.0 && self.started.elapsed().as_secs_f64() >= b.max_seconds)
    }

    /// [`PluginError::Stopped`] when [`Host::should_stop`], without counting an iteration: for
    /// long stretches between iterations.
    pub fn check_stop(&mut self) -> Result<(), PluginError> {
        if self.should_stop() {
            Err(PluginError::Stopped)
        } else {
            Ok(())
        }
    }

    /// Model rows scored so far.
    pub fn queries(&self) -> u64 {
        self.queries
    }

    /// Iterations counted so far.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::domain::Domain;
    use crate::ffi::FfiBudget;
    use crate::sdk::{origin, HostCall, HostCallError, PluginError};
    use crate::testing::{planted_domain, MockHost};

    fn domain() -> Domain {
        planted_domain(1)
    }

    /// Favourable when a + 2·sex ≥ 6: discriminatory exactly when a ∈ {4, 5}.
    fn planted(r: &[f64]) -> f64 {
        if r[0] + 2.0 * r[1] >= 6.0 {
            0.9
        } else {
            0.1
        }
    }

    #[test]
    fn predict_stops_at_the_query_budget_before_calling_the_model() {
        let mock = MockHost::new(domain(), planted).with_budget(FfiBudget { max_queries: 5, ..Default::default() });
        let mut host = mock.host().unwrap();
        assert_eq!(host.predict(&[5.0, 1.0, 5.0, 0.0]).unwrap(), vec![0.9, 0.1]);
        assert_eq!(host.predict(&[1.0, 1.0, 2.0, 0.0, 3.0, 0.0]).unwrap().len(), 3);
        assert_eq!(host.predict(&[1.0, 1.0]), Err(PluginError::Stopped));
        assert_eq!(host.queries(), 5);
        drop(host);
        let run = mock.take_run();
        assert_eq!((run.rows, run.calls), (5, 2));
    }

    #[test]
    fn a_failed_predict_carries_the_hosts_message() {
        let mock = MockHost::new(domain(), planted).failing_predict("the model server is down");
        let mut host = mock.host().unwrap();
        let err = host.predict(&[1.0, 1.0]).unwrap_err();
        assert_eq!(err, PluginError::Host { call: HostCall::Predict, error: HostCallError::Refused("the model server is down".into()) });
        assert_eq!(err.to_string(), "the host's predict failed: the model server is down");
        assert_eq!(host.queries(), 0);
    }

    #[test]
    fn check_scores_every_variant_and_emit_sends_the_counterpart() {
        let mock = MockHost::new(domain(), planted);
        let mut host = mock.host().unwrap();
        let verdicts = host.check(&[4.0, 1.0, 8.0, 0.0]).unwrap();
        assert!(verdicts[0].discriminatory && !verdicts[1].discriminatory);
        host.emit(&[4.0, 1.0], &verdicts[0], origin::LOCAL).unwrap();
        host.count_generated(2);
        host.count_generated(3);
        drop(host);
        let run = mock.take_run();
        assert_eq!(run.rows, 2 * 3, "each row with its two variants, in one call");
        assert_eq!(run.calls, 1);
        assert_eq!(run.generated, 5);
        assert_eq!(run.cases.len(), 1);
        let case = &run.cases[0];
        assert_eq!((case.instance.as_slice(), case.counterpart.as_slice()), (&[4.0, 1.0][..], &[4.0, 0.0][..]));
        assert_eq!((case.p, case.p_counterpart, case.origin), (0.9, 0.1, origin::LOCAL));
    }

    #[test]
    fn tick_stops_on_the_iteration_budget_and_on_the_hosts_request() {
        let mock = MockHost::new(domain(), planted).with_budget(FfiBudget { max_iterations: 3, ..Default::default() });
        let mut host = mock.host().unwrap();
        assert_eq!((host.tick(), host.tick(), host.tick()), (Ok(()), Ok(()), Err(PluginError::Stopped)));
        assert_eq!(host.iterations(), 3);

        let mock = MockHost::new(domain(), planted).stop_after_calls(1);
        let mut host = mock.host().unwrap();
        assert!(!host.should_stop());
        host.predict(&[1.0, 1.0]).unwrap();
        assert!(host.should_stop());
        assert_eq!(host.check_stop(), Err(PluginError::Stopped));
        assert_eq!(host.iterations(), 0, "should_stop and check_stop count no iteration");

        let mock = MockHost::new(domain(), planted).with_budget(FfiBudget { max_seconds: 1e-9, ..Default::default() });
        let mut host = mock.host().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(host.should_stop(), "the time budget is spent");
    }

    #[test]
    fn seeds_are_limited_by_the_budget_and_refused_when_ragged() {
        let seeds: Vec<f64> = (0..10).map(f64::from).collect();
        let mock = MockHost::new(domain(), planted).with_seeds(seeds.clone()).with_budget(FfiBudget { max_seeds: 3, ..Default::default() });
        let host = mock.host().unwrap();
        assert_eq!((host.n_seeds, host.seed_limit()), (5, 3));
        assert_eq!(host.seed(1), &[2.0, 3.0]);
        assert_eq!(host.seed_rows(2), &seeds[..4]);
        assert_eq!(host.seed_rows(100), &seeds[..6]);
        let ragged = MockHost::new(domain(), planted).with_seeds(vec![1.0; 3]);
        assert!(matches!(ragged.host(), Err(PluginError::InvalidInput(_))));
        let mut unprotected = domain();
        unprotected.attributes[1].protected = false;
        let err = MockHost::new(unprotected, planted).host().err();
        assert_eq!(err, Some(PluginError::InvalidInput("the domain has no protected attribute".into())));
    }

    #[test]
    fn gradients_agree_exact_or_by_differences_and_count_against_the_budget() {
        let rows = [3.0, 4.0, 2.0, 1.0, 9.0, 9.0, 0.0, 0.0];
        let exact = MockHost::planted(3, 4.0, 20.0);
        let (p, g) = exact.host().unwrap().gradient(&rows).unwrap();
        assert_eq!(exact.take_run().gradient_rows, 2);
        // The same model without its exact gradient: the host's central differences.
        let model = |r: &[f64]| 1.0 / (1.0 + (20.0 - 0.5 - r[0] - r[1] - r[2] - 4.0 * r[3]).exp());
        for (mock, via_predict) in
            [(MockHost::new(planted_domain(3), model), false), (MockHost::new(planted_domain(3), model).without_gradient_callback(), true)]
        {
            let (q, h) = mock.host().unwrap().gradient(&rows).unwrap();
            assert_eq!(p, q);
            for (a, b) in g.iter().zip(&h) {
                assert!((a - b).abs() < 1e-5 * a.abs(), "{g:?} against {h:?}");
            }
            let run = mock.take_run();
            assert_eq!((run.gradient_rows, run.rows), if via_predict { (0, 2 * 9) } else { (2, 0) });
        }
        // An exact gradient costs one query a row; finite differences 1 + 2·width (9 here), by the
        // host's callback or through predict: the budget holds the rows the model evaluates.
        let capped = MockHost::planted(3, 4.0, 20.0).with_budget(FfiBudget { max_queries: 3, ..Default::default() });
        let mut host = capped.host().unwrap();
        host.gradient(&rows).unwrap();
        assert_eq!((host.queries(), host.queries_left()), (2, 1));
        assert_eq!(host.gradient(&rows), Err(PluginError::Stopped));
        for mock in [MockHost::new(planted_domain(3), model), MockHost::new(planted_domain(3), model).without_gradient_callback()] {
            let mock = mock.with_budget(FfiBudget { max_queries: 20, ..Default::default() });
            let mut host = mock.host().unwrap();
            host.gradient(&rows).unwrap();
            assert_eq!((host.queries(), host.queries_left()), (18, 2));
            assert_eq!(host.gradient(&rows[..4]), Err(PluginError::Stopped), "one more row costs 9 of the 2 left");
            assert_eq!(host.queries(), 18);
        }
    }

    #[test]
    fn reports_reach_the_host_as_json() {
        let mock = MockHost::new(domain(), planted);
        let mut host = mock.host().unwrap();
        host.report(&json!({"figures": {"x": 1}})).unwrap();
        drop(host);
        assert_eq!(mock.take_run().report, Some(json!({"figures": {"x": 1}})));
    }
}
