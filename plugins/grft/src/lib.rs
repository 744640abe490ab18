//! `grft`: GRFT, the genetic-algorithm fairness test of the ICSE 2025 paper, as its public
//! reference code runs it (the RegionFT repository's `Baselines/Grft/GRFT/GRFT.py` and
//! `GeneticAlgorithm.py`, driven by `Baselines/Grft/grft.py`). Black-box: it only asks the model
//! for its outputs, and finds discriminatory instances on a model that returns labels alone.
//!
//! * **Global generation** (`global_generation`): for each seed, a population of `pop_num`
//!   individuals — the seed and `pop_num − 1` copies in which two non-protected attributes, drawn
//!   once per seed, each move by a uniform integer in `−init_range..=init_range` steps
//!   (`create_image_indvs`). Each generation scores every individual with all its protected
//!   variants in one model call; as soon as any individual is discriminatory, every
//!   discriminatory individual of that generation is a global IDI and the seed is done
//!   (`first_attack = 1`). Otherwise the next generation is bred (`evolvePopulation`): fitness
//!   = Σ over the protected combinations of |f(x) − f(x')|; the fittest individual is kept in its
//!   place, every other place gets the uniform crossover (`crossover_rate` per gene from the
//!   first parent) of two tournament winners — each the best of `tournament_size` ranks drawn
//!   without replacement among the `tournament_pool` best, the second distinct from the first —
//!   mutated with probability `mutation_rate`: three distinct non-protected attributes move by a
//!   uniform integer in `−mutate_range..=mutate_range` steps (`build_mutate_func`). At most
//!   `max_iter` generations are scored per seed.
//! * **Local generation** (`local_generation_random`, the one the reference runs): `local_num`
//!   iterations over all global IDIs at once: one non-protected attribute drawn uniformly and a
//!   direction ±1 (a fair coin) for the whole batch; every IDI moves by `local_step` steps along
//!   it (clipped); the moved inputs that are discriminatory are local IDIs and replace their
//!   walkers, the others stay where they were.
//! * **Defaults** (the reference's `Grft.__init__` and `GeneticAlgorithm.Population`):
//!   `num_seeds` 1000, `pop_num` 100, `max_iter` 10, `local_num` 1000, `local_step` 1, crossover
//!   and mutation rates 0.5, tournaments of 3 among the 10 best, initial spread ±5, mutation
//!   spread ±3, one round.
//!
//! **Labels only.** The fitness reads the host's scores. On a model that returns labels alone
//! (the host's P(class 1) is then 0 or 1) the fitness of an individual is the number of
//! protected variants whose label differs, which is 0 until an IDI is found — the search then
//! proceeds by crossover and mutation alone, exactly as the reference does on such a model.
//!
//! Departures from the reference (none changes what counts as an IDI):
//! * **Seeds** come from the `cluster` stage (k-means, round robin over the clusters); the
//!   reference draws `num_seeds` rows with replacement from 4 k-means clusters, each cluster with
//!   probability proportional to its size. Without seed rows the seeds are drawn uniformly from
//!   the domain.
//! * **Batching**: `parallel_walks` seeds evolve in lockstep, each generation of all of them in
//!   one model call; each seed has its own random stream (so the IDIs found do not depend on
//!   `parallel_walks`), drawn from the run's seed. The reference evaluates one population per
//!   call. At the end of a `max_queries` budget the last call is cut to the whole populations (or,
//!   in the local phase, the walkers) the budget still affords, so a budget smaller than one
//!   lockstep generation runs part of it rather than nothing.
//! * **Queries**: the variant that is the input itself is not sent to the model again (its score
//!   is the input's); the reference scores it (3 rows per input against 2 here for a binary
//!   attribute).
//! * **Local walkers** stay inside the domain: the reference keeps the *unclipped* moved value of
//!   a walker whose clipped move was discriminatory, so walkers can drift past a bound (each later
//!   check is of the clipped row); here the walker keeps the clipped row it was checked at.
//! * **Steps** are in units of each attribute's grid `step` (1 on integer data: exactly the
//!   reference's moves); continuous attributes move by multiples of their step too.
//! * **Fewer than 3 non-protected attributes**: the mutation moves all of them, the initial
//!   population those there are (the reference needs at least 4 and 2).
//! * **Rounds**: the RegionFT harness repeats seeds → global → local until its time budget ends,
//!   drawing fresh seeds each round; here `rounds` (default 1, the paper's single pass; 0 repeats
//!   until the budget stops the run) reuses the stage's seed rows with fresh random streams.
//! * Each distinct IDI is emitted once, with the phase that found it first; `generated` counts
//!   distinct inputs checked. `s_g` and `epsilon` of the reference's signature are unused by its
//!   search and are not parameters here.

