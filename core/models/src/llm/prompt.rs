//! Rows into prompts: a minijinja template sees each feature by its column name with its decoded
//! value (a category's name, not its code; a number as a number), every feature again under
//! `row["column name"]` (for names that are not identifiers), and, when the pipeline gives a
//! `names` table, `name` (and `names.COLUMN`): a first name for the row's protected value, chosen
//! from the list by a fixed hash of the row's unprotected values, so the two sides of a pair
//! differ only in the protected value and its name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fairpipe_abi::domain::{AttributeKind, Domain};
use minijinja::{Environment, UndefinedBehavior, Value};

use super::error::LlmError;

/// A template bound to a domain.
pub struct Renderer {
    env: Environment<'static>,
    path: PathBuf,
    domain: Domain,
    /// Per attribute index (protected, with a names table): value name → first names.
    names: Vec<(usize, BTreeMap<String, Vec<String>>)>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Renderer({})", self.path.display())
    }
}

/// The decoded value of `value` in column `index`: the category's name, or the number.
pub fn decoded(domain: &Domain, index: usize, value: f64) -> Value {
    let attribute = &domain.attributes[index];
    match &attribute.kind {
        AttributeKind::Categorical { levels } => {
            let at = (value - attribute.lower).round();
            match levels.get(at as usize).filter(|_| at >= 0.0) {
                Some(level) => Value::from(level.as_str()),
                None => Value::from(value),
            }
        }
        AttributeKind::Integer if value.fract() == 0.0 && value.abs() < 9.0e15 => Value::from(value as i64),
        _ => Value::from(value),
    }
}

/// The text a `names` table keys a value by: the category's name, or the number as written.
fn value_key(domain: &Domain, index: usize, value: f64) -> String {
    decoded(domain, index, value).to_string()
}

impl Renderer {
    /// Read the template at `path` (`shown` is how messages name it) for rows of `domain`, with
    /// the `names` table checked against the domain's protected columns and their values.
    pub fn load(
        path: &Path,
        shown: &str,
        domain: &Domain,
        names: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
    ) -> Result<Renderer, LlmError> {
        let source =
            std::fs::read_to_string(path).map_err(|e| LlmError::TemplateUnreadable { shown: shown.to_string(), message: e.to_string() })?;
        Self::from_source(source, path, domain, names)
    }

    /// A template given as text (`path` names it in messages).
    pub fn from_source(
        source: String,
        path: &Path,
        domain: &Domain,
        names: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
    ) -> Result<Renderer, LlmError> {
        let shown = path.display().to_string();
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.add_template_owned("prompt", source).map_err(|e| LlmError::Template { shown, message: e.to_string() })?;
        let mut tables = Vec::new();
        for (column, table) in names {
            let Some(index) = domain.attributes.iter().position(|a| &a.name == column) else {
                let known: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
                return Err(LlmError::NamesUnknownColumn { column: column.clone(), features: known.join(", ") });
            };
            if !domain.attributes[index].protected {
                return Err(LlmError::NamesUnprotected { column: column.clone() });
            }
            let values = protected_values(domain, index);
            for value in &values {
                match table.get(value) {
                    None => {
                        return Err(LlmError::NamesMissingValue { column: column.clone(), value: value.clone(), values: values.join(", ") })
                    }
                    Some(list) if list.is_empty() => return Err(LlmError::NamesEmpty { column: column.clone(), value: value.clone() }),
                    Some(_) => {}
                }
            }
            if let Some(extra) = table.keys().find(|k| !values.contains(k)) {
                return Err(LlmError::NamesExtraValue { column: column.clone(), extra: extra.clone(), values: values.join(", ") });
            }
            tables.push((index, table.clone()));
        }
        let renderer = Renderer { env, path: path.to_path_buf(), domain: domain.clone(), names: tables };
        Ok(renderer)
    }

    /// The prompt of one encoded row.
    pub fn render(&self, row: &[f64]) -> Result<String, LlmError> {
        self.render_context(self.context(row))
    }

    /// The prompt of a pairwise choice between two encoded rows (two candidates): the template
    /// sees the first row's values at the top, as [`Renderer::render`] gives them (the document
    /// both candidates share), and each candidate's under `first` and `second` (`first.name`,
    /// `second.sex`, …). The two rows differ in protected values only, so they share the names'
    /// position in each list.
    pub fn render_pair(&self, first: &[f64], second: &[f64]) -> Result<String, LlmError> {
        let mut context = self.context(first);
        context.insert("first".into(), self.context(first).into_iter().collect::<Value>());
        context.insert("second".into(), self.context(second).into_iter().collect::<Value>());
        self.render_context(context)
    }

