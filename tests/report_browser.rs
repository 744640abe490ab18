//! `report.html` opened in a real headless browser (Debian's chromium): it renders (the screenshot
//! is far from blank), the page loads nothing from outside, and the browser logs no console error.
//!
//! `.ci/run` installs chromium and sets `FAIRPIPE_REQUIRE_BROWSER=1`, which makes a missing browser a
//! failure; elsewhere the test records itself as skipped (`common::skip`), which scripts/test.sh's
//! closing line counts as skipped, not passed.

use crate::common;

use std::process::Command;

fn chromium() -> Option<String> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .map(|b| b.to_string())
}

#[test]
fn the_report_renders_in_a_headless_browser_without_console_errors() {
    let Some(browser) = chromium() else {
        assert!(std::env::var("FAIRPIPE_REQUIRE_BROWSER").is_err(), "FAIRPIPE_REQUIRE_BROWSER is set but no chromium is installed");
        common::skip("report_browser", "no chromium on this machine (apt-get install chromium)");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&common::root().join("pipelines/census-groups.toml"), out.path(), &[]);
    assert!(summary["stages"]["groups"]["rule_sets_kept"].as_u64().unwrap() > 0);
    // The output contract's names (docs/output-contract.md).
    let rule = &summary["stages"]["groups"]["rules"][0];
    for key in ["rule", "score", "phi_in", "phi_out", "margin", "samples"] {
        assert!(!rule[key].is_null(), "group_score rules lack {key}: {rule}");
    }
    let group = &summary["stages"]["metrics"]["groups"][0];
    for key in ["selection_rate", "ci95", "impact_ratio", "four_fifths_ok"] {
        assert!(!group[key].is_null(), "group_metrics groups lack {key}: {group}");
    }
    let report = out.path().join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http"),
        "the report must be self-contained"
    );
    let url = format!("file://{}", report.display());
    let shot = out.path().join("shot.png");
    let run = Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"])
        .args(["--window-size=1200,1600", &format!("--screenshot={}", shot.display()), &url])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{browser} failed: {log}");
    for line in log.lines() {
        assert!(
            !(line.contains("CONSOLE") || line.contains("Uncaught") || line.contains("Failed to load resource")),
            "browser console: {line}"
        );
    }
    // A blank 1200×1600 page compresses to a few kB; text, tables and charts do not.
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(png.len() > 50_000, "the screenshot looks blank ({} bytes)", png.len());
    // The DOM the browser built holds every section.
    let dom = Command::new(&browser).args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", &url]).output().unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    for section in ["Models", "Group discrimination", "Selection rates per group", "<svg"] {
        assert!(dom.contains(section), "the rendered page lacks {section:?}");
    }
}
