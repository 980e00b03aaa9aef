//! `dyno quick`: benchmark this machine on built-in defaults and print one
//! summary table. It composes the engines' quick presets: int64 on one and
//! all threads ([`dyno_cpu::quick`]), HTTP on loopback against the built-in
//! server ([`dyno_http::quick`]), the disk ([`dyno_disk::record::measure_quick`])
//! and select-only on PostgreSQL when the environment names a server
//! ([`dyno_db::quick`]); [`dyno_report::quick_report`] prints the table.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result};
use dyno_model::names::{self, quick::DB, quick::DISK, quick::HTTP};
use dyno_model::record::{DbRecord, QuickDisk, QuickHttp, QuickLine, QuickRecord};
use dyno_model::{Kind, Run};

use super::interrupt::{Interrupt, Second};
use super::watch::Window;
use super::{Context, environment, finish, progress};
use crate::ExitStatus;
use crate::cli::QuickArgs;

pub(super) fn run(ctx: &Context, args: QuickArgs) -> Result<ExitStatus> {
    let QuickArgs {
        save,
        repetitions,
        threads,
        int64_iterations,
        http_duration,
        disk_duration,
        db_duration,
        watch,
    } = args;
    let cpus = dyno_env::available_cpus();
    let int64 = dyno_cpu::quick::Settings {
        iterations: int64_iterations,
        repetitions: repetitions as usize,
        threads: threads.map_or(cpus, |t| t as usize),
    };
    let db_configured = dyno_db::quick::configured(|v| std::env::var(v).ok());
    let watch = super::watch::check(watch_settings(watch, db_configured)?)?;
    let store = ctx.store_for(&save)?;

    let started = Instant::now();
    let mut run = Run::new(
        Kind::Quick,
        description(
            int64.threads,
            http_duration,
            disk_duration,
            db_configured && !db_duration.is_zero(),
        ),
    );
    run.environment = environment();
    run.warnings = dyno_env::preflight(&run.environment);
    let record = QuickRecord {
        int64: int64.record(),
        http: dyno_http::quick::part(http_duration),
        disk: None,
        db: None,
    };

    // An interrupt (Ctrl-C, SIGTERM, SIGHUP) ends the current line early and
    // skips the rest; the lines measured so far are printed and saved. Not
    // a second-interrupt exit: the disk line must remove its file.
    let interrupt = Interrupt::install(Second::Waits)?;
    let watcher = super::watch::start(watch)?;
    let whole_from = SystemTime::now();
    let int64_metrics = match int64_part(&int64, cpus, &interrupt) {
        Ok(metrics) => metrics,
        Err(status) => return Ok(status),
    };
    run.metrics.extend(int64_metrics);
    let mut m = Measured {
        run,
        record,
        windows: Vec::new(),
    };
    if !http_duration.is_zero() && !interrupt.is_set() {
        m.http(http_duration, cpus, interrupt.flag())?;
    }
    if !disk_duration.is_zero() && !interrupt.is_set() {
        m.disk(disk_duration, &interrupt.flag());
    }
    if !db_duration.is_zero() && !interrupt.is_set() {
        if db_configured {
            m.db(db_duration, cpus, interrupt.flag());
        } else if !save.json {
            eprintln!("dyno: {}", dyno_db::quick::NOT_CONFIGURED);
        }
    }
    let Measured {
        mut run,
        record,
        windows,
    } = m;
    record_watched(&mut run, watcher, whole_from, windows);
    let judged = dyno_cpu::quick::judge(&int64, &run.metrics, cpus);
    run.warnings.extend(judged.into_iter().map(Into::into));
    run.set_record(&record);
    run.headline = Some(names::quick::INT64_1T.into());
    run.duration_ns = started.elapsed().as_nanos() as u64;

    if interrupt.is_set() {
        run.warn(
            "interrupted",
            "the run was stopped early by an interrupt (Ctrl-C, SIGTERM or SIGHUP): lines after the interrupted one are missing",
        );
    }
    let run = finish(run, &save, store, dyno_report::quick_report)?;
    if interrupt.is_set() {
        super::say_interrupted(&run, &save);
        return Ok(ExitStatus::Interrupted);
    }
    Ok(ExitStatus::Success)
}

/// `--watch-*` for quick: a bare `--pg-stats` reads the db line's server.
fn watch_settings(
    watch: crate::cli::WatchArgs,
    db_configured: bool,
) -> Result<Option<crate::settings::Watch>> {
    let db_target = db_configured
        .then(|| dyno_db::Target::from_env("").ok())
        .flatten();
    crate::settings::watch(
        watch,
        db_target.as_ref(),
        db_target.as_ref().map(dyno_db::Target::port),
    )
}

/// The int64 line's metrics; the exit status instead when it ends the run
/// (interrupted before its first repetition, or a failed check).
fn int64_part(
    int64: &dyno_cpu::quick::Settings,
    cpus: usize,
    interrupt: &Interrupt,
) -> Result<Vec<dyno_model::Metric>, ExitStatus> {
    match dyno_cpu::quick::measure(int64, cpus, &interrupt.flag(), &mut |p| progress(p)) {
        Ok(metrics) if metrics.is_empty() => {
            eprintln!("dyno: interrupted before the first repetition; nothing was saved");
            Err(ExitStatus::Interrupted)
        }
        Ok(metrics) => Ok(metrics),
        Err(e) => {
            eprintln!("dyno: check failed: {e}");
            Err(ExitStatus::ChecksFailed)
        }
    }
}

