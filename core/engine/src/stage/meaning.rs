//! What a stage kind's figures mean to the readers of a run: each kind says it in its own file, by
//! implementing [`StageFigures`] for its figures struct, and its `StageKind`'s
//! [`FigureDoc`](crate::stage::kind::FigureDoc) carries the answers as a [`Meaning`] (collected by
//! `FigureDoc::of::<F>()`). The verdict walks the kinds' meanings instead of matching on kind
//! names, so a new kind's figures reach it with no edit outside the kind's file and the registry.

use serde::de::DeserializeOwned;

use crate::stage::summary::{Figures, StageSummary, Summary};
use crate::stage::verdict::{FlipMeasure, ImpactMeasure, Severity, Thresholds};

/// One stage's entry read in its run: the run's summary, the entry and its name, and what each
/// kind the run knows means (to read the stages it read).
#[derive(Clone, Copy)]
pub struct InRun<'a> {
    /// The run.
    pub summary: &'a Summary,
    /// The stage's name.
    pub name: &'a str,
    /// Its entry.
    pub entry: &'a StageSummary,
    /// The meaning of the kind called so (the registry's `meaning`; [`Meaning::NONE`] for a kind
    /// this build does not know).
    pub meaning_of: fn(&str) -> Meaning,
}

impl<'a> InRun<'a> {
    /// Every stage of `summary`, in order, read in it with the kinds' meanings `meaning_of`.
    pub fn all(summary: &'a Summary, meaning_of: fn(&str) -> Meaning) -> impl Iterator<Item = InRun<'a>> + 'a {
        summary.in_order().map(move |(name, entry)| InRun { summary, name, entry, meaning_of })
    }

    /// Stage `stage` of `summary`, read in it with the kinds' meanings `meaning_of`.
    pub fn named(summary: &'a Summary, stage: &str, meaning_of: fn(&str) -> Meaning) -> Option<InRun<'a>> {
        let (name, entry) = summary.stages.get_key_value(stage)?;
        Some(InRun { summary, name, entry, meaning_of })
    }

    /// The entry of the stage this one read under `role` (`data`, `model`, `cases`), read in the
    /// same run.
    pub fn input(&self, role: &str) -> Option<InRun<'a>> {
        let (name, entry) = self.summary.stages.get_key_value(self.entry.inputs.get(role)?.as_str())?;
        Some(InRun { name: name.as_str(), entry, ..*self })
    }

    /// What this entry's figures mean.
    pub fn meaning(&self) -> Meaning {
        (self.meaning_of)(&self.entry.kind)
    }

    /// The model stage this stage reads, when that model is audited (not a retrained model,
    /// measured only to be compared).
    pub fn audited_model(&self) -> Option<InRun<'a>> {
        self.input("model").filter(|m| m.meaning().audits_its_model)
    }

    /// The protected attributes of the data this (model) stage read.
    pub fn data_protected(&self) -> Vec<String> {
        self.input("data").map(|d| (d.meaning().protected)(d.entry)).unwrap_or_default()
    }

    /// Every stage of the run, in order, read in it.
    pub fn in_order(&self) -> impl Iterator<Item = InRun<'a>> + 'a {
        InRun::all(self.summary, self.meaning_of)
    }

    /// The entry's figures as `F`, if they read as it.
    pub fn figures<F: Figures + DeserializeOwned + Clone>(&self) -> Option<F> {
        self.entry.figures::<F>().ok()
    }
}

/// A measure of flips (decisions that change with protected attributes) one stage made of one
/// audited model.
#[derive(Debug, Clone)]
pub struct Flips {
    /// The audited model stage.
    pub model: String,
    /// The attributes changed (together, when several).
    pub attributes: Vec<String>,
    /// The measure, graded.
    pub measure: FlipMeasure,
}

impl Flips {
    /// The flips `measure` of audited model `model`, on the attributes the stage recorded changing
    /// (`protected`), or, when it recorded none, on its data's protected attributes.
    pub fn new(model: &InRun<'_>, protected: Vec<String>, measure: FlipMeasure) -> Flips {
        let attributes = if protected.is_empty() { model.data_protected() } else { protected };
        Flips { model: model.name.to_string(), attributes, measure }
    }
}

/// The flips a stage measured as a share (a check's real rows, an estimate's inputs drawn from
/// the domain) of its audited model, recorded as `measure`: `flipped` of `of` decisions changed,
/// the share and its 95% interval, graded under `t`; `None` when its model is not audited.
pub fn share_flips(
    at: &InRun<'_>,
    measure: &str,
    protected: &[String],
    (rate, ci95): (f64, [f64; 2]),
    (flipped, of): (u64, u64),
    t: &Thresholds,
) -> Option<Flips> {
    let model = at.audited_model()?;
    let measure = flip_measure(at, measure, Some(rate), Some(ci95), flipped, of, t.grade_flips(rate));
    Some(Flips::new(&model, protected.to_vec(), measure))
}

