//! The Run record: the one contract between dyno's engines, its store and its
//! exporters.
//!
//! Every measurement, of every kind, becomes a [`Run`]: what was asked for
//! ([`Run::settings`]), where it ran ([`Environment`]), what was measured
//! ([`Metric`]) and what makes the numbers less trustworthy ([`Warning`]).
//! These are plain serde types with no I/O; the JSON form is versioned by
//! [`SCHEMA_VERSION`] and described by `schema/run.schema.json` at the root of
//! the repository.

mod environment;
pub mod html;
mod legacy;
mod metric;
pub mod names;
mod read;
pub mod record;
mod run;
mod segment;
pub mod size;
pub mod units;

pub use environment::{Cache, Cpu, DynoBuild, Environment, Limits, Memory, Network, Storage};
pub use metric::{
    Direction, Histogram, Merge, Metric, Percentile, Role, Samples, Uncertainty, UncertaintyMethod,
    Unit, labelled,
};
pub use read::{ReadRunsError, RecordError, read_run, read_runs};
pub use run::{
    Judgement, Kind, ParseKindError, ParseRunIdError, Run, RunId, SCHEMA_VERSION, Warning,
};
pub use segment::{MAX_SEGMENTS, ParseSegmentError, Segment, fingerprint};

/// The checked-in JSON Schema must accept every shape the types can take.
#[cfg(test)]
mod schema_tests {
    use super::*;

    fn validator() -> jsonschema::Validator {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/run.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    }

    fn errors(run: &serde_json::Value) -> Vec<String> {
        validator()
            .iter_errors(run)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect()
    }

    fn full_run() -> Run {
        let mut run = Run::new(Kind::Http, "GET /hello");
        run.tags = vec!["a".into()];
        run.environment.hostname = Some("h".into());
        run.environment.cpu.caches.push(Cache {
            level: 1,
            kind: "Data".into(),
            size_bytes: 32768,
            shared_by_cpus: None,
        });
        run.environment.network.ephemeral_ports = Some([32768, 60999]);
        run.environment.load_average = Some([0.0, 0.5, 1.0]);
        run.environment.limits.open_files_soft = Some(u64::MAX);
        let mut latency = Metric::new("latency_ns", Unit::Ns, Direction::LowerIsBetter, 1.0e5)
            .with_label("command", "make -j {N}")
            .with_label("param.N", "2");
        latency.histogram = Some(Histogram {
            encoding: "hdr-v2-deflate-base64".into(),
            data: "HISTFAAAAB94nJNpmSzMwMDAxQABzFCaEUzz2X+AsQEuSgNu".into(),
            count: 10,
            min: 1.0,
            max: 2.0,
            mean: 1.5,
            stddev: 0.5,
            percentiles: vec![Percentile {
                percentile: 99.9,
                value: 2.0,
            }],
        });
        latency.uncertainty = Some(Uncertainty {
            method: UncertaintyMethod::Bootstrap,
            confidence: 0.95,
            low: 0.9e5,
            high: 1.1e5,
            n: 10,
            stddev: Some(1.0),
        });
        latency.samples = vec![1.0, 2.0];
        run.metrics.push(latency);
        run.headline = Some("latency_ns".into());
        run.warn("client_saturated", "the client used 95% of its CPU");
        run.set_record(&record::HttpRecord::default());
        run
    }

    #[test]
    fn empty_and_full_runs_validate() {
        let empty = serde_json::to_value(Run::new(Kind::Cpu, "")).unwrap();
        assert_eq!(errors(&empty), Vec::<String>::new());
        let full = serde_json::to_value(full_run()).unwrap();
        assert_eq!(errors(&full), Vec::<String>::new());
    }

    #[test]
    fn the_schema_rejects_what_the_types_reject() {
        let good = serde_json::to_value(full_run()).unwrap();
        type Mutation = fn(&mut serde_json::Value);
        let mutations: [(&str, Mutation); 6] = [
            ("unknown unit", |r| {
                r["metrics"][0]["unit"] = "furlongs".into()
            }),
            ("bad id", |r| r["id"] = "not-a-ulid".into()),
            ("a label that is not a string", |r| {
                r["metrics"][0]["labels"]["param.N"] = 2.into()
            }),
            ("unknown field", |r| r["extra"] = 1.into()),
            ("newer version", |r| r["schema_version"] = 2.into()),
            ("missing metrics", |r| {
                r.as_object_mut().unwrap().remove("metrics");
            }),
        ];
        for (what, mutate) in mutations {
            let mut bad = good.clone();
            mutate(&mut bad);
            assert!(
                !errors(&bad).is_empty(),
                "the schema accepted a run with {what}"
            );
            assert!(
                serde_json::from_value::<Run>(bad).is_err() || what == "newer version",
                "the types accepted a run with {what}"
            );
        }
    }
}
