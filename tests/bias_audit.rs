//! `bias_audit` held to an independent computation: tests/fixtures/bias_audit/applicants.csv
//! (`scripts/make_bias_audit_fixture.py`: known counts per sex × race cell, unknown categories, a
//! category under 2%, scores tied at the median) and the tables `scripts/bias_audit_expected.py`
//! computes from the rules' definitions in plain Python. Every count exact, every rate and ratio
//! to 1e-12; the decisions read from a column, from the label and as a model's labels give the
//! same table.

use std::collections::BTreeMap;

use crate::common;
use common::read_csv;

/// A number cell (`None` for an empty or NaN cell).
fn number(cell: &str) -> Option<f64> {
    match cell {
        "" | "NaN" | "null" => None,
        s => Some(s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))),
    }
}

/// Compare the stage's table `got` with the expected one, row by row in order.
pub(crate) fn compare(what: &str, got: &[BTreeMap<String, String>], expected: &[BTreeMap<String, String>]) {
    assert_eq!(got.len(), expected.len(), "{what}: rows");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        for col in ["table", "category", "unknown", "excluded", "highest", "count", "selected"] {
            assert_eq!(g[col], e[col], "{what} row {i} ({}): {col}", e["category"]);
        }
        for (col, tol) in [
            ("rate", 1e-12),
            ("share", 1e-12),
            ("impact_ratio", 1e-12),
            ("ci95_low", 1e-12),
            ("ci95_high", 1e-12),
            ("p_value", 1e-9),
            ("p_adjusted", 1e-9),
        ] {
            match (number(&g[col]), number(&e[col])) {
                (None, None) => {}
                (Some(a), Some(b)) => {
                    assert!((a - b).abs() <= tol * b.abs().max(1.0), "{what} row {i} ({}): {col} {a} vs {b}", e["category"])
                }
                (a, b) => panic!("{what} row {i} ({}): {col} {a:?} vs {b:?}", e["category"]),
            }
        }
    }
}

#[test]
fn the_tables_equal_an_independent_computation_from_the_rules() {
    let fixtures = common::root().join("tests/fixtures/bias_audit");
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&fixtures.join("audit.toml"), out.path(), &[]);
    let expected = |name: &str| read_csv(&fixtures.join(name));
    let got = |stage: &str| read_csv(&out.path().join(format!("{stage}.csv")));

    compare("decisions", &got("decisions"), &expected("expected_selection.csv"));
    compare("scores", &got("scores"), &expected("expected_score.csv"));
    compare("unmapped", &got("unmapped"), &expected("expected_selection_unmapped.csv"));
    // The same decisions as a model's labels and as the label: the same table, cell for cell.
    assert_eq!(got("model_labels"), got("unmapped"), "the model's labels equal the decisions column");
    assert_eq!(got("label"), got("unmapped"), "the label is the decisions column");

    // summary.json holds the same tables, and the figures the gate reads.
    let stage = &summary["stages"]["decisions"];
    let exp = expected("expected_selection.csv");
    let known: Vec<&BTreeMap<String, String>> = exp.iter().filter(|r| r["unknown"].is_empty()).collect();
    let tables = stage["tables"].as_array().unwrap();
    assert_eq!(tables.iter().map(|t| t["rows"].as_array().unwrap().len()).sum::<usize>(), known.len());
    for t in tables {
        let unknown = exp.iter().find(|r| r["table"] == t["table"].as_str().unwrap() && r["unknown"] == "yes").unwrap();
        assert_eq!(t["unknown"]["count"].as_u64().unwrap().to_string(), unknown["count"]);
        for r in t["rows"].as_array().unwrap() {
            let e = known
                .iter()
                .find(|e| e["table"] == t["table"].as_str().unwrap() && e["category"] == r["category"].as_str().unwrap())
                .unwrap();
            assert_eq!(r["count"].as_u64().unwrap().to_string(), e["count"]);
            assert_eq!(r["impact_ratio"].as_f64(), number(&e["impact_ratio"]));
            assert_eq!(r["excluded"].as_bool().unwrap(), e["excluded"] == "yes");
        }
    }
    let lowest = known.iter().filter_map(|e| number(&e["impact_ratio"])).fold(f64::INFINITY, f64::min);
    assert!((stage["min_impact_ratio"].as_f64().unwrap() - lowest).abs() < 1e-12);
    assert_eq!(stage["rows"], 1080);
    assert_eq!(summary["stages"]["scores"]["median_score"], 0.5);
    assert_eq!(summary["gate"]["passed"], true, "{}", summary["gate"]);
    // The excluded category is listed with its count and rate, outside the ratios.
    let nhpi = exp.iter().find(|r| r["table"] == "race" && r["category"] == "Native Hawaiian or Pacific Islander").unwrap();
    assert_eq!((nhpi["count"].as_str(), nhpi["excluded"].as_str(), nhpi["impact_ratio"].as_str()), ("15", "yes", ""));

    // The verdicts read the audit's impact ratios (no group_metrics stage in this run): the worst
    // category of each table, graded as docs/report.md says (under 0.8 and significant after
    // Holm: severe; under 0.8 and not significant, or under 0.9: notable).
    for (attribute, table) in [("sex", "sex"), ("race", "race")] {
        let v = summary["verdicts"]["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["model"] == "decisions" && v["attribute"] == attribute)
            .unwrap_or_else(|| panic!("no verdict on {attribute} of the decisions: {}", summary["verdicts"]));
        let impact = &v["impact"];
        assert_eq!((impact["measure"].as_str(), impact["stage"].as_str()), (Some("bias_audit"), Some("decisions")), "{v}");
        let rows: Vec<&&BTreeMap<String, String>> =
            known.iter().filter(|e| e["table"] == table && e["excluded"].is_empty() && e["highest"].is_empty()).collect();
        let worst = rows.iter().min_by(|a, b| number(&a["impact_ratio"]).unwrap().total_cmp(&number(&b["impact_ratio"]).unwrap())).unwrap();
        let ratio = number(&worst["impact_ratio"]).unwrap();
        assert_eq!(impact["group"].as_str(), Some(worst["category"].as_str()), "{v}");
        assert!((impact["impact_ratio"].as_f64().unwrap() - ratio).abs() < 1e-12, "{v}");
        let significant = number(&worst["p_adjusted"]).unwrap() <= 0.05;
        let severity = match (ratio < 0.8, significant, ratio < 0.9) {
            (true, true, _) => "severe",
            (true, false, _) | (false, _, true) => "notable",
            _ => "ok",
        };
        assert_eq!(impact["severity"].as_str(), Some(severity), "{v}");
    }
    // report.html opens with those verdicts and links each audit's printable page.
    let report = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(!report.contains("No stage of this run measures"), "the verdicts are missing from report.html");
    for stage in ["decisions", "scores", "unmapped"] {
        assert!(report.contains(&format!("href=\"{stage}.html\"")), "report.html does not link {stage}.html");
        assert!(out.path().join(format!("{stage}.html")).exists());
    }
    assert!(report.contains("bias_audit `decisions`"), "no verdict line names the audit");
}

