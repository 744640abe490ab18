//! `check`: which of the dataset's own rows are discriminatory.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::estimate::MODEL_INPUT;
use super::options::{check_gamma, check_precision, check_protected, Rows};
use crate::check::Checker;
use crate::cluster_keys::ClusterKeys;
use crate::clustered::{wilson_clustered, ClusterSums, ShareClustering};
use crate::error::Result;
use crate::flip_sequence::FlipSequence;
use crate::numbers::{percent, thousands};
use crate::output::TableBuilder;
use crate::sequential::{llm_requests, PrecisionStop};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::{share_flips, Flips, InRun, StageFigures};
use crate::stage::verdict::{FlipMeasure, Thresholds};
use crate::stage::{audited_rows, nan_if_null, Artifact, ArtifactKind, CasesArtifact, Inputs, Stage, StageContext, StageOutput};
use crate::stats::wilson;

/// The `check` stage kind.
pub const KIND: StageKind = StageKind {
    name: "check",
    doc: "Check the dataset's own rows: which real individuals would get another label with other protected values. Writes the discriminatory rows with their counterparts.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Cases,
    keys: CheckConfig::keys,
    tag: None,
    example: "[stages.check]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"test\"",
    configure: configure::<CheckConfig>,
    fields: fields_of::<CheckConfig>,
    read: read_debug::<CheckConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc {
        compared: &["discriminatory"],
        compare: compare_figures,
        ..FigureDoc::of::<CheckFigures>()
    },
};

/// The figures a sweep compares a `check` stage on (`FigureDoc::compared`).
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    use serde_json::Value;
    compare_as::<CheckFigures>(entry, 1, |f| vec![Value::from(f.discriminatory)])
}

/// The `check` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct CheckConfig {
    /// Rows to check.
    pub split: Rows,
    /// Count a pair when |f(x) − f(x')| > gamma instead of when labels differ.
    #[key(shared = super::options::GAMMA)]
    pub gamma: Option<f64>,
    /// Audit these protected attributes instead of the data's.
    #[key(shared = super::options::PROTECTED)]
    pub protected: Option<Vec<String>>,
    /// Columns the rows share beyond the names and the document: the intervals are clustered
    /// over them.
    #[key(shared = super::options::CLUSTER_BY)]
    pub cluster_by: Vec<String>,
    /// Check the rows in a random order seeded by the stage and stop once the flip rate's 95%
    /// interval (a confidence sequence, valid at any stop) is this wide on each side or less;
    /// the figures are then over the rows checked.
    #[key(shared = super::options::PRECISION)]
    pub precision: Option<f64>,
}

/// Rows checked between two looks at a `precision` stop.
const ROWS_PER_LOOK: usize = 256;

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig { split: Rows::Test, gamma: None, protected: None, cluster_by: Vec::new(), precision: None }
    }
}

