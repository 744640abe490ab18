//! `aequitas`: Udeshi et al., "Automated Directed Fairness Testing" (ASE 2018).
//!
//! * **Global search** (Algorithm 1): `global_iterations` inputs drawn uniformly from the domain;
//!   every discriminatory one is kept.
//! * **Local search** (Algorithm 2): from each global IDI, `local_iterations` trials; each picks a
//!   non-protected parameter `p` with probability σpr\[p\], a direction δ = −1 with probability σv\[p\]
//!   (else +1), moves `I_p += δ·step_p` (clipped to the domain) and keeps `I` when discriminatory. The
//!   walk continues from the perturbed input, as in the paper's pseudo-code.
//! * **Strategies**: `random` never updates σ; `semi_directed` updates σv (Algorithm 3);
//!   `fully_directed` also updates σpr with Δpr and renormalises (Algorithm 4).
//! * **Defaults** (paper and its code): Δv = Δpr = 0.001, σv = 0.5, σpr uniform, 1000 global and
//!   1000 local trials, perturbation of one step (1 for integers and categories).
//!
//! Choices where the paper is silent or where fairpipe batches:
//! * Local walks from different global IDIs are independent except for the shared σv/σpr. fairpipe
//!   advances up to `parallel_walks` walks in lockstep and scores each lockstep step in one model
//!   call; σ updates are applied after each step in walk order. `parallel_walks = 1` is exactly the
//!   sequential algorithm.
//! * The reference code wraps the local walk in scipy's basinhopping; the paper's pseudo-code (a plain
//!   walk) is followed here.
//! * `Test` is a set: an input is emitted once; `generated` counts distinct inputs tried.

use fairpipe_abi::sdk::{at_least, in_range, origin, CaseSink, Generator, Host, ParamError, PluginError, PluginParams};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The Aequitas generator.
pub struct Aequitas;

/// How the local search updates its probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// No updates.
    Random,
    /// Update σv.
    SemiDirected,
    /// Update σv and σpr.
    FullyDirected,
}

/// The shared probabilities of the local search.
#[derive(Debug, Clone)]
pub struct Probabilities {
    /// Non-protected parameter indices.
    pub params: Vec<usize>,
    /// σpr per entry of `params`.
    pub pr: Vec<f64>,
    /// σv per entry of `params`: probability of δ = −1.
    pub v: Vec<f64>,
}

impl Probabilities {
    /// Uniform σpr and σv = `sigma_v` over `params`.
    pub fn new(params: Vec<usize>, sigma_v: f64) -> Self {
        let n = params.len().max(1);
        Probabilities { pr: vec![1.0 / n as f64; params.len()], v: vec![sigma_v; params.len()], params }
    }

    /// Pick a parameter (index into `params`) with probability σpr.
    pub fn pick<R: Rng>(&self, rng: &mut R) -> usize {
        let total: f64 = self.pr.iter().sum();
        let mut u = rng.gen::<f64>() * total;
        for (k, &p) in self.pr.iter().enumerate() {
            if u < p {
                return k;
            }
            u -= p;
        }
        self.pr.len() - 1
    }

    /// Algorithms 3 and 4: update after trying direction `delta` on parameter `k`.
    pub fn update(&mut self, strategy: Strategy, k: usize, delta: f64, discriminatory: bool, dv: f64, dpr: f64) {
        if strategy == Strategy::Random {
            return;
        }
        if (discriminatory && delta < 0.0) || (!discriminatory && delta > 0.0) {
            self.v[k] = (self.v[k] + dv).min(1.0);
        } else {
            self.v[k] = (self.v[k] - dv).max(0.0);
        }
        if strategy == Strategy::FullyDirected && discriminatory {
            self.pr[k] += dpr;
            let total: f64 = self.pr.iter().sum();
            self.pr.iter_mut().for_each(|p| *p /= total);
        }
    }
}

/// Parameters of [`Aequitas`] (defaults from the paper and its code).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AequitasParams {
    /// Local search strategy.
    pub strategy: Strategy,
    /// Uniform samples of the global search.
    pub global_iterations: usize,
    /// Trials of the local search per global IDI.
    pub local_iterations: usize,
    /// Δv.
    pub delta_v: f64,
    /// Δpr.
    pub delta_pr: f64,
    /// Initial σv.
    pub sigma_v: f64,
    /// Stop after this many IDIs (0: no limit).
    pub max_idis: usize,
    /// Local walks advanced in lockstep.
    pub parallel_walks: usize,
}

