//! `estimate`: the share of discriminatory inputs in the domain, by uniform sampling with a 95%
//! confidence interval (Aequitas §4.3).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::options::{check_gamma, check_precision, check_protected};
use crate::check::Checker;
use crate::cluster_keys::ClusterKeys;
use crate::clustered::{wilson_clustered, ClusterSums};
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::estimate::{trial_outcomes, Estimate, TrialOutcomes, Wanted};
use crate::flip_sequence::FlipSequence;
use crate::logit_shift::{LogitShift, Measure, Pairing, ShiftSums, Shifts};
use crate::numbers::{percent, percent_or_dash};
use crate::output::TableBuilder;
use crate::pieces::{block, Piece};
use crate::sequential::{llm_requests, PrecisionStop};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::{share_flips, Flips, InRun, Measurement, StageFigures};
use crate::stage::verdict::{FlipMeasure, Thresholds};
use crate::stage::{nan_if_null, with_protected, Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};
use crate::warnings::Warnings;

/// The input of the auditing stages: the model under test.
pub(crate) const MODEL_INPUT: &[InputDoc] =
    &[InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "the model under test" }];

/// The `estimate` stage kind.
pub const KIND: StageKind = StageKind {
    name: "estimate",
    doc: "Aequitas §4.3: K trials of m inputs drawn uniformly from the domain; the mean share of discriminatory inputs with a 95% confidence interval.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Estimate,
    keys: EstimateConfig::keys,
    tag: None,
    example: "[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 400\nsamples = 1000",
    configure: configure::<EstimateConfig>,
    fields: fields_of::<EstimateConfig>,
    read: read_debug::<EstimateConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc {
        compared: &["rate", "ci95_low", "ci95_high"],
        compare: compare_figures,
        ..FigureDoc::of::<EstimateFigures>()
    },
};

/// The figures a sweep compares a `estimate` stage on (`FigureDoc::compared`).
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    use serde_json::Value;
    compare_as::<EstimateFigures>(entry, 3, |f| vec![Value::from(f.rate), Value::from(f.ci95[0]), Value::from(f.ci95[1])])
}

/// The `estimate` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct EstimateConfig {
    /// Number of trials K.
    pub trials: usize,
    /// Inputs per trial m.
    pub samples: usize,
    /// Count a pair when |f(x) − f(x')| > gamma instead of when labels differ.
    #[key(shared = super::options::GAMMA)]
    pub gamma: Option<f64>,
    /// Audit these protected attributes instead of the data's.
    #[key(shared = super::options::PROTECTED)]
    pub protected: Option<Vec<String>>,
    /// Blocks of trials that a sharded run (`--shard`) deals out; results are the same for any
    /// value (trial `t` draws from its own stream).
    #[key(default = "trials / 25, rounded up")]
    pub units: Option<usize>,
    /// Columns the inputs share beyond an LLM's names and the document: the paired measure's
    /// intervals are clustered over them.
    #[key(shared = super::options::CLUSTER_BY)]
    pub cluster_by: Vec<String>,
    /// Stop drawing trials once the flip rate's 95% interval (a confidence sequence, valid at
    /// any stop) is this wide on each side or less; `trials` is then the most drawn.
    #[key(shared = super::options::PRECISION)]
    pub precision: Option<f64>,
}

/// Inputs drawn between two looks at a `precision` stop (at least one trial).
const INPUTS_PER_LOOK: usize = 256;

/// Trials per block when `units` is not given.
const TRIALS_PER_UNIT: usize = 25;

impl Default for EstimateConfig {
    fn default() -> Self {
        EstimateConfig { trials: 400, samples: 1000, gamma: None, protected: None, units: None, cluster_by: Vec::new(), precision: None }
    }
}

