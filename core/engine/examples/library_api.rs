//! A fairness audit from Rust code, without a TOML file: the bundled census data is read into a
//! Polars `DataFrame`, the bundled ONNX model is loaded, and the engine's typed figures are read
//! back. The stages are the standard audit's (`fairpipe_core::preset`: group metrics, an estimate,
//! a check of the test rows), the one Python's `audit` and `fairpipe init` write; a search is
//! added with `Search::standard`.
//!
//! Run it with `cargo run -p fairpipe-core --example library_api`.

use fairpipe_core::preset::{ModelStage, StandardAudit};
use fairpipe_core::stages::check::CheckFigures;
use fairpipe_core::stages::estimate::EstimateFigures;
use fairpipe_core::stages::group_metrics::GroupMetricsFigures;
use fairpipe_core::stages::load::{LabelValue, LoadConfig, LoadFigures};
use fairpipe_core::stages::load_model::{LoadModelConfig, LoadModelFigures};
use polars::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/../../pipelines");

    // Any DataFrame will do: here the bundled census data, read with Polars.
    let frame = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(format!("{bundled}/data/census.csv").into()))?
        .finish()?;

    let mut data = LoadConfig::from_frame(frame, "income", &["gender"]);
    data.drop = vec!["row".into()];
    data.split_column = Some("split".into());
    data.codes = Some(format!("{bundled}/data/census.codes.toml").into());
    data.favourable = Some(LabelValue::Text(">50K".into()));

    let model = ModelStage::Load(LoadModelConfig::new(format!("{bundled}/models/census.onnx")));
    let mut audit = StandardAudit::new("census-from-code", data, model);
    audit.seed = 1;
    let pipeline = audit.builder().build()?;

    // Run in memory (`pipeline.run(dir, false)` would also write summary.json, tables and report.html).
    let run = pipeline.execute(false)?;

    let data: LoadFigures = run.figures("data")?;
    let model: LoadModelFigures = run.figures("model")?;
    let estimate: EstimateFigures = run.figures("estimate")?;
    let check: CheckFigures = run.figures("check")?;
    let metrics: GroupMetricsFigures = run.figures("group_metrics")?;

    println!("data: {} rows ({} train / {} test), protected: {}", data.rows, data.rows_train, data.rows_test, data.protected.join(", "));
    println!(
        "model: {} on {}, test accuracy {:.2}%",
        model.model.model,
        model.opened.executor.as_deref().unwrap_or("?"),
        100.0 * model.model.accuracy_test
    );
    println!(
        "estimate: {:.2}% of the input domain is discriminatory (95% CI [{:.2}%, {:.2}%], {} inputs)",
        100.0 * estimate.rate,
        100.0 * estimate.ci95[0],
        100.0 * estimate.ci95[1],
        estimate.samples
    );
    println!("check: {} of {} test rows are discriminatory ({:.2}%)", check.discriminatory, check.checked, 100.0 * check.rate);
    for g in &metrics.groups {
        println!(
            "selection rate {} = {}: {:.2}% (impact ratio {:.3}, four-fifths {})",
            g.attributes,
            g.group,
            100.0 * g.selection_rate,
            g.impact_ratio,
            if g.four_fifths_ok { "ok" } else { "FLAGGED" }
        );
    }
    if let Some(table) = run.table("check") {
        let columns: Vec<String> = table.get_column_names().iter().map(|c| c.to_string()).collect();
        println!("check table: {} discriminatory rows, columns {}", table.height(), columns.join(", "));
    }
    Ok(())
}
