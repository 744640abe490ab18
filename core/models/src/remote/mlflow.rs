//! MLflow's scoring server (`mlflow models serve`, and the images MLflow builds): readiness on
//! `GET /ping`, scoring on `POST /invocations` with a `dataframe_split` body, answers
//! `{"predictions": …}`.
//!
//! The server publishes no input list, so rows go as the data's raw columns by name (text
//! categories as text, numbers as numbers), the way a model logged from a pandas DataFrame takes
//! them. `predictions` may be a list (labels, or one probability per row), a list of lists
//! (`predict_proba`, for a scikit-learn model saved with `pyfunc_predict_fn="predict_proba"`),
//! a list of records (a DataFrame: each column an output), or an object of lists (each key an
//! output).

use fairpipe_abi::domain::{AttributeKind, Domain};
use serde_json::{json, Map, Value};

use super::error::{AnswerError, EndpointError};
use super::http::{Http, HttpSettings};
use super::{read_output, Backend, Returned};
use crate::error::ModelError;
use crate::inputs::{DeclaredInput, ElementType, InputBatch, InputValues};

/// A model on an MLflow scoring server.
#[derive(Debug, Clone, PartialEq)]
pub struct MlflowEndpoint {
    /// The server's base URL, without a trailing slash or `/invocations`.
    pub base: String,
}

impl MlflowEndpoint {
    /// From `url`: `http(s)://host:port`, with or without a trailing `/invocations`.
    pub fn parse(url: &str) -> Result<Self, EndpointError> {
        let trimmed = url.trim_end_matches('/');
        if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
            return Err(EndpointError::NotHttp { url: url.to_string() });
        }
        let base = trimmed.strip_suffix("/invocations").unwrap_or(trimmed).to_string();
        Ok(MlflowEndpoint { base })
    }

    /// Where rows are scored.
    pub fn invocations(&self) -> String {
        format!("{}/invocations", self.base)
    }

    /// Whether the server has loaded its model (`GET /ping` answers 200).
    pub fn ready(&self, http: &Http) -> Result<(), ModelError> {
        http.get_ok(&format!("{}/ping", self.base))
    }
}

/// The inputs an MLflow model is sent: one per feature column, by name, as text for text
/// categories without declared codes (`coded`, per feature) and as numbers otherwise.
pub fn declared_inputs(domain: &Domain, coded: &[bool]) -> Vec<DeclaredInput> {
    domain
        .attributes
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let text = !coded.get(i).copied().unwrap_or(false)
                && matches!(&a.kind, AttributeKind::Categorical { levels } if !levels.iter().all(|l| l.trim().parse::<f64>().is_ok()));
            DeclaredInput { name: a.name.clone(), ty: if text { ElementType::String } else { ElementType::Float64 }, shape: vec![-1, 1] }
        })
        .collect()
}

/// A model on an MLflow scoring server, connected: the [`Backend`] of `protocol = "mlflow"`.
pub struct MlflowBackend {
    endpoint: MlflowEndpoint,
    http: Http,
}

impl MlflowBackend {
    /// Connect: check that the server has its model loaded (an error naming the URL otherwise),
    /// unless that was `seen_ready` already (when the pipeline was validated).
    pub fn connect(endpoint: MlflowEndpoint, settings: HttpSettings, seen_ready: bool) -> Result<Self, ModelError> {
        let http = Http::new(settings, &endpoint.base)?;
        if !seen_ready {
            endpoint.ready(&http).map_err(|e| match e {
                ModelError::Remote { url, message } => ModelError::Remote { url, message: format!("the model is not ready: {message}") },
                other => other,
            })?;
        }
        Ok(MlflowBackend { endpoint, http })
    }
}

impl Backend for MlflowBackend {
    fn location(&self) -> String {
        self.endpoint.invocations()
    }

    fn executor(&self) -> String {
        format!("mlflow {}", self.endpoint.invocations())
    }

    fn infer(&self, inputs: &[InputBatch], rows: usize) -> Result<Returned, ModelError> {
        let url = self.endpoint.invocations();
        let answer = self.http.post_json(&url, &dataframe_split(inputs, rows))?;
        predictions(&answer, rows).map_err(|e| e.at(url))
    }
}