impl StageConfig for EstimateConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.at_least("trials", self.trials, 2);
        c.at_least("samples", self.samples, 1);
        c.at_most("trials", self.trials as u128, crate::limits::MAX_TRIALS as u128);
        c.at_most("samples", self.samples as u128, crate::limits::MAX_SAMPLES as u128);
        check_gamma(c, self.gamma);
        check_protected(c, &self.protected);
        if let Some(units) = self.units {
            c.at_least("units", units, 1);
            c.at_most("units", units as u128, self.trials.max(1) as u128);
        }
        check_precision(c, self.precision);
        if self.precision.is_some() && self.units.is_some_and(|u| u > 1) {
            c.problem(
                "units",
                "`precision` decides when to stop from every trial so far, so the trials cannot be dealt out in `units`: leave `units` out",
            );
        }
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of an `estimate` stage (output contract: `rate`, `ci95`, `samples`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct EstimateFigures {
    /// Mean share of discriminatory inputs.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate: f64,
    /// 95% interval: t over trials; where the inputs are clustered by what their prompts share
    /// (`clusters`: an LLM's names, the `cluster_by` columns), Wilson's interval at the effective
    /// sample size (the inputs over the design effect, [`crate::clustered`]); with `precision`, the
    /// confidence sequence's, valid at the stop (widened by √`design_effect` where clustered).
    pub ci95: [f64; 2],
    /// Where the inputs are clustered: the interval treating them as independent (t over trials,
    /// or the confidence sequence's), which `ci95` replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_independent: Option<[f64; 2]>,
    /// Where the inputs are clustered: the clusters of each way (`names`, each `cluster_by`
    /// column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<BTreeMap<String, usize>>,
    /// Where the inputs are clustered: the design effect (the cluster-robust variance of the rate
    /// over the independent one, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design_effect: Option<f64>,
    /// 95% Wilson interval over all inputs.
    pub ci95_wilson: [f64; 2],
    /// Inputs drawn in all.
    pub samples: usize,
    /// Trials K.
    pub trials: usize,
    /// Inputs per trial m.
    pub per_trial: usize,
    /// Discriminatory inputs found.
    pub discriminatory: usize,
    /// Protected variants checked per input.
    pub variants_per_input: usize,
    /// The protected attributes changed together (the data's, or the stage's `protected`); empty
    /// in a summary written before this was recorded.
    #[serde(default)]
    pub protected: Vec<String>,
    /// Per protected attribute, the inputs whose treatment changes when that attribute alone
    /// changes (its linked columns with it, the other protected attributes kept); `discriminatory`
    /// counts those changed by any combination. Empty in a summary written before this was
    /// recorded.
    #[serde(default)]
    pub discriminatory_alone: BTreeMap<String, usize>,
    /// `discriminatory_alone` over the inputs drawn, per protected attribute.
    #[serde(default)]
    pub rate_alone: BTreeMap<String, f64>,
    /// discrim-eval's measure per protected attribute and value over the sampled inputs
    /// ([`crate::logit_shift`]); empty for a labels-only model and in a summary written before
    /// this was recorded.
    #[serde(default)]
    pub logit_shift: Vec<LogitShift>,
    /// For a model whose score is a rating (an LLM with `answers.scale`), the mean change of the
    /// expected rating over the sampled inputs, in the scale's units, paired as `logit_shift` is
    /// (which is then empty); absent for any other model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub score_shift: Vec<LogitShift>,
    /// With two or more protected attributes, HInter's hidden intersectional flips among the
    /// inputs drawn: those whose label changes when the protected attributes change together
    /// while no single attribute's change alone changes it; absent with one attribute (or when a
    /// piece of a sharded run did not record it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_intersectional: Option<usize>,
    /// `hidden_intersectional` / `samples`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_hidden_intersectional: Option<f64>,
    /// Wilson 95% interval of `rate_hidden_intersectional`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_hidden_intersectional: Option<[f64; 2]>,
    /// With `precision`: how asking stopped, what it cost and the interval valid at the stop
    /// (then also `ci95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionStop>,
}

/// The pairing of discrim-eval's measure (of the rating, for a model that rates), unless the
/// model gives labels only.
fn pairing(oracle: &crate::oracle::Oracle, domain: &Domain) -> Option<Pairing> {
    Measure::of(oracle).map(|measure| Pairing::of(domain, measure))
}

/// The measure from each trial's sums, added in trial order (the same for any split in pieces).
fn shift_figures(pairing: Option<&Pairing>, shifts: &[ShiftSums]) -> Shifts {
    let Some(pairing) = pairing else { return Shifts::default() };
    let mut total = ShiftSums::default();
    for s in shifts {
        total.add(s);
    }
    pairing.shifts(pairing.figures(&total))
}

impl EstimateConfig {
    /// The audited domain (`data_domain` with the `protected` override), its protected
    /// combinations and the model rows the estimate needs, each checked against its limit.
    fn audited_domain(&self, data_domain: &Domain, warnings: &Warnings) -> Result<Domain> {
        let domain = with_protected(data_domain, self.protected.as_deref(), warnings)?;
        // `with_protected` has refused a count past the limit (or one that overflows).
        let combinations = domain.protected_combination_count().unwrap_or(crate::limits::MAX_PROTECTED_COMBINATIONS);
        let rows = (self.trials as u128).checked_mul(self.samples as u128).and_then(|n| n.checked_mul(combinations));
        crate::limits::check_model_rows(
            rows,
            &format!("trials × samples × protected combinations = {} × {} × {combinations}", self.trials, self.samples),
            warnings,
        )
        .map_err(|e| crate::error::StageError::contradicts("trials", e))?;
        Ok(domain)
    }
}

/// An estimate measures the share of inputs drawn from the domain whose decision flips: it grades
/// the verdict, after a check of real rows of the same grade.
impl StageFigures for EstimateFigures {
    const HEADLINE: &'static [&'static str] = &["rate", "ci95", "discriminatory", "samples"];

    const FLIP_RANK: u8 = 1;

    fn flips(&self, at: &InRun<'_>, t: &Thresholds) -> Option<Flips> {
        share_flips(at, KIND.name, &self.protected, (self.rate, self.ci95), (self.discriminatory as u64, self.samples as u64), t)
    }

    fn numbers_inside(figure: &str) -> Option<(&'static str, &'static str)> {
        super::options::alone_numbers_inside(figure)
    }

    fn measurement(&self, at: &InRun<'_>) -> Option<Measurement> {
        Some(Measurement {
            model: at.entry.inputs.get("model")?.clone(),
            family: format!("estimated rate ({} inputs)", self.samples),
            value: format!("{} [{}, {}]", percent_or_dash(self.rate), percent_or_dash(self.ci95[0]), percent_or_dash(self.ci95[1])),
        })
    }

    fn flip_words(m: &FlipMeasure, what: &str) -> String {
        format!(
            "{} of inputs drawn from the data's domain (95% interval {} – {}) get a different decision when {what} (estimate `{}`)",
            percent(m.rate.unwrap_or(f64::NAN)),
            percent(m.ci95.map_or(f64::NAN, |c| c[0])),
            percent(m.ci95.map_or(f64::NAN, |c| c[1])),
            m.stage
        )
    }
}

