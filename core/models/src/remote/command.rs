//! A model run as a long-running program (`command = ["python3", "model.py"]`): started once,
//! fed batches as JSON lines on stdin, answering one JSON line per batch on stdout, stopped at the
//! end (stdin closed, then killed if it lingers). Its stderr is kept and shown when it fails.
//!
//! Protocol, one line each way per batch:
//! - fairpipe writes `{"columns": ["age", …], "data": [[39, 0, …], …]}`: the encoded feature values
//!   of each row, in the data's feature order;
//! - the program answers `{"NAME": [value per row], …}`: each key an output, each value a number,
//!   a list of numbers (e.g. `"predict_proba": [[0.8, 0.2], …]`), an integer label or a text
//!   label; or `{"error": "…"}`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{read_output, Backend, Returned};
use crate::error::ModelError;
use crate::inputs::{InputBatch, InputValues};

/// Bytes of the program's stderr kept for error messages.
const STDERR_KEPT: usize = 4000;

/// A running model program.
pub struct CommandBackend {
    argv: Vec<String>,
    columns: Vec<String>,
    io: Mutex<Pipes>,
    child: Mutex<Child>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

struct Pipes {
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl CommandBackend {
    /// Start `argv` in `dir` (the pipeline's folder); rows have the feature `columns`.
    pub fn start(argv: &[String], dir: &Path, columns: Vec<String>) -> Result<Self, ModelError> {
        let shown = argv.join(" ");
        let (program, args) =
            argv.split_first().ok_or_else(|| ModelError::Remote { url: "command".into(), message: "`command` is empty".into() })?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| ModelError::Remote { url: format!("command {shown}"), message: format!("cannot start it: {e}") })?;
        let missing = || ModelError::Remote { url: format!("command {shown}"), message: "no pipe to the program".into() };
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let mut err_pipe = child.stderr.take().ok_or_else(missing)?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut kept = sink.lock().unwrap_or_else(|p| p.into_inner());
                kept.extend_from_slice(&buf[..n]);
                let excess = kept.len().saturating_sub(STDERR_KEPT);
                kept.drain(..excess);
            }
        });
        Ok(CommandBackend {
            argv: argv.to_vec(),
            columns,
            io: Mutex::new(Pipes { stdin: Some(stdin), stdout: BufReader::new(stdout) }),
            child: Mutex::new(child),
            stderr,
        })
    }

    /// An error naming the command, with what it wrote on stderr.
    fn fail(&self, message: String) -> ModelError {
        // Give the stderr reader a moment to collect the program's last words.
        std::thread::sleep(Duration::from_millis(100));
        let stderr = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&stderr);
        let status = self.child.lock().unwrap_or_else(|p| p.into_inner()).try_wait().ok().flatten();
        let mut message = message;
        if let Some(status) = status {
            message.push_str(&format!(" (the program exited: {status})"));
        }
        if !text.trim().is_empty() {
            message.push_str(&format!("; its stderr:\n{}", text.trim_end()));
        }
        ModelError::Remote { url: self.location(), message }
    }
}

impl Backend for CommandBackend {
    fn location(&self) -> String {
        format!("command {}", self.argv.join(" "))
    }

    fn executor(&self) -> String {
        self.location()
    }

    fn infer(&self, inputs: &[InputBatch], rows: usize) -> Result<Returned, ModelError> {
        let width = self.columns.len();
        let values: std::borrow::Cow<'_, [f64]> = match inputs.first().map(|b| &b.values) {
            Some(InputValues::Float64(v)) => v.into(),
            Some(InputValues::Float32(v)) => v.iter().copied().map(f64::from).collect::<Vec<f64>>().into(),
            _ => return Err(self.fail("a program takes the encoded rows as one vector".into())),
        };
        let data: Vec<&[f64]> = values.chunks(width.max(1)).take(rows).collect();
        let line = json!({ "columns": self.columns, "data": data }).to_string();
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let written = match io.stdin.as_mut() {
            Some(stdin) => stdin.write_all(line.as_bytes()).and_then(|_| stdin.write_all(b"\n")).and_then(|_| stdin.flush()),
            None => return Err(self.fail("the program was stopped".into())),
        };
        written.map_err(|e| self.fail(format!("cannot write a batch to it: {e}")))?;
        let mut answer = String::new();
        let read = io.stdout.read_line(&mut answer).map_err(|e| self.fail(format!("cannot read its answer: {e}")))?;
        if read == 0 {
            return Err(self.fail(format!("it closed its stdout instead of answering a batch of {rows} rows")));
        }
        let value: Value = super::parse_json(&answer).map_err(|e| {
            let start: String = answer.chars().take(200).collect();
            self.fail(format!("its answer is not one JSON object per line ({e}); it starts {start:?}"))
        })?;
        let object = value.as_object().ok_or_else(|| self.fail(format!("its answer is not a JSON object: {}", answer.trim())))?;
        if let Some(error) = object.get("error") {
            return Err(self.fail(format!("it reported an error: {error}")));
        }
        let mut returned = Vec::with_capacity(object.len());
        for (name, values) in object {
            returned.push(read_output(name, values, rows).map_err(|e| self.fail(e.to_string()))?);
        }
        Ok(returned)
    }

    fn max_in_flight(&self) -> usize {
        1
    }
}

impl Drop for CommandBackend {
    fn drop(&mut self) {
        // Close stdin: the program reads end of file and exits; kill it if it does not within 2 s.
        if let Ok(mut io) = self.io.lock() {
            io.stdin = None;
        }
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}
