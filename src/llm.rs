//! `fairpipe llm show PIPELINE ROW`: the prompt a pipeline's LLM model is asked for one data row,
//! rendered exactly as a run renders it (the data read by the model's own `load` stage, the
//! template and its `names` table), so a user can check the template before spending requests.
//! `fairpipe llm plan PIPELINE --out FILE`: every request the stages whose prompts do not depend
//! on the answers (load_model, group_metrics, check, estimate) will send, as a batch file;
//! `fairpipe run --responses FILE` answers from the file ([`check_offline`] refuses a search).

use std::path::Path;

use anyhow::{anyhow, bail, Context};
use fairpipe_core::models::llm::cache::ResponseCache;
use fairpipe_core::models::llm::config::{LlmConfig, Price};
use fairpipe_core::models::llm::offline::AnswerSource;
use fairpipe_core::models::llm::prompt::Renderer;
use fairpipe_core::numbers::thousands;
use fairpipe_core::run::Artifact;
use fairpipe_core::run::{OfflinePlan, Pipeline};

/// The system message (if any) and the prompt of data row `row` (counted from 0 over the rows the
/// load stage keeps) for the `load_model` stage `stage` (default: the only one with an `llm` block).
pub fn show(pipeline: &Path, row: usize, stage: Option<&str>) -> anyhow::Result<String> {
    let doc = read_doc(pipeline)?;
    let stages = stages_of(pipeline, &doc)?;
    let with_llm: Vec<(&String, &toml::Table)> = stages
        .iter()
        .filter_map(|(name, s)| s.as_table().map(|t| (name, t)))
        .filter(|(name, t)| t.contains_key("llm") && stage.is_none_or(|wanted| wanted == name.as_str()))
        .collect();
    let (name, model) = match with_llm.as_slice() {
        [one] => *one,
        [] => bail!(
            "{}: no load_model stage{} has an `llm` block",
            pipeline.display(),
            stage.map(|s| format!(" named {s:?}")).unwrap_or_default()
        ),
        _ => bail!(
            "{}: several stages have an `llm` block ({}); name one with --stage",
            pipeline.display(),
            with_llm.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
        ),
    };
    let llm: LlmConfig =
        model["llm"].clone().try_into().with_context(|| format!("{}: stage {name}: the `llm` block", pipeline.display()))?;
    let data_name = model.get("data").and_then(|d| d.as_str()).ok_or_else(|| anyhow!("stage {name} names no `data` stage"))?;
    let load = stages.get(data_name).cloned().ok_or_else(|| anyhow!("stage {name} reads `{data_name}`, which is not a stage"))?;
    // A pipeline of the data stage alone, read and run as the real one would be.
    let mut only = toml::Table::new();
    if let Some(head) = doc.get("pipeline") {
        only.insert("pipeline".into(), head.clone());
    }
    let mut table = toml::Table::new();
    table.insert(data_name.to_string(), load);
    only.insert("stages".into(), toml::Value::Table(table));
    let p = Pipeline::parse(pipeline, &toml::to_string(&only)?, None)?;
    let run = p.execute(false)?;
    let Some(Artifact::Dataset(data)) = run.artifacts.get(data_name) else { bail!("stage {data_name} is not a load stage") };
    let rows = data.x.nrows();
    if row >= rows {
        bail!("row {row} is past the data's {rows} rows (counted from 0)");
    }
    let dir = pipeline.parent().unwrap_or(Path::new("."));
    let renderer =
        Renderer::load(&dir.join(&llm.prompt), &llm.prompt.display().to_string(), &data.domain, &llm.names).map_err(|e| anyhow!(e))?;
    let x: Vec<f64> = data.x.row(row).to_vec();
    let prompt = renderer.render(&x).map_err(|e| anyhow!(e))?;
    let mut shown = String::new();
    if let Some(system) = &llm.system {
        shown.push_str(&format!("[system]\n{system}\n\n"));
    }
    shown.push_str(&format!("[user] (row {row}, stage {name}, {})\n{prompt}", llm.prompt.display()));
    Ok(shown)
}

/// The pipeline file as a TOML table.
fn read_doc(pipeline: &Path) -> anyhow::Result<toml::Table> {
    let text = std::fs::read_to_string(pipeline).with_context(|| format!("cannot read {}", pipeline.display()))?;
    toml::from_str(&text).with_context(|| format!("{} is not valid TOML", pipeline.display()))
}