impl StageConfig for CheckConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        check_gamma(c, self.gamma);
        check_protected(c, &self.protected);
        check_precision(c, self.precision);
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of a `check` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct CheckFigures {
    /// Rows checked.
    pub checked: usize,
    /// Discriminatory rows.
    pub discriminatory: usize,
    /// discriminatory / checked.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate: f64,
    /// Wilson 95% interval of the rate; where the rows are clustered by what they share
    /// (`clusters`: an LLM's names and documents, the `cluster_by` columns), Wilson's interval at
    /// the effective sample size (the rows over the design effect, [`crate::clustered`]).
    pub ci95: [f64; 2],
    /// Where the rows are clustered: Wilson's interval treating them as independent, which
    /// `ci95` replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_independent: Option<[f64; 2]>,
    /// Where the rows are clustered: the clusters of each way (`names`, `document`, each
    /// `cluster_by` column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<BTreeMap<String, usize>>,
    /// Where the rows are clustered: the design effect (the cluster-robust variance of the rate
    /// over the independent one, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design_effect: Option<f64>,
    /// The protected attributes changed together to make each row's counterparts (the data's,
    /// or the stage's `protected`); empty in a summary written before this was recorded.
    #[serde(default)]
    pub protected: Vec<String>,
    /// Per protected attribute, the rows whose label changes when that attribute alone changes
    /// (its linked columns with it, the other protected attributes kept); `discriminatory` counts
    /// the rows changed by any combination. Empty in a summary written before this was recorded.
    #[serde(default)]
    pub discriminatory_alone: BTreeMap<String, usize>,
    /// `discriminatory_alone` / `checked`, per protected attribute.
    #[serde(default)]
    pub rate_alone: BTreeMap<String, f64>,
    /// With two or more protected attributes, HInter's hidden intersectional flips: the rows whose
    /// label changes when the protected attributes change together while no single attribute's
    /// change alone changes it ([`Checker::hidden_intersectional`]); absent with one attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_intersectional: Option<usize>,
    /// `hidden_intersectional` / `checked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_hidden_intersectional: Option<f64>,
    /// Wilson 95% interval of `rate_hidden_intersectional`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_hidden_intersectional: Option<[f64; 2]>,
    /// discrim-eval's measure per protected attribute and value ([`crate::logit_shift`]); empty
    /// for a labels-only model and in a summary written before this was recorded.
    #[serde(default)]
    pub logit_shift: Vec<crate::logit_shift::LogitShift>,
    /// For a model whose score is a rating (an LLM with `answers.scale`), the mean change of the
    /// expected rating, in the scale's units, per protected attribute and value, paired as
    /// `logit_shift` is (which is then empty); absent for any other model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub score_shift: Vec<crate::logit_shift::LogitShift>,
    /// With `precision`: the rows of the split, of which `checked` were checked before the stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_available: Option<usize>,
    /// With `precision`: how checking stopped, what it cost and the interval valid at the stop
    /// (then also `ci95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionStop>,
}

/// A check measures the share of real rows whose decision flips: it grades the verdict, first among
/// measures of the same grade.
impl StageFigures for CheckFigures {
    const HEADLINE: &'static [&'static str] = &["rate", "ci95", "checked", "discriminatory"];

    const WRITES_PAIRS: bool = true;
    const FLIP_RANK: u8 = 0;

    fn flips(&self, at: &InRun<'_>, t: &Thresholds) -> Option<Flips> {
        share_flips(at, KIND.name, &self.protected, (self.rate, self.ci95), (self.discriminatory as u64, self.checked as u64), t)
    }

    fn numbers_inside(figure: &str) -> Option<(&'static str, &'static str)> {
        super::options::alone_numbers_inside(figure)
    }

    fn flip_words(m: &FlipMeasure, what: &str) -> String {
        format!(
            "{} of real rows ({} of {}) get a different decision when {what} (check `{}`)",
            percent(m.rate.unwrap_or(f64::NAN)),
            thousands(m.flipped),
            thousands(m.of),
            m.stage
        )
    }
}

impl Stage for CheckConfig {
    fn score_needs(&self) -> Vec<crate::stage::ScoreNeed> {
        super::options::gamma_need(self.gamma).into_iter().collect()
    }

