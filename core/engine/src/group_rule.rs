//! A group defined by conditions on protected attributes, as an auditor reports it
//! (`[{"attribute": i, "values": [...]} | {"attribute": i, "lower", "upper", "upper_inclusive"}]`):
//! parsed once, then used to decode the group for people and to test membership of rows.

use serde_json::Value;

use crate::domain::Domain;

/// A group's membership test, from a report's encoded conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRule {
    conditions: Vec<(usize, Membership)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Membership {
    OneOf(Vec<f64>),
    Range { lower: f64, upper: f64, closed: bool },
}

/// A group whose conditions do not read (`[{"attribute", "values"} | {"attribute", "lower",
/// "upper"}]` over the domain's attributes).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("malformed group conditions: {0}")]
pub struct MalformedGroup(pub String);

impl GroupRule {
    /// Parse the conditions of a group (`[{"attribute", "values"} | {"attribute", "lower", "upper"}]`).
    pub fn parse(conditions: &Value, width: usize) -> std::result::Result<Self, MalformedGroup> {
        let bad = || MalformedGroup(conditions.to_string());
        let mut out = Vec::new();
        for c in conditions.as_array().ok_or_else(bad)? {
            let attr = c["attribute"].as_u64().map(|a| a as usize).filter(|&a| a < width).ok_or_else(bad)?;
            let m = match c["values"].as_array() {
                Some(v) => Membership::OneOf(v.iter().map(|x| x.as_f64().ok_or_else(bad)).collect::<std::result::Result<_, _>>()?),
                None => Membership::Range {
                    lower: c["lower"].as_f64().ok_or_else(bad)?,
                    upper: c["upper"].as_f64().ok_or_else(bad)?,
                    closed: c["upper_inclusive"].as_bool().unwrap_or(false),
                },
            };
            out.push((attr, m));
        }
        Ok(GroupRule { conditions: out })
    }

    /// Whether `row` is in the group.
    pub fn holds(&self, row: &[f64]) -> bool {
        self.conditions.iter().all(|(a, m)| {
            let v = row[*a];
            match m {
                Membership::OneOf(values) => values.contains(&v),
                Membership::Range { lower, upper, closed } => v >= *lower && (v < *upper || (*closed && v <= *upper)),
            }
        })
    }

    /// The group in original values: "gender = Male ∧ race ∈ {White, Black} ∧ 40 ≤ age < 80".
    pub fn describe(&self, domain: &Domain) -> String {
        self.conditions
            .iter()
            .map(|(attr, m)| {
                let a = &domain.attributes[*attr];
                match m {
                    Membership::OneOf(values) => match values.as_slice() {
                        [one] => format!("{} = {}", a.name, a.decode(*one)),
                        many => format!("{} ∈ {{{}}}", a.name, many.iter().map(|v| a.decode(*v)).collect::<Vec<_>>().join(", ")),
                    },
                    Membership::Range { lower, upper, closed } => {
                        format!("{} ≤ {} {} {}", number(*lower), a.name, if *closed { "≤" } else { "<" }, number(*upper))
                    }
                }
            })
            .collect::<Vec<_>>()
            .join(" ∧ ")
    }
}

/// A number without trailing zeros ("40", "4.5", "33.3333").
pub fn number(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::domain::{Attribute, AttributeKind};
    use serde_json::json;

    #[test]
    fn rules_parse_and_match_as_the_report_writes_them() {
        let rule =
            GroupRule::parse(&json!([{"attribute": 1, "values": [1.0]}, {"attribute": 0, "lower": 10.0, "upper": 20.0}]), 2).unwrap();
        assert!(rule.holds(&[10.0, 1.0]) && !rule.holds(&[20.0, 1.0]) && !rule.holds(&[15.0, 0.0]));
        assert!(GroupRule::parse(&json!([{"attribute": 5, "values": [1.0]}]), 2).is_err());
    }

    /// Two protected attributes: race (categorical Black, White, Other) and age (integer 0..=90).
    pub(crate) fn race_age_domain() -> Domain {
        Domain {
            attributes: vec![
                Attribute::categorical("race", vec!["Black".into(), "White".into(), "Other".into()], true),
                Attribute { name: "age".into(), kind: AttributeKind::Integer, lower: 0.0, upper: 90.0, step: 1.0, protected: true },
            ],
        }
    }

    #[test]
    fn conditions_decode_to_original_values() {
        let d = race_age_domain();
        let describe = |c: Value| GroupRule::parse(&c, 2).unwrap().describe(&d);
        assert_eq!(describe(json!([{"attribute": 0, "values": [1.0]}])), "race = White");
        assert_eq!(describe(json!([{"attribute": 0, "values": [0.0, 2.0]}])), "race ∈ {Black, Other}");
        assert_eq!(describe(json!([{"attribute": 1, "lower": 40.0, "upper": 80.0}])), "40 ≤ age < 80");
        assert_eq!(describe(json!([{"attribute": 1, "lower": 81.0, "upper": 90.0, "upper_inclusive": true}])), "81 ≤ age ≤ 90");
        assert_eq!(
            describe(json!([{"attribute": 0, "values": [1.0]}, {"attribute": 1, "lower": 40.0, "upper": 80.0}])),
            "race = White ∧ 40 ≤ age < 80"
        );
        assert!(GroupRule::parse(&json!([{"attribute": 7, "values": [1.0]}]), 2).is_err());
    }
}