    /// Refuse a pair template that does not say which candidate is which: for `first` and
    /// `second`, the prompt with the two swapped must differ.
    pub fn check_pair_said(&self, first: &[f64], second: &[f64]) -> Result<(), LlmError> {
        if self.render_pair(first, second)? == self.render_pair(second, first)? {
            return Err(LlmError::PairUnsaid { shown: self.path.display().to_string() });
        }
        Ok(())
    }

    /// The prompt of a choice among several candidates (encoded rows that differ in protected
    /// values only), listed in the order given: the template sees the first row's values at the
    /// top (the document they share) and `candidates`, each candidate's values with its `label`
    /// (`{% for c in candidates %}{{ c.label }}: {{ c.name }}{% endfor %}`). Candidate `i` takes
    /// the names at `offsets[i]` places after the row's own in each list, so that candidates of
    /// one protected value show different names.
    pub fn render_candidates(&self, rows: &[&[f64]], offsets: &[usize], labels: &[String]) -> Result<String, LlmError> {
        let mut context = self.context(rows[0]);
        let candidates: Vec<Value> = rows
            .iter()
            .zip(offsets)
            .zip(labels)
            .map(|((row, &offset), label)| {
                let mut candidate = self.context_at(row, offset);
                candidate.insert("label".into(), Value::from(label.as_str()));
                candidate.into_iter().collect::<Value>()
            })
            .collect();
        context.insert("candidates".into(), Value::from(candidates));
        self.render_context(context)
    }

    fn render_context(&self, context: BTreeMap<String, Value>) -> Result<String, LlmError> {
        let fail = |e: minijinja::Error| LlmError::Template { shown: self.path.display().to_string(), message: e.to_string() };
        let template = self.env.get_template("prompt").map_err(fail)?;
        template.render(context.into_iter().collect::<Value>()).map(|s| s.trim().to_string()).map_err(fail)
    }

    /// What the template sees of one row: each column, `row`, and the names.
    fn context(&self, row: &[f64]) -> BTreeMap<String, Value> {
        self.context_at(row, 0)
    }

    /// [`Renderer::context`] with the names `offset` places after the row's own in each list.
    fn context_at(&self, row: &[f64], offset: usize) -> BTreeMap<String, Value> {
        let mut context: BTreeMap<String, Value> = BTreeMap::new();
        let mut by_column: BTreeMap<String, Value> = BTreeMap::new();
        for (i, attribute) in self.domain.attributes.iter().enumerate() {
            let value = decoded(&self.domain, i, row[i]);
            context.insert(attribute.name.clone(), value.clone());
            by_column.insert(attribute.name.clone(), value);
        }
        context.insert("row".into(), by_column.into_iter().collect::<Value>());
        if !self.names.is_empty() {
            let mut chosen: BTreeMap<String, Value> = BTreeMap::new();
            for ((index, _), name) in self.names.iter().zip(self.names_shown_at(row, offset)) {
                chosen.insert(self.domain.attributes[*index].name.clone(), Value::from(name.as_str()));
                if !context.contains_key("name") {
                    context.insert("name".into(), Value::from(name.as_str()));
                }
            }
            context.insert("names".into(), chosen.into_iter().collect::<Value>());
        }
        context
    }

    /// Whether the prompts show first names (the pipeline gave a `names` table).
    pub fn shows_names(&self) -> bool {
        !self.names.is_empty()
    }

    /// The first names the prompt of encoded `row` shows, one per protected attribute with a
    /// `names` table (in the table's column order; empty without a table): what pairs of rows
    /// share when they are clustered by name.
    pub fn names_shown(&self, row: &[f64]) -> Vec<String> {
        self.names_shown_at(row, 0)
    }

    /// [`Renderer::names_shown`], each name `offset` places further on in its list (wrapping).
    fn names_shown_at(&self, row: &[f64], offset: usize) -> Vec<String> {
        let pick = self.name_hash(row);
        self.names
            .iter()
            .map(|(index, table)| {
                let list = &table[&value_key(&self.domain, *index, row[*index])];
                list[((pick % list.len() as u64) as usize + offset) % list.len()].clone()
            })
            .collect()
    }