impl Stage for EstimateConfig {
    fn score_needs(&self) -> Vec<crate::stage::ScoreNeed> {
        super::options::gamma_need(self.gamma).into_iter().collect()
    }

    fn preflight(&self, data: &crate::data::Dataset, warnings: &Warnings) -> Result<()> {
        crate::cluster_keys::cluster_columns(&data.domain, &self.cluster_by)?;
        self.audited_domain(&data.domain, warnings).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let domain = &self.audited_domain(&model.data.domain, &ctx.warnings)?;
        let checker = Checker::new(domain, self.gamma).with_links(&model.data.links);
        let before = model.oracle.rows();
        let requests_before = llm_requests(&model.oracle);
        crate::progress::start(&ctx.progress, self.trials as u64, "trials");
        let pairing = pairing(&model.oracle, domain);
        let keys = ClusterKeys::new(&model.oracle, domain, &checker, &self.cluster_by, false)?;
        let wanted = Wanted { alone: true, pairing: pairing.as_ref(), keys: keys.as_ref(), flags: self.precision.is_some() };
        let (o, stop, sequence_interval) = match self.precision {
            None => (
                trial_outcomes(&model.oracle, domain, &checker, &wanted, 0..self.trials, self.samples, ctx.seed, &ctx.progress)?,
                None,
                None,
            ),
            Some(precision) => {
                let (o, mut stop, sequence) = self.until_precise(&model.oracle, domain, &checker, &wanted, precision, ctx)?;
                stop.model_rows = model.oracle.rows() - before;
                stop.requests = llm_requests(&model.oracle).zip(requests_before).map(|(after, before)| after - before);
                (o, Some(stop), Some(sequence))
            }
        };
        let shifts = shift_figures(pairing.as_ref(), &o.shifts);
        let mut estimate = Estimate::from_counts(&o.counts, self.samples);
        if let Some(stop) = &stop {
            estimate.ci95 = stop.ci95;
        }
        let hidden = (domain.protected_indices().len() >= 2).then_some(o.hidden);
        let flips = AloneFlips { alone: Some(&o.alone), hidden };
        let found = Found { estimate, flips, shifts, precision: stop, flip_clusters: o.flip_clusters.as_ref(), sequence_interval };
        self.output(found, domain, checker.n_variants(), model.oracle.rows() - before)
    }

    fn pieces(&self) -> usize {
        if self.precision.is_some() {
            return 1;
        }
        self.units.unwrap_or(self.trials.div_ceil(TRIALS_PER_UNIT)).clamp(1, self.trials.max(1))
    }

