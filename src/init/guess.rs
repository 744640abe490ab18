//! What `fairpipe init` guesses from a data file and a model: the label and its favourable value,
//! the protected attributes (from the columns' names and values), the split and identifier
//! columns, a codes file beside the data, and the columns a model that reads fewer of them leaves
//! out.

use std::path::{Path, PathBuf};

use fairpipe_core::data::{self, ColumnProfile, Dataset};
use fairpipe_core::domain::{AttributeKind, Domain};
use fairpipe_core::error::DataError;

use super::InitError;

/// The cells read as missing (the `load` stage's default `missing_values`).
pub(super) fn missing_markers() -> Vec<String> {
    vec![String::new(), "?".into(), "NA".into()]
}

/// A name split into lower-case words: at `_`, `-`, `.`, spaces and lower-to-upper case changes
/// (`AgeInYears` → age, in, years; `native-country` → native, country).
pub fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Words of a label column's name, most telling first.
pub(super) const LABEL_WORDS: &[&str] = &[
    "label", "target", "outcome", "class", "y", "income", "response", "result", "decision", "approved", "approval", "default", "recid",
    "churn", "hired", "admitted", "survived", "fraud", "credit", "rating", "risk",
];

/// Label words whose value 1 (or "yes") is the unfavourable outcome.
pub(super) const UNFAVOURABLE_LABEL_WORDS: &[&str] = &["default", "recid", "churn", "fraud", "risk"];

/// Cell texts that read as the favourable outcome.
pub(super) const FAVOURABLE_TEXTS: &[&str] =
    &["yes", "y", "true", "t", "good", "approved", "accepted", "granted", "hired", "admitted", "pass", "passed", "positive", "high"];
/// Cell texts that read as the unfavourable outcome.
pub(super) const UNFAVOURABLE_TEXTS: &[&str] =
    &["no", "n", "false", "f", "bad", "denied", "rejected", "declined", "refused", "fail", "failed", "negative", "low"];

/// One kind of protected attribute: its name in messages, the column-name words that say it, and
/// cell values that say it.
pub(super) struct ProtectedKind {
    name: &'static str,
    words: &'static [&'static str],
    values: &'static [&'static str],
    /// Protected by the laws every user is under (see [`PROTECTED_KINDS`]): measured by default.
    in_law: bool,
}

/// The protected attributes fairpipe init recognises, in the order it prefers them for the search.
/// Those measured by default (`in_law`) are the characteristics protected both by US federal law —
/// Title VII of the Civil Rights Act of 1964 (race, colour, religion, sex, national origin), the
/// Age Discrimination in Employment Act of 1967 (age) and the Americans with Disabilities Act of
/// 1990 (disability) — and by Article 21 of the EU Charter of Fundamental Rights (sex, race,
/// colour, ethnic origin, religion, disability, age, nationality). Marital status is protected by
/// some laws only (the US Equal Credit Opportunity Act, the UK Equality Act 2010): proposed, not
/// measured unless given with `--protected`.
pub(super) const PROTECTED_KINDS: &[ProtectedKind] = &[
    ProtectedKind { name: "sex", words: &["sex", "gender"], values: &["male", "female", "man", "woman", "men", "women"], in_law: true },
    ProtectedKind {
        name: "race",
        words: &["race", "ethnicity", "ethnic", "racial"],
        values: &[
            "white",
            "black",
            "asian",
            "hispanic",
            "latino",
            "caucasian",
            "african-american",
            "asian-pac-islander",
            "amer-indian-eskimo",
        ],
        in_law: true,
    },
    ProtectedKind { name: "age", words: &["age"], values: &[], in_law: true },
    ProtectedKind {
        name: "religion",
        words: &["religion", "religious", "faith"],
        values: &["christian", "muslim", "jewish", "hindu", "buddhist"],
        in_law: true,
    },
    ProtectedKind { name: "disability", words: &["disability", "disabled", "handicap"], values: &[], in_law: true },
    ProtectedKind {
        name: "marital status",
        words: &["marital", "married", "marriage"],
        values: &["married", "single", "divorced", "widowed", "never-married", "married-civ-spouse", "separated"],
        in_law: false,
    },
    ProtectedKind {
        name: "nationality",
        words: &["nationality", "citizenship", "citizen", "foreign", "immigrant", "native", "birthplace"],
        values: &[],
        in_law: true,
    },
];

