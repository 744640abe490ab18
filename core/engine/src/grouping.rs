//! Which protected group each row belongs to: one attribute's values as they are (categorical or
//! few-valued attributes) or in equal-width bins (many-valued ones), or an intersection of several
//! attributes; groups named for people ("Female", "30–38", "Female × Black").

use std::collections::BTreeMap;

use fairpipe_abi::domain::Domain;

use crate::group_rule::number;

/// Attributes with more distinct values than this are grouped into this many equal-width bins.
const MAX_LEVELS: usize = 10;

/// How one attribute's values map to groups: as they are, or into equal-width bins.
pub(crate) enum Grouping {
    Values,
    Bins { lower: f64, width: f64, step: f64, integer: bool },
}

impl Grouping {
    pub(crate) fn of(domain: &Domain, rows: &[f64], attr: usize) -> Self {
        let width = domain.width();
        let mut distinct: Vec<u64> = rows.chunks_exact(width).map(|r| r[attr].to_bits()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let a = &domain.attributes[attr];
        if distinct.len() <= MAX_LEVELS || matches!(a.kind, fairpipe_abi::domain::AttributeKind::Categorical { .. }) {
            return Grouping::Values;
        }
        let integer = !matches!(a.kind, fairpipe_abi::domain::AttributeKind::Continuous);
        Grouping::Bins { lower: a.lower, width: (a.upper - a.lower) / MAX_LEVELS as f64, step: a.step, integer }
    }

    /// The group key of value `v` (sortable).
    pub(crate) fn key(&self, v: f64) -> f64 {
        match self {
            Grouping::Values => v,
            Grouping::Bins { lower, width, .. } => (((v - lower) / width).floor()).clamp(0.0, (MAX_LEVELS - 1) as f64),
        }
    }

    /// The group's name.
    pub(crate) fn label(&self, domain: &Domain, attr: usize, key: f64) -> String {
        match self {
            Grouping::Values => domain.attributes[attr].decode(key),
            Grouping::Bins { lower, width, step, integer } => {
                let edge = |i: f64| {
                    let e = lower + width * i;
                    if *integer {
                        lower + ((e - lower) / step).ceil() * step
                    } else {
                        e
                    }
                };
                let (lo, hi) = (edge(key), edge(key + 1.0));
                if key as usize == MAX_LEVELS - 1 {
                    format!("{}–{}", number(lo), number(domain.attributes[attr].upper))
                } else if *integer {
                    format!("{}–{}", number(lo), number(hi - step))
                } else {
                    format!("[{}, {})", number(lo), number(hi))
                }
            }
        }
    }
}

/// The groups of attribute set `attrs` over row-major `rows`: the group index of every row, and
/// each group's name, in sorted key order (values ascending, bins in order).
pub fn assign(domain: &Domain, rows: &[f64], attrs: &[usize]) -> (Vec<usize>, Vec<String>) {
    let width = domain.width();
    let groupings: Vec<Grouping> = attrs.iter().map(|&a| Grouping::of(domain, rows, a)).collect();
    let keys: Vec<Vec<u64>> =
        rows.chunks_exact(width).map(|row| attrs.iter().zip(&groupings).map(|(&a, g)| sortable(g.key(row[a]))).collect()).collect();
    let mut index: BTreeMap<&[u64], usize> = keys.iter().map(|k| (k.as_slice(), 0)).collect();
    for (i, v) in index.values_mut().enumerate() {
        *v = i;
    }
    let names = index
        .keys()
        .map(|key| {
            attrs
                .iter()
                .zip(&groupings)
                .zip(key.iter())
                .map(|((&a, g), &bits)| g.label(domain, a, unsortable(bits)))
                .collect::<Vec<_>>()
                .join(" × ")
        })
        .collect();
    let of_row = keys.iter().map(|k| index[k.as_slice()]).collect();
    (of_row, names)
}

/// `v`'s bits, flipped so that unsigned order is numeric order (negative values too).
fn sortable(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The inverse of [`sortable`].
fn unsortable(b: u64) -> f64 {
    f64::from_bits(if b >> 63 == 1 { b & !(1 << 63) } else { !b })
}

/// The name of attribute set `attrs` ("gender" or "gender × race").
pub fn set_name(domain: &Domain, attrs: &[usize]) -> String {
    attrs.iter().map(|&a| domain.attributes[a].name.as_str()).collect::<Vec<_>>().join(" × ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_rule::tests::race_age_domain;

    #[test]
    fn many_valued_attributes_are_binned() {
        let d = race_age_domain();
        // Ages 0..90: 91 values, grouped into 10 bins of width 9.
        let rows: Vec<f64> = (0..91).flat_map(|i| [0.0, f64::from(i)]).collect();
        let (of_row, names) = assign(&d, &rows, &[1]);
        assert_eq!(names.len(), 10);
        assert_eq!(names[0], "0–8");
        assert_eq!(names[9], "81–90");
        assert_eq!(of_row[0], 0);
        assert_eq!(of_row[90], 9);
    }

    #[test]
    fn intersections_name_both_attributes() {
        let d = race_age_domain();
        let rows = vec![0.0, 30.0, 1.0, 30.0, 0.0, 30.0];
        let (of_row, names) = assign(&d, &rows, &[0, 1]);
        assert_eq!(names, vec!["Black × 30", "White × 30"]);
        assert_eq!(of_row, vec![0, 1, 0]);
    }
}
