//! Opening a model handed over in code: bound to the dataset, refused when it does not read a
//! protected column.

use std::sync::Arc;

use super::{check_protected_read_at, unused_features, Opened};
use crate::error::ModelError;
use crate::model::Model;
use crate::provided::ProvidedModel;
use fairpipe_data::Dataset;

/// Bind `provided` to `data`.
pub(super) fn open(provided: &ProvidedModel, data: &Dataset, opened: &mut Opened) -> Result<Arc<dyn Model>, ModelError> {
    let bound = provided.0.bind(data)?;
    let described = provided.0.describe();
    check_protected_read_at(&described, data, &bound.read)?;
    opened.output_read = Some(bound.output_read);
    opened.labels_only = Some(false);
    opened.favourable_class_assumed = Some(bound.favourable_class_assumed);
    opened.input_contract = Some(bound.input_contract);
    opened.unused_features = unused_features(data, &bound.read);
    opened.executor = Some(described);
    Ok(bound.model)
}
