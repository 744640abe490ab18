//! `generate`: run a method plugin under a budget and collect the cases it emits.

use std::sync::Arc;
use std::time::Instant;

use fairpipe_abi::ffi::FfiBudget;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::options::{check_protected, PluginChoice};
use crate::error::{Error, Result, StageError};
use crate::pieces::{block, piece_seed, Piece, SearchPiece};
use crate::plugin::{Plugin, RunSpec};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{figures_map, with_protected, Artifact, ArtifactKind, CasesArtifact, Inputs, Stage, StageContext, StageOutput};

/// The `generate` stage kind.
pub const KIND: StageKind = StageKind {
    name: "generate",
    doc: "Run a method plugin (random, aequitas, …) from a cluster stage's seeds, or from uniform random seeds, under a budget; collects the cases it emits.",
    inputs: &[
        InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "the model under test" },
        InputDoc { role: "seeds", accepts: &[ArtifactKind::Seeds], required: false, doc: "seed rows from a cluster stage" },
    ],
    output: ArtifactKind::Cases,
    keys: GenerateConfig::keys,
    tag: None,
    example: "[stages.search]\nkind = \"generate\"\nmodel = \"model\"\nseeds = \"seeds\"\nplugin = \"aequitas\"\nparams = { strategy = \"fully_directed\" }",
    configure: configure::<GenerateConfig>,
    fields: fields_of::<GenerateConfig>,
    read: read_debug::<GenerateConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Adaptive,
    figures: FigureDoc::of::<GenerateFigures>(),
};

/// The `generate` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct GenerateConfig {
    /// Plugin name, e.g. "aequitas" (fairpipe list shows the installed ones).
    #[key(default = "required (or path)")]
    pub plugin: Option<String>,
    /// Load the plugin from this library file instead.
    pub path: Option<std::path::PathBuf>,
    /// The plugin's own parameters, validated by the plugin.
    #[key(default = "{}")]
    pub params: Option<Value>,
    /// Uniform random seeds when no seeds input is connected.
    pub random_seeds: usize,
    /// Seed of those random seeds: give two stages the same value to search both models from the
    /// same inputs.
    #[key(default = "derived from the stage")]
    pub random_seeds_seed: Option<u64>,
    /// Budget: seeds used at most.
    #[key(default = "0 (all)")]
    pub max_seeds: u64,
    /// Budget: plugin iterations.
    #[key(default = "0 (no limit)")]
    pub max_iterations: u64,
    /// Budget: rows the plugin asks the model about (answered from the score cache or not).
    #[key(default = "0 (no limit)")]
    pub max_queries: u64,
    /// Budget: wall time in seconds.
    #[key(default = "0 (no limit)")]
    pub max_seconds: f64,
    /// Probability threshold of Aequitas Def. 4.1.
    #[key(default = "none (labels)")]
    pub gamma: Option<f64>,
    /// Audit these protected attributes instead of the data's.
    #[key(shared = super::options::PROTECTED)]
    pub protected: Option<Vec<String>>,
    /// Split the seeds into this many blocks, each searched by its own run of the plugin (its
    /// parameters apply per block; stream from the stage seed and the block's number; budgets
    /// shared out; IDIs an earlier block found dropped): the pieces a sharded run (`--shard`)
    /// deals out. 1 keeps the method's own search over all seeds.
    pub units: usize,
    /// Answer the plugin's queries from a cache of the rows it has scored (capacity
    /// FAIRPIPE_CACHE_ROWS, default 1,000,000 rows; results are the same, only the rows sent to
    /// the model change); "auto" uses it, but for a network or linear model run in this process
    /// only while enough of the rows asked repeat to pay for the look-ups (decided per 100,000
    /// rows asked); true always, false never; `cache_choice` says what was done and why.
    #[key(ty = "bool or \"auto\"")]
    pub cache: crate::score_cache::CacheChoice,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            plugin: None,
            path: None,
            params: None,
            random_seeds: 1000,
            random_seeds_seed: None,
            max_seeds: 0,
            max_iterations: 0,
            max_queries: 0,
            max_seconds: 0.0,
            gamma: None,
            protected: None,
            units: 1,
            cache: crate::score_cache::CacheChoice::Auto,
        }
    }
}