    fn run_piece(&self, ctx: &StageContext, inputs: &Inputs, piece: usize) -> Result<Piece> {
        let model = inputs.model("model")?;
        let domain = &self.audited_domain(&model.data.domain, &ctx.warnings)?;
        let checker = Checker::new(domain, self.gamma).with_links(&model.data.links);
        let before = model.oracle.rows();
        let trials = block(self.trials, self.pieces(), piece);
        let first = trials.start;
        crate::progress::start(&ctx.progress, trials.len() as u64, "trials");
        let pairing = pairing(&model.oracle, domain);
        let keys = ClusterKeys::new(&model.oracle, domain, &checker, &self.cluster_by, false)?;
        let wanted = Wanted { alone: true, pairing: pairing.as_ref(), keys: keys.as_ref(), flags: false };
        let o = trial_outcomes(&model.oracle, domain, &checker, &wanted, trials, self.samples, ctx.seed, &ctx.progress)?;
        let hidden = (domain.protected_indices().len() >= 2).then_some(o.hidden);
        Ok(Piece::Trials {
            first,
            counts: o.counts,
            queries: model.oracle.rows() - before,
            alone: o.alone,
            shifts: o.shifts,
            hidden,
            flip_clusters: o.flip_clusters,
        })
    }

    fn combine(&self, ctx: &StageContext, inputs: &Inputs, pieces: Vec<Piece>) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let domain = &self.audited_domain(&model.data.domain, &ctx.warnings)?;
        let checker = Checker::new(domain, self.gamma);
        let mut counts = Vec::with_capacity(self.trials);
        let mut shifts = Vec::with_capacity(self.trials);
        let mut queries = 0;
        let n_protected = domain.protected_indices().len();
        // Per-attribute counts, unless a piece was written before they were recorded.
        let mut alone_all = Some(vec![0usize; n_protected]);
        // The hidden intersectional flips, unless a piece did not record them.
        let mut hidden_all = (n_protected >= 2).then_some(0usize);
        // The verdicts' clusters, where every piece recorded them.
        let mut clusters_all = Some(ClusterSums::default());
        for (k, piece) in pieces.into_iter().enumerate() {
            let expected = block(self.trials, self.pieces(), k);
            match piece {
                Piece::Trials { first, counts: c, queries: q, alone, shifts: s, hidden, flip_clusters }
                    if first == expected.start && c.len() == expected.len() =>
                {
                    hidden_all = hidden_all.and_then(|sum| hidden.map(|h| sum + h));
                    clusters_all = clusters_all.zip(flip_clusters).map(|(mut all, piece)| {
                        all.add(&piece);
                        all
                    });
                    counts.extend(c);
                    shifts.extend(s);
                    queries += q;
                    alone_all = alone_all.filter(|_| alone.len() == n_protected).map(|mut sum| {
                        sum.iter_mut().zip(&alone).for_each(|(s, a)| *s += a);
                        sum
                    });
                }
                other => {
                    return Err(Error::Internal(format!(
                        "piece {k} of the estimate should hold trials {}..{}; it holds {}",
                        expected.start,
                        expected.end,
                        match other {
                            Piece::Trials { first, counts, .. } => format!("trials {first}..{}", first + counts.len()),
                            Piece::Search(_) => "a search".to_string(),
                        }
                    )))
                }
            }
        }
        if counts.len() != self.trials {
            return Err(Error::Internal(format!("the estimate's pieces hold {} of its {} trials", counts.len(), self.trials)));
        }
        let pairing = pairing(&model.oracle, domain);
        let shifts = if shifts.len() == self.trials { shift_figures(pairing.as_ref(), &shifts) } else { Shifts::default() };
        let flips = AloneFlips { alone: alone_all.as_deref(), hidden: hidden_all };
        let found = Found {
            estimate: Estimate::from_counts(&counts, self.samples),
            flips,
            shifts,
            precision: None,
            flip_clusters: clusters_all.as_ref().filter(|c| !c.is_empty()),
            sequence_interval: None,
        };
        self.output(found, domain, checker.n_variants(), queries)
    }
}

