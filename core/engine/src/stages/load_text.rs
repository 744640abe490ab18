//! `load_text`: read texts and their labels (CSV or Parquet) for a text audit, with the identity
//! terms to audit (TestSGD's Table 1 by default), and report how many texts mention each term.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::label_value::LabelValue;
use crate::data::Split;
use crate::error::Result;
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput, TextsArtifact};
use crate::text::counterfactual::term_counts;
use crate::text::data::TextData;
use crate::text::terms::IdentityTerms;

/// The `load_text` stage kind.
pub const KIND: StageKind = StageKind {
    name: "load_text",
    doc: "Read a column of texts and their label (CSV or Parquet) for a text audit, with the identity terms to audit: TestSGD's Table 1 (gender, race, religion, age; 48 terms) unless `terms` replaces or adds categories. Matching is case-insensitive on word boundaries; multi-word terms match across spaces or hyphens. Reports how many texts mention each category and term, and writes that table.",
    inputs: &[],
    output: ArtifactKind::Texts,
    keys: LoadTextConfig::keys,
    tag: None,
    example: "[stages.comments]\nkind = \"load_text\"\npath = \"data/text/wikitalk_comments.csv\"\ntext = \"comment\"\nlabel = \"toxic\"\nfavourable = \"False\"",
    configure: configure::<LoadTextConfig>,
    fields: fields_of::<LoadTextConfig>,
    read: read_debug::<LoadTextConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<LoadTextFigures>(),
};

/// The `load_text` stage's config.
#[derive(Debug, Clone, Default, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct LoadTextConfig {
    /// CSV or Parquet file, relative to the pipeline file.
    pub path: PathBuf,
    /// The text column.
    pub text: String,
    /// Label column.
    pub label: String,
    /// The label value of class 1 as written in the file.
    #[key(default = "1 for 0/1 labels")]
    pub favourable: Option<LabelValue>,
    /// Identity-term categories replacing (same name) or added to the paper's: terms.gender =
    /// ["woman", "man"].
    #[serde(default)]
    #[key(ty = "table of string lists", default = "{} (Table 1)")]
    pub terms: BTreeMap<String, Vec<String>>,
    /// Column holding train / val / test per text.
    #[serde(default)]
    pub split_column: Option<String>,
    /// Share of texts held out for test when there is no split column (seeded shuffle).
    #[serde(default = "default_test_fraction")]
    pub test_fraction: f64,
    /// The stage's seed (set by the runner, not the file).
    #[serde(skip)]
    seed: u64,
}

fn default_test_fraction() -> f64 {
    0.2
}

impl StageConfig for LoadTextConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, checks: &mut Checks<'_, '_>) {
        checks.within("test_fraction", self.test_fraction, 0.0, 0.99);
        if let Err(e) = IdentityTerms::paper_with(&self.terms) {
            checks.problem("terms", e);
        }
        checks.existing_file("path", &self.path);
        if let Some(c) = &self.split_column {
            if c == &self.text || c == &self.label {
                checks.problem("split_column", format!("the split column `{c}` is also the text or the label column"));
            }
        }
    }

    fn instantiate(mut self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        self.path = env.dir.join(&self.path);
        self.seed = env.seed;
        Ok(Box::new(self))
    }
}

/// Figures of a `load_text` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct LoadTextFigures {
    /// Texts kept.
    pub rows: usize,
    /// Texts in the train split.
    pub rows_train: usize,
    /// Texts in the test split.
    pub rows_test: usize,
    /// Rows dropped for an empty text.
    pub dropped_rows: usize,
    /// The label column, its values `[class 0, class 1]` and the share of class 1.
    pub label: String,
    /// `[class 0, class 1]` as written in the file.
    pub label_values: [String; 2],
    /// Share of texts in class 1.
    pub class_1_share: f64,
    /// Identity-term categories with their terms.
    pub terms: BTreeMap<String, Vec<String>>,
    /// Texts mentioning each category.
    pub texts_per_category: BTreeMap<String, usize>,
    /// Texts mentioning each term (`category/term`), terms mentioned by none left out.
    pub texts_per_term: BTreeMap<String, usize>,
    /// Texts mentioning any identity term.
    pub texts_with_terms: usize,
}

/// Figures the verdict does not read.
impl StageFigures for LoadTextFigures {
    const HEADLINE: &'static [&'static str] = &["rows"];
}

impl Stage for LoadTextConfig {
    fn run(&self, _ctx: &StageContext, _inputs: &Inputs) -> Result<StageOutput> {
        let favourable = self.favourable.as_ref().map(LabelValue::text);
        let data = TextData::load_with_split(&self.path, &self.text, &self.label, favourable.as_deref(), self.split_column.as_deref())?;
        let terms = IdentityTerms::paper_with(&self.terms).map_err(|e| crate::error::StageError::cannot("terms", e.to_string()))?;
        let matcher = terms.matcher();
        let mentions: Vec<_> = data.texts.iter().map(|t| matcher.mentions(t)).collect();
        let counts = term_counts(&mentions, &terms);
        let texts_with_terms = mentions.iter().filter(|m| !m.is_empty()).count();
        let n = data.texts.len();
        let split = match &data.split {
            Some(split) => split.clone(),
            None => crate::data::fraction_split(n, self.test_fraction, self.seed),
        };
        let rows_test = split.iter().filter(|&&s| s == Split::Test).count();
        let figures = LoadTextFigures {
            rows: n,
            rows_train: split.iter().filter(|&&s| s == Split::Train).count(),
            rows_test,
            dropped_rows: data.dropped_rows,
            label: data.label_name.clone(),
            label_values: data.label_values.clone(),
            class_1_share: data.y.iter().filter(|&&v| v == 1).count() as f64 / n as f64,
            terms: terms.category_names().enumerate().map(|(c, name)| (name.to_string(), terms.terms(c).to_vec())).collect(),
            texts_per_category: counts.iter().filter(|(_, t, _)| t.is_none()).map(|(c, _, k)| (c.clone(), *k)).collect(),
            texts_per_term: counts.iter().filter_map(|(c, t, k)| t.as_ref().filter(|_| *k > 0).map(|t| (format!("{c}/{t}"), *k))).collect(),
            texts_with_terms,
        };
        let table = TableBuilder::new()
            .str("category", counts.iter().map(|(c, _, _)| c.clone()).collect())
            .str("term", counts.iter().map(|(_, t, _)| t.clone().unwrap_or_else(|| "(any)".into())).collect())
            .i64("texts", counts.iter().map(|(_, _, k)| *k as i64).collect())
            .build("")?;
        Ok(StageOutput {
            artifact: Artifact::Texts(Arc::new(TextsArtifact { data, split, terms })),
            figures: Arc::new(figures),
            tables: vec![table],
            model_queries: 0,
        })
    }
}