#[test]
fn rows_the_load_drops_are_counted_as_left_out_on_the_page() {
    let fixtures = common::root().join("tests/fixtures/bias_audit");
    let dir = tempfile::tempdir().unwrap();
    // Three applicants lose their score: `missing = "drop"` takes them out before the audit.
    let csv = std::fs::read_to_string(fixtures.join("applicants.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let score = header.iter().position(|c| *c == "score").unwrap();
    let blanked: Vec<String> = csv
        .lines()
        .enumerate()
        .map(|(i, line)| {
            if (1..=3).contains(&i) {
                let mut cells: Vec<&str> = line.split(',').collect();
                cells[score] = "";
                cells.join(",")
            } else {
                line.to_string()
            }
        })
        .collect();
    common::write(dir.path(), "applicants.csv", &(blanked.join("\n") + "\n"));
    let pipeline = common::write(
        dir.path(),
        "p.toml",
        "[pipeline]\nname = \"left-out\"\n\n[stages.data]\nkind = \"load\"\npath = \"applicants.csv\"\nlabel = \"qualified\"\n\
         protected = [\"sex\", \"race\"]\ndrop = [\"id\"]\nmissing = \"drop\"\n\n[stages.audit]\nkind = \"bias_audit\"\ndata = \"data\"\n\
         sex = \"sex\"\nrace = \"race\"\ncolumn = \"selected\"\nunknown = [\"Unknown\", \"Declined\"]\n",
    );
    let out = dir.path().join("out");
    let summary = common::run_pipeline(&pipeline, &out, &[]);
    let audit = &summary["stages"]["audit"];
    assert_eq!((audit["rows"].as_u64(), audit["left_out_at_load"].as_u64()), (Some(1077), Some(3)), "{audit}");
    let page = std::fs::read_to_string(out.join("audit.html")).unwrap();
    assert!(page.contains("People left out before the audit</th><td>3:"), "the page does not say who was left out");
    assert!(summary["warnings"].to_string().contains("dropped 3 rows"), "{}", summary["warnings"]);
}

/// A blank sex is the unknown category, never a dropped row: with `missing_values = []` (the
/// empty text no longer marks a missing value) every applicant is audited, the blanks are counted
/// as unknown and in no ratio, and each written category's rate is that of the applicants whose
/// sex is written. With the default `missing_values` the same blanks are dropped, and counted.
#[test]
fn a_blank_category_is_counted_as_unknown_when_missing_values_is_empty() {
    let csv = std::fs::read_to_string(common::root().join("tests/fixtures/bias_audit/applicants.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (sex, selected) = (at("sex"), at("selected"));
    let mut lines = vec![csv.lines().next().unwrap().to_string()];
    let mut truth: Vec<(String, bool)> = Vec::new();
    for (i, line) in csv.lines().skip(1).enumerate() {
        let mut cells: Vec<String> = line.split(',').map(String::from).collect();
        if i % 11 == 0 {
            cells[sex] = String::new();
        }
        truth.push((cells[sex].clone(), cells[selected] == "1"));
        lines.push(cells.join(","));
    }
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "export.csv", &(lines.join("\n") + "\n"));
    let blanks = truth.iter().filter(|t| t.0.is_empty()).count();
    // Unknown: a blank, or a value `unknown` lists.
    let is_unknown = |sex: &str| ["", "Unknown", "Declined"].contains(&sex);
    let pipeline = |name: &str, load_keys: &str| {
        common::write(
            dir.path(),
            &format!("{name}.toml"),
            &format!(
                "[pipeline]\nname = \"{name}\"\n\n[stages.data]\nkind = \"load\"\npath = \"export.csv\"\nlabel = \"qualified\"\n\
                 protected = [\"sex\", \"race\"]\ndrop = [\"id\"]\n{load_keys}\n\n[stages.audit]\nkind = \"bias_audit\"\ndata = \"data\"\n\
                 sex = \"sex\"\nrace = \"race\"\ncolumn = \"selected\"\nunknown = [\"Unknown\", \"Declined\"]\n"
            ),
        )
    };

    let summary = common::run_pipeline(&pipeline("kept", "missing_values = []"), &dir.path().join("kept"), &[]);
    let audit = &summary["stages"]["audit"];
    assert_eq!((audit["rows"].as_u64(), audit["left_out_at_load"].as_u64()), (Some(truth.len() as u64), Some(0)), "{audit}");
    let table = audit["tables"].as_array().unwrap().iter().find(|t| t["table"] == "sex").expect("a sex table");
    let unknown = truth.iter().filter(|t| is_unknown(&t.0)).count();
    let unknown_selected = truth.iter().filter(|t| is_unknown(&t.0) && t.1).count();
    assert!(blanks > 50 && unknown >= blanks, "{blanks} blanks, {unknown} unknown");
    assert_eq!(
        (table["unknown"]["count"].as_u64(), table["unknown"]["selected"].as_u64()),
        (Some(unknown as u64), Some(unknown_selected as u64)),
        "{table}"
    );
    for row in table["rows"].as_array().unwrap() {
        let category = row["category"].as_str().unwrap();
        assert!(!category.is_empty(), "a blank is a category of its own: {table}");
        let of: Vec<_> = truth.iter().filter(|t| t.0 == category).collect();
        let rate = of.iter().filter(|t| t.1).count() as f64 / of.len() as f64;
        assert_eq!(row["count"].as_u64(), Some(of.len() as u64), "{category}: {row}");
        assert!((row["rate"].as_f64().unwrap() - rate).abs() < 1e-12, "{category}: rate {} against {rate}", row["rate"]);
    }

    // A blank number with `missing_values = []` is refused at its line and column, naming the fix.
    let score = header.iter().position(|c| *c == "score").unwrap();
    let mut holed = lines.clone();
    let mut cells: Vec<String> = holed[5].split(',').map(String::from).collect();
    cells[score] = String::new();
    holed[5] = cells.join(",");
    common::write(dir.path(), "export.csv", &(holed.join("\n") + "\n"));
    let err = common::run_failing(&pipeline("holed", "missing_values = []"), &dir.path().join("holed"));
    assert!(err.contains("export.csv: line 6, column `score`: expected a number, found \"\"") && err.contains("add \"\" to it"), "{err}");
    common::write(dir.path(), "export.csv", &(lines.join("\n") + "\n"));

    // The default markers read a blank as missing: those rows are dropped, and said to be.
    let summary = common::run_pipeline(&pipeline("dropped", "missing = \"drop\""), &dir.path().join("dropped"), &[]);
    let audit = &summary["stages"]["audit"];
    assert_eq!(audit["left_out_at_load"].as_u64(), Some(blanks as u64), "{audit}");
    assert!(summary["warnings"].to_string().contains("missing_values = []"), "{}", summary["warnings"]);
}

#[test]
fn a_value_the_mapping_misses_is_named() {
    let fixtures = common::root().join("tests/fixtures/bias_audit");
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixtures.join("audit.toml")).unwrap();
    let text = text.replace("applicants.csv", &fixtures.join("applicants.csv").display().to_string()).replace(
        "command = [\"python3\", \"decisions_model.py\"]",
        &format!("command = [\"python3\", {:?}]", fixtures.join("decisions_model.py").display().to_string()),
    );
    // Latino unmapped: refused at run time, naming the value and the key.
    let pipeline = common::write(dir.path(), "p.toml", &text.replacen("Latino = \"Hispanic or Latino\", ", "", 1));
    let err = common::run_failing(&pipeline, &dir.path().join("out"));
    assert!(err.contains("\"Latino\"") && err.contains("categories.race"), "{err}");
    assert!(!dir.path().join("out").exists(), "no partial result");
    // A category outside the rules': refused before anything runs, with its place.
    let pipeline = common::write(dir.path(), "q.toml", &text.replacen("White = \"White\"", "White = \"Whte\"", 1));
    let err = common::run_failing(&pipeline, &dir.path().join("out"));
    assert!(err.contains("q.toml:") && err.contains("\"Whte\"") && err.contains("did you mean"), "{err}");
}

#[test]
fn verify_run_names_the_input_whose_byte_changed() {
    let fixtures = common::root().join("tests/fixtures/bias_audit");
    let dir = tempfile::tempdir().unwrap();
    for f in ["applicants.csv", "decisions_model.py"] {
        std::fs::copy(fixtures.join(f), dir.path().join(f)).unwrap();
    }
    let text = std::fs::read_to_string(fixtures.join("audit.toml")).unwrap();
    let pipeline = common::write(dir.path(), "audit.toml", &text);
    let out = dir.path().join("out");
    let summary = common::run_pipeline(&pipeline, &out, &[]);
    let trail = &summary["trail"];
    assert_eq!(trail["pipeline"].as_str(), Some(text.as_str()));
    assert_eq!(trail["seed"], 47);
    assert!(trail["platform"].as_str().is_some_and(|p| !p.is_empty()));
    // The commit the binary was built from reaches the trail (recorded by the top crate's build.rs).
    let head = std::process::Command::new("git").args(["rev-parse", "HEAD"]).current_dir(common::root()).output();
    if let Some(head) = head.ok().filter(|o| o.status.success()) {
        assert_eq!(trail["git_commit"].as_str(), Some(String::from_utf8_lossy(&head.stdout).trim()), "{trail}");
    }
    let inputs = trail["inputs"].as_array().unwrap();
    let data = std::fs::read(dir.path().join("applicants.csv")).unwrap();
    let with = |stage: &str, key: &str| {
        inputs.iter().find(|i| i["stage"] == stage && i["key"] == key).unwrap_or_else(|| panic!("{stage}.{key} in {inputs:?}"))
    };
    assert_eq!(with("data", "path")["bytes"], data.len());
    assert_eq!(with("data", "path")["sha256"], with("decided", "path")["sha256"]);
    assert!(with("model", "command")["path"].as_str().unwrap().ends_with("decisions_model.py"));
    assert!(with("", "pipeline")["sha256"].as_str().is_some_and(|h| h.len() == 64));
    assert!(trail["executors"]["model"].as_str().is_some_and(|e| !e.is_empty()), "{}", trail["executors"]);

    let (ok, stdout, _) = common::fairpipe(&["verify-run", out.to_str().unwrap()]);
    assert!(ok, "{stdout}");
    assert!(stdout.contains("all 4 inputs are the ones audited"), "{stdout}");
    // One byte of the data changed: named, exit code 1; the rest still ok.
    let mut changed = data.clone();
    let at = changed.iter().position(|&b| b == b'F').unwrap();
    changed[at] = b'M';
    std::fs::write(dir.path().join("applicants.csv"), &changed).unwrap();
    let (ok, stdout, stderr) = common::fairpipe(&["verify-run", out.to_str().unwrap()]);
    assert!(!ok);
    let bad: Vec<&str> = stdout.lines().filter(|l| l.starts_with("CHANGED")).collect();
    assert_eq!(bad.len(), 2, "{stdout}");
    assert!(bad.iter().all(|l| l.contains("applicants.csv")), "{stdout}");
    assert!(stderr.contains("2 of 4 inputs differ"), "{stderr}");
}

/// One applicant of the messy export: (sex, the original 0/1 decision, withdrawn, written in lower
/// case).
type Applicant = (String, bool, bool, bool);

/// applicants.csv with its 0/1 `selected` column written as a vendor exports it: "Yes"/"No", every
/// fifth applicant in lower case, every 37th "Withdrawn". Returns the folder's CSV and, per row,
/// (sex, the original 0/1 decision, withdrawn, written in lower case).
fn messy_decisions(dir: &std::path::Path) -> Vec<Applicant> {
    let csv = std::fs::read_to_string(common::root().join("tests/fixtures/bias_audit/applicants.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (id, sex, selected) = (at("id"), at("sex"), at("selected"));
    let mut lines = vec![csv.lines().next().unwrap().to_string()];
    let mut truth = Vec::new();
    for line in csv.lines().skip(1) {
        let mut cells: Vec<String> = line.split(',').map(String::from).collect();
        let n: usize = cells[id].parse().unwrap();
        let chosen = cells[selected] == "1";
        let withdrawn = n % 37 == 0;
        cells[selected] = match (withdrawn, chosen, n % 5 == 0) {
            (true, _, _) => "Withdrawn",
            (false, true, false) => "Yes",
            (false, false, false) => "No",
            (false, true, true) => "yes",
            (false, false, true) => "no",
        }
        .to_string();
        truth.push((cells[sex].clone(), chosen, withdrawn, !withdrawn && n % 5 == 0));
        lines.push(cells.join(","));
    }
    common::write(dir, "export.csv", &(lines.join("\n") + "\n"));
    truth
}

fn decisions_pipeline(dir: &std::path::Path, name: &str, keys: &str) -> std::path::PathBuf {
    common::write(
        dir,
        &format!("{name}.toml"),
        &format!(
            "[pipeline]\nname = \"{name}\"\n\n[stages.data]\nkind = \"load\"\npath = \"export.csv\"\nlabel = \"qualified\"\n\
             protected = [\"sex\", \"race\"]\ndrop = [\"id\"]\n\n[stages.audit]\nkind = \"bias_audit\"\ndata = \"data\"\n\
             sex = \"sex\"\ncolumn = \"selected\"\nunknown = [\"Unknown\", \"Declined\"]\n{keys}\n"
        ),
    )
}

/// Every decision value is accounted for: a value that `selected` and `not_selected` do not name is
/// refused with its count (it once counted as "not selected", and the published rate halved), and
/// `ignore_case` with `exclude` reads the export as the 0/1 column it came from, without the
/// withdrawn applicants, whose number the page and summary.json give.
#[test]
fn every_decision_value_is_named_counted_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let truth = messy_decisions(dir.path());
    let count = |f: &dyn Fn(&Applicant) -> bool| truth.iter().filter(|t| f(t)).count();
    let withdrawn = count(&|t| t.2);
    assert!(withdrawn > 10, "the export has {withdrawn} withdrawn applicants");

    // `selected` alone over five values: refused, each other value named with its number of rows.
    let pipeline = decisions_pipeline(dir.path(), "alone", "selected = \"Yes\"");
    let err = common::run_failing(&pipeline, &dir.path().join("out-alone"));
    let lower_no = count(&|t| !t.2 && !t.1 && t.3);
    let upper_no = count(&|t| !t.2 && !t.1 && !t.3);
    let lower_yes = count(&|t| !t.2 && t.1 && t.3);
    for (value, n) in [("No", upper_no), ("no", lower_no), ("yes", lower_yes), ("Withdrawn", withdrawn)] {
        let rows = if n == 1 { "row" } else { "rows" };
        let said = format!("\"{value}\" {} {rows}", common::thousands(n as u64));
        assert!(err.contains(&said), "the refusal does not say {said}: {err}");
    }
    assert!(err.contains("exclude") && err.contains("ignore_case"), "the refusal does not name the fixes: {err}");
    assert!(!dir.path().join("out-alone").exists(), "no partial result");

    // Named as written, one value left over: refused naming it alone.
    let pipeline = decisions_pipeline(dir.path(), "cased", "selected = [\"Yes\", \"yes\"]\nnot_selected = [\"No\", \"no\"]");
    let err = common::run_failing(&pipeline, &dir.path().join("out-cased"));
    assert!(err.contains(&format!("\"Withdrawn\" {} rows", common::thousands(withdrawn as u64))) && !err.contains("\"no\" "), "{err}");

    // ignore_case and exclude: the 0/1 column's figures over the applicants who did not withdraw.
    let pipeline =
        decisions_pipeline(dir.path(), "read", "selected = \"Yes\"\nnot_selected = \"No\"\nignore_case = true\nexclude = [\"Withdrawn\"]");
    let out = dir.path().join("out-read");
    let summary = common::run_pipeline(&pipeline, &out, &[]);
    let audit = &summary["stages"]["audit"];
    let kept: Vec<_> = truth.iter().filter(|t| !t.2).collect();
    assert_eq!(audit["rows"].as_u64(), Some(kept.len() as u64), "{audit}");
    assert_eq!(audit["excluded_decisions"].as_u64(), Some(withdrawn as u64));
    let rate = kept.iter().filter(|t| t.1).count() as f64 / kept.len() as f64;
    assert!((audit["rate"].as_f64().unwrap() - rate).abs() < 1e-12, "rate {} against {rate}", audit["rate"]);
    let sex_rate = |s: &str| {
        let of: Vec<_> = kept.iter().filter(|t| t.0 == s).collect();
        of.iter().filter(|t| t.1).count() as f64 / of.len() as f64
    };
    let (f, m) = (sex_rate("F"), sex_rate("M"));
    let ratio = f.min(m) / f.max(m);
    assert!(
        (audit["min_impact_ratio_sex"].as_f64().unwrap() - ratio).abs() < 1e-12,
        "sex ratio {} against {ratio}",
        audit["min_impact_ratio_sex"]
    );
    let values: Vec<(String, u64, String)> = audit["decision_values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["value"].as_str().unwrap().to_string(), v["count"].as_u64().unwrap(), v["read_as"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(values.iter().map(|v| v.1).sum::<u64>(), truth.len() as u64, "every row's value is counted: {values:?}");
    assert!(values.contains(&("Withdrawn".into(), withdrawn as u64, "excluded".into())), "{values:?}");
    assert!(values.contains(&("yes".into(), lower_yes as u64, "selected".into())), "{values:?}");
    let page = std::fs::read_to_string(out.join("audit.html")).unwrap();
    assert!(
        page.contains(&format!("People left out for their decision</th><td>{}:", common::thousands(withdrawn as u64))),
        "the page does not say who was excluded"
    );
    assert!(page.contains("<td>Withdrawn</td>"), "the page does not list the decision values");

    // A clean export, "Yes" and "No" only: `selected` alone reads the other value as not selected.
    let clean = std::fs::read_to_string(dir.path().join("export.csv")).unwrap();
    let clean: String = clean
        .lines()
        .map(|l| l.replace(",yes,", ",Yes,").replace(",no,", ",No,").replace(",Withdrawn,", ",No,"))
        .collect::<Vec<_>>()
        .join("\n");
    common::write(dir.path(), "export.csv", &(clean + "\n"));
    let pipeline = decisions_pipeline(dir.path(), "clean", "selected = \"Yes\"");
    let summary = common::run_pipeline(&pipeline, &dir.path().join("out-clean"), &[]);
    let source = summary["stages"]["audit"]["source"].as_str().unwrap().to_string();
    assert!(source.contains("not selected: \"No\""), "{source}");
}

/// The vendor's export as it is (tests/fixtures/vendor_export, scripts/make_vendor_export.py): no
/// label, gender M/F with X, Decline and blank unknown, race/ethnicity from the Hispanic flag beside
/// the race code, Yes/No decisions and a score tied at its median. Both tables equal
/// scripts/vendor_export_expected.py's computation from the rules, every person counted (unknowns
/// outside the ratios, no one dropped); the page shows which values became which category; no
/// proxy warning on an audit of decisions alone.
#[test]
fn a_vendor_export_is_audited_as_it_is() {
    let fixtures = common::root().join("tests/fixtures/vendor_export");
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&fixtures.join("audit.toml"), out.path(), &[]);
    let got = |stage: &str| read_csv(&out.path().join(format!("{stage}.csv")));
    compare("decisions", &got("decisions"), &read_csv(&fixtures.join("expected_selection.csv")));
    compare("scores", &got("scores"), &read_csv(&fixtures.join("expected_score.csv")));

    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("expected_summary.json")).unwrap()).unwrap();
    let decisions = &summary["stages"]["decisions"];
    assert_eq!(decisions["rows"], expected["applicants"]);
    assert_eq!(summary["stages"]["data"]["dropped_rows"], 0);
    assert!((decisions["rate"].as_f64().unwrap() - expected["overall_selection_rate"].as_f64().unwrap()).abs() < 1e-12);
    assert!((decisions["min_impact_ratio_sex"].as_f64().unwrap() - expected["sex_impact_ratio"].as_f64().unwrap()).abs() < 1e-12);
    for t in decisions["tables"].as_array().unwrap() {
        let table = t["table"].as_str().unwrap();
        assert_eq!(t["unknown"]["count"], expected["unknown"][table], "unknown in the {table} table");
    }
    assert_eq!(summary["stages"]["scores"]["median_score"], expected["median_score"]);
    assert_eq!(decisions["ethnicity_column"], "hispanic_latino");
    assert!(summary["stages"]["data"]["label"].is_null(), "the export was read with no label");
    assert_eq!(summary["warnings"].as_array().map(Vec::len), Some(0), "no warning applies: {}", summary["warnings"]);
    // A scoring audit's verdicts speak of scoring rates, a selection audit's of selection.
    for v in summary["verdicts"]["attributes"].as_array().unwrap() {
        let line = v["line"].as_str().unwrap();
        let (says, not) =
            if v["model"] == "scores" { ("scores above the median at", "is selected") } else { ("is selected at", "scores above") };
        assert!(line.contains(says) && !line.contains(not), "{line}");
    }

    // Which value became which category: every row of each column counted once, blanks included.
    let values = decisions["category_values"].as_array().unwrap();
    for column in ["gender", "race_cd", "hispanic_latino"] {
        let n: u64 = values.iter().filter(|v| v["column"] == column).map(|v| v["count"].as_u64().unwrap()).sum();
        assert_eq!(n, 4000, "the values of `{column}` count every row");
    }
    let read_as = |column: &str, value: &str| {
        values.iter().find(|v| v["column"] == column && v["value"] == value).map(|v| v["category"].as_str().unwrap().to_string())
    };
    assert_eq!(read_as("gender", "").as_deref(), Some("Unknown"));
    assert_eq!(read_as("gender", "Decline").as_deref(), Some("Unknown"));
    assert_eq!(read_as("gender", "F").as_deref(), Some("Female"));
    assert_eq!(read_as("hispanic_latino", "Y").as_deref(), Some("Hispanic or Latino"));
    assert_eq!(read_as("race_cd", "2+").as_deref(), Some("Two or More Races"));
    let page = std::fs::read_to_string(out.path().join("decisions.html")).unwrap();
    assert!(page.contains("Categories read from the data") && page.contains("<td>(blank)</td>"), "the page lists the values read");
    assert!(page.contains("<code>hispanic_latino</code>"), "the page says how race/ethnicity was combined");
}

/// The export's messy copy (decisions written "Yes"/"No"/"yes"/"no"/"Withdrawn") is refused with
/// each value the keys do not name and its number of rows, from the counts the generator recorded.
#[test]
fn a_messy_vendor_export_is_refused_naming_its_values() {
    let fixtures = common::root().join("tests/fixtures/vendor_export");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures.join("export_messy.csv"), dir.path().join("export.csv")).unwrap();
    let pipeline = common::write(dir.path(), "audit.toml", &std::fs::read_to_string(fixtures.join("audit.toml")).unwrap());
    let err = common::run_failing(&pipeline, &dir.path().join("out"));
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("expected_summary.json")).unwrap()).unwrap();
    for value in ["yes", "no", "Withdrawn"] {
        let n = expected["messy_advanced"][value].as_u64().unwrap();
        let said = format!("\"{value}\" {} rows", common::thousands(n));
        assert!(err.contains(&said), "the refusal does not say {said}: {err}");
    }
    assert!(!dir.path().join("out").exists(), "no partial result");

    // The same column as the label, audited with no `column`: refused (the load reads every value
    // but the favourable one as the other class), naming the fix.
    let text = std::fs::read_to_string(fixtures.join("audit.toml")).unwrap();
    let as_label = text
        .replace("missing_values = []", "missing_values = []\nlabel = \"advanced\"\nfavourable = \"Yes\"")
        .replace("column = \"advanced\"\nselected = \"Yes\"\nnot_selected = \"No\"\n", "");
    assert_ne!(as_label, text);
    let pipeline = common::write(dir.path(), "label.toml", &as_label);
    let err = common::run_failing(&pipeline, &dir.path().join("out-label"));
    assert!(err.contains("holds more values than \"Yes\" and one other") && err.contains("leave `label` out"), "{err}");
}