/// The flip measure of stage `at` recorded as `measure`: `flipped` of `of` decisions changed, the
/// share and its interval where the stage measured one, graded `severity`.
pub fn flip_measure(
    at: &InRun<'_>,
    measure: &str,
    rate: Option<f64>,
    ci95: Option<[f64; 2]>,
    flipped: u64,
    of: u64,
    severity: Severity,
) -> FlipMeasure {
    FlipMeasure { stage: at.name.to_string(), measure: measure.to_string(), rate, ci95, flipped, of, changed_with: Vec::new(), severity }
}

/// A measure of one protected attribute's group rates (its worst impact ratio) one stage made of
/// one audited model (`measure` is `None` where no group could be judged).
#[derive(Debug, Clone)]
pub struct Impact {
    /// The audited model stage (or the stage itself, for decisions recorded in the data).
    pub model: String,
    /// The protected attribute.
    pub attribute: String,
    /// The measure, graded.
    pub measure: Option<ImpactMeasure>,
}

/// One measurement a stage took of a model, for the report's table of the models measured the
/// same way.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The model stage measured.
    pub model: String,
    /// What was measured, the same words for the same measurement of another model.
    pub family: String,
    /// The value, for display.
    pub value: String,
}

/// What a stage kind's figures mean to the verdict; every method has the answer of a kind that
/// measures nothing, so a kind implements only what its figures measure.
pub trait StageFigures: Figures + DeserializeOwned + Clone {
    /// The protected attributes the figures name (a load stage's: its data's).
    fn protected(&self) -> Vec<String> {
        Vec::new()
    }

    /// The favourable label the figures name (a load stage's: its data's), for the model line.
    fn favourable_label(&self) -> Option<String> {
        None
    }

    /// The line the terminal prints under the stage's figures, read in its run (a model stage's:
    /// what runs the model and how its favourable class is read).
    fn model_line(&self, _at: &InRun<'_>) -> Option<String> {
        None
    }

    /// Whether a model stage of this kind gives a model the stages reading it audit (`false`
    /// for a retrained model, measured to be compared with the audited one).
    const AUDITS_ITS_MODEL: bool = true;

    /// The figures the terminal shows on the stage's line after `fairpipe run`, in order, each
    /// as `name value` when the run has it (a unit test holds each to a figure of the kind).
    const HEADLINE: &'static [&'static str] = &[];

    /// Whether the stage makes or loads the model it passes on (its figures then hold the model's
    /// description and accuracy), as opposed to passing on the model it read.
    const MODEL_STAGE: bool = false;

    /// Whether the stage's table holds discriminatory pairs (a row and its counterpart), which the
    /// report shows.
    const WRITES_PAIRS: bool = false;

    /// Whether the cases of a stage of this kind come from a search (so that a `verify` stage
    /// re-checking them measures the search's flips).
    const SEARCH: bool = false;

    /// The flips the stage measured of its audited model, graded under `t`; `None` when it
    /// measures none (or its model is not audited).
    fn flips(&self, _at: &InRun<'_>, _t: &Thresholds) -> Option<Flips> {
        None
    }

    /// How its flip measures rank among others of the same grade in a verdict (lower first:
    /// real rows, then the domain, then a search).
    const FLIP_RANK: u8 = u8::MAX;

    /// Its flip measure `m` in the verdict's words, `what` saying what changes ("sex changes").
    fn flip_words(_m: &FlipMeasure, _what: &str) -> String {
        String::new()
    }

    /// The impact measures the stage made of each protected attribute, graded under `t`.
    fn impacts(&self, _at: &InRun<'_>, _t: &Thresholds) -> Vec<Impact> {
        Vec::new()
    }

    /// The measurement the stage took of its model, for comparing models measured the same way
    /// (`None`: it measures none that compares).
    fn measurement(&self, _at: &InRun<'_>) -> Option<Measurement> {
        None
    }

    /// Where the numbers inside its figure `figure` are when that figure is not a number, and a key
    /// of an example (`("one number per protected attribute …", "sex")`), for a gate condition
    /// that ends at the figure: `None` where the form is not known before the run.
    fn numbers_inside(_figure: &str) -> Option<(&'static str, &'static str)> {
        None
    }

    /// What to do when its impact measure sets a severe or notable verdict, `attribute` the
    /// attribute judged (`None`: the verdict's general advice on group rates).
    fn impact_next_step(_m: &ImpactMeasure, _attribute: &str) -> Option<String> {
        None
    }
}

