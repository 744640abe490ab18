//! The report's charts as geometry: where each bar, whisker, tick and line goes, computed here and
//! drawn as inline SVG by the `charts.html` template's macros.
//!
//! Every chart has an axis with ticks and a title. Bars are drawn on a fixed axis given by the
//! caller (0–100% for rates and shares, so a 0.66% estimate is a sliver, not most of the width);
//! a value beyond the axis is clipped and marked. Reference lines (the reference group's rate,
//! the 0.8 and 1.25 bounds of a ratio) are drawn across the plot with their label above it, and
//! legends are HTML under the chart, so nothing covers the data.

use serde::Serialize;

/// What a bar's colour says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// Fails its rule (and the difference is significant where there is a test).
    Fail,
    /// Fails its rule but the difference is not significant, or a measure that is not zero.
    Warn,
    /// Within its rule.
    Pass,
    /// Not judged: the reference group, or a group too small to test.
    Neutral,
    /// A measurement without a rule.
    Plain,
}

/// How the axis' tick labels read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    /// A share from 0 to 1, labelled as a percentage.
    Percent,
    /// A plain number with as many decimals as the ticks' step needs.
    Auto,
}

impl Scale {
    /// The label of a tick at `v` on an axis ticked every `step`.
    fn tick(self, v: f64, step: f64) -> String {
        match self {
            Scale::Auto => {
                let decimals = if step > 0.0 { (-(step.log10().floor())).max(0.0) as usize } else { 0 };
                format!("{v:.decimals$}")
            }
            other => other.label(v),
        }
    }

    fn label(self, v: f64) -> String {
        match self {
            Scale::Auto => format!("{v}"),
            Scale::Percent => {
                let p = 100.0 * v;
                if (p - p.round()).abs() < 1e-9 {
                    format!("{p:.0}%")
                } else {
                    format!("{p:.1}%")
                }
            }
        }
    }
}

/// One bar of a bar chart, as the caller gives it.
#[derive(Debug, Clone)]
pub(crate) struct Bar {
    /// The row's label (cut to fit).
    pub label: String,
    /// The value (a non-finite one draws no bar and reads "—").
    pub value: f64,
    /// Its 95% interval, if any.
    pub interval: Option<[f64; 2]>,
    /// The colour's meaning.
    pub verdict: Verdict,
    /// Whether this is the reference group (marked "ref").
    pub reference: bool,
    /// Text after the bar (the value, formatted by the caller).
    pub text: String,
}

/// A vertical line across a chart at a value (a bound, the reference's rate).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Rule {
    /// Where it is drawn.
    pub x: f64,
    /// Its label, above the plot.
    pub label: String,
    /// Whether it is dashed (a bound) or solid (the reference).
    pub dashed: bool,
    /// The label's `text-anchor`.
    pub anchor: &'static str,
}

/// A tick of an axis.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Tick {
    /// Position (x for a horizontal axis, y for a vertical one).
    pub at: f64,
    /// Its label.
    pub label: String,
}

/// A bar placed on the chart.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PlacedBar {
    label: String,
    /// The full label, as the bar's tooltip, when the label was cut.
    title: String,
    y: f64,
    width: f64,
    whisker: Option<[f64; 2]>,
    clipped: bool,
    verdict: Verdict,
    reference: bool,
    text: String,
    text_x: f64,
    /// The value (for tests and the tooltip); `None` when not finite.
    value: Option<f64>,
}

/// A horizontal bar chart on a fixed axis.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BarChart {
    width: f64,
    height: f64,
    /// Left and right ends of the plot area.
    x0: f64,
    x1: f64,
    /// Top of the plot area and the y of the axis under it.
    top: f64,
    axis_y: f64,
    bar_height: f64,
    label_x: f64,
    ticks: Vec<Tick>,
    axis_title: String,
    rules: Vec<Rule>,
    bars: Vec<PlacedBar>,
    /// The verdicts present, for the legend.
    legend: Vec<(Verdict, String)>,
    /// What the chart shows (its accessible name).
    title: String,
}

const WIDTH: f64 = 820.0;
const LABEL_W: f64 = 290.0;
const TEXT_W: f64 = 120.0;
const ROW: f64 = 22.0;
const LABEL_CHARS: usize = 44;

/// "Nice" ticks from `min` to `max` (about `target` of them), steps of 1, 2 or 5 × 10^k.
pub(crate) fn ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    let span = (max - min).max(1e-12);
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let first = (min / step).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    (first..=last).map(|k| (k as f64 * step * 1e9).round() / 1e9).collect()
}

