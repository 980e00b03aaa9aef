//! The HTML around the charts: escaping, tables, the page's style and its
//! frame. Nothing here draws; everything here is text the page is made of.

use std::fmt::Write as _;

/// Text made safe for HTML content and for attribute values in double
/// quotes: a hostile command name stays text.
pub use dyno_model::html::escape as esc;

/// A table of text cells; the first row is the header. Columns after the
/// first are right-aligned when they hold numbers.
#[derive(Debug, Clone, Default)]
pub(super) struct Table {
    pub caption: Option<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub(super) fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            caption: None,
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub(super) fn caption(mut self, caption: impl Into<String>) -> Table {
        self.caption = Some(caption.into());
        self
    }

    pub(super) fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub(super) fn html(&self) -> String {
        let mut out = String::from("<table>");
        if let Some(c) = &self.caption {
            let _ = write!(out, "<caption>{}</caption>", esc(c));
        }
        out.push_str("<thead><tr>");
        for h in &self.header {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead><tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let numeric = i > 0
                    && cell
                        .trim_start_matches(['+', '-', '−', '<', '≈'])
                        .starts_with(|c: char| c.is_ascii_digit());
                if numeric {
                    let _ = write!(out, "<td class=\"n\">{}</td>", esc(cell));
                } else {
                    let _ = write!(out, "<td>{}</td>", esc(cell));
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
        out
    }
}

/// Labelled facts (`rows`: a label and its words) as a two-column table
/// under `caption`, each label a row header. The words are text, never
/// right-aligned as a table's numbers are.
pub(super) fn facts(caption: &str, rows: &[(&str, String)]) -> String {
    let mut out = format!(
        "<table class=\"facts\"><caption>{}</caption><tbody>\n",
        esc(caption)
    );
    for (label, words) in rows {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
            esc(label),
            esc(words)
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

/// No script, no fetch: only inline style and `data:` images may load.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// The page's style: system fonts, light and dark, and print.
const STYLE: &str = r##"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1c1c1c; --muted: #5f6368; --line: #d9d9d9; --tile: #f3f5f8; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #15171a; --fg: #e3e3e3; --muted: #a0a4a8; --line: #3a3d42; --tile: #23262b; }
}
@media print {
  :root { --bg: #ffffff; --fg: #000000; --muted: #444444; --line: #bbbbbb; --tile: #f3f3f3; }
  section.run, figure.chart { break-inside: avoid; }
}
html { background: var(--bg); color: var(--fg); }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 1040px; margin: 0 auto; padding: 1.5em; }
h1 { font-size: 1.6em; margin: 0 0 .2em; }
h2 { font-size: 1.3em; margin: 2em 0 .3em; border-bottom: 1px solid var(--line); padding-bottom: .2em; }
h3 { font-size: 1.05em; margin: 1.4em 0 .3em; }
.meta, .note, figcaption + p, caption { color: var(--muted); }
.note { font-size: .9em; }
code, .id { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .92em; }
figure.chart { margin: 1.2em 0; }
figure.chart figcaption { font-weight: 600; margin-bottom: .3em; }
figure.chart svg { width: 100%; height: auto; max-width: 760px; display: block; }
figure.chart svg text { fill: currentColor; }
figure.chart svg [stroke="#000000"] { stroke: currentColor; }
figure.chart svg [fill="#000000"] { fill: currentColor; }
figure.chart svg [stroke="#CCCCCC"] { stroke: currentColor; stroke-opacity: .18; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .88em; }
caption { text-align: left; padding-bottom: .2em; }
th, td { border-bottom: 1px solid var(--line); padding: .15em .7em .15em 0; text-align: left; vertical-align: top; }
table.facts th { font-weight: 600; white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
ul.warnings { padding-left: 1.2em; }
ul.warnings li { color: #c0392b; }
@media (prefers-color-scheme: dark) { ul.warnings li { color: #ff8a7a; } }
.cdm { display: grid; grid-template-columns: 9em repeat(2, minmax(9em, 14em)); gap: 6px; margin: .5em 0; }
.cdm .head { font-weight: 600; align-self: end; }
.cdm .test { font-weight: 600; align-self: center; }
.cdm .tile { background: var(--tile); border: 1px solid var(--line); border-radius: 4px; padding: .35em .6em; text-align: right; }
.cdm .tile .mbs { font-size: 1.5em; font-variant-numeric: tabular-nums; }
.cdm .tile .iops { color: var(--muted); font-size: .85em; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: .9em; height: .9em; margin-right: .3em; vertical-align: -.1em; border-radius: 2px; }
"##;

/// The whole page around `body`.
pub(super) fn page(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + 512);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    let _ = writeln!(out, "<title>{}</title>", esc(title));
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
    out.push_str(body);
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            esc("</script><img src=x onerror=\"a\">'&"),
            "&lt;/script&gt;&lt;img src=x onerror=&quot;a&quot;&gt;&#39;&amp;"
        );
    }

    #[test]
    fn numeric_cells_are_right_aligned_and_text_is_escaped() {
        let mut t = Table::new(["name", "value"]);
        t.row(["<b>", "12.5 ms"]);
        let html = t.html();
        assert!(html.contains("<td>&lt;b&gt;</td><td class=\"n\">12.5 ms</td>"));
    }
}
