//! SG Algorithm 5: a priority queue of inputs; each popped input is checked for discrimination,
//! explained by its decision path, and new inputs are solved from toggled path constraints —
//! directed (every non-protected predicate of a discriminatory input's path, one at a time) and
//! undirected (the first non-protected predicate with confidence below T1 after a prefix).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};

use fairpipe_abi::sdk::{at_least, in_range, origin, CaseSink, Host, ParamError, PluginError, PluginParams};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::explain::{decision_path, Empirical, Predicate};
use crate::solve::closest;

/// Where a queued input came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A seed.
    Seed,
    /// Directed (local) search.
    Directed,
    /// Undirected (global) search.
    Undirected,
}

impl Source {
    /// The SDK origin code of a case found from this source.
    pub fn origin(self) -> u32 {
        match self {
            Source::Seed => origin::SEED,
            Source::Directed => origin::LOCAL,
            Source::Undirected => origin::GLOBAL,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The search's settings: the plugin's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchSettings {
    /// Inputs to check at most (`limit`).
    pub sample_limit: usize,
    /// Samples of each local explanation.
    pub lime_samples: usize,
    /// Undirected search stops at the first predicate with confidence below this.
    pub t1: f64,
    /// Directed search toggles predicates with confidence below this.
    pub t2: f64,
    /// Rank of seeds.
    pub seed_rank: f64,
    /// Directed inputs get this + average confidence.
    pub directed_rank: f64,
    /// Undirected inputs get this − average confidence.
    pub undirected_rank: f64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            sample_limit: 1000,
            lime_samples: 5000,
            t1: 0.3,
            t2: 2.0,
            seed_rank: 5.0,
            directed_rank: 1.0,
            undirected_rank: 10.0,
        }
    }
}

impl PluginParams for SearchSettings {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("sample_limit", "inputs to check (the paper's limit)"),
        ("lime_samples", "samples of each local explanation"),
        ("t1", "undirected search: stop at the first predicate with a lower confidence"),
        ("t2", "directed search: toggle predicates with a lower confidence (2: all)"),
        ("seed_rank", "queue rank of seeds (lower pops first)"),
        ("directed_rank", "directed inputs: this + average confidence"),
        ("undirected_rank", "undirected inputs: this − average confidence"),
    ];

    fn check(&self) -> Result<(), ParamError> {
        at_least("sample_limit", self.sample_limit, 1)?;
        at_least("lime_samples", self.lime_samples, 10)?;
        in_range("t1", self.t1, 0.0, 1.0)?;
        in_range("t2", self.t2, 0.0, 2.0)?;
        in_range("seed_rank", self.seed_rank, -1e9, 1e9)?;
        in_range("directed_rank", self.directed_rank, -1e9, 1e9)?;
        in_range("undirected_rank", self.undirected_rank, -1e9, 1e9)
    }
}

/// Generated inputs and IDIs per source, and every input checked (for coverage).
#[derive(Debug, Default)]
pub struct Tally {
    /// Inputs checked, by source (seed, directed, undirected).
    pub generated: [usize; 3],
    /// Distinct IDIs, by source.
    pub idis: [usize; 3],
    /// Constraints found infeasible.
    pub infeasible: usize,
    /// Every checked input, row-major.
    pub checked: Vec<f64>,
}

struct Queued {
    rank: f64,
    order: u64,
    input: Vec<f64>,
    source: Source,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    /// The lowest rank pops first (BinaryHeap is a max-heap); ties in insertion order.
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank.total_cmp(&self.rank).then(other.order.cmp(&self.order))
    }
}

fn constraint_key(c: &[Predicate]) -> Vec<(usize, u64, bool)> {
    let mut k: Vec<_> = c.iter().map(Predicate::key).collect();
    k.sort_unstable();
    k
}

fn average_confidence(c: &[Predicate]) -> f64 {
    if c.is_empty() {
        0.0
    } else {
        c.iter().map(|p| p.confidence).sum::<f64>() / c.len() as f64
    }
}

/// Run Algorithm 5 from `seeds` (row-major).
pub fn run(host: &mut Host, settings: &SearchSettings, seeds: &[f64], empirical: &Empirical) -> Result<Tally, PluginError> {
    let width = host.domain.width();
    let protected = host.domain.protected_indices();
    let mut queue = BinaryHeap::new();
    let mut order = 0u64;
    for s in seeds.chunks_exact(width) {
        queue.push(Queued { rank: settings.seed_rank, order, input: s.to_vec(), source: Source::Seed });
        order += 1;
    }
    let mut visited_paths: HashSet<Vec<(usize, u64, bool)>> = HashSet::new();
    let mut sink = CaseSink::new(0);
    let mut tally = Tally::default();
    while sink.n_tried() < settings.sample_limit {
        let Some(Queued { input: t, source, .. }) = queue.pop() else { break };
        if sink.tried(host, &t) == 0 {
            continue;
        }
        tally.generated[source.index()] += 1;
        tally.checked.extend_from_slice(&t);
        let verdict = host.check(&t)?.remove(0);
        // Each input is checked once, so every discriminatory one is a new IDI.
        if verdict.discriminatory && sink.emit(host, &t, &verdict, source.origin())? {
            tally.idis[source.index()] += 1;
        }
        // Local explanation: samples around t labelled by the model in one call.
        let samples = empirical.samples(&t, settings.lime_samples, &mut host.rng);
        let labels: Vec<u8> = host.predict(&samples.rows)?.into_iter().map(|p| u8::from(p > 0.5)).collect();
        let path = decision_path(&samples, &labels);
        host.check_stop()?;
        // New path constraints (directed first, then undirected), each solved once.
        let mut candidates: Vec<(Vec<Predicate>, Source)> = Vec::new();
        if verdict.discriminatory {
            for (i, c) in path.iter().enumerate() {
                if protected.contains(&c.feature) || c.confidence >= settings.t2 {
                    continue;
                }
                let mut constraint = path.clone();
                constraint[i] = c.negated();
                candidates.push((constraint, Source::Directed));
            }
        }
        let mut prefix: Vec<Predicate> = Vec::new();
        for c in &path {
            if protected.contains(&c.feature) {
                continue;
            }
            if c.confidence < settings.t1 {
                break;
            }
            let mut constraint = prefix.clone();
            constraint.push(c.negated());
            candidates.push((constraint, Source::Undirected));
            prefix.push(c.clone());
        }
        candidates.retain(|(constraint, _)| visited_paths.insert(constraint_key(constraint)));
        // The solves are independent: run them in parallel, then queue in order.
        let domain = &host.domain;
        let solutions: Vec<Option<Vec<f64>>> = candidates.par_iter().map(|(constraint, _)| closest(domain, constraint, &t)).collect();
        for ((constraint, source), solution) in candidates.into_iter().zip(solutions) {
            match solution {
                Some(input) => {
                    let r = average_confidence(&constraint);
                    let rank = match source {
                        Source::Directed => settings.directed_rank + r,
                        _ => settings.undirected_rank - r,
                    };
                    queue.push(Queued { rank, order, input, source });
                    order += 1;
                }
                None => tally.infeasible += 1,
            }
        }
        host.tick()?;
    }
    Ok(tally)
}
