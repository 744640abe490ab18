//! What a run shows while it works, from Python: nothing, the command line's own bars (drawn by
//! the engine on standard error when that is a terminal), or each stage's line handed to a Python
//! callable (`fairpipe_rs._progress`: tqdm bars in a notebook, plain text otherwise).
//!
//! The callable is called from a thread of its own, every [`EVERY`] while a stage advances and
//! once when each stage ends, with `(stage, kind, position, total or None, unit, elapsed seconds,
//! finished)`; the pipeline keeps running on the calling thread, so a Python model and Ctrl-C
//! work as without progress.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fairpipe_core::progress::{watching, ProgressBar, Watcher};
use pyo3::prelude::*;

/// How often a running stage's line is read and handed over.
const EVERY: Duration = Duration::from_millis(250);

/// What a run shows.
pub enum Show {
    /// Nothing.
    Quiet,
    /// The command line's bars, on standard error when it is a terminal.
    Terminal,
    /// Each stage's line handed to this callable.
    Callback(Py<PyAny>),
}

impl Show {
    /// `progress` as the native functions take it: `None` or `False` (quiet), `True` (the
    /// terminal's bars), or a callable.
    pub fn from_py(progress: Option<Bound<'_, PyAny>>) -> PyResult<Show> {
        let Some(progress) = progress else { return Ok(Show::Quiet) };
        if progress.is_none() {
            return Ok(Show::Quiet);
        }
        if let Ok(draw) = progress.extract::<bool>() {
            return Ok(if draw { Show::Terminal } else { Show::Quiet });
        }
        if !progress.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err("progress: give None, a bool or a callable"));
        }
        Ok(Show::Callback(progress.unbind()))
    }
}

/// One reading of a stage's line.
struct Reading {
    stage: String,
    kind: String,
    position: u64,
    total: Option<u64>,
    unit: String,
    elapsed: f64,
    finished: bool,
}

/// The running stage's line.
struct Line {
    stage: String,
    kind: String,
    bar: ProgressBar,
}

impl Line {
    fn read(&self, finished: bool) -> Reading {
        Reading {
            stage: self.stage.clone(),
            kind: self.kind.clone(),
            position: self.bar.position(),
            total: self.bar.length(),
            unit: self.bar.message(),
            elapsed: self.bar.elapsed().as_secs_f64(),
            finished,
        }
    }
}

/// Run `work` (given whether the engine draws its own bars) with the GIL released, showing its
/// progress as `show` says.
pub fn followed<T: Send>(py: Python<'_>, show: Show, work: impl FnOnce(bool) -> T + Send) -> T {
    match show {
        Show::Quiet => py.detach(|| work(false)),
        Show::Terminal => py.detach(|| work(true)),
        Show::Callback(callback) => py.detach(|| follow(&callback, work)),
    }
}

/// [`followed`] with a callable: the stage lines are watched on this thread, read and handed over
/// on another.
fn follow<T: Send>(callback: &Py<PyAny>, work: impl FnOnce(bool) -> T + Send) -> T {
    let current: Arc<Mutex<Option<Line>>> = Arc::default();
    let (send, receive) = channel::<Reading>();
    let send = Mutex::new(send);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| hand_over(callback, &current, receive));
        let send = Arc::new(send);
        let watcher: Arc<Watcher> = {
            let (current, send) = (Arc::clone(&current), Arc::clone(&send));
            Arc::new(move |stage: &str, kind: &str, bar: &ProgressBar| {
                let mut line = current.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(done) = line.take() {
                    told(done.read(true), &send);
                }
                let started = Line { stage: stage.to_string(), kind: kind.to_string(), bar: bar.clone() };
                told(started.read(false), &send);
                *line = Some(started);
            })
        };
        let result = watching(watcher, || work(false));
        if let Some(done) = current.lock().unwrap_or_else(|p| p.into_inner()).take() {
            told(done.read(true), &send);
        }
        drop(send);
        let _ = reader.join();
        result
    })
}

/// Send `reading` to the reader (which stops only once the run is over: a send cannot fail).
fn told(reading: Reading, send: &Mutex<Sender<Reading>>) {
    let _ = send.lock().unwrap_or_else(|p| p.into_inner()).send(reading);
}

/// Hand each reading sent, and every [`EVERY`] the running stage's line when it moved, to
/// `callback`, until the sender is gone. A callback that raises is reported once (as an
/// unraisable exception) and called no more; the run goes on.
fn hand_over(callback: &Py<PyAny>, current: &Mutex<Option<Line>>, receive: std::sync::mpsc::Receiver<Reading>) {
    let mut working = true;
    let mut last: Option<(String, u64, Option<u64>)> = None;
    let mut give = |reading: Reading| {
        let key = (reading.stage.clone(), reading.position, reading.total);
        if !working || (!reading.finished && last.as_ref() == Some(&key)) {
            return;
        }
        last = Some(key);
        Python::attach(|py| {
            let args = (reading.stage, reading.kind, reading.position, reading.total, reading.unit, reading.elapsed, reading.finished);
            if let Err(e) = callback.call1(py, args) {
                working = false;
                e.write_unraisable(py, Some(callback.bind(py)));
            }
        });
    };
    loop {
        match receive.recv_timeout(EVERY) {
            Ok(reading) => give(reading),
            Err(RecvTimeoutError::Timeout) => {
                let reading = current.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|l| l.read(false));
                if let Some(reading) = reading {
                    give(reading);
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
}
