//! `fairpipe init` on a decision log: a file of people with a sex and/or race column and the
//! tool's decision (0/1, yes/no) or score, and no model. The pipeline written audits the file as it
//! is: a `load` with no label and `missing_values = []` (a blank sex or race is an unknown
//! category, no row is dropped), reading only the columns the audit needs, then a `bias_audit` of
//! the decisions and one of the scores (each when present). Each column's values are mapped to the
//! rules' EEO-1 categories where a common code says which (M/F, Male/Female, W/B/A/H/NHPI/AIAN/2+,
//! a Hispanic Y/N flag), X, Decline and the like to Unknown, all marked CONFIRM; a value init
//! cannot place is left out of the mapping, so that the run refuses it by name until the auditor
//! maps it. No train stage, no search.

use std::fmt::Write as _;
use std::path::Path;

use fairpipe_core::data::ColumnProfile;
use fairpipe_core::preset::{bare_or_quoted, quote};

use super::guess::{self, words};
use super::write::{forward, relative_to};

/// Name words of a column of a hiring tool's decisions: a file with one (and a sex or race column,
/// and no label) is taken for a decision log.
const DECISION_WORDS: &[&str] = &[
    "advanced",
    "advance",
    "selected",
    "selection",
    "hired",
    "hire",
    "shortlisted",
    "shortlist",
    "interviewed",
    "interview",
    "passed",
    "recommended",
    "recommendation",
    "offer",
    "offered",
    "screened",
];

/// Name words of a column of decisions too general to say by themselves that a file is a decision
/// log rather than data to train on (`loan_outcome`): read as decisions with `--decisions`.
const GENERAL_DECISION_WORDS: &[&str] = &["decision", "outcome", "result", "status", "approved", "label"];

/// Name words of a column of scores.
const SCORE_WORDS: &[&str] = &["score", "scores", "rating", "points", "grade", "rank", "ranking"];

/// Name words of a Hispanic or Latino flag beside a race column.
const ETHNICITY_WORDS: &[&str] = &["hispanic", "latino", "latina", "latinx", "ethnicity"];

/// Cell texts read as selected, beside [`guess`]'s favourable texts.
const SELECTED_TEXTS: &[&str] = &["advanced", "selected", "advance", "moved forward", "interview", "offer", "shortlisted"];

/// Cell texts read as not selected, beside [`guess`]'s unfavourable texts.
const NOT_SELECTED_TEXTS: &[&str] = &["not selected", "not advanced", "rejected", "reject", "no offer"];

/// The columns of a decision log.
#[derive(Debug, Default)]
pub(super) struct LogColumns<'a> {
    /// The column of sex categories.
    pub(super) sex: Option<&'a ColumnProfile>,
    /// The column of race (or race/ethnicity) categories.
    pub(super) race: Option<&'a ColumnProfile>,
    /// A Hispanic or Latino flag beside `race`.
    pub(super) ethnicity: Option<&'a ColumnProfile>,
    /// The decisions.
    pub(super) decision: Option<&'a ColumnProfile>,
    /// The scores.
    pub(super) score: Option<&'a ColumnProfile>,
}

/// A column's non-blank values, lower case and trimmed.
fn lowered(c: &ColumnProfile) -> Vec<String> {
    c.levels.iter().map(|(v, _)| v.trim().to_lowercase()).collect()
}

/// Whether every value of `c` reads as a yes/no flag.
fn is_flag(c: &ColumnProfile) -> bool {
    !c.levels.is_empty() && lowered(c).iter().all(|v| ethnicity_category(v).is_some())
}

