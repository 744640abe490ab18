//! What a run shows while it works, on standard error and only when that is a terminal: one line
//! per running stage, a spinner with the elapsed time until the stage knows how much work it has,
//! then a bar with the position, the total and the time left (estimate trials, search budget,
//! rows checked, sweep combinations). Nothing is drawn when standard error is not a terminal (a
//! log file, a CI job) or the run is quiet. A program embedding the engine may follow the same
//! lines itself ([`watching`]: the Python package's notebook bars), drawn or not.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressDrawTarget, ProgressStyle};

/// A stage's progress line (indicatif's bar, shared by clones: a [`Watcher`] reads the stage's).
pub use indicatif::ProgressBar;

/// Whether progress is drawn: asked for (`show`, i.e. not `--quiet`) and standard error, where it is
/// drawn, is a terminal.
pub fn wanted(show: bool) -> bool {
    show && std::io::stderr().is_terminal()
}

/// Told of each stage's progress line as the stage starts: its name, kind and the line itself
/// (which the watcher may read as the stage advances it: position, length, message).
pub type Watcher = dyn Fn(&str, &str, &ProgressBar) + Send + Sync;

thread_local! {
    /// The watcher of runs on this thread ([`watching`]).
    static WATCHER: RefCell<Option<Arc<Watcher>>> = const { RefCell::new(None) };
}

/// Run `f` with `watcher` told of every stage line [`stage`] makes on this thread (the thread a
/// pipeline executes on), hidden lines included.
pub fn watching<T>(watcher: Arc<Watcher>, f: impl FnOnce() -> T) -> T {
    let before = WATCHER.with(|w| w.replace(Some(watcher)));
    let result = f();
    WATCHER.with(|w| *w.borrow_mut() = before);
    result
}

/// A progress line for stage `name` of kind `kind`: a spinner with the elapsed time until the
/// stage calls [`start`]; hidden unless `show` (see [`wanted`]). The thread's watcher, if any, is
/// told of it.
pub fn stage(name: &str, kind: &str, show: bool) -> ProgressBar {
    let bar = drawn_stage(name, kind, show);
    if let Some(watcher) = WATCHER.with(|w| w.borrow().clone()) {
        watcher(name, kind, &bar);
    }
    bar
}

/// [`stage`]'s line, before the watcher is told.
fn drawn_stage(name: &str, kind: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} {msg} [{elapsed}]").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(format!("{name} ({kind})"));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A bar over `total` `unit` from the start (a sweep's combinations); hidden unless `show`.
pub fn bar(prefix: &str, total: u64, unit: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_prefix(prefix.to_string());
    start(&bar, total, unit);
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

/// The template of a bar: prefix, bar (as wide as the terminal leaves room for), position / total
/// and unit, elapsed and time left.
const BAR: &str = "{prefix} [{wide_bar}] {human_pos}/{human_len} {msg} ({elapsed}, ETA {eta})";

/// Turn `bar` (a stage's line) into a bar of `total` `unit`, at position 0: a stage calls this
/// before the work it can count, then advances it (`inc`, `set_position`). Nothing is drawn for a
/// hidden bar, but it counts (a [`watching`] program reads it).
pub fn start(bar: &ProgressBar, total: u64, unit: &str) {
    bar.set_message(unit.to_string());
    bar.set_length(total);
    bar.set_position(0);
    if bar.is_hidden() {
        return;
    }
    bar.reset_eta();
    bar.set_style(ProgressStyle::with_template(BAR).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "));
    // Drawn now, even within the redraw rate limit, so a stage that ends quickly still showed it.
    bar.force_draw();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_drawn_when_not_asked_and_the_bar_template_parses() {
        assert!(stage("s", "estimate", false).is_hidden());
        assert!(bar("sweep", 3, "combinations", false).is_hidden());
        assert!(!wanted(false));
        assert!(ProgressStyle::with_template(BAR).is_ok());
        // A hidden bar still counts (stages advance it either way).
        let hidden = ProgressBar::hidden();
        start(&hidden, 10, "trials");
        hidden.inc(3);
        assert_eq!(hidden.position(), 3);
        assert_eq!((hidden.length(), hidden.message().as_str()), (Some(10), "trials"));
    }

    #[test]
    fn a_watcher_is_told_of_each_stage_line_on_its_thread_only() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let told = Arc::clone(&seen);
        let watcher: Arc<Watcher> = Arc::new(move |name: &str, kind: &str, bar: &ProgressBar| {
            told.lock().unwrap().push((name.to_string(), kind.to_string(), bar.clone()));
        });
        watching(watcher, || {
            let bar = stage("e", "estimate", false);
            start(&bar, 4, "trials");
            bar.inc(4);
            std::thread::spawn(|| stage("elsewhere", "check", false)).join().unwrap();
        });
        stage("after", "check", false);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "only the line made on the watched thread, while watched");
        let (name, kind, bar) = &seen[0];
        assert_eq!((name.as_str(), kind.as_str(), bar.position(), bar.length()), ("e", "estimate", 4, Some(4)));
    }
}