/// What was watched of the target: over the whole run, and over each
/// line's window.
fn record_watched(
    run: &mut Run,
    watcher: dyno_env::watch::Watcher,
    whole_from: SystemTime,
    windows: Vec<(&'static str, Window)>,
) {
    let watched = watcher.stop();
    let whole = Window::since(whole_from, 0);
    super::watch::record_whole(run, &watched, whole);
    for (line, window) in windows {
        super::watch::record_line(run, &watched, line, window);
    }
}

/// A quick run as its lines add to it: their metrics, their parts of the
/// record, and the windows the watcher's figures are cut to.
struct Measured {
    run: Run,
    record: QuickRecord,
    windows: Vec<(&'static str, Window)>,
}

impl Measured {
    /// The HTTP line.
    fn http(&mut self, duration: Duration, cpus: usize, stop: Arc<AtomicBool>) -> Result<()> {
        progress("http: dyno's client against its built-in server on loopback");
        let line = http_line(duration, cpus, stop)?;
        self.record.http = add_line(&mut self.run, HTTP, line);
        self.measured_last(HTTP, duration, names::http::REQUESTS);
        Ok(())
    }

    /// The window of a line's measured part, the last `duration` of it
    /// (its warm-up came first), with the count its metric `name` holds.
    fn measured_last(&mut self, line: &'static str, duration: Duration, name: &str) {
        let ended = self.run.metric_of(Some(line), name);
        let window = Window::last(duration, ended.map_or(0, |m| m.value as u64));
        self.windows.push((line, window));
    }

    /// The disk line: a directory that cannot hold the file costs the disk
    /// line, not the whole run.
    fn disk(&mut self, duration: Duration, stop: &AtomicBool) {
        progress("disk: a 64 MiB file in the current directory, SEQ1M Q8T1 and RND4K Q1T1");
        let from = SystemTime::now();
        let line = disk_line(duration, stop);
        self.windows.push((DISK, Window::since(from, 0)));
        match line {
            Ok(line) => self.record.disk = Some(add_line(&mut self.run, DISK, line)),
            Err(e) => self.run.warn(
                "disk_line_skipped",
                format!("the disk line was skipped: {e:#}"),
            ),
        }
    }

    /// The db line: a server that cannot be used costs the db line, not
    /// the run.
    fn db(&mut self, duration: Duration, cpus: usize, stop: Arc<AtomicBool>) {
        progress("db: select-only on the PostgreSQL server of PGHOST/PGPORT/PGDATABASE");
        match db_line(duration, cpus, stop) {
            Ok(line) => {
                self.record.db = Some(add_line(&mut self.run, DB, line));
                self.measured_last(DB, duration, names::db::TRANSACTIONS);
            }
            Err(e) => self
                .run
                .warn("db_line_skipped", format!("the db line was skipped: {e:#}")),
        }
    }
}

/// The HTTP line against the built-in server on loopback: half the CPUs
/// load, the other half serve.
fn http_line(
    duration: Duration,
    cpus: usize,
    stop: Arc<AtomicBool>,
) -> Result<QuickLine<QuickHttp>> {
    let threads = (cpus / 2).max(1);
    let (_server, url) = super::http::builtin_server((cpus - threads).max(1))?;
    let settings = dyno_http::quick::settings(&url, duration, threads)?;
    Ok(dyno_http::quick::measure(&settings, stop)?)
}

/// The disk line, on a file in the current directory.
fn disk_line(duration: Duration, stop: &AtomicBool) -> Result<QuickLine<QuickDisk>> {
    let dir = std::env::current_dir().context("could not read the current directory")?;
    let settings = dyno_disk::Settings::quick(dir, duration, fastrand::u64(..));
    Ok(dyno_disk::record::measure_quick(&settings, stop)?)
}

/// The db line, on the server of libpq's environment.
fn db_line(duration: Duration, cpus: usize, stop: Arc<AtomicBool>) -> Result<QuickLine<DbRecord>> {
    let target = dyno_db::Target::from_env("")?;
    let settings = dyno_db::quick::settings(target, duration, fastrand::u64(..), cpus);
    Ok(dyno_db::quick::measure(&settings, stop)?)
}

/// What the run measures; a line given 0 s is skipped, and not named.
fn description(threads: usize, http: Duration, disk: Duration, db: bool) -> String {
    format!(
        "int64 on 1 and {}{}{}{}",
        dyno_report::counted(threads as u64, "thread"),
        if http.is_zero() {
            ""
        } else {
            ", HTTP on loopback"
        },
        if disk.is_zero() { "" } else { ", disk" },
        if db { ", PostgreSQL" } else { "" }
    )
}

/// Adds a line's metrics and warnings (each message naming the line) to
/// the run; returns its part of the record.
fn add_line<P>(run: &mut Run, name: &str, line: QuickLine<P>) -> P {
    run.metrics.extend(line.metrics);
    for mut w in line.warnings {
        w.message = format!("{name} line: {}", w.message);
        run.warnings.push(w);
    }
    line.part
}
