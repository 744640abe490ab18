//! Text audits on the Wikipedia Talk comments: fairpipe's TF-IDF and its natively
//! trained logistic regression against scikit-learn's (fixtures made by
//! `tests/fixtures/text/make_text_fixtures.py`), identity-term counts, and the counterfactual swap
//! checked case by case.

use std::collections::BTreeMap;

use crate::common;

use fairpipe_core::text::classifier::{TextClassifier, TextLogisticConfig, TfidfLogistic};
use fairpipe_core::text::counterfactual::{check_swaps, check_twins, term_counts};
use fairpipe_core::text::data::TextData;
use fairpipe_core::text::terms::IdentityTerms;
use fairpipe_core::text::tfidf::Tfidf;

fn comments() -> TextData {
    TextData::load(&common::root().join("pipelines/data/text/wikitalk_comments.csv"), "comment", "toxic", Some("True")).unwrap()
}

/// (rev_id → p_sklearn) in file order.
fn sklearn_probabilities() -> Vec<f64> {
    let text = std::fs::read_to_string(common::root().join("tests/fixtures/text/reference.csv")).unwrap();
    text.lines().skip(1).map(|l| l.split(',').nth(1).unwrap().parse().unwrap()).collect()
}

#[test]
fn the_comments_load_with_their_labels() {
    let data = comments();
    assert_eq!((data.texts.len(), data.dropped_rows), (1492, 0));
    assert_eq!(data.y.iter().filter(|&&v| v == 1).count(), 248, "248 toxic comments (the dataset's README)");
    assert_eq!(data.label_values, ["False".to_string(), "True".to_string()]);
    let err =
        TextData::load(&common::root().join("pipelines/data/text/wikitalk_comments.csv"), "coment", "toxic", Some("True")).unwrap_err();
    assert!(err.to_string().contains("no column `coment`") && err.to_string().contains("comment"), "{err}");
}

#[test]
fn tfidf_features_equal_scikit_learns() {
    let data = comments();
    let tfidf = Tfidf::fit(&data.texts);
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(common::root().join("tests/fixtures/text/tfidf_rows.json")).unwrap()).unwrap();
    assert_eq!(tfidf.n_features() as u64, reference["vocabulary_size"].as_u64().unwrap());
    // docs/text-audits.md: every value of 40 comments and the vocabulary of 15,428 tokens.
    assert_eq!((tfidf.n_features(), reference["rows"].as_array().unwrap().len()), (15_428, 40));
    for (i, expected) in reference["rows"].as_array().unwrap().iter().enumerate() {
        let ours: BTreeMap<&str, f64> =
            tfidf.transform(&data.texts[i]).into_iter().map(|(j, v)| (tfidf.vocabulary()[j as usize].as_str(), v)).collect();
        let theirs = expected.as_object().unwrap();
        assert_eq!(ours.len(), theirs.len(), "comment {i}: tokens {:?} against {:?}", ours.keys(), theirs.keys());
        for (token, v) in theirs {
            let mine = ours.get(token.as_str()).unwrap_or_else(|| panic!("comment {i}: no `{token}`"));
            assert!((mine - v.as_f64().unwrap()).abs() < 1e-12, "comment {i}, `{token}`: {mine} against {v}");
        }
    }
}

#[test]
fn the_native_logistic_regression_reaches_scikit_learns_optimum() {
    let data = comments();
    let model = TfidfLogistic::train(&data.texts, &data.y, &TextLogisticConfig::default()).unwrap();
    assert!(model.converged_to < 1e-6, "gradient norm {} of the start after {} iterations", model.converged_to, model.iterations);
    let mut ours = vec![0.0; data.texts.len()];
    model.predict_texts(&data.text_refs(), &mut ours).unwrap();
    let theirs = sklearn_probabilities();
    // docs/text-audits.md: "on all 1,492 comments its probabilities are within 4·10⁻⁶ of scikit-learn's".
    assert_eq!((ours.len(), theirs.len()), (1492, 1492));
    let worst = common::compare::assert_close("p_fairpipe against p_sklearn", &ours, &theirs, 4e-6);
    eprintln!("{} iterations, largest |p_fairpipe − p_sklearn| = {worst}", model.iterations);
    let flips = ours.iter().zip(&theirs).filter(|(a, b)| (**a > 0.5) != (**b > 0.5)).count();
    assert_eq!(flips, 0);
}

