//! The `fairpipe` command line: run, validate and list audit pipelines. [`run`] is the whole
//! program: the Rust binary's `main` (`src/main.rs`) and the Python package's `fairpipe` command
//! (`fairpipe_rs._native.cli`) both call it.

use std::ffi::OsString;
use std::path::PathBuf;

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
use fairpipe_core::models::llm::offline::AnswerSource;
use fairpipe_core::run::registry::stage_reference;
use fairpipe_core::run::Summary;
use fairpipe_core::sweep::summary::{MatrixSummary, SweepSummary};
use fairpipe_core::sweep::Sweep;

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
        /// Print nothing but errors and, on standard output, the results folder's path (no
        /// progress, no summary, no warnings: those stay in summary.json; a failed gate's
        /// conditions go to standard error).
        #[arg(long, short)]
        quiet: bool,
        /// A gate condition `STAGE.FIELD OP NUMBER` (repeatable; added to the pipeline's
        /// `[gate]`): the run writes its results, then exits 3 when a condition fails.
        #[arg(long = "gate", value_name = "CONDITION")]
        gate: Vec<fairpipe_core::gate::Condition>,
        /// Combinations of a `[matrix]` run at once (each also uses every core for its searches).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
        jobs: u16,
        /// Run only shard K of N (K from 0): the units whose number is K modulo N, written as a
        /// part for `fairpipe merge`; `env` reads K from JOB_COMPLETION_INDEX and N from
        /// FAIRPIPE_SHARD_COUNT (a Kubernetes Indexed Job).
        #[arg(long, value_name = "K/N|env")]
        shard: Option<fairpipe_core::sweep::shard::ShardSpec>,
        /// The best combination of a `[matrix]`: `min STAGE.FIGURE` or `max STAGE.FIGURE`
        /// (overrides `[matrix] best`).
        #[arg(long, value_name = "min|max COLUMN")]
        best: Option<fairpipe_core::sweep::compare::Best>,
        /// Answer an `llm` model's requests from this file (OpenAI Batch API output, ids from
        /// `fairpipe llm plan`) instead of its server; a search, whose prompts depend on the
        /// answers, is refused.
        #[arg(long, value_name = "FILE.jsonl")]
        responses: Option<PathBuf>,
        /// Also print each bias audit page to `<stage>.pdf` in the out folder (headless Chromium,
        /// no header or footer): as `fairpipe page OUT --pdf`.
        #[arg(long, conflicts_with = "shard")]
        pdf: bool,
    },
    /// A run's bias audit pages (`<stage>.html`): list them, or print them to PDF.
    Page {
        /// The run's out folder (holding summary.json).
        out: PathBuf,
        /// Only this bias_audit stage's page.
        #[arg(long)]
        stage: Option<String>,
        /// Print each page to `<stage>.pdf` beside it with headless Chromium (no header or
        /// footer: no file path or date on the page); FAIRPIPE_BROWSER names another browser.
        #[arg(long)]
        pdf: bool,
    },
    /// Merge the parts of a sharded run (`run --shard`) into the result the unsharded run writes.
    Merge {
        /// The parts' folders (every shard's out folder).
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// Output folder for the merged result.
        #[arg(long)]
        out: PathBuf,
        /// Print nothing but errors and the merged folder's path.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Write a commented starter pipeline for a data file: column kinds and bounds read from it,
    /// the label and the protected attributes guessed (marked CONFIRM), the model's inputs
    /// matched to the columns; it validates as written and a run gives group metrics, an
    /// estimate, a check of the real rows and a search.
    Init {
        /// The data file (CSV with a header row, or Parquet).
        data: PathBuf,
        /// The model to audit (ONNX, or a .json model saved by a train stage); without it the
        /// pipeline trains a stand-in model on the data.
        #[arg(long)]
        model: Option<PathBuf>,
        /// The pipeline file to write (default: DATA's name with -audit.toml, in the current
        /// folder).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The label column, instead of the guess.
        #[arg(long)]
        label: Option<String>,
        /// A protected attribute column, instead of the guesses (repeatable).
        #[arg(long = "protected", value_name = "COLUMN")]
        protected: Vec<String>,
        /// Columns to leave out, comma-separated (e.g. those a model was not trained on; init
        /// drops by itself the columns a model of named inputs does not read).
        #[arg(long = "drop", value_name = "COL,...", value_delimiter = ',')]
        drop: Vec<String>,
        /// Overwrite the pipeline file if it exists.
        #[arg(long)]
        force: bool,
        /// The file is a decision log (people, their sex and/or race, the tool's decisions or
        /// scores): write a bias audit of it, with no model and nothing trained. Init decides so
        /// itself, with no --model or --label, when the columns say so.
        #[arg(long, conflicts_with_all = ["model", "label"])]
        decisions: bool,
    },
    /// Check a pipeline completely (files, columns, keys, graph) without running it.
    #[command(after_help = crate::json::VALIDATE_SCHEMA)]
    Validate {
        /// The pipeline file.
        pipeline: PathBuf,
        /// Output format: `text` for people, `json` for scripts (schema below).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Check that a run's inputs are still the ones it audited: recompute the SHA-256 of every
    /// input file its summary.json's `trail` records and name each one that changed (exit code 1
    /// when one did).
    VerifyRun {
        /// The run's out folder (holding summary.json).
        out: PathBuf,
        /// Where the inputs are now: the folder that holds what the pipeline file's folder held
        /// (each input is looked for at its path relative to the pipeline file, as recorded).
        /// Without it, a run folder moved together with its inputs finds them by that layout,
        /// else at the absolute paths recorded.
        #[arg(long, value_name = "DIR")]
        inputs: Option<PathBuf>,
    },
    /// List the stage kinds with their inputs and parameters, and every plugin.
    #[command(after_help = crate::json::LIST_SCHEMA)]
    List {
        /// Output format: `text` for people, `json` for scripts (schema below).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Print one block of the docs generated from the code, as the docs hold it between their
        /// markers: `stages` (the default) the stage reference of docs/pipeline-reference.md,
        /// `figures` every kind's figure names of docs/output-contract.md, `llm` the keys of
        /// load_model's `llm` block of docs/llm-audits.md (`scripts/write_doc_blocks.py` rewrites
        /// the docs with them).
        #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "stages", conflicts_with = "format")]
        markdown: Option<DocBlock>,
    },
    /// Work with a pipeline's language model (`llm` block of a load_model stage).
    Llm {
        #[command(subcommand)]
        action: LlmAction,
    },
    /// Time how fast a model scores a data file's rows: opened as a load_model stage opens it,
    /// scored batch after batch through the audit's oracle on a pool of threads, for at least
    /// --seconds. Prints the rows scored, the wall and CPU seconds of the scoring (not the
    /// loading) and rows per second (scripts/bench_tree_peers.py compares it with other
    /// libraries).
    ModelSpeed {
        #[command(flatten)]
        options: crate::speed::SpeedOptions,
        /// Print one JSON object instead of a line for people.
        #[arg(long)]
        json: bool,
    },
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

/// What `fairpipe llm` does.
#[derive(Subcommand)]
enum LlmAction {
    /// Print the prompt one data row is rendered into (the system message first, if any).
    Show {
        /// The pipeline file.
        pipeline: PathBuf,
        /// The data row, counted from 0 over the rows the load stage keeps.
        row: usize,
        /// The load_model stage (needed only when several have an `llm` block).
        #[arg(long)]
        stage: Option<String>,
    },
    /// Write every request the load_model, group_metrics, check and estimate stages will send
    /// (OpenAI Batch API input, one JSON line each, `custom_id` = the request's id), for
    /// `run --responses`; nothing is sent.
    Plan {
        /// The pipeline file.
        pipeline: PathBuf,
        /// The file to write.
        #[arg(long, value_name = "FILE.jsonl")]
        out: PathBuf,
        /// Seed overriding `[pipeline] seed` (give `run` the same).
        #[arg(long)]
        seed: Option<u64>,
    },
}

/// A block of the docs that `fairpipe list --markdown` prints.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DocBlock {
    /// docs/pipeline-reference.md's stage reference: every kind with its inputs and keys.
    Stages,
    /// docs/output-contract.md's figure lists: every kind's top-level summary.json names.
    Figures,
    /// docs/llm-audits.md's list of the `llm` block's keys.
    Llm,
}

/// How `validate` and `list` print their result.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// Lines for people.
    Text,
    /// One JSON object for scripts.
    Json,
}