/// A load with no label feeds no stage that reads one, refused before anything runs with the fix;
/// `column` naming the label says to leave it out; `categories.gender` says to write
/// `categories.sex`.
#[test]
fn audit_keys_that_cannot_work_are_refused_with_the_fix() {
    let fixtures = common::root().join("tests/fixtures/vendor_export");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures.join("export.csv"), dir.path().join("export.csv")).unwrap();
    let pipeline = |name: &str, load: &str, audit: &str| {
        common::write(
            dir.path(),
            &format!("{name}.toml"),
            &format!(
                "[pipeline]\nname = \"{name}\"\n\n[stages.data]\nkind = \"load\"\npath = \"export.csv\"\nprotected = [\"gender\"]\n\
                 drop = [\"applicant_id\", \"notes\"]\nmissing_values = []\n{load}\n\n[stages.audit]\nkind = \"bias_audit\"\ndata = \"data\"\n\
                 sex = \"gender\"\nunknown = [\"X\", \"Decline\"]\n{audit}\n"
            ),
        )
    };
    let validate = |file: &std::path::Path| {
        let (ok, stdout, stderr) = common::fairpipe(&["validate", file.to_str().unwrap()]);
        assert!(!ok, "{} validated:\n{stdout}", file.display());
        stderr
    };
    let err = validate(&pipeline("no-label", "", ""));
    assert!(err.contains("reads no label") && err.contains("name the column of decisions in `column`"), "{err}");
    let err = validate(&pipeline("label-column", "label = \"advanced\"\nfavourable = \"Yes\"", "column = \"advanced\""));
    assert!(err.contains("leave `column` out"), "{err}");
    let err = validate(&pipeline("gender", "", "column = \"advanced\"\nselected = \"Yes\"\ncategories = { gender = { M = \"Male\" } }"));
    assert!(err.contains("write `categories.sex`"), "{err}");
}

