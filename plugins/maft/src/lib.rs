//! `maft`: Model-Agnostic Fairness Testing (MAFT), a black-box search for individual discriminatory
//! instances (IDIs) guided by zero-order gradient estimates.
//!
//! * **Gradient** (Algorithm 2, [`gradient`]): for x, the rows x + h·e_i are scored in one batch; the
//!   forward difference against f(x) is the gradient of P(class 1), negated when f(x) ≤ 0.5 so that it
//!   is the gradient of the predicted class's probability.
//! * **Global generation** (Algorithm 3, [`global`]): seeds from the `cluster` stage (k-means, the
//!   paper's 4 clusters are the stage's default `k`) in round robin; `global_num` of them, each for
//!   up to `max_iter` iterations: stop when discriminatory; otherwise pair x with the variant x' of the
//!   largest output difference, accumulate momentum `grad = decay·grad + ∇` for both, and move every
//!   non-protected attribute whose two gradient signs agree by −sign·`global_step`, clipped.
//! * **Local generation** (Algorithm 4, [`local`]): from each distinct global IDI, `local_num`
//!   iterations of one-attribute steps of ±`local_step`, attribute drawn with the normalised
//!   reciprocals of |∇x| + |∇x'| (+ε), probabilities recomputed every `update_interval` successes;
//!   a discriminatory result is kept, otherwise x and the probabilities are reset.
//! * **Defaults** (paper §4 and its code): `global_num` 1000, `local_num` 1000, `max_iter` 10,
//!   `global_step` 1, `local_step` 1, `decay` 0.5, `update_interval` 5, `perturbation_size` 1 (the
//!   paper's recommendation for discretised tabular data; the code's own default is 1e-4), ε 1e-6.
//!   Several protected attributes are handled at once: the variants are the cartesian product of
//!   their values.
//!
//! Choices where the paper is silent, or where fairpipe batches:
//! * Steps and h are in units of each attribute's `step` (its grid spacing). On the papers' data
//!   every step is 1, which gives exactly the paper's moves; on a continuous attribute with a finer
//!   grid, a "step of 1" would otherwise jump many grid points.
//! * Partial derivatives of protected attributes are not estimated: the algorithm never reads them
//!   (their direction and selection probability are 0), so those rows would be wasted queries.
//! * Seeds (global) and walks (local) are advanced in lockstep, `parallel_walks` at a time, with
//!   two model calls per step for all of them. Global generation draws no random numbers and each
//!   local walk has its own generator, so results do not depend on `parallel_walks`.
//! * Local walks restart from the global IDI itself (the reference's `x1 = x0.copy()`), as the paper's
//!   `Reset(x)`.
//! * `generated` counts distinct inputs checked; each distinct IDI is emitted once, with the phase
//!   that found it first.

pub mod global;
pub mod gradient;
pub mod local;
pub mod scored;

use fairpipe_abi::sdk::{Description, Generator, Host, ParamSpec, ParamType, Params, PluginError};
use serde_json::json;

use crate::gradient::Perturbation;
use crate::scored::Sink;

/// The MAFT generator.
pub struct Maft;

/// MAFT's hyperparameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Seeds searched by the global phase.
    pub global_num: usize,
    /// Iterations per local walk.
    pub local_num: usize,
    /// Iterations per seed in the global phase.
    pub max_iter: usize,
    /// Global move, in attribute steps.
    pub global_step: f64,
    /// Local move, in attribute steps.
    pub local_step: f64,
    /// Momentum decay.
    pub decay: f64,
    /// Successful local iterations between probability updates.
    pub update_interval: usize,
    /// h of the zero-order gradient, in attribute steps.
    pub perturbation_size: f64,
    /// ε of the selection probabilities.
    pub epsilon: f64,
    /// Seeds or walks advanced in lockstep.
    pub parallel_walks: usize,
    /// Stop after this many distinct IDIs (0: no limit).
    pub max_idis: usize,
}

impl Settings {
    /// Read the validated parameters.
    pub fn from_params(p: &Params) -> Self {
        Settings {
            global_num: p.usize("global_num"),
            local_num: p.usize("local_num"),
            max_iter: p.usize("max_iter"),
            global_step: p.f64("global_step"),
            local_step: p.f64("local_step"),
            decay: p.f64("decay"),
            update_interval: p.usize("update_interval"),
            perturbation_size: p.f64("perturbation_size"),
            epsilon: p.f64("epsilon"),
            parallel_walks: p.usize("parallel_walks").max(1),
            max_idis: p.usize("max_idis"),
        }
    }
}

impl Generator for Maft {
    const NAME: &'static str = "maft";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn description() -> Description {
        let positive = ParamType::Float { min: 1e-9, max: f64::INFINITY };
        Description {
            doc: "MAFT (Model-Agnostic Fairness Testing): black-box two-phase search guided by vectored zero-order gradient estimates (global momentum steps from clustered seeds, then gradient-weighted local perturbation).",
            params: vec![
                ParamSpec { name: "global_num", ty: ParamType::Int { min: 1 }, default: json!(1000), doc: "seeds searched by the global phase (round robin over the clusters)" },
                ParamSpec { name: "local_num", ty: ParamType::Int { min: 0 }, default: json!(1000), doc: "iterations of the local phase per global IDI" },
                ParamSpec { name: "max_iter", ty: ParamType::Int { min: 1 }, default: json!(10), doc: "global iterations per seed" },
                ParamSpec { name: "global_step", ty: positive.clone(), default: json!(1.0), doc: "global move, in attribute steps" },
                ParamSpec { name: "local_step", ty: positive.clone(), default: json!(1.0), doc: "local move, in attribute steps" },
                ParamSpec { name: "decay", ty: ParamType::Float { min: 0.0, max: 1.0 }, default: json!(0.5), doc: "momentum decay of the global gradients" },
                ParamSpec { name: "update_interval", ty: ParamType::Int { min: 1 }, default: json!(5), doc: "successful local iterations between recomputations of the selection probabilities" },
                ParamSpec { name: "perturbation_size", ty: positive.clone(), default: json!(1.0), doc: "h of the zero-order gradient, in attribute steps (paper: 1 for discretised data)" },
                ParamSpec { name: "epsilon", ty: positive, default: json!(1e-6), doc: "ε added to gradient magnitudes before taking reciprocals" },
                ParamSpec { name: "parallel_walks", ty: ParamType::Int { min: 1 }, default: json!(1000), doc: "seeds or local walks advanced in lockstep, two model calls per step (does not change results)" },
                ParamSpec { name: "max_idis", ty: ParamType::Int { min: 0 }, default: json!(0), doc: "stop after this many distinct IDIs (0: no limit)" },
            ],
        }
    }

    fn generate(params: &Params, host: &mut Host) -> Result<(), PluginError> {
        let settings = Settings::from_params(params);
        if host.n_seeds == 0 {
            return Err(PluginError::InvalidInput("maft needs seeds: connect a cluster stage, or let generate draw random seeds".into()));
        }
        let width = host.domain.width();
        let steps: Vec<f64> = host.domain.attributes.iter().map(|a| a.step).collect();
        let pert = Perturbation::new(host.domain.free_indices(), &steps, settings.perturbation_size);
        let n_seeds = settings.global_num.min(host.seed_limit());
        let seeds = host.seeds[..n_seeds * width].to_vec();
        let mut sink = Sink::new(settings.max_idis);
        let idis = global::run(host, &settings, &pert, &seeds, &mut sink)?;
        if sink.full() {
            return Ok(());
        }
        local::run(host, &settings, &pert, idis, &mut sink)
    }
}

fairpipe_abi::export_generator!(Maft);
