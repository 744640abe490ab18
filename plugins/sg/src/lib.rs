//! `sg`: symbolic generation of discriminatory inputs (Aggarwal et al., "Black box fairness testing
//! of machine learning models", FSE'19; first as "Automated test generation to detect individual
//! discrimination in AI models").
//!
//! * **Local explanation → path** (Algorithm 2, [`explain`]): around an input t, `lime_samples`
//!   rows (row 0 = t) with each feature drawn from its empirical frequencies, labelled by the model
//!   in one call; a decision tree fitted to them (a deterministic CART, [`cart`], grown by fairpipe-cart
//!   as the native `tree` model is, under SG's own rule: any decrease of the impurity splits;
//!   linfa-trees breaks ties between equal splits differently from run to run); t's decision path as predicates with
//!   their confidences.
//! * **Solving** ([`solve`]): a path constraint within the domain, closest in L1 to the input it
//!   came from ("sticky" solutions), with good_lp + clarabel; integer attributes by tightening strict
//!   bounds to the grid, then rounding and re-checking. Infeasible constraints are skipped.
//! * **Search** (Algorithm 5, [`search`]): a priority queue (lower rank first) seeded with the seeds
//!   (rank 5); a discriminatory input's path gives directed inputs (each non-protected predicate with
//!   confidence below `t2` toggled, rank 1 + average confidence); every input's path gives undirected
//!   inputs (prefix ∧ ¬c for each non-protected predicate c until the first with confidence below
//!   `t1` = 0.3, rank 10 − average confidence); `visited_path` removes repeated constraints; the
//!   search stops after `sample_limit` checked inputs.
//! * **Path coverage** (FSE'19, [`coverage`]): a decision-tree surrogate (depth ≤ 10) of the model
//!   fitted on its predictions over the seed rows; the leaves reached by SG's inputs and by as many uniformly random
//!   inputs are reported, with the surrogate's fidelity.
//!
//! Choices where the paper is silent (the reference behaviour is the ADF/MAFT re-implementation):
//! * The empirical frequencies come from the seeds the host passes (drawn from the training data by
//!   the `cluster` stage): a plugin sees no other data.
//! * `t2` defaults to 2, i.e. every non-protected predicate is toggled, as in the re-implementation;
//!   the paper's pseudo-code filters by `confidence < T2` without giving T2.
//! * An input already checked is not checked (or counted) again.
//! * Generated inputs and IDIs per origin (seed / directed / undirected, the paper's Table 3) and the
//!   coverage figures are sent as a report: the `generate` stage adds them to its figures.

pub mod cart;
pub mod coverage;
pub mod explain;
pub mod search;
pub mod solve;

use fairpipe_abi::sdk::{Generator, Host, PluginError};
use serde_json::json;

use crate::coverage::Surrogate;
use crate::explain::Empirical;
use crate::search::SearchSettings;

/// The SG generator.
pub struct Sg;

impl Generator for Sg {
    const NAME: &'static str = "sg";
    const DOC: &'static str = "SG (Aggarwal et al., FSE'19): symbolic generation over local-explanation decision paths; path constraints solved for the closest input with good_lp, explored from a priority queue of seeds, directed and undirected inputs.";
    type Params = SearchSettings;

    fn generate(settings: &SearchSettings, host: &mut Host) -> Result<(), PluginError> {
        if host.n_seeds == 0 {
            return Err(PluginError::InvalidInput("sg needs seeds: connect a cluster stage, or let generate draw random seeds".into()));
        }
        let width = host.domain.width();
        let seeds = host.seed_rows(usize::MAX).to_vec();
        let empirical = Empirical::new(&host.seeds, width);
        let result = search::run(host, settings, &seeds, &empirical);
        let tally = match result {
            Ok(t) => t,
            Err(PluginError::Stopped) => return Ok(()),
            Err(e) => return Err(e),
        };
        // Path coverage against a surrogate of the model, for SG's inputs and as many random ones.
        let all_seeds = host.seeds.clone();
        let labels: Vec<u8> = host.predict(&all_seeds)?.into_iter().map(|p| u8::from(p > 0.5)).collect();
        let mut figures = json!({
            "generated_seed": tally.generated[0], "generated_directed": tally.generated[1], "generated_undirected": tally.generated[2],
            "idis_seed": tally.idis[0], "idis_directed": tally.idis[1], "idis_undirected": tally.idis[2],
            "infeasible_constraints": tally.infeasible,
        });
        if let Some(surrogate) = Surrogate::fit(&all_seeds, width, &labels) {
            let n = tally.checked.len() / width;
            let random = host.domain.sample_rows(&mut host.rng, n);
            figures["surrogate_fidelity"] = json!(surrogate.fidelity);
            figures["surrogate_leaves"] = json!(surrogate.leaves());
            figures["leaves_reached"] = json!(surrogate.leaves_reached(&tally.checked));
            figures["leaves_reached_random"] = json!(surrogate.leaves_reached(&random));
        }
        host.report(&json!({ "figures": figures }))
    }
}

fairpipe_abi::export_generator!(Sg);

#[cfg(test)]
mod tests {
    use fairpipe_abi::testing::{planted_domain, MockHost};
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;
    use serde_json::json;

    use super::*;

    /// a, b, c on 0..=10 and a protected sex; favourable when a + b + c + 4·sex ≥ 20, so an input
    /// is discriminatory exactly when a + b + c ∈ [16, 19].
    fn planted() -> MockHost {
        let seeds = planted_domain(3).sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(5), 100);
        MockHost::planted(3, 4.0, 20.0).with_seeds(seeds)
    }

    fairpipe_abi::plugin_tests!(SearchSettings);

    #[test]
    fn finds_only_planted_idis_and_reports_them_by_origin() {
        let run = planted().generate::<Sg>(json!({"sample_limit": 200, "lime_samples": 500})).unwrap();
        assert!(run.cases.len() >= 20, "{} cases", run.cases.len());
        assert!(run.cases.iter().all(|c| (16.0..=19.0).contains(&(c.instance[0] + c.instance[1] + c.instance[2]))));
        assert_eq!(run.generated, 200);
        let figures = &run.report.expect("sg reports its figures")["figures"];
        let idis: u64 = ["seed", "directed", "undirected"].iter().map(|o| figures[format!("idis_{o}")].as_u64().unwrap()).sum();
        assert_eq!(idis as usize, run.cases.len());
    }

    #[test]
    fn a_stop_request_ends_the_search_early() {
        let run = planted().stop_after_calls(10).generate::<Sg>(json!({"sample_limit": 200, "lime_samples": 500})).unwrap();
        assert!(run.calls <= 11 && run.generated < 10, "{} calls, {} generated", run.calls, run.generated);
    }
}
