//! [`MockHost`]: run a generator or an auditor against a closure as the model, without the engine,
//! and collect what it emits — for a plugin's own unit tests.
//!
//! ```
//! use fairpipe_abi::testing::{planted_domain, MockHost};
//! # use fairpipe_abi::sdk::{origin, Generator, Host, PluginError, PluginParams};
//! # #[derive(Default, serde::Serialize, serde::Deserialize)]
//! # #[serde(default, deny_unknown_fields)]
//! # struct NoParams {}
//! # impl PluginParams for NoParams { const DOCS: &'static [(&'static str, &'static str)] = &[]; }
//! # struct Mine;
//! # impl Generator for Mine {
//! #     const NAME: &'static str = "mine";
//! #     const DOC: &'static str = "doc";
//! #     type Params = NoParams;
//! #     fn generate(_: &NoParams, host: &mut Host) -> Result<(), PluginError> {
//! #         let rows = host.domain.sample_rows(&mut host.rng, 200);
//! #         for (row, v) in rows.chunks_exact(2).zip(host.check(&rows)?) {
//! #             if v.discriminatory { host.emit(row, &v, origin::GLOBAL)?; }
//! #         }
//! #         Ok(())
//! #     }
//! # }
//! // a on 0..=10 and a protected sex on 0..=1; favourable when a + sex ≥ 6: discriminatory
//! // exactly when a = 5.
//! let host = MockHost::new(planted_domain(1), |r| if r[0] + r[1] >= 6.0 { 0.9 } else { 0.1 });
//! let run = host.generate::<Mine>(serde_json::json!({})).unwrap();
//! assert!(!run.cases.is_empty() && run.cases.iter().all(|c| c.instance[0] == 5.0));
//! ```

use std::cell::RefCell;

use serde_json::Value;

use crate::domain::{Attribute, Domain};
use crate::ffi::FfiBudget;
use crate::host::{Backend, Host, RunInput};
use crate::sdk::{AsAuditor, AsGenerator, Auditor, Generator, HostCallError, Method, PluginError, PluginParams};

/// One emitted case, as the host received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The instance.
    pub instance: Vec<f64>,
    /// Its counterpart.
    pub counterpart: Vec<f64>,
    /// The plugin's P(class 1) of the instance.
    pub p: f64,
    /// The plugin's P(class 1) of the counterpart.
    pub p_counterpart: f64,
    /// The origin code ([`crate::sdk::origin`]).
    pub origin: u32,
}

/// What a run sent to the host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    /// Emitted cases, in order.
    pub cases: Vec<Case>,
    /// An auditor's report.
    pub report: Option<Value>,
    /// The last generated count the plugin reported.
    pub generated: u64,
    /// Model rows scored.
    pub rows: u64,
    /// Model calls.
    pub calls: u64,
    /// Rows whose gradient the plugin asked the host for.
    pub gradient_rows: u64,
}

/// A model: one row to P(class 1).
type Model = dyn Fn(&[f64]) -> f64;
/// A model's exact gradient: one row to ∂P(class 1)/∂x.
type ModelGradient = dyn Fn(&[f64]) -> Vec<f64>;

/// A host for unit tests: a domain, seeds, a budget and a closure as the model.
pub struct MockHost {
    domain: Domain,
    seeds: Vec<f64>,
    rng_seed: u64,
    budget: FfiBudget,
    gamma: Option<f64>,
    model: Box<Model>,
    exact_gradient: Option<Box<ModelGradient>>,
    gradient_callback: bool,
    stop_after_calls: Option<u64>,
    fail_predict: Option<String>,
    recorded: RefCell<Run>,
}

impl MockHost {
    /// A host over `domain` whose model is `model` (one row → P(class 1)); no seeds, random
    /// seed 1, no budget, labels compared (no γ).
    pub fn new(domain: Domain, model: impl Fn(&[f64]) -> f64 + 'static) -> Self {
        MockHost {
            domain,
            seeds: Vec::new(),
            rng_seed: 1,
            budget: FfiBudget::default(),
            gamma: None,
            model: Box::new(model),
            exact_gradient: None,
            gradient_callback: true,
            stop_after_calls: None,
            fail_predict: None,
            recorded: RefCell::new(Run::default()),
        }
    }

    /// A host over [`planted_domain`]`(free)` whose model is favourable exactly when the sum of
    /// the free attributes plus `weight`·sex reaches `threshold` (a smooth logistic score, so that
    /// gradient estimates see a slope): an input is discriminatory exactly when that sum is in
    /// `threshold − weight ..= threshold − 1`.
    /// Its exact gradient is known to the host ([`MockHost::with_exact_gradient`]).
    pub fn planted(free: usize, weight: f64, threshold: f64) -> Self {
        let p = move |r: &[f64]| {
            let (sex, rest) = r.split_last().expect("a row");
            1.0 / (1.0 + (threshold - 0.5 - rest.iter().sum::<f64>() - weight * sex).exp())
        };
        MockHost::new(planted_domain(free), p).with_exact_gradient(move |r| {
            let slope = p(r) * (1.0 - p(r));
            let mut g = vec![slope; r.len()];
            g[r.len() - 1] = weight * slope;
            g
        })
    }

