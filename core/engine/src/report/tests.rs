//! The report's tests: pages rendered from summaries written as JSON.

use polars::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::stage::figures_map;
use crate::stages::check::CheckFigures;
use crate::stages::estimate::EstimateFigures;
use crate::stages::generate::GenerateFigures;
use crate::stages::group_metrics::{GroupFigure, GroupMetricsFigures};
use crate::stages::group_score::{GroupScoreFigures, TopGroup};
use crate::stages::load::LoadFigures;
use crate::stages::model_output::ModelFigures;
use crate::stages::verify::VerifyFigures;

/// The report of a summary written as JSON (as `summary.json` holds it).
fn render(summary: &Value, tables: &[(String, Table)]) -> String {
    super::render(&Summary::from_json(summary).expect("a summary"), tables)
}

/// A summary entry: `figures` with the engine's kind and inputs.
fn entry<F: serde::Serialize>(kind: &str, inputs: Value, figures: &F) -> Value {
    let mut map = figures_map(figures);
    map.insert("kind".into(), json!(kind));
    map.insert("inputs".into(), inputs);
    Value::Object(map)
}

fn estimate(rate: f64) -> EstimateFigures {
    EstimateFigures {
        rate,
        ci95: [rate - 0.01, rate + 0.01],
        ci95_independent: None,
        clusters: None,
        design_effect: None,
        ci95_wilson: [rate - 0.01, rate + 0.01],
        samples: 1000,
        trials: 10,
        per_trial: 100,
        discriminatory: 100,
        variants_per_input: 1,
        protected: Vec::new(),
        discriminatory_alone: Default::default(),
        rate_alone: Default::default(),
        logit_shift: Vec::new(),
        score_shift: Vec::new(),
        hidden_intersectional: None,
        rate_hidden_intersectional: None,
        ci95_hidden_intersectional: None,
        precision: None,
    }
}

fn verify(discriminatory: usize, curve: Vec<(f64, usize)>) -> VerifyFigures {
    VerifyFigures {
        checked: discriminatory,
        confirmed: discriminatory,
        rejected: 0,
        discriminatory,
        discriminatory_full: discriminatory,
        generated: 100,
        success_rate: discriminatory as f64 / 100.0,
        success_rate_projection: discriminatory as f64 / 100.0,
        search_queries: 1000,
        search_elapsed_s: 0.5,
        per_second: 10.0,
        idis_over_time_s: curve,
        time_to_1000_idis_s: None,
    }
}

fn model(accuracy_test: f64) -> ModelFigures {
    ModelFigures { model: "mlp".into(), accuracy_train: accuracy_test, accuracy_test, correct_test: 8, total_test: 10 }
}

fn generate() -> GenerateFigures {
    GenerateFigures {
        plugin: "maft 0.1.0".into(),
        params: json!({}),
        seed_source: "10 uniform random seeds (seed 7)".into(),
        generated: 100,
        emitted: 50,
        run_elapsed_s: 0.5,
        model_time_s: 0.1,
        model_time_share: 0.2,
        queries_asked: 300,
        rows_scored: 120,
        cache_hits: 180,
        cache: true,
        cache_choice: "on (cache = true)".into(),
        gradient: None,
        gradient_rows: None,
        gradient_model_rows: None,
        rows_held_to_domain: None,
        stopped_by: None,
        protected: Vec::new(),
        units: None,
        duplicates_dropped: None,
        unit_figures: None,
        plugin_figures: Default::default(),
    }
}

#[test]
fn the_report_escapes_text_and_draws_what_the_summary_has() {
    let summary = json!({
        "pipeline": "a<b>",
        "seed": 1,
        "stage_order": ["est", "v"],
        "stages": {
            "est": entry("estimate", json!({"model": "m"}), &estimate(0.1)),
            "v": entry("verify", json!({"cases": "g"}), &verify(5, vec![(0.0, 1), (0.5, 5)])),
        }
    });
    let html = render(&summary, &[]);
    assert!(html.contains("a&lt;b&gt;") && !html.contains("a<b>"));
    assert!(html.contains("10.00%"), "the estimate's rate");
    assert!(html.contains("<polyline"), "the IDI curve");
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    assert_eq!(self_contained(&html), Ok(()));
}