/// The `[stages]` table of a pipeline.
fn stages_of<'a>(pipeline: &Path, doc: &'a toml::Table) -> anyhow::Result<&'a toml::Table> {
    doc.get("stages").and_then(|s| s.as_table()).ok_or_else(|| anyhow!("{} has no [stages]", pipeline.display()))
}

/// Each stage's name and kind.
fn kinds(stages: &toml::Table) -> Vec<(String, String)> {
    stages.iter().map(|(name, s)| (name.clone(), s.get("kind").and_then(|k| k.as_str()).unwrap_or_default().to_string())).collect()
}

/// What the plan does with a stage of kind `kind`, as the kind says (an unknown kind is left out:
/// the run names it).
fn offline_plan(kind: &str) -> OfflinePlan {
    fairpipe_core::run::registry::find(kind).map_or(OfflinePlan::LeftOut, |k| k.offline_plan)
}

/// What a plan holds: its requests, the stages left out, and the tokens they would cost.
pub struct Planned {
    /// Requests written.
    pub requests: usize,
    /// Stages left out (`NAME (KIND)`).
    pub left_out: Vec<String>,
    /// Characters of the requests' messages (or prompts).
    pub prompt_chars: u64,
    /// The most answer tokens the requests allow (`max_tokens` × `n` of each).
    pub max_answer_tokens: u64,
    /// Requests the pipeline's response caches already answer (a live run sends them nowhere).
    pub cached: usize,
    /// With `price` in every `llm` block: the most the requests not cached cost (their prompt
    /// tokens estimated as [`Planned::prompt_tokens`] does, their answers at `max_tokens`).
    pub cost: Option<f64>,
}

impl Planned {
    /// The prompt tokens, estimated at 4 characters a token (OpenAI's rule of thumb for English;
    /// the server's tokenizer decides, and a `--responses` run reports its `usage`).
    pub fn prompt_tokens(&self) -> u64 {
        self.prompt_chars.div_ceil(4)
    }

    /// The line said before a live run: the requests, those cached, the tokens, the most they
    /// cost with `price`, and the stages not counted.
    pub fn cost_line(&self) -> String {
        let mut line = format!(
            "LLM: this run asks up to {} prompts ({} of them answered by the response cache): about {} prompt tokens (characters / 4; the server's tokenizer decides) and at most {} answer tokens",
            thousands(self.requests as u64),
            thousands(self.cached as u64),
            thousands(self.prompt_tokens()),
            thousands(self.max_answer_tokens)
        );
        if let Some(cost) = self.cost {
            line.push_str(&format!("; at `price`, at most {cost:.2} for the prompts not cached"));
        }
        if !self.left_out.is_empty() {
            line.push_str(&format!(
                "; not planned: {} (a search, and what checks its finds, asks as the answers lead; `max_requests` caps it)",
                self.left_out.join(", ")
            ));
        }
        line
    }
}

/// An `llm` block of the pipeline as a plan's costing reads it: its model's name, its price and
/// its response cache (when the file exists).
struct Block {
    model: String,
    price: Option<Price>,
    cache: Option<ResponseCache>,
}

/// The `llm` blocks of `stages` (of `pipeline`, whose folder the caches are relative to).
fn blocks(pipeline: &Path, stages: &toml::Table) -> anyhow::Result<Vec<Block>> {
    let dir = pipeline.parent().unwrap_or(Path::new("."));
    let mut found = Vec::new();
    for (name, stage) in stages {
        let Some(llm) = stage.get("llm") else { continue };
        let config: LlmConfig = llm.clone().try_into().with_context(|| format!("{}: stage {name}: the `llm` block", pipeline.display()))?;
        let cache = match config.cache.as_deref().filter(|p| !p.as_os_str().is_empty()).map(|p| dir.join(p)) {
            Some(path) if path.is_file() => Some(ResponseCache::open(&path).map_err(|e| anyhow!(e))?),
            _ => None,
        };
        found.push(Block { model: config.model, price: config.price, cache });
    }
    Ok(found)
}