impl GenerateConfig {
    fn choice(&self) -> PluginChoice {
        PluginChoice { plugin: self.plugin.clone(), path: self.path.clone(), params: self.params.clone() }
    }
}

impl StageConfig for GenerateConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        self.choice().validate(c, None, fairpipe_abi::ffi::kind::GENERATOR, "use it in a group_score stage");
        if let Some(g) = self.gamma {
            c.within("gamma", g, 0.0, 1.0);
        }
        c.at_least("random_seeds", self.random_seeds, 1);
        c.at_most("random_seeds", self.random_seeds as u128, crate::limits::MAX_SEEDS as u128);
        c.at_most("max_seeds", u128::from(self.max_seeds), crate::limits::MAX_SEEDS as u128);
        c.at_most("max_iterations", u128::from(self.max_iterations), u128::from(crate::limits::MAX_ITERATIONS));
        c.within("max_seconds", self.max_seconds, 0.0, 1e9);
        check_protected(c, &self.protected);
        c.at_least("units", self.units, 1);
        c.at_most("units", self.units as u128, crate::limits::MAX_SEEDS as u128);
    }

    fn instantiate(self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        let plugin = self.choice().load(&env.dir, &env.plugin_path, None)?;
        let params = self.choice().params();
        Ok(Box::new(Generate { plugin, params, config: self }))
    }
}

/// Figures of a `generate` stage (output contract: `generated`, `model_queries`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct GenerateFigures {
    /// Plugin name and version.
    pub plugin: String,
    /// The plugin's parameters.
    pub params: Value,
    /// Where the seeds came from.
    pub seed_source: String,
    /// Unique test inputs generated.
    pub generated: u64,
    /// Cases emitted.
    pub emitted: usize,
    /// Wall time of the plugin run.
    pub run_elapsed_s: f64,
    /// Seconds spent in the model.
    pub model_time_s: f64,
    /// model_time_s / run_elapsed_s.
    pub model_time_share: f64,
    /// Rows the plugin asked the model about.
    #[serde(default)]
    pub queries_asked: u64,
    /// Rows actually sent to the model (`queries_asked − cache_hits`; the same as the stage's
    /// `model_queries`). For a remote model, the rows its own row cache answered are among these
    /// and are counted in the model stage's `remote` figures.
    #[serde(default)]
    pub rows_scored: u64,
    /// Rows answered by the model's shared score cache (or repeated within one query).
    #[serde(default)]
    pub cache_hits: u64,
    /// Whether the shared score cache was used.
    #[serde(default)]
    pub cache: bool,
    /// The `cache` key's choice and why, in words: `"on (cache = true)"`, `"auto: the model takes
    /// 1645 multiply-adds a row in this process, the cache pays above 88% repeats (…); on from the
    /// start, off from row 200120 (52% repeats)"`; one per block of seeds when they differ.
    #[serde(default)]
    pub cache_choice: String,
    /// How the model's gradients were computed for a white-box method: `"exact"` (a network or
    /// linear model run in this process) or `"finite_differences"`; absent when the plugin asked
    /// for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradient: Option<String>,
    /// Rows whose gradient the plugin asked for (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradient_rows: Option<u64>,
    /// Model rows evaluated for those gradients, included in `queries_asked` and `rows_scored`
    /// (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradient_model_rows: Option<u64>,
    /// Rows the plugin asked the model about that lay outside the domain (past a bound, or
    /// between two category levels) and were held to it before the model saw them: present for a
    /// model that reads categories by name or rounds its inputs (a Python or served model, an
    /// LLM); absent for one that takes any real input (a network or tree ensemble over the
    /// encoded vector), which is shown every row as the plugin asked, as the methods' reference
    /// codes show theirs (docs/methods.md, "What the model sees").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_held_to_domain: Option<u64>,
    /// The budget that cut the search short, when the host did (`"max_seconds"`, or an LLM's
    /// `"max_requests"` or `"max_tokens_total"`); absent when
    /// the plugin ended by itself (or at its own query or iteration count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// The protected attributes the search changes (the data's, or the stage's `protected`);
    /// empty in a summary written before this was recorded.
    #[serde(default)]
    pub protected: Vec<String>,
    /// Seed blocks searched one after another (`units`; absent when 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<usize>,
    /// IDIs dropped because an earlier block had found them (absent when `units` is 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates_dropped: Option<usize>,
    /// Each block's own figures from the plugin (absent when `units` is 1; the integer ones are
    /// also summed at the top level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_figures: Option<Vec<Value>>,
    /// Figures the plugin sent of its own (SG's per-origin counts and coverage).
    #[serde(flatten)]
    pub plugin_figures: Map<String, Value>,
}