/// Whether `html` runs no script and loads nothing from outside: no `<script`, and no `http://`
/// or `https://` but the SVG namespace (a name, never fetched).
fn self_contained(html: &str) -> Result<(), String> {
    if html.contains("<script") {
        return Err("a <script".into());
    }
    let rest = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    match rest.find("http://").or_else(|| rest.find("https://")) {
        Some(at) => Err(format!("an address: {}", &rest[at..rest.len().min(at + 40)])),
        None => Ok(()),
    }
}

#[test]
fn a_planted_script_or_address_is_not_self_contained() {
    let summary = json!({"pipeline": "p", "seed": 1, "stage_order": ["est"], "stages": {"est": entry("estimate", json!({"model": "m"}), &estimate(0.1))}});
    let html = render(&summary, &[]);
    assert!(html.contains("xmlns=\"http://www.w3.org/2000/svg\""), "the page draws an SVG, so the namespace must not excuse anything else");
    assert_eq!(self_contained(&html), Ok(()));
    let planted = html.replacen("</body>", "<script>alert(1)</script></body>", 1);
    assert_eq!(self_contained(&planted), Err("a <script".to_string()));
    let fetched = html.replacen("</body>", "<img src=\"https://example.org/x.png\"></body>", 1);
    assert!(self_contained(&fetched).is_err_and(|e| e.contains("https://example.org")));
}

#[test]
fn figures_that_do_not_read_are_reported_not_drawn_with_gaps() {
    let summary = json!({
        "pipeline": "p", "seed": 1, "stage_order": ["est"],
        "stages": {"est": {"kind": "estimate", "inputs": {}, "rates": 0.1}}
    });
    let html = render(&summary, &[]);
    assert!(html.contains("stage est: its figures do not read"), "{html}");
}

#[test]
fn models_are_compared_on_the_measurements_taken_of_more_than_one() {
    let summary = json!({
        "pipeline": "p", "seed": 1,
        "stage_order": ["m", "fair", "g1", "v1", "g2", "v2", "e1"],
        "stages": {
            "m": entry("train", json!({"data": "d"}), &model(0.8)),
            "fair": entry("retrain", json!({"model": "m"}), &model(0.79)),
            "g1": entry("generate", json!({"model": "m"}), &generate()),
            "v1": entry("verify", json!({"cases": "g1"}), &verify(40, vec![])),
            "g2": entry("generate", json!({"model": "fair"}), &generate()),
            "v2": entry("verify", json!({"cases": "g2"}), &verify(4, vec![])),
            "e1": entry("estimate", json!({"model": "m"}), &estimate(0.1)),
        }
    });
    let html = render(&summary, &[]);
    let section = &html[html.find("Each model, measured the same way").expect("the comparison")..];
    assert!(section.contains("cases found by maft from 10 uniform random seeds (seed 7)"), "{section}");
    assert!(section.contains("<td>m</td><td>80.00%</td><td>40 of 100 inputs</td>"), "{section}");
    assert!(section.contains("<td>fair</td><td>79.00%</td><td>4 of 100 inputs</td>"), "{section}");
    // The estimate was taken of one model only: no column.
    assert!(!section.contains("estimated rate"), "{section}");
}

/// The HTML of the `<section id="findings">`.
fn findings_of(html: &str) -> &str {
    let start = html.find("<section id=\"findings\">").unwrap_or_else(|| panic!("no findings section: {html}"));
    &html[start..start + html[start..].find("</section>").expect("its end")]
}

