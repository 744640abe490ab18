//! `verify`: re-check every case against the model in the host (plugins are not trusted) and count
//! unique IDIs both ways.

use std::collections::HashSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::check::Checker;
use crate::error::Result;
use crate::numbers::thousands;
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::{flip_measure, Flips, InRun, Measurement, StageFigures};
use crate::stage::verdict::{FlipMeasure, Severity, Thresholds};
use crate::stage::{Artifact, ArtifactKind, CasesArtifact, Inputs, Stage, StageContext, StageOutput};

/// The `verify` stage kind.
pub const KIND: StageKind = StageKind {
    name: "verify",
    doc: "Re-check every case against the model in the host; count confirmed and rejected cases and unique IDIs both ways (by non-protected projection and by full instance); write the decoded pairs.",
    inputs: &[InputDoc { role: "cases", accepts: &[ArtifactKind::Cases], required: true, doc: "cases from a generate (or check) stage" }],
    output: ArtifactKind::Cases,
    keys: VerifyConfig::keys,
    tag: None,
    example: "[stages.verified]\nkind = \"verify\"\ncases = \"search\"",
    configure: configure::<VerifyConfig>,
    fields: fields_of::<VerifyConfig>,
    read: read_debug::<VerifyConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc {
        compared: &["idis", "idis_full"],
        compare: compare_figures,
        ..FigureDoc::of::<VerifyFigures>()
    },
};

/// The figures a sweep compares a `verify` stage on (`FigureDoc::compared`).
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    use serde_json::Value;
    compare_as::<VerifyFigures>(entry, 2, |f| vec![Value::from(f.discriminatory), Value::from(f.discriminatory_full)])
}

/// The `verify` stage's config: it has no keys of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {}

impl StageConfig for VerifyConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of a `verify` stage (output-contract names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct VerifyFigures {
    /// Cases checked.
    pub checked: usize,
    /// Cases the host confirmed.
    pub confirmed: usize,
    /// Cases the host rejected.
    pub rejected: usize,
    /// Unique IDIs by non-protected projection.
    pub discriminatory: usize,
    /// Unique IDIs by full instance.
    pub discriminatory_full: usize,
    /// Unique test inputs the search generated.
    pub generated: u64,
    /// discriminatory_full / generated.
    pub success_rate: f64,
    /// discriminatory / generated.
    pub success_rate_projection: f64,
    /// Model rows the search scored.
    pub search_queries: u64,
    /// Wall time of the search.
    pub search_elapsed_s: f64,
    /// IDIs (by projection) per second of search.
    pub per_second: f64,
    /// (seconds, IDIs found so far) along the search, at most ~50 points.
    pub idis_over_time_s: Vec<(f64, usize)>,
    /// Seconds of search until 1,000 distinct IDIs (full rows) had been found; `None` when fewer
    /// were found.
    pub time_to_1000_idis_s: Option<f64>,
}

fn bits(row: &[f64]) -> Vec<u64> {
    row.iter().map(|v| v.to_bits()).collect()
}

/// The verdicts' name of a search's flip measure (`FlipMeasure::measure`).
pub const SEARCH_MEASURE: &str = "search";

/// Verifying a search's cases proves that some inputs flip; it does not measure how many do, so
/// it grades a verdict only where no check or estimate measured a share.
impl StageFigures for VerifyFigures {
    const HEADLINE: &'static [&'static str] = &["generated", "checked", "discriminatory", "rejected"];

    const WRITES_PAIRS: bool = true;
    const FLIP_RANK: u8 = 2;

    fn flips(&self, at: &InRun<'_>, _t: &Thresholds) -> Option<Flips> {
        let source = at.input("cases")?;
        let meaning = source.meaning();
        if !meaning.search {
            return None;
        }
        let model = source.audited_model()?;
        let severity = if self.discriminatory_full > 0 { Severity::Notable } else { Severity::Ok };
        let measure = flip_measure(at, SEARCH_MEASURE, None, None, self.discriminatory_full as u64, self.generated, severity);
        Some(Flips::new(&model, (meaning.protected)(source.entry), measure))
    }

    fn measurement(&self, at: &InRun<'_>) -> Option<Measurement> {
        let source = at.input("cases")?;
        // The cases come from a generate stage (or a check stage, which has no plugin).
        let g = source.figures::<super::generate::GenerateFigures>();
        let plugin = g.as_ref().map(|g| g.plugin.as_str()).unwrap_or("?").split(' ').next().unwrap_or("?").to_string();
        let seed_source = g.as_ref().map_or_else(|| "—".to_string(), |g| g.seed_source.clone());
        let params = g.as_ref().map(|g| g.params.to_string()).unwrap_or_else(|| "null".into());
        Some(Measurement {
            model: source.entry.inputs.get("model")?.clone(),
            family: format!("cases found by {plugin} from {seed_source}, params {params}"),
            value: format!("{} of {} inputs", self.discriminatory, self.generated),
        })
    }

    fn flip_words(m: &FlipMeasure, what: &str) -> String {
        if m.flipped > 0 {
            format!(
                "the search `{}` found {} inputs whose decision changes when {what} (how common they are is not measured)",
                m.stage,
                thousands(m.flipped)
            )
        } else {
            format!("the search `{}` found no input whose decision changes when {what}", m.stage)
        }
    }
}

impl Stage for VerifyConfig {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let cases = inputs.cases("cases")?;
        let model = &cases.model;
        let domain = &cases.domain;
        let width = domain.width();
        let protected = domain.protected_indices();
        // A linked column changes with its attribute in the host's variants and in the
        // counterpart a case must have.
        let checker = Checker::new(domain, None).with_links(&model.data.links);
        let before = model.oracle.rows();
        // Host-side scores of every instance (with all its variants) and every counterpart.
        crate::progress::start(&ctx.progress, (cases.instances.len() / width.max(1)) as u64, "cases checked");
        let verdicts = checker.check_shown(&model.oracle, &cases.instances, &ctx.progress)?;
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
            let expected = checker.counterpart_like(row, counter);
            let same_free = (0..width).filter(|j| !protected.contains(j)).all(|j| expected[j] == counter[j]);
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
        let step = (timeline.len() / 50).max(1);
        let time_to_1000_idis_s = {
            let mut sorted = times.clone();
            sorted.sort_by(f64::total_cmp);
            sorted.get(999).copied()
        };
        let figures = VerifyFigures {
            checked,
            confirmed: checked - rejected,
            rejected,
            discriminatory,
            discriminatory_full,
            generated: cases.generated,
            success_rate: discriminatory_full as f64 / generated as f64,
            success_rate_projection: discriminatory as f64 / generated as f64,
            search_queries: cases.queries,
            search_elapsed_s: cases.elapsed_s,
            per_second: if cases.elapsed_s > 0.0 { discriminatory as f64 / cases.elapsed_s } else { 0.0 },
            idis_over_time_s: timeline.iter().step_by(step).chain(timeline.last()).copied().collect(),
            time_to_1000_idis_s,
        };
        let table = TableBuilder::new()
            .decoded(domain, &confirmed_rows, "", None)
            .decoded(domain, &confirmed_counter, "_counterpart", Some(&checker.changed_columns()))
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
        Ok(StageOutput { artifact: Artifact::Cases(Arc::new(verified)), figures: Arc::new(figures), tables: vec![table], model_queries })
    }
}
