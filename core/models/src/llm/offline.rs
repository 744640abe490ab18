//! The offline path. `fairpipe llm plan` runs a pipeline's non-adaptive stages with the model
//! recording each request instead of sending it ([`Recorder`]): one line per distinct request in
//! the OpenAI Batch API's input format (`{"custom_id", "method", "url", "body"}`), the id being
//! the request's cache key in hex. `fairpipe run --responses FILE` answers each request from such
//! a file ([`Responses`]: lines `{"custom_id", "response": {"status_code", "body"}}`, the Batch
//! API's output format, or `{"custom_id", "response": BODY}`), never from a server.
//!
//! Which of these a model uses is the run's choice ([`AnswerSource`], handed to
//! [`super::LlmModel::load`] by the run that opens the model), never the process's: two runs in
//! one process (a Python session) each answer from their own source.

use std::collections::HashMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::client::{read_reply, Reply};
use super::error::LlmError;

/// Where an `llm` model's answers come from: an option of the run that opens the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AnswerSource {
    /// The model's server (and the response cache).
    #[default]
    Live,
    /// Nowhere: each request is written to this file (created anew) instead of being sent, and
    /// answered as undecided (`fairpipe llm plan`).
    Record(PathBuf),
    /// This responses file, never a server (`fairpipe run --responses`).
    Responses(PathBuf),
}

/// A request's id in plan and responses files: its 128-bit key in hex.
pub fn request_id(key: u128) -> String {
    format!("{key:032x}")
}

/// The path of an endpoint URL (`http://host:8080/v1/chat/completions` → `/v1/chat/completions`).
fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |at| &rest[at..])
}

/// Requests written as a batch file.
pub struct Recorder {
    out: Mutex<BufWriter<std::fs::File>>,
    path: PathBuf,
}

impl Recorder {
    /// Create (truncate) `path`.
    pub fn create(path: &Path) -> Result<Recorder, LlmError> {
        let file = std::fs::File::create(path).map_err(|e| LlmError::Plan { path: path.display().to_string(), message: e.to_string() })?;
        Ok(Recorder { out: Mutex::new(BufWriter::new(file)), path: path.to_path_buf() })
    }

    /// Write one request (`body` as sent to `url`) under `key`.
    pub fn write(&self, key: u128, url: &str, body: &[u8]) -> Result<(), LlmError> {
        let body: Value = serde_json::from_slice(body).map_err(|e| LlmError::Json(e.to_string()))?;
        let line = json!({"custom_id": request_id(key), "method": "POST", "url": url_path(url), "body": body});
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(out, "{line}")
            .and_then(|_| out.flush())
            .map_err(|e| LlmError::Plan { path: self.path.display().to_string(), message: e.to_string() })
    }
}

/// Answers read from a responses file, by request key.
pub struct Responses {
    answers: HashMap<u128, (Reply, Option<crate::llm::client::Usage>)>,
    path: PathBuf,
}

impl Responses {
    /// Read `path`; `want_logprobs`: each answer must carry the first token's `top_logprobs`.
    /// A line that is not a readable answer is an error naming `path:line`.
    pub fn read(path: &Path, want_logprobs: bool) -> Result<Responses, LlmError> {
        let file = std::fs::File::open(path)
            .map_err(|e| LlmError::ResponsesUnreadable { path: path.display().to_string(), message: e.to_string() })?;
        let mut answers = HashMap::new();
        for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
            let at = format!("{}:{}", path.display(), n + 1);
            let wrong = |problem: String| LlmError::ResponsesLine { at: at.clone(), problem };
            let line = line.map_err(|e| wrong(e.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(&line).map_err(|e| wrong(format!("not JSON ({e})")))?;
            let id = value.get("custom_id").and_then(Value::as_str).ok_or_else(|| wrong("no \"custom_id\"".into()))?;
            let key = u128::from_str_radix(id, 16)
                .ok()
                .filter(|_| id.len() == 32)
                .ok_or_else(|| wrong(format!("\"custom_id\" {id:?} is not an id of `fairpipe llm plan` (32 hex digits)")))?;
            let response = value.get("response").ok_or_else(|| wrong("no \"response\"".into()))?;
            if let Some(status) = response.get("status_code").and_then(Value::as_u64) {
                if status != 200 {
                    return Err(wrong(format!("the request {id} was answered with status {status}, not an answer")));
                }
            }
            let body = response.get("body").unwrap_or(response);
            let text = serde_json::to_vec(body).map_err(|e| LlmError::Json(e.to_string()))?;
            let (reply, usage, _) = read_reply(&text, want_logprobs).map_err(|e| wrong(e.message))?;
            answers.insert(key, (reply, usage));
        }
        Ok(Responses { answers, path: path.to_path_buf() })
    }

    /// The answer to the request `key`, with the tokens its `usage` counts (prompt, completion)
    /// when it has one.
    pub fn get(&self, key: u128) -> Option<&(Reply, Option<crate::llm::client::Usage>)> {
        self.answers.get(&key)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_line_is_read_back_by_its_id_and_bad_lines_name_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan.jsonl");
        let recorder = Recorder::create(&plan).unwrap();
        recorder.write(0xabc, "http://h:1/v1/chat/completions", br#"{"model":"m"}"#).unwrap();
        let line: Value = serde_json::from_str(std::fs::read_to_string(&plan).unwrap().trim()).unwrap();
        assert_eq!(line["custom_id"], "00000000000000000000000000000abc");
        assert_eq!(line["url"], "/v1/chat/completions");
        assert_eq!(line["body"]["model"], "m");
        let answers = dir.path().join("a.jsonl");
        let body = json!({"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [{"top_logprobs": [{"token": "Yes", "logprob": -0.1}]}]}}]});
        std::fs::write(&answers, format!("{}\n", json!({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": body}})))
            .unwrap();
        let read = Responses::read(&answers, true).unwrap();
        assert_eq!(read.get(0xabc).unwrap().0.content, "Yes");
        std::fs::write(&answers, format!("\n{}\n", json!({"custom_id": "zz", "response": body}))).unwrap();
        let e = Responses::read(&answers, true).err().unwrap().to_string();
        assert!(e.contains("a.jsonl:2") && e.contains("32 hex digits"), "{e}");
    }
}
