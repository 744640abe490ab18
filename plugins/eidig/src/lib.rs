//! `eidig`: EIDIG (Zhang et al., "Efficient White-Box Fairness Testing through Gradient Search",
//! ISSTA'21), a white-box search for individual discriminatory instances (IDIs) guided by the
//! model's own gradient.
//!
//! * **Gradient** ([`ModelGradient`]): the gradient of P(class 1) with respect to the input, from
//!   the host's `gradient` callback (ABI 1.3), negated when f(x) ≤ 0.5 so that it is the gradient of
//!   the predicted class's probability (the reference's `compute_grad`). The host computes it
//!   exactly for its native MLP, logistic regression and dense ONNX networks run natively, and by
//!   central finite differences for any other model; the stage's `gradient` figure says which.
//! * **Global generation** (the paper's Algorithm 1, lines 1–17): seeds from the `cluster` stage
//!   (k-means, the paper's 4 clusters are the stage's default `k`) in round robin; `global_num` of
//!   them, each for up to `max_iter` iterations: stop when discriminatory; otherwise pair x with the
//!   variant x' of the largest output difference, accumulate momentum `grad = decay·grad + ∇` for
//!   both, and move every non-protected attribute whose two gradient signs agree by
//!   −sign·`global_step`, clipped.
//! * **Local generation** (Algorithm 1, lines 18–35): from each distinct global IDI, `local_num`
//!   iterations of one-attribute steps of ±`local_step`, the attribute drawn with the normalised
//!   reciprocals of |∇x| + |∇x'| (+ε); the probabilities are computed once from the global IDI
//!   (with its `max_diff` variant) and recomputed after `update_interval` consecutive successes
//!   with a random label-flipping variant (prior-gradient reuse); a discriminatory result is kept
//!   and the walk goes on from it, otherwise the walk returns to its global IDI and initial
//!   probabilities. `update_interval = 5` is EIDIG-5 (the default), `update_interval = 0` never
//!   recomputes: EIDIG-INF (the reference passes `l_num + 1`, which is the same).
//! * **Defaults** (the reference's `experiments.comparison`): `global_num` 1000, `local_num` 1000,
//!   `max_iter` 10, `decay` 0.5, steps `s_g` = `s_l` = 1, ε 1e-6, 4 clusters, update interval 5.
//!
//! The two phases are MAFT's code (`fairpipe-plugin-maft`, [`global`] and [`local`]): MAFT is
//! EIDIG with the gradient replaced by a zero-order estimate, and the line-by-line comparison with
//! both reference implementations in MAFT's docs holds here unchanged. In short:
//! * seeds without replacement (the reference draws a random row of the cluster with
//!   replacement, which can only repeat seeds);
//! * `max_iter` checks per seed, the last move unchecked; distinct full instances of
//!   global ∪ local IDIs counted (labels differ at 0.5);
//! * steps in units of each attribute's `step` (1 on the papers' data: exactly the paper's moves);
//! * seeds and walks advanced in lockstep, `parallel_walks` at a time, with one batched gradient
//!   call per step for all of them; each walk has its own random generator, so the IDIs found do
//!   not depend on `parallel_walks`;
//! * each distinct IDI is emitted once, with the phase that found it first; `generated` counts
//!   distinct inputs checked.
//!
//! What the reference's `compute_grad` differentiates is TensorFlow's float32 network; here the
//! host back-propagates in f64 through the same f32 weights, so gradient signs can differ only
//! where a component is within float32 rounding of zero. Checked: on the same 50 bank seeds the
//! reference's global phase (its code under TF 2.15.1 with the MAFT repository's `bank_model.h5`)
//! and this one reach the same 43 global IDIs.
//!
//! # Measured (release, `cargo bench --bench search -- methods`, 10 pipeline seeds, 50 × 1000)
//!
//! | benchmark | fairpipe IDIs, mean ± sd | reference (single run) | fairpipe IDIs/s | reference IDIs/s |
//! |---|---|---|---|---|
//! | census-gender | 2,722 ± 829 | 2,929 in 110 s | 148,030 | 26.6 |
//! | census-age | 15,538 ± 1,450 | 15,867 in 371 s | 226,367 | 42.8 |
//! | credit-age | 19,078 ± 1,134 | 17,914 in 397 s | 147,871 | 45.1 |
//! | bank-age | 15,631 ± 553 | 17,198 in 412 s | 201,498 | 41.7 |
//!
//! The reference's own runs spread widely: on bank-age six rounds of its code here found 15,762,
//! 19,113, 16,535, 15,288, 16,555 and 16,027 IDIs (mean 16,547, sd 1,345).
//!
//! **The reference's own mean** (`scripts/reference_ports/eidig_reference.py`: its code ported
//! line by line to numpy; with numpy seeds 1–6 it reproduces the six runs above exactly), 100 runs
//! per benchmark at 50 × 1000: census-gender 2,520 ± 635, census-age 15,081 ± 1,487, bank-age
//! 16,218 ± 1,182, credit-age 19,256 ± 1,277. The published single runs are its 75th, 67th, 80th
//! and 16th percentiles. Departures found, none lowering the count: k-means best of 10 starts here
//! against the reference's single start (which lands in a worse clustering in about half its runs:
//! this is why the census means here are above the reference's); seeds without replacement (on
//! credit +1.7 distinct global IDIs per run); the reference's `for x1 in g_id:` aliasing, which
//! counts each global IDI's first unchecked, unclipped step (+7 to +19 IDIs per run, not copied);
//! one random stream per walk; f64 back-propagation (same seeds: 56 of 60 runs identical, the
//! others within ±106). On credit-age the port with this plugin's seed choice (best-of-10 k-means,
//! without replacement) finds 19,990 ± 1,020 (100 runs, 43.9 ± 1.9 distinct global IDIs). Checked
//! here: the reference's global phase run on this plugin's own 50 seed rows (pipeline seeds 1–10)
//! reaches exactly this plugin's global IDIs, run by run (39, 40, 42, 42, 41, 46, 40, 40, 43, 45);
//! linfa's clusters have the sizes of scikit-learn's best-of-10 (about 112/142/164/182); and
//! pipeline seeds 11–40 give 43.5 ± 2.1 global IDIs and 19,768 ± 1,091 IDIs — the benchmark's ten
//! seeds (19,078, 41.8 global IDIs) were a low draw, and over 40 seeds the mean is about 19,600.

