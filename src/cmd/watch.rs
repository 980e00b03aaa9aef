//! `--watch-*` around a run: the watcher starts before the load and stops
//! after it; what it saw over the measured window goes into the run as
//! metrics (labelled with each source) and a verdict line.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, anyhow};
use dyno_db::stats::PgStats;
use dyno_env::watch::{self, Probe, Watched, Watcher};
use dyno_model::Run;
use dyno_model::names::telemetry;
use dyno_model::record::CapacityStep;

use dyno_db::Target;
use dyno_env::watch::Source;

use crate::settings::Watch;
use crate::settings::watch::{PgServer, PgStatsOn};

/// What a run watches, its sources checked on this machine.
#[derive(Debug, Clone)]
pub(super) struct Checked {
    sources: Vec<Source>,
    interval: Duration,
    pg_stats: Option<(Target, Option<String>)>,
}

/// Checks what `watch` names on this machine (a PID, a name, a cgroup, a
/// URL, `--pg-stats`' server), before anything is opened or measured, and
/// says which of several servers of a name is watched.
pub(super) fn check(watch: Option<Watch>) -> Result<Option<Checked>> {
    let Some(Watch {
        sources,
        interval,
        pg_stats,
    }) = watch
    else {
        return Ok(None);
    };
    let (sources, notices) = sources.check().map_err(anyhow::Error::msg)?;
    for notice in notices {
        eprintln!("{notice}");
    }
    let pg_stats = match pg_stats {
        Some(PgStatsOn { target, sessions }) => Some(match target {
            PgServer::Run(target) => (*target, sessions),
            PgServer::Named(conninfo) => {
                let target = Target::from_env(&conninfo).map_err(|e| anyhow!("--pg-stats: {e}"))?;
                (target, sessions)
            }
        }),
        None => None,
    };
    Ok(Some(Checked {
        sources,
        interval,
        pg_stats,
    }))
}

/// Starts watching what `watch` names, and this machine's own state
/// (its load, its cores' clocks, throttling) whatever it names.
pub(super) fn start(watch: Option<Checked>) -> Result<Watcher> {
    let Some(watch) = watch else {
        return Watcher::start(Vec::new(), Vec::new(), Duration::from_secs(1))
            .map_err(|e| anyhow!("{e}; nothing was run"));
    };
    let mut probes: Vec<Box<dyn Probe>> = Vec::new();
    if let Some((target, sessions)) = &watch.pg_stats {
        let stats = PgStats::connect(target, sessions.as_deref())
            .map_err(|e| anyhow!("--pg-stats: {e}; nothing was run"))?;
        probes.push(Box::new(stats));
    }
    Watcher::start(watch.sources, probes, watch.interval)
        .map_err(|e| anyhow!("{e}; nothing was run"))
}

/// A measured window of a run or a step: from when (by the wall clock),
/// how long, and how many requests or transactions ended in it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub from: SystemTime,
    pub length: Duration,
    pub operations: u64,
}

impl Window {
    /// From `from` until now, in which `operations` ended.
    pub(super) fn since(from: SystemTime, operations: u64) -> Window {
        let length = from.elapsed().unwrap_or_default();
        Window {
            from,
            length,
            operations,
        }
    }

    /// The last `length` until now, in which `operations` ended.
    pub(super) fn last(length: Duration, operations: u64) -> Window {
        let now = SystemTime::now();
        Window::since(now.checked_sub(length).unwrap_or(now), operations)
    }

    /// The window on this process's monotonic clock, which the samples
    /// are taken on.
    fn instants(&self) -> (Instant, Instant) {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let ago = wall.duration_since(self.from).unwrap_or_default();
        let from = now.checked_sub(ago).unwrap_or(now);
        (from, from + self.length)
    }
}

/// Adds what was watched over the measured window to `run`: the metrics,
/// a warning for each source lost mid-run or scraped with trouble, and
/// the verdict.
pub(super) fn record(run: &mut Run, watched: &Watched, window: Window) {
    figures(run, watched, window);
    let (from, to) = window.instants();
    if let Some((code, message)) = watch::verdict(watched, from, to, dyno_env::available_cpus()) {
        run.warn(code, message);
    }
}

