//! `check_text`: the counterfactual term swap over texts (Dixon et al., Garg et al.): a
//! text whose predicted label changes when the identity terms of one category are replaced by
//! another term of that category is a discriminatory instance. Writes every such swap with both
//! texts and both probabilities.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::options::Rows;
use crate::error::{Result, StageError};
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};
use crate::text::counterfactual::{check_swaps, check_twins};

/// The `check_text` stage kind.
pub const KIND: StageKind = StageKind {
    name: "check_text",
    doc: "The counterfactual swap on texts: every text of the split (of the model's texts, or of the texts connected as `data`, with their identity terms) is scored again with the identity terms of each category it mentions replaced by each other term of that category; a swap that changes the predicted label is a discriminatory instance. With `twins` (the same texts with terms already swapped, row by row), each text is checked against its twin instead. Writes the label-changing pairs with both texts and both probabilities.",
    inputs: &[
        super::train_text::TEXT_MODEL_INPUT,
        super::train_text::OTHER_TEXTS_INPUT,
        InputDoc {
            role: "twins",
            accepts: &[ArtifactKind::Texts],
            required: false,
            doc: "the same texts with identity terms already swapped, row by row (a load_text stage, e.g. Dixon et al.'s fuzzed comments): each pair is checked instead of generated swaps",
        },
    ],
    output: ArtifactKind::TextModel,
    keys: CheckTextConfig::keys,
    tag: None,
    example: "[stages.swaps]\nkind = \"check_text\"\nmodel = \"model\"",
    configure: configure::<CheckTextConfig>,
    fields: fields_of::<CheckTextConfig>,
    read: read_debug::<CheckTextConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<CheckTextFigures>(),
};

/// The `check_text` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct CheckTextConfig {
    /// Texts to check.
    pub split: Rows,
    /// Swaps written to the table at most (all are counted).
    pub max_cases: usize,
}

impl Default for CheckTextConfig {
    fn default() -> Self {
        CheckTextConfig { split: Rows::All, max_cases: 10_000 }
    }
}

impl StageConfig for CheckTextConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, _c: &mut Checks<'_, '_>) {}

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of a `check_text` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct CheckTextFigures {
    /// "swaps" (generated) or "twins" (the `twins` input's texts).
    #[serde(default)]
    pub counterfactuals: String,
    /// Texts checked.
    pub checked: usize,
    /// Texts mentioning an identity term (with twins: pairs whose texts differ).
    pub texts_with_terms: usize,
    /// Swapped texts scored (with twins: pairs whose texts differ).
    pub swaps: usize,
    /// Swaps that change the predicted label.
    pub discriminatory_swaps: usize,
    /// Texts with at least one label-changing swap (individual discriminatory instances).
    pub discriminatory: usize,
    /// `discriminatory / texts_with_terms`.
    #[serde(deserialize_with = "crate::stage::nan_if_null")]
    pub rate: f64,
    /// Label-changing swaps per category.
    pub per_category: std::collections::BTreeMap<String, usize>,
    /// Model texts scored (texts and swaps).
    pub texts_scored: usize,
}

/// Figures the verdict does not read.
impl StageFigures for CheckTextFigures {
    const HEADLINE: &'static [&'static str] = &["rate", "checked", "discriminatory"];
}

impl Stage for CheckTextConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.text_model("model")?;
        let texts = &inputs.optional_texts("data")?.unwrap_or_else(|| Arc::clone(&model.texts));
        let rows = texts.rows(self.split.split());
        let refs: Vec<&str> = rows.iter().map(|&i| texts.data.texts[i].as_str()).collect();
        let matcher = texts.terms.matcher();
        let twins = inputs.optional_texts("twins")?;
        let report = match &twins {
            None => check_swaps(&refs, &matcher, model.model.as_ref())?,
            Some(twins) => {
                if twins.data.texts.len() != texts.data.texts.len() {
                    return Err(StageError::cannot(
                        "twins",
                        format!(
                            "the twins ({}) have {} texts and the texts checked ({}) {}: twins are matched row by row",
                            twins.data.path.display(),
                            twins.data.texts.len(),
                            texts.data.path.display(),
                            texts.data.texts.len()
                        ),
                    ));
                }
                let twin_refs: Vec<&str> = rows.iter().map(|&i| twins.data.texts[i].as_str()).collect();
                check_twins(&refs, &twin_refs, &matcher, model.model.as_ref())?
            }
        };
        let mut per_category = std::collections::BTreeMap::new();
        for case in &report.cases {
            *per_category.entry(case.category.clone()).or_insert(0) += 1;
        }
        let figures = CheckTextFigures {
            counterfactuals: if twins.is_some() { "twins" } else { "swaps" }.into(),
            checked: report.texts,
            texts_with_terms: report.texts_with_terms,
            swaps: report.swaps,
            discriminatory_swaps: report.cases.len(),
            discriminatory: report.texts_discriminated,
            rate: if report.texts_with_terms == 0 { f64::NAN } else { report.texts_discriminated as f64 / report.texts_with_terms as f64 },
            per_category,
            // Twins: both sides of each differing pair; swaps: every text and every swapped text.
            texts_scored: if twins.is_some() { 2 * report.swaps } else { report.texts + report.swaps },
        };
        let shown = &report.cases[..report.cases.len().min(self.max_cases)];
        let table = TableBuilder::new()
            .i64("row", shown.iter().map(|c| rows[c.row] as i64).collect())
            .str("category", shown.iter().map(|c| c.category.clone()).collect())
            .str("term", shown.iter().map(|c| c.from.clone()).collect())
            .str("term_counterpart", shown.iter().map(|c| c.to.clone()).collect())
            .f64("probability", shown.iter().map(|c| c.p).collect())
            .f64("probability_counterpart", shown.iter().map(|c| c.p_swapped).collect())
            .str("text", shown.iter().map(|c| c.text.clone()).collect())
            .str("text_counterpart", shown.iter().map(|c| c.swapped.clone()).collect())
            .build("")?;
        Ok(StageOutput {
            artifact: Artifact::TextModel(Arc::clone(&model)),
            model_queries: figures.texts_scored as u64,
            figures: Arc::new(figures),
            tables: vec![table],
        })
    }
}