use std::collections::HashSet;

use fairpipe_abi::sdk::{at_least, in_range, origin, row_key, CaseSink, Generator, Host, ParamError, PluginError, PluginParams, RowKey};
use fairpipe_search::scored::{affordable_without_own, scores_without_own};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// The GRFT generator.
pub struct Grft;

/// GRFT's hyperparameters (defaults from its reference code).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrftParams {
    /// Seeds of the global phase.
    pub num_seeds: usize,
    /// Individuals per population.
    pub pop_num: usize,
    /// Generations scored per seed.
    pub max_iter: usize,
    /// Iterations of the local phase.
    pub local_num: usize,
    /// Local move, in attribute steps.
    pub local_step: f64,
    /// Probability that a gene of a child comes from its first parent.
    pub crossover_rate: f64,
    /// Probability that a child is mutated.
    pub mutation_rate: f64,
    /// Ranks drawn per tournament.
    pub tournament_size: usize,
    /// Best ranks a tournament draws from.
    pub tournament_pool: usize,
    /// Largest move of the initial population, in attribute steps.
    pub init_range: i64,
    /// Largest move of a mutation, in attribute steps.
    pub mutate_range: i64,
    /// Rounds of seeds → global → local (0: until the budget stops the run).
    pub rounds: usize,
    /// Seeds evolved in lockstep, one model call per generation for all of them.
    pub parallel_walks: usize,
    /// Stop after this many distinct IDIs (0: no limit).
    pub max_idis: usize,
}

impl Default for GrftParams {
    fn default() -> Self {
        GrftParams {
            num_seeds: 1000,
            pop_num: 100,
            max_iter: 10,
            local_num: 1000,
            local_step: 1.0,
            crossover_rate: 0.5,
            mutation_rate: 0.5,
            tournament_size: 3,
            tournament_pool: 10,
            init_range: 5,
            mutate_range: 3,
            rounds: 1,
            parallel_walks: 64,
            max_idis: 0,
        }
    }
}

impl PluginParams for GrftParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("num_seeds", "seeds of the global phase (from the cluster stage's rows, in its round-robin order)"),
        ("pop_num", "individuals per population: the seed and pop_num - 1 perturbed copies"),
        ("max_iter", "generations scored per seed; a seed stops at its first generation with an IDI"),
        ("local_num", "iterations of the local phase, each moving every global IDI at once"),
        ("local_step", "local move, in attribute steps (s_l)"),
        ("crossover_rate", "probability that a gene of a child comes from its first parent"),
        ("mutation_rate", "probability that a child is mutated"),
        ("tournament_size", "ranks drawn (without replacement) per tournament"),
        ("tournament_pool", "best ranks a tournament draws from (the reference's subtotal)"),
        ("init_range", "largest move of the initial population's two attributes, in attribute steps"),
        ("mutate_range", "largest move of a mutation's three attributes, in attribute steps"),
        ("rounds", "rounds of seeds, global and local phases (0: until the budget stops the run)"),
        ("parallel_walks", "seeds evolved in lockstep, one model call per generation for all of them"),
        ("max_idis", "stop after this many distinct IDIs (0: no limit)"),
    ];

    fn check(&self) -> Result<(), ParamError> {
        at_least("num_seeds", self.num_seeds, 1)?;
        at_least("pop_num", self.pop_num, 2)?;
        at_least("max_iter", self.max_iter, 1)?;
        at_least("local_step", self.local_step, 0.0)?;
        in_range("crossover_rate", self.crossover_rate, 0.0, 1.0)?;
        in_range("mutation_rate", self.mutation_rate, 0.0, 1.0)?;
        at_least("tournament_size", self.tournament_size, 2)?;
        at_least("tournament_pool", self.tournament_pool, self.tournament_size)?;
        at_least("init_range", self.init_range, 0)?;
        at_least("mutate_range", self.mutate_range, 0)?;
        at_least("parallel_walks", self.parallel_walks, 1)
    }
}

