//! The chart layer of the HTML report: plotters drawing to an SVG string,
//! wrapped in a `<figure>` that names the chart and counts its series and
//! points, with the numbers behind it in a table below.
//!
//! Colours: plotters writes colours as attributes. Foreground (axes, text)
//! is drawn in pure black and the grid in `#CCCCCC`; the page's CSS turns
//! both into `currentColor`, so one SVG reads in light, dark and print.
//! Series colours are mid-tone and legible on white and on near-black.

use std::fmt::Write as _;

use dyno_model::units;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::prelude::*;

use super::markup::{Table, esc};

/// Width and height of a chart's SVG canvas, in CSS pixels (scaled down to
/// the page width by CSS).
pub(super) const WIDTH: u32 = 760;
pub(super) const HEIGHT: u32 = 340;

/// Axes and text: replaced by `currentColor` in the page's CSS.
pub(super) const FG: RGBColor = RGBColor(0, 0, 0);
/// Grid lines: replaced by a faint `currentColor` in the page's CSS.
pub(super) const GRID: RGBColor = RGBColor(0xCC, 0xCC, 0xCC);

/// Series colours, in order.
pub(super) const PALETTE: [RGBColor; 8] = [
    RGBColor(0x3B, 0x7D, 0xD8),
    RGBColor(0xE8, 0x87, 0x1E),
    RGBColor(0x2E, 0x9E, 0x5B),
    RGBColor(0xC2, 0x4E, 0xB0),
    RGBColor(0x1A, 0x9A, 0xA0),
    RGBColor(0x9A, 0x7B, 0x3C),
    RGBColor(0x7A, 0x6F, 0xE0),
    RGBColor(0xD6, 0x45, 0x45),
];

/// A verdict's colour: better, worse, or neither.
pub(super) const BETTER: RGBColor = RGBColor(0x2E, 0x9E, 0x5B);
pub(super) const WORSE: RGBColor = RGBColor(0xD6, 0x45, 0x45);
pub(super) const NEUTRAL: RGBColor = RGBColor(0x8A, 0x8A, 0x8A);

/// The latency a run reports, from each request's due time in an open-model
/// run (the corrected one): the spectrum's first line and the p99 over
/// time, one colour on every chart of a page. The spectrum draws its
/// series in palette order, the latency first.
pub(super) const LATENCY: RGBColor = PALETTE[0];
/// An open-model run's uncorrected latency, from each send: the
/// spectrum's second line, never the corrected one's colour.
pub(super) const UNCORRECTED: RGBColor = PALETTE[1];
/// A rate over time (req/s, tps): neither latency's colour, so a reader
/// does not take it for one.
pub(super) const RATE: RGBColor = PALETTE[4];

pub(super) fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The CSS hex form of a colour, for legends drawn in HTML.
pub(super) fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// What any drawing step can fail with; on a string backend only a
/// degenerate range does, and the chart is then replaced by a note.
pub(super) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// A finished chart: its SVG (or why there is none) and what it shows.
#[derive(Debug, Clone)]
pub(super) struct Chart {
    /// The `data-chart` name tests and readers find it by.
    pub id: String,
    pub title: String,
    pub series: usize,
    pub points: usize,
    pub svg: String,
    /// A sentence under the chart: how to read it, what was left out.
    pub note: Option<String>,
    /// The numbers behind the chart, in order.
    pub tables: Vec<Table>,
}

impl Chart {
    /// Draws `draw` onto a fresh SVG canvas.
    pub(super) fn draw(
        id: impl Into<String>,
        title: impl Into<String>,
        (series, points): (usize, usize),
        size: (u32, u32),
        draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
    ) -> Chart {
        let mut svg = String::new();
        let result = {
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            draw(&root).and_then(|()| root.present().map_err(Into::into))
        };
        let svg = match result {
            Ok(()) => tidy_svg(&svg),
            Err(e) => format!(
                "<p class=\"note\">This chart could not be drawn: {}</p>",
                esc(&e.to_string())
            ),
        };
        Chart {
            id: id.into(),
            title: title.into(),
            series,
            points,
            svg,
            note: None,
            tables: Vec::new(),
        }
    }

    pub(super) fn note(mut self, note: impl Into<String>) -> Chart {
        self.note = Some(note.into());
        self
    }

    /// Adds a table below the chart (after those added before).
    pub(super) fn table(mut self, table: Table) -> Chart {
        self.tables.push(table);
        self
    }

    /// The chart as a `<figure>`.
    pub(super) fn html(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<figure class=\"chart\" data-chart=\"{}\" data-series=\"{}\" data-points=\"{}\">\n<figcaption>{}</figcaption>\n{}\n",
            esc(&self.id),
            self.series,
            self.points,
            esc(&self.title),
            self.svg
        );
        if let Some(note) = &self.note {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(note));
        }
        for table in &self.tables {
            out.push_str(&table.html());
        }
        out.push_str("</figure>\n");
        out
    }
}