impl EstimateConfig {
    /// Draw trials in order, [`INPUTS_PER_LOOK`] inputs at a time, until the confidence sequence
    /// over every input's verdict so far is within `precision` on each side or `trials` are
    /// drawn (all of them for a plan's placeholder answers): the trials' outcomes, how it stopped (its `model_rows` and `requests` left for
    /// the caller) and the sequence's own interval. Where the inputs are clustered, the half-width
    /// compared with `precision` and the stop's interval are widened by √(design effect).
    fn until_precise(
        &self,
        oracle: &crate::oracle::Oracle,
        domain: &Domain,
        checker: &Checker,
        wanted: &Wanted<'_>,
        precision: f64,
        ctx: &StageContext,
    ) -> Result<(TrialOutcomes, PrecisionStop, [f64; 2])> {
        let step = (INPUTS_PER_LOOK / self.samples.max(1)).max(1);
        let mut sequence = FlipSequence::new(wanted.keys.is_some());
        let mut all = TrialOutcomes::default();
        let mut next = 0;
        while next < self.trials {
            let end = (next + step).min(self.trials);
            let o = trial_outcomes(oracle, domain, checker, wanted, next..end, self.samples, ctx.seed, &ctx.progress)?;
            sequence.take(o.flags.iter().copied(), o.flip_clusters.as_ref());
            all.counts.extend(o.counts);
            all.shifts.extend(o.shifts);
            all.hidden += o.hidden;
            if all.alone.is_empty() {
                all.alone = o.alone;
            } else {
                all.alone.iter_mut().zip(&o.alone).for_each(|(a, b)| *a += b);
            }
            next = end;
            if sequence.should_stop(precision, oracle.model().answers_are_placeholders(), KIND.name, &ctx.warnings) {
                break;
            }
        }
        // The sequence holds the verdicts' clusters of every trial drawn.
        all.flip_clusters = sequence.clusters().cloned();
        let (stop, own) = sequence.stop(precision);
        Ok((all, stop, own))
    }
}

/// What the single attributes' changes explain of an estimate's flips.
struct AloneFlips<'a> {
    /// Per protected attribute, the inputs its change alone flips (`None`: not known).
    alone: Option<&'a [usize]>,
    /// The hidden intersectional flips (`None`: one protected attribute, or not known).
    hidden: Option<usize>,
}

/// What an estimate found, for its output.
struct Found<'a> {
    /// The rate and its intervals.
    estimate: Estimate,
    /// The inputs changed by each protected attribute alone and the hidden intersectional flips.
    flips: AloneFlips<'a>,
    /// discrim-eval's measure (of the rating, for a model that rates).
    shifts: Shifts,
    /// How a `precision` stop stopped.
    precision: Option<PrecisionStop>,
    /// Where the inputs are clustered, their verdicts summed per cluster.
    flip_clusters: Option<&'a ClusterSums>,
    /// With `precision`, the confidence sequence's own interval (before any widening by the
    /// design effect).
    sequence_interval: Option<[f64; 2]>,
}

impl EstimateConfig {
    /// The stage's output for what it found over `domain`, `variants` protected variants per
    /// input, `model_queries` rows scored.
    fn output(&self, found: Found<'_>, domain: &Domain, variants: usize, model_queries: u64) -> Result<StageOutput> {
        let Found { estimate: est, flips, shifts, precision, flip_clusters, sequence_interval } = found;
        let clustering = flip_clusters.map(ClusterSums::share_clustering);
        // Clustered: Wilson's at the effective sample size (a precision stop's interval is already
        // widened by the design effect); the interval over independent inputs kept beside.
        let (ci95, ci95_independent) = match (&clustering, &precision) {
            (None, _) => (est.ci95, None),
            (Some(_), Some(_)) => (est.ci95, sequence_interval),
            (Some(c), None) => (wilson_clustered(est.discriminatory, est.samples, c.design_effect), Some(est.ci95)),
        };
        let AloneFlips { alone, hidden } = flips;
        let names = crate::stage::protected_names(domain);
        let discriminatory_alone: BTreeMap<String, usize> =
            alone.map(|a| names.iter().cloned().zip(a.iter().copied()).collect()).unwrap_or_default();
        let rate_alone = discriminatory_alone.iter().map(|(k, &n)| (k.clone(), n as f64 / est.samples.max(1) as f64)).collect();
        let figures = EstimateFigures {
            rate: est.rate,
            ci95,
            ci95_independent,
            clusters: clustering.as_ref().map(|c| c.clusters.clone()),
            design_effect: clustering.as_ref().map(|c| c.design_effect),
            ci95_wilson: est.ci95_wilson,
            samples: est.samples,
            trials: est.trials,
            per_trial: est.per_trial,
            discriminatory: est.discriminatory,
            variants_per_input: variants,
            protected: names,
            discriminatory_alone,
            rate_alone,
            logit_shift: shifts.logit_shift,
            score_shift: shifts.score_shift,
            hidden_intersectional: hidden,
            rate_hidden_intersectional: hidden.map(|h| h as f64 / est.samples.max(1) as f64),
            ci95_hidden_intersectional: hidden.map(|h| crate::stats::wilson(h, est.samples, 1.96)),
            precision,
        };
        let table = TableBuilder::new().i64("trial", (0..est.trials as i64).collect()).f64("rate", est.trial_rates.clone()).build("")?;
        Ok(StageOutput { artifact: Artifact::Estimate(Arc::new(est)), figures: Arc::new(figures), tables: vec![table], model_queries })
    }
}