    fn preflight(&self, data: &crate::data::Dataset, warnings: &crate::warnings::Warnings) -> Result<()> {
        crate::cluster_keys::cluster_columns(&data.domain, &self.cluster_by)?;
        crate::stage::with_protected(&data.domain, self.protected.as_deref(), warnings).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.protected.as_deref(), self.split.split(), &ctx.warnings)?;
        let domain = &domain;
        let checker = Checker::new(domain, self.gamma).with_links(&model.data.links);
        let before = model.oracle.rows();
        let available = rows.len() / domain.width().max(1);
        crate::progress::start(&ctx.progress, available as u64, "rows checked");
        let keys = ClusterKeys::new(&model.oracle, domain, &checker, &self.cluster_by, true)?;
        let requests_before = llm_requests(&model.oracle);
        let (rows, scores, stopped) = match self.precision {
            None => {
                let scores = checker.scores_shown(&model.oracle, &rows, &ctx.progress)?;
                (rows, scores, None)
            }
            Some(precision) => {
                let asked = until_precise(&model.oracle, &checker, keys.as_ref(), &rows, domain.width(), precision, ctx)?;
                (asked.rows, asked.scores, Some((asked.stop, asked.own, asked.clustering)))
            }
        };
        let verdicts = checker.verdicts(&scores);
        let alone = checker.alone_of(&model.oracle, &rows, &scores, &verdicts)?;
        let shifts = crate::logit_shift::measured(&model.oracle, domain, &rows, &scores, keys.as_ref());
        let names = crate::stage::protected_names(domain);
        let discriminatory_alone: BTreeMap<String, usize> =
            names.iter().enumerate().map(|(k, name)| (name.clone(), alone.iter().filter(|flags| flags[k]).count())).collect();
        let rate_alone = discriminatory_alone.iter().map(|(k, &n)| (k.clone(), n as f64 / verdicts.len().max(1) as f64)).collect();
        let hidden = (names.len() >= 2).then(|| Checker::hidden_intersectional(&verdicts, &alone).iter().filter(|h| **h).count());
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
        let flips: Vec<bool> = verdicts.iter().map(|v| v.discriminatory).collect();
        // A `precision` check's sequence already holds the flips' clusters.
        let clustered = match &stopped {
            Some((_, _, clustering)) => clustering.clone(),
            None => keys.as_ref().map(|k| k.flip_sums(&rows, width, flips.iter().copied()).share_clustering()),
        };
        let independent = wilson(found, verdicts.len(), 1.96);
        // With `precision`, the stop's interval (widened where clustered) and the sequence's own.
        let (ci95, ci95_independent) = match (&stopped, &clustered) {
            (Some((stop, own, _)), clustered) => (stop.ci95, clustered.as_ref().map(|_| *own)),
            (None, Some(c)) => (wilson_clustered(found, verdicts.len(), c.design_effect), Some(independent)),
            (None, None) => (independent, None),
        };
        let figures = CheckFigures {
            checked: verdicts.len(),
            discriminatory: found,
            rate: found as f64 / verdicts.len().max(1) as f64,
            ci95,
            ci95_independent,
            clusters: clustered.as_ref().map(|c| c.clusters.clone()),
            design_effect: clustered.as_ref().map(|c| c.design_effect),
            protected: names,
            discriminatory_alone,
            rate_alone,
            hidden_intersectional: hidden,
            rate_hidden_intersectional: hidden.map(|h| h as f64 / verdicts.len().max(1) as f64),
            ci95_hidden_intersectional: hidden.map(|h| wilson(h, verdicts.len(), 1.96)),
            logit_shift: shifts.logit_shift,
            score_shift: shifts.score_shift,
            rows_available: stopped.as_ref().map(|_| available),
            precision: stopped.map(|(mut stop, _, _)| {
                // What the whole stage cost, the single attributes' variants included.
                stop.model_rows = model.oracle.rows() - before;
                stop.requests = llm_requests(&model.oracle).zip(requests_before).map(|(after, before)| after - before);
                stop
            }),
        };
        let mut table = TableBuilder::new()
            .decoded(domain, &instances, "", None)
            .decoded(domain, &counterparts, "_counterpart", Some(&checker.changed_columns()))
            .f64("p", p)
            .f64("p_counterpart", q);
        let mut tables = Vec::new();
        if let Some(keys) = keys.as_ref().filter(|k| k.shows_names()) {
            let shown = |rows: &[f64]| rows.chunks_exact(width.max(1)).map(|r| keys.names_of(r).join(" / ")).collect::<Vec<_>>();
            table = table.str("name", shown(&instances)).str("name_counterpart", shown(&counterparts));
            tables.push(per_name_table(keys, &checker, domain, &rows, &scores, &flips)?);
        }
        tables.insert(0, table.build("")?);
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
        Ok(StageOutput { artifact: Artifact::Cases(Arc::new(cases)), figures: Arc::new(figures), tables, model_queries })
    }
}

/// What a `precision` check asked ([`until_precise`]).
struct Asked {
    /// The rows checked, in the order asked.
    rows: Vec<f64>,
    /// Their scores as [`Checker::scores_shown`] gives them.
    scores: Vec<f64>,
    /// How it stopped (its `model_rows` and `requests` left for the caller).
    stop: PrecisionStop,
    /// The confidence sequence's own interval.
    own: [f64; 2],
    /// Where the rows are clustered, their flip rate's clustering (the sequence's sums).
    clustering: Option<ShareClustering>,
}

