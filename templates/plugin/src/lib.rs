//! `{{NAME}}`: a fairpipe method plugin. Start from here: it draws inputs uniformly from the domain,
//! checks each against all its protected variants in one model call per batch, and emits the
//! discriminatory ones, each once.

use fairpipe_abi::sdk::{
    at_least, origin, CaseSink, Generator, Host, ParamError, PluginError, PluginParams,
};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The generator.
pub struct Method;

/// Its parameters: the pipeline's `params = { ... }` table. Missing keys take the defaults below;
/// unknown keys, wrong types and values that fail `check` are refused with the key named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Inputs to draw.
    pub samples: usize,
    /// Inputs checked per model call.
    pub batch: usize,
    /// Share of the inputs that start from a seed row (the rest are drawn uniformly).
    pub from_seeds: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            samples: 1000,
            batch: 256,
            from_seeds: 0.0,
        }
    }
}

impl PluginParams for Params {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("samples", "inputs to draw"),
        ("batch", "inputs checked per model call"),
        (
            "from_seeds",
            "share of the inputs copied from a seed row (0: all uniform)",
        ),
    ];

    fn check(&self) -> Result<(), ParamError> {
        at_least("samples", self.samples, 1)?;
        at_least("batch", self.batch, 1)?;
        fairpipe_abi::sdk::in_range("from_seeds", self.from_seeds, 0.0, 1.0)
    }
}

impl Generator for Method {
    const NAME: &'static str = "{{NAME}}";
    const DOC: &'static str = "Uniform random search (a starting point: replace with your method and cite its paper here).";
    type Params = Params;

    fn generate(params: &Params, host: &mut Host) -> Result<(), PluginError> {
        let width = host.domain.width();
        let mut sink = CaseSink::new(0);
        let mut done = 0;
        while done < params.samples {
            let n = params.batch.min(params.samples - done);
            let mut rows = host.domain.sample_rows(&mut host.rng, n);
            if host.n_seeds > 0 && params.from_seeds > 0.0 {
                for row in rows.chunks_exact_mut(width) {
                    if host.rng.gen::<f64>() < params.from_seeds {
                        let i = host.rng.gen_range(0..host.n_seeds);
                        row.copy_from_slice(host.seed(i));
                    }
                }
            }
            let verdicts = host.check(&rows)?;
            sink.tried(host, &rows);
            for (row, v) in rows.chunks_exact(width).zip(&verdicts) {
                if v.discriminatory {
                    sink.emit(host, row, v, origin::GLOBAL)?;
                }
            }
            done += n;
            // Counts an iteration and ends the run when the budget is spent or the user interrupts.
            host.tick()?;
        }
        Ok(())
    }
}

fairpipe_abi::export_generator!(Method);

#[cfg(test)]
mod tests {
    use fairpipe_abi::testing::{check_params, planted_domain, MockHost};
    use serde_json::json;

    use super::*;

    /// A model whose discrimination is known by construction: a, b on 0..=10 and a protected sex;
    /// favourable when a + b + 4·sex ≥ 12, so an input is discriminatory exactly when a + b is in
    /// 8..=11.
    fn planted() -> MockHost {
        MockHost::new(planted_domain(2), |r| {
            if r[0] + r[1] + 4.0 * r[2] >= 12.0 {
                0.8
            } else {
                0.2
            }
        })
    }

    #[test]
    fn parameters_are_documented() {
        check_params::<Params>();
    }

    #[test]
    fn finds_only_the_planted_discrimination() {
        let run = planted()
            .generate::<Method>(json!({"samples": 500}))
            .unwrap();
        assert!(!run.cases.is_empty());
        assert!(run
            .cases
            .iter()
            .all(|c| (8.0..=11.0).contains(&(c.instance[0] + c.instance[1]))));
    }

    #[test]
    fn unknown_parameters_are_refused_with_a_hint() {
        let err = planted()
            .generate::<Method>(json!({"sample": 5}))
            .unwrap_err();
        assert!(err.to_string().contains("did you mean `samples`?"), "{err}");
    }

    /// The conformance suite, through the plugin's real C entry (the one fairpipe calls).
    #[test]
    fn conforms_to_the_plugin_abi() {
        fairpipe_conformance::assert_conforms(crate::FAIRPIPE_PLUGIN);
    }
}