/// Write to `out` every request the pipeline's load_model, group_metrics, check and estimate
/// stages will send (the other stages left out), with `seed` as `run --seed` would; returns the
/// requests written, the stages left out and what the requests hold.
pub fn plan(pipeline: &Path, out: &Path, seed: Option<u64>) -> anyhow::Result<Planned> {
    let doc = read_doc(pipeline)?;
    let stages = stages_of(pipeline, &doc)?;
    if !stages.values().any(|s| s.get("llm").is_some()) {
        bail!("{}: no load_model stage has an `llm` block: there is nothing to plan", pipeline.display());
    }
    let mut kept = toml::Table::new();
    let mut left_out = Vec::new();
    for (name, kind) in kinds(stages) {
        if offline_plan(&kind) == OfflinePlan::Runs {
            kept.insert(name.clone(), stages[&name].clone());
        } else {
            left_out.push(format!("{name} ({kind})"));
        }
    }
    let mut only = toml::Table::new();
    if let Some(head) = doc.get("pipeline") {
        only.insert("pipeline".into(), head.clone());
    }
    only.insert("stages".into(), toml::Value::Table(kept));
    let blocks = blocks(pipeline, stages)?;
    let mut p = Pipeline::parse(pipeline, &toml::to_string(&only)?, seed)?;
    p.llm_answers = AnswerSource::Record(out.to_path_buf());
    p.execute(false)?;
    let text = std::fs::read_to_string(out).with_context(|| format!("cannot read back {}", out.display()))?;
    let priced = blocks.iter().all(|b| b.price.is_some());
    let mut planned = Planned { requests: 0, left_out, prompt_chars: 0, max_answer_tokens: 0, cached: 0, cost: priced.then_some(0.0) };
    for line in text.lines() {
        let request: serde_json::Value = serde_json::from_str(line).with_context(|| format!("cannot read back {}", out.display()))?;
        let body = &request["body"];
        let chars = |v: &serde_json::Value| v.as_str().map_or(0, |s| s.chars().count() as u64);
        let prompt_chars =
            body["messages"].as_array().map_or_else(|| chars(&body["prompt"]), |m| m.iter().map(|m| chars(&m["content"])).sum());
        let answer_tokens = body["max_tokens"].as_u64().unwrap_or(1) * body["n"].as_u64().unwrap_or(1);
        planned.prompt_chars += prompt_chars;
        planned.max_answer_tokens += answer_tokens;
        planned.requests += 1;
        let block = blocks.iter().find(|b| body["model"].as_str() == Some(b.model.as_str()));
        let key = request["custom_id"].as_str().and_then(|id| u128::from_str_radix(id, 16).ok());
        let cached = match (block.and_then(|b| b.cache.as_ref()), key) {
            (Some(cache), Some(key)) => cache.get(key).map_err(|e| anyhow!(e))?.is_some(),
            _ => false,
        };
        if cached {
            planned.cached += 1;
        } else if let (Some(cost), Some(price)) = (planned.cost.as_mut(), block.and_then(|b| b.price)) {
            *cost += price.cost(prompt_chars.div_ceil(4), answer_tokens);
        }
    }
    Ok(planned)
}

/// The cost line said before a live run of `pipeline` (with `seed`), from a plan written to a
/// file of its own and removed; `None` when the pipeline asks no LLM.
pub fn cost_before_run(pipeline: &Path, seed: Option<u64>) -> anyhow::Result<Option<String>> {
    let doc = read_doc(pipeline)?;
    if !stages_of(pipeline, &doc)?.values().any(|s| s.get("llm").is_some()) {
        return Ok(None);
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let file = std::env::temp_dir().join(format!("fairpipe-cost-{}-{nanos}.jsonl", std::process::id()));
    let planned = plan(pipeline, &file, seed);
    let _ = std::fs::remove_file(&file);
    Ok(Some(planned?.cost_line()))
}

/// Refuse a run from a responses file when the pipeline has a search: its prompts depend on the
/// answers, so no plan can list them.
pub fn check_offline(pipeline: &Path) -> anyhow::Result<()> {
    let doc = read_doc(pipeline)?;
    let adaptive: Vec<String> = kinds(stages_of(pipeline, &doc)?)
        .into_iter()
        .filter(|(_, kind)| offline_plan(kind) == OfflinePlan::Adaptive)
        .map(|(name, kind)| format!("{name} ({kind})"))
        .collect();
    if !adaptive.is_empty() {
        bail!(
            "{}: {} search{} adaptively: the prompts depend on the answers, so no responses file can hold them; they need a live endpoint (run without --responses, or leave the search out)",
            pipeline.display(),
            adaptive.join(", "),
            if adaptive.len() == 1 { "es" } else { "" }
        );
    }
    Ok(())
}
