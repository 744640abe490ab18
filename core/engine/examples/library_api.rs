//! A fairness audit from Rust code, without a TOML file: the bundled census data is read into a
//! Polars `DataFrame`, the bundled ONNX model is loaded, and the engine's typed figures are read
//! back. Only stages that need no plugin are used.
//!
//! Run it with `cargo run -p fairpipe-core --example library_api`.

use fairpipe_core::run::Pipeline;
use fairpipe_core::stages::check::{CheckConfig, CheckFigures};
use fairpipe_core::stages::estimate::{EstimateConfig, EstimateFigures};
use fairpipe_core::stages::group_metrics::{GroupMetricsConfig, GroupMetricsFigures};
use fairpipe_core::stages::load::{LabelValue, LoadConfig, LoadFigures};
use fairpipe_core::stages::load_model::{LoadModelConfig, LoadModelFigures};
use fairpipe_core::stages::options::Rows;
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

    let pipeline = Pipeline::builder("census-from-code")
        .seed(1)
        .stage("data", data, &[])
        .stage("model", LoadModelConfig::new(format!("{bundled}/models/census.onnx")), &[("data", "data")])
        .stage("estimate", EstimateConfig { trials: 50, samples: 500, ..Default::default() }, &[("model", "model")])
        .stage("check", CheckConfig { split: Rows::Test, ..Default::default() }, &[("model", "model")])
        .stage("metrics", GroupMetricsConfig::default(), &[("model", "model")])
        .build()?;

    // Run in memory (`pipeline.run(dir, false)` would also write summary.json, tables and report.html).
    let run = pipeline.execute(false)?;

    let data: LoadFigures = run.figures("data")?;
    let model: LoadModelFigures = run.figures("model")?;
    let estimate: EstimateFigures = run.figures("estimate")?;
    let check: CheckFigures = run.figures("check")?;
    let metrics: GroupMetricsFigures = run.figures("metrics")?;

    println!("data: {} rows ({} train / {} test), protected: {}", data.rows, data.rows_train, data.rows_test, data.protected.join(", "));
    println!(
        "model: {} on {}, test accuracy {:.2}%",
        model.model.model,
        model.executor.as_deref().unwrap_or("?"),
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