impl Default for AequitasParams {
    fn default() -> Self {
        AequitasParams {
            strategy: Strategy::FullyDirected,
            global_iterations: 1000,
            local_iterations: 1000,
            delta_v: 0.001,
            delta_pr: 0.001,
            sigma_v: 0.5,
            max_idis: 0,
            parallel_walks: 256,
        }
    }
}

impl PluginParams for AequitasParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("strategy", "local search strategy (§4.2): random, semi_directed or fully_directed"),
        ("global_iterations", "uniform samples of the global search"),
        ("local_iterations", "trials N of the local search per global IDI"),
        ("delta_v", "Δv, change of σv"),
        ("delta_pr", "Δpr, change of σpr"),
        ("sigma_v", "initial probability of δ = −1"),
        ("max_idis", "stop after this many IDIs (0: no limit)"),
        ("parallel_walks", "local walks advanced in lockstep, one model call per step (1 = sequential)"),
    ];

    fn check(&self) -> Result<(), ParamError> {
        at_least("global_iterations", self.global_iterations, 1)?;
        in_range("delta_v", self.delta_v, 0.0, 1.0)?;
        in_range("delta_pr", self.delta_pr, 0.0, 1.0)?;
        in_range("sigma_v", self.sigma_v, 0.0, 1.0)?;
        at_least("parallel_walks", self.parallel_walks, 1)
    }
}

impl Generator for Aequitas {
    const NAME: &'static str = "aequitas";
    const DOC: &'static str = "Aequitas (Udeshi et al., ASE 2018): uniform global search, then local perturbation around each discriminatory input with the random, semi-directed or fully-directed strategy.";
    type Params = AequitasParams;

    fn generate(params: &AequitasParams, host: &mut Host) -> Result<(), PluginError> {
        let strategy = params.strategy;
        let width = host.domain.width();
        let mut sink = CaseSink::new(params.max_idis);

        // Global search, in batches of up to 1024 inputs per model call.
        let mut global_idis: Vec<Vec<f64>> = Vec::new();
        let mut remaining = params.global_iterations;
        while remaining > 0 {
            let n = remaining.min(1024);
            let rows = host.domain.sample_rows(&mut host.rng, n);
            let verdicts = host.check(&rows)?;
            sink.tried(host, &rows);
            for (row, v) in rows.chunks_exact(width).zip(&verdicts) {
                if v.discriminatory && sink.emit(host, row, v, origin::GLOBAL)? {
                    global_idis.push(row.to_vec());
                    if sink.full() {
                        return Ok(());
                    }
                }
            }
            remaining -= n;
            host.tick()?;
        }

        // Local search: walks advanced in lockstep.
        let mut probs = Probabilities::new(host.domain.free_indices(), params.sigma_v);
        if probs.params.is_empty() {
            return Ok(());
        }
        let (dv, dpr) = (params.delta_v, params.delta_pr);
        let steps = params.local_iterations;
        for group in global_idis.chunks(params.parallel_walks) {
            let mut walkers: Vec<Vec<f64>> = group.to_vec();
            let mut rows = vec![0.0; walkers.len() * width];
            let mut moves = vec![(0usize, 0.0f64); walkers.len()];
            for _ in 0..steps {
                for (w, walker) in walkers.iter_mut().enumerate() {
                    let k = probs.pick(&mut host.rng);
                    let delta = if host.rng.gen::<f64>() < probs.v[k] { -1.0 } else { 1.0 };
                    let p = probs.params[k];
                    let attr = &host.domain.attributes[p];
                    walker[p] = attr.clip(walker[p] + delta * attr.step);
                    moves[w] = (k, delta);
                    rows[w * width..(w + 1) * width].copy_from_slice(walker);
                }
                let verdicts = host.check(&rows)?;
                sink.tried(host, &rows);
                for (w, v) in verdicts.iter().enumerate() {
                    let row = &rows[w * width..(w + 1) * width];
                    if v.discriminatory && sink.emit(host, row, v, origin::LOCAL)? && sink.full() {
                        return Ok(());
                    }
                    let (k, delta) = moves[w];
                    probs.update(strategy, k, delta, v.discriminatory, dv, dpr);
                }
                host.tick()?;
            }
        }
        Ok(())
    }
}

