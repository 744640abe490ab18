//! The process-wide "stop now" request. The command line sets it on SIGINT/SIGTERM; a running
//! plugin sees it through its `should_stop` callback and ends its search, and the run then fails
//! with an interrupted error, so nothing is written. A program embedding the engine may set it
//! from its own signal handling.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Ask every running search to stop (async-signal-safe: one atomic store).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}