use fairpipe_abi::sdk::{at_least, in_range, CaseSink, Generator, Host, ParamError, PluginError, PluginParams};
use fairpipe_search::gradient::GradientSource;
use fairpipe_search::{global, local, SearchSettings};
use serde::{Deserialize, Serialize};

/// The EIDIG generator.
pub struct Eidig;

/// EIDIG's hyperparameters (defaults from the paper §5 and its code).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EidigParams {
    /// Seeds searched by the global phase (`g_num`).
    pub global_num: usize,
    /// Iterations per local walk (`l_num`).
    pub local_num: usize,
    /// Iterations per seed in the global phase.
    pub max_iter: usize,
    /// Global move, in attribute steps (`s_g`).
    pub global_step: f64,
    /// Local move, in attribute steps (`s_l`).
    pub local_step: f64,
    /// Momentum decay.
    pub decay: f64,
    /// Consecutive successful local iterations between gradient recomputations; 0: never
    /// (EIDIG-INF).
    pub update_interval: usize,
    /// ε of the selection probabilities.
    pub epsilon: f64,
    /// Seeds or walks advanced in lockstep.
    pub parallel_walks: usize,
    /// Stop after this many distinct IDIs (0: no limit).
    pub max_idis: usize,
}

impl Default for EidigParams {
    fn default() -> Self {
        EidigParams {
            global_num: 1000,
            local_num: 1000,
            max_iter: 10,
            global_step: 1.0,
            local_step: 1.0,
            decay: 0.5,
            update_interval: 5,
            epsilon: 1e-6,
            parallel_walks: 1000,
            max_idis: 0,
        }
    }
}

