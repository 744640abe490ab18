//! Audit stages on a model: `cluster` (seeds), `estimate` (share of discriminatory inputs in the
//! domain) and `check` (which of the dataset's own rows are discriminatory).

use std::sync::Arc;

use serde_json::Map;

use crate::check::Checker;
use crate::cluster::cluster_seeds;
use crate::data::Split;
use crate::error::Result;
use crate::estimate::{estimate, wilson};
use crate::output::TableBuilder;
use crate::pipeline::params::{Params, Problems};
use crate::pipeline::registry::{InputDoc, ParamDoc, StageKind};
use crate::pipeline::stage::{audited_rows, with_protected};
use crate::pipeline::stage::{put, Artifact, ArtifactKind, CasesArtifact, Inputs, SeedsArtifact, Stage, StageContext, StageOutput};

const MODEL_INPUT: &[InputDoc] =
    &[InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "the model under test" }];
/// The `protected` override shared by the auditing stages.
pub(crate) const PROTECTED: ParamDoc = ParamDoc {
    name: "protected",
    ty: "string list",
    default: "the load stage's",
    doc: "audit these protected attributes instead of the data's (one model, several audits)",
};
const GAMMA: ParamDoc = ParamDoc {
    name: "gamma",
    ty: "float",
    default: "none (compare labels)",
    doc: "count a pair as discriminatory when |f(x) - f(x')| > gamma (Aequitas Def. 4.1) instead of when labels differ",
};

/// The `cluster` stage kind.
pub const CLUSTER: StageKind = StageKind {
    name: "cluster",
    doc: "k-means over the dataset's training rows; seeds are taken round robin across clusters (SG §3.2, MAFT Algorithm 3).",
    inputs: &[InputDoc { role: "data", accepts: &[ArtifactKind::Dataset], required: true, doc: "the dataset whose rows are clustered" }],
    output: ArtifactKind::Seeds,
    params: &[
        ParamDoc { name: "k", ty: "int", default: "4", doc: "number of clusters" },
        ParamDoc { name: "seeds", ty: "int", default: "1000", doc: "number of seeds to emit" },
        ParamDoc { name: "max_iterations", ty: "int", default: "300", doc: "k-means iteration limit" },
        ParamDoc { name: "split", ty: "\"train\"|\"all\"", default: "\"train\"", doc: "rows to cluster" },
    ],
    example: "[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 4\nseeds = 1000",
    build: build_cluster,
};

/// The `estimate` stage kind.
pub const ESTIMATE: StageKind = StageKind {
    name: "estimate",
    doc: "Aequitas §4.3: K trials of m inputs drawn uniformly from the domain; the mean share of discriminatory inputs with a 95% confidence interval.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Estimate,
    params: &[
        ParamDoc { name: "trials", ty: "int", default: "400", doc: "number of trials K" },
        ParamDoc { name: "samples", ty: "int", default: "1000", doc: "inputs per trial m" },
        GAMMA,
        PROTECTED,
    ],
    example: "[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 400\nsamples = 1000",
    build: build_estimate,
};

/// The `check` stage kind.
pub const CHECK: StageKind = StageKind {
    name: "check",
    doc: "Check the dataset's own rows: which real individuals would get another label with other protected values. Writes the discriminatory rows with their counterparts.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Cases,
    params: &[ParamDoc { name: "split", ty: "\"test\"|\"train\"|\"all\"", default: "\"test\"", doc: "rows to check" }, GAMMA, PROTECTED],
    example: "[stages.check]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"test\"",
    build: build_check,
};

struct Cluster {
    k: usize,
    seeds: usize,
    max_iterations: u64,
    all_rows: bool,
}

struct Estimate {
    trials: usize,
    samples: usize,
    gamma: Option<f64>,
    protected: Option<Vec<String>>,
}

struct Check {
    split: Option<Split>,
    gamma: Option<f64>,
    protected: Option<Vec<String>>,
}

/// The `protected` override, if given (an empty list is refused).
pub(crate) fn protected(params: &Params, p: &mut Problems) -> Option<Vec<String>> {
    let raw = params.raw("protected")?;
    let names: Vec<String> = params.str_list(p, "protected").into_iter().map(|s| s.v).collect();
    if names.is_empty() {
        p.at(&raw.span, format!("stage `{}`: `protected` must name at least one column", params.stage()));
    }
    Some(names)
}

fn gamma(params: &Params, p: &mut Problems) -> Option<f64> {
    params.raw("gamma")?;
    Some(params.f64_in(p, "gamma", 0.0, 0.0, 1.0))
}

