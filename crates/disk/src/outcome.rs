//! Turns measurements into the metrics of a Run: per test and operation
//! (labels `test` and `op`), the best pass's throughput and IOPS with every
//! pass as samples, the latency of all timed passes as a histogram, and
//! the CPU time per I/O.

use dyno_model::names::{common, disk, label};
use dyno_model::{Direction, Merge, Metric, Samples, Unit};
use dyno_stats::hdr;

use crate::engine::new_histogram;
use crate::run::Measurement;

/// The metrics of `measurements`, in table order.
pub fn metrics(measurements: &[Measurement]) -> Vec<Metric> {
    let mut out = Vec::new();
    for m in measurements {
        let Some(best) = m.best() else { continue };
        let label = |metric: Metric| {
            metric
                .with_label(label::TEST, m.test.clone())
                .with_label(label::OP, m.op.clone())
        };
        let metadata = m.spec.is_none() && m.test == "files";
        if !metadata {
            let mut t = Metric::new(
                disk::THROUGHPUT_BYTES_PER_SEC,
                Unit::BytesPerSec,
                Direction::HigherIsBetter,
                best.bytes_per_sec(),
            );
            t.samples = m.passes.iter().map(|p| p.bytes_per_sec()).collect();
            // CrystalDiskMark's figure: what the run exists for. Each pass
            // repeats the whole test, so the samples are repeated runs.
            out.push(label(t.primary().samples_are(Samples::Runs)));
        }
        let mut iops = Metric::new(
            if metadata {
                disk::FILES_PER_SEC
            } else {
                disk::IOPS
            },
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            best.iops(),
        );
        iops.samples = m.passes.iter().map(|p| p.iops()).collect();
        // IOPS is the throughput over the block size: the same figure in
        // other units, never counted twice; a metadata test's files per
        // second is its own figure.
        let iops = if metadata {
            iops.primary()
        } else {
            iops.derived_of(disk::THROUGHPUT_BYTES_PER_SEC)
        };
        out.push(label(iops.samples_are(Samples::Runs)));
        let mut latency = new_histogram();
        for p in &m.passes {
            let _ = latency.add(&p.latency);
        }
        let mut l = Metric::new(
            common::LATENCY,
            Unit::Ns,
            Direction::LowerIsBetter,
            latency.mean(),
        );
        l.histogram = Some(hdr::to_model(&latency));
        out.push(label(
            l.diagnostic()
                .merged(Merge::Histogram)
                .samples_are(Samples::Requests),
        ));
        let ios: u64 = m.passes.iter().map(|p| p.ios()).sum();
        let cpu: f64 = m.passes.iter().map(|p| p.cpu.as_nanos() as f64).sum();
        out.push(label(
            Metric::new(
                disk::CPU_PER_IO,
                Unit::Ns,
                Direction::LowerIsBetter,
                if ios > 0 { cpu / ios as f64 } else { 0.0 },
            )
            .diagnostic(),
        ));
        let short: u64 = m.passes.iter().map(|p| p.short).sum();
        if short > 0 {
            out.push(label(
                Metric::new(
                    disk::SHORT_IOS,
                    Unit::Count,
                    Direction::LowerIsBetter,
                    short as f64,
                )
                .context(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::empty_pass;
    use crate::spec::{Pattern, TestSpec};

    #[test]
    fn best_pass_values_with_every_pass_as_samples() {
        let pass = |ios: u64, cpu_ms: u64| {
            let mut p = empty_pass();
            p.reads = ios;
            p.bytes_read = ios * 4096;
            p.elapsed = Duration::from_secs(1);
            p.cpu = Duration::from_millis(cpu_ms);
            for _ in 0..ios {
                p.latency.record(100_000).unwrap();
            }
            p
        };
        let m = Measurement {
            test: "RND4K Q1T1".into(),
            spec: Some(TestSpec::new(Pattern::Random, 4096, 1, 1)),
            op: "read".into(),
            passes: vec![pass(1000, 10), pass(3000, 20)],
        };
        let metrics = metrics(&[m]);
        let get = |name: &str| metrics.iter().find(|m| m.name == name).unwrap();
        let t = get("throughput_bytes_per_sec");
        assert_eq!(t.value, 3000.0 * 4096.0, "the best pass");
        assert_eq!(t.samples, [1000.0 * 4096.0, 3000.0 * 4096.0]);
        assert_eq!(t.label("test"), Some("RND4K Q1T1"));
        assert_eq!(t.label("op"), Some("read"));
        assert_eq!(get("iops").value, 3000.0);
        assert_eq!(get("latency_ns").histogram.as_ref().unwrap().count, 4000);
        assert_eq!(get("cpu_ns_per_io").value, 30e6 / 4000.0);
        assert!(metrics.iter().all(|m| m.name != "short_ios"));
    }
}
