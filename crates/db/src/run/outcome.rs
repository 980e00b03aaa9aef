//! What a run of `dyno db run` measured ([`Outcome`]), its progress
//! figures, and its metrics.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use dyno_load::plan::RatePlan;
use dyno_load::pool;
use dyno_load::silence::Lost;
use dyno_load::stages::StageFigures;
use dyno_model::names::{common, db, label};
use dyno_model::{Direction, Merge, Metric, Unit};
use dyno_stats::hdr;
use hdrhistogram::Histogram;

use crate::script::CommandKind;

use super::*;

/// What the server is, as the run records it.
#[derive(Debug, Clone, Default)]
pub struct Server {
    pub version: String,
    /// The settings that decide what a run measures.
    pub settings: Vec<(String, String)>,
}

/// The figures so far, for a progress line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub elapsed: Duration,
    pub transactions: u64,
    pub failed: u64,
    /// The latencies of the committed transactions, added up.
    pub latency_sum: Duration,
    /// The schedule lags of the transactions started, added up (open
    /// model).
    pub lag_sum: Duration,
    /// Transactions started so far (open model: those whose lag is in
    /// `lag_sum`).
    pub started: u64,
    pub skipped: u64,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    /// Latency of each transaction that committed, in nanoseconds; in the
    /// open model from its due time.
    pub latency: Histogram<u64>,
    /// Spells in which the server ended no transaction while clients
    /// failed or waited (`target_lost`), from the end of the warm-up.
    pub lost: Vec<Lost>,
    /// Open model: latency from the real start.
    pub uncorrected: Histogram<u64>,
    /// Open model: from each due time to the real start.
    pub lag: Histogram<u64>,
    /// Open model: transactions skipped for being later than the latency
    /// limit before they started.
    pub skipped: u64,
    /// Open model: transactions due in the measured window that never
    /// started (every client was busy until the end).
    pub dropped: u64,
    /// Transactions under way when the run was cut at its deadline (or
    /// stopped): in no figure but this.
    pub unfinished: u64,
    /// `--rate-plan`: each stage's own figures (empty without a plan).
    pub stages: Vec<StageFigures>,
    /// Transactions that committed slower than the latency limit.
    pub late: u64,
    /// With `per_statement`: each script's commands' latencies.
    pub statements: Vec<Vec<Histogram<u64>>>,
    /// With `reconnect`: the connection time of each transaction.
    pub reconnects: Histogram<u64>,
    pub transactions: u64,
    /// Transactions given up, by SQLSTATE (after their retries).
    pub failed: BTreeMap<String, u64>,
    /// Retries, by the SQLSTATE that caused them.
    pub retries: BTreeMap<String, u64>,
    /// Transactions retried at least once (committed or failed in the
    /// end): pgbench's "number of transactions retried".
    pub retried: u64,
    /// Clients stopped by an error that is not retried, with the reason.
    pub aborted: Vec<String>,
    /// `-l`: the transaction logs written, and why any is incomplete.
    pub logs: Vec<PathBuf>,
    pub log_failures: Vec<String>,
    /// Committed transactions of each script, in the settings' order.
    pub per_script: Vec<u64>,
    /// With several scripts: each one's latency, in the settings' order.
    pub script_latency: Vec<Histogram<u64>>,
    /// Each second of the measured window: its commits and their latency
    /// (index 0 is the first second).
    pub timeline: Vec<Second>,
    /// What the clean-up before the run did (pgbench's vacuum), in words;
    /// empty when it was not asked for.
    pub vacuum: Vec<String>,
    /// From the moment every client was connected to the last one's end.
    pub elapsed: Duration,
    /// The time it took to connect every client.
    pub connect: Duration,
    /// CPU time of the client threads.
    pub cpu: Duration,
    /// How long the client threads waited, runnable, for a CPU: other
    /// work on the machine took it ([`dyno_load::pool::Pooled::cpu_wait`]).
    pub cpu_wait: Duration,
    pub scale: i64,
    pub server: Server,
    pub interrupted: bool,
    /// The wall-clock time the clients started (after connecting and the
    /// gate): what segments of one run compare to see they started together.
    pub started_at: SystemTime,
}