/// Run the command line on `args` (the program's name first, as `std::env::args_os` gives them) and
/// return the process's exit code: 0 done, 1 failed (or `validate --format json` / `verify-run`
/// found problems), 2 bad arguments, 3 a gate condition failed, 128 + N ended by signal N.
/// Installs the SIGINT/SIGTERM handlers (once per process) and registers the built-in methods.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    crate::record_build_commit();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version end here too, with exit code 0.
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    watch_signals();
    if let Err(e) = crate::register_builtins() {
        eprintln!("error: a built-in method is broken: {e}");
        return 1;
    }
    match dispatch(cli) {
        Ok(Outcome::Done) => 0,
        Ok(Outcome::GateFailed) => GATE_FAILED,
        Ok(Outcome::Invalid) => 1,
        Err(e) => {
            eprintln!("error: {e}");
            let signal = SIGNAL.load(std::sync::atomic::Ordering::SeqCst);
            if fairpipe_core::interrupt::requested() && signal > 0 {
                return 128 + signal as u8;
            }
            1
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
    static WATCHING: std::sync::Once = std::sync::Once::new();
    WATCHING.call_once(watch_signals_now);
}

/// [`watch_signals`]'s thread (Unix; on Windows Ctrl-C ends the process as by default: signal-hook's
/// iterator is Unix-only).
#[cfg(not(unix))]
fn watch_signals_now() {}

/// [`watch_signals`]'s thread.
#[cfg(unix)]
fn watch_signals_now() {
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
    /// `validate --format json` found problems (and printed them).
    Invalid,
}

fn dispatch(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Page { out, stage, pdf } => {
            if pdf {
                for written in crate::page::pdfs(&out, stage.as_deref())? {
                    say!("{}", written.display());
                }
            } else {
                for (stage, page) in crate::page::pages(&out, stage.as_deref())? {
                    say!("{stage}: {} (print it with --pdf)", page.display());
                }
            }
        }
        Command::Run { pipeline, out, seed, quiet, gate, jobs, shard, best, responses, pdf } => {
            if quiet {
                fairpipe_core::warnings::set_printed(false);
            }
            if responses.is_some() {
                crate::llm::check_offline(&pipeline)?;
            }
            let mut sweep = Sweep::load(&pipeline, seed, gate, best)?;
            if let Some(file) = responses {
                sweep.llm_answers = AnswerSource::Responses(file);
            }
            let out = out.or_else(|| sweep.out.clone()).unwrap_or_else(|| PathBuf::from("out").join(&sweep.info.pipeline));
            if let Some(shard) = shard {
                let part = sweep.run_shard(&out, shard, usize::from(jobs), !quiet)?;
                if quiet {
                    say!("{}", out.display());
                } else {
                    say!(
                        "shard {shard}: {} of {} units ({}) → {}",
                        part.manifest.units_here.len(),
                        sweep.info.units.len(),
                        part.manifest.units_here.join(", "),
                        out.display()
                    );
                    say!("merge every shard's folder with: fairpipe merge PART... --out DIR");
                }
                return Ok(if part.gate_passed == Some(false) { Outcome::GateFailed } else { Outcome::Done });
            }
            if sweep.info.matrix {
                if pdf {
                    anyhow::bail!("--pdf prints one run's pages: run the matrix, then `fairpipe page OUT/COMBINATION --pdf` for each combination's folder");
                }
                let report = sweep.run(&out, usize::from(jobs), !quiet)?;
                if quiet {
                    say!("{}", out.display());
                } else {
                    print_report(&report.summary);
                    say!("\nresults: {} (matrix.csv, matrix.json, report.html, one folder per combination)", out.display());
                }
                return Ok(gate_outcome(report.gate_passed, quiet));
            }
            // What the LLM will be asked, before the first prompt (a plan of the run, sent nowhere).
            if !quiet && matches!(sweep.llm_answers, AnswerSource::Live) {
                match crate::llm::cost_before_run(&pipeline, seed) {
                    Ok(Some(line)) => eprintln!("{line}"),
                    Ok(None) => {}
                    // The run meets the same error and says it with its place in this file (the
                    // plan's place is in its temporary copy): one short line here.
                    Err(e) => eprintln!(
                        "LLM: no cost line: planning the run failed ({}); the run goes on",
                        e.to_string().split(" (pipeline: ").next().unwrap_or_default()
                    ),
                }
            }
            let p = sweep.pipeline(0)?;
            let report = p.run(&out, !quiet)?;
            let pdfs = if pdf { crate::page::pdfs(&out, None)? } else { Vec::new() };
            if quiet {
                say!("{}", out.display());
            } else {
                print_summary(&report.summary);
                say!("\nresults: {}", out.display());
                for f in report.files.iter().chain(&pdfs) {
                    say!("  {}", f.display());
                }
            }
            if let Some(gate) = &report.summary.gate {
                let passed = gate.passed;
                let table = fairpipe_core::gate::table(&gate.conditions);
                if !passed && quiet {
                    eprintln!("gate: FAILED (exit code 3)\n{}", table.trim_end());
                } else if !quiet {
                    say!("\ngate: {}", if passed { "passed" } else { "FAILED (exit code 3)" });
                    say!("{}", table.trim_end());
                }
                if !passed {
                    return Ok(Outcome::GateFailed);
                }
            }
        }
        Command::Merge { parts, out, quiet } => {
            let report = fairpipe_core::sweep::shard::merge(&parts, &out)?;
            if quiet {
                say!("{}", out.display());
            } else {
                print_report(&report.summary);
                say!("\nmerged {} parts into {}", parts.len(), out.display());
            }
            return Ok(gate_outcome(report.gate_passed, quiet));
        }
        Command::Validate { pipeline, format: Format::Json } => {
            let (valid, json) = crate::json::validate(&pipeline, Sweep::load(&pipeline, None, Vec::new(), None));
            say!("{json:#}");
            if !valid {
                return Ok(Outcome::Invalid);
            }
        }
        Command::Validate { pipeline, format: Format::Text } => {
            let sweep = Sweep::load(&pipeline, None, Vec::new(), None)?;
            let stages = sweep.stage_names();
            let combinations = if sweep.info.matrix { format!(", {} matrix combinations", sweep.info.units.len()) } else { String::new() };
            say!("{}: ok ({} stages: {}{combinations})", pipeline.display(), stages.len(), stages.join(" → "));
        }
        Command::Init { data, model, out, label, protected, drop, force, decisions } => {
            let out = out.unwrap_or_else(|| crate::init::default_out(&data, model.as_deref()));
            let options = crate::init::InitOptions { data, model, out, label, protected, drop, force, decisions };
            let written = crate::init::init(&options)?;
            say!("wrote {}", written.path.display());
            if let Some(log) = &written.log {
                say!("  a decision log: bias_audit of the {log} (no model, no label, nothing trained or dropped)");
                say!(
                    "next: read the CONFIRM lines (each value's category), then fairpipe validate {0} && fairpipe run {0}",
                    written.path.display()
                );
                return Ok(Outcome::Done);
            }
            say!("  label: {} (CONFIRM in the file)", written.label);
            say!(
                "  protected: {} searched; measured (a group metrics stage each): {}",
                written.protected.join(", "),
                written.measured.join(", ")
            );
            if !written.dropped.is_empty() {
                let dropped: Vec<String> = written.dropped.iter().map(|(c, why)| format!("{c} ({why})")).collect();
                say!("  dropped: {}", dropped.join("; "));
            }
            say!("next: read the CONFIRM lines, then fairpipe validate {0} && fairpipe run {0}", written.path.display());
        }
        Command::ModelSpeed { options, json } => {
            let speed = crate::speed::measure(&options)?;
            if json {
                say!("{}", serde_json::to_string(&speed)?);
            } else {
                let cpu = speed.rows_per_cpu_s.map(|r| format!(", {r:.0} rows per CPU second")).unwrap_or_default();
                say!(
                    "{}: {} rows × {} passes in batches of {} on {} thread(s): {:.0} rows/s{cpu} ({})",
                    options.model.display(),
                    speed.rows,
                    speed.passes,
                    speed.batch,
                    speed.threads,
                    speed.rows_per_s,
                    speed.executor
                );
            }
        }
        Command::NewPlugin { name, dir, sdk } => {
            let sdk = sdk.unwrap_or_else(crate::scaffold::default_sdk_path);
            let root = crate::scaffold::new_plugin(&name, &dir, &sdk)?;
            say!("created {}", root.display());
            say!("next: cd {} && cargo test && cargo build --release", root.display());
            say!(
                "then: plugin_path = [\"{}\"] in a pipeline's [pipeline] table, and plugin = \"{name}\" in a generate stage",
                root.join("target/release").display()
            );
        }
        Command::VerifyRun { out, inputs } => {
            let checks = fairpipe_core::trail::verify(&out, inputs.as_deref())?;
            for check in &checks {
                say!("{check}");
            }
            // An LLM endpoint is outside the bundle: asked again, a change is warned of (the name
            // now answers with another model), not counted as an input that differs.
            let trail = fairpipe_core::trail::read_trail(&out)?;
            for check in fairpipe_core::trail::verify_endpoints(&trail) {
                say!("{check}");
                if matches!(check, fairpipe_core::trail::EndpointCheck::Changed(..)) {
                    eprintln!("warning: {check}");
                }
            }
            let changed = checks.iter().filter(|c| !c.ok()).count();
            if changed > 0 {
                eprintln!("{}: {changed} of {} inputs differ from the ones audited", out.display(), checks.len());
                return Ok(Outcome::Invalid);
            }
            say!("{}: all {} inputs are the ones audited", out.display(), checks.len());
        }
        Command::Llm { action: LlmAction::Show { pipeline, row, stage } } => {
            say!("{}", crate::llm::show(&pipeline, row, stage.as_deref())?);
        }
        Command::Llm { action: LlmAction::Plan { pipeline, out, seed } } => {
            let planned = crate::llm::plan(&pipeline, &out, seed)?;
            say!("{} requests → {}", planned.requests, out.display());
            say!(
                "about {} prompt tokens ({} characters at 4 a token; the server's tokenizer decides) and at most {} answer tokens",
                planned.prompt_tokens(),
                planned.prompt_chars,
                planned.max_answer_tokens
            );
            if planned.cached > 0 {
                say!("{} of them answered by the response cache (a live run sends those nowhere)", planned.cached);
            }
            if let Some(cost) = planned.cost {
                say!("at `price`, at most {cost:.2} for the requests not cached");
            }
            if !planned.left_out.is_empty() {
                say!("left out (their prompts depend on the answers, or they ask none): {}", planned.left_out.join(", "));
            }
        }
        Command::List { markdown: Some(DocBlock::Stages), .. } => {
            say!("{}", fairpipe_core::run::registry::stage_reference_block());
        }
        Command::List { markdown: Some(DocBlock::Figures), .. } => {
            say!("{}", fairpipe_core::run::registry::figure_list_block());
        }
        Command::List { markdown: Some(DocBlock::Llm), .. } => {
            say!("{}", fairpipe_core::run::registry::llm_keys_block());
        }
        Command::List { format: Format::Json, .. } => {
            say!("{:#}", crate::json::list(&[]));
        }
        Command::List { format: Format::Text, .. } => {
            say!("{}", stage_reference());
            say!("{}", crate::builtin_reference());
            let files = crate::file_plugins_reference(&[]);
            if !files.is_empty() {
                say!("{files}");
            }
        }
    }
    Ok(Outcome::Done)
}

