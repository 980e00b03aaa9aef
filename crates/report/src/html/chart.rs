//! The chart layer of the HTML report: plotters drawing to an SVG string,
//! wrapped in a `<figure>` that names the chart and counts its series and
//! points, with the numbers behind it in a table below.
//!
//! Colours: plotters writes colours as attributes. Foreground (axes, text)
//! is drawn in pure black and the grid in `#CCCCCC`; the page's CSS turns
//! both into `currentColor`, so one SVG reads in light, dark and print.
//! Series colours are mid-tone and legible on white and on near-black.

use std::fmt::Write as _;

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
    /// The numbers behind the chart.
    pub table: Option<Table>,
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
            table: None,
        }
    }

    pub(super) fn note(mut self, note: impl Into<String>) -> Chart {
        self.note = Some(note.into());
        self
    }

    pub(super) fn table(mut self, table: Table) -> Chart {
        self.table = Some(table);
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
        if let Some(table) = &self.table {
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
        let (divisor, name) = if max >= 1e9 {
            (1e9, "s")
        } else if max >= 1e6 {
            (1e6, "ms")
        } else if max >= 1e3 {
            (1e3, "µs")
        } else {
            (1.0, "ns")
        };
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

/// The series legend drawn by plotters, without a background box (it
/// would be white in a dark viewer).
pub(super) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(GRID)
        .label_font(font(13))
        .draw()?;
    Ok(())
}

/// A legend swatch for a line series.
pub(super) fn swatch(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
}
