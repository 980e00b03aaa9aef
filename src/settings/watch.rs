//! `--watch-pid`, `--watch-name`, `--watch-cgroup`, `--watch`,
//! `--watch-interval`, `--pg-stats`: what of the system under test is
//! watched during a run. The command checks the sources on this machine
//! (`cmd::watch::check`, [`dyno_env::sources::Asked::check`]) before it
//! opens or measures anything.

use std::time::Duration;

use anyhow::{Result, bail};
use dyno_db::Target;
use dyno_env::sources::Asked;

use crate::cli::WatchArgs;

/// What to watch, and how often.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    /// The sources the flags name, not yet checked.
    pub sources: Asked,
    pub interval: Duration,
    /// `--pg-stats`: the PostgreSQL server whose statistics views are read.
    pub pg_stats: Option<PgStatsOn>,
}

/// Whose statistics `--pg-stats` reads, and which sessions' activity it
/// counts.
#[derive(Debug, Clone)]
pub(crate) struct PgStatsOn {
    pub target: PgServer,
    /// The load's sessions' `application_name` (`dyno db run`'s own);
    /// `None`: every session of the database (the application's, under
    /// `dyno http`).
    pub sessions: Option<String>,
}

/// The server `--pg-stats` reads.
#[derive(Debug, Clone)]
pub(crate) enum PgServer {
    /// The one the run loads.
    Run(Box<Target>),
    /// `--pg-stats=CONNINFO`, read with libpq's PG* variables when the
    /// command checks the watch.
    Named(String),
}

/// What the flags name; `None` when nothing is. `run_target` is the
/// server the run itself loads (`dyno db run`'s), which `--pg-stats`
/// without a connection string reads; `port` is the port the loaded
/// server listens on, which picks the server among several of one
/// `--watch-name`.
pub(crate) fn watch(
    args: WatchArgs,
    run_target: Option<&Target>,
    port: Option<u16>,
) -> Result<Option<Watch>> {
    let WatchArgs {
        watch_pid,
        watch_name,
        watch_cgroup,
        watch_url,
        watch_interval,
        pg_stats,
    } = args;
    let pg_stats = match (pg_stats.as_deref().map(str::trim), run_target) {
        (None, _) => None,
        (Some(""), Some(target)) => Some(PgStatsOn {
            target: PgServer::Run(Box::new(target.clone())),
            sessions: target.application_name().map(str::to_owned),
        }),
        (Some(""), None) => bail!(
            "--pg-stats needs a connection string here, the server behind the application: --pg-stats='host=/var/run/postgresql dbname=app' or --pg-stats=postgres://user@host/app (only dyno db run reads its own server without one)"
        ),
        (Some(conninfo), _) => Some(PgStatsOn {
            target: PgServer::Named(conninfo.to_owned()),
            sessions: None,
        }),
    };
    // clap's duration parser has refused an interval under 10 ms.
    let sources = Asked {
        pids: watch_pid,
        names: watch_name,
        cgroups: watch_cgroup,
        urls: watch_url,
        port,
    };
    Ok(
        (!sources.is_empty() || pg_stats.is_some()).then_some(Watch {
            sources,
            interval: watch_interval,
            pg_stats,
        }),
    )
}
