//! Plugin stages: `generate` runs a method plugin under a budget; `verify` re-checks every case
//! against the model in the host (plugins are not trusted) and counts IDIs both ways.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use fairpipe_ffi::FfiBudget;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::{json, Map, Value};

use crate::check::Checker;
use crate::error::Result;
use crate::output::TableBuilder;
use crate::pipeline::params::{Params, Problems};
use crate::pipeline::registry::{InputDoc, ParamDoc, StageKind};
use crate::pipeline::stage::{put, with_protected, Artifact, ArtifactKind, CasesArtifact, Inputs, Stage, StageContext, StageOutput};
use crate::plugin::{self, Plugin, RunSpec};

/// The `generate` stage kind.
pub const GENERATE: StageKind = StageKind {
    name: "generate",
    doc: "Run a method plugin (random, aequitas, …) from a cluster stage's seeds, or from uniform random seeds, under a budget; collects the cases it emits.",
    inputs: &[
        InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "the model under test" },
        InputDoc { role: "seeds", accepts: &[ArtifactKind::Seeds], required: false, doc: "seed rows from a cluster stage" },
    ],
    output: ArtifactKind::Cases,
    params: &[
        ParamDoc { name: "plugin", ty: "string", default: "required (or path)", doc: "plugin name, e.g. \"aequitas\" (fairpipe list shows the installed ones)" },
        ParamDoc { name: "path", ty: "path", default: "none", doc: "load the plugin from this library file instead" },
        ParamDoc { name: "params", ty: "table", default: "{}", doc: "the plugin's own parameters, validated by the plugin" },
        ParamDoc { name: "random_seeds", ty: "int", default: "1000", doc: "uniform random seeds when no seeds input is connected" },
        ParamDoc {
            name: "random_seeds_seed",
            ty: "int",
            default: "derived from the stage",
            doc: "seed of those random seeds: give two stages the same value to search both models from the same inputs",
        },
        ParamDoc { name: "max_seeds", ty: "int", default: "0 (all)", doc: "budget: seeds used at most" },
        ParamDoc { name: "max_iterations", ty: "int", default: "0 (no limit)", doc: "budget: plugin iterations" },
        ParamDoc { name: "max_queries", ty: "int", default: "0 (no limit)", doc: "budget: model rows scored" },
        ParamDoc { name: "max_seconds", ty: "float", default: "0 (no limit)", doc: "budget: wall time" },
        ParamDoc { name: "gamma", ty: "float", default: "none (labels)", doc: "probability threshold of Aequitas Def. 4.1" },
        super::audit::PROTECTED,
    ],
    example: "[stages.search]\nkind = \"generate\"\nmodel = \"model\"\nseeds = \"seeds\"\nplugin = \"aequitas\"\nparams = { strategy = \"fully_directed\" }",
    build: build_generate,
};

/// The `verify` stage kind.
pub const VERIFY: StageKind = StageKind {
    name: "verify",
    doc: "Re-check every case against the model in the host; count confirmed and rejected cases and unique IDIs both ways (by non-protected projection and by full instance); write the decoded pairs.",
    inputs: &[InputDoc { role: "cases", accepts: &[ArtifactKind::Cases], required: true, doc: "cases from a generate (or check) stage" }],
    output: ArtifactKind::Cases,
    params: &[],
    example: "[stages.verified]\nkind = \"verify\"\ncases = \"search\"",
    build: build_verify,
};

struct Generate {
    plugin: &'static Plugin,
    params: Value,
    random_seeds: usize,
    random_seeds_seed: Option<u64>,
    budget: FfiBudget,
    gamma: Option<f64>,
    protected: Option<Vec<String>>,
}

struct Verify;

/// The plugin a stage names (`plugin = "…"`, or `path = "…"`, or `default`), checked to be of
/// `kind` (refused otherwise, with `wrong_kind` as the advice), and its validated parameters.
pub(crate) fn configured_plugin(
    params: &Params,
    p: &mut Problems,
    default: Option<&str>,
    kind: u32,
    wrong_kind: &str,
) -> Option<(&'static Plugin, Value)> {
    let name = params.opt_str(p, "plugin");
    let path = params.opt_path(p, "path");
    let loaded = match (&name, &path, default) {
        (_, Some(path), _) => plugin::load_path(&path.v).map_err(|e| (path.span.clone(), e)),
        (Some(name), None, _) => plugin::load_by_name(&name.v, &[]).map_err(|e| (name.span.clone(), e)),
        (None, None, Some(default)) => plugin::load_by_name(default, &[]).map_err(|e| (params.header().clone(), e)),
        (None, None, None) => {
            p.at(params.header(), format!("stage `{}`: missing `plugin` (a plugin name) or `path` (a plugin library)", params.stage()));
            return None;
        }
    };
    let plugin = match loaded {
        Ok(plugin) => plugin,
        Err((span, e)) => {
            p.at(&span, format!("stage `{}`: {e}", params.stage()));
            return None;
        }
    };
    if plugin.kind() != kind {
        let span = name.as_ref().map(|n| n.span.clone()).unwrap_or(params.header().clone());
        p.at(&span, format!("stage `{}`: plugin `{}` is {}; {wrong_kind}", params.stage(), plugin.name, article(plugin.kind_name())));
    }
    let plugin_params = params.raw("params").map(|v| v.v.to_json()).unwrap_or(json!({}));
    if let Err(e) = plugin.validate(&plugin_params) {
        let span = params.raw("params").map(|v| v.span.clone()).unwrap_or(params.header().clone());
        p.at(&span, format!("stage `{}`: {e}", params.stage()));
    }
    Some((plugin, plugin_params))
}

