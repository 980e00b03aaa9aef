//! `--watch-*` around a run: the watcher starts before the load and stops
//! after it; what it saw over the measured window goes into the run as
//! metrics (labelled with each source) and a verdict line.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, anyhow};
use dyno_env::watch::{self, Watched, Watcher};
use dyno_model::Run;

use crate::settings::Watch;

/// Starts watching what `watch` names, if anything.
pub(super) fn start(watch: Option<Watch>) -> Result<Option<Watcher>> {
    watch
        .map(|w| Watcher::start(w.sources, w.interval))
        .transpose()
        .map_err(|e| anyhow!("{e}; nothing was run"))
}

/// Adds what was watched over the measured window (from `measured_from`,
/// by the wall clock, for `measured`), in which `operations` requests or
/// transactions ended, to `run`: the metrics, a warning for each source
/// lost mid-run, and the verdict.
pub(super) fn record(
    run: &mut Run,
    watched: &Watched,
    measured_from: SystemTime,
    measured: Duration,
    operations: u64,
) {
    // The wall-clock start as this process's monotonic clock reads it.
    let (now, wall) = (Instant::now(), SystemTime::now());
    let ago = wall.duration_since(measured_from).unwrap_or_default();
    let from = now.checked_sub(ago).unwrap_or(now);
    let to = from + measured;
    run.metrics
        .extend(watch::metrics(watched, from, to, operations));
    for s in &watched.series {
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
    if let Some((code, message)) = watch::verdict(watched, from, to, dyno_env::available_cpus()) {
        run.warn(code, message);
    }
}