/// One second of a run's timeline.
#[derive(Debug, Clone)]
pub struct Second {
    /// Transactions that committed in it.
    pub transactions: u64,
    /// Their latencies (two significant figures: enough for a p99 over
    /// time, at an eighth of a full histogram's memory).
    pub latency: Histogram<u64>,
}

impl Second {
    fn new() -> Second {
        let mut latency = Histogram::new_with_bounds(1, hdr::MAX_LATENCY_NS, 2)
            .expect("constant bounds are valid");
        latency.auto(true);
        Second {
            transactions: 0,
            latency,
        }
    }
}

impl Default for Second {
    fn default() -> Second {
        Second::new()
    }
}

impl pool::Slice for Second {
    fn add(&mut self, other: &Second) {
        self.transactions += other.transactions;
        let _ = self.latency.add(&other.latency);
    }
}

impl Outcome {
    /// Transactions per second, the connections' time left out (pgbench's
    /// "without initial connection time").
    pub fn tps(&self) -> f64 {
        per_sec(self.transactions, self.elapsed)
    }

    /// Transactions per second, the connections' time counted in.
    pub fn tps_with_connections(&self) -> f64 {
        per_sec(self.transactions, self.elapsed + self.connect)
    }

    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// A run that measured nothing: no transaction, every time zero, every
    /// histogram and list empty. Tests set on it what they are about.
    #[cfg(test)]
    pub(crate) fn empty() -> Outcome {
        let histogram = || Histogram::new(2).expect("2 significant figures are valid");
        Outcome {
            lost: Vec::new(),
            stages: Vec::new(),
            latency: histogram(),
            uncorrected: histogram(),
            lag: histogram(),
            skipped: 0,
            dropped: 0,
            unfinished: 0,
            late: 0,
            statements: Vec::new(),
            reconnects: histogram(),
            transactions: 0,
            failed: BTreeMap::new(),
            retries: BTreeMap::new(),
            retried: 0,
            aborted: Vec::new(),
            logs: Vec::new(),
            log_failures: Vec::new(),
            per_script: Vec::new(),
            script_latency: Vec::new(),
            timeline: Vec::new(),
            vacuum: Vec::new(),
            elapsed: Duration::ZERO,
            connect: Duration::ZERO,
            cpu: Duration::ZERO,
            cpu_wait: Duration::ZERO,
            scale: 0,
            server: Server::default(),
            interrupted: false,
            started_at: SystemTime::UNIX_EPOCH,
        }
    }
}