/// Why a column was proposed as protected.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Proposed {
    pub(super) column: String,
    pub(super) kind: &'static str,
    pub(super) by: &'static str,
}

impl Proposed {
    /// Whether it is measured by default: given with `--protected`, or of a kind protected in law.
    pub(super) fn measured(&self) -> bool {
        self.by == "--protected" || PROTECTED_KINDS.iter().any(|k| k.name == self.kind && k.in_law)
    }
}

/// The protected kind column `c` is, and whether its name or its values say so.
pub(super) fn protected_kind(c: &ColumnProfile) -> Option<Proposed> {
    let w = words(&c.name);
    let joined = w.join("_");
    for kind in PROTECTED_KINDS {
        let named = kind.words.iter().any(|k| w.iter().any(|x| x == k))
            || (kind.name == "nationality" && (joined.contains("native_country") || joined.contains("country_of_birth")));
        if named {
            return Some(Proposed { column: c.name.clone(), kind: kind.name, by: "name" });
        }
    }
    for kind in PROTECTED_KINDS.iter().filter(|k| !k.values.is_empty()) {
        let hits = c.levels.iter().filter(|(v, _)| kind.values.contains(&v.to_lowercase().as_str())).count();
        // Most of a few-valued column's values are of this kind.
        if !c.levels.is_empty() && c.levels.len() <= 20 && hits * 2 >= c.levels.len() && hits > 0 {
            return Some(Proposed { column: c.name.clone(), kind: kind.name, by: "values" });
        }
    }
    None
}

/// Whether the column holds train/test (val) assignments.
pub(super) fn is_split_column(c: &ColumnProfile) -> bool {
    c.levels.len() >= 2 && c.missing == 0 && c.levels.iter().all(|(v, _)| data::split_of_cell(v).is_ok())
}

/// Whether the column is a row number or identifier to drop: unique per row, and named like one or
/// text.
pub(super) fn is_identifier(c: &ColumnProfile, rows: usize) -> bool {
    let w = words(&c.name);
    let named = c.name.trim().is_empty()
        || w.iter()
            .any(|x| matches!(x.as_str(), "id" | "row" | "index" | "idx" | "uuid" | "key" | "unnamed" | "rownum" | "no" | "nr" | "number"));
    let unique = c.distinct == rows && rows > 1;
    unique && (named || !c.numeric)
}

/// The label: `asked`, or the binary column named most like a label, or the last binary column
/// that is not protected-looking.
pub(super) fn choose_label(path: &Path, columns: &[&ColumnProfile], asked: Option<&str>) -> Result<String, InitError> {
    if let Some(asked) = asked {
        let c = columns.iter().find(|c| c.name == asked).ok_or_else(|| no_column(path, columns, asked, "--label"))?;
        if c.distinct != 2 {
            let values: Vec<&str> = c.levels.iter().take(8).map(|(v, _)| v.as_str()).collect();
            return Err(InitError::LabelNotBinary {
                path: path.to_path_buf(),
                column: c.name.clone(),
                distinct: c.distinct,
                values: if values.is_empty() { String::new() } else { format!(" (it has {})", values.join(", ")) },
            });
        }
        return Ok(c.name.clone());
    }
    let binary: Vec<&&ColumnProfile> = columns.iter().filter(|c| c.distinct == 2).collect();
    for word in LABEL_WORDS {
        if let Some(c) = binary.iter().rev().find(|c| words(&c.name).iter().any(|w| w == word)) {
            return Ok(c.name.clone());
        }
    }
    if let Some(c) = binary.iter().rev().find(|c| protected_kind(c).is_none()) {
        return Ok(c.name.clone());
    }
    Err(InitError::NoLabel {
        path: path.to_path_buf(),
        columns: columns.iter().map(|c| format!("{} ({} values)", c.name, c.distinct)).collect::<Vec<_>>().join(", "),
    })
}

