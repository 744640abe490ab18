//! `coin` (tests only): a stage kind that lives in this file and one line of the registry, to
//! show that a new kind reaches every reader of a run through its [`StageFigures`] alone — the
//! verdict, the terminal's stage line, the report, a gate on its figure and a sweep's comparison
//! — with no edit to any of them (issue 59). It measures something real: each test row of its
//! model's data with its first protected attribute moved to the next value of its grid, and the
//! rows whose predicted label changes ("coins that land the other way").

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::estimate::MODEL_INPUT;
use crate::data::Split;
use crate::error::{Error, Result};
use crate::stage::config::{configure, fields_of, read_debug, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::{flip_measure, Flips, InRun, StageFigures};
use crate::stage::summary::StageSummary;
use crate::stage::{Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};
use crate::verdict::{FlipMeasure, Thresholds};

/// The `coin` stage kind.
pub const KIND: StageKind = StageKind {
    name: "coin",
    doc: "Tests only: each test row with its first protected attribute moved to the next value; the rows whose predicted label changes.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Model,
    keys: CoinConfig::keys,
    tag: None,
    example: "[stages.coins]\nkind = \"coin\"\nmodel = \"model\"",
    configure: configure::<CoinConfig>,
    fields: fields_of::<CoinConfig>,
    read: read_debug::<CoinConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc { compared: &["rate"], compare: compare_figures, ..FigureDoc::of::<CoinFigures>() },
};

/// The figure a sweep compares a `coin` stage on.
fn compare_figures(entry: &StageSummary) -> Vec<serde_json::Value> {
    compare_as::<CoinFigures>(entry, 1, |f| vec![serde_json::Value::from(f.rate)])
}

/// The `coin` stage's config: nothing to set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct CoinConfig {}

impl StageConfig for CoinConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of a `coin` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct CoinFigures {
    /// The attribute moved.
    pub attribute: String,
    /// Rows whose predicted label changed.
    pub flipped: u64,
    /// Rows tossed.
    pub of: u64,
    /// flipped / of.
    pub rate: f64,
}

impl StageFigures for CoinFigures {
    const HEADLINE: &'static [&'static str] = &["flipped", "of"];
    const FLIP_RANK: u8 = 0;

    fn flips(&self, at: &InRun<'_>, t: &Thresholds) -> Option<Flips> {
        let model = at.audited_model()?;
        let measure =
            flip_measure(at, "coins", Some(self.rate), Some([self.rate, self.rate]), self.flipped, self.of, t.grade_flips(self.rate));
        Some(Flips::new(&model, vec![self.attribute.clone()], measure))
    }

    fn flip_words(m: &FlipMeasure, what: &str) -> String {
        format!("{} coins of {} land the other way when {what} (coin `{}`)", m.flipped, m.of, m.stage)
    }
}