/// A run of the bundled census model (a few trials): an estimate, a check of the real test
/// rows and the group metrics over gender and race.
fn census_run() -> crate::run::Run {
    use crate::run::Pipeline;
    use crate::stages::{
        check::CheckConfig,
        estimate::EstimateConfig,
        group_metrics::GroupMetricsConfig,
        load::{LabelValue, LoadConfig},
    };
    use crate::stages::{load_model::LoadModelConfig, options::Rows};
    let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/../../pipelines");
    let frame = CsvReadOptions::default()
        .try_into_reader_with_file_path(Some(format!("{bundled}/data/census.csv").into()))
        .and_then(|r| r.finish())
        .expect("the bundled census data");
    let mut data = LoadConfig::from_frame(frame, "income", &["gender", "race"]);
    data.drop = vec!["row".into()];
    data.split_column = Some("split".into());
    data.codes = Some(format!("{bundled}/data/census.codes.toml").into());
    data.favourable = Some(LabelValue::Text(">50K".into()));
    Pipeline::builder("census")
        .seed(42)
        .stage("data", data, &[])
        .stage("model", LoadModelConfig::new(format!("{bundled}/models/census.onnx")), &[("data", "data")])
        .stage("estimate", EstimateConfig { trials: 5, samples: 200, ..Default::default() }, &[("model", "model")])
        .stage("check", CheckConfig { split: Rows::Test, ..Default::default() }, &[("model", "model")])
        .stage("metrics", GroupMetricsConfig { bootstrap: 0, ..Default::default() }, &[("model", "model")])
        .build()
        .expect("the pipeline builds")
        .execute(false)
        .expect("the pipeline runs")
}

#[test]
fn the_page_opens_with_the_verdicts_then_the_summary_grid_and_folds_the_detail() {
    let run = census_run();
    let html = super::render(&run.summary, &run.tables);
    let at = |marker: &str| html.find(marker).unwrap_or_else(|| panic!("no {marker}"));
    let (verdict, summary, findings, detail) = (
        at("<section id=\"verdict\">"),
        at("<section id=\"summary\">"),
        at("<section id=\"findings\">"),
        at("<details class=\"section\">"),
    );
    // First the verdicts, then the summary grid, then the findings (folded), then the detail.
    assert!(verdict < summary && summary < findings && findings < detail, "{verdict} {summary} {findings} {detail}");
    let before = &html[..verdict];
    assert!(!before.contains("<h2") && !before.contains("<table") && !before.contains("<svg"), "{before}");
    // The first screen draws no chart; every chart is in a section the reader opens, closed.
    assert!(!html[..detail].contains("<svg"), "a chart before the detail");
    assert!(html[detail..].matches("<svg").count() > 5);
    assert!(!html.contains("<details class=\"section\" open"), "a detail section opens by itself");
    let svgs_outside = html
        .split("<details class=\"section\">")
        .skip(1)
        .map(|s| s.split("</details>").last().unwrap_or(""))
        .filter(|tail| tail.contains("<svg"))
        .count();
    assert_eq!(svgs_outside, 0, "a chart outside the folded sections");
    // One verdict per protected attribute (gender, race), each in the summary grid too.
    let v = run.summary.verdicts.as_ref().expect("the verdicts");
    let names: Vec<&str> = v.attributes.iter().map(|a| a.attribute.as_str()).collect();
    let protected = run.figures::<LoadFigures>("data").unwrap().protected;
    let together = protected.join(" + ");
    let mut expected: Vec<&str> = protected.iter().map(String::as_str).collect();
    expected.push(&together);
    assert_eq!(names, expected, "the data's attributes, then the check's and the estimate's changed together");
    let grid = &html[summary..findings];
    for a in &v.attributes {
        let li = html[verdict..summary].split("<li").find(|l| l.contains(&format!("</span> {}: ", esc(&a.attribute)))).expect(&a.attribute);
        assert!(
            li.starts_with(&format!(" class=\"{}\"><span class=\"tag\">{}</span>", overview::class(a.severity), a.severity.word())),
            "{li}"
        );
        assert!(grid.contains(&format!(">{}</th>", esc(&a.attribute))), "{} not in the grid", a.attribute);
    }
    // Gender: women are selected well under four fifths of men's rate, significantly: severe.
    let gender = v.attributes.iter().find(|a| a.attribute == "gender").unwrap();
    assert_eq!(gender.severity, crate::verdict::Severity::Severe);
    let impact = gender.impact.as_ref().unwrap();
    assert_eq!((impact.group.as_str(), impact.reference.as_str(), impact.significant), ("Female", "Male", Some(true)));
    let findings = findings_of(&html);
    // The group failing the four-fifths rule has its line, with its impact ratio and its test;
    // an attribute set with more failing groups has a line naming the worst.
    let metrics: GroupMetricsFigures = run.figures("metrics").unwrap();
    let women = metrics.groups.iter().find(|g| g.attributes == "gender" && g.group == "Female").unwrap();
    assert!(!women.four_fifths_ok && women.significant, "the census model selects women at well under four fifths of men's rate");
    let line = findings
        .split("<li")
        .find(|l| l.contains("gender = Female ("))
        .unwrap_or_else(|| panic!("no line for gender = Female: {findings}"));
    assert!(line.contains("Four-fifths rule") && line.contains(&format!("{:.2} of the highest group", women.impact_ratio)), "{line}");
    assert!(line.contains("class=\"fail\"") && line.contains("significant (p "), "{line}");
    for g in metrics.groups.iter().filter(|g| !g.four_fifths_ok) {
        let named = format!("{} = {} (", esc(&g.attributes), esc(&g.group));
        let summed = format!("groups of {} judged fail a rule", esc(&g.attributes));
        assert!(findings.contains(&named) || findings.contains(&summed), "{} = {}: {findings}", g.attributes, g.group);
    }
    // The estimate with its interval, and the real rows flipped.
    let e: EstimateFigures = run.figures("estimate").unwrap();
    assert!(
        findings.contains(&format!("{} of random inputs (95% interval {} – {})", pctf(e.rate), pctf(e.ci95[0]), pctf(e.ci95[1]))),
        "{findings}"
    );
    let c: CheckFigures = run.figures("check").unwrap();
    assert!(findings.contains(&format!("{} of {} real rows", thousands(c.discriminatory), thousands(c.checked))), "{findings}");
    // Each line links to its detail, which exists.
    for id in ["stage-metrics", "stage-estimate", "stage-check"] {
        assert!(findings.contains(&format!("href=\"#{id}\"")) && html.contains(&format!("id=\"{id}\"")), "{id}");
    }
}