/// One seed's population and random stream.
struct Population {
    /// `pop_num` rows, row-major.
    rows: Vec<f64>,
    rng: Xoshiro256PlusPlus,
    done: bool,
}

/// What the breeding steps need to know about the domain.
struct Breeder<'a> {
    params: &'a GrftParams,
    host_domain: &'a fairpipe_abi::domain::Domain,
    free: &'a [usize],
}

impl Breeder<'_> {
    fn width(&self) -> usize {
        self.host_domain.width()
    }

    /// Move attribute `a` of `row` by `k` steps, clipped.
    fn shift(&self, row: &mut [f64], a: usize, k: f64) {
        let attr = &self.host_domain.attributes[a];
        row[a] = attr.clip(row[a] + k * attr.step);
    }

    /// `create_image_indvs`: the seed, then copies with two attributes (drawn once) moved.
    fn initial(&self, seed: &[f64], rng: &mut Xoshiro256PlusPlus) -> Vec<f64> {
        let r = self.params.init_range;
        let picked: Vec<usize> = sample(rng, self.free.len(), self.free.len().min(2)).into_iter().map(|i| self.free[i]).collect();
        let mut rows = Vec::with_capacity(self.params.pop_num * self.width());
        rows.extend_from_slice(seed);
        for _ in 1..self.params.pop_num {
            let start = rows.len();
            rows.extend_from_slice(seed);
            for &a in &picked {
                let k = rng.gen_range(-r..=r) as f64;
                self.shift(&mut rows[start..], a, k);
            }
        }
        rows
    }

    /// `evolvePopulation` after a generation without an IDI: keep the best in its place, fill
    /// every other place with a mutated crossover of two tournament winners.
    fn breed(&self, pop: &mut Population, fitness: &[f64]) {
        let (w, n, p) = (self.width(), self.params.pop_num, self.params);
        let mut ranked: Vec<usize> = (0..n).collect();
        ranked.sort_by(|&a, &b| fitness[b].partial_cmp(&fitness[a]).unwrap_or(std::cmp::Ordering::Equal));
        let best = ranked[0];
        let pool = p.tournament_pool.min(n);
        let size = p.tournament_size.min(pool);
        let rng = &mut pop.rng;
        let mut next = Vec::with_capacity(n * w);
        for i in 0..n {
            let start = next.len();
            if i == best {
                next.extend_from_slice(&pop.rows[i * w..(i + 1) * w]);
                continue;
            }
            let mut first = sample(rng, pool, size).into_vec();
            first.sort_unstable();
            let mut second = sample(rng, pool, size).into_vec();
            second.sort_unstable();
            let (a, b) = (ranked[first[0]], ranked[if second[0] != first[0] { second[0] } else { second[1] }]);
            for k in 0..w {
                let gene = if rng.gen::<f64>() < p.crossover_rate { pop.rows[a * w + k] } else { pop.rows[b * w + k] };
                next.push(gene);
            }
            if rng.gen::<f64>() < p.mutation_rate {
                let picked = sample(rng, self.free.len(), self.free.len().min(4)).into_vec();
                for &j in picked.iter().take(3) {
                    let k = rng.gen_range(-p.mutate_range..=p.mutate_range) as f64;
                    self.shift(&mut next[start..], self.free[j], k);
                }
            }
        }
        pop.rows = next;
    }
}

