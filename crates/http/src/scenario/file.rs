//! The scenario file: TOML read into raw records, then checked and
//! compiled into a [`Scenario`]. Every mistake is an error naming the
//! file, the line and the column, before any load.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::template::{self, Piece, Place, Text};
use super::{Data, Extract, Flow, Scenario, Source, Step, Think};
use crate::request::{Target, parse_header, parse_url};
use crate::status::StatusSet;

/// Why a scenario cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("could not read the scenario file '{path}': {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A mistake in the file, where it is.
    #[error("{path}:{line}:{column}: {message}")]
    At {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A value of the data file that cannot go where the flows put it.
    #[error("the data file '{path}', line {line}: {message}")]
    Data {
        path: PathBuf,
        line: u64,
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    base: Option<Spanned<String>>,
    #[serde(default)]
    cookies: bool,
    data: Option<Spanned<String>>,
    think: Option<Spanned<String>>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
    #[serde(default)]
    setup: Vec<Spanned<RawStep>>,
    #[serde(default)]
    flow: Vec<Spanned<RawFlow>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: Spanned<String>,
    weight: Option<Spanned<i64>>,
    #[serde(default)]
    step: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Option<Spanned<String>>,
    method: Option<Spanned<String>>,
    url: Spanned<String>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
    body: Option<Spanned<String>>,
    check: Option<RawCheck>,
    #[serde(default)]
    extract: Vec<Spanned<RawExtract>>,
    think: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    status: Option<Spanned<RawStatus>>,
    contains: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawStatus {
    One(u16),
    Many(Vec<u16>),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExtract {
    json: Option<Spanned<String>>,
    regex: Option<Spanned<String>>,
    header: Option<Spanned<String>>,
    #[serde(rename = "as")]
    name: Spanned<String>,
}

/// The built-in names, which no variable may take.
const BUILT_INS: [&str; 4] = ["vu", "iter", "seq", "rand"];

/// Reads and compiles a scenario. `url`, when given, is the server to
/// load (it overrides the file's `base`).
pub(super) fn load(path: &Path, url: Option<&str>) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut c = Compiler {
        path,
        text: &text,
        slots: HashMap::new(),
        variables: Vec::new(),
    };
    let raw: RawFile = toml::from_str(&text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        c.error(at, e.message().trim_end().to_owned())
    })?;
    let target = match (url, &raw.base) {
        (Some(url), _) => origin(url).map_err(|m| c.error(0, format!("the URL {url:?}: {m}")))?,
        (None, Some(base)) => origin(base.get_ref()).map_err(|m| c.error(base.span().start, m))?,
        (None, None) => {
            return Err(c.error(
                0,
                "no server to load: give `base = \"http://HOST:PORT\"` in the file, or the URL on the command line".into(),
            ));
        }
    };
    let data = match &raw.data {
        Some(d) => Some(c.data(d)?),
        None => None,
    };
    let think = match &raw.think {
        Some(t) => think(t.get_ref()).map_err(|m| c.error(t.span().start, m))?,
        None => Think::None,
    };
    if raw.flow.is_empty() {
        return Err(c.error(
            text.len(),
            "the scenario has no flow: add one with `[[flow]]`, a `name` and its `[[flow.step]]`s"
                .into(),
        ));
    }
    let data_slots: Vec<usize> = data.as_ref().map_or(Vec::new(), |d| d.slots.clone());
    let mut setup = Vec::new();
    for (i, raw_step) in raw.setup.iter().enumerate() {
        if let Some(e) = raw_step.get_ref().extract.first() {
            return Err(c.error(
                e.span().start,
                "a setup step cannot extract: it runs once, before the virtual users exist".into(),
            ));
        }
        let step = c.step(
            raw_step,
            &target,
            &raw.headers,
            think,
            &mut Vec::new(),
            format!("setup {}", i + 1),
            None,
        )?;
        setup.push(step);
    }
    let mut flows = Vec::new();
    let mut names = HashMap::new();
    let mut index = 0;
    const MAX_WEIGHT: i64 = 1_000_000;
    let mut total_weight = 0u64;
    for raw_flow in &raw.flow {
        let flow = raw_flow.get_ref();
        let name = flow.name.get_ref().clone();
        if !template::is_name(&name.replace('-', "_")) {
            return Err(c.error(
                flow.name.span().start,
                format!("the flow name {name:?}: use letters, digits, `_` and `-`"),
            ));
        }
        if names.insert(name.clone(), ()).is_some() {
            return Err(c.error(
                flow.name.span().start,
                format!("a second flow named {name:?}: give each flow its own name"),
            ));
        }
        let weight = match &flow.weight {
            None => 1,
            // Weights are relative: a bound keeps their sum far from
            // overflow, where the draw would go to the first flow only.
            Some(w) if (1..=MAX_WEIGHT).contains(w.get_ref()) => *w.get_ref() as u64,
            Some(w) => {
                return Err(c.error(w.span().start, format!("weight {}: give a whole number from 1 to {MAX_WEIGHT} (how often this flow is picked against the others: weights 3 and 1 pick the first three times as often)", w.get_ref())));
            }
        };
        if flow.step.is_empty() {
            return Err(c.error(
                raw_flow.span().start,
                format!("flow {name:?} has no step: add `[[flow.step]]` tables after it, each with a `url`"),
            ));
        }
        let mut known = data_slots.clone();
        let mut steps = Vec::new();
        let mut step_names: HashMap<String, ()> = HashMap::new();
        for (i, raw_step) in flow.step.iter().enumerate() {
            let default = format!("{}", i + 1);
            let step = c.step(
                raw_step,
                &target,
                &raw.headers,
                think,
                &mut known,
                default,
                Some(index),
            )?;
            if step_names.insert(step.name.clone(), ()).is_some() {
                let at = raw_step
                    .get_ref()
                    .name
                    .as_ref()
                    .map_or(raw_step.span().start, |n| n.span().start);
                return Err(c.error(
                    at,
                    format!(
                        "a second step named {:?} in flow {name:?}: give each step its own name",
                        step.name
                    ),
                ));
            }
            steps.push(step);
            index += 1;
        }
        total_weight += weight;
        flows.push(Flow {
            name,
            weight,
            steps,
        });
    }
    if let Some(data) = &data {
        fits_where_used(data, &flows, &c.variables)?;
    }
    let url = target.to_string();
    Ok(Scenario {
        path: path.to_owned(),
        target,
        url,
        setup,
        flows,
        cookies: raw.cookies,
        data,
        variables: c.variables,
        total_weight,
    })
}

/// Checks every data value against where the flows put it, before any
/// load: a value with a line break cannot go into a header (it would end
/// the header and start another), so the file is refused, naming the row
/// and the column, rather than failing that user's every request.
fn fits_where_used(data: &Data, flows: &[Flow], variables: &[String]) -> Result<(), ScenarioError> {
    for flow in flows {
        for step in &flow.steps {
            for slot in step.request.header_slots() {
                let Some(column) = data.slots.iter().position(|&s| s == slot) else {
                    continue;
                };
                let bad = data
                    .rows
                    .iter()
                    .position(|row| row.get(column).is_some_and(|v| !template::fits_a_header(v)));
                if let Some(row) = bad {
                    let name = &variables[slot];
                    return Err(ScenarioError::Data {
                        path: data.path.clone(),
                        line: data.lines.get(row).copied().unwrap_or(0),
                        message: format!(
                            "row {} (column `{name}`) holds a line break (CR or LF) or a NUL, and step {:?} of flow {:?} puts `${{{name}}}` into a header, where it would end the header: remove it from the value, or use the column in the URL or the body, where it is encoded",
                            row + 1,
                            step.name,
                            flow.name
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The server of a base URL: its origin, with no path.
fn origin(url: &str) -> Result<Target, String> {
    let (target, path) = parse_url(url).map_err(|e| e.to_string())?;
    if path != "/" {
        return Err(format!(
            "{url:?}: the base is the server alone (scheme, host and port); put the path {path:?} in the steps' urls"
        ));
    }
    Ok(target)
}

/// Parses a think time: `250ms`, `uniform:50ms..150ms` (or `50ms..150ms`),
/// `exp:100ms` (exponential with that mean), `0`.
fn think(text: &str) -> Result<Think, String> {
    let bad = |why: &str| {
        format!(
            "think time {text:?}: {why}; write a time such as \"250ms\", a range \"50ms..150ms\" (uniform), or \"exp:100ms\" (exponential, that mean)"
        )
    };
    let t = text.trim();
    if let Some(mean) = t.strip_prefix("exp:") {
        let mean = duration(mean).map_err(|m| bad(&m))?;
        return Ok(if mean.is_zero() {
            Think::None
        } else {
            Think::Exponential(mean)
        });
    }
    let t = t.strip_prefix("uniform:").unwrap_or(t);
    if let Some((low, high)) = t.split_once("..") {
        let (low, high) = (
            duration(low).map_err(|m| bad(&m))?,
            duration(high).map_err(|m| bad(&m))?,
        );
        if low > high {
            return Err(bad("the range's low end is above its high end"));
        }
        return Ok(Think::Uniform(low, high));
    }
    let d = duration(t).map_err(|m| bad(&m))?;
    Ok(if d.is_zero() {
        Think::None
    } else {
        Think::Fixed(d)
    })
}

/// A duration such as `1.5s`, `250ms`, `40us`, `2m`, or `0`.
fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{t:?} has no unit (ms, s, …)"))?;
    let (number, unit) = t.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("{t:?} is not a number with a unit"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        other => return Err(format!("unknown unit {other:?} (ns, us, ms, s, m)")),
    };
    Duration::try_from_secs_f64(n * scale).map_err(|_| format!("{t:?} is out of range"))
}

struct Compiler<'a> {
    path: &'a Path,
    text: &'a str,
    slots: HashMap<String, usize>,
    variables: Vec<String>,
}

impl Compiler<'_> {
    /// An error at byte `at` of the file.
    fn error(&self, at: usize, message: String) -> ScenarioError {
        let at = at.min(self.text.len());
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ScenarioError::At {
            path: self.path.to_owned(),
            line,
            column,
            message,
        }
    }

    /// Where the text of a string value starts (after its quotes).
    fn inside(&self, value: &Spanned<String>) -> usize {
        let start = value.span().start;
        let raw = &self.text[start.min(self.text.len())..];
        if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            let after = &raw[3..];
            start
                + 3
                + usize::from(after.starts_with('\n'))
                + usize::from(after.starts_with("\r\n"))
        } else {
            start + 1
        }
    }

    fn slot(&mut self, name: &str) -> usize {
        if let Some(&s) = self.slots.get(name) {
            return s;
        }
        let s = self.variables.len();
        self.variables.push(name.to_owned());
        self.slots.insert(name.to_owned(), s);
        s
    }

    fn data(&mut self, file: &Spanned<String>) -> Result<Data, ScenarioError> {
        let at = file.span().start;
        let path = self
            .path
            .parent()
            .unwrap_or(Path::new("."))
            .join(file.get_ref());
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_path(&path)
            .map_err(|e| self.error(at, format!("the data file '{}': {e}", path.display())))?;
        let headers = reader
            .byte_headers()
            .map_err(|e| self.error(at, format!("the data file '{}': {e}", path.display())))?
            .clone();
        let mut slots = Vec::new();
        for h in &headers {
            let name = String::from_utf8_lossy(h).trim().to_owned();
            if !template::is_name(&name) || BUILT_INS.contains(&name.as_str()) {
                return Err(self.error(
                    at,
                    format!("the data file '{}': its first line names the columns, and {name:?} is not a variable name (letters, digits and `_`, not vu, iter, seq or rand)", path.display()),
                ));
            }
            let slot = self.slot(&name);
            if slots.contains(&slot) {
                return Err(self.error(
                    at,
                    format!("the data file '{}': its first line names the column {name:?} twice: give each column its own name", path.display()),
                ));
            }
            slots.push(slot);
        }
        let mut rows = Vec::new();
        let mut lines = Vec::new();
        for record in reader.byte_records() {
            let record = record
                .map_err(|e| self.error(at, format!("the data file '{}': {e}", path.display())))?;
            lines.push(record.position().map_or(0, csv::Position::line));
            rows.push(record.iter().map(Into::into).collect());
        }
        if rows.is_empty() {
            return Err(self.error(at, format!("the data file '{}' has no row under its column names: give one row per virtual user", path.display())));
        }
        Ok(Data {
            path,
            slots,
            rows,
            lines,
        })
    }

    /// Parses a template string, resolving names against `known`.
    fn pieces(
        &self,
        value: &Spanned<String>,
        place: Place,
        known: &[usize],
        note: &str,
    ) -> Result<Vec<Piece>, ScenarioError> {
        self.pieces_at(value.get_ref(), self.inside(value), place, known, note)
    }

    /// [`Compiler::pieces`] of `text`, which starts at byte `base` of the file.
    fn pieces_at(
        &self,
        text: &str,
        base: usize,
        place: Place,
        known: &[usize],
        note: &str,
    ) -> Result<Vec<Piece>, ScenarioError> {
        let mut resolve = |name: &str| -> Result<usize, String> {
            match self.slots.get(name) {
                Some(&s) if known.contains(&s) => Ok(s),
                _ => Err(format!(
                    "`${{{name}}}` is not set before this step{note}: extract it in an earlier step (extract = [{{ json = \"/{name}\", as = \"{name}\" }}]) or add a column `{name}` to the data file"
                )),
            }
        };
        template::parse(text, place, &mut resolve)
            .map_err(|(offset, message)| self.error(base + offset, message))
    }

    /// Compiles one step; `index` is its number among the flows' steps, or
    /// `None` for a setup step (it has no figures of its own).
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        raw: &Spanned<RawStep>,
        target: &Target,
        common: &[Spanned<String>],
        default_think: Think,
        known: &mut Vec<usize>,
        default_name: String,
        index: Option<usize>,
    ) -> Result<Step, ScenarioError> {
        let step = raw.get_ref();
        let name = step
            .name
            .as_ref()
            .map_or(default_name, |n| n.get_ref().clone());
        let note = match index {
            None => String::new(),
            Some(_) => " in its flow".to_owned(),
        };
        let method = match &step.method {
            Some(m) => self.method(m)?,
            None => "GET".to_owned(),
        };
        let path = self.path(&step.url, target, known, &note)?;
        let headers = self.headers(common, &step.headers, known, &note)?;
        let body = match &step.body {
            Some(b) => Some(self.pieces(b, Place::Body, known, &note)?),
            None => None,
        };
        let statuses = match &step.check.as_ref().and_then(|c| c.status.as_ref()) {
            None => None,
            Some(s) => Some(self.statuses(s)?),
        };
        let contains = match step.check.as_ref().and_then(|c| c.contains.as_ref()) {
            Some(c) => Some(self.pieces(c, Place::Body, known, &note)?),
            None => None,
        };
        let extract = self.extractions(&step.extract, known)?;
        let think = match &step.think {
            Some(t) => think(t.get_ref()).map_err(|m| self.error(t.span().start, m))?,
            None => default_think,
        };
        let request = Text::new(target, &method, path, headers, body);
        Ok(Step {
            name,
            url: step.url.get_ref().clone(),
            index,
            method,
            request,
            statuses,
            contains,
            extract,
            think,
        })
    }

    /// A step's method: a standard one in capitals, another as written.
    fn method(&self, m: &Spanned<String>) -> Result<String, ScenarioError> {
        let method = m.get_ref().trim();
        if method.is_empty()
            || !method
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        {
            return Err(self.error(
                m.span().start,
                format!("{method:?} is not a method: e.g. GET, POST, PUT"),
            ));
        }
        Ok(crate::request::standard_method(method))
    }

    /// The URL: a path, or a full URL on the base's server; `"${loc}"`
    /// alone is a path or a URL on this server, as an extracted Location is.
    fn path(
        &self,
        url: &Spanned<String>,
        target: &Target,
        known: &[usize],
        note: &str,
    ) -> Result<Vec<Piece>, ScenarioError> {
        let spanned = url;
        let url = spanned.get_ref();
        let base = target.to_string();
        let whole_url =
            url.starts_with("${") && url.ends_with('}') && url.matches("${").count() == 1;
        let (path_text, skip) = if url.starts_with('/') || whole_url {
            (url.as_str(), 0)
        } else if let Some(rest) = url
            .strip_prefix(&base)
            .filter(|r| r.starts_with('/') || r.is_empty())
        {
            (if rest.is_empty() { "/" } else { rest }, base.len())
        } else {
            return Err(self.error(
                spanned.span().start,
                format!("url {url:?}: give a path starting with `/` (the server is {base}), or a full URL on that server"),
            ));
        };
        if let Some((i, c)) = path_text
            .char_indices()
            .find(|&(_, c)| !c.is_ascii_graphic())
        {
            let at = self.inside(spanned) + skip + i;
            return Err(self.error(
                at,
                format!("url {url:?} holds {c:?}: percent-encode it (a space is %20)"),
            ));
        }
        let path = self.pieces_at(
            path_text,
            self.inside(spanned) + skip,
            Place::Url,
            known,
            note,
        )?;
        Ok(match (whole_url, path.as_slice()) {
            (true, [Piece::Var { slot, .. }]) => vec![Piece::Target {
                slot: *slot,
                origin: base.trim_end_matches('/').as_bytes().into(),
            }],
            _ => path,
        })
    }

    /// The file's headers and the step's own: a header the step gives
    /// itself replaces the file's of that name (a step's own Content-Type,
    /// Authorization …), sent once.
    fn headers(
        &self,
        common: &[Spanned<String>],
        own: &[Spanned<String>],
        known: &[usize],
        note: &str,
    ) -> Result<Vec<(String, Vec<Piece>)>, ScenarioError> {
        let mut headers = Vec::new();
        let named = |h: &Spanned<String>| {
            h.get_ref()
                .split_once(':')
                .map(|(n, _)| n.trim().to_ascii_lowercase())
        };
        let own_names: Vec<String> = own.iter().filter_map(named).collect();
        let common = common
            .iter()
            .filter(|h| named(h).is_none_or(|n| !own_names.contains(&n)));
        for h in common.chain(own) {
            let (hname, _) =
                parse_header(h.get_ref()).map_err(|e| self.error(h.span().start, e.to_string()))?;
            if hname.eq_ignore_ascii_case("content-length")
                || hname.eq_ignore_ascii_case("transfer-encoding")
            {
                return Err(self.error(h.span().start, format!("{hname}: dyno frames the body and sets Content-Length from it; drop this header")));
            }
            let value_start = h.get_ref().find(':').map_or(0, |c| c + 1);
            let raw_value = &h.get_ref()[value_start..];
            let lead = raw_value.len() - raw_value.trim_start().len();
            let base = self.inside(h) + value_start + lead;
            let pieces = self.pieces_at(raw_value.trim(), base, Place::Header, known, note)?;
            headers.push((hname, pieces));
        }
        Ok(headers)
    }

    /// `check.status`: a code, a list of codes, or text as `--expect-status`
    /// takes it.
    fn statuses(&self, s: &Spanned<RawStatus>) -> Result<StatusSet, ScenarioError> {
        let list = match s.get_ref() {
            RawStatus::One(code) => code.to_string(),
            RawStatus::Many(codes) => codes
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(","),
            RawStatus::Text(t) => t.clone(),
        };
        StatusSet::parse(&list).map_err(|e| self.error(s.span().start, e.to_string()))
    }

    /// The step's extractions; each variable it sets is known to the steps
    /// after it.
    fn extractions(
        &mut self,
        raw: &[Spanned<RawExtract>],
        known: &mut Vec<usize>,
    ) -> Result<Vec<Extract>, ScenarioError> {
        let mut extract = Vec::new();
        for e in raw {
            let raw = e.get_ref();
            let from = match (&raw.json, &raw.regex, &raw.header) {
                (Some(p), None, None) => {
                    let pointer = p.get_ref();
                    if !(pointer.is_empty() || pointer.starts_with('/')) {
                        return Err(self.error(p.span().start, format!("json {pointer:?} is not a JSON pointer: it starts with `/`, e.g. \"/id\" or \"/items/0/name\"")));
                    }
                    Source::Json(pointer.clone())
                }
                (None, Some(r), None) => {
                    Source::Regex(regex::bytes::Regex::new(r.get_ref()).map_err(|err| {
                        self.error(r.span().start, format!("regex {:?}: {err}", r.get_ref()))
                    })?)
                }
                (None, None, Some(h)) => Source::Header(h.get_ref().clone()),
                _ => {
                    return Err(self.error(e.span().start, "an extraction takes one of `json` (a JSON pointer), `regex` or `header`, and `as`".into()));
                }
            };
            let var = raw.name.get_ref();
            if !template::is_name(var) || BUILT_INS.contains(&var.as_str()) {
                return Err(self.error(raw.name.span().start, format!("`as = {var:?}`: a variable name is letters, digits and `_`, not starting with a digit, and not vu, iter, seq or rand")));
            }
            let slot = self.slot(var);
            if !known.contains(&slot) {
                known.push(slot);
            }
            extract.push(Extract { from, slot });
        }
        Ok(extract)
    }
}

impl Scenario {
    /// Reads and compiles the scenario at `path`; `url`, when given, is the
    /// server to load, instead of the file's `base`.
    pub fn load(path: &Path, url: Option<&str>) -> Result<Scenario, ScenarioError> {
        load(path, url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn error(text: &str) -> String {
        let (_dir, path) = write(text);
        let e = load(&path, None).unwrap_err().to_string();
        e.split_once("s.toml:")
            .map_or(e.clone(), |(_, rest)| rest.to_owned())
    }

    #[test]
    fn think_times_take_three_forms() {
        assert_eq!(think("250ms"), Ok(Think::Fixed(Duration::from_millis(250))));
        assert_eq!(think("0"), Ok(Think::None));
        assert_eq!(
            think("uniform:1s..1.5s"),
            Ok(Think::Uniform(
                Duration::from_secs(1),
                Duration::from_millis(1500)
            ))
        );
        assert_eq!(
            think("exp:10ms"),
            Ok(Think::Exponential(Duration::from_millis(10)))
        );
        assert!(think("2s..1s").unwrap_err().contains("low end"));
        assert!(think("fast").unwrap_err().contains("write a time"));
    }

    #[test]
    fn a_flow_compiles_with_its_variables_in_order() {
        let (_dir, path) = write(
            r#"
base = "http://127.0.0.1:9"
[[flow]]
name = "write"
weight = 3
[[flow.step]]
name = "post"
method = "post"
url = "/m"
body = '{"a":1}'
extract = [{ json = "/id", as = "id" }]
[[flow.step]]
method = "PUT"
url = "http://127.0.0.1:9/m/${id}"
[[flow]]
name = "read"
[[flow.step]]
url = "/"
"#,
        );
        let s = load(&path, None).unwrap();
        assert_eq!(s.total_weight, 4);
        assert_eq!(s.variables, ["id"]);
        let names: Vec<_> = s
            .steps()
            .map(|(f, st)| format!("{}/{}/{}", f.name, st.name, st.index.unwrap()))
            .collect();
        assert_eq!(names, ["write/post/0", "write/2/1", "read/1/2"]);
        assert_eq!(s.flows[0].steps[0].method, "POST");
        assert_eq!(s.url, "http://127.0.0.1:9");
        assert_eq!((s.pick(0), s.pick(2), s.pick(3)), (0, 0, 1));
    }

    /// A header the step gives replaces the file's of that name, whatever
    /// its case: sent once (gunicorn refuses two Content-Types).
    #[test]
    fn a_steps_header_replaces_the_files_of_that_name() {
        let (_dir, path) = write(
            r#"
base = "http://127.0.0.1:9"
headers = ["Content-Type: application/json", "X-Team: a"]
[[flow]]
name = "f"
[[flow.step]]
method = "POST"
url = "/m"
headers = ["content-type: text/plain"]
body = "x"
[[flow.step]]
url = "/n"
"#,
        );
        let s = load(&path, None).unwrap();
        let bytes = |i: usize| {
            String::from_utf8(s.flows[0].steps[i].request.whole().unwrap().to_vec()).unwrap()
        };
        let first = bytes(0).to_ascii_lowercase();
        assert_eq!(first.matches("content-type:").count(), 1, "{first}");
        assert!(first.contains("content-type: text/plain"), "{first}");
        assert!(first.contains("x-team: a"), "{first}");
        assert!(bytes(1).contains("Content-Type: application/json"));
    }

    #[test]
    fn mistakes_name_their_line_and_column() {
        let head = "base = \"http://h:1\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\n";
        assert!(
            error(&format!("{head}url = \"/a/${{id}}\"\n"))
                .starts_with("5:11: `${id}` is not set before this step")
        );
        assert!(
            error(&format!("{head}url = \"/\"\nthink = \"soon\"\n")).starts_with("6:9: think time")
        );
        assert!(
            error(&format!("{head}url = \"/\"\ncolour = 1\n"))
                .starts_with("6:1: unknown field `colour`")
        );
        assert!(
            error(&format!(
                "{head}url = \"/\"\nextract = [{{ regex = \"(\", as = \"x\" }}]\n"
            ))
            .starts_with("6:22: regex")
        );
        assert!(
            error(&format!(
                "{head}url = \"/\"\nextract = [{{ json = \"id\", as = \"x\" }}]\n"
            ))
            .contains("JSON pointer")
        );
        assert!(
            error(&format!(
                "{head}url = \"/\"\nextract = [{{ header = \"A\", json = \"/a\", as = \"x\" }}]\n"
            ))
            .contains("one of `json`")
        );
        assert!(
            error(&format!(
                "{head}url = \"/\"\nextract = [{{ header = \"A\", as = \"vu\" }}]\n"
            ))
            .contains("not vu")
        );
        assert!(error(&format!("{head}url = \"/a b\"\n")).starts_with("5:10: url"));
        assert!(error(&format!("{head}url = \"ftp://x/\"\n")).contains("give a path"));
        assert!(
            error(&format!(
                "{head}url = \"/\"\ncheck = {{ status = \"abc\" }}\n"
            ))
            .contains("is not a status")
        );
        assert!(
            error("[[flow]]\nname = \"f\"\n[[flow.step]]\nurl = \"/\"\n")
                .contains("no server to load")
        );
        assert!(error("base = \"http://h:1\"\n").contains("no flow"));
        assert!(
            error("base = \"http://h:1\"\n[[flow]]\nname = \"f\"\n")
                .starts_with("2:1: flow \"f\" has no step")
        );
        assert!(error("base = \"http://h:1/x\"\n").contains("the base is the server alone"));
        assert!(
            error(&format!(
                "{head}url = \"/\"\nheaders = [\"Content-Length: 3\"]\n"
            ))
            .contains("drop this header")
        );
        assert!(
            error(&format!(
                "{head}url = \"/\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\nurl = \"/\"\n"
            ))
            .contains("a second flow named")
        );
        assert!(error("base = \"http://h:1\"\n[[flow]]\nname = \"f\"\nweight = 0\n[[flow.step]]\nurl = \"/\"\n").starts_with("4:10: weight 0"));
        // A weight so large that the sum would overflow (newcomer L8).
        let huge = error(
            "base = \"http://h:1\"\n[[flow]]\nname = \"f\"\nweight = 9223372036854775807\n[[flow.step]]\nurl = \"/\"\n",
        );
        assert!(huge.contains("from 1 to 1000000"), "{huge}");
    }

    #[test]
    fn data_rows_are_the_users_own_and_must_be_enough() {
        let (dir, path) = write(
            "base = \"http://h:1\"\ndata = \"users.csv\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\nurl = \"/u/${user}\"\nheaders = [\"X-Key: ${key}\"]\n",
        );
        std::fs::write(dir.path().join("users.csv"), "user,key\nann,k1\nbob,k2\n").unwrap();
        let s = load(&path, None).unwrap();
        let data = s.data.as_ref().unwrap();
        assert_eq!(data.rows.len(), 2);
        assert_eq!(&*data.rows[1][0], b"bob");
        assert!(s.check_users(2, false).is_ok());
        let err = s.check_users(3, false).unwrap_err();
        assert!(
            err.contains("has 2 data rows and the run has 3 virtual users"),
            "{err}"
        );
        // Figures that would not fit in half the free memory are refused
        // before the load (newcomer M4).
        let err = s.check_figures(2, Some(200 << 10)).unwrap_err();
        assert!(err.contains("give fewer threads (-t)"), "{err}");
        assert!(s.check_figures(2, Some(1 << 30)).is_ok());
        assert!(s.check_figures(64, None).is_ok());
        let err = s.check_users(28, true).unwrap_err();
        assert!(
            err.contains("this segment's last virtual user is number 28 of the whole run"),
            "{err}"
        );
        std::fs::write(dir.path().join("users.csv"), "user,2key\nann,k1\n").unwrap();
        assert!(
            load(&path, None)
                .unwrap_err()
                .to_string()
                .contains("\"2key\" is not a variable name")
        );
        std::fs::write(dir.path().join("users.csv"), "user,key\n").unwrap();
        assert!(
            load(&path, None)
                .unwrap_err()
                .to_string()
                .contains("has no row")
        );
        std::fs::write(dir.path().join("users.csv"), "user,user\nann,bob\n").unwrap();
        let err = load(&path, None).unwrap_err().to_string();
        assert!(err.contains("names the column \"user\" twice"), "{err}");
    }
}