impl PluginParams for EidigParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("global_num", "seeds searched by the global phase (round robin over the clusters; the reference's g_num)"),
        ("local_num", "iterations of the local phase per global IDI (l_num)"),
        ("max_iter", "global iterations per seed"),
        ("global_step", "global move, in attribute steps (s_g)"),
        ("local_step", "local move, in attribute steps (s_l)"),
        ("decay", "momentum decay of the global gradients"),
        (
            "update_interval",
            "consecutive successful local iterations between gradient recomputations: 5 is EIDIG-5, 0 never recomputes (EIDIG-INF)",
        ),
        ("epsilon", "ε added to gradient magnitudes before taking reciprocals"),
        ("parallel_walks", "seeds or local walks advanced in lockstep, one gradient call per step (does not change results)"),
        ("max_idis", "stop after this many distinct IDIs (0: no limit)"),
    ];

    fn check(&self) -> Result<(), ParamError> {
        at_least("global_num", self.global_num, 1)?;
        at_least("max_iter", self.max_iter, 1)?;
        at_least("global_step", self.global_step, 1e-9)?;
        at_least("local_step", self.local_step, 1e-9)?;
        in_range("decay", self.decay, 0.0, 1.0)?;
        at_least("epsilon", self.epsilon, 1e-12)?;
        at_least("parallel_walks", self.parallel_walks, 1)
    }
}

impl EidigParams {
    /// The settings of the two phases (`update_interval = 0` as never).
    pub fn search(&self) -> SearchSettings {
        SearchSettings {
            local_num: self.local_num,
            max_iter: self.max_iter,
            global_step: self.global_step,
            local_step: self.local_step,
            decay: self.decay,
            update_interval: if self.update_interval == 0 { usize::MAX } else { self.update_interval },
            epsilon: self.epsilon,
            parallel_walks: self.parallel_walks,
        }
    }
}

/// The model's own gradient, from the host: EIDIG's `compute_grad` for many inputs at once.
pub struct ModelGradient {
    /// The non-protected attributes.
    attrs: Vec<usize>,
}

impl ModelGradient {
    /// Gradients over the non-protected attributes `attrs`.
    pub fn new(attrs: Vec<usize>) -> Self {
        ModelGradient { attrs }
    }
}

impl GradientSource for ModelGradient {
    fn attrs(&self) -> &[usize] {
        &self.attrs
    }

    fn gradients(&self, host: &mut Host, xs: &[f64], ps: &[f64]) -> Result<Vec<Vec<f64>>, PluginError> {
        if ps.is_empty() {
            return Ok(Vec::new());
        }
        let width = host.domain.width();
        let (_, grad) = host.gradient(xs)?;
        // The sign follows f(x) as the search scored it (the reference's `model(x) > 0.5`).
        Ok(grad
            .chunks_exact(width)
            .zip(ps)
            .map(|(g, &p)| {
                let sign = if p > 0.5 { 1.0 } else { -1.0 };
                g.iter().map(|v| sign * v).collect()
            })
            .collect())
    }
}

impl Generator for Eidig {
    const NAME: &'static str = "eidig";
    const DOC: &'static str = "EIDIG (Efficient Individual Discrimination Instance Generator): white-box two-phase search guided by the model's gradient (global momentum steps from clustered seeds, then local perturbation reusing prior gradients; update_interval 5 is EIDIG-5, 0 is EIDIG-INF).";
    /// It follows the gradient of the model's probability, which a label does not have.
    const NEEDS_SCORES: bool = true;
    type Params = EidigParams;

    fn generate(settings: &EidigParams, host: &mut Host) -> Result<(), PluginError> {
        if host.n_seeds == 0 {
            return Err(PluginError::InvalidInput("eidig needs seeds: connect a cluster stage, or let generate draw random seeds".into()));
        }
        let gradient = ModelGradient::new(host.domain.free_indices());
        let seeds = host.seed_rows(settings.global_num).to_vec();
        let mut sink = CaseSink::new(settings.max_idis);
        let search = settings.search();
        let idis = global::run(host, &search, &gradient, &seeds, &mut sink)?;
        if sink.full() {
            return Ok(());
        }
        local::run(host, &search, &gradient, idis, &mut sink)
    }
}

fairpipe_abi::export_generator!(Eidig);

#[cfg(test)]
mod tests {
    use fairpipe_abi::sdk::origin;
    use fairpipe_abi::testing::{in_planted_band, planted_domain, MockHost};
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;
    use serde_json::json;

    use super::*;