#[test]
fn identity_terms_are_counted_and_every_swap_case_is_real() {
    let data = comments();
    let texts = data.text_refs();
    let matcher = IdentityTerms::paper().matcher();
    let mentions: Vec<_> = texts.iter().map(|t| matcher.mentions(t)).collect();
    let counts = term_counts(&mentions, matcher.terms());
    let of = |c: &str, t: Option<&str>| counts.iter().find(|(cat, term, _)| cat == c && term.as_deref() == t).unwrap().2;
    assert!(of("gender", None) >= of("gender", Some("gay")) && of("gender", Some("gay")) > 0);
    let model = TfidfLogistic::train(&data.texts, &data.y, &TextLogisticConfig::default()).unwrap();
    let report = check_swaps(&texts, &matcher, &model).unwrap();
    assert_eq!(report.texts, 1492);
    assert!(report.texts_with_terms > 300 && report.swaps > 3000, "{} texts with terms, {} swaps", report.texts_with_terms, report.swaps);
    assert!(!report.cases.is_empty(), "a model trained on 1,492 comments reacts to some identity term");
    // Every case is re-scored independently and its swapped text differs from the original only
    // where the category's terms were.
    for case in &report.cases {
        assert_eq!(model.predict_one(&case.text), case.p);
        assert_eq!(model.predict_one(&case.swapped), case.p_swapped);
        assert_ne!(case.p > 0.5, case.p_swapped > 0.5);
        let mentions = matcher.mentions(&case.swapped);
        assert!(mentions.iter().any(|m| matcher.terms().terms(matcher.terms().category_index(&case.category).unwrap())[m.term] == case.to));
    }
}

#[test]
fn gender_terms_swapped_to_gay_are_called_toxic_far_more_often_than_to_straight() {
    // Of the 231 comments that mention a gender term, scikit-learn's TfidfVectorizer +
    // LogisticRegression (defaults, all 1,492 comments; measured with the fixture venv, a regular
    // expression doing the swap) calls 89 toxic when the term is made "gay" and 27 when it is made
    // "straight". (The issue quoted 57.6% and 48.9% from a model it does not describe; scikit-learn's
    // defaults do not give those.)
    let data = comments();
    let texts = data.text_refs();
    let model = TfidfLogistic::train(&data.texts, &data.y, &TextLogisticConfig::default()).unwrap();
    let matcher = IdentityTerms::paper().matcher();
    let gender = matcher.terms().category_index("gender").unwrap();
    let term = |t: &str| matcher.terms().terms(gender).iter().position(|x| x == t).unwrap();
    let toxic = |t: usize| {
        let swapped: Vec<String> = texts.iter().filter_map(|x| matcher.replace(x, &matcher.mentions(x), gender, t)).collect();
        let refs: Vec<&str> = swapped.iter().map(String::as_str).collect();
        let mut p = vec![0.0; refs.len()];
        model.predict_texts(&refs, &mut p).unwrap();
        (refs.len(), p.iter().filter(|&&q| q > 0.5).count() as i64)
    };
    let (n, gay) = toxic(term("gay"));
    let (_, straight) = toxic(term("straight"));
    assert_eq!(n, 231);
    // fairpipe's own model (probabilities within 4e-6 of scikit-learn's) calls one more comment
    // toxic under "straight"; docs/text-audits.md publishes these two counts.
    assert_eq!((gay, straight), (89, 28), "gay {gay}, straight {straight} of 231");
}

#[test]
fn each_comment_is_checked_against_its_fuzzed_twin() {
    let data = comments();
    let path = common::root().join("pipelines/data/text/wikitalk_comments_fuzzed.csv");
    let fuzzed = TextData::load(&path, "comment", "toxic", Some("True")).unwrap();
    assert_eq!(fuzzed.y, data.y, "the twins keep their comment's label");
    let (texts, twins) = (data.text_refs(), fuzzed.text_refs());
    let matcher = IdentityTerms::paper().matcher();
    let model = TfidfLogistic::train(&data.texts, &data.y, &TextLogisticConfig::default()).unwrap();
    let report = check_twins(&texts, &twins, &matcher, &model).unwrap();
    // Dixon et al. swapped the identity terms of 734 of the 1,492 comments (Python's count).
    assert_eq!((report.texts, report.texts_with_terms), (1492, 734));
    assert!(!report.cases.is_empty());
    for case in &report.cases {
        assert_eq!((case.text.as_str(), case.swapped.as_str()), (texts[case.row], twins[case.row]), "paired row by row");
        assert_eq!((model.predict_one(&case.text), model.predict_one(&case.swapped)), (case.p, case.p_swapped));
        assert_ne!(case.p > 0.5, case.p_swapped > 0.5);
        // The terms named are the ones the twin changed: each side mentions its own.
        for (text, terms) in [(&case.text, &case.from), (&case.swapped, &case.to)] {
            let said: Vec<&str> = matcher.mentions(text).iter().map(|m| matcher.terms().terms(m.category)[m.term].as_str()).collect();
            assert!(terms.split('/').filter(|t| !t.is_empty()).all(|t| said.contains(&t)), "{terms} in {text}");
        }
    }
}