struct Generate {
    plugin: &'static Plugin,
    params: Value,
    config: GenerateConfig,
}

/// A generate stage's cases are a search's, on the protected attributes it changed.
impl StageFigures for GenerateFigures {
    const HEADLINE: &'static [&'static str] = &["generated", "emitted"];

    const SEARCH: bool = true;

    fn protected(&self) -> Vec<String> {
        self.protected.clone()
    }
}

impl Stage for Generate {
    fn score_needs(&self) -> Vec<crate::stage::ScoreNeed> {
        self.config.choice().score_need(self.plugin).into_iter().chain(super::options::gamma_need(self.config.gamma)).collect()
    }

    fn preflight(&self, data: &crate::data::Dataset, warnings: &crate::warnings::Warnings) -> Result<()> {
        with_protected(&data.domain, self.config.protected.as_deref(), warnings).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let pieces = (0..self.config.units).map(|k| self.run_piece(ctx, inputs, k)).collect::<Result<Vec<_>>>()?;
        self.combine(ctx, inputs, pieces)
    }

    fn pieces(&self) -> usize {
        self.config.units
    }

    fn run_piece(&self, ctx: &StageContext, inputs: &Inputs, piece: usize) -> Result<Piece> {
        let model = inputs.model("model")?;
        let domain = &with_protected(&model.data.domain, self.config.protected.as_deref(), &ctx.warnings)?;
        let (mut seeds, _) = self.seeds(ctx, inputs, domain)?;
        let units = self.config.units;
        let width = domain.width().max(1);
        let mut budget = FfiBudget {
            max_seeds: self.config.max_seeds,
            max_iterations: self.config.max_iterations,
            max_queries: self.config.max_queries,
            max_seconds: self.config.max_seconds,
        };
        if units > 1 {
            // The budget is shared out: seeds are cut to `max_seeds` before they are split, the
            // counts are divided among the blocks and so is the time.
            if budget.max_seeds > 0 {
                seeds.truncate(seeds.len().min(budget.max_seeds as usize * width));
            }
            let rows_in_all = seeds.len() / width;
            if units > rows_in_all {
                // A block of the search needs a seed row.
                return Err(StageError::AboveAvailable {
                    key: "units",
                    value: units,
                    what: "the search's seed rows",
                    available: rows_in_all,
                }
                .into());
            }
            let rows = block(rows_in_all, units, piece);
            seeds = seeds[rows.start * width..rows.end * width].to_vec();
            // Block k gets n / units, and one more for the first n % units blocks: the shares add
            // up to n exactly (rounded up, the blocks could ask units − 1 rows past max_queries).
            let share = |n: u64| n / units as u64 + u64::from((piece as u64) < n % units as u64);
            for (what, n) in
                [("the rows of `max_queries`", budget.max_queries), ("the iterations of `max_iterations`", budget.max_iterations)]
            {
                if n > 0 && n < units as u64 {
                    // A block's share of 0 would read as "no limit".
                    return Err(StageError::AboveAvailable { key: "units", value: units, what, available: n as usize }.into());
                }
            }
            budget = FfiBudget {
                max_seeds: 0,
                max_iterations: share(budget.max_iterations),
                max_queries: share(budget.max_queries),
                max_seconds: budget.max_seconds / units as f64,
            };
        }
        crate::score_cache::ScoreCache::capacity_from_env().map_err(|e| Error::Invalid(e.to_string()))?;
        // Each run of the plugin (each block of seeds) has a cache of its own, so that the figures
        // are the same however the stage is split, sharded or preceded.
        let oracle = model.oracle.for_plugin_run(self.config.cache);
        let busy_before = model.oracle.busy_seconds();
        let started = Instant::now();
        let spec =
            RunSpec { params: &self.params, seeds: &seeds, rng_seed: piece_seed(ctx.seed, piece, units), budget, gamma: self.config.gamma };
        let output = self.plugin.generate_linked(&oracle, domain, &model.data.links, &spec, &ctx.progress)?;
        let elapsed_s = started.elapsed().as_secs_f64();
        let mut result = SearchPiece {
            instances: Vec::with_capacity(output.cases.len() * width),
            counterparts: Vec::with_capacity(output.cases.len() * width),
            origins: Vec::with_capacity(output.cases.len()),
            at_s: Vec::with_capacity(output.cases.len()),
            generated: output.generated,
            queries: output.tally.scored + output.gradient.map_or(0, |g| g.model_rows),
            asked: output.tally.asked + output.gradient.map_or(0, |g| g.model_rows),
            cache_hits: output.tally.hits,
            cache_choice: Some(Box::new(oracle.cache_choice(self.config.cache))),
            gradient: output.gradient.map(|g| g.method.name().to_string()),
            gradient_rows: output.gradient.map_or(0, |g| g.rows),
            gradient_model_rows: output.gradient.map_or(0, |g| g.model_rows),
            rows_held: (!oracle.model().takes_any_real_input()).then_some(output.held),
            elapsed_s,
            model_time_s: model.oracle.busy_seconds() - busy_before,
            stopped_by_host: output.stopped_by_host,
            budget: output.budget,
            seeds: seeds.len() / width,
            report: output.report,
        };
        for c in output.cases {
            result.instances.extend(c.instance);
            result.counterparts.extend(c.counterpart);
            result.origins.push(c.origin);
            result.at_s.push(c.at_s);
        }
        Ok(Piece::Search(result))
    }

