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

/// The browser for test `test`, or `None` after recording the test as skipped (`common::skip`):
/// every test of this file goes through here, so none counts as passed without a browser.
fn browser_or_skip(test: &str) -> Option<String> {
    let found = chromium();
    if found.is_none() {
        assert!(std::env::var("FAIRPIPE_REQUIRE_BROWSER").is_err(), "FAIRPIPE_REQUIRE_BROWSER is set but no chromium is installed");
        common::skip(test, "no chromium on this machine (apt-get install chromium)");
    }
    found
}

#[test]
fn the_report_renders_in_a_headless_browser_without_console_errors() {
    let Some(browser) = browser_or_skip("report_browser::the_report_renders_in_a_headless_browser_without_console_errors") else {
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

/// The width in CSS pixels of the printable area of an A4 page with the bias audit page's margins
/// (210 mm − 2 × 12 mm at 96 px per inch); Letter's is wider.
const A4_PRINTABLE_PX: u32 = 703;

/// A bias audit's page (`<stage>.html`) printed by headless Chromium: laid out at the printable
/// width of an A4 page, no table, row or cell reaches past the page's edge (measured in the
/// browser by a script added to a copy of the page), and `--print-to-pdf` writes a PDF.
#[test]
fn the_bias_audit_page_prints_with_nothing_cut() {
    let Some(browser) = browser_or_skip("report_browser::the_bias_audit_page_prints_with_nothing_cut") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    common::run_pipeline(&common::root().join("tests/fixtures/bias_audit/audit.toml"), out.path(), &[]);
    let page = out.path().join("decisions.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"), "the page must be self-contained");
    // Every category of the three tables is on the page.
    for category in
        ["Male", "Female", "Hispanic or Latino", "Native Hawaiian or Pacific Islander", "Two or More Races", "Unknown category: 75"]
    {
        assert!(html.contains(category), "the page lacks {category:?}");
    }
    let measure = "<script>(function(){var w=document.documentElement.clientWidth,bad=[];\
        document.querySelectorAll('table,tr,th,td,h1,h2,h3,p,footer').forEach(function(e){var r=e.getBoundingClientRect();\
        if(r.right>w+0.5||r.left<-0.5)bad.push(e.tagName+' '+e.textContent.slice(0,50));});\
        var p=document.createElement('pre');p.id='fit';p.textContent='FIT '+w+' '+document.documentElement.scrollWidth+' '+bad.length+' '+JSON.stringify(bad);\
        document.body.appendChild(p);})();</script></body>";
    let probe = out.path().join("probe.html");
    std::fs::write(&probe, html.replace("</body>", measure)).unwrap();
    let dom = Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", &format!("--window-size={A4_PRINTABLE_PX},1200")])
        .args(["--dump-dom", &format!("file://{}", probe.display())])
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    // The measurement, not the script's own text (which the dumped DOM holds too).
    let fit = dom
        .split("FIT ")
        .skip(1)
        .find(|f| f.starts_with(|c: char| c.is_ascii_digit()))
        .and_then(|f| f.split("</pre>").next())
        .unwrap_or_else(|| panic!("no measurement in the DOM:\n{dom}"));
    let parts: Vec<&str> = fit.splitn(4, ' ').collect();
    let (width, scroll, bad): (u32, u32, usize) = (parts[0].parse().unwrap(), parts[1].parse().unwrap(), parts[2].parse().unwrap());
    assert!(width <= A4_PRINTABLE_PX && width > 600, "laid out at {width} px");
    assert!(scroll <= width && bad == 0, "past the page's edge at {width} px (content {scroll} px wide): {}", parts[3]);
    // The PDF Chromium prints.
    let pdf = out.path().join("decisions.pdf");
    let run = Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer", &format!("--print-to-pdf={}", pdf.display())])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(run.status.success(), "{browser} failed: {}", String::from_utf8_lossy(&run.stderr));
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF"), "not a PDF");
    let text = String::from_utf8_lossy(&bytes);
    let pages = text.matches("/Type /Page").count() - text.matches("/Type /Pages").count();
    assert!((2..=8).contains(&pages), "{pages} pages");
}

/// Without a browser a test here must be counted as skipped, not passed: each finds the browser
/// through `browser_or_skip`, and no test under tests/ prints its own skip line, which
/// scripts/test.sh would not count (only `common::skip` writes `FAIRPIPE_SKIPPED_LOG`).
#[test]
fn a_test_that_cannot_run_here_is_recorded_as_skipped() {
    let root = common::root();
    let own = std::fs::read_to_string(root.join("tests/report_browser.rs")).unwrap();
    let finds = own.matches(concat!("chromium", "()")).count();
    assert_eq!(finds, 2, "the browser is looked for once, in browser_or_skip: {finds} occurrences of its finder");
    let skip_line = concat!("\"SKIP", "PED");
    let mut dirs = vec![root.join("tests")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests/common/mod.rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.contains(skip_line), "{} prints its own skip line: call common::skip instead", path.display());
            }
        }
    }
}