/// The columns of `usable` a decision log audit reads; `asked`: the user said it is one
/// (`--decisions`), so general names (`outcome`, `decision`) name decisions too.
pub(super) fn log_columns<'a>(usable: &[&'a ColumnProfile], asked: bool) -> LogColumns<'a> {
    let named = |c: &ColumnProfile, list: &[&str]| words(&c.name).iter().any(|w| list.contains(&w.as_str()));
    let kind = |c: &ColumnProfile| guess::protected_kind(c).map(|p| p.kind);
    let ethnicity = usable.iter().copied().find(|c| named(c, ETHNICITY_WORDS) && is_flag(c));
    let is_ethnicity = |c: &ColumnProfile| ethnicity.is_some_and(|e| e.name == c.name);
    let sex = usable.iter().copied().find(|c| kind(c) == Some("sex"));
    let race = usable.iter().copied().find(|c| kind(c) == Some("race") && !is_ethnicity(c));
    let decision = usable.iter().copied().find(|c| {
        let zero_one = c.numeric && c.levels.iter().all(|(v, _)| v.parse::<f64>().is_ok_and(|x| x == 0.0 || x == 1.0));
        let decision_named = named(c, DECISION_WORDS) || (asked && named(c, GENERAL_DECISION_WORDS));
        decision_named && (zero_one || (!c.numeric && c.distinct <= 12)) && c.distinct >= 2
    });
    let score = usable.iter().copied().find(|c| named(c, SCORE_WORDS) && c.numeric && c.distinct > 2);
    LogColumns { sex, race, ethnicity: ethnicity.filter(|_| race.is_some()), decision, score }
}

/// Whether the file is a decision log: a sex or race column, decisions or scores, and no binary
/// column named like a label other than the decisions (a label means data to train on).
pub(super) fn looks_like_a_log(columns: &LogColumns<'_>, usable: &[&ColumnProfile]) -> bool {
    let labelled = usable.iter().any(|c| {
        c.distinct == 2
            && columns.decision.is_none_or(|d| d.name != c.name)
            && words(&c.name).iter().any(|w| guess::LABEL_WORDS.contains(&w.as_str()) && !DECISION_WORDS.contains(&w.as_str()))
    });
    (columns.sex.is_some() || columns.race.is_some()) && (columns.decision.is_some() || columns.score.is_some()) && !labelled
}

/// The rules' sex category of a value (lower case), `Unknown` for one that says it is not given.
fn sex_category(v: &str) -> Option<&'static str> {
    match v {
        "m" | "male" | "man" | "men" => Some("Male"),
        "f" | "female" | "woman" | "women" => Some("Female"),
        _ => unknown_category(v),
    }
}

/// The rules' race/ethnicity category of a value (lower case).
fn race_category(v: &str) -> Option<&'static str> {
    match v {
        "w" | "white" | "caucasian" => Some("White"),
        "b" | "black" | "african american" | "african-american" | "black or african american" | "aa" => Some("Black or African American"),
        "a" | "asian" => Some("Asian"),
        "h" | "hispanic" | "latino" | "hispanic or latino" | "hispanic/latino" => Some("Hispanic or Latino"),
        "nhpi"
        | "pi"
        | "native hawaiian"
        | "pacific islander"
        | "native hawaiian or pacific islander"
        | "native hawaiian or other pacific islander" => Some("Native Hawaiian or Pacific Islander"),
        "aian"
        | "ai"
        | "american indian"
        | "native american"
        | "alaska native"
        | "native american or alaska native"
        | "american indian or alaska native"
        | "amer-indian-eskimo" => Some("Native American or Alaska Native"),
        "2+" | "two or more" | "two or more races" | "multi" | "multiracial" | "mixed" | "tom" => Some("Two or More Races"),
        _ => unknown_category(v),
    }
}

/// The ethnicity category of a Hispanic or Latino flag's value (lower case).
fn ethnicity_category(v: &str) -> Option<&'static str> {
    match v {
        "y" | "yes" | "true" | "1" | "h" | "hispanic" | "hispanic or latino" => Some("Hispanic or Latino"),
        "n" | "no" | "false" | "0" | "nh" | "not hispanic" | "not hispanic or latino" => Some("Not Hispanic or Latino"),
        _ => unknown_category(v),
    }
}

