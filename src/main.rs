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
        /// A gate condition `STAGE.FIELD OP NUMBER` (repeatable; added to the pipeline's
        /// `[gate]`): the run writes its results, then exits 3 when a condition fails.
        #[arg(long = "gate", value_name = "CONDITION")]
        gate: Vec<fairpipe_core::gate::Condition>,
    },
    /// Check a pipeline completely (files, columns, keys, graph) without running it.
    Validate {
        /// The pipeline file.
        pipeline: PathBuf,
    },
    /// List the stage kinds with their inputs and parameters, and every plugin.
    List,
    /// Create a method plugin crate from the template, to build outside this workspace.
    NewPlugin {
        /// The plugin's name (lower-case letters, digits, `_`): `plugin = "NAME"` in a pipeline.
        name: String,
        /// Folder to create the crate in (default: the current folder).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// fairpipe's `core/abi` folder (the SDK); default: the sources this binary was built from.
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    watch_signals();
    if let Err(e) = fairpipe::register_builtins() {
        eprintln!("error: a built-in method is broken: {e}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::GateFailed) => ExitCode::from(GATE_FAILED),
        Err(e) => {
            eprintln!("error: {e}");
            let signal = SIGNAL.load(std::sync::atomic::Ordering::SeqCst);
            if fairpipe_core::interrupt::requested() && signal > 0 {
                return ExitCode::from(128 + signal as u8);
            }
            ExitCode::FAILURE
        }
    }
}

/// On SIGINT or SIGTERM, ask running searches to stop (they end within a fraction of a second and
/// the run fails without writing anything); a stage that cannot be stopped, or a second signal,
/// ends the process with the conventional exit code (130 for SIGINT, 143 for SIGTERM).
/// Seconds after the first signal at which the process ends even if the run has not stopped (a
/// plugin that does not return is abandoned after [`fairpipe_core::plugin::GRACE_SECONDS`]; this is
/// the last resort). The staging folder and the lock are removed first.
const FORCED_EXIT_SECONDS: u64 = 5;

/// The first signal received (0: none).
static SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

fn watch_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else { return };
    std::thread::spawn(move || {
        let mut first = true;
        for signal in signals.forever() {
            let code = 128 + signal;
            if !first {
                fairpipe_core::interrupt::cleanup_now();
                std::process::exit(code);
            }
            first = false;
            SIGNAL.store(signal, std::sync::atomic::Ordering::SeqCst);
            fairpipe_core::interrupt::request();
            eprintln!("\ninterrupted: stopping (press Ctrl-C again to quit at once)");
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(FORCED_EXIT_SECONDS));
                eprintln!("error: the run did not stop within {FORCED_EXIT_SECONDS} s of the signal; ending it (nothing written)");
                fairpipe_core::interrupt::cleanup_now();
                std::process::exit(code);
            });
        }
    });
}

/// The exit code of a run whose results were written but a `[gate]` condition failed.
const GATE_FAILED: u8 = 3;

/// How a command that did not fail ended.
enum Outcome {
    /// Done.
    Done,
    /// A run wrote its results, but a gate condition failed.
    GateFailed,
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Run { pipeline, out, seed, quiet, gate } => {
            let mut p = Pipeline::load(&pipeline, seed)?;
            for c in gate {
                p.add_gate(c).map_err(anyhow::Error::msg)?;
            }
            let out = out.or_else(|| p.out.clone()).unwrap_or_else(|| PathBuf::from("out").join(&p.name));
            let report = p.run(&out, !quiet)?;
            print_summary(&report.summary);
            say!("\nresults: {}", out.display());
            for f in &report.files {
                say!("  {}", f.display());
            }
            if let Some(gate) = report.summary.get("gate") {
                let outcomes: Vec<fairpipe_core::gate::Outcome> = serde_json::from_value(gate["conditions"].clone()).unwrap_or_default();
                let passed = gate["passed"].as_bool() == Some(true);
                say!("\ngate: {}", if passed { "passed" } else { "FAILED (exit code 3)" });
                say!("{}", fairpipe_core::gate::table(&outcomes).trim_end());
                if !passed {
                    return Ok(Outcome::GateFailed);
                }
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
        Command::NewPlugin { name, dir, sdk } => {
            let sdk = sdk.unwrap_or_else(fairpipe::scaffold::default_sdk_path);
            let root = fairpipe::scaffold::new_plugin(&name, &dir, &sdk)?;
            say!("created {}", root.display());
            say!("next: cd {} && cargo test && cargo build --release", root.display());
            say!(
                "then: plugin_path = [\"{}\"] in a pipeline's [pipeline] table, and plugin = \"{name}\" in a generate stage",
                root.join("target/release").display()
            );
        }
        Command::List => {
            say!("{}", stage_reference());
            say!("{}", fairpipe::builtin_reference());
            let files = fairpipe::file_plugins_reference(&[]);
            if !files.is_empty() {
                say!("{files}");
            }
        }
    }
    Ok(Outcome::Done)
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
