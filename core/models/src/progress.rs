//! What a run shows while it works, on standard error and only when that is a terminal: one line
//! per running stage, a spinner with the elapsed time until the stage knows how much work it has,
//! then a bar with the position, the total and the time left (estimate trials, search budget,
//! rows checked, sweep combinations). Nothing is drawn when standard error is not a terminal (a
//! log file, a CI job) or the run is quiet.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether progress is drawn: asked for (`show`, i.e. not `--quiet`) and standard error, where it is
/// drawn, is a terminal.
pub fn wanted(show: bool) -> bool {
    show && std::io::stderr().is_terminal()
}

/// A progress line for stage `name` of kind `kind`: a spinner with the elapsed time until the
/// stage calls [`start`]; hidden unless `show` (see [`wanted`]).
pub fn stage(name: &str, kind: &str, show: bool) -> ProgressBar {
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
/// hidden bar.
pub fn start(bar: &ProgressBar, total: u64, unit: &str) {
    if bar.is_hidden() {
        return;
    }
    bar.set_message(unit.to_string());
    bar.set_length(total);
    bar.set_position(0);
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
    }
}