#[test]
fn a_gate_verdict_leads_the_page_and_warnings_follow_it() {
    let summary = json!({
        "pipeline": "p", "seed": 1, "stage_order": ["est"],
        "stages": {"est": entry("estimate", json!({"model": "m"}), &estimate(0.1))},
        "gate": {"passed": false, "conditions": [
            {"condition": "est.rate < 0.05", "value": 0.1, "passed": false},
            {"condition": "est.samples > 10", "value": 1000.0, "passed": true}
        ]},
        "warnings": [{"stage": "est", "message": "the model's probability looks like the unfavourable class's"}]
    });
    let html = render(&summary, &[]);
    let verdict = html.find("Gate FAILED (exit code 3): 1 of 2 conditions fail").expect(&html);
    let warning = html.find("the model&#x27;s probability looks like the unfavourable class&#x27;s").expect(&html);
    let line = html.find("Discrimination estimate").expect(&html);
    assert!(verdict < warning && warning < line, "{html}");
    // No attribute measured (the estimate's model is not in the summary): the findings open.
    assert!(findings_of(&html).contains("<details open>"), "{html}");
    // No gate: no verdict, the findings still lead.
    let summary = json!({"pipeline": "p", "seed": 1, "stage_order": ["est"], "stages": {"est": entry("estimate", json!({"model": "m"}), &estimate(0.1))}});
    let html = render(&summary, &[]);
    assert!(!html.contains("Gate") && findings_of(&html).contains("10.00% of random inputs"), "{html}");
}

