//! `random`: THEMIS-style uniform random search — the baseline every method is compared against.
//! Draws inputs uniformly from the domain in batches, checks each against all protected variants in
//! one model call per batch, and emits the discriminatory ones.

use fairpipe_abi::sdk::{at_least, origin, Generator, Host, ParamError, PluginError, PluginParams};
use serde::{Deserialize, Serialize};

/// The random-search generator.
pub struct Random;

/// Parameters of [`Random`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomParams {
    /// Inputs to draw.
    pub samples: usize,
    /// Inputs checked per model call.
    pub batch: usize,
}

impl Default for RandomParams {
    fn default() -> Self {
        RandomParams { samples: 1000, batch: 512 }
    }
}

impl PluginParams for RandomParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[("samples", "inputs to draw"), ("batch", "inputs checked per model call")];

    fn check(&self) -> Result<(), ParamError> {
        at_least("samples", self.samples, 1)?;
        at_least("batch", self.batch, 1)
    }
}

impl Generator for Random {
    const NAME: &'static str = "random";
    const DOC: &'static str = "Uniform random sampling of the input domain (THEMIS; the 'Random' baseline of Aequitas §5).";
    type Params = RandomParams;

    fn generate(params: &RandomParams, host: &mut Host) -> Result<(), PluginError> {
        let total = params.samples;
        let batch = params.batch;
        let mut done = 0;
        while done < total {
            let n = batch.min(total - done);
            let rows = host.domain.sample_rows(&mut host.rng, n);
            let verdicts = host.check(&rows)?;
            host.count_generated(n as u64);
            let width = host.domain.width();
            for (row, v) in rows.chunks_exact(width).zip(&verdicts) {
                if v.discriminatory {
                    host.emit(row, v, origin::GLOBAL)?;
                }
            }
            done += n;
            host.tick()?;
        }
        Ok(())
    }
}

fairpipe_abi::export_generator!(Random);

#[cfg(test)]
mod tests {
    use fairpipe_abi::ffi::FfiBudget;
    use fairpipe_abi::testing::MockHost;
    use serde_json::json;

    use super::*;

    /// a, b on 0..=10 and a protected sex; favourable when a + b + 4·sex ≥ 12, so an input is
    /// discriminatory exactly when a + b ∈ [8, 11].
    fn planted() -> MockHost {
        MockHost::planted(2, 4.0, 12.0)
    }

    fairpipe_abi::plugin_tests!(RandomParams);

    #[test]
    fn finds_only_the_planted_discrimination_in_batches() {
        let run = planted().generate::<Random>(json!({"samples": 1000, "batch": 100})).unwrap();
        assert!(run.cases.len() > 100, "{} cases", run.cases.len());
        assert!(run.cases.iter().all(|c| (8.0..=11.0).contains(&(c.instance[0] + c.instance[1]))));
        assert_eq!((run.generated, run.calls, run.rows), (1000, 10, 3000));
    }

    #[test]
    fn the_same_seed_gives_the_same_cases_and_a_stop_ends_the_run() {
        let a = planted().with_rng_seed(4).generate::<Random>(json!({})).unwrap();
        let b = planted().with_rng_seed(4).generate::<Random>(json!({})).unwrap();
        assert_eq!(a, b);
        let stopped = planted().stop_after_calls(1).generate::<Random>(json!({"batch": 10})).unwrap();
        assert_eq!(stopped.calls, 1);
        let budget = FfiBudget { max_queries: 95, ..Default::default() };
        let capped = planted().with_budget(budget).generate::<Random>(json!({"batch": 10})).unwrap();
        assert_eq!(capped.rows, 90, "three rows per input, whole batches only");
    }
}