/// `{"dataframe_split": {"columns": [...], "data": [[row], …]}}` from one batch per column.
pub fn dataframe_split(inputs: &[InputBatch], rows: usize) -> Value {
    let columns: Vec<String> = inputs.iter().map(|b| b.name.clone()).collect();
    let mut data: Vec<Vec<Value>> = (0..rows).map(|_| Vec::with_capacity(inputs.len())).collect();
    for batch in inputs {
        match &batch.values {
            InputValues::Float64(v) => v.iter().zip(&mut data).for_each(|(&x, row)| row.push(number(x))),
            InputValues::Float32(v) => v.iter().zip(&mut data).for_each(|(&x, row)| row.push(number(f64::from(x)))),
            InputValues::Int64(v) => v.iter().zip(&mut data).for_each(|(&x, row)| row.push(json!(x))),
            InputValues::Int32(v) => v.iter().zip(&mut data).for_each(|(&x, row)| row.push(json!(x))),
            InputValues::Float16(v) => v.iter().zip(&mut data).for_each(|(&x, row)| row.push(number(half::f16::from_bits(x).to_f64()))),
            InputValues::String(v) => v.iter().zip(&mut data).for_each(|(x, row)| row.push(Value::String(x.clone()))),
        }
    }
    json!({ "dataframe_split": { "columns": columns, "data": data } })
}

/// A float as JSON (a value that is not finite, which JSON cannot hold, as null).
fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The outputs in an answer's `predictions`, by name (a plain list is named `predictions`).
pub fn predictions(answer: &Value, rows: usize) -> Result<Returned, AnswerError> {
    let start = || answer.to_string().chars().take(200).collect::<String>();
    let Some(predictions) = answer.get("predictions") else {
        return Err(AnswerError::NoOutputs { key: "\"predictions\"", start: start() });
    };
    match predictions {
        Value::Array(list) if list.first().is_some_and(Value::is_object) => {
            // Records of a DataFrame: one output per column.
            let mut names: Vec<String> = Vec::new();
            for record in list {
                let object = record.as_object().ok_or_else(|| AnswerError::MixedRecords { start: start() })?;
                for key in object.keys() {
                    if !names.contains(key) {
                        names.push(key.clone());
                    }
                }
            }
            names
                .iter()
                .map(|name| {
                    let column: Vec<Value> = list.iter().map(|r| r.get(name).cloned().unwrap_or(Value::Null)).collect();
                    read_output(name, &Value::Array(column), rows)
                })
                .collect()
        }
        Value::Array(_) => Ok(vec![read_output("predictions", predictions, rows)?]),
        Value::Object(columns) => columns_output(columns, rows),
        other => Err(AnswerError::PredictionsNotListed { start: other.to_string().chars().take(200).collect() }),
    }
}

/// `{"NAME": [value per row], …}`: each key an output.
fn columns_output(columns: &Map<String, Value>, rows: usize) -> Result<Returned, AnswerError> {
    columns.iter().map(|(name, values)| read_output(name, values, rows)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::RawOutput;

    #[test]
    fn the_url_may_end_with_invocations() {
        assert_eq!(MlflowEndpoint::parse("http://127.0.0.1:5000/invocations/").unwrap().base, "http://127.0.0.1:5000");
        assert_eq!(MlflowEndpoint::parse("https://host/serving").unwrap().invocations(), "https://host/serving/invocations");
        assert!(MlflowEndpoint::parse("host:5000").unwrap_err().to_string().contains("not an http"));
    }

    #[test]
    fn rows_go_as_named_columns() {
        let inputs = vec![
            InputBatch { name: "age".into(), shape: vec![2, 1], values: InputValues::Float64(vec![39.0, 50.5]) },
            InputBatch { name: "sex".into(), shape: vec![2, 1], values: InputValues::String(vec!["Male".into(), "Female".into()]) },
        ];
        let body = dataframe_split(&inputs, 2);
        assert_eq!(body, json!({"dataframe_split": {"columns": ["age", "sex"], "data": [[39.0, "Male"], [50.5, "Female"]]}}));
    }

    #[test]
    fn predictions_read_as_labels_probabilities_records_or_columns() {
        let labels = predictions(&json!({"predictions": [1, 0, 1]}), 3).unwrap();
        assert_eq!(labels[0].0, "predictions");
        assert_eq!(labels[0].2, RawOutput::IntLabels(vec![1, 0, 1]));
        let proba = predictions(&json!({"predictions": [[0.25, 0.75], [0.5, 0.5]]}), 2).unwrap();
        assert_eq!(proba[0].2, RawOutput::Floats { values: vec![0.25, 0.75, 0.5, 0.5], columns: 2 });
        let records = predictions(&json!({"predictions": [{"label": ">50K", "p": 0.9}, {"label": "<=50K", "p": 0.2}]}), 2).unwrap();
        let names: Vec<&str> = records.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["label", "p"]);
        assert_eq!(records[1].2, RawOutput::Floats { values: vec![0.9, 0.2], columns: 1 });
        let columns = predictions(&json!({"predictions": {"p": [0.1, 0.2]}}), 2).unwrap();
        assert_eq!(columns[0].0, "p");
        let err = predictions(&json!({"error_code": "BAD_REQUEST"}), 2).unwrap_err().to_string();
        assert!(err.contains("no \"predictions\"") && err.contains("BAD_REQUEST"), "{err}");
        assert!(predictions(&json!({"predictions": [1]}), 2).unwrap_err().to_string().contains("1 values for a batch of 2"));
    }
}