#[test]
fn twins_of_another_length_are_refused_with_both_files_named() {
    let dir = tempfile::tempdir().unwrap();
    let load = |name: &str, file: &str, text: &str, label: &str, favourable: &str| {
        format!(
            "[stages.{name}]\nkind = \"load_text\"\npath = \"{}\"\ntext = \"{text}\"\nlabel = \"{label}\"\nfavourable = \"{favourable}\"\n",
            common::bundled(file)
        )
    };
    let pipeline = common::write(
        dir.path(),
        "p.toml",
        &format!(
            "[pipeline]\nname = \"p\"\n{}{}[stages.model]\nkind = \"train_text\"\ndata = \"comments\"\n[stages.twins]\nkind = \"check_text\"\nmodel = \"model\"\ntwins = \"sentences\"\n",
            load("comments", "data/text/wikitalk_comments.csv", "comment", "toxic", "True"),
            load("sentences", "data/text/bias_madlibs_77k.csv", "Text", "Label", "BAD"),
        ),
    );
    let out = dir.path().join("out");
    let err = common::run_failing(&pipeline, &out);
    assert!(err.contains("bias_madlibs_77k.csv) have 76564 texts") && err.contains("wikitalk_comments.csv) 1492"), "{err}");
    assert!(!out.join("summary.json").exists());
}

#[test]
fn the_wikitalk_swaps_pipeline_reports_every_label_changing_swap() {
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&common::root().join("pipelines/wikitalk-swaps.toml"), out.path(), &[]);
    let stages = &summary["stages"];
    assert_eq!(stages["comments"]["rows"], 1492);
    assert_eq!(stages["comments"]["texts_per_category"]["gender"], 231);
    assert!(stages["model"]["accuracy_test"].as_f64().unwrap() > 0.8);
    let swaps = &stages["swaps"];
    let cases = swaps["discriminatory_swaps"].as_u64().unwrap();
    assert!(cases > 0 && swaps["discriminatory"].as_u64().unwrap() <= swaps["texts_with_terms"].as_u64().unwrap());
    let table = std::fs::read_to_string(out.path().join("swaps.csv")).unwrap();
    let mut reader = table.lines();
    assert_eq!(reader.next().unwrap(), "row,category,term,term_counterpart,probability,probability_counterpart,text,text_counterpart");
    let per_category: u64 = swaps["per_category"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(per_category, cases);
    // The same model against Dixon et al.'s twins of the comments.
    let twins = &stages["twins"];
    assert_eq!((twins["counterfactuals"].as_str(), swaps["counterfactuals"].as_str()), (Some("twins"), Some("swaps")));
    assert_eq!((twins["checked"].as_u64(), twins["texts_with_terms"].as_u64()), (Some(1492), Some(734)));
    let flips = twins["discriminatory"].as_u64().unwrap();
    assert!(flips > 0 && flips < 734);
    let table = std::fs::read_to_string(out.path().join("twins.csv")).unwrap();
    assert!(table.lines().count() as u64 > flips, "a row per pair, texts may span lines");
    let report = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(report.contains(">Counterfactual twins: twins</h2>"));
}