/// plotters' SVG made fit for inlining: no XML namespace (an HTML parser
/// needs none) and a role for screen readers; the size stays in the viewBox
/// so CSS can scale it.
fn tidy_svg(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", " role=\"img\"", 1)
}

/// The standard frame: caption-less (the figure has it), labelled axes.
pub(super) fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&FG)
}

/// A unit that keeps nanosecond values readable: ns, µs, ms or s, chosen
/// by the largest value shown.
#[derive(Debug, Clone, Copy)]
pub(super) struct TimeUnit {
    pub divisor: f64,
    pub name: &'static str,
}

impl TimeUnit {
    pub(super) fn for_max_ns(max: f64) -> TimeUnit {
        let (divisor, name) = units::thousands_step(max, units::TIME_UNITS);
        TimeUnit { divisor, name }
    }
}

/// A number with about four significant figures for tables and labels.
pub(super) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.3e}")
    }
}

/// A tick label for a linear axis: short, without trailing noise.
pub(super) fn tick(v: &f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
            .replace(".M", "M")
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A range with room around `lo..hi` (and never empty).
pub(super) fn padded(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if hi > lo {
        let pad = (hi - lo) * 0.06;
        (lo - pad)..(hi + pad)
    } else if hi == 0.0 {
        -1.0..1.0
    } else {
        (lo - lo.abs() * 0.1)..(hi + hi.abs() * 0.1)
    }
}

/// A range from zero to a little above `hi`.
pub(super) fn from_zero(hi: f64) -> std::ops::Range<f64> {
    if hi.is_finite() && hi > 0.0 {
        0.0..hi * 1.08
    } else {
        0.0..1.0
    }
}

/// Whether `x` is a power of ten (a log axis's labelled key points).
pub(super) fn is_decade(x: f64) -> bool {
    x > 0.0 && (x.log10() - x.log10().round()).abs() < 1e-9
}

/// The chart builder every chart starts from: a 12 px margin, `right` px
/// on the right, and label areas `x_label` px high and `y_label` px wide.
pub(super) fn builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    right: u32,
    (x_label, y_label): (u32, u32),
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.margin(12)
        .margin_right(right)
        .x_label_area_size(x_label)
        .y_label_area_size(y_label);
    b
}

/// The mesh every chart shares: grid lines at the bold key points only,
/// axes and labels in the foreground colour (turned into `currentColor` by
/// the page's CSS), tick labels at 12 px and axis titles at 13 px. Callers
/// add their axis titles, formatters and what to leave out.
pub(super) fn mesh<'a, 'b, DB, XT, YT, X, Y>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = XT> + ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + ValueFormatter<YT>,
{
    let mut mesh = chart.configure_mesh();
    mesh.bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(FG)
        .label_style(font(12))
        .axis_desc_style(font(13));
    mesh
}

/// How a legend shows a series: its line, its dot, its cross or its
/// triangle, in its colour.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mark {
    Line(RGBColor),
    Dot(RGBColor),
    Cross(RGBColor),
    Triangle(RGBColor),
}

/// A legend entry: a series' name and its mark.
pub(super) type Key = (String, Mark);

/// Height of a row of the legend, in pixels.
const KEY_ROW: i32 = 20;
/// Room left of a key's name for its mark, and between two keys.
const KEY_MARK: i32 = 26;
const KEY_GAP: i32 = 20;

/// The legend of `keys`, in rows along the top of `root` (wrapped to its
/// width), and the area below it, where the chart goes: outside the
/// plotting area, so a legend never covers a point or a line. Without
/// keys, `root` whole.
pub(super) fn legend_above<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    keys: &[Key],
) -> Result<DrawingArea<SVGBackend<'a>, Shift>, Box<dyn std::error::Error>> {
    if keys.is_empty() {
        return Ok(root.clone());
    }
    let (at, rows) = key_places(keys, root.dim_in_pixel().0 as i32 - 12);
    let (top, rest) = root.split_vertically(8 + rows * KEY_ROW);
    for ((name, mark), &(x, y)) in keys.iter().zip(&at) {
        draw_mark(&top, *mark, (x + 9, y + KEY_ROW / 2 - 2))?;
        top.draw(&Text::new(name.as_str(), (x + KEY_MARK, y + 2), font(13)))?;
    }
    Ok(rest)
}

/// Where each key goes (its top left corner), left to right in rows no
/// wider than `width`, and how many rows they take.
fn key_places(keys: &[Key], width: i32) -> (Vec<(i32, i32)>, i32) {
    let mut at = Vec::with_capacity(keys.len());
    let (mut x, mut row) = (12, 0);
    for (name, _) in keys {
        let w = KEY_MARK + text_width(name, 13);
        if x > 12 && x + w > width {
            (x, row) = (12, row + 1);
        }
        at.push((x, 6 + row * KEY_ROW));
        x += w + KEY_GAP;
    }
    (at, row + 1)
}