    fn combine(&self, ctx: &StageContext, inputs: &Inputs, pieces: Vec<Piece>) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let domain = &with_protected(&model.data.domain, self.config.protected.as_deref(), &ctx.warnings)?;
        let (_, seed_source) = self.seeds(ctx, inputs, domain)?;
        let width = domain.width();
        if pieces.len() != self.config.units {
            return Err(Error::Internal(format!("the search has {} pieces; it was split into {}", pieces.len(), self.config.units)));
        }
        let mut searches = Vec::with_capacity(pieces.len());
        for (k, piece) in pieces.into_iter().enumerate() {
            match piece {
                Piece::Search(s) if s.instances.len() == s.origins.len() * width && s.counterparts.len() == s.instances.len() => {
                    searches.push(s)
                }
                _ => return Err(Error::Internal(format!("piece {k} of the search is not a search over {width}-column rows"))),
            }
        }
        let elapsed_s: f64 = searches.iter().map(|s| s.elapsed_s).sum();
        let model_time_s: f64 = searches.iter().map(|s| s.model_time_s).sum();
        let queries: u64 = searches.iter().map(|s| s.queries).sum();
        let queries_asked: u64 = searches.iter().map(|s| s.asked).sum();
        let cache_hits: u64 = searches.iter().map(|s| s.cache_hits).sum();
        let generated: u64 = searches.iter().map(|s| s.generated).sum();
        let several = searches.len() > 1;
        let mut cases = CasesArtifact {
            instances: Vec::new(),
            counterparts: Vec::new(),
            model: model.clone(),
            domain: domain.clone(),
            origins: Vec::new(),
            at_s: Vec::new(),
            generated,
            elapsed_s,
            queries,
        };
        // Cases in piece order; an instance an earlier piece found is dropped (within one piece
        // the plugin's own output is kept as it is).
        let mut earlier: std::collections::HashSet<Vec<u64>> = std::collections::HashSet::new();
        let mut dropped = 0;
        let mut offset = 0.0;
        for s in &searches {
            let mut mine = Vec::new();
            for (i, &origin) in s.origins.iter().enumerate() {
                let row = &s.instances[i * width..(i + 1) * width];
                if several {
                    let key: Vec<u64> = row.iter().map(|x| x.to_bits()).collect();
                    if earlier.contains(&key) {
                        dropped += 1;
                        continue;
                    }
                    mine.push(key);
                }
                cases.instances.extend_from_slice(row);
                cases.counterparts.extend_from_slice(&s.counterparts[i * width..(i + 1) * width]);
                cases.origins.push(origin);
                cases.at_s.push(offset + s.at_s[i]);
            }
            earlier.extend(mine);
            offset += s.elapsed_s;
        }
        // Each block's choice; the same words in every block are said once.
        let mut choices: Vec<&(bool, String)> = Vec::new();
        for choice in searches.iter().filter_map(|s| s.cache_choice.as_deref()) {
            if !choices.contains(&choice) {
                choices.push(choice);
            }
        }
        let cache_used = choices.iter().any(|(used, _)| *used);
        let cache_choice = choices.iter().map(|(_, why)| why.as_str()).collect::<Vec<_>>().join("; ");
        let mut figures = GenerateFigures {
            plugin: format!("{} {}", self.plugin.name, self.plugin.version),
            params: self.params.clone(),
            seed_source,
            generated,
            emitted: cases.origins.len(),
            run_elapsed_s: elapsed_s,
            model_time_s,
            model_time_share: if elapsed_s > 0.0 { model_time_s / elapsed_s } else { 0.0 },
            queries_asked,
            rows_scored: queries,
            cache_hits,
            cache: cache_used,
            cache_choice,
            gradient: searches.iter().find_map(|s| s.gradient.clone()),
            gradient_rows: searches.iter().any(|s| s.gradient.is_some()).then(|| searches.iter().map(|s| s.gradient_rows).sum()),
            gradient_model_rows: searches
                .iter()
                .any(|s| s.gradient.is_some())
                .then(|| searches.iter().map(|s| s.gradient_model_rows).sum()),
            rows_held_to_domain: searches.iter().any(|s| s.rows_held.is_some()).then(|| searches.iter().filter_map(|s| s.rows_held).sum()),
            stopped_by: searches
                .iter()
                .find_map(|s| s.budget.clone())
                .or_else(|| searches.iter().any(|s| s.stopped_by_host).then(|| "max_seconds".to_string())),
            protected: crate::stage::protected_names(domain),
            units: several.then_some(searches.len()),
            duplicates_dropped: several.then_some(dropped),
            unit_figures: None,
            plugin_figures: Map::new(),
        };
        // The host's own figures win over a plugin's of the same name.
        let own = figures_map(&figures);
        let reported: Vec<Map<String, Value>> =
            searches.iter().map(|s| s.report.as_ref().and_then(|r| r["figures"].as_object()).cloned().unwrap_or_default()).collect();
        if several {
            // Integer figures (counts) are summed over the blocks; every block's are kept.
            let mut summed = Map::new();
            for (k, v) in &reported[0] {
                if own.contains_key(k) || !v.is_u64() {
                    continue;
                }
                let values: Option<Vec<u64>> = reported.iter().map(|r| r.get(k).and_then(Value::as_u64)).collect();
                if let Some(values) = values {
                    summed.insert(k.clone(), Value::from(values.iter().sum::<u64>()));
                }
            }
            figures.plugin_figures = summed;
            if reported.iter().any(|r| !r.is_empty()) {
                figures.unit_figures = Some(reported.into_iter().map(Value::Object).collect());
            }
        } else if let Some(extra) = reported.into_iter().next() {
            figures.plugin_figures = extra.into_iter().filter(|(k, _)| !own.contains_key(k)).collect();
        }
        Ok(StageOutput {
            artifact: Artifact::Cases(Arc::new(cases)),
            figures: Arc::new(figures),
            tables: Vec::new(),
            model_queries: queries,
        })
    }
}

impl Generate {
    /// The seed rows (row-major) and where they came from: the seeds input, else uniform random
    /// rows of `domain`.
    fn seeds(&self, ctx: &StageContext, inputs: &Inputs, domain: &crate::domain::Domain) -> Result<(Vec<f64>, String)> {
        Ok(match inputs.seeds("seeds")? {
            Some(s) => (s.seeds.rows.iter().copied().collect(), format!("{} seeds from the seeds input", s.seeds.rows.nrows())),
            None => {
                let seed = self.config.random_seeds_seed.unwrap_or(ctx.seed ^ 0x5eed);
                let rows = domain.sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(seed), self.config.random_seeds);
                (rows, format!("{} uniform random seeds (seed {seed})", self.config.random_seeds))
            }
        })
    }
}
