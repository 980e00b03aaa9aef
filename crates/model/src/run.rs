//! The [`Run`] envelope, its identifier and its kind.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::{Environment, Metric};

/// Version of the JSON form of a [`Run`]. Bump it on any change that an older
/// reader could misread; readers refuse versions newer than their own.
pub const SCHEMA_VERSION: u32 = 1;

/// One measurement of any kind: the unit that is saved, shown, exported and
/// compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, from = "Record")]
pub struct Run {
    pub schema_version: u32,
    /// Time-ordered unique identifier.
    pub id: RunId,
    pub kind: Kind,
    /// A short human description, shown by `dyno history`.
    pub description: String,
    pub started_at: Timestamp,
    /// Wall-clock time of the whole run, warm-up included.
    pub duration_ns: u64,
    #[serde(default)]
    pub tags: Vec<String>,
    pub environment: Environment,
    /// Exactly what was asked for, so the run can be repeated. Its shape
    /// depends on [`Run::kind`].
    pub settings: serde_json::Value,
    pub metrics: Vec<Metric>,
    /// Name of the metric that sums the run up in one figure, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

/// A [`Run`] as read, before the metrics of a record written by an earlier
/// dyno are given the declarations and names today's engines give them
/// ([`crate::legacy`]). The same fields, so stored runs read unchanged.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    schema_version: u32,
    id: RunId,
    kind: Kind,
    description: String,
    started_at: Timestamp,
    duration_ns: u64,
    #[serde(default)]
    tags: Vec<String>,
    environment: Environment,
    settings: serde_json::Value,
    metrics: Vec<Metric>,
    #[serde(default)]
    headline: Option<String>,
    #[serde(default)]
    warnings: Vec<Warning>,
}

impl From<Record> for Run {
    fn from(r: Record) -> Run {
        let mut metrics = r.metrics;
        for m in &mut metrics {
            // Declared under the names it was saved with, then renamed: the
            // old declarations of quick's lines know their prefixes.
            crate::legacy::declare(r.kind, m);
            crate::legacy::quick_part(r.kind, m);
        }
        Run {
            schema_version: r.schema_version,
            id: r.id,
            kind: r.kind,
            description: r.description,
            started_at: r.started_at,
            duration_ns: r.duration_ns,
            tags: r.tags,
            environment: r.environment,
            settings: r.settings,
            metrics,
            headline: r.headline,
            warnings: r.warnings,
        }
    }
}

impl Run {
    /// A new, empty run of `kind` that starts now.
    pub fn new(kind: Kind, description: impl Into<String>) -> Self {
        Run {
            schema_version: SCHEMA_VERSION,
            id: RunId::new(),
            kind,
            description: description.into(),
            started_at: Timestamp::now(),
            duration_ns: 0,
            tags: Vec::new(),
            environment: Environment::default(),
            settings: serde_json::Value::Null,
            metrics: Vec::new(),
            headline: None,
            warnings: Vec::new(),
        }
    }

    /// The metric named `name`, if the run has one.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// The metric named `name` of `dyno quick`'s part `part`
    /// ([`Metric::of_part`]), if the run has one; `part` `None` finds one
    /// of no part. A quick run holds `latency_ns` in its http and its db
    /// part both: [`Run::metric`] would return whichever came first.
    pub fn metric_of(&self, part: Option<&str>, name: &str) -> Option<&Metric> {
        self.metrics
            .iter()
            .find(|m| m.name == name && m.part() == part)
    }

    /// The metric `m` names as `name` (its [`Metric::of`] or
    /// [`Metric::rate_of`]): the one of that name with the same labels, so
    /// the same subject and the same quick part (`responses{part=http}`
    /// for `requests_per_sec{part=http}`, never the db part's).
    pub fn referenced(&self, m: &Metric, name: &str) -> Option<&Metric> {
        self.metrics
            .iter()
            .find(|r| r.name == name && r.labels == m.labels)
    }

    /// The headline metric, if one is named and present.
    pub fn headline_metric(&self) -> Option<&Metric> {
        self.headline.as_deref().and_then(|name| self.metric(name))
    }

    /// Adds a warning.
    pub fn warn(&mut self, code: &str, message: impl Into<String>) {
        self.warnings.push(Warning {
            code: code.to_owned(),
            message: message.into(),
        });
    }
}

/// Something that makes a run's numbers less trustworthy, with a stable
/// machine-readable `code` and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

/// A warning as an engine decides it: one variant of the engine's own
/// enum (`HttpWarning`, `DiskWarning`, …), with a stable code and a
/// message for people (its `Display`). Any judgement converts into the
/// run's [`Warning`].
pub trait Judgement: std::fmt::Display {
    /// The stable, machine-readable code.
    fn code(&self) -> &'static str;
}

impl<J: Judgement> From<J> for Warning {
    fn from(judgement: J) -> Self {
        Warning {
            code: judgement.code().to_owned(),
            message: judgement.to_string(),
        }
    }
}