fn build_cluster(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    Some(Box::new(Cluster {
        k: params.usize_min(p, "k", 4, 1),
        seeds: params.usize_min(p, "seeds", 1000, 1),
        max_iterations: params.usize_min(p, "max_iterations", 300, 1) as u64,
        all_rows: params.choice(p, "split", &["train", "all"], "train") == "all",
    }))
}

fn build_estimate(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    Some(Box::new(Estimate {
        trials: params.usize_min(p, "trials", 400, 2),
        samples: params.usize_min(p, "samples", 1000, 1),
        gamma: gamma(params, p),
        protected: protected(params, p),
    }))
}

fn build_check(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    let split = match params.choice(p, "split", &["test", "train", "all"], "test").as_str() {
        "train" => Some(Split::Train),
        "all" => None,
        _ => Some(Split::Test),
    };
    Some(Box::new(Check { split, gamma: gamma(params, p), protected: protected(params, p) }))
}

impl Stage for Cluster {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        let x = if self.all_rows { data.x.clone() } else { data.subset(Split::Train).0 };
        let seeds = cluster_seeds(&x, self.k, self.seeds, self.max_iterations, ctx.seed)?;
        let mut figures = Map::new();
        put(&mut figures, "clusters", seeds.cluster_sizes.len());
        put(&mut figures, "cluster_sizes", seeds.cluster_sizes.clone());
        put(&mut figures, "seeds", seeds.rows.nrows());
        let flat: Vec<f64> = seeds.rows.iter().copied().collect();
        let table = TableBuilder::new()
            .i64("cluster", seeds.cluster.iter().map(|&c| c as i64).collect())
            .decoded(&data.domain, &flat, "", None)
            .build("")?;
        Ok(StageOutput {
            artifact: Artifact::Seeds(Arc::new(SeedsArtifact { seeds, data })),
            figures,
            tables: vec![table],
            model_queries: 0,
        })
    }
}

impl Stage for Estimate {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let domain = &with_protected(&model.data.domain, self.protected.as_deref())?;
        let checker = Checker::new(domain, self.gamma);
        let before = model.oracle.rows();
        let est = estimate(&model.oracle, domain, &checker, self.trials, self.samples, ctx.seed)?;
        let mut figures = Map::new();
        put(&mut figures, "rate", est.rate);
        put(&mut figures, "ci95", est.ci95.to_vec());
        put(&mut figures, "ci95_wilson", est.ci95_wilson.to_vec());
        put(&mut figures, "samples", est.samples);
        put(&mut figures, "trials", est.trials);
        put(&mut figures, "per_trial", est.per_trial);
        put(&mut figures, "discriminatory", est.discriminatory);
        put(&mut figures, "variants_per_input", checker.n_variants());
        let table = TableBuilder::new().i64("trial", (0..est.trials as i64).collect()).f64("rate", est.trial_rates.clone()).build("")?;
        let model_queries = model.oracle.rows() - before;
        Ok(StageOutput { artifact: Artifact::Estimate(Arc::new(est)), figures, tables: vec![table], model_queries })
    }
}

impl Stage for Check {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.protected.as_deref(), self.split)?;
        let domain = &domain;
        let checker = Checker::new(domain, self.gamma);
        let before = model.oracle.rows();
        let verdicts = checker.check(&model.oracle, &rows)?;
        let width = domain.width();
        let mut instances = Vec::new();
        let mut counterparts = Vec::new();
        let mut p = Vec::new();
        let mut q = Vec::new();
        for (row, v) in rows.chunks_exact(width).zip(&verdicts) {
            if v.discriminatory {
                instances.extend_from_slice(row);
                counterparts.extend(checker.variant(row, v.counterpart));
                p.push(v.p);
                q.push(v.p_counterpart);
            }
        }
        let found = p.len();
        let mut figures = Map::new();
        put(&mut figures, "checked", verdicts.len());
        put(&mut figures, "discriminatory", found);
        put(&mut figures, "rate", found as f64 / verdicts.len().max(1) as f64);
        put(&mut figures, "ci95", wilson(found, verdicts.len(), 1.96).to_vec());
        let protected = domain.protected_indices();
        let table = TableBuilder::new()
            .decoded(domain, &instances, "", None)
            .decoded(domain, &counterparts, "_counterpart", Some(&protected))
            .f64("p", p)
            .f64("p_counterpart", q)
            .build("")?;
        let model_queries = model.oracle.rows() - before;
        let cases = CasesArtifact {
            instances,
            counterparts,
            model: model.clone(),
            domain: domain.clone(),
            origins: vec![2; found],
            at_s: vec![0.0; found],
            generated: verdicts.len() as u64,
            elapsed_s: 0.0,
            queries: model_queries,
        };
        Ok(StageOutput { artifact: Artifact::Cases(Arc::new(cases)), figures, tables: vec![table], model_queries })
    }
}
