//! The comparison across a sweep's combinations: per combination its matrix values and key
//! figures — accuracy, estimated rate with its interval, IDIs per search, worst impact ratio,
//! worst group score, gate verdict — as `matrix.csv`, `matrix.json`, a section of the sweep's
//! `report.html`, and the best combination by a chosen figure.

use serde_json::{Map, Value};

use crate::stage::summary::Summary;

/// How the best combination is chosen: `"min STAGE.FIGURE"` or `"max STAGE.FIGURE"`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Best {
    /// `true`: the highest value is best.
    pub highest: bool,
    /// The comparison column, e.g. `estimate.rate`.
    pub column: String,
}

/// A `best` that is not `min STAGE.FIGURE` or `max STAGE.FIGURE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected `min STAGE.FIGURE` or `max STAGE.FIGURE`, e.g. \"min estimate.rate\"")]
pub struct BestError(pub String);

impl std::str::FromStr for Best {
    type Err = BestError;
    fn from_str(s: &str) -> Result<Self, BestError> {
        let mut words = s.split_whitespace();
        let (order, column) = (words.next(), words.next());
        let highest = match order {
            Some("max") => true,
            Some("min") => false,
            _ => return Err(BestError(s.to_string())),
        };
        match (column, words.next()) {
            (Some(c), None) if c.contains('.') => Ok(Best { highest, column: c.to_string() }),
            _ => Err(BestError(s.to_string())),
        }
    }
}

impl std::fmt::Display for Best {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", if self.highest { "max" } else { "min" }, self.column)
    }
}

/// The figures a sweep compares a stage kind on (declared by the kind: `FigureDoc::compared`).
pub fn figures_of_kind(kind: &str) -> &'static [&'static str] {
    crate::run::registry::find(kind).map(|k| k.figures.compared).unwrap_or(&[])
}

/// One combination's row: name, seed, matrix values and figures by column.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The combination's folder name (its unit id).
    pub name: String,
    /// Matrix key → value.
    pub values: Map<String, Value>,
    /// Its run's seed.
    pub seed: Value,
    /// Column (`STAGE.FIGURE`, `gate.passed`) → value.
    pub figures: Vec<(String, Value)>,
}

impl Row {
    /// The row of combination `name` with matrix `values`, from its run's `summary.json`.
    pub fn from_summary(name: &str, values: Map<String, Value>, summary: &Summary) -> Row {
        let mut figures = Vec::new();
        for (stage, entry) in summary.in_order() {
            let Some(kind) = crate::run::registry::find(&entry.kind) else { continue };
            let doc = &kind.figures;
            let read = (doc.compare)(entry);
            for (k, fig) in doc.compared.iter().enumerate() {
                figures.push((format!("{stage}.{fig}"), read.get(k).cloned().unwrap_or(Value::Null)));
            }
        }
        if let Some(gate) = &summary.gate {
            figures.push(("gate.passed".into(), Value::Bool(gate.passed)));
        }
        Row { name: name.to_string(), values, seed: Value::from(summary.seed), figures }
    }

    /// The value of `column` (`null` when the row lacks it).
    pub fn get(&self, column: &str) -> Option<&Value> {
        self.figures.iter().find(|(c, _)| c == column).map(|(_, v)| v)
    }
}

/// The comparison: its rows in combination order, the figure columns, and the best row.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Matrix keys, in file order.
    pub keys: Vec<String>,
    /// Figure columns, in first-seen order.
    pub columns: Vec<String>,
    /// One row per combination.
    pub rows: Vec<Row>,
    /// How the best row is chosen, if asked.
    pub best: Option<Best>,
    /// The best row's name (`None` when not asked or when no row has the figure).
    pub best_row: Option<String>,
}

impl Comparison {
    /// Compare `rows` (in combination order) by `best`.
    pub fn new(keys: Vec<String>, rows: Vec<Row>, best: Option<Best>) -> Comparison {
        let mut columns: Vec<String> = Vec::new();
        for r in &rows {
            for (c, _) in &r.figures {
                if !columns.contains(c) {
                    columns.push(c.clone());
                }
            }
        }
        let best_row = best.as_ref().and_then(|b| {
            let key = |r: &&Row| r.get(&b.column).and_then(|v| v.as_f64().or_else(|| v.as_bool().map(f64::from)));
            let scored: Vec<(&Row, f64)> = rows.iter().filter_map(|r| key(&r).filter(|x| x.is_finite()).map(|x| (r, x))).collect();
            // The first row wins a tie (combination order).
            scored
                .iter()
                .copied()
                .reduce(|a, c| if (b.highest && c.1 > a.1) || (!b.highest && c.1 < a.1) { c } else { a })
                .map(|(r, _)| r.name.clone())
        });
        Comparison { keys, columns, rows, best, best_row }
    }