    /// The host knows the model's exact gradient (`gradient`: one row to ∂P(class 1)/∂x);
    /// without it the host's `gradient` takes central finite differences of the model, as the
    /// real host does for a model it cannot differentiate.
    pub fn with_exact_gradient(mut self, gradient: impl Fn(&[f64]) -> Vec<f64> + 'static) -> Self {
        self.exact_gradient = Some(Box::new(gradient));
        self
    }

    /// A host older than ABI 1.3, without the `gradient` callback: the SDK's
    /// [`Host::gradient`] then takes finite differences through `predict`.
    pub fn without_gradient_callback(mut self) -> Self {
        self.gradient_callback = false;
        self
    }

    /// With these seed rows (row-major).
    pub fn with_seeds(mut self, seeds: Vec<f64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// With this seed of the plugin's random generator.
    pub fn with_rng_seed(mut self, seed: u64) -> Self {
        self.rng_seed = seed;
        self
    }

    /// With this budget.
    pub fn with_budget(mut self, budget: FfiBudget) -> Self {
        self.budget = budget;
        self
    }

    /// With γ (Aequitas Definition 4.1) instead of comparing labels.
    pub fn with_gamma(mut self, gamma: f64) -> Self {
        self.gamma = Some(gamma);
        self
    }

    /// The host asks the plugin to stop (its `should_stop` says yes) once `calls` model calls
    /// were made, as a time budget or an interrupt would.
    pub fn stop_after_calls(mut self, calls: u64) -> Self {
        self.stop_after_calls = Some(calls);
        self
    }

    /// Every model call fails with `message`.
    pub fn failing_predict(mut self, message: &str) -> Self {
        self.fail_predict = Some(message.to_string());
        self
    }

    /// A [`Host`] over this mock for calling SDK functions directly; what it sends is recorded
    /// and returned by [`MockHost::take_run`].
    pub fn host(&self) -> Result<Host<'_>, PluginError> {
        let input = RunInput {
            domain: self.domain.clone(),
            seeds: self.seeds.clone(),
            rng_seed: self.rng_seed,
            budget: self.budget,
            gamma: self.gamma,
        };
        Host::new(input, Box::new(MockBackend { mock: self }))
    }

    /// What was sent to the host so far; clears the record.
    pub fn take_run(&self) -> Run {
        self.recorded.take()
    }

    /// Run generator `G` with `params` (a JSON object, as a pipeline's `params` table) the way the
    /// host does: parameters parsed and checked, [`PluginError::Stopped`] a normal end.
    pub fn generate<G: Generator>(&self, params: Value) -> Result<Run, PluginError> {
        self.run::<AsGenerator<G>>(params)
    }

    /// Run auditor `A` with `params`; the report is in [`Run::report`].
    pub fn audit<A: Auditor>(&self, params: Value) -> Result<Run, PluginError> {
        self.run::<AsAuditor<A>>(params)
    }

    fn run<M: Method>(&self, params: Value) -> Result<Run, PluginError> {
        self.recorded.take();
        let params = crate::sdk::prepare::<M>(&params)?;
        let mut host = self.host()?;
        match M::run(&params, &mut host) {
            Ok(()) | Err(PluginError::Stopped) => Ok(self.take_run()),
            Err(e) => Err(e),
        }
    }
}

/// An integer attribute on `0..=upper`, step 1.
pub fn int_attribute(name: &str, upper: f64, protected: bool) -> Attribute {
    Attribute::integer(name, 0.0, upper, protected)
}

/// The domain of planted-model tests: `free` integer attributes `a`, `b`, `c`… on `0..=10`, then
/// a protected `sex` on `0..=1` (the last column). With a model favourable when
/// `sum of the free attributes + w·sex ≥ t`, an input is discriminatory exactly when that sum is
/// in `t − w ..= t − 1` — known by construction.
pub fn planted_domain(free: usize) -> Domain {
    let mut attributes: Vec<Attribute> = (0..free).map(|i| int_attribute(&((b'a' + i as u8) as char).to_string(), 10.0, false)).collect();
    attributes.push(int_attribute("sex", 1.0, true));
    Domain { attributes }
}