/// `Unknown` for a value that says the category was not given.
fn unknown_category(v: &str) -> Option<&'static str> {
    match v {
        "x" | "u" | "unknown" | "decline" | "declined" | "declined to state" | "prefer not to say" | "not disclosed" | "nd" | "na"
        | "n/a" | "not given" => Some("Unknown"),
        _ => None,
    }
}

/// One axis's `categories` table and the CONFIRM comments on it.
struct Mapping {
    table: String,
    notes: Vec<String>,
    /// Values mapped to a category (not Unknown), with their rows.
    known: Vec<(String, usize)>,
}

fn mapping(c: &ColumnProfile, rule: fn(&str) -> Option<&'static str>, rows: usize) -> Mapping {
    let mut entries = Vec::new();
    let mut notes = Vec::new();
    let mut known = Vec::new();
    for (value, n) in &c.levels {
        match rule(&value.trim().to_lowercase()) {
            Some(category) => {
                entries.push(format!("{} = {}", bare_or_quoted(value), quote(category)));
                if category != "Unknown" {
                    known.push((value.clone(), *n));
                } else {
                    notes.push(format!("{value:?} ({n} rows) is read as Unknown: counted, in no ratio"));
                }
            }
            None => notes.push(format!(
                "{value:?} ({n} rows) is not mapped: map it to one of the rules' categories or to \"Unknown\" (the run refuses it until then)"
            )),
        }
    }
    if c.missing > 0 {
        notes.push(format!("{} blank cells (of {rows} rows) are Unknown: counted, in no ratio", c.missing));
    }
    Mapping { table: format!("{{ {} }}", entries.join(", ")), notes, known }
}