/// The largest of `values` rounded up to a tick, at least `floor` (an axis that holds them all).
pub(crate) fn axis_max(values: impl IntoIterator<Item = f64>, floor: f64) -> f64 {
    let max = values.into_iter().filter(|v| v.is_finite()).fold(floor, f64::max);
    let t = ticks(0.0, max, 5);
    let step = if t.len() > 1 { t[1] - t[0] } else { max };
    (max / step).ceil() * step
}

/// The step between ticks (0 with fewer than two).
fn step_of(ticks: &[f64]) -> f64 {
    if ticks.len() > 1 {
        ticks[1] - ticks[0]
    } else {
        0.0
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Cut a label to `LABEL_CHARS` characters.
fn cut(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        format!("{}…", label.chars().take(LABEL_CHARS - 1).collect::<String>())
    }
}

impl BarChart {
    /// Bars of `bars` on an axis from `min` to `max` read as `scale`, titled `axis_title`, with
    /// lines at `rules` (value, label, dashed).
    pub(crate) fn new(
        title: &str,
        bars: Vec<Bar>,
        min: f64,
        max: f64,
        scale: Scale,
        axis_title: &str,
        rules: &[(f64, String, bool)],
    ) -> Self {
        let (x0, x1) = (LABEL_W, WIDTH - TEXT_W);
        let top = if rules.is_empty() { 6.0 } else { 20.0 };
        let at = |v: f64| round1(x0 + (v.clamp(min, max) - min) / (max - min) * (x1 - x0));
        let placed: Vec<PlacedBar> = bars
            .into_iter()
            .enumerate()
            .map(|(k, b)| {
                let finite = b.value.is_finite();
                let end = if finite { at(b.value) } else { x0 };
                let whisker = b.interval.filter(|i| i[0].is_finite() && i[1].is_finite()).map(|i| [at(i[0]), at(i[1])]);
                let right = whisker.map_or(end, |w| w[1].max(end));
                PlacedBar {
                    title: b.label.clone(),
                    label: cut(&b.label),
                    y: round1(top + ROW * k as f64),
                    width: round1(end - x0),
                    whisker,
                    clipped: finite && b.value > max,
                    verdict: b.verdict,
                    reference: b.reference,
                    text: if finite { b.text } else { "—".into() },
                    text_x: round1(right + 5.0),
                    value: finite.then_some(b.value),
                }
            })
            .collect();
        let axis_y = top + ROW * placed.len() as f64 + 2.0;
        let tick_values = ticks(min, max, 5);
        let step = step_of(&tick_values);
        let ticks = tick_values.into_iter().map(|v| Tick { at: at(v), label: scale.tick(v, step) }).collect();
        let mut rules: Vec<Rule> = rules
            .iter()
            .filter(|r| r.0.is_finite())
            .map(|(v, label, dashed)| Rule { x: at(*v), label: label.clone(), dashed: *dashed, anchor: "middle" })
            .collect();
        // Labels of lines close together are pushed apart: the left one ends at its line, the
        // right one starts at its line.
        rules.sort_by(|a, b| a.x.total_cmp(&b.x));
        for k in 1..rules.len() {
            let room = 6.0 * (rules[k - 1].label.chars().count() + rules[k].label.chars().count()) as f64 / 2.0 + 6.0;
            if rules[k].x - rules[k - 1].x < room {
                rules[k - 1].anchor = "end";
                rules[k].anchor = "start";
            }
        }
        BarChart {
            width: WIDTH,
            height: axis_y + 34.0,
            x0,
            x1,
            top,
            axis_y,
            bar_height: ROW - 6.0,
            label_x: x0 - 6.0,
            ticks,
            axis_title: axis_title.to_string(),
            rules,
            legend: Vec::new(),
            bars: placed,
            title: title.to_string(),
        }
    }

    /// Name what each colour means in the legend: the colours drawn that `names` names, in the
    /// order of `names` (a chart without a legend has one colour, said by its title).
    pub(crate) fn legend(mut self, names: &[(Verdict, &str)]) -> Self {
        self.legend = names.iter().filter(|(v, _)| self.bars.iter().any(|b| b.verdict == *v)).map(|(v, t)| (*v, t.to_string())).collect();
        self
    }

    /// The width of each bar drawn, in order (for tests).
    #[cfg(test)]
    pub(crate) fn widths(&self) -> Vec<f64> {
        self.bars.iter().map(|b| b.width).collect()
    }

    /// The plot area's width (for tests).
    #[cfg(test)]
    pub(crate) fn plot_width(&self) -> f64 {
        self.x1 - self.x0
    }
}

/// One curve of a line chart.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Curve {
    label: String,
    colour: &'static str,
    points: String,
}