/// The favourable label value as written in the file (`None`: the default, 1 of a 0/1 label), and
/// why.
pub(super) fn choose_favourable(label: &ColumnProfile) -> (Option<String>, String) {
    let values: Vec<&str> = label.levels.iter().map(|(v, _)| v.as_str()).collect();
    let zero_one = values.iter().all(|v| v.parse::<f64>().is_ok_and(|x| x == 0.0 || x == 1.0));
    let unfavourable_name = words(&label.name).iter().any(|w| UNFAVOURABLE_LABEL_WORDS.contains(&w.as_str()));
    if zero_one {
        if unfavourable_name {
            let zero = values.iter().find(|v| v.parse::<f64>() == Ok(0.0)).unwrap_or(&"0");
            return (Some(zero.to_string()), format!("`{}` reads as a bad outcome, so 0 is taken as favourable", label.name));
        }
        return (None, "1 is taken as favourable (the default for a 0/1 label)".into());
    }
    let lower = |v: &str| v.trim().to_lowercase();
    if let Some(v) = values.iter().find(|v| FAVOURABLE_TEXTS.contains(&lower(v).as_str())) {
        return (Some(v.to_string()), format!("{v:?} reads as the favourable outcome"));
    }
    if let Some(other) =
        values.iter().find(|v| UNFAVOURABLE_TEXTS.contains(&lower(v).as_str())).and_then(|bad| values.iter().find(|v| *v != bad))
    {
        return (
            Some(other.to_string()),
            format!("the other value reads as the unfavourable outcome, so {other:?} is taken as favourable"),
        );
    }
    // Income-like labels: ">50K" over "<=50K".
    if let Some(v) = values.iter().find(|v| v.trim_start().starts_with('>')) {
        return (Some(v.to_string()), format!("{v:?} reads as the higher outcome"));
    }
    let rarer = label.levels.iter().min_by_key(|(v, n)| (*n, v.clone())).map(|(v, _)| v.clone()).unwrap_or_default();
    (Some(rarer.clone()), format!("nothing says which is favourable, so the rarer value {rarer:?} was taken"))
}

/// The "no such column" error for `asked`.
pub(super) fn no_column(path: &Path, columns: &[&ColumnProfile], asked: &str, role: &'static str) -> InitError {
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    InitError::NoColumn {
        path: path.to_path_buf(),
        column: asked.to_string(),
        role,
        available: names.join(", "),
        hint: fairpipe_core::suggest::hint(asked, &names),
    }
}

/// The separator of a CSV file: `,` unless its header is one column holding `;` or tabs.
pub(super) fn separator_of(path: &Path) -> Result<u8, DataError> {
    let names = data::column_names(path, b',')?;
    if names.len() == 1 {
        for sep in [b';', b'\t', b'|'] {
            if names[0].contains(sep as char) {
                return Ok(sep);
            }
        }
    }
    Ok(b',')
}

/// The product of the protected grid sizes of `columns` in `domain`.
pub(super) fn combinations(domain: &Domain, columns: &[String]) -> u128 {
    columns
        .iter()
        .filter_map(|c| domain.attributes.iter().find(|a| &a.name == c))
        .map(|a| a.grid_len() as u128)
        .fold(1u128, |acc, n| acc.saturating_mul(n))
}

/// Most protected combinations the proposed search covers (every audited input is tried with each).
pub(super) const MAX_SEARCHED_COMBINATIONS: u128 = 1_000;

/// The codes file `fairpipe init` looks for beside a data file: `census.csv` → `census.codes.toml`.
pub(super) fn codes_path_of(data: &Path) -> PathBuf {
    let stem = data.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    data.with_file_name(format!("{stem}.codes.toml"))
}

/// A codes file beside the data.
#[derive(Debug)]
pub(super) enum CodesFound {
    /// None there (or the data has no column of names).
    None,
    /// One that reads and encodes the data.
    Read(fairpipe_core::codes::Codes),
    /// One that does not read, or does not fit the data: its path and why.
    Unusable(PathBuf, String),
}