/// The pipeline text for the decision log `path` (its `rows` rows, `columns` found), written to be
/// read from `out_dir`.
pub(super) fn render(path: &Path, rows: usize, columns: &LogColumns<'_>, out_dir: &Path, name: &str) -> String {
    let mut t = String::new();
    let data = forward(&relative_to(path, out_dir));
    let _ = writeln!(
        t,
        "# A bias audit (NYC Local Law 144, 6 RCNY §5-301) of the decision log {}, written by `fairpipe init`.",
        path.display()
    );
    let _ = writeln!(t, "# {rows} rows. No model and no label: the tool's recorded decisions and scores are audited as they are,");
    let _ = writeln!(t, "# every person counted (a blank or undisclosed category is Unknown: counted, in no ratio; no row dropped).");
    let _ =
        writeln!(t, "# Read every CONFIRM line, then: fairpipe validate FILE && fairpipe run FILE. docs/bias-audit.md explains each key.");
    let _ = writeln!(t, "[pipeline]\nname = {}\nseed = 1\n", quote(name));
    let features: Vec<&ColumnProfile> =
        [columns.sex, columns.race, columns.ethnicity, columns.decision, columns.score].into_iter().flatten().collect();
    let protected: Vec<String> = [columns.sex, columns.race].into_iter().flatten().map(|c| quote(&c.name)).collect();
    let _ = writeln!(t, "[stages.data]\nkind = \"load\"\npath = {}", quote(&data.to_string_lossy()));
    let _ = writeln!(t, "# Only the columns the audit reads; no `label`: no stage trains or scores against one.");
    let _ = writeln!(t, "features = [{}]", features.iter().map(|c| quote(&c.name)).collect::<Vec<_>>().join(", "));
    let _ = writeln!(t, "protected = [{}]", protected.join(", "));
    let _ = writeln!(t, "# A blank cell is a value: a blank sex or race is Unknown, not a dropped row.");
    let _ = writeln!(t, "missing_values = []\n");

    let mut shared = String::new();
    let mut small: Vec<String> = Vec::new();
    let mut maps: Vec<String> = Vec::new();
    for (axis, column, rule) in [
        ("sex", columns.sex, sex_category as fn(&str) -> Option<&'static str>),
        ("race", columns.race, race_category),
        ("ethnicity", columns.ethnicity, ethnicity_category),
    ] {
        let Some(c) = column else { continue };
        let _ = writeln!(shared, "{axis} = {}", quote(&c.name));
        let m = mapping(c, rule, rows);
        for note in &m.notes {
            let _ = writeln!(shared, "# CONFIRM {axis}: {note}");
        }
        if axis != "ethnicity" {
            small.extend(m.known.iter().filter(|(_, n)| (*n as f64) < 0.02 * rows as f64).map(|(v, n)| format!("{axis} {v:?} ({n} rows)")));
        }
        maps.push(format!("{axis} = {}", m.table));
    }
    let _ = writeln!(shared, "# CONFIRM: each data value's category (the rules' EEO-1 categories, or \"Unknown\").");
    let _ = writeln!(shared, "categories = {{ {} }}", maps.join(", "));
    if !small.is_empty() {
        let _ = writeln!(
            shared,
            "# CONFIRM: under 2% of the applicants: {}. The rules allow leaving such categories out of the impact ratios (listed with their numbers) with a justification; delete both lines to keep them in.",
            small.join(", ")
        );
        let _ = writeln!(shared, "exclude_below = 0.02");
        let _ = writeln!(shared, "exclusion_justification = \"categories under 2% of the applicants are too small for a stable ratio\"");
    }
    let page = "# What the page prints (fill in): tool, auditor, audit_date, distribution_date, data_source, data_from, data_to\n\
                # tool = \"…\"\n# auditor = \"…\"\n";

    if let Some(d) = columns.decision {
        let _ = writeln!(t, "[stages.decisions]\nkind = \"bias_audit\"\ndata = \"data\"");
        t.push_str(&shared);
        let _ = writeln!(t, "column = {}", quote(&d.name));
        let zero_one = d.numeric;
        if zero_one {
            let _ = writeln!(t, "# `{}` holds 0/1: 1 is selected (CONFIRM).", d.name);
        } else {
            let lower = |v: &str| v.trim().to_lowercase();
            let is = |v: &str, a: &[&str], b: &[&str]| a.contains(&lower(v).as_str()) || b.contains(&lower(v).as_str());
            let selected: Vec<&str> =
                d.levels.iter().map(|(v, _)| v.as_str()).filter(|v| is(v, guess::FAVOURABLE_TEXTS, SELECTED_TEXTS)).collect();
            let not_selected: Vec<&str> =
                d.levels.iter().map(|(v, _)| v.as_str()).filter(|v| is(v, guess::UNFAVOURABLE_TEXTS, NOT_SELECTED_TEXTS)).collect();
            let list = |v: &[&str]| format!("[{}]", v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", "));
            let _ = writeln!(t, "# CONFIRM: the values read as selected and as not selected.");
            let _ = writeln!(t, "selected = {}", list(&selected));
            let _ = writeln!(t, "not_selected = {}", list(&not_selected));
            for (v, n) in d.levels.iter().filter(|(v, _)| !selected.contains(&v.as_str()) && !not_selected.contains(&v.as_str())) {
                let _ = writeln!(
                    t,
                    "# CONFIRM: {v:?} ({n} rows) is named nowhere: add it to `selected` or `not_selected`, or leave its rows out with exclude = [{}] (the run refuses it until then)",
                    quote(v)
                );
            }
            if d.missing > 0 {
                let _ = writeln!(
                    t,
                    "# CONFIRM: {} rows have a blank decision: name \"\" in `exclude` to leave them out (the run refuses them until then)",
                    d.missing
                );
            }
        }
        t.push_str(page);
        t.push('\n');
    }
    if let Some(s) = columns.score {
        let _ = writeln!(t, "[stages.scores]\nkind = \"bias_audit\"\ndata = \"data\"");
        t.push_str(&shared);
        let _ = writeln!(t, "# Scoring rates: the share of each category scoring above the whole sample's median.");
        let _ = writeln!(t, "outcome = \"score\"");
        let _ = writeln!(t, "column = {}", quote(&s.name));
        if s.missing > 0 {
            let _ = writeln!(
                t,
                "# CONFIRM: {} rows have a blank score: the run refuses them until the file gives every person a score",
                s.missing
            );
        }
        t.push_str(page);
    }
    t
}
