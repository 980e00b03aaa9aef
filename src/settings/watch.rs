//! `--watch-pid`, `--watch-name`, `--watch-cgroup`, `--watch`,
//! `--watch-interval`, `--pg-stats`: what of the system under test is watched during a
//! run, resolved and checked before anything is measured (a PID that does
//! not exist, a name no process has, a directory that is no cgroup, a URL
//! that is no http URL: usage errors; an endpoint that is down is not one,
//! since it may come up, and is warned of after the run).

use std::time::Duration;

use anyhow::{Result, bail};
use dyno_db::Target;
use dyno_env::watch::{self, Source};

use crate::cli::WatchArgs;

/// What to watch, and how often.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    pub sources: Vec<Source>,
    pub interval: Duration,
    /// `--pg-stats`: the PostgreSQL server whose statistics views are read.
    pub pg_stats: Option<PgStatsOn>,
}

/// Whose statistics `--pg-stats` reads, and which sessions' activity it
/// counts.
#[derive(Debug, Clone)]
pub(crate) struct PgStatsOn {
    pub target: Target,
    /// The load's sessions' `application_name` (`dyno db run`'s own);
    /// `None`: every session of the database (the application's, under
    /// `dyno http`).
    pub sessions: Option<String>,
}

/// The sources the flags name, each checked once; `None` when none is
/// named. `run_target` is the server the run itself loads (`dyno db
/// run`'s), which `--pg-stats` without a connection string reads; `port`
/// is the port the loaded server listens on, which picks the server among
/// several of one `--watch-name`.
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
            target: target.clone(),
            sessions: target.application_name().map(str::to_owned),
        }),
        (Some(""), None) => bail!(
            "--pg-stats needs a connection string here, the server behind the application: --pg-stats='host=/var/run/postgresql dbname=app' or --pg-stats=postgres://user@host/app (only dyno db run reads its own server without one)"
        ),
        (Some(conninfo), _) => match Target::from_env(conninfo) {
            Ok(target) => Some(PgStatsOn {
                target,
                sessions: None,
            }),
            Err(e) => bail!("--pg-stats: {e}"),
        },
    };
    // clap's duration parser has refused an interval under 10 ms.
    let mut sources = Vec::new();
    for pid in watch_pid {
        if let Err(e) = watch::sample(pid) {
            bail!(
                "--watch-pid {pid}: {e}; give the PID of a running server process (pgrep NAME lists them)"
            );
        }
        sources.push(Source::Pid(pid));
    }
    for name in watch_name {
        // Those running now and those that start during the run (a
        // server's process per connection), of one server's tree.
        let tree = tree_named(&name, port)?;
        sources.push(Source::Named { name, tree });
    }
    for dir in watch_cgroup {
        if let Err(e) = watch::sample_cgroup(&dir) {
            bail!("--watch-cgroup: {e}");
        }
        sources.push(Source::Cgroup(dir));
    }
    for url in watch_url {
        if let Err(why) = dyno_env::scrape::check_url(&url) {
            bail!("--watch {why}");
        }
        sources.push(Source::Prometheus(url));
    }
    // Each source once, however many flags named it (a PID given and
    // matched by a name too): its metrics' labels must be unique.
    let mut seen = Vec::with_capacity(sources.len());
    sources.retain(|s| {
        let new = !seen.contains(s);
        if new {
            seen.push(s.clone());
        }
        new
    });
    Ok(
        (!sources.is_empty() || pg_stats.is_some()).then_some(Watch {
            sources,
            interval: watch_interval,
            pg_stats,
        }),
    )
}

/// The tree of processes `--watch-name NAME` watches: the one tree of
/// that name; among several (two clusters, two servers), the one that
/// listens on the loaded server's `port`, said on stderr; else none
/// (refused, listing them), since their figures added up would be no one
/// server's.
fn tree_named(name: &str, port: Option<u16>) -> Result<Option<u32>> {
    let trees = watch::trees_named(name);
    match trees.as_slice() {
        [] => bail!(
            "--watch-name {name}: no process is named so (the name is /proc/PID/comm's, at most 15 characters, as pgrep matches it; dyno's own process is left out): is the server running?"
        ),
        [one] => Ok(Some(one.root)),
        many => {
            let listening = port.map(watch::listening_on).unwrap_or_default();
            let serving: Vec<&watch::Tree> = many
                .iter()
                .filter(|t| t.pids.iter().any(|p| listening.contains(p)))
                .collect();
            if let ([tree], Some(port)) = (serving.as_slice(), port) {
                eprintln!(
                    "dyno: --watch-name {name}: {} servers go by that name; watching the one that listens on port {port}: pid {} and the {} under it",
                    many.len(),
                    tree.root,
                    counted(tree.pids.len() - 1, "process", "processes"),
                );
                return Ok(Some(tree.root));
            }
            let list: Vec<String> = many
                .iter()
                .map(|t| {
                    format!(
                        "pid {} ({} under it)",
                        t.root,
                        counted(t.pids.len() - 1, "process", "processes")
                    )
                })
                .collect();
            let why = match port {
                Some(port) => format!("none of them alone listens on port {port}, the target's"),
                None => "this command loads no server on a port of this machine".to_owned(),
            };
            bail!(
                "--watch-name {name} matches {} servers, whose figures added up would be no one server's: {}; dyno watches the one that listens on the target's port, and {why}: stop the others, or watch the server's processes with --watch-pid PID (each once)",
                many.len(),
                list.join(", ")
            )
        }
    }
}

/// `n` of a thing, singular or plural.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