/// The outcome of a run with gate verdict `passed` (`None`: no gate); `quiet` says only a failure
/// (on standard error).
fn gate_outcome(passed: Option<bool>, quiet: bool) -> Outcome {
    match passed {
        Some(false) => {
            if quiet {
                eprintln!("gate: FAILED in at least one combination (exit code 3)");
            } else {
                say!("\ngate: FAILED in at least one combination (exit code 3)");
            }
            Outcome::GateFailed
        }
        Some(true) => {
            if !quiet {
                say!("\ngate: passed");
            }
            Outcome::Done
        }
        None => Outcome::Done,
    }
}

/// One line per combination of a sweep with its key figures, and the best one.
fn print_sweep(summary: &MatrixSummary) {
    say!("sweep {} (seed {}): {} combinations", summary.pipeline, summary.seed, summary.matrix.combinations);
    for c in &summary.combinations {
        let figures: Vec<String> = c
            .figures
            .iter()
            .map(|(k, v)| match v.as_f64() {
                Some(f) if v.is_f64() => format!("{k} {f:.4}"),
                _ => format!("{k} {v}"),
            })
            .collect();
        say!("  {}  {}", c.name, figures.join(", "));
    }
    if let Some(best) = &summary.matrix.best {
        say!("best by {best}: {}", summary.matrix.best_combination.as_deref().unwrap_or("— (no combination has this figure)"));
    }
}