/// What a run measured. Each kind has its own `settings` shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `dyno quick`: a summary of the machine across families.
    Quick,
    /// A built-in CPU workload.
    Cpu,
    /// An HTTP load test.
    Http,
    /// A disk test.
    Disk,
    /// Timed commands.
    Exec,
    /// A scalability analysis.
    Scale,
    /// A database benchmark.
    Db,
    /// A comparison of saved runs (`dyno compare`): ratios, verdicts and a
    /// geometric-mean score, with what differs between the runs.
    Compare,
    /// Figures measured outside dyno's engines and imported (`dyno import
    /// --figures`): dyno's own bench ratios to its peers, or any tool's.
    Figures,
}

impl Kind {
    /// Every kind, in the order they are documented.
    pub const ALL: [Kind; 9] = [
        Kind::Quick,
        Kind::Cpu,
        Kind::Http,
        Kind::Disk,
        Kind::Exec,
        Kind::Scale,
        Kind::Db,
        Kind::Compare,
        Kind::Figures,
    ];

    /// The lowercase name used in JSON, the store and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Quick => "quick",
            Kind::Cpu => "cpu",
            Kind::Http => "http",
            Kind::Disk => "disk",
            Kind::Exec => "exec",
            Kind::Scale => "scale",
            Kind::Db => "db",
            Kind::Compare => "compare",
            Kind::Figures => "figures",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of [`Kind::ALL`].
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "unknown run kind '{0}': expected one of quick, cpu, http, disk, exec, scale, db, compare, figures"
)]
pub struct ParseKindError(String);

impl FromStr for Kind {
    type Err = ParseKindError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseKindError(s.to_owned()))
    }
}

/// A run's identifier: a ULID, so identifiers sort by creation time, are
/// unique across processes and machines without coordination, and are short
/// enough (26 characters) to type or to abbreviate to a unique prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(ulid::Ulid);

impl RunId {
    /// A fresh identifier for a run starting now.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        RunId(ulid::Ulid::new())
    }

    /// The identifier made of a time (milliseconds since the Unix epoch)
    /// and 80 bits that tell runs of the same millisecond apart: the same
    /// parts give the same id, as a run derived from others needs.
    pub fn from_parts(timestamp_ms: u64, random: u128) -> Self {
        RunId(ulid::Ulid::from_parts(timestamp_ms, random))
    }

    /// The creation time encoded in the identifier, in milliseconds since the
    /// Unix epoch.
    pub fn timestamp_ms(&self) -> u64 {
        self.0.timestamp_ms()
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A string that is not a valid run identifier.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "'{0}' is not a run id: ids are 26 characters of Crockford base32, as `dyno history` lists them"
)]
pub struct ParseRunIdError(String);

impl FromStr for RunId {
    type Err = ParseRunIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ulid::Ulid::from_string(s)
            .map(RunId)
            .map_err(|_| ParseRunIdError(s.to_owned()))
    }
}

impl Serialize for RunId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RunId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_time_ordered_and_round_trip() {
        let a = RunId::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = RunId::new();
        assert!(a < b, "{a} should sort before {b}");
        assert!(a.to_string() < b.to_string());
        assert_eq!(a.to_string().len(), 26);
        assert_eq!(a.to_string().parse::<RunId>().unwrap(), a);
        assert_eq!(a.to_string().to_lowercase().parse::<RunId>().unwrap(), a);
        assert!("not-an-id".parse::<RunId>().is_err());
    }

    #[test]
    fn kinds_parse_case_insensitively_and_reject_unknown_names() {
        for kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>().unwrap(), kind);
            assert_eq!(kind.as_str().to_uppercase().parse::<Kind>().unwrap(), kind);
        }
        let err = "htttp".parse::<Kind>().unwrap_err().to_string();
        assert!(err.contains("htttp") && err.contains("http"), "{err}");
    }

    #[test]
    fn a_run_round_trips_through_json() {
        let mut run = Run::new(Kind::Cpu, "int64 on 1 thread");
        run.tags = vec!["laptop".into()];
        run.settings = serde_json::json!({"threads": 1});
        run.metrics.push(Metric::new(
            "int64_1t_ns",
            crate::Unit::Ns,
            crate::Direction::LowerIsBetter,
            1.5e9,
        ));
        run.headline = Some("int64_1t_ns".into());
        run.warn("governor", "the CPU governor is powersave");
        let json = serde_json::to_string(&run).unwrap();
        let back: Run = serde_json::from_str(&json).unwrap();
        assert_eq!(back, run);
        assert_eq!(back.headline_metric().unwrap().value, 1.5e9);
    }

    #[test]
    fn unknown_fields_are_rejected_rather_than_silently_dropped() {
        let run = Run::new(Kind::Cpu, "x");
        let mut value = serde_json::to_value(&run).unwrap();
        value["surprise"] = serde_json::json!(1);
        let err = serde_json::from_value::<Run>(value)
            .unwrap_err()
            .to_string();
        assert!(err.contains("surprise"), "{err}");
    }
}