/// A kind's [`StageFigures`] as function pointers, for its `StageKind` (`FigureDoc::meaning`).
#[derive(Clone, Copy)]
pub struct Meaning {
    /// [`StageFigures::protected`] of an entry.
    pub protected: fn(&StageSummary) -> Vec<String>,
    /// [`StageFigures::favourable_label`] of an entry.
    pub favourable_label: fn(&StageSummary) -> Option<String>,
    /// [`StageFigures::model_line`] of an entry.
    pub model_line: fn(&InRun<'_>) -> Option<String>,
    /// [`StageFigures::HEADLINE`].
    pub headline: &'static [&'static str],
    /// [`StageFigures::AUDITS_ITS_MODEL`].
    pub audits_its_model: bool,
    /// [`StageFigures::SEARCH`].
    pub search: bool,
    /// [`StageFigures::WRITES_PAIRS`].
    pub writes_pairs: bool,
    /// [`StageFigures::MODEL_STAGE`].
    pub model_stage: bool,
    /// [`StageFigures::flips`] of an entry.
    pub flips: fn(&InRun<'_>, &Thresholds) -> Option<Flips>,
    /// [`StageFigures::FLIP_RANK`].
    pub flip_rank: u8,
    /// [`StageFigures::flip_words`].
    pub flip_words: fn(&FlipMeasure, &str) -> String,
    /// [`StageFigures::impacts`] of an entry.
    pub impacts: fn(&InRun<'_>, &Thresholds) -> Vec<Impact>,
    /// [`StageFigures::impact_next_step`].
    pub impact_next_step: fn(&ImpactMeasure, &str) -> Option<String>,
    /// [`StageFigures::measurement`] of an entry.
    pub measurement: fn(&InRun<'_>) -> Option<Measurement>,
    /// [`StageFigures::numbers_inside`].
    pub numbers_inside: fn(&str) -> Option<(&'static str, &'static str)>,
}

impl Meaning {
    /// The meaning of figures that measure nothing (a kind this build does not know).
    pub const NONE: Meaning = Meaning {
        protected: |_| Vec::new(),
        favourable_label: |_| None,
        model_line: |_| None,
        headline: &[],
        audits_its_model: true,
        search: false,
        writes_pairs: false,
        model_stage: false,
        flips: |_, _| None,
        flip_rank: u8::MAX,
        flip_words: |_, _| String::new(),
        impacts: |_, _| Vec::new(),
        impact_next_step: |_, _| None,
        measurement: |_| None,
        numbers_inside: |_| None,
    };

    /// The meaning of a kind whose figures struct is `F`.
    pub const fn of<F: StageFigures>() -> Meaning {
        Meaning {
            protected: protected_of::<F>,
            favourable_label: favourable_label_of::<F>,
            model_line: model_line_of::<F>,
            headline: F::HEADLINE,
            audits_its_model: F::AUDITS_ITS_MODEL,
            search: F::SEARCH,
            writes_pairs: F::WRITES_PAIRS,
            model_stage: F::MODEL_STAGE,
            flips: flips_of::<F>,
            flip_rank: F::FLIP_RANK,
            flip_words: F::flip_words,
            impacts: impacts_of::<F>,
            impact_next_step: F::impact_next_step,
            measurement: measurement_of::<F>,
            numbers_inside: F::numbers_inside,
        }
    }
}

fn protected_of<F: StageFigures>(entry: &StageSummary) -> Vec<String> {
    entry.figures::<F>().map(|f| f.protected()).unwrap_or_default()
}

fn favourable_label_of<F: StageFigures>(entry: &StageSummary) -> Option<String> {
    entry.figures::<F>().ok()?.favourable_label()
}

fn model_line_of<F: StageFigures>(at: &InRun<'_>) -> Option<String> {
    at.figures::<F>()?.model_line(at)
}

fn measurement_of<F: StageFigures>(at: &InRun<'_>) -> Option<Measurement> {
    at.figures::<F>()?.measurement(at)
}

fn flips_of<F: StageFigures>(at: &InRun<'_>, t: &Thresholds) -> Option<Flips> {
    at.figures::<F>()?.flips(at, t)
}

fn impacts_of<F: StageFigures>(at: &InRun<'_>, t: &Thresholds) -> Vec<Impact> {
    at.figures::<F>().map(|f| f.impacts(at, t)).unwrap_or_default()
}