    /// a, b, c on 0..=10 and a protected sex; a smooth score of a + b + c + 4·sex − 19.5 with its
    /// exact gradient, so an input is discriminatory exactly when a + b + c ∈ [16, 19].
    fn planted() -> MockHost {
        let seeds = planted_domain(3).sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(5), 100);
        MockHost::planted(3, 4.0, 20.0).with_seeds(seeds)
    }

    fairpipe_abi::plugin_tests!(EidigParams);

    #[test]
    fn both_phases_find_only_planted_idis_with_the_models_gradient() {
        let host = planted();
        let run = host.generate::<Eidig>(json!({"global_num": 100, "local_num": 200})).unwrap();
        let global = run.cases.iter().filter(|c| c.origin == origin::GLOBAL).count();
        assert!(global > 0 && run.cases.len() > global + 20, "{global} global of {} cases", run.cases.len());
        assert!(run.cases.iter().all(|c| in_planted_band(c, 4.0, 20.0)));
        assert!(run.gradient_rows > 0, "the gradient came from the host");
        assert!(run.rows >= 4 * run.calls, "batched model calls");
    }

    #[test]
    fn the_global_phase_climbs_towards_the_planted_band() {
        // The 18 distinct seeds (a, b, 0, sex) with a, b < 3 lie far below the band (a + b + c ≤ 4).
        // Below the threshold both gradients point up, so each move raises a, b and c by one: the
        // sum climbs by 3 per iteration and must stop inside the 4-wide band [16, 19] within 6
        // moves, at a different IDI for each seed.
        let low: Vec<f64> = (0..36).flat_map(|i| [f64::from(i % 3), f64::from((i / 3) % 3), 0.0, f64::from((i / 9) % 2)]).collect();
        let host = MockHost::planted(3, 4.0, 20.0).with_seeds(low);
        let run = host.generate::<Eidig>(json!({"global_num": 36, "local_num": 0})).unwrap();
        assert_eq!(run.cases.len(), 18, "every distinct seed reaches the band");
        for c in &run.cases {
            let sum = c.instance[0] + c.instance[1] + c.instance[2];
            assert!((16.0..=19.0).contains(&sum) && c.instance[0] - c.instance[2] < 3.0, "{:?}", c.instance);
        }
    }

    #[test]
    fn eidig_inf_never_recomputes_and_eidig_5_does() {
        let gradient_rows = |interval: usize| {
            let host = planted().with_rng_seed(3);
            let params = json!({"global_num": 60, "local_num": 300, "update_interval": interval});
            host.generate::<Eidig>(params.clone()).unwrap().gradient_rows
        };
        let (five, inf) = (gradient_rows(5), gradient_rows(0));
        assert!(five > inf, "EIDIG-5 asks for more gradients ({five}) than EIDIG-INF ({inf})");
    }

    #[test]
    fn the_same_seed_gives_the_same_run_and_parallel_walks_do_not_matter() {
        let params = |walks: usize| json!({"global_num": 80, "local_num": 80, "parallel_walks": walks});
        let a = planted().with_rng_seed(9).generate::<Eidig>(params(1000)).unwrap();
        assert_eq!(planted().with_rng_seed(9).generate::<Eidig>(params(1000)).unwrap(), a);
        let sorted = |run: fairpipe_abi::testing::Run| {
            let mut idis: Vec<Vec<u64>> = run.cases.iter().map(|c| c.instance.iter().map(|v| v.to_bits()).collect()).collect();
            idis.sort();
            idis
        };
        let b = planted().with_rng_seed(9).generate::<Eidig>(params(7)).unwrap();
        assert_eq!(sorted(b), sorted(a));
        let capped = planted().generate::<Eidig>(json!({"global_num": 50, "max_idis": 7})).unwrap();
        assert_eq!(capped.cases.len(), 7);
    }

    #[test]
    fn under_a_host_without_the_gradient_callback_it_still_finds_the_planted_idis() {
        let host = planted().without_gradient_callback();
        let run = host.generate::<Eidig>(json!({"global_num": 100, "local_num": 100})).unwrap();
        assert_eq!(run.gradient_rows, 0);
        assert!(run.cases.len() > 50, "{} cases", run.cases.len());
        assert!(run.cases.iter().all(|c| in_planted_band(c, 4.0, 20.0)));
    }

    #[test]
    fn no_seeds_is_an_input_error() {
        let host = MockHost::new(planted().host().unwrap().domain.clone(), |_| 0.5);
        assert!(matches!(host.generate::<Eidig>(json!({})), Err(PluginError::InvalidInput(_))));
    }
}