fn per_sec(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

impl Outcome {
    /// Share of the client threads the run kept busy, in percent: near 100
    /// the client, not the server, set the pace.
    pub fn client_cpu_percent(&self, threads: usize) -> f64 {
        dyno_load::pool::busy_percent(self.cpu, self.elapsed, threads)
    }

    /// The run's metrics. A failure count per SQLSTATE is included only
    /// when non-zero; with several scripts, each one's committed
    /// transactions, labelled with its name; the open model's, the
    /// latency limit's, `--connect`'s and `-r`'s figures when they were
    /// asked for.
    pub fn metrics(&self, settings: &RunSettings) -> Vec<Metric> {
        let mut metrics = self.whole_run_metrics(settings.threads);
        metrics.extend(self.sqlstate_metrics());
        metrics.extend(self.script_metrics(settings));
        metrics.extend(self.asked_for_metrics(settings));
        metrics.extend(self.over_time_metrics(settings));
        metrics.extend(self.statement_metrics(settings));
        metrics
    }

    /// What pgbench's job exists for: tps and the latency of each
    /// transaction, with the counts, the window and the client's own load
    /// beside them. A merged run's tps is its commits over the merged
    /// window.
    fn whole_run_metrics(&self, threads: usize) -> Vec<Metric> {
        let mut metrics = vec![
            Metric::new(
                db::TRANSACTIONS_PER_SEC,
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                self.tps(),
            )
            .primary()
            .rate_of(db::TRANSACTIONS),
            // pgbench's second tps line: the same commits over a window
            // that includes connecting; a view, and not merged (each
            // segment connects on its own).
            Metric::new(
                db::TRANSACTIONS_PER_SEC_WITH_CONNECTIONS,
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                self.tps_with_connections(),
            )
            .derived_of(db::TRANSACTIONS_PER_SEC)
            .merged(Merge::None),
            hdr::latency_metric(common::LATENCY, &self.latency).primary(),
            committed(self.transactions),
            Metric::count(db::FAILED_TRANSACTIONS, self.failed_total()),
            Metric::count(db::RETRIES, self.retries.values().sum()),
            Metric::count(db::RETRIED_TRANSACTIONS, self.retried),
            Metric::count(db::ABORTED_CLIENTS, self.aborted.len() as u64),
            Metric::new(
                db::CONNECT,
                Unit::Ns,
                Direction::LowerIsBetter,
                self.connect.as_nanos() as f64,
            )
            .context()
            .merged(Merge::Max),
            dyno_load::judge::window_metric(self.elapsed),
            dyno_load::judge::client_cpu_metric(self.client_cpu_percent(threads)),
        ];
        metrics.extend(dyno_load::silence::lost_metric(&self.lost));
        // Nothing committed: no cost per transaction to speak of.
        if self.transactions > 0 {
            metrics.push(
                Metric::new(
                    db::CLIENT_CPU_PER_TRANSACTION,
                    Unit::Ns,
                    Direction::LowerIsBetter,
                    self.cpu.as_nanos() as f64 / self.transactions as f64,
                )
                .diagnostic()
                .merged(Merge::None),
            );
        }
        metrics
    }

    /// The failures, then the retries, of each SQLSTATE that had any.
    fn sqlstate_metrics(&self) -> Vec<Metric> {
        let failed = self.failed.iter().map(|f| (db::FAILED_TRANSACTIONS, f));
        let retries = self.retries.iter().map(|r| (db::RETRIES, r));
        failed
            .chain(retries)
            .map(|(name, (code, n))| {
                Metric::count(name, *n).with_label(label::SQLSTATE, code.clone())
            })
            .collect()
    }

    /// With several scripts, each one's share, labelled with its name:
    /// its commits, its tps and its latency explain the run's figures.
    fn script_metrics(&self, settings: &RunSettings) -> Vec<Metric> {
        let scripts: Vec<&str> = settings.scripts.iter().map(|w| w.script.name()).collect();
        let mut metrics = Vec::new();
        if scripts.len() <= 1 {
            return metrics;
        }
        for (i, (name, n)) in scripts.iter().zip(&self.per_script).enumerate() {
            let mut per_script = vec![
                committed(*n),
                Metric::new(
                    db::TRANSACTIONS_PER_SEC,
                    Unit::OpsPerSec,
                    Direction::HigherIsBetter,
                    per_sec(*n, self.elapsed),
                )
                .diagnostic()
                .rate_of(db::TRANSACTIONS),
            ];
            if let Some(h) = self.script_latency.get(i) {
                per_script.push(hdr::latency_metric(common::LATENCY, h).diagnostic());
            }
            metrics.extend(
                per_script
                    .into_iter()
                    .map(|m| m.with_label(label::SCRIPT, *name)),
            );
        }
        metrics
    }

    /// The open model's, the latency limit's and `-C`'s figures, when they
    /// were asked for, and what the deadline cut.
    fn asked_for_metrics(&self, settings: &RunSettings) -> Vec<Metric> {
        let mut metrics = Vec::new();
        if let Some(rate) = settings.rate {
            metrics.push(
                Metric::new(
                    db::REQUESTED_TRANSACTIONS_PER_SEC,
                    Unit::OpsPerSec,
                    Direction::HigherIsBetter,
                    rate,
                )
                .context()
                .merged(Merge::Sum),
            );
            metrics.push(
                hdr::latency_metric(common::LATENCY_UNCORRECTED, &self.uncorrected).diagnostic(),
            );
            metrics.push(hdr::latency_metric(db::SCHEDULE_LAG, &self.lag).context());
        }
        // Cut at the deadline (or the stop) while under way, and, in the
        // open model, due in the window but never started: in no other
        // figure, so counted when there are any.
        if self.unfinished > 0 {
            metrics.push(Metric::count(db::UNFINISHED_TRANSACTIONS, self.unfinished));
        }
        if settings.rate.is_some() && self.dropped > 0 {
            metrics.push(Metric::count(db::DROPPED_SENDS, self.dropped));
        }
        if settings.latency_limit.is_some() {
            metrics.push(Metric::count(db::LATE_TRANSACTIONS, self.late));
            if settings.rate.is_some() {
                metrics.push(Metric::count(db::SKIPPED_TRANSACTIONS, self.skipped));
            }
        }
        if settings.reconnect {
            metrics.push(hdr::latency_metric(db::RECONNECT, &self.reconnects).diagnostic());
        }
        metrics
    }

    /// The per-second timeline (with its histograms when this is a segment,
    /// for the merge to recompute the p99 from) and a rate plan's stages.
    fn over_time_metrics(&self, settings: &RunSettings) -> Vec<Metric> {
        let mut metrics = dyno_load::timeline::of(
            self.elapsed,
            self.timeline.iter().map(|s| (s.transactions, &s.latency)),
            db::TIMELINE_TRANSACTIONS_PER_SEC,
            Unit::OpsPerSec,
            !settings.segment.is_whole(),
        );
        if let Some(plan) = &settings.plan {
            metrics.extend(dyno_load::stages::metrics(plan, &self.stages));
        }
        metrics
    }

    /// `-r`: the latency of each script's commands (its jumps excepted),
    /// labelled with the script, the line and the command.
    fn statement_metrics(&self, settings: &RunSettings) -> Vec<Metric> {
        let mut metrics = Vec::new();
        for (w, hs) in settings.scripts.iter().zip(&self.statements) {
            for (i, h) in hs.iter().enumerate() {
                let command = &w.script.commands()[i];
                if matches!(command.kind, CommandKind::Jump(_)) {
                    continue;
                }
                metrics.push(
                    hdr::latency_metric(db::STATEMENT_LATENCY, h)
                        .diagnostic()
                        .with_label(label::SCRIPT, w.script.name())
                        .with_label(label::LINE, command.line.to_string())
                        .with_label(label::COMMAND, w.script.command_text(i)),
                );
            }
        }
        metrics
    }
}

/// The committed transactions: a count of work done, so more is better
/// over a duration (and with -t it is fixed).
fn committed(n: u64) -> Metric {
    Metric::new(
        db::TRANSACTIONS,
        Unit::Count,
        Direction::HigherIsBetter,
        n as f64,
    )
    .context()
    .merged(Merge::Sum)
}

/// Recomputes, in a run merged from segments, the metrics this engine
/// declared [`Merge::Recompute`]: the per-second p99 from the merged
/// per-second histograms (a merge of one segment keeps its own); and each
/// stage of a `--rate-plan`, from the segments' stage metrics summed.
pub fn recompute_merged(run: &mut dyno_model::Run) {
    if let Ok(mut record) = run.record::<dyno_model::record::DbRecord>()
        && let Some(plan) = record
            .rate_plan
            .as_ref()
            .and_then(|r| r.plan.parse::<RatePlan>().ok())
    {
        record.rate_plan = Some(dyno_load::stages::rebuild(&plan, &run.metrics));
        run.set_record(&record);
    }
    if run
        .metrics
        .iter()
        .any(|m| m.name == common::TIMELINE_LATENCY_P99)
    {
        return;
    }
    run.metrics.extend(dyno_stats::merge::per_second_percentile(
        &run.metrics,
        common::TIMELINE_LATENCY_P99,
        db::TIMELINE_TRANSACTIONS_PER_SEC,
        common::TIMELINE_LATENCY,
        99.0,
    ));
}
