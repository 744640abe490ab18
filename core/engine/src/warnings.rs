//! Warnings a run states as it goes: a value the run adjusted or a figure that makes the audit
//! slow. Each is printed on standard error at once and kept, so that `summary.json` says it too
//! (under the stage's `warnings`, and every one in the top-level `warnings`) — a warning read
//! only on a terminal is lost to whoever reads the results.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Whether warnings are printed on standard error as they are stated (they are kept for the
/// summary either way).
static PRINTED: AtomicBool = AtomicBool::new(true);

/// Print warnings on standard error as they are stated (`true`, the default) or only keep them
/// for the summary (`false`; `fairpipe run --quiet`). Applies to the whole process.
pub fn set_printed(on: bool) {
    PRINTED.store(on, Ordering::Relaxed);
}

/// The warnings of one stage, in the order they were stated. Shared by the stage's threads.
#[derive(Debug, Default)]
pub struct Warnings {
    /// Printed before each message (e.g. "stage `estimate`: "); empty for none.
    prefix: String,
    messages: Mutex<Vec<String>>,
}

impl Warnings {
    /// An empty list whose messages are printed after `prefix`.
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        Warnings { prefix: prefix.into(), messages: Mutex::default() }
    }

    /// State `message`: print it on standard error now and keep it for the summary. A message
    /// already stated is not repeated (a check made before the stage ran and again as it runs).
    pub fn warn(&self, message: impl Into<String>) {
        let message = message.into();
        let mut messages = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        if !messages.contains(&message) {
            if PRINTED.load(Ordering::Relaxed) {
                eprintln!("warning: {}{message}", self.prefix);
            }
            messages.push(message);
        }
    }

    /// The messages stated so far, leaving the list empty.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.messages.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_kept_in_order_once_each_and_taken_once() {
        let w = Warnings::with_prefix("stage `s`: ");
        w.warn("first");
        w.warn(String::from("second"));
        w.warn("first");
        assert_eq!(w.take(), vec!["first", "second"]);
        assert!(w.take().is_empty());
    }
}