#[test]
fn the_onnx_text_model_gives_onnx_runtimes_probabilities() {
    use fairpipe_core::models::outputs::{Favourable, OutputChoice, OutputTransform};
    use fairpipe_core::text::onnx_text::OrtTextModel;
    let data = comments();
    let runtime = fairpipe_core::models::onnx::runtime::runtime(None).expect("ONNX Runtime (pip install onnxruntime)");
    let path = common::root().join("pipelines/models/wikitalk_tfidf_lr.onnx");
    let classes = fairpipe_core::models::onnx::facts::graph_facts(&path).unwrap().classes;
    let choice = OutputChoice {
        name: None,
        transform: OutputTransform::None,
        favourable: Favourable { label: "True".into(), is_zero: false, code: None },
        classes,
    };
    let model = OrtTextModel::load(&path, runtime, choice, &data.text_refs()).unwrap();
    let mut ours = vec![0.0; data.texts.len()];
    model.predict_texts(&data.text_refs(), &mut ours).unwrap();
    let text = std::fs::read_to_string(common::root().join("tests/fixtures/text/reference.csv")).unwrap();
    let python: Vec<f64> = text.lines().skip(1).map(|l| l.split(',').nth(2).unwrap().parse().unwrap()).collect();
    common::compare::assert_close("p_fairpipe against p_onnxruntime (Python)", &ours, &python, 1e-6);
    // The export is not scikit-learn's model exactly: skl2onnx tokenizes some texts differently.
    let sklearn = sklearn_probabilities();
    assert!(ours.iter().zip(&sklearn).any(|(a, b)| (a - b).abs() > 1e-3));
    let two_inputs = common::root().join("tests/fixtures/exports/sklearn_named_zipmap.onnx");
    let runtime = fairpipe_core::models::onnx::runtime::runtime(None).unwrap();
    let choice = OutputChoice {
        name: None,
        transform: OutputTransform::None,
        favourable: Favourable { label: "1".into(), is_zero: false, code: None },
        classes: vec![],
    };
    let err = OrtTextModel::load(&two_inputs, runtime, choice, &["a text"]).err().unwrap().to_string();
    assert!(err.contains("a text model takes one string input"), "{err}");
}

#[test]
fn the_wikitalk_onnx_pipeline_checks_the_exported_model() {
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&common::root().join("pipelines/wikitalk-onnx.toml"), out.path(), &[]);
    let stages = &summary["stages"];
    assert!(stages["model"]["model"].as_str().unwrap().contains("ONNX Runtime"));
    assert!(stages["model"]["accuracy_test"].as_f64().unwrap() > 0.8);
    assert_eq!(stages["swaps"]["texts_with_terms"], 760);
    assert!(stages["swaps"]["discriminatory"].as_u64().unwrap() > 0);
}

#[test]
fn a_model_trained_on_comments_is_checked_grouped_and_mitigated_on_the_templated_sentences() {
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&common::root().join("pipelines/madlibs-groups.toml"), out.path(), &[]);
    let swaps = &summary["stages"]["swaps"];
    assert_eq!(swaps["inputs"]["data"], "sentences");
    assert_eq!(swaps["checked"], 76564, "the sentences, not the comments the model was trained on");
    assert_eq!(summary["stages"]["sentences"]["texts_with_terms"], swaps["texts_with_terms"]);
    let (flips, swapped) = (swaps["discriminatory_swaps"].as_u64().unwrap(), swaps["swaps"].as_u64().unwrap());
    assert!(flips > 1000 && flips < swapped, "{flips} of {swapped} swaps change the label");
    // The table holds the first max_cases (10,000) swaps, each with a sentence the templates made.
    let table = std::fs::read_to_string(out.path().join("swaps.csv")).unwrap();
    assert_eq!(table.lines().count(), 1 + 10_000.min(flips as usize));
    // TestSGD over the sentences: samples and support come from them (each sentence has one term,
    // so there are only the 48 single-term rule sets), and {gay} is far the worst.
    let groups = &summary["stages"]["groups"];
    assert_eq!(groups["inputs"]["data"], "sentences");
    assert_eq!(groups["rule_sets_kept"], 48);
    let top = &groups["top"][0];
    assert_eq!(top["rule"], "gay");
    assert!(top["rate_in"].as_f64().unwrap() > 0.5 && top["rate_out"].as_f64().unwrap() < 0.05, "{top}");
    assert!(top["example"].as_str().unwrap().split(' ').any(|w| w == "gay"), "an example made from a sentence: {top}");
    // Mitigated on comments, measured on the sentences: lower, and fewer label-changing swaps.
    let fairer = &summary["stages"]["fairer"];
    assert!(fairer["rate_after"].as_f64() < fairer["rate_before"].as_f64(), "{fairer}");
    assert!(fairer["accuracy_before"].as_f64().unwrap() - fairer["accuracy_after"].as_f64().unwrap() <= 0.01);
    assert!(summary["stages"]["swaps_after"]["discriminatory"].as_u64() < swaps["discriminatory"].as_u64());
}