/// Σ over the protected combinations of |f(x) − f(x')| (the reference's fitness), from one input's
/// scores `[f(x), f(x with combination 0), …]`.
fn fitness(s: &[f64]) -> f64 {
    s[1..].iter().map(|q| (s[0] - q).abs()).sum()
}

/// The global phase of one round over `seeds` (row-major); returns the distinct global IDIs.
fn global_phase(params: &GrftParams, host: &mut Host, seeds: &[f64], free: &[usize], sink: &mut CaseSink) -> Result<Vec<f64>, PluginError> {
    let w = host.domain.width();
    let stride = host.variants.n_variants() + 1;
    let domain = host.domain.clone();
    let breeder = Breeder { params, host_domain: &domain, free };
    let base: u64 = host.rng.gen();
    let mut found = Vec::new();
    let mut seen: HashSet<RowKey> = HashSet::new();
    for (c, chunk) in seeds.chunks(params.parallel_walks * w).enumerate() {
        let mut pops: Vec<Population> = chunk
            .chunks_exact(w)
            .enumerate()
            .map(|(i, seed)| {
                let index = (c * params.parallel_walks + i) as u64;
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(base.wrapping_add(index));
                Population { rows: breeder.initial(seed, &mut rng), rng, done: false }
            })
            .collect();
        for generation in 0..params.max_iter {
            let mut active: Vec<usize> = (0..pops.len()).filter(|&i| !pops[i].done).collect();
            if active.is_empty() {
                break;
            }
            let mut rows: Vec<f64> = active.iter().flat_map(|&i| pops[i].rows.iter().copied()).collect();
            // At the end of the query budget, the populations it still affords (a partial step).
            let affordable = affordable_without_own(host, &rows, params.pop_num);
            if affordable == 0 {
                return Err(PluginError::Stopped);
            }
            active.truncate(affordable);
            rows.truncate(affordable * params.pop_num * w);
            let scores = scores_without_own(host, &rows)?;
            sink.tried(host, &rows);
            let per_pop = params.pop_num * stride;
            for (k, &i) in active.iter().enumerate() {
                let s = &scores[k * per_pop..(k + 1) * per_pop];
                let mut any = false;
                for j in 0..params.pop_num {
                    let sj = &s[j * stride..(j + 1) * stride];
                    let verdict = host.variants.verdict(sj[0], &sj[1..]);
                    if !verdict.discriminatory {
                        continue;
                    }
                    any = true;
                    let row = &pops[i].rows[j * w..(j + 1) * w];
                    if seen.insert(row_key(row)) {
                        found.extend_from_slice(row);
                    }
                    if sink.emit(host, row, &verdict, origin::GLOBAL)? && sink.full() {
                        return Ok(found);
                    }
                }
                if any {
                    pops[i].done = true;
                } else if generation + 1 < params.max_iter {
                    let fit: Vec<f64> = s.chunks_exact(stride).map(fitness).collect();
                    breeder.breed(&mut pops[i], &fit);
                }
            }
            host.tick()?;
        }
    }
    Ok(found)
}

/// The local phase (`local_generation_random`) from the global IDIs `walkers` (row-major).
fn local_phase(
    params: &GrftParams,
    host: &mut Host,
    mut walkers: Vec<f64>,
    free: &[usize],
    sink: &mut CaseSink,
) -> Result<(), PluginError> {
    let w = host.domain.width();
    let stride = host.variants.n_variants() + 1;
    if walkers.is_empty() || free.is_empty() {
        return Ok(());
    }
    for _ in 0..params.local_num {
        let a = free[host.rng.gen_range(0..free.len())];
        let direction = if host.rng.gen::<f64>() < 0.5 { -1.0 } else { 1.0 };
        let attr = &host.domain.attributes[a];
        let (step, mut moved) = (direction * params.local_step * attr.step, walkers.clone());
        for row in moved.chunks_exact_mut(w) {
            row[a] = attr.clip(row[a] + step);
        }
        // At the end of the query budget, the walkers it still affords (a partial step).
        let affordable = affordable_without_own(host, &moved, 1);
        if affordable == 0 {
            return Err(PluginError::Stopped);
        }
        moved.truncate(affordable * w);
        let scores = scores_without_own(host, &moved)?;
        sink.tried(host, &moved);
        for (r, s) in scores.chunks_exact(stride).enumerate() {
            let verdict = host.variants.verdict(s[0], &s[1..]);
            if verdict.discriminatory {
                let row = &moved[r * w..(r + 1) * w];
                walkers[r * w..(r + 1) * w].copy_from_slice(row);
                if sink.emit(host, row, &verdict, origin::LOCAL)? && sink.full() {
                    return Ok(());
                }
            }
        }
        host.tick()?;
    }
    Ok(())
}

