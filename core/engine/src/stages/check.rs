//! `check`: which of the dataset's own rows are discriminatory.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::estimate::MODEL_INPUT;
use super::options::{check_gamma, check_protected, Rows};
use crate::check::Checker;
use crate::error::Result;
use crate::numbers::{percent, thousands};
use crate::output::TableBuilder;
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
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig { split: Rows::Test, gamma: None, protected: None }
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
    /// Wilson 95% interval of the rate.
    pub ci95: [f64; 2],
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
        crate::stage::with_protected(&data.domain, self.protected.as_deref(), warnings).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.protected.as_deref(), self.split.split(), &ctx.warnings)?;
        let domain = &domain;
        let checker = Checker::new(domain, self.gamma).with_links(&model.data.links);
        let before = model.oracle.rows();
        crate::progress::start(&ctx.progress, (rows.len() / domain.width().max(1)) as u64, "rows checked");
        let scores = checker.scores_shown(&model.oracle, &rows, &ctx.progress)?;
        let verdicts = checker.verdicts(&scores);
        let alone = checker.alone_of(&model.oracle, &rows, &scores, &verdicts)?;
        let shifts = crate::logit_shift::measured(&model.oracle, domain, &rows, &scores);
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
        let figures = CheckFigures {
            checked: verdicts.len(),
            discriminatory: found,
            rate: found as f64 / verdicts.len().max(1) as f64,
            ci95: wilson(found, verdicts.len(), 1.96),
            protected: names,
            discriminatory_alone,
            rate_alone,
            hidden_intersectional: hidden,
            rate_hidden_intersectional: hidden.map(|h| h as f64 / verdicts.len().max(1) as f64),
            ci95_hidden_intersectional: hidden.map(|h| wilson(h, verdicts.len(), 1.96)),
            logit_shift: shifts.logit_shift,
            score_shift: shifts.score_shift,
        };
        let table = TableBuilder::new()
            .decoded(domain, &instances, "", None)
            .decoded(domain, &counterparts, "_counterpart", Some(&checker.changed_columns()))
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
        Ok(StageOutput { artifact: Artifact::Cases(Arc::new(cases)), figures: Arc::new(figures), tables: vec![table], model_queries })
    }
}
