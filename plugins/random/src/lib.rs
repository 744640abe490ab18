//! `random`: THEMIS-style uniform random search — the baseline every method is compared against.
//! Draws inputs uniformly from the domain in batches, checks each against all protected variants in
//! one model call per batch, and emits the discriminatory ones.

use fairpipe_abi::sdk::{origin, Description, Generator, Host, ParamSpec, ParamType, Params, PluginError};
use serde_json::json;

/// The random-search generator.
pub struct Random;

impl Generator for Random {
    const NAME: &'static str = "random";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn description() -> Description {
        Description {
            doc: "Uniform random sampling of the input domain (THEMIS; the 'Random' baseline of Aequitas §5).",
            params: vec![
                ParamSpec { name: "samples", ty: ParamType::Int { min: 1 }, default: json!(1000), doc: "inputs to draw" },
                ParamSpec { name: "batch", ty: ParamType::Int { min: 1 }, default: json!(512), doc: "inputs checked per model call" },
            ],
        }
    }

    fn generate(params: &Params, host: &mut Host) -> Result<(), PluginError> {
        let total = params.usize("samples");
        let batch = params.usize("batch");
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
