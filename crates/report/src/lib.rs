//! Everything that turns a [`dyno_model::Run`] into something to read:
//! human tables (history, a run in full, the machine), and the machine
//! formats (JSON, JSON Lines, CSV) behind the one [`Exporter`] trait, and
//! the offline HTML page of charts ([`html`]).
//!
//! Nothing here measures or saves; it only renders what the engines
//! returned. Human renderers return `String`s so the binary decides where
//! they go.

mod capacity;
pub mod changes;
mod compare;
mod db;
mod disk;
mod doctor;
mod exec;
mod export;
mod figures;
mod format;
mod hdrlog;
pub mod html;
mod http;
mod hyperfine;
mod quick;
mod replay;
mod scale;
mod stages;
mod text;
mod view;

pub use capacity::{capacity_answer, short_rate};
pub use compare::{
    Comparison, GateFindings, Row, compare_csv, compare_markdown, compare_report, gate,
    metric_short, metric_title, surely_worse,
};
pub use db::db_report;
pub use disk::disk_report;
pub use doctor::doctor_report;
pub use exec::exec_report;
pub use export::{Csv, Exporter, Json, JsonLines, exporter};
pub use format::{
    counted, format_interval, format_metric_value, format_parallel_fraction, format_value,
    metric_label,
};
pub use hdrlog::write_latency_log;
pub use http::{ab_report, http_report};
pub use hyperfine::{hyperfine_csv, hyperfine_json, hyperfine_markdown};
pub use quick::quick_report;
pub use scale::scale_report;
pub use text::{environment, history, run_details, run_details_before_report, run_header};
pub use view::{show_report, text_report};

/// A fixed run for the snapshot tests of every view.
#[cfg(test)]
pub(crate) mod fixture {
    use dyno_model::{
        Cache, Cpu, Direction, DynoBuild, Environment, Kind, Limits, Memory, Metric, Network, Run,
        Uncertainty, UncertaintyMethod, Unit,
    };

    pub(crate) fn environment() -> Environment {
        Environment {
            hostname: Some("bench-a".into()),
            os: Some("Debian GNU/Linux 12 (bookworm)".into()),
            kernel: Some("6.1.0-26-amd64".into()),
            arch: Some("x86_64".into()),
            virtualization: Some("none".into()),
            cpu: Cpu {
                model: Some("AMD Opteron(tm) Processor 6272".into()),
                vendor: Some("AuthenticAMD".into()),
                sockets: Some(2),
                physical_cores: Some(16),
                logical_cores: Some(32),
                caches: vec![
                    Cache {
                        level: 1,
                        kind: "Data".into(),
                        size_bytes: 16 << 10,
                        shared_by_cpus: Some(1),
                    },
                    Cache {
                        level: 2,
                        kind: "Unified".into(),
                        size_bytes: 2 << 20,
                        shared_by_cpus: Some(2),
                    },
                ],
                governor: Some("performance".into()),
                frequency_current_hz: Some(2_100_000_000),
                frequency_max_hz: None,
            },
            memory: Memory {
                total_bytes: Some(64 << 30),
                available_bytes: Some(60 << 30),
                swap_total_bytes: Some(0),
                swap_used_bytes: Some(0),
            },
            limits: Limits {
                open_files_soft: Some(1024),
                open_files_hard: Some(u64::MAX),
            },
            network: Network {
                somaxconn: Some(4096),
                ephemeral_ports: Some([32768, 60999]),
                tcp_tw_reuse: Some(2),
            },
            load_average: Some([0.05, 0.10, 0.02]),
            dyno: DynoBuild {
                version: Some("0.1.0".into()),
                git_revision: Some("0123456789ab".into()),
            },
            storage: None,
        }
    }

    pub(crate) fn run() -> Run {
        let mut run = Run::new(Kind::Quick, "int64 on 1 and 32 threads");
        run.id = "01JD5Z7M3Q8XK2V4N6R9T0W1YB".parse().unwrap();
        run.started_at = "2026-11-22T09:30:00Z".parse().unwrap();
        run.duration_ns = 31_250_000_000;
        run.tags = vec!["baseline".into(), "opteron".into()];
        run.environment = environment();
        run.settings = serde_json::json!({"int64": {"iterations": 100_000_000, "repetitions": 5}});
        let mut time = Metric::new("int64_1t_ns", Unit::Ns, Direction::LowerIsBetter, 1.25e9);
        time.samples = vec![1.24e9, 1.25e9, 1.26e9];
        time.uncertainty = Some(Uncertainty {
            method: UncertaintyMethod::StudentT,
            confidence: 0.95,
            low: 1.225e9,
            high: 1.275e9,
            n: 3,
            stddev: Some(1e7),
        });
        run.metrics = vec![
            time,
            Metric::new(
                "int64_1t_ops_per_sec",
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                8.0e7,
            ),
            Metric::new(
                "int64_speedup",
                Unit::Ratio,
                Direction::HigherIsBetter,
                10.77,
            ),
        ];
        run.headline = Some("int64_1t_ns".into());
        run.warn(
            "machine_busy",
            "1-minute load average is 9.00 on 32 logical cores",
        );
        run
    }
}
