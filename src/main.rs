//! The `fairpipe` command line: run, validate and list audit pipelines.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `println!` that ends the process quietly when stdout is closed (`fairpipe list | head`) instead
/// of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}
use fairpipe_core::pipeline::registry::stage_reference;
use fairpipe_core::pipeline::Pipeline;

/// Test machine-learning classifiers for discrimination with TOML audit pipelines.
#[derive(Parser)]
#[command(name = "fairpipe", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline and write summary.json and the result tables.
    Run {
        /// The pipeline file.
        pipeline: PathBuf,
        /// Output folder (default: `[pipeline] out`, else out/<pipeline name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seed overriding `[pipeline] seed`.
        #[arg(long)]
        seed: Option<u64>,
        /// No progress display.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check a pipeline completely (files, columns, keys, graph) without running it.
    Validate {
        /// The pipeline file.
        pipeline: PathBuf,
    },
    /// List the stage kinds with their inputs and parameters.
    List,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run { pipeline, out, seed, quiet } => {
            let p = Pipeline::load(&pipeline, seed)?;
            let out = out.or_else(|| p.out.clone()).unwrap_or_else(|| PathBuf::from("out").join(&p.name));
            let report = p.run(&out, !quiet)?;
            print_summary(&report.summary);
            say!("\nresults: {}", out.display());
            for f in &report.files {
                say!("  {}", f.display());
            }
        }
        Command::Validate { pipeline } => {
            let p = Pipeline::load(&pipeline, None)?;
            say!(
                "{}: ok ({} stages: {})",
                pipeline.display(),
                p.stages.len(),
                p.stages.iter().map(|s| format!("{} ({})", s.name, s.kind.name)).collect::<Vec<_>>().join(" → ")
            );
        }
        Command::List => {
            say!("{}", stage_reference());
            let found = fairpipe_core::plugin::discover(&fairpipe_core::plugin::search_dirs(&[]));
            say!("plugins (kind = \"generate\", plugin = \"NAME\", params = {{ ... }}):");
            for (name, path) in found {
                match fairpipe_core::plugin::load_path(&path) {
                    Ok(p) => {
                        say!("{} {} ({})\n  {}", p.name, p.version, path.display(), p.description["doc"].as_str().unwrap_or(""));
                        for param in p.description["params"].as_array().into_iter().flatten() {
                            say!(
                                "  param  {:<18} default {:<16} {}",
                                param["name"].as_str().unwrap_or(""),
                                param["default"].to_string(),
                                param["doc"].as_str().unwrap_or("")
                            );
                        }
                    }
                    Err(e) => say!("{name}: refused: {e}"),
                }
                say!();
            }
        }
    }
    Ok(())
}

/// One line per stage with its headline figures.
fn print_summary(summary: &serde_json::Value) {
    say!("pipeline {} (seed {})", summary["pipeline"].as_str().unwrap_or("?"), summary["seed"]);
    let Some(stages) = summary["stages"].as_object() else { return };
    let headline = [
        "rows",
        "accuracy_train",
        "accuracy_test",
        "seeds",
        "rate",
        "ci95",
        "generated",
        "emitted",
        "checked",
        "discriminatory",
        "rejected",
        "samples",
        "rule_sets_kept",
        "worst_score",
        "selection_rate",
    ];
    let order = summary["stage_order"].as_array().cloned().unwrap_or_default();
    let width = order.iter().filter_map(|n| n.as_str()).map(str::len).max().unwrap_or(10);
    for name in order.iter().filter_map(|n| n.as_str()) {
        let Some(figures) = stages.get(name) else { continue };
        let mut parts = Vec::new();
        for key in headline {
            if let Some(v) = figures.get(key) {
                let shown = match v {
                    serde_json::Value::Number(n) if n.is_f64() => format!("{:.4}", n.as_f64().unwrap_or(0.0)),
                    serde_json::Value::Array(a) => format!(
                        "[{}]",
                        a.iter().map(|x| x.as_f64().map(|f| format!("{f:.4}")).unwrap_or_default()).collect::<Vec<_>>().join(", ")
                    ),
                    other => other.to_string(),
                };
                parts.push(format!("{key} {shown}"));
            }
        }
        say!(
            "  {:<width$} {:<10} {:>7.2}s  {}",
            name,
            figures["kind"].as_str().unwrap_or(""),
            figures["elapsed_s"].as_f64().unwrap_or(0.0),
            parts.join(", ")
        );
    }
}