/// "an auditor", "a generator".
fn article(word: &str) -> String {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {word}")
    } else {
        format!("a {word}")
    }
}

fn build_generate(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    let (plugin, plugin_params) = configured_plugin(params, p, None, fairpipe_ffi::kind::GENERATOR, "use it in a group_score stage")?;
    let gamma = params.raw("gamma").map(|_| params.f64_in(p, "gamma", 0.0, 0.0, 1.0));
    Some(Box::new(Generate {
        plugin,
        params: plugin_params,
        random_seeds: params.usize_min(p, "random_seeds", 1000, 1),
        random_seeds_seed: params.raw("random_seeds_seed").map(|_| params.usize_min(p, "random_seeds_seed", 0, 0) as u64),
        budget: FfiBudget {
            max_seeds: params.usize_min(p, "max_seeds", 0, 0) as u64,
            max_iterations: params.usize_min(p, "max_iterations", 0, 0) as u64,
            max_queries: params.usize_min(p, "max_queries", 0, 0) as u64,
            max_seconds: params.f64_in(p, "max_seconds", 0.0, 0.0, 1e9),
        },
        gamma,
        protected: super::audit::protected(params, p),
    }))
}

fn build_verify(_params: &Params, _p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    Some(Box::new(Verify))
}

impl Stage for Generate {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let domain = &with_protected(&model.data.domain, self.protected.as_deref())?;
        let (seeds, seeds_description): (Vec<f64>, String) = match inputs.seeds("seeds")? {
            Some(s) => (s.seeds.rows.iter().copied().collect(), format!("{} seeds from the seeds input", s.seeds.rows.nrows())),
            None => {
                let seed = self.random_seeds_seed.unwrap_or(ctx.seed ^ 0x5eed);
                let rows = domain.sample_rows(&mut Xoshiro256PlusPlus::seed_from_u64(seed), self.random_seeds);
                (rows, format!("{} uniform random seeds (seed {seed})", self.random_seeds))
            }
        };
        let before = model.oracle.rows();
        let busy_before = model.oracle.busy_seconds();
        let started = Instant::now();
        let spec = RunSpec { params: &self.params, seeds: &seeds, rng_seed: ctx.seed, budget: self.budget, gamma: self.gamma };
        let output = self.plugin.generate(&model.oracle, domain, &spec, &ctx.progress)?;
        let elapsed_s = started.elapsed().as_secs_f64();
        let queries = model.oracle.rows() - before;
        let mut figures = Map::new();
        put(&mut figures, "plugin", format!("{} {}", self.plugin.name, self.plugin.version));
        put(&mut figures, "params", self.params.clone());
        put(&mut figures, "seed_source", seeds_description);
        put(&mut figures, "generated", output.generated);
        put(&mut figures, "emitted", output.cases.len());
        put(&mut figures, "run_elapsed_s", elapsed_s);
        // A generator may send figures of its own (SG's per-origin counts and coverage).
        if let Some(extra) = output.report.as_ref().and_then(|r| r["figures"].as_object()) {
            for (k, v) in extra {
                figures.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let model_time_s = model.oracle.busy_seconds() - busy_before;
        put(&mut figures, "model_time_s", model_time_s);
        put(&mut figures, "model_time_share", if elapsed_s > 0.0 { model_time_s / elapsed_s } else { 0.0 });
        let width = domain.width();
        let mut cases = CasesArtifact {
            instances: Vec::with_capacity(output.cases.len() * width),
            counterparts: Vec::with_capacity(output.cases.len() * width),
            model: model.clone(),
            domain: domain.clone(),
            origins: Vec::new(),
            at_s: Vec::new(),
            generated: output.generated,
            elapsed_s,
            queries,
        };
        for c in output.cases {
            cases.instances.extend(c.instance);
            cases.counterparts.extend(c.counterpart);
            cases.origins.push(c.origin);
            cases.at_s.push(c.at_s);
        }
        Ok(StageOutput { artifact: Artifact::Cases(Arc::new(cases)), figures, tables: Vec::new(), model_queries: queries })
    }
}

fn bits(row: &[f64]) -> Vec<u64> {
    row.iter().map(|v| v.to_bits()).collect()
}

impl Stage for Verify {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let cases = inputs.cases("cases")?;
        let model = &cases.model;
        let domain = &cases.domain;
        let width = domain.width();
        let protected = domain.protected_indices();
        let checker = Checker::new(domain, None);
        let before = model.oracle.rows();
        // Host-side scores of every instance (with all its variants) and every counterpart.
        let verdicts = checker.check(&model.oracle, &cases.instances)?;
        let counter_p = model.oracle.predict_proba(&cases.counterparts)?;
        let mut confirmed_rows = Vec::new();
        let mut confirmed_counter = Vec::new();
        let (mut p_self, mut p_counter, mut times, mut origins) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut by_projection, mut by_full) = (HashSet::new(), HashSet::new());
        let mut timeline: Vec<(f64, usize)> = Vec::new();
        let mut rejected = 0usize;
        for (i, v) in verdicts.iter().enumerate() {
            let row = &cases.instances[i * width..(i + 1) * width];
            let counter = &cases.counterparts[i * width..(i + 1) * width];
            let same_free = (0..width).filter(|j| !protected.contains(j)).all(|j| row[j] == counter[j]);
            let differs_protected = protected.iter().any(|&j| row[j] != counter[j]);
            let in_domain = domain.attributes.iter().zip(row).all(|(a, &x)| x >= a.lower && x <= a.upper);
            if !(v.discriminatory && same_free && differs_protected && in_domain && checker.differs(v.p, counter_p[i])) {
                rejected += 1;
                continue;
            }
            let projection: Vec<u64> = (0..width).filter(|j| !protected.contains(j)).map(|j| row[j].to_bits()).collect();
            let new_projection = by_projection.insert(projection);
            if by_full.insert(bits(row)) {
                confirmed_rows.extend_from_slice(row);
                confirmed_counter.extend_from_slice(counter);
                p_self.push(v.p);
                p_counter.push(counter_p[i]);
                times.push(cases.at_s[i]);
                origins.push(i64::from(cases.origins[i]));
            }
            if new_projection {
                timeline.push((cases.at_s[i], by_projection.len()));
            }
        }
        let checked = verdicts.len();
        let discriminatory = by_projection.len();
        let discriminatory_full = by_full.len();
        let generated = cases.generated.max(1);
        let mut figures = Map::new();
        put(&mut figures, "checked", checked);
        put(&mut figures, "confirmed", checked - rejected);
        put(&mut figures, "rejected", rejected);
        put(&mut figures, "discriminatory", discriminatory);
        put(&mut figures, "discriminatory_full", discriminatory_full);
        put(&mut figures, "generated", cases.generated);
        put(&mut figures, "success_rate", discriminatory_full as f64 / generated as f64);
        put(&mut figures, "success_rate_projection", discriminatory as f64 / generated as f64);
        put(&mut figures, "search_queries", cases.queries);
        put(&mut figures, "search_elapsed_s", cases.elapsed_s);
        put(&mut figures, "per_second", if cases.elapsed_s > 0.0 { discriminatory as f64 / cases.elapsed_s } else { 0.0 });
        let step = (timeline.len() / 50).max(1);
        let curve: Vec<Value> = timeline.iter().step_by(step).chain(timeline.last()).map(|(t, n)| json!([t, n])).collect();
        put(&mut figures, "idis_over_time_s", curve);
        let table = TableBuilder::new()
            .decoded(domain, &confirmed_rows, "", None)
            .decoded(domain, &confirmed_counter, "_counterpart", Some(&protected))
            .f64("p", p_self)
            .f64("p_counterpart", p_counter)
            .i64("origin", origins.clone())
            .build("")?;
        let verified = CasesArtifact {
            instances: confirmed_rows,
            counterparts: confirmed_counter,
            model: model.clone(),
            domain: domain.clone(),
            origins: origins.into_iter().map(|o| o as u32).collect(),
            at_s: times,
            generated: cases.generated,
            elapsed_s: cases.elapsed_s,
            queries: cases.queries,
        };
        let model_queries = model.oracle.rows() - before;
        Ok(StageOutput { artifact: Artifact::Cases(Arc::new(verified)), figures, tables: vec![table], model_queries })
    }
}