    /// `matrix.csv`: `combination`, `seed`, one column per matrix key (values as JSON text), then
    /// the figure columns.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<String> = ["combination".to_string(), "seed".into()]
            .into_iter()
            .chain(self.keys.iter().cloned())
            .chain(self.columns.iter().cloned())
            .collect();
        out.push_str(&header.iter().map(|h| csv_field(h)).collect::<Vec<_>>().join(","));
        out.push('\n');
        for r in &self.rows {
            let mut cells = vec![csv_field(&r.name), cell(&r.seed)];
            for k in &self.keys {
                cells.push(csv_field(&match r.values.get(k) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                }));
            }
            for c in &self.columns {
                cells.push(r.get(c).map(cell).unwrap_or_default());
            }
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// The comparison for the sweep page's template (`sweep.html`): the chosen figure and the
    /// best row, the column headers, and the rows ordered best first when a figure is chosen (else
    /// in combination order), each with its cells as displayed and whether it is the best.
    pub fn page_context(&self) -> minijinja::Value {
        let rows: Vec<minijinja::Value> = self
            .ordered()
            .into_iter()
            .map(|r| {
                let mut cells: Vec<String> = self
                    .keys
                    .iter()
                    .map(|k| r.values.get(k).map(|v| if let Value::String(s) = v { s.clone() } else { v.to_string() }).unwrap_or_default())
                    .collect();
                cells.extend(self.columns.iter().map(|c| r.get(c).map(display).unwrap_or_else(|| "—".into())));
                minijinja::context! {
                    name => r.name.as_str(),
                    seed => cell(&r.seed),
                    best => self.best_row.as_deref() == Some(r.name.as_str()),
                    cells => cells,
                }
            })
            .collect();
        minijinja::context! {
            best => self.best.as_ref().map(|b| b.to_string()),
            best_row => self.best_row.as_deref().unwrap_or("— (no combination has this figure)"),
            headers => self.keys.iter().chain(&self.columns).collect::<Vec<_>>(),
            rows => rows,
        }
    }

    /// Rows best first by the chosen figure (rows without it last), else in combination order.
    pub fn ordered(&self) -> Vec<&Row> {
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        if let Some(b) = &self.best {
            let key = |r: &Row| r.get(&b.column).and_then(|v| v.as_f64().or_else(|| v.as_bool().map(f64::from))).filter(|x| x.is_finite());
            rows.sort_by(|x, y| match (key(x), key(y)) {
                (Some(a), Some(c)) => {
                    let o = a.total_cmp(&c);
                    if b.highest {
                        o.reverse()
                    } else {
                        o
                    }
                }
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            });
        }
        rows
    }
}

/// A JSON figure as a CSV cell (`null`: empty).
fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => csv_field(s),
        other => other.to_string(),
    }
}

/// A figure for the HTML table: four decimals for fractions.
fn display(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => format!("{:.4}", n.as_f64().unwrap_or(f64::NAN)),
        Value::Null => "—".into(),
        Value::Bool(true) => "passed".into(),
        Value::Bool(false) => "FAILED".into(),
        other => other.to_string(),
    }
}

/// Quote a CSV field when it needs it.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: &str, figures: std::sync::Arc<dyn crate::stage::summary::Figures>) -> crate::stage::summary::StageSummary {
        crate::stage::summary::StageSummary {
            kind: kind.into(),
            elapsed_s: 0.1,
            model_queries: 0,
            inputs: Default::default(),
            warnings: Vec::new(),
            remote: None,
            figures,
        }
    }

    /// A run with a loaded model (test accuracy 0.8) and an estimate of `rate` (NaN: undefined).
    fn row(name: &str, rate: f64) -> Row {
        use crate::stages::estimate::EstimateFigures;
        use crate::stages::load_model::LoadModelFigures;
        let mut model = LoadModelFigures::default();
        model.model.accuracy_test = 0.8;
        let estimate = EstimateFigures {
            rate,
            ci95: [0.01, 0.03],
            ci95_independent: None,
            clusters: None,
            design_effect: None,
            ci95_wilson: [0.01, 0.03],
            samples: 100,
            trials: 2,
            per_trial: 50,
            discriminatory: 2,
            variants_per_input: 1,
            protected: vec!["sex".into()],
            discriminatory_alone: Default::default(),
            rate_alone: Default::default(),
            logit_shift: Vec::new(),
            score_shift: Vec::new(),
            hidden_intersectional: None,
            rate_hidden_intersectional: None,
            ci95_hidden_intersectional: None,
            precision: None,
        };
        let summary = Summary {
            pipeline: "p".into(),
            file: None,
            seed: 1,
            fairpipe_version: String::new(),
            stage_order: vec!["model".into(), "est".into()],
            stages: [
                ("model".to_string(), entry("load_model", std::sync::Arc::new(model))),
                ("est".to_string(), entry("estimate", std::sync::Arc::new(estimate))),
            ]
            .into(),
            warnings: Vec::new(),
            gate: None,
            verdicts: None,
            trail: None,
        };
        // Read back from its JSON too (as a merge does): the same row.
        let from_file = Summary::from_json(&summary.to_json()).unwrap();
        assert_eq!(Row::from_summary(name, Map::new(), &from_file), Row::from_summary(name, Map::new(), &summary));
        Row::from_summary(name, Map::new(), &summary)
    }

    #[test]
    fn the_lowest_rate_is_best_and_a_missing_figure_never_wins() {
        let rows = vec![row("a", 0.02), row("b", f64::NAN), row("c", 0.01), row("d", 0.01)];
        let c = Comparison::new(vec![], rows, Some("min est.rate".parse().unwrap()));
        assert_eq!(c.best_row.as_deref(), Some("c"), "first of the tied lowest");
        assert_eq!(c.ordered().iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["c", "d", "a", "b"]);
        assert_eq!(c.columns, ["model.accuracy_test", "est.rate", "est.ci95_low", "est.ci95_high"]);
        let csv = c.to_csv();
        assert_eq!(csv.lines().nth(2), Some("b,1,0.8,,0.01,0.03"));
    }
}