#[test]
fn the_group_tables_sweeps_and_pairs_show_the_run_figures() {
    let run = census_run();
    let html = super::render(&run.summary, &run.tables);
    let metrics: GroupMetricsFigures = run.figures("metrics").unwrap();
    let section = &html[html.find("<h2 id=\"stage-metrics\">Selection rates per group: metrics</h2>").expect("the metrics section")..];
    // Each attribute set (intersections too) has its table and its charts.
    let mut sets: Vec<&str> = metrics.groups.iter().map(|g| g.attributes.as_str()).collect();
    sets.dedup();
    assert!(sets.iter().any(|s| s.contains(" × ")), "{sets:?}");
    for set in &sets {
        assert!(
            section.contains(&format!("<h3>{set} <span class=\"muted\">(reference: "))
                && section.contains(&format!("aria-label=\"Selection rate by {set}\"")),
            "{set}"
        );
    }
    // The gender table: a column per group, the reference marked; each rate with its ratio to
    // the reference's, red outside the band, starred where significant.
    let table = &section[section.find("<h3>gender <span").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    let group = |name: &str| metrics.groups.iter().find(|g| g.attributes == "gender" && g.group == name).unwrap();
    let (men, women) = (group("Male"), group("Female"));
    assert!(men.reference && women.outside_band.iter().any(|m| m == "selection_rate") && women.significant);
    assert!(table.contains(&format!("<th>Male <b>ref</b><br><span class=\"muted\">n = {}</span></th>", men.n)), "{table}");
    let row = table.split("<tr>").find(|r| r.starts_with("<td>selection rate</td>")).expect(table);
    let ratio = women.metrics["selection_rate_ratio"].as_f64().unwrap();
    assert!(row.contains(&format!("<td>{}</td>", pctf(men.selection_rate))), "{row}");
    assert!(
        row.contains(&format!("<td class=\"flag\">{} <span class=\"muted\">×{ratio:.2}</span> *</td>", pctf(women.selection_rate))),
        "{row}"
    );
    assert_eq!(table.contains("<tr><td>AUC</td>"), metrics.probabilities);
    let parity = &metrics.parity["gender"];
    let parity_line = format!(
        "Fairlearn parity: demographic parity difference {} (ratio {})",
        numf(parity.demographic_parity_difference),
        numf(parity.demographic_parity_ratio)
    );
    assert!(section.contains(&parity_line), "{parity_line}");
    // The threshold sweep, and the four-fifths line naming the flagged group with its ratio.
    assert!(run.tables.iter().any(|(s, t)| s == "metrics" && t.suffix == "sweep"));
    let sweep = &section[section.find("<h4>Threshold sweep: selection rate by gender (threshold 0 → 1)</h4>").expect("the sweep")..];
    assert!(sweep[..sweep.find("</figure>").unwrap()].contains("<polyline"), "{sweep}");
    assert!(section.contains(&format!("gender = Female ({})", numf(women.impact_ratio))), "{section}");
    // The check's first flipped rows, each beside its counterpart, what differs highlighted.
    let flipped = &run.tables.iter().find(|(s, _)| s == "check").expect("the check's table").1.frame;
    let heading = format!(
        "<h2>Pairs whose decision differs: check (first {} of {}; highlighted: what differs)</h2>",
        flipped.height().min(10),
        flipped.height()
    );
    let pairs = &html[html.find(&heading).unwrap_or_else(|| panic!("{heading}"))..];
    let pairs = &pairs[..pairs.find("</table>").unwrap()];
    assert_eq!(pairs.matches("<td class=\"muted\">instance</td>").count(), flipped.height().min(10));
    assert_eq!(pairs.matches("<td class=\"muted\">counterpart</td>").count(), flipped.height().min(10));
    assert!(pairs.contains("<td class=\"diff\">"), "{pairs}");
}

#[test]
fn every_group_chart_has_one_reference_said_and_claims_no_test_that_was_not_run() {
    let run = census_run();
    let html = super::render(&run.summary, &run.tables);
    let f: GroupMetricsFigures = run.figures("metrics").unwrap();
    let mut sets: Vec<&str> = f.groups.iter().map(|g| g.attributes.as_str()).collect();
    sets.dedup();
    let min_share_n = (f.min_share * f.rows as f64).ceil() as usize;
    let mut tested_elsewhere = 0;
    for set in sets {
        let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == set).collect();
        // The most favoured group, found here from the rates: the most selected one of at
        // least min_share of the rows (the group the impact ratios divide by).
        let favoured = groups.iter().filter(|g| g.n >= min_share_n).max_by(|a, b| a.selection_rate.total_cmp(&b.selection_rate)).unwrap();
        assert!((favoured.impact_ratio - 1.0).abs() < 1e-12, "{set}: {}", favoured.group);
        let from = html.find(&format!("aria-label=\"Selection rate by {}\"", esc(set))).expect(set);
        let figure = &html[from..from + html[from..].find("</figure>").unwrap()];
        let labels = figure.split("<text class=\"label").skip(1).filter_map(|t| t.split('>').nth(1)?.split('<').next());
        let marked: Vec<&str> = labels.filter(|t| t.ends_with(" (ref)")).collect();
        assert_eq!(marked, [format!("{} (ref)", esc(&favoured.group))], "{set}: one bar marked, the most favoured group");
        let rules: Vec<&str> = figure.split("class=\"rulelabel\"").skip(1).filter_map(|t| t.split('>').nth(1)?.split('<').next()).collect();
        assert_eq!(rules.iter().filter(|r| r.contains("(ref)")).count(), 1, "{set}: {rules:?}");
        assert!(rules.contains(&format!("{} (ref)", pctf(favoured.selection_rate)).as_str()), "{set}: the line is its rate: {rules:?}");
        // Significance is claimed only where the stage tested against that same group.
        let tested_against = groups.iter().find(|g| g.reference).unwrap();
        if tested_against.group != favoured.group {
            tested_elsewhere += 1;
            assert!(
                !figure.contains("significant") && !figure.contains(" *<"),
                "{set}: a test against {} claimed for {}: {figure}",
                tested_against.group,
                favoured.group
            );
        }
        let heading = format!("<h3>{} <span class=\"muted\">(reference: {})</span></h3>", esc(set), esc(&favoured.group));
        assert!(html.contains(&heading), "{heading}");
    }
    // The census data has a set whose largest group (the stage's reference) is not its most
    // selected one, so the rule above was exercised.
    assert!(tested_elsewhere > 0);
}