/// About how wide `text` is in a sans-serif font of `size` px: 0.6 em a
/// character, a little over a system font's mean, so keys never touch.
/// (plotters' own estimate, 0.7 em a byte, spaces them far apart and
/// counts `σ` twice.)
fn text_width(text: &str, size: u32) -> i32 {
    (text.chars().count() as f64 * f64::from(size) * 0.6).ceil() as i32
}

/// A legend's mark, centred on `(x, y)`.
fn draw_mark(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    mark: Mark,
    (x, y): (i32, i32),
) -> DrawResult {
    match mark {
        Mark::Line(c) => area.draw(&PathElement::new(
            vec![(x - 9, y), (x + 9, y)],
            c.stroke_width(2),
        ))?,
        Mark::Dot(c) => area.draw(&Circle::new((x, y), 4, c.filled()))?,
        Mark::Cross(c) => area.draw(&Cross::new((x, y), 5, c.stroke_width(2)))?,
        Mark::Triangle(c) => area.draw(&TriangleMarker::new((x, y), 5, c.filled()))?,
    }
    Ok(())
}

/// Mantissas of a log axis's ticks: 1-2-5 over the whole axis, then,
/// where that leaves the points with fewer than three labels, the first
/// finer step that gives them three.
const LOG_STEPS: [&[f64]; 3] = [
    &[1.0, 2.0, 5.0],
    &[1.0, 2.0, 3.0, 5.0],
    &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0],
];

/// Ticks for a log axis over `axis` (low, high), labelled where the points
/// lie (`data`, low and high): 1, 2 and 5 times each power of ten, and
/// within `data` finer steps where those put fewer than three ticks there
/// (points between 3.8 and 9.1 ms get 4, 5, 6 and 8, not one label at 5),
/// so the rest of the axis is not crowded; a linear 1-2-5 step when even
/// that leaves fewer than three on the axis.
pub(super) fn log_ticks(axis: (f64, f64), data: (f64, f64)) -> Vec<f64> {
    let data = (data.0.max(axis.0), data.1.min(axis.1));
    let fine = LOG_STEPS
        .iter()
        .map(|m| decade_ticks(data, m))
        .find(|t| t.len() >= 3)
        .unwrap_or_default();
    let mut ticks = decade_ticks(axis, LOG_STEPS[0]);
    ticks.extend(fine);
    ticks.sort_by(f64::total_cmp);
    ticks.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-9);
    if ticks.len() >= 3 {
        ticks
    } else {
        linear_ticks(axis)
    }
}

/// `mantissas` times each power of ten within `lo..=hi`.
fn decade_ticks((lo, hi): (f64, f64), mantissas: &[f64]) -> Vec<f64> {
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return Vec::new();
    }
    // A point exactly on a tick keeps it, whatever the rounding.
    let (lo, hi) = (lo * (1.0 - 1e-9), hi * (1.0 + 1e-9));
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    (first..=last)
        .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
        .filter(|&t| t >= lo && t <= hi)
        .collect()
}

/// Ticks every 1, 2 or 5 times a power of ten over `lo..=hi`, the step
/// that gives at least four.
fn linear_ticks((lo, hi): (f64, f64)) -> Vec<f64> {
    let raw = (hi - lo) / 4.0;
    if !(raw > 0.0 && raw.is_finite()) {
        return vec![lo];
    }
    let power = 10f64.powi(raw.log10().floor() as i32);
    let step = [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s <= raw)
        .unwrap_or(power);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_label_points_within_a_decade() {
        // real-clients 12: points at 3.8–9.1 ms under a 20 ms target, the
        // axis padded by 1.5 both ways.
        let ticks = log_ticks((3.8 / 1.5, 30.0), (3.8, 9.1));
        assert_eq!(ticks, vec![4.0, 5.0, 6.0, 8.0, 10.0, 20.0]);
        // Fails far above: the finer steps stay among the passing points.
        let ticks = log_ticks((3.8 / 1.5, 4000.0), (3.8, 9.1));
        assert_eq!(ticks[..4], [4.0, 5.0, 6.0, 8.0]);
        assert_eq!(ticks[4..7], [10.0, 20.0, 50.0]);
        // Spread over decades, 1-2-5 is enough.
        assert_eq!(
            log_ticks((0.5, 3000.0), (1.0, 2700.0)),
            vec![
                0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0
            ]
        );
    }

    #[test]
    fn a_narrow_log_axis_still_gets_three_ticks() {
        let ticks = log_ticks((8.1, 18.2), (8.1, 18.2));
        assert!(ticks.len() >= 3, "{ticks:?}");
        assert!(
            ticks.iter().all(|&t| (8.1..=18.2).contains(&t)),
            "{ticks:?}"
        );
    }
}