/// The windows of a capacity search that what was watched is read over.
#[derive(Debug, Clone)]
pub(super) struct Windows {
    /// The step whose figures the run keeps.
    pub answer: Window,
    /// The first failing step above the answer, named (`520 req/s`), if
    /// one ran: where what limited the server shows.
    pub knee: Option<(String, Window)>,
    /// Every step's, in the order of the record's steps.
    pub steps: Vec<Window>,
}

/// What was watched over a capacity search: the figures over the step
/// whose figures the run keeps, each step's CPU in the step table, and the
/// verdict at the knee (at the answer's step when none failed above it).
pub(super) fn record_search(
    run: &mut Run,
    steps: Option<&mut Vec<CapacityStep>>,
    watched: &Watched,
    windows: Windows,
) {
    let Windows {
        answer,
        knee,
        steps: each,
    } = windows;
    figures(run, watched, answer);
    if let Some(steps) = steps {
        for (step, window) in steps.iter_mut().zip(&each) {
            let (from, to) = window.instants();
            (step.server_cpu_percent, step.target_cpu_percent) =
                watch::window_cpu(watched, from, to);
        }
    }
    let cpus = dyno_env::available_cpus();
    let verdict = match &knee {
        Some((name, window)) => {
            let (from, to) = window.instants();
            watch::verdict(watched, from, to, cpus)
                .map(|(code, why)| (code, format!("at the first failing step ({name}): {why}")))
        }
        None => {
            let (from, to) = answer.instants();
            watch::verdict(watched, from, to, cpus)
                .map(|(code, why)| (code, format!("at the answer's step: {why}")))
        }
    };
    if let Some((code, message)) = verdict {
        run.warn(code, message);
    }
}

/// What was watched over one line of `dyno quick` (`http`, `disk`, `db`):
/// the figures over the line's measured window, labelled with the line as
/// its part as its own metrics are (`server_cpu_per_op_ns{part=db, …}`),
/// and the verdict naming the line. What holds for the whole run is
/// [`record_whole`]'s.
pub(super) fn record_line(run: &mut Run, watched: &Watched, line: &str, window: Window) {
    let (from, to) = window.instants();
    run.metrics.extend(
        watch::metrics(watched, from, to, window.operations)
            .into_iter()
            .filter(|m| m.name != telemetry::WATCH_CLIENT_CPU)
            .map(|m| m.of_part(line)),
    );
    if let Some((code, why)) = watch::verdict(watched, from, to, dyno_env::available_cpus()) {
        run.warn(code, format!("{line} line: {why}"));
    }
}

/// What holds for a whole run of lines: this machine's own state (load,
/// clocks, throttling), what watching cost this client, and the sources
/// lost or read with trouble.
pub(super) fn record_whole(run: &mut Run, watched: &Watched, window: Window) {
    let (from, to) = window.instants();
    let (machine, throttled) = dyno_env::state::metrics(&watched.machine, from, to);
    run.metrics.extend(machine);
    if let Some(why) = throttled {
        run.warn("cpu_throttled", why);
    }
    run.metrics.extend(
        watch::metrics(watched, from, to, 0)
            .into_iter()
            .filter(|m| m.name == telemetry::WATCH_CLIENT_CPU),
    );
    lost_or_troubled(run, watched);
}

/// The metrics over `window`, and the warnings of sources that were lost
/// or scraped with trouble.
fn figures(run: &mut Run, watched: &Watched, window: Window) {
    let (from, to) = window.instants();
    let (machine, throttled) = dyno_env::state::metrics(&watched.machine, from, to);
    run.metrics.extend(machine);
    if let Some(why) = throttled {
        run.warn("cpu_throttled", why);
    }
    run.metrics
        .extend(watch::metrics(watched, from, to, window.operations));
    lost_or_troubled(run, watched);
}

/// A warning for each source lost mid-run or read with trouble.
fn lost_or_troubled(run: &mut Run, watched: &Watched) {
    for s in watched.series.iter().filter(|s| !s.named) {
        if let Some(why) = &s.lost {
            run.warn(
                "watch_lost",
                format!("watching {} stopped during the run: {why}; its figures cover the run up to then", s.name),
            );
        }
    }
    for s in &watched.scrapes {
        let troubles = s.troubles();
        if !troubles.is_empty() {
            run.warn(
                "watch_source",
                format!("watching {}: {}", s.url, troubles.join("; ")),
            );
        }
    }
}
