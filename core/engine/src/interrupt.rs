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

/// Folders to remove when the process is made to exit (a second signal, or a stage that does not
/// stop in time): the staging folders of runs in progress.
static CLEANUP: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

fn cleanup_list() -> std::sync::MutexGuard<'static, Vec<std::path::PathBuf>> {
    CLEANUP.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove `dir` (a folder or a file) if the process is made to exit before [`forget`] is called for it.
pub fn remove_on_exit(dir: &std::path::Path) {
    cleanup_list().push(dir.to_path_buf());
}

/// `dir` no longer needs removing at exit (it was moved into place or removed already).
pub fn forget(dir: &std::path::Path) {
    cleanup_list().retain(|d| d != dir);
}

/// Remove every folder registered with [`remove_on_exit`]; called just before a forced exit. Waits
/// for a [`while_not_interrupted`] section in progress, so a result being moved into place is
/// either fully in place or not at all.
pub fn cleanup_now() {
    let mut list = cleanup_list();
    for path in list.drain(..) {
        if path.is_dir() {
            let _ = std::fs::remove_dir_all(&path);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Run `f` unless a stop was requested (then `None`), holding off [`cleanup_now`] meanwhile.
pub fn while_not_interrupted<T>(f: impl FnOnce() -> T) -> Option<T> {
    let _guard = cleanup_list();
    if requested() {
        return None;
    }
    Some(f())
}