#[test]
fn a_set_tested_against_another_group_says_which_groups_its_tests_found_significant() {
    // Issue 57: the section said "nothing here is marked significant" while the findings named a
    // group of the same set significant (p = 1.7e-16) against the stage's reference group.
    let run = census_run();
    let html = super::render(&run.summary, &run.tables);
    let f: GroupMetricsFigures = run.figures("metrics").unwrap();
    assert!(!html.contains("nothing here is marked significant"));
    let mut sets: Vec<&str> = f.groups.iter().map(|g| g.attributes.as_str()).collect();
    sets.dedup();
    let mut named = 0;
    for set in sets {
        let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == set).collect();
        let favoured = crate::verdict::most_favoured(&f, &groups).unwrap();
        let tested_against = groups.iter().find(|g| g.reference).unwrap();
        if tested_against.group == favoured.group {
            continue;
        }
        let heading = format!("<h3>{} <span class=\"muted\">(reference: {})</span></h3>", esc(set), esc(&favoured.group));
        let section = &html[html.find(&heading).expect(&heading)..];
        let start = format!("The stage's significance tests compared each group with {} (its", esc(&tested_against.group));
        let sentence = &section[section.find(&start).unwrap_or_else(|| panic!("{set}: {start}"))..];
        let sentence = &sentence[..sentence.find("</p>").unwrap()];
        let tested: Vec<&&GroupFigure> =
            groups.iter().filter(|g| g.group != tested_against.group && !g.too_small && !g.p_adjusted.is_nan()).collect();
        let significant: Vec<&&&GroupFigure> = tested.iter().filter(|g| g.significant).collect();
        if significant.is_empty() {
            assert!(sentence.contains(&format!("none of the {} groups tested differs significantly", tested.len())), "{set}: {sentence}");
        } else {
            assert!(
                sentence.contains(&format!("{} of the {} groups tested differ significantly", significant.len(), tested.len())),
                "{set}: {sentence}"
            );
            for g in &significant {
                let p = pvalue(g.p_adjusted);
                let p = p.strip_prefix('<').map_or_else(|| format!("= {p}"), |small| format!("&lt; {small}"));
                assert!(sentence.contains(&format!("{} (p {p})", esc(&g.group))), "{set}: {} not named in: {sentence}", g.group);
            }
            named += 1;
        }
        // A group the tests did not find significant is not named.
        for g in tested.iter().filter(|g| !g.significant) {
            assert!(!sentence.contains(&format!("{} (p ", esc(&g.group))), "{set}: {} named: {sentence}", g.group);
        }
    }
    assert!(named > 0, "the census run has a set tested against another group with a significant difference");
    // The findings' one-group line names the group its significance was tested against.
    assert_eq!(
        super::findings::significance_against(1.7e-16, true, Some("race = White")),
        "significant against race = White (p = 1.7e-16, Holm-corrected)"
    );
    assert_eq!(super::findings::significance_against(0.2, false, None), "not significant (p = 0.200, Holm-corrected)");
}