/// The codes file beside `data`, read.
pub(super) fn find_codes(data: &Path) -> CodesFound {
    let path = codes_path_of(data);
    if !path.is_file() {
        return CodesFound::None;
    }
    match fairpipe_core::codes::read(&path) {
        Ok(codes) => CodesFound::Read(codes),
        Err(problems) => CodesFound::Unusable(path, problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")),
    }
}

/// The protected attributes: those `asked` for (`--protected`), else proposed from the features'
/// names and values, in [`PROTECTED_KINDS`]' order.
pub(super) fn propose_protected(path: &Path, features: &[&ColumnProfile], asked: &[String]) -> Result<Vec<Proposed>, InitError> {
    let proposed: Vec<Proposed> = if asked.is_empty() {
        let mut found: Vec<Proposed> = features
            .iter()
            .filter_map(|c| protected_kind(c))
            .filter(|p| features.iter().any(|c| c.name == p.column && c.distinct >= 2))
            .collect();
        found.sort_by_key(|p| PROTECTED_KINDS.iter().position(|k| k.name == p.kind));
        found
    } else {
        asked
            .iter()
            .map(|asked| {
                features
                    .iter()
                    .find(|c| &c.name == asked)
                    .map(|c| Proposed { column: c.name.clone(), kind: "", by: "--protected" })
                    .ok_or_else(|| no_column(path, features, asked, "--protected"))
            })
            .collect::<Result<_, _>>()?
    };
    if proposed.is_empty() {
        return Err(InitError::NoProtected {
            path: path.to_path_buf(),
            columns: features.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
        });
    }
    Ok(proposed)
}

/// Column-name words of a sampling weight, not a feature (`fnlwgt`, `sample_weight`).
const WEIGHT_WORDS: &[&str] = &["weight", "wgt", "fnlwgt", "weights", "sampleweight"];

/// Whether column `name` is named like a sampling weight.
pub(super) fn is_weight(name: &str) -> bool {
    words(name).iter().any(|w| WEIGHT_WORDS.contains(&w.as_str()) || w.ends_with("wgt"))
}

/// Columns that say again what another column says (each value of one goes with one value of the
/// other, both ways, e.g. `education` and `education-num`): the column to drop — the one of
/// categories, else the later — with the column it repeats. Read over the encoded rows.
pub(super) fn redundant_columns(dataset: &Dataset) -> Vec<(String, String)> {
    use std::collections::HashMap;
    let attributes = &dataset.domain.attributes;
    let n = attributes.len();
    let rows = dataset.x.nrows();
    let function_of = |a: usize, b: usize| -> bool {
        let mut seen: HashMap<u64, u64> = HashMap::new();
        (0..rows).all(|r| {
            let (x, y) = (dataset.x[[r, a]].to_bits(), dataset.x[[r, b]].to_bits());
            *seen.entry(x).or_insert(y) == y
        })
    };
    let categorical = |i: usize| matches!(attributes[i].kind, AttributeKind::Categorical { .. });
    let mut out: Vec<(String, String)> = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let already = out.iter().any(|(d, _)| d == &attributes[a].name || d == &attributes[b].name);
            if already || attributes[a].grid_len() < 2 || !function_of(a, b) || !function_of(b, a) {
                continue;
            }
            let drop = if categorical(a) && !categorical(b) { a } else { b };
            let kept = if drop == a { b } else { a };
            out.push((attributes[drop].name.clone(), attributes[kept].name.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, levels: &[(&str, usize)]) -> ColumnProfile {
        let numeric = levels.iter().all(|(v, _)| v.parse::<f64>().is_ok());
        ColumnProfile {
            name: name.into(),
            distinct: levels.len(),
            levels: levels.iter().map(|(v, n)| (v.to_string(), *n)).collect(),
            numeric,
            integer: numeric,
            range: None,
            missing: 0,
        }
    }

    #[test]
    fn names_split_into_words_at_separators_and_case_changes() {
        assert_eq!(words("AgeInYears"), ["age", "in", "years"]);
        assert_eq!(words("native-country"), ["native", "country"]);
        assert_eq!(words("label_CREDITRATING_eq_1"), ["label", "creditrating", "eq", "1"]);
        assert_eq!(words("PersonStatusSex"), ["person", "status", "sex"]);
        assert_eq!(words(" Y"), ["y"]);
        // "percentage" holds "age" but is not the word age.
        assert!(protected_kind(&column("percentage", &[("1", 3), ("2", 4)])).is_none());
    }

    #[test]
    fn protected_attributes_are_proposed_from_names_and_values() {
        let by = |c: ColumnProfile| protected_kind(&c).map(|p| (p.kind, p.by));
        assert_eq!(by(column("sex", &[("Female", 1), ("Male", 2)])), Some(("sex", "name")));
        assert_eq!(by(column("AgeInYears", &[("30", 1), ("40", 2)])), Some(("age", "name")));
        assert_eq!(by(column("native-country", &[("Cuba", 1), ("Peru", 2)])), Some(("nationality", "name")));
        assert_eq!(by(column("marital-status", &[("Divorced", 1), ("Married-civ-spouse", 2)])), Some(("marital status", "name")));
        // Measured by default: the kinds protected in law; marital status only when asked for.
        let measured = |c: ColumnProfile| protected_kind(&c).is_some_and(|p| p.measured());
        assert!(measured(column("sex", &[("Female", 1), ("Male", 2)])));
        assert!(measured(column("native-country", &[("Cuba", 1), ("Peru", 2)])));
        assert!(!measured(column("marital-status", &[("Divorced", 1), ("Married-civ-spouse", 2)])));
        assert!(is_weight("fnlwgt") && is_weight("sample_weight") && is_weight("PERWT_wgt"));
        assert!(!is_weight("age") && !is_weight("hours-per-week"));
        assert_eq!(by(column("ForeignWorker", &[("1", 1), ("2", 2)])), Some(("nationality", "name")));
        assert_eq!(by(column("pk", &[("female", 1), ("male", 2)])), Some(("sex", "values")));
        assert_eq!(by(column("grp", &[("Asian", 1), ("Black", 2), ("Other", 3), ("White", 4)])), Some(("race", "values")));
        assert_eq!(by(column("hours", &[("40", 1), ("50", 2)])), None);
    }

    #[test]
    fn the_label_is_the_binary_column_named_like_one_else_the_last_binary_column() {
        let p = Path::new("d.csv");
        let sex = column("sex", &[("F", 1), ("M", 1)]);
        let y = column("y", &[("0", 1), ("1", 1)]);
        let other = column("flag", &[("a", 1), ("b", 1)]);
        let many = column("hours", &[("1", 1), ("2", 1), ("3", 1)]);
        assert_eq!(choose_label(p, &[&y, &sex, &other, &many], None).unwrap(), "y");
        assert_eq!(choose_label(p, &[&other, &sex, &many], None).unwrap(), "flag", "the last binary column not protected-looking");
        assert!(matches!(choose_label(p, &[&many], None), Err(InitError::NoLabel { .. })));
        assert!(matches!(choose_label(p, &[&many], Some("hours")), Err(InitError::LabelNotBinary { distinct: 3, .. })));
        assert!(matches!(choose_label(p, &[&many], Some("hour")), Err(InitError::NoColumn { .. })));
    }

    #[test]
    fn the_favourable_value_follows_the_label_and_its_values() {
        let fav = |c: ColumnProfile| choose_favourable(&c).0;
        assert_eq!(fav(column("income", &[("<=50K", 24720), (">50K", 7841)])), Some(">50K".into()));
        assert_eq!(fav(column("y", &[("0", 5), ("1", 3)])), None);
        assert_eq!(fav(column("two_year_recid", &[("0", 5), ("1", 3)])), Some("0".into()));
        assert_eq!(fav(column("outcome", &[("approved", 5), ("denied", 3)])), Some("approved".into()));
        assert_eq!(fav(column("decision", &[("bad", 5), ("ok", 3)])), Some("ok".into()));
        assert_eq!(fav(column("thing", &[("p", 5), ("q", 3)])), Some("q".into()), "the rarer value");
    }
}