    /// A fixed hash (XXH3-64) of the row's unprotected values: the same for both sides of a pair.
    fn name_hash(&self, row: &[f64]) -> u64 {
        let mut bytes = Vec::with_capacity(row.len() * 8);
        for (i, attribute) in self.domain.attributes.iter().enumerate() {
            if !attribute.protected {
                bytes.extend_from_slice(&row[i].to_le_bytes());
            }
        }
        xxhash_rust::xxh3::xxh3_64(&bytes)
    }

    /// Refuse a template that says nothing about a protected column: for `row`, every other value
    /// of each protected column must change the prompt.
    pub fn check_protected_said(&self, row: &[f64]) -> Result<(), LlmError> {
        let base = self.render(row)?;
        for index in self.domain.protected_indices() {
            let attribute = &self.domain.attributes[index];
            let mut other = row.to_vec();
            for v in attribute.grid() {
                if v != row[index] {
                    other[index] = v;
                    if self.render(&other)? == base {
                        return Err(LlmError::ProtectedUnsaid {
                            shown: self.path.display().to_string(),
                            column: attribute.name.clone(),
                            other: decoded(&self.domain, index, v).to_string(),
                            value: decoded(&self.domain, index, row[index]).to_string(),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// The values a protected column takes, as a `names` table keys them.
fn protected_values(domain: &Domain, index: usize) -> Vec<String> {
    domain.attributes[index].grid().into_iter().map(|v| value_key(domain, index, v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairpipe_abi::domain::Attribute;

    fn domain() -> Domain {
        let sex = Attribute::categorical("sex", vec!["Female".into(), "Male".into()], true);
        Domain { attributes: vec![Attribute::integer("income", 0.0, 9.0, false), sex] }
    }

    #[test]
    fn rows_render_with_decoded_values_and_names_differ_only_by_the_protected_value() {
        let names: BTreeMap<String, BTreeMap<String, Vec<String>>> = [(
            "sex".to_string(),
            [("Female".to_string(), vec!["Anna".into(), "Maria".into()]), ("Male".to_string(), vec!["John".into(), "Peter".into()])]
                .into_iter()
                .collect(),
        )]
        .into_iter()
        .collect();
        let template = "{{ name }} earns {{ income }}; {{ row['sex'] }}".to_string();
        let r = Renderer::from_source(template, Path::new("t.j2"), &domain(), &names).unwrap();
        let f = r.render(&[3.0, 0.0]).unwrap();
        let m = r.render(&[3.0, 1.0]).unwrap();
        assert!(f.ends_with("earns 3; Female"), "{f}");
        assert!(m.ends_with("earns 3; Male"), "{m}");
        // The same position in each list: the pair differs in the name's list only.
        let fi = ["Anna", "Maria"].iter().position(|n| f.starts_with(n)).unwrap();
        let mi = ["John", "Peter"].iter().position(|n| m.starts_with(n)).unwrap();
        assert_eq!(fi, mi);
        r.check_protected_said(&[3.0, 0.0]).unwrap();
        let silent = Renderer::from_source("earns {{ income }}".into(), Path::new("t.j2"), &domain(), &BTreeMap::new()).unwrap();
        assert!(silent.check_protected_said(&[3.0, 0.0]).unwrap_err().to_string().contains("sex is Male instead of Female"));
        // A pair: the shared document at the top, each candidate under `first` and `second`.
        let pair = Renderer::from_source(
            "A: {{ first.name }} ({{ first.sex }}); B: {{ second.name }} ({{ second.sex }}); earns {{ income }}".into(),
            Path::new("pair.j2"),
            &domain(),
            &names,
        )
        .unwrap();
        let both = pair.render_pair(&[3.0, 0.0], &[3.0, 1.0]).unwrap();
        assert_eq!(both, format!("A: {} (Female); B: {} (Male); earns 3", ["Anna", "Maria"][fi], ["John", "Peter"][fi]));
        pair.check_pair_said(&[3.0, 0.0], &[3.0, 1.0]).unwrap();
        let blind = Renderer::from_source("earns {{ income }}".into(), Path::new("pair.j2"), &domain(), &names).unwrap();
        assert!(blind.check_pair_said(&[3.0, 0.0], &[3.0, 1.0]).unwrap_err().to_string().contains("pair.j2"));
        let typo = Renderer::from_source("{{ incom }}".into(), Path::new("t.j2"), &domain(), &BTreeMap::new()).unwrap();
        assert!(typo.render(&[3.0, 0.0]).unwrap_err().to_string().contains("t.j2"));
    }
}