fairpipe_abi::export_generator!(Aequitas);

#[cfg(test)]
mod tests {
    use fairpipe_abi::testing::MockHost;
    use serde_json::json;

    use super::*;

    /// a, b on 0..=10 and a protected sex; favourable when a + b + 4·sex ≥ 12, so an input is
    /// discriminatory exactly when a + b ∈ [8, 11].
    fn planted() -> MockHost {
        MockHost::planted(2, 4.0, 12.0)
    }

    fairpipe_abi::plugin_tests!(AequitasParams);

    #[test]
    fn unknown_strategies_are_refused_naming_the_choices() {
        let run = planted().generate::<Aequitas>(json!({"strategy": "fully_directd"}));
        let Err(PluginError::InvalidParams(e)) = run else { panic!("{run:?}") };
        let m = e.to_string();
        assert!(e.key() == Some("strategy") && m.contains("parameter `strategy`") && m.contains("semi_directed"), "{m}");
    }

    #[test]
    fn local_search_finds_more_planted_idis_each_emitted_once() {
        let params = json!({"global_iterations": 100, "local_iterations": 100});
        let run = planted().generate::<Aequitas>(params.clone()).unwrap();
        let global = run.cases.iter().filter(|c| c.origin == origin::GLOBAL).count();
        let local = run.cases.len() - global;
        assert!(global > 0 && local > global, "global {global}, local {local}");
        assert!(run.cases.iter().all(|c| (8.0..=11.0).contains(&(c.instance[0] + c.instance[1]))));
        let mut distinct: Vec<&Vec<f64>> = run.cases.iter().map(|c| &c.instance).collect();
        distinct.sort_by(|a, b| a.partial_cmp(b).unwrap());
        distinct.dedup();
        assert_eq!(distinct.len(), run.cases.len(), "each IDI is emitted once");
        assert_eq!(planted().generate::<Aequitas>(params).unwrap(), run, "same seed, same run");
        let capped = planted().generate::<Aequitas>(json!({"max_idis": 5})).unwrap();
        assert_eq!(capped.cases.len(), 5);
    }

    #[test]
    fn semi_directed_moves_sigma_v_as_algorithm_3() {
        let mut p = Probabilities::new(vec![0, 1], 0.5);
        p.update(Strategy::SemiDirected, 0, -1.0, true, 0.1, 0.1);
        assert!((p.v[0] - 0.6).abs() < 1e-12);
        p.update(Strategy::SemiDirected, 0, 1.0, true, 0.1, 0.1);
        assert!((p.v[0] - 0.5).abs() < 1e-12);
        p.update(Strategy::SemiDirected, 0, 1.0, false, 0.1, 0.1);
        assert!((p.v[0] - 0.6).abs() < 1e-12);
        assert_eq!(p.pr, vec![0.5, 0.5], "semi-directed leaves σpr alone");
    }

    #[test]
    fn fully_directed_renormalises_sigma_pr_as_algorithm_4() {
        let mut p = Probabilities::new(vec![0, 1, 2, 3], 0.5);
        p.update(Strategy::FullyDirected, 2, -1.0, true, 0.001, 0.25);
        let expected_pick = (0.25 + 0.25) / 1.25;
        assert!((p.pr[2] - expected_pick).abs() < 1e-12);
        assert!((p.pr.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        p.update(Strategy::FullyDirected, 1, -1.0, false, 0.001, 0.25);
        assert!((p.pr[2] - expected_pick).abs() < 1e-12, "no σpr change without a discriminatory input");
    }

    #[test]
    fn random_strategy_never_updates() {
        let mut p = Probabilities::new(vec![0, 1], 0.5);
        p.update(Strategy::Random, 0, -1.0, true, 0.1, 0.1);
        assert_eq!(p.v, vec![0.5, 0.5]);
        assert_eq!(p.pr, vec![0.5, 0.5]);
    }
}
