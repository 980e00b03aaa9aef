//! Each kind's typed settings record: what a [`Run`]'s `settings` holds,
//! as serde types with exactly the JSON keys dyno has always written.
//!
//! Data flow: an engine builds its kind's record from the settings it ran
//! with and what it observed, and stores it with [`Run::set_record`]; the
//! report views, `quick` and `scale` read it back with [`Run::record`]. No
//! reader looks a setting up by its name, so a renamed or retyped key fails
//! to compile or fails the fixture test (`tests/records.rs`), instead of
//! rendering `?` or `0`.
//!
//! What was *asked for* and what was *observed* while running (the TLS
//! session, the server's software, the disk engine chosen and why) are
//! separate types; the observed part is flattened into the same JSON object
//! so that stored runs read unchanged and [`crate::SCHEMA_VERSION`] stays 1.
//!
//! `Run::settings` itself stays a JSON value: merging segments, listing the
//! settings two sides differ in and the store treat it generically, and a
//! record written by a later dyno of the same schema version keeps its
//! unknown keys there. Every field an earlier dyno may have left out reads
//! with a default, so runs saved before a field existed still read.
//!
//! `schema/run.schema.json` describes each kind's record under `$defs`,
//! generated from these types by [`settings_schemas`]; a test fails when
//! the checked-in schema and the types disagree.

mod capacity;
mod compare;
mod db;
mod disk;
mod exec;
mod figures;
mod http;
mod quick;
mod scale;
mod segment;
mod stages;

pub use capacity::{
    CapacityAnswer, CapacityOutcome, CapacityRecord, CapacityStep, ConnectionSweep, LatencyLimit,
    Objective, UslSummary,
};
pub use compare::{CompareGroup, CompareRecord, Difference, Unmatched};
pub use db::{DbObserved, DbRecord, ScriptWeight};
pub use disk::{DiskObserved, DiskRecord};
pub use exec::{
    Bench, CommandSpec, ExecRecord, ExecSettings, Hooks, Output, Parameter, PlannedBenchmark,
    Policy, Shell, benches,
};
pub use figures::{Figure, FiguresFile, FiguresRecord};
pub use http::{
    FlowRecord, HttpObserved, HttpRecord, LoadModel, ReplayRecord, ScenarioRecord, StepRecord,
    TlsSession,
};
pub use quick::{QuickDisk, QuickHttp, QuickInt64, QuickLine, QuickRecord};
pub use scale::{FileSource, RunSource, ScaleRecord, WorkloadSource};
pub use segment::{
    GroupRecord, GroupSegment, PER_SEGMENT_SETTINGS, SUMMED_SETTINGS, SegmentRecord,
};
pub use stages::{RatePlanRecord, StageRecord};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Kind, Run};

/// A kind's settings record: the typed form of [`Run::settings`] for runs
/// of [`Record::KIND`].
pub trait Record: Serialize + DeserializeOwned + schemars::JsonSchema {
    /// The kind whose runs hold this record.
    const KIND: Kind;
}

/// Why a run's settings could not be read as its kind's record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The run is of another kind.
    #[error("run {id} is a {actual} run, not a {expected} run")]
    WrongKind {
        id: crate::RunId,
        expected: Kind,
        actual: Kind,
    },
    /// The settings do not have the record's shape.
    #[error("the settings of {kind} run {id} do not read as a {kind} record: {source}")]
    Shape {
        id: crate::RunId,
        kind: Kind,
        source: serde_json::Error,
    },
}

impl Run {
    /// The capacity search (`--find-max`) this run holds, if it is one:
    /// an http or db run's record, read without knowing which.
    pub fn capacity(&self) -> Option<CapacityRecord> {
        match self.kind {
            Kind::Http => self.record::<HttpRecord>().ok()?.capacity,
            Kind::Db => self.record::<DbRecord>().ok()?.capacity,
            _ => None,
        }
    }

    /// Stores `capacity` as the capacity search this run holds: an http or
    /// db run's, written without knowing which; other kinds hold none.
    pub fn set_capacity(&mut self, capacity: &CapacityRecord) {
        debug_assert!(
            matches!(self.kind, Kind::Http | Kind::Db),
            "a {} run holds no capacity search",
            self.kind
        );
        if let serde_json::Value::Object(settings) = &mut self.settings {
            settings.insert(
                "capacity".into(),
                serde_json::to_value(capacity).expect("a record serializes to JSON"),
            );
        }
    }

    /// This run's settings as its kind's typed record.
    pub fn record<R: Record>(&self) -> Result<R, RecordError> {
        if self.kind != R::KIND {
            return Err(RecordError::WrongKind {
                id: self.id,
                expected: R::KIND,
                actual: self.kind,
            });
        }
        R::deserialize(&self.settings).map_err(|source| RecordError::Shape {
            id: self.id,
            kind: self.kind,
            source,
        })
    }

    /// Stores `record` as this run's settings. Keys the record does not
    /// know (a segment's or a merged group's, put there by the binary)
    /// are kept, and so is the key of a field the record leaves out of its
    /// JSON (an optional part that is `None`): setting a record never
    /// removes a key.
    pub fn set_record<R: Record>(&mut self, record: &R) {
        debug_assert_eq!(
            self.kind,
            R::KIND,
            "a {} record on a {} run",
            R::KIND,
            self.kind
        );
        let value = serde_json::to_value(record).expect("a record serializes to JSON");
        match (&mut self.settings, value) {
            (serde_json::Value::Object(settings), serde_json::Value::Object(fields)) => {
                settings.extend(fields)
            }
            (settings, value) => *settings = value,
        }
    }
}

/// The JSON Schema of each kind's settings record, by kind name: what
/// `schema/run.schema.json` holds under `$defs` as `settings_<kind>`,
/// together with the definitions they refer to.
pub fn settings_schemas() -> serde_json::Map<String, serde_json::Value> {
    fn one<R: Record>(defs: &mut serde_json::Map<String, serde_json::Value>) {
        let generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| s.definitions_path = "/$defs/".into())
            .into_generator();
        let mut schema = generator.into_root_schema_for::<R>().to_value();
        let object = schema.as_object_mut().expect("a schema is an object");
        object.remove("$schema");
        if let Some(serde_json::Value::Object(nested)) = object.remove("$defs") {
            defs.extend(nested);
        }
        defs.insert(format!("settings_{}", R::KIND), schema);
    }
    let mut defs = serde_json::Map::new();
    one::<HttpRecord>(&mut defs);
    one::<DiskRecord>(&mut defs);
    one::<DbRecord>(&mut defs);
    one::<ExecRecord>(&mut defs);
    one::<ScaleRecord>(&mut defs);
    one::<QuickRecord>(&mut defs);
    one::<CompareRecord>(&mut defs);
    one::<FiguresRecord>(&mut defs);
    defs
}
