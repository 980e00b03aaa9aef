//! Figures measured outside dyno's engines and saved as a run
//! (`dyno import --figures FILE`): dyno's own `bench/` ratios to its
//! peers, or any tool's numbers, so that `dyno changes` and `dyno
//! compare` follow them like any run. The file names what was measured,
//! how, and each figure with its unit and its better direction.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Record;
use crate::{Direction, Kind, Unit};

/// What a figures run measured: the name of the measurement (a bench
/// script) and the settings it ran with. Both are the series' identity:
/// figures of other settings are another series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct FiguresRecord {
    /// What measured the figures (`bench/h2-vs-h2load.sh`).
    pub name: String,
    /// What it ran with (rounds, seconds, connections), as it gave them.
    pub settings: BTreeMap<String, serde_json::Value>,
}

impl Record for FiguresRecord {
    const KIND: Kind = Kind::Figures;
}

/// The file `dyno import --figures` reads.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FiguresFile {
    /// What measured the figures.
    pub name: String,
    /// A line for `dyno history`; the name when absent.
    #[serde(default)]
    pub description: Option<String>,
    /// What it ran with; figures of other settings are another series.
    #[serde(default)]
    pub settings: BTreeMap<String, serde_json::Value>,
    pub figures: Vec<Figure>,
}

/// One figure of a [`FiguresFile`].
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// A snake_case name (`rate_ratio`).
    pub name: String,
    /// What the figure is of (`{"peer": "h2load", "path": "/1m.bin"}`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[schemars(with = "String")]
    pub unit: Unit,
    #[schemars(with = "String")]
    pub direction: Direction,
    /// The repeated measurements (rounds) behind the figure; its value is
    /// their mean, with a 95% interval from two on.
    #[serde(default)]
    pub samples: Vec<f64>,
    /// The figure, when there are no samples.
    #[serde(default)]
    pub value: Option<f64>,
}

impl FiguresFile {
    /// Reads and checks `text`: a name, at least one figure, each named in
    /// snake_case with samples or a value (not both), no two with
    /// the same name and labels.
    pub fn parse(text: &str) -> Result<FiguresFile, String> {
        let file: FiguresFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.name.trim().is_empty() {
            return Err("\"name\" is empty: say what measured the figures".into());
        }
        if file.figures.is_empty() {
            return Err("\"figures\" is empty: there is nothing to save".into());
        }
        let mut seen = BTreeSet::new();
        for figure in &file.figures {
            figure.check()?;
            let shown = crate::labelled(&figure.name, &figure.labels);
            if !seen.insert(shown.clone()) {
                return Err(format!(
                    "figure {shown} is given twice: give each its own name or labels"
                ));
            }
        }
        Ok(file)
    }
}

impl Figure {
    fn check(&self) -> Result<(), String> {
        let name = &self.name;
        let snake = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !snake {
            return Err(format!(
                "figure name '{name}' is not snake_case (a-z, 0-9, _): e.g. rate_ratio"
            ));
        }
        match (&self.samples[..], self.value) {
            ([], None) => Err(format!("figure {name} has neither samples nor a value")),
            ([_, ..], Some(_)) => Err(format!(
                "figure {name} has both samples and a value: its value is the samples' mean, give one or the other"
            )),
            // JSON holds no NaN or infinity: a number out of range is
            // serde's error.
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_checked_before_anything_is_saved() {
        let ok = r#"{"name": "bench/x.sh", "settings": {"rounds": 3},
            "figures": [{"name": "rate_ratio", "labels": {"peer": "wrk"}, "unit": "ratio",
                         "direction": "higher_is_better", "samples": [1.0, 1.1, 0.9]},
                        {"name": "rate_ratio", "labels": {"peer": "ab"}, "unit": "ratio",
                         "direction": "higher_is_better", "value": 2.5}]}"#;
        let file = FiguresFile::parse(ok).unwrap();
        assert_eq!(file.figures.len(), 2);
        assert_eq!(file.settings["rounds"], 3);
        let figure = |body: &str| {
            format!(
                r#"{{"name": "b", "figures": [{{"name": "r", "unit": "ratio", "direction": "higher_is_better", {body}}}]}}"#
            )
        };
        for (bad, says) in [
            (r#"{"name": "", "figures": []}"#.to_owned(), "\"name\" is empty"),
            (r#"{"name": "b", "figures": []}"#.to_owned(), "nothing to save"),
            (r#"{"name": "b"}"#.to_owned(), "missing field `figures`"),
            (r#"{"name": "b", "figures": [], "x": 1}"#.to_owned(), "unknown field `x`"),
            (figure(r#""value": 1, "samples": [1]"#), "both samples and a value"),
            (figure(r#""samples": []"#), "neither samples nor a value"),
            (figure(r#""value": 1e999"#), "number out of range"),
            (
                figure(r#""value": 1}, {"name": "r", "unit": "ratio", "direction": "higher_is_better", "value": 2"#),
                "given twice",
            ),
            (
                r#"{"name": "b", "figures": [{"name": "Rate", "unit": "ratio", "direction": "higher_is_better", "value": 1}]}"#.to_owned(),
                "not snake_case",
            ),
            (
                r#"{"name": "b", "figures": [{"name": "r", "unit": "parsecs", "direction": "higher_is_better", "value": 1}]}"#.to_owned(),
                "unknown variant `parsecs`",
            ),
        ] {
            let e = FiguresFile::parse(&bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