/// What a run or a merge produced: a sweep's lines, or a run's.
fn print_report(summary: &SweepSummary) {
    match summary {
        SweepSummary::Run(run) => print_summary(run),
        SweepSummary::Matrix(sweep) => print_sweep(sweep),
    }
}

/// The verdict per protected attribute (`summary.json`'s `verdicts`), with the thresholds and
/// what to do next, before the stages.
fn print_verdicts(summary: &Summary) {
    let Some(section) = &summary.verdicts else { return };
    if section.attributes.is_empty() {
        return;
    }
    say!("verdict ({}):", fairpipe_core::verdict::thresholds_words(section));
    let several = section.attributes.iter().any(|a| a.model != section.attributes[0].model);
    for a in &section.attributes {
        let model = if several { format!("[{}] ", a.model) } else { String::new() };
        say!("  {:<12} {model}{}", a.severity.word(), a.line);
        say!("  {:<12} next: {}", "", a.next);
    }
}

/// The verdicts, then one line per stage with the figures its kind shows
/// ([`fairpipe_core::stage_lines::headline`]) and, under a model stage, what runs the model.
fn print_summary(summary: &Summary) {
    say!("pipeline {} (seed {})", summary.pipeline, summary.seed);
    print_verdicts(summary);
    let width = summary.stage_order.iter().map(String::len).max().unwrap_or(10);
    let kind_width = summary.stages.values().map(|entry| entry.kind.len()).max().unwrap_or(10);
    say!("stages:");
    for (name, entry) in summary.in_order() {
        say!(
            "  {:<width$} {:<kind_width$} {:>7.2}s  {}",
            name,
            entry.kind,
            entry.elapsed_s,
            fairpipe_core::stage_lines::headline(entry).join(", ")
        );
        if let Some(line) = fairpipe_core::stage_lines::model_line(summary, name) {
            say!("  {:<width$} {:<kind_width$}           {line}", "", "");
        }
    }
}