/// Whether `case`'s instance is discriminatory by construction under the planted model of
/// [`MockHost::planted`]`(free, weight, threshold)` (or a label-only copy of it): the sum of its
/// free attributes (every one but the last) lies in `threshold − weight ..= threshold − 1`.
pub fn in_planted_band(case: &Case, weight: f64, threshold: f64) -> bool {
    let free = case.instance.split_last().map_or(&[][..], |(_, free)| free);
    (threshold - weight..=threshold - 1.0).contains(&free.iter().sum::<f64>())
}

/// The two tests every method plugin carries, written once: its C entry passes the conformance
/// suite (`fairpipe_conformance::assert_conforms`, as the host calls it) and its parameters are
/// documented ([`check_params`]). In a plugin crate's `mod tests` (with `fairpipe-conformance` a
/// dev-dependency): `fairpipe_abi::plugin_tests!(MyParams);`.
// `crate::FAIRPIPE_PLUGIN` is meant to be the calling plugin crate's C entry, not this crate's.
#[allow(clippy::crate_in_macro_def)]
#[macro_export]
macro_rules! plugin_tests {
    ($params:ty) => {
        #[test]
        fn passes_the_conformance_suite_through_its_c_entry() {
            fairpipe_conformance::assert_conforms(crate::FAIRPIPE_PLUGIN);
        }

        #[test]
        fn parameters_are_documented() {
            $crate::testing::check_params::<$params>();
        }
    };
}

/// Panics unless every field of `P` has a doc, every doc a field, and the defaults pass
/// [`PluginParams::check`]: a one-line unit test for a plugin's parameter struct.
pub fn check_params<P: PluginParams>() {
    if let Err(e) = crate::params::docs_match::<P>() {
        panic!("{e}");
    }
    if let Err(e) = P::default().check() {
        panic!("the default parameters fail their own check: {e}");
    }
}

struct MockBackend<'a> {
    mock: &'a MockHost,
}

impl Backend for MockBackend<'_> {
    fn predict(&mut self, x: &[f64], cols: usize, out: &mut [f64]) -> Result<(), HostCallError> {
        let mut run = self.mock.recorded.borrow_mut();
        run.calls += 1;
        if let Some(m) = &self.mock.fail_predict {
            return Err(HostCallError::Refused(m.clone()));
        }
        for (o, row) in out.iter_mut().zip(x.chunks_exact(cols)) {
            *o = (self.mock.model)(row);
        }
        run.rows += out.len() as u64;
        Ok(())
    }

    fn has_gradient(&self) -> bool {
        self.mock.gradient_callback
    }

    fn gradient_cost(&self, cols: usize) -> u64 {
        if self.mock.exact_gradient.is_some() {
            1
        } else {
            1 + 2 * cols as u64
        }
    }

    fn gradient(&mut self, x: &[f64], cols: usize, p: &mut [f64], grad: &mut [f64]) -> Result<(), HostCallError> {
        if let Some(m) = &self.mock.fail_predict {
            return Err(HostCallError::Refused(m.clone()));
        }
        match &self.mock.exact_gradient {
            Some(exact) => {
                for ((row, p), g) in x.chunks_exact(cols).zip(p.iter_mut()).zip(grad.chunks_exact_mut(cols)) {
                    *p = (self.mock.model)(row);
                    g.copy_from_slice(&exact(row));
                }
            }
            None => {
                let mut probes = Vec::new();
                crate::gradient::push_difference_rows(x, cols, &mut probes);
                let scores: Vec<f64> = probes.chunks_exact(cols).map(|r| (self.mock.model)(r)).collect();
                crate::gradient::differences_to_gradient(x, cols, &scores, p, grad);
            }
        }
        self.mock.recorded.borrow_mut().gradient_rows += p.len() as u64;
        Ok(())
    }

    fn emit(&mut self, instance: &[f64], counterpart: &[f64], p: f64, p_counterpart: f64, origin: u32) -> Result<(), HostCallError> {
        if instance.len() != self.mock.domain.width() || counterpart.len() != instance.len() {
            return Err(HostCallError::Refused(format!("a case of {} values for {} attributes", instance.len(), self.mock.domain.width())));
        }
        let case = Case { instance: instance.to_vec(), counterpart: counterpart.to_vec(), p, p_counterpart, origin };
        self.mock.recorded.borrow_mut().cases.push(case);
        Ok(())
    }

    fn report(&mut self, json: &str) -> Result<(), HostCallError> {
        let report = serde_json::from_str(json).map_err(|e| HostCallError::Refused(format!("the report is not JSON: {e}")))?;
        self.mock.recorded.borrow_mut().report = Some(report);
        Ok(())
    }

    fn progress(&mut self, done: u64) {
        self.mock.recorded.borrow_mut().generated = done;
    }

    fn should_stop(&mut self) -> bool {
        self.mock.stop_after_calls.is_some_and(|n| self.mock.recorded.borrow().calls >= n)
    }
}