#[test]
fn the_wikitalk_groups_pipeline_ranks_term_groups_with_margins_and_examples() {
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&common::root().join("pipelines/wikitalk-groups.toml"), out.path(), &[]);
    let groups = &summary["stages"]["groups"];
    let kept = groups["rule_sets_kept"].as_u64().unwrap();
    // θ = 5%: gender (231 texts), race (115) and religion (502) of 1,492 reach it, age (73) and
    // every pair of categories do not: 14 + 17 + 9 rule sets.
    assert_eq!(kept, 40);
    let top = groups["top"].as_array().unwrap();
    assert_eq!(top[0]["score"], groups["worst_score"]);
    assert_eq!(top[0]["rule"], "gay", "the term a model trained on toxic comments reacts to most");
    for (a, b) in top.iter().zip(top.iter().skip(1)) {
        assert!(a["selection_score"].as_f64() >= b["selection_score"].as_f64(), "ranked");
    }
    // The leaders are scored again on fresh samples; {gay} is beyond chance after Holm's correction.
    assert_eq!(groups["leaders_reestimated"], 10);
    assert_eq!(top.iter().filter(|g| g["reestimated"] == true).count(), 10);
    assert!(top[0]["significant"] == true && top[0]["p_adjusted"].as_f64().unwrap() < 1e-6, "{}", top[0]);
    assert!(top[0]["selection_score"].as_f64().unwrap() > 0.2);
    for g in top {
        assert!(g["p_adjusted"].as_f64() >= g["p_value"].as_f64());
        let (score, rate_in, rate_out) = (g["score"].as_f64().unwrap(), g["rate_in"].as_f64().unwrap(), g["rate_out"].as_f64().unwrap());
        assert!((score - (rate_in - rate_out).abs()).abs() < 1e-12);
        assert!(g["samples"].as_u64().unwrap() >= 1000 && g["converged"] == true);
        let rule = g["rule"].as_str().unwrap();
        assert!(g["example"].as_str().unwrap().to_lowercase().contains(rule), "{rule}: {}", g["example"]);
    }
    let table = std::fs::read_to_string(out.path().join("groups.csv")).unwrap();
    assert_eq!(table.lines().count() as u64, 1 + kept);
}