impl Stage for CoinConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let data = &model.data;
        let domain = &data.domain;
        let &attribute = domain.protected_indices().first().ok_or_else(|| Error::Invalid("the data has no protected attribute".into()))?;
        let grid = domain.attributes[attribute].grid();
        let rows = data.rows_in(Split::Test);
        let x: Vec<f64> = rows.iter().flat_map(|&r| data.x.row(r).to_vec()).collect();
        let mut moved = x.clone();
        for row in moved.chunks_mut(domain.width()) {
            let at = grid.iter().position(|&v| v == row[attribute]).unwrap_or(0);
            row[attribute] = grid[(at + 1) % grid.len()];
        }
        let before = model.oracle.rows();
        let (p, q) = (model.oracle.predict_proba(&x)?, model.oracle.predict_proba(&moved)?);
        let flipped = p.iter().zip(&q).filter(|(a, b)| (**a > 0.5) != (**b > 0.5)).count() as u64;
        let of = rows.len() as u64;
        let figures =
            CoinFigures { attribute: domain.attributes[attribute].name.clone(), flipped, of, rate: flipped as f64 / of.max(1) as f64 };
        Ok(StageOutput {
            artifact: Artifact::Model(Arc::clone(&model)),
            figures: Arc::new(figures),
            tables: Vec::new(),
            model_queries: model.oracle.rows() - before,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::sweep::summary::SweepSummary;
    use crate::sweep::Sweep;

    /// The bundled census pipeline's data and model, a `coin` stage reading the model, a gate on
    /// its figure and (`matrix`) a sweep over two seeds.
    fn pipeline(dir: &Path, matrix: bool) -> std::path::PathBuf {
        let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/../../pipelines");
        let mut text = format!(
            "[pipeline]\nname = \"coins\"\nseed = 7\n\n[stages.data]\nkind = \"load\"\npath = \"{bundled}/data/census.csv\"\n\
             label = \"income\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\
             codes = \"{bundled}/data/census.codes.toml\"\nfavourable = \">50K\"\n\n\
             [stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{bundled}/models/census.onnx\"\n\n\
             [stages.coins]\nkind = \"coin\"\nmodel = \"model\"\n\n[gate]\nconditions = [\"coins.rate <= 0.5\"]\n"
        );
        if matrix {
            text.push_str("\n[matrix]\n\"pipeline.seed\" = [1, 2]\n");
        }
        let file = dir.join(if matrix { "sweep.toml" } else { "run.toml" });
        std::fs::write(&file, text).unwrap();
        file
    }

    /// A kind added in this file and one registry line reaches the verdict, the terminal's stage
    /// line, the report, a gate and a sweep, none of which names it.
    #[test]
    fn a_new_kind_reaches_the_verdict_the_stage_line_the_report_the_gate_and_the_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let sweep = Sweep::load(&pipeline(dir.path(), false), None, Vec::new(), None).expect("the pipeline validates");
        let report = sweep.run(&dir.path().join("out"), 1, false).expect("the pipeline runs");
        let SweepSummary::Run(run) = &report.summary else { panic!("a plain run") };
        let coins = &run.stages["coins"];
        let figures = coins.figures::<super::CoinFigures>().unwrap();
        let rows_test = run.stages["data"].figures.to_map()["rows_test"].as_u64();
        assert_eq!(Some(figures.of), rows_test, "{figures:?}"); // every test row, tossed once
        assert!(figures.flipped > 0 && figures.flipped < figures.of, "{figures:?}");
        // The verdict grades gender by the coins, in the kind's words.
        let verdicts = run.verdicts.as_ref().expect("verdicts");
        let gender = verdicts.attributes.iter().find(|a| a.attribute == "gender").expect("a verdict on gender");
        let words = format!("{} coins of {} land the other way when gender changes (coin `coins`)", figures.flipped, figures.of);
        assert!(gender.line.contains(&words), "{}", gender.line);
        // The stage's line in the terminal shows its headline figures.
        let line = crate::stage_lines::headline(coins);
        assert_eq!(line, vec![format!("flipped {}", figures.flipped), format!("of {}", figures.of)]);
        // The gate reads its figure by name.
        let gate = run.gate.as_ref().expect("a gate");
        assert_eq!(gate.conditions[0].value, Some(figures.rate));
        assert_eq!(gate.passed, figures.rate <= 0.5);
        // The report shows the stage and the verdict's words.
        let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
        assert!(html.contains(&words) && html.contains("coins"), "the report lacks the coins");
        // A sweep compares each combination on the kind's compared figure.
        let sweep = Sweep::load(&pipeline(dir.path(), true), None, Vec::new(), None).expect("the sweep validates");
        let report = sweep.run(&dir.path().join("sweep"), 1, false).expect("the sweep runs");
        let SweepSummary::Matrix(matrix) = &report.summary else { panic!("a sweep") };
        assert_eq!(matrix.combinations.len(), 2);
        for c in &matrix.combinations {
            assert_eq!(c.figures["coins.rate"].as_f64(), Some(figures.rate), "{c:?}");
            // no randomness: the same rate at any seed
        }
    }
}