/// A line chart with both axes ticked and titled; the legend goes under it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LineChart {
    width: f64,
    height: f64,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    x_ticks: Vec<Tick>,
    y_ticks: Vec<Tick>,
    x_title: String,
    y_title: String,
    curves: Vec<Curve>,
    title: String,
}

/// Colours of the curves of a line chart (distinct from the verdicts' red and green).
const CURVE_COLOURS: [&str; 8] = ["#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#e377c2", "#7f7f7f", "#bcbd22"];

impl LineChart {
    /// Curves of (x, y) points; the x axis runs from 0 to `x_max` (the largest x when `None`), the
    /// y axis from 0 to `y_max` (the largest y rounded up to a tick when `None`).
    pub(crate) fn new(
        title: &str,
        curves: &[(String, Vec<(f64, f64)>)],
        (x_title, x_scale, x_max): (&str, Scale, Option<f64>),
        (y_title, y_scale, y_max): (&str, Scale, Option<f64>),
    ) -> Self {
        let (width, height) = (WIDTH, 280.0);
        let (x0, x1, y0, y1) = (64.0, width - 20.0, 12.0, height - 46.0);
        let all = || curves.iter().flat_map(|(_, c)| c.iter().copied());
        let x_max = x_max.unwrap_or_else(|| axis_max(all().map(|p| p.0), 1e-9));
        let y_max = y_max.unwrap_or_else(|| axis_max(all().map(|p| p.1), 1e-9));
        let sx = |x: f64| round1(x0 + x.clamp(0.0, x_max) / x_max * (x1 - x0));
        let sy = |y: f64| round1(y1 - y.clamp(0.0, y_max) / y_max * (y1 - y0));
        let curves = curves
            .iter()
            .enumerate()
            .map(|(k, (label, c))| Curve {
                label: label.clone(),
                colour: CURVE_COLOURS[k % CURVE_COLOURS.len()],
                points: c
                    .iter()
                    .filter(|p| p.0.is_finite() && p.1.is_finite())
                    .map(|&(x, y)| format!("{},{}", sx(x), sy(y)))
                    .collect::<Vec<_>>()
                    .join(" "),
            })
            .collect();
        LineChart {
            width,
            height,
            x0,
            x1,
            y0,
            y1,
            x_ticks: axis_ticks(ticks(0.0, x_max, 8), x_scale, sx),
            y_ticks: axis_ticks(ticks(0.0, y_max, 5), y_scale, sy),
            x_title: x_title.to_string(),
            y_title: y_title.to_string(),
            curves,
            title: title.to_string(),
        }
    }
}

/// Ticks at `values`, placed by `at`, labelled by `scale`.
fn axis_ticks(values: Vec<f64>, scale: Scale, at: impl Fn(f64) -> f64) -> Vec<Tick> {
    let step = step_of(&values);
    values.into_iter().map(|v| Tick { at: at(v), label: scale.tick(v, step) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: f64) -> Bar {
        Bar { label: label.into(), value, interval: None, verdict: Verdict::Plain, reference: false, text: String::new() }
    }

    #[test]
    fn ticks_are_round_numbers_spanning_the_axis() {
        assert_eq!(ticks(0.0, 1.0, 5), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(ticks(0.0, 137.0, 5), vec![0.0, 50.0, 100.0]);
        assert_eq!(axis_max([137.0, 12.0], 0.0), 150.0);
        assert_eq!(axis_max([0.3], 1.5), 1.5);
    }

    #[test]
    fn bars_are_scaled_to_the_axis_not_to_the_largest_bar() {
        let chart = BarChart::new("t", vec![bar("a", 0.0066), bar("b", 0.5), bar("c", 2.0)], 0.0, 1.0, Scale::Percent, "rate", &[]);
        let w = chart.plot_width();
        let widths = chart.widths();
        assert!((widths[0] - 0.0066 * w).abs() < 0.1, "{widths:?}");
        assert!((widths[1] - 0.5 * w).abs() < 0.1, "{widths:?}");
        // Beyond the axis: clipped at its end and marked.
        assert_eq!(widths[2], w);
        assert!(chart.bars[2].clipped && !chart.bars[1].clipped);
    }
}