/// An audit bundle verifies anywhere: the run folder inside the pipeline's folder, moved whole
/// elsewhere, finds its inputs by their recorded places relative to the pipeline file; handed over
/// apart from them, `--inputs DIR` says where they are. One changed byte is named either way.
#[test]
fn verify_run_finds_the_inputs_of_a_moved_bundle() {
    let fixtures = common::root().join("tests/fixtures/vendor_export");
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    std::fs::create_dir_all(bundle.join("data")).unwrap();
    std::fs::copy(fixtures.join("export.csv"), bundle.join("data/export.csv")).unwrap();
    let text = std::fs::read_to_string(fixtures.join("audit.toml")).unwrap().replace("path = \"export.csv\"", "path = \"data/export.csv\"");
    common::write(&bundle, "audit.toml", &text);
    let summary = common::run_pipeline(&bundle.join("audit.toml"), &bundle.join("out/vendor"), &[]);
    let inputs = summary["trail"]["inputs"].as_array().unwrap();
    let relatives: Vec<&str> = inputs.iter().map(|t| t["relative"].as_str().unwrap()).collect();
    assert_eq!(relatives, ["audit.toml", "data/export.csv"]);

    let verify = |args: &[&str]| {
        let (ok, stdout, stderr) = common::fairpipe(args);
        (ok, stdout + &stderr)
    };
    // Moved whole: every input found by the layout, none at its old absolute path.
    let moved = dir.path().join("handed-over");
    std::fs::rename(&bundle, &moved).unwrap();
    let out = moved.join("out/vendor");
    let (ok, said) = verify(&["verify-run", out.to_str().unwrap()]);
    assert!(ok, "{said}");
    assert!(said.contains(&format!("ok       {}", moved.join("data/export.csv").display())), "{said}");
    assert!(said.contains("all 2 inputs are the ones audited"), "{said}");

    // The run folder alone elsewhere: the inputs are MISSING, with the way to name them; --inputs
    // names them.
    let alone = dir.path().join("run-alone");
    std::fs::rename(&out, &alone).unwrap();
    let (ok, said) = verify(&["verify-run", alone.to_str().unwrap()]);
    assert!(!ok && said.contains("MISSING") && said.contains("--inputs DIR"), "{said}");
    let (ok, said) = verify(&["verify-run", alone.to_str().unwrap(), "--inputs", moved.to_str().unwrap()]);
    assert!(ok, "{said}");

    // One byte changed in the data: named, the run refused.
    let data = moved.join("data/export.csv");
    let mut bytes = std::fs::read(&data).unwrap();
    let at = bytes.iter().rposition(|&b| b == b'M').unwrap();
    bytes[at] = b'F';
    std::fs::write(&data, bytes).unwrap();
    let (ok, said) = verify(&["verify-run", alone.to_str().unwrap(), "--inputs", moved.to_str().unwrap()]);
    assert!(!ok, "{said}");
    let changed: Vec<&str> = said.lines().filter(|l| l.starts_with("CHANGED")).collect();
    assert_eq!(changed.len(), 1, "{said}");
    assert!(changed[0].contains("data/export.csv") && changed[0].contains("data.path"), "{said}");
    assert!(said.contains("1 of 2 inputs differ"), "{said}");
}