impl Generator for Grft {
    const NAME: &'static str = "grft";
    const DOC: &'static str = "GRFT (ICSE 2025): per seed, a genetic algorithm over a perturbed population (fitness: output gap to the protected variants) until an IDI appears, then a batched random walk from every IDI. Black-box; runs on label-only models.";
    type Params = GrftParams;

    fn generate(params: &GrftParams, host: &mut Host) -> Result<(), PluginError> {
        let free = host.domain.free_indices();
        if free.is_empty() {
            return Ok(());
        }
        let mut sink = CaseSink::new(params.max_idis);
        let mut round = 0;
        while params.rounds == 0 || round < params.rounds {
            round += 1;
            let seeds = if host.seed_limit() > 0 {
                host.seed_rows(params.num_seeds).to_vec()
            } else {
                let n = params.num_seeds;
                host.domain.sample_rows(&mut host.rng, n)
            };
            let found = global_phase(params, host, &seeds, &free, &mut sink)?;
            if sink.full() {
                return Ok(());
            }
            local_phase(params, host, found, &free, &mut sink)?;
            if sink.full() {
                return Ok(());
            }
            host.check_stop()?;
        }
        Ok(())
    }
}

fairpipe_abi::export_generator!(Grft);

#[cfg(test)]
mod tests {
    use fairpipe_abi::ffi::FfiBudget;
    use fairpipe_abi::testing::{in_planted_band, planted_domain, MockHost};
    use serde_json::json;

    use super::*;

    /// a, b, c on 0..=10 and a protected sex; favourable when a + b + c + 4·sex ≥ 16, so an input
    /// is discriminatory exactly when a + b + c ∈ [12, 15].
    fn planted() -> MockHost {
        MockHost::planted(3, 4.0, 16.0)
    }

    fn band(c: &fairpipe_abi::testing::Case) -> bool {
        in_planted_band(c, 4.0, 16.0)
    }

    fairpipe_abi::plugin_tests!(GrftParams);

    #[test]
    fn a_parameter_out_of_range_is_refused_by_name() {
        let run = planted().generate::<Grft>(json!({"tournament_pool": 2}));
        let Err(PluginError::InvalidParams(e)) = run else { panic!("{run:?}") };
        assert!(matches!(&e, ParamError::TooSmall { key, .. } if key == "tournament_pool"), "{e:?}");
        assert!(e.to_string().contains("tournament_pool"), "{e}");
    }

    #[test]
    fn global_then_local_find_only_planted_idis_each_once() {
        let params = json!({"num_seeds": 40, "local_num": 50});
        let run = planted().generate::<Grft>(params.clone()).unwrap();
        let global = run.cases.iter().filter(|c| c.origin == origin::GLOBAL).count();
        let local = run.cases.len() - global;
        assert!(global > 0 && local > 0, "global {global}, local {local}");
        assert!(run.cases.iter().all(band), "every case lies in the planted band");
        let mut distinct: Vec<&Vec<f64>> = run.cases.iter().map(|c| &c.instance).collect();
        distinct.sort_by(|a, b| a.partial_cmp(b).unwrap());
        distinct.dedup();
        assert_eq!(distinct.len(), run.cases.len(), "each IDI is emitted once");
        assert_eq!(planted().generate::<Grft>(params).unwrap(), run, "same seed, same run");
    }

