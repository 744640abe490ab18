//! Opening a language model for the data's rows (its prompt template checked on the first row).

use std::path::Path;
use std::sync::Arc;

use super::Opened;
use crate::error::ModelError;
use crate::llm::config::{LlmConfig, ScoreFrom};
use crate::llm::offline::AnswerSource;
use crate::llm::LlmModel;
use crate::model::Model;
use fairpipe_data::Dataset;

/// Open the language model of `llm` (its files relative to `dir`), answered from `answers`, for
/// `data`'s rows.
pub(super) fn open(
    llm: &LlmConfig,
    dir: &Path,
    answers: &AnswerSource,
    data: &Dataset,
    opened: &mut Opened,
) -> Result<Arc<dyn Model>, ModelError> {
    let first: Vec<f64> = data.x.rows().into_iter().next().map(|r| r.to_vec()).unwrap_or_default();
    let model = LlmModel::load(llm, dir, &data.domain, (!first.is_empty()).then_some(first.as_slice()), answers)?;
    if let Some(prompts) = llm.validity {
        // The data's rows, evenly spaced.
        let all = data.x.nrows();
        let take = (prompts as usize).min(all);
        let mut rows = Vec::with_capacity(take * data.x.ncols());
        for k in 0..take {
            rows.extend(data.x.row(k * all / take.max(1)).iter());
        }
        model.check_validity(&rows, dir, answers)?;
    }
    opened.output_read = Some(match llm.scores {
        ScoreFrom::Logprobs => "P(favourable): the favourable answers' share of the first answer token's top_logprobs".to_string(),
        ScoreFrom::Samples => format!("P(favourable): the favourable share of {} sampled answers", llm.samples),
        ScoreFrom::Labels => "labels only: the first word of one answer".to_string(),
    });
    opened.labels_only = Some(llm.scores == ScoreFrom::Labels);
    opened.favourable_class_assumed = Some(false);
    opened.input_contract = Some(format!("each row rendered into a prompt by {}", llm.prompt.display()));
    opened.executor = Some(model.describe());
    Ok(Arc::new(model))
}