/// The bars (`<rect class="bar …">`) of the chart after `marker` in `html`: (label, width).
fn bars_after<'h>(html: &'h str, marker: &str) -> Vec<(&'h str, f64)> {
    let from = html.find(marker).expect(marker);
    let svg = &html[from..from + html[from..].find("</svg>").unwrap()];
    svg.split("<g>")
        .skip(1)
        .map(|g| {
            let label = g.split("text-anchor=\"end\">").nth(1).and_then(|t| t.split('<').next()).unwrap_or("");
            let width = g.split("class=\"bar").nth(1).and_then(|r| r.split("width=\"").nth(1)).and_then(|w| w.split('"').next());
            (label, width.map_or(f64::NAN, |w| w.parse().unwrap()))
        })
        .collect()
}

#[test]
fn rate_bars_are_drawn_on_a_fixed_axis_from_0_to_100_percent() {
    let summary = json!({
        "pipeline": "p", "seed": 1, "stage_order": ["small", "large"],
        "stages": {
            "small": entry("estimate", json!({"model": "m"}), &estimate(0.0066)),
            "large": entry("estimate", json!({"model": "m"}), &estimate(0.5)),
        }
    });
    let html = render(&summary, &[]);
    let bars = bars_after(&html, "aria-label=\"Estimated discrimination rate\"");
    // The plot is 410 px wide: 0.66% is 2.7 px, 50% is 205 px (not the whole width).
    assert_eq!(bars, vec![("small", 2.7), ("large", 205.0)]);
    assert!(html.contains(">0%</text>") && html.contains(">100%</text>"), "the axis is ticked 0% to 100%");
}

fn top_group(condition: &str, score: f64, significant: bool) -> TopGroup {
    TopGroup {
        condition: condition.into(),
        complement: None,
        selection_score: 0.3,
        reestimated: true,
        p_value: 0.001,
        p_adjusted: 0.01,
        significant,
        score,
        margin: 0.02,
        rate_in: 0.2,
        rate_out: 0.2 + score,
        support: 0.1,
    }
}

#[test]
fn ranked_groups_are_drawn_in_rank_order_of_the_score_drawn() {
    // The auditor's ranking (by the selection draw) is not the order of the fresh scores shown.
    let top = vec![top_group("race = 2", 0.1, false), top_group("age = 3", 0.3, true), top_group("gender = 1", 0.2, true)];
    let figures = GroupScoreFigures {
        plugin: "testsgd 0.1.0".into(),
        params: json!({}),
        run_elapsed_s: 1.0,
        groups: 12,
        rules: Vec::new(),
        worst_score: Some(0.1),
        significant_rule_sets: 2,
        alpha: 0.05,
        stopped_by: None,
        plugin_figures: Default::default(),
        top,
    };
    let summary = json!({"pipeline": "p", "seed": 1, "stage_order": ["groups"], "stages": {"groups": entry("group_score", json!({"model": "m"}), &figures)}});
    let html = render(&summary, &[]);
    let bars = bars_after(&html, "aria-label=\"Worst groups by score\"");
    let labels: Vec<&str> = bars.iter().map(|b| b.0).collect();
    assert_eq!(labels, ["age = 3", "gender = 1", "race = 2"]);
    assert!(bars.windows(2).all(|w| w[0].1 >= w[1].1), "{bars:?}");
    // And the ranked-first group is the finding, with its significance.
    assert!(findings_of(&html).contains("testsgd ranks race = 2 worst"), "{html}");
}

#[test]
fn every_template_parses() {
    let mut env = Environment::new();
    for (name, source) in TEMPLATES {
        env.add_template(name, source).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    }
}