    #[test]
    fn the_genetic_search_reaches_a_band_the_seed_is_far_from() {
        // Every seed at the origin: the initial spread (±5 on two attributes) reaches sums of at
        // most 10, so an IDI (sum 12..=15) needs the bred generations.
        let seeds = [0.0, 0.0, 0.0, 0.0].repeat(20);
        let params = json!({"num_seeds": 20, "local_num": 0});
        let run = planted().with_seeds(seeds).generate::<Grft>(params).unwrap();
        assert!(!run.cases.is_empty() && run.cases.iter().all(band), "{} cases", run.cases.len());
        // Label-only: the same search on 0/1 outputs still finds the band by mutation alone.
        let labels = MockHost::new(planted_domain(3), |r| if r[0] + r[1] + r[2] + 4.0 * r[3] >= 16.0 { 1.0 } else { 0.0 });
        let run = labels.with_seeds([6.0, 3.0, 0.0, 0.0].repeat(20)).generate::<Grft>(json!({"num_seeds": 20, "local_num": 100})).unwrap();
        assert!(run.cases.len() > 10 && run.cases.iter().all(band), "{} cases", run.cases.len());
    }

    #[test]
    fn results_do_not_depend_on_parallel_walks_and_the_budget_stops_a_run() {
        let seeds = planted_domain(3).sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(5), 30);
        let run = |pw: usize| {
            planted().with_seeds(seeds.clone()).generate::<Grft>(json!({"num_seeds": 30, "local_num": 20, "parallel_walks": pw})).unwrap()
        };
        let (one, many) = (run(1), run(64));
        let sorted = |r: &fairpipe_abi::testing::Run| {
            let mut v: Vec<Vec<f64>> = r.cases.iter().map(|c| c.instance.clone()).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v
        };
        assert_eq!(sorted(&one), sorted(&many));
        assert!(many.calls < one.calls, "lockstep seeds share model calls: {} vs {}", many.calls, one.calls);
        // Rounds until the budget: the last call is cut to what the budget affords, so less than one
        // population (100 individuals × 2 rows) or one local walker is left unasked.
        let budget = FfiBudget { max_queries: 50_000, ..Default::default() };
        let capped = planted().with_seeds(seeds).with_budget(budget).generate::<Grft>(json!({"rounds": 0})).unwrap();
        assert!(capped.rows <= 50_000 && capped.rows > 50_000 - 200, "{} rows", capped.rows);
        let capped_ids = planted().generate::<Grft>(json!({"max_idis": 7})).unwrap();
        assert_eq!(capped_ids.cases.len(), 7);
    }

    #[test]
    fn a_budget_below_one_lockstep_generation_runs_the_populations_it_affords() {
        // One lockstep generation of the defaults is 64 seeds × 100 individuals × 2 rows = 12,800
        // rows; 5,000 afford 25 populations of the first generation and nothing more.
        let seeds = planted_domain(3).sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(5), 1000);
        let budget = FfiBudget { max_queries: 5_000, ..Default::default() };
        let run = planted().with_seeds(seeds).with_budget(budget).generate::<Grft>(json!({})).unwrap();
        assert_eq!((run.rows, run.calls), (5_000, 1), "one partial generation of 25 populations");
        assert!(run.generated > 0 && run.generated <= 2_500, "{} inputs", run.generated);
        assert!(!run.cases.is_empty() && run.cases.iter().all(band), "{} cases", run.cases.len());
    }

    #[test]
    fn binary_protected_inputs_cost_two_model_rows_each() {
        let seeds = vec![5.0, 5.0, 5.0, 1.0];
        let run = planted().with_seeds(seeds).generate::<Grft>(json!({"num_seeds": 1, "local_num": 0, "pop_num": 10})).unwrap();
        assert_eq!(run.rows, 2 * 10, "one generation of 10 individuals, each with its other-sex variant");
        assert!(run.cases.iter().any(|c| c.instance == [5.0, 5.0, 5.0, 1.0]), "the seed itself is an IDI");
        assert!(run.cases.iter().all(|c| c.origin == origin::GLOBAL && band(c)));
    }
}