/// The bias audit page an auditor publishes, printed by `fairpipe page OUT --pdf` (headless
/// Chromium, no header or footer) from the vendor export's audit: pdftotext (poppler) reads every
/// category, count, rate and impact ratio of the three tables in it, whole words ("Female" is not
/// broken), and neither the local file path nor a print date.
#[test]
fn the_bias_audit_pdf_holds_every_figure_and_no_local_path() {
    let test = "report_browser::the_bias_audit_pdf_holds_every_figure_and_no_local_path";
    let Some(_) = browser_or_skip(test) else { return };
    if Command::new("pdftotext").arg("-v").output().is_err() {
        assert!(std::env::var("FAIRPIPE_REQUIRE_BROWSER").is_err(), "FAIRPIPE_REQUIRE_BROWSER is set but pdftotext is not installed");
        common::skip(test, "no pdftotext on this machine (apt-get install poppler-utils)");
        return;
    }
    let fixtures = common::root().join("tests/fixtures/vendor_export");
    let out = tempfile::tempdir().unwrap();
    common::run_pipeline(&fixtures.join("audit.toml"), out.path(), &[]);
    let (ok, stdout, stderr) = common::fairpipe(&["page", out.path().to_str().unwrap(), "--pdf"]);
    assert!(ok, "{stdout}\n{stderr}");
    for stage in ["decisions", "scores"] {
        let pdf = out.path().join(format!("{stage}.pdf"));
        assert!(stdout.contains(&pdf.display().to_string()), "{stdout}");
        let text = Command::new("pdftotext").arg(&pdf).arg("-").output().unwrap();
        assert!(text.status.success());
        let text = String::from_utf8(text.stdout).unwrap();
        // Words as pdftotext gives them, without the punctuation around them.
        let words = text.split_whitespace().map(|w| w.trim_matches(|c: char| "(),;:“”\"".contains(c))).collect::<Vec<_>>().join(" ");
        let rows = common::read_csv(&out.path().join(format!("{stage}.csv")));
        assert!(rows.len() > 20, "{stage}: {} rows", rows.len());
        for r in &rows {
            let shown = |cell: &str| -> String {
                let v: f64 = cell.parse().unwrap();
                format!("{v:.3}")
            };
            let mut said = vec![common::thousands(r["count"].parse().unwrap()), shown(&r["rate"])];
            if r["unknown"].is_empty() {
                said.push(r["category"].replace(" × ", " "));
                if let Ok(ratio) = r["impact_ratio"].parse::<f64>() {
                    if ratio.is_finite() {
                        said.push(format!("{ratio:.3}"));
                    }
                }
            }
            for s in said {
                let found = s.split_whitespace().all(|w| words.split(' ').any(|x| x == w));
                assert!(found, "{stage}.pdf lacks {s:?} of row {r:?}:\n{text}");
            }
        }
        // No category word broken inside (the page once printed "Femal" / "e" in a narrow cell).
        for word in ["Female", "Hispanic", "Latino", "Hawaiian", "Islander", "American", "Alaska", "Unknown"] {
            for end in 3..word.len() {
                let broken = &word[..end];
                assert!(!words.split(' ').any(|w| w == broken), "{stage}.pdf breaks {word:?} as {broken:?}:\n{text}");
            }
        }
        assert!(!text.contains(&out.path().display().to_string()) && !text.contains("file://"), "{stage}.pdf holds the local path");
        assert!(!text.contains("2026") && !text.contains("AM") && !text.contains("PM"), "{stage}.pdf holds a date or time:\n{text}");
    }
    // The PDF is written whole or not at all: no partial file is left.
    assert!(std::fs::read_dir(out.path()).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".partial")));
}