/// Check `rows` (of `width` columns) in a random order seeded by the stage, [`ROWS_PER_LOOK`] at a time, until the
/// confidence sequence of their flips ([`FlipSequence`], clustered by `keys`) is within
/// `precision` on each side, the clusters keep it from that (a warning), or every row is checked
/// (every row for a plan's placeholder answers).
fn until_precise(
    oracle: &crate::oracle::Oracle,
    checker: &Checker,
    keys: Option<&ClusterKeys<'_>>,
    rows: &[f64],
    width: usize,
    precision: f64,
    ctx: &StageContext,
) -> Result<Asked> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let width = width.max(1);
    let mut order: Vec<usize> = (0..rows.len() / width).collect();
    order.shuffle(&mut rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(ctx.seed));
    let mut sequence = FlipSequence::new(keys.is_some());
    let (mut asked, mut scores) = (Vec::new(), Vec::new());
    for look in order.chunks(ROWS_PER_LOOK) {
        let chunk: Vec<f64> = look.iter().flat_map(|&i| rows[i * width..(i + 1) * width].iter().copied()).collect();
        let chunk_scores = checker.scores_shown(oracle, &chunk, &ctx.progress)?;
        let flips: Vec<bool> = checker.verdicts(&chunk_scores).iter().map(|v| v.discriminatory).collect();
        let sums = keys.map(|keys| keys.flip_sums(&chunk, width, flips.iter().copied()));
        sequence.take(flips, sums.as_ref());
        asked.extend(chunk);
        scores.extend(chunk_scores);
        if sequence.should_stop(precision, oracle.model().answers_are_placeholders(), KIND.name, &ctx.warnings) {
            break;
        }
    }
    let (stop, own) = sequence.stop(precision);
    let clustering = sequence.clusters().map(ClusterSums::share_clustering);
    Ok(Asked { rows: asked, scores, stop, own, clustering })
}

/// `<stage>_names.csv`: per first name an LLM's prompts showed, the protected values it stood for,
/// the prompts that showed it (the rows' variants), their mean score (P(favourable), or the
/// rating read as a share of the scale), the share scored favourable, and the rows whose decision
/// flipped among those it was shown in. One row per name, sorted by name.
fn per_name_table(
    keys: &ClusterKeys<'_>,
    checker: &Checker,
    domain: &crate::domain::Domain,
    rows: &[f64],
    scores: &[f64],
    flips: &[bool],
) -> Result<crate::output::Table> {
    #[derive(Default)]
    struct Shown {
        values: String,
        prompts: u64,
        score: f64,
        favourable: u64,
        flipped: u64,
    }
    let width = domain.width().max(1);
    let per_row = checker.n_variants() + 1;
    let protected = domain.protected_indices();
    let mut by_name: BTreeMap<String, Shown> = BTreeMap::new();
    for ((row, s), &flip) in rows.chunks_exact(width).zip(scores.chunks_exact(per_row)).zip(flips) {
        let mut seen_here: Vec<String> = Vec::new();
        for combo in 0..checker.n_variants() {
            let variant = checker.variant(row, combo);
            let score = s[1 + combo];
            for name in keys.names_of(&variant) {
                let entry = by_name.entry(name.clone()).or_default();
                if entry.values.is_empty() {
                    entry.values = protected.iter().map(|&i| domain.attributes[i].decode(variant[i])).collect::<Vec<_>>().join(" / ");
                }
                entry.prompts += 1;
                entry.score += score;
                entry.favourable += u64::from(score > 0.5);
                if !seen_here.contains(&name) {
                    entry.flipped += u64::from(flip);
                    seen_here.push(name);
                }
            }
        }
    }
    let names: Vec<String> = by_name.keys().cloned().collect();
    let column = |f: &dyn Fn(&Shown) -> f64| by_name.values().map(f).collect::<Vec<f64>>();
    Ok(TableBuilder::new()
        .str("name", names)
        .str("stands_for", by_name.values().map(|v| v.values.clone()).collect())
        .i64("prompts", by_name.values().map(|v| v.prompts as i64).collect())
        .f64("mean_score", column(&|v| v.score / v.prompts.max(1) as f64))
        .f64("favourable_share", column(&|v| v.favourable as f64 / v.prompts.max(1) as f64))
        .i64("flipped_rows", by_name.values().map(|v| v.flipped as i64).collect())
        .build("names")?)
}