#[test]
fn retraining_on_texts_of_the_worst_rule_set_lowers_its_score_within_the_accuracy_tolerance() {
    let out = tempfile::tempdir().unwrap();
    let summary = common::run_pipeline(&common::root().join("pipelines/wikitalk-groups.toml"), out.path(), &[]);
    let stages = &summary["stages"];
    let fairer = &stages["fairer"];
    assert_eq!(fairer["group"], stages["groups"]["top"][0]["rule"]);
    // "gay" is called toxic too often: the added texts say "gay" and are labelled non-toxic.
    assert_eq!((fairer["over_given"].as_str(), fairer["label"].as_str()), (Some("True"), Some("False")));
    let f = |k: &str| fairer[k].as_f64().unwrap();
    assert_eq!(f("rate_before"), fairer["before"]["group_score"].as_f64().unwrap());
    assert!(f("rate_after") < f("rate_before"), "{fairer}");
    assert!(f("accuracy_before") - f("accuracy_after") <= 0.01, "{fairer}");
    assert!((f("rate_reduction") - (1.0 - f("rate_after") / f("rate_before"))).abs() < 1e-12);
    // The rounds: 50 texts, then up to 10% of the 1,193 training comments or all there are.
    let rounds = std::fs::read_to_string(out.path().join("fairer.csv")).unwrap();
    let rows: Vec<Vec<&str>> = rounds.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len() as u64, fairer["rounds"].as_u64().unwrap());
    assert_eq!(rows[0][2], "50");
    let available = fairer["samples_available"].as_u64().unwrap();
    assert_eq!(rows.last().unwrap()[2].parse::<u64>().unwrap(), available.min(119));
    let kept: Vec<&Vec<&str>> = rows.iter().filter(|r| r[5] == "true").collect();
    let last_kept = kept.last().expect("a kept round");
    assert_eq!(last_kept[2].parse::<u64>().unwrap(), fairer["added"].as_u64().unwrap());
    assert_eq!(last_kept[3].parse::<f64>().unwrap(), f("rate_after"));
    // The added texts: new (none is a comment of the data), each saying "gay", labelled non-toxic.
    let comments = comments();
    let originals: std::collections::HashSet<&str> = comments.texts.iter().map(String::as_str).collect();
    let frame = {
        use polars::prelude::*;
        ParquetReader::new(std::fs::File::open(out.path().join("fairer_added.parquet")).unwrap()).finish().unwrap()
    };
    let column =
        |name: &str| -> Vec<String> { frame.column(name).unwrap().str().unwrap().iter().map(|v| v.unwrap().to_string()).collect() };
    let added: Vec<(String, String)> = column("text").into_iter().zip(column("toxic")).collect();
    assert_eq!(added.len() as u64, fairer["added"].as_u64().unwrap());
    let matcher = IdentityTerms::paper().matcher();
    for (text, label) in &added {
        assert_eq!(label, "False");
        assert!(!originals.contains(text.as_str()), "{text}");
        assert!(matcher.mentions(text).iter().any(|m| matcher.terms().terms(m.category)[m.term] == "gay"), "{text}");
    }
    // The report shows the ranked term groups with example texts, the swaps and the mitigation.
    let report = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(report.contains(">Identity-term groups: groups</h2>") && report.contains("<mark>gay</mark>"));
    let top_example = stages["groups"]["top"][0]["example"].as_str().unwrap();
    let start: String = top_example.trim_start().chars().take(20).collect();
    let escaped = start.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    assert!(report.contains(&escaped), "the top group's example text: {start}");
    assert!(report.contains(">Counterfactual term swaps: swaps_after</h2>"));
    assert!(report.contains(&format!("<td>{:.4} → {:.4}</td>", f("rate_before"), f("rate_after"))), "mitigation row");
    // The retrained model is passed on: the counterfactual swap finds fewer label changes.
    assert_eq!(stages["swaps_after"]["inputs"]["model"], "fairer");
    assert!(stages["swaps_after"]["discriminatory"].as_u64() < stages["swaps"]["discriminatory"].as_u64());
}

#[test]
fn a_text_model_loaded_from_onnx_is_not_retrained_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = common::write(
        dir.path(),
        "p.toml",
        &format!(
            "[pipeline]\nname = \"p\"\n[stages.comments]\nkind = \"load_text\"\npath = \"{}\"\ntext = \"comment\"\nlabel = \"toxic\"\nfavourable = \"True\"\n\
             [stages.model]\nkind = \"load_text_model\"\ndata = \"comments\"\npath = \"{}\"\n\
             [stages.groups]\nkind = \"group_score_text\"\nmodel = \"model\"\ntheta = 0.1\n\
             [stages.fairer]\nkind = \"retrain_text\"\ngroups = \"groups\"\n",
            common::bundled("data/text/wikitalk_comments.csv"),
            common::bundled("models/wikitalk_tfidf_lr.onnx")
        ),
    );
    let out = dir.path().join("out");
    let err = common::run_failing(&pipeline, &out);
    assert!(err.contains("fairer") && err.contains("train_text") && err.contains("was loaded"), "{err}");
    assert!(!out.join("summary.json").exists());
}

#[test]
fn mitigation_without_test_texts_is_refused_with_the_fix_named() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = common::write(
        dir.path(),
        "p.toml",
        &format!(
            "[pipeline]\nname = \"p\"\n[stages.comments]\nkind = \"load_text\"\npath = \"{}\"\ntext = \"comment\"\nlabel = \"toxic\"\nfavourable = \"True\"\ntest_fraction = 0.0\n\
             [stages.model]\nkind = \"train_text\"\ndata = \"comments\"\n\
             [stages.groups]\nkind = \"group_score_text\"\nmodel = \"model\"\ntheta = 0.1\n\
             [stages.fairer]\nkind = \"retrain_text\"\ngroups = \"groups\"\n",
            common::bundled("data/text/wikitalk_comments.csv"),
        ),
    );
    let out = dir.path().join("out");
    let err = common::run_failing(&pipeline, &out);
    assert!(err.contains("have no test split; set test_fraction above 0"), "{err}");
    assert!(!out.join("summary.json").exists());
}
