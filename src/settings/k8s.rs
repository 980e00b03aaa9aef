//! `dyno k8s job -- COMMAND`: the command each pod runs, checked as its
//! segments would check it before a manifest is written. What needs the
//! command's files (the scenario, the URL list, the scripts, carried in a
//! ConfigMap) is `cmd::k8s`'s.

use anyhow::{Result, anyhow, bail};
use clap::Parser;
use dyno_model::Segment;

use crate::cli::{Cli, Command, DbCommand, HttpArgs, SegmentArgs};
use crate::settings::segment::Plan;

/// The flags the Job sets for every pod.
const JOB_FLAGS: [&str; 4] = ["--segment", "--group", "--store", "--no-save"];

/// A command the segments can run, with the local files it names.
#[derive(Debug)]
pub(crate) enum Segmented {
    /// `http …`, parsed as its last segment (whose virtual users are
    /// numbered highest) parses it.
    Http {
        last: Box<HttpArgs>,
        /// --url-file, --body-file, --scenario, as given.
        files: Vec<String>,
    },
    /// `db run …` and the scripts of its -f.
    Db { files: Vec<String> },
}

impl Segmented {
    /// The flags whose values are the files to carry.
    pub(crate) fn file_flags(&self) -> &'static [&'static str] {
        match self {
            Segmented::Http { .. } => &["--url-file", "--body-file", "--scenario", "--replay"],
            Segmented::Db { .. } => &["-f", "--file"],
        }
    }
}

/// Refuses a command the segments could not run: one dyno would not
/// parse, one that is not `http` or `db run`, one without a server to
/// load, one that sets what the Job sets, one that a segment would refuse
/// (the share-out of -c and -n over the segments, a --start-at that
/// passed), or a database named only by this machine's environment or
/// with a password in plain sight.
pub(crate) fn segmented(
    command: &[String],
    segments: u32,
    group: &str,
    db_secret: Option<&str>,
) -> Result<Segmented> {
    if let Some(taken) = JOB_FLAGS.iter().find(|taken| {
        command
            .iter()
            .any(|a| a == *taken || a.starts_with(&format!("{taken}=")))
    }) {
        bail!(
            "{taken} is the Job's to set (each pod gets its segment, the group and the store from the Secret): leave it out of the command"
        );
    }
    let words: Vec<&str> = command.iter().take(2).map(String::as_str).collect();
    if !matches!(words.as_slice(), ["http", ..] | ["db", "run"]) {
        bail!(
            "a segmented run is `http URL …` or `db run …`; '{}' is neither",
            words.join(" ")
        );
    }
    let mut argv = vec!["dyno".to_owned()];
    argv.extend(command.iter().cloned());
    argv.extend([
        "--segment".to_owned(),
        format!("{}/{segments}", segments - 1),
        "--group".to_owned(),
        group.to_owned(),
    ]);
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        anyhow!(
            "the command after -- is not one dyno runs: {}",
            e.render().to_string().trim()
        )
    })?;
    match cli.command {
        Command::Http(http) => {
            check_http(&http, db_secret)?;
            let threads = http.threads.unwrap_or(1) as usize;
            each_segment(&http.segments, segments, &|plan| {
                plan.share(http.connections.to, threads, http.requests)
                    .map(|_| ())
            })?;
            let files = [
                &http.url_file,
                &http.body_file,
                &http.scenario,
                &http.replay.replay,
            ]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
            Ok(Segmented::Http { last: http, files })
        }
        Command::Db(db) => {
            let DbCommand::Run(run) = db.command else {
                unreachable!("checked above: db run")
            };
            each_segment(&run.segments, segments, &|plan| {
                plan.share(run.clients.to, run.jobs as usize, None)
                    .map(|_| ())
            })?;
            dyno_k8s::check_conninfo(run.conninfo.as_deref(), db_secret)
                .map_err(anyhow::Error::msg)?;
            let files = run
                .files
                .iter()
                .map(|spec| {
                    dyno_db::script::weighted(spec)
                        .map(|(path, _)| path.to_owned())
                        .map_err(anyhow::Error::msg)
                })
                .collect::<Result<_>>()?;
            Ok(Segmented::Db { files })
        }
        _ => unreachable!("checked above: http or db run"),
    }
}

/// The http flags a pod cannot honour: no server named, a database
/// Secret, a socket or a log file of this machine.
fn check_http(http: &HttpArgs, db_secret: Option<&str>) -> Result<()> {
    if http.url.is_none() && http.url_file.is_none() && http.scenario.is_none() {
        bail!(
            "the segments need the URL of the server to load (`http URL …`, or a scenario's `base`): each pod would otherwise load a built-in server of its own"
        );
    }
    if db_secret.is_some() {
        bail!("--db-secret gives `db run` its database; this command is `http`: drop it");
    }
    if let Some(path) = &http.unix_socket {
        bail!(
            "--unix-socket {} is a socket on this machine, which the pods do not have: give the server's URL as the pods reach it over the network",
            path.display()
        );
    }
    if let Some(path) = &http.latency_log {
        bail!(
            "--latency-log {} would be written inside each pod and lost when it ends: leave it out (the merged run keeps the latency histogram)",
            path.display()
        );
    }
    Ok(())
}

/// Each segment's share, as the segment itself would check it.
fn each_segment(
    args: &SegmentArgs,
    segments: u32,
    check: &dyn Fn(&Plan) -> Result<()>,
) -> Result<()> {
    let Some(mut plan) = Plan::from_args(args, None)? else {
        return Ok(());
    };
    for i in 0..segments {
        plan.segment = Segment::new(i, segments).expect("below the count");
        check(&plan)
            .map_err(|e| anyhow!("segment {i}/{segments} would refuse the command: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of `s`; '~' is a space within one word.
    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(|w| w.replace('~', " ")).collect()
    }

    #[test]
    fn the_command_is_checked_as_a_segment_would_parse_it() {
        let check = |s: &str| segmented(&words(s), 3, "g", None);
        let Segmented::Http { last, files } = check("http http://svc/ -n 100 -c 6").unwrap() else {
            panic!("an http command")
        };
        assert_eq!(last.segments.segment, Segment::new(2, 3));
        assert!(files.is_empty());
        assert!(matches!(
            check("db run host=db -c 6 -T 10 -f a.sql@3").unwrap(),
            Segmented::Db { files } if files == ["a.sql"]
        ));
        assert!(segmented(&words("db run -c 6 -T 10"), 3, "g", Some("dyno-db")).is_ok());
        for (bad, says) in [
            ("http", "URL"),
            ("http http://svc/ --segment 0/3", "Job's to set"),
            ("http http://svc/ --store=x", "Job's to set"),
            ("http http://svc/ --no-such-flag", "not one dyno runs"),
            ("disk", "neither"),
            ("db init", "neither"),
            // What a segment refuses: the share-out over 3 segments.
            (
                "http http://svc/ -n 10 -c 2",
                "segment 0/3 would refuse the command: -c 2 cannot be shared out over 3 segments",
            ),
            (
                "http http://svc/ -n 2 -c 3",
                "-n 2 cannot be shared out over 3 segments",
            ),
            ("db run host=db -c 2 -T 10", "-c 2 cannot be shared out"),
            ("http http://svc/ --start-at 2020-01-01T00:00:00Z", "passed"),
            (
                "http http://svc/ --unix-socket /run/s.sock",
                "socket on this machine",
            ),
            ("http http://svc/ --latency-log l.hlog", "lost when it ends"),
            // A database from this machine's environment, or a password.
            ("db run -S -c 4 -T 10", "PG* variables"),
            ("db run dbname=bench -c 4", "names no host"),
            ("db run postgres:///bench -c 4", "names no host"),
            ("db run postgres://u:secretpw@db/x -c 4", "holds a password"),
            (
                "db run host=db~password~=~secretpw -c 4",
                "holds a password",
            ),
        ] {
            let e = check(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("secretpw"), "{bad}: {e}");
        }
        // A password is refused even with a Secret: it would still be in
        // the args.
        let with_secret = |s: &str| {
            segmented(&words(s), 3, "g", Some("s"))
                .unwrap_err()
                .to_string()
        };
        assert!(with_secret("db run postgres://u:pw@db/x -c 3").contains("holds a password"));
        assert!(with_secret("http http://svc/ -c 3").contains("drop it"));
    }
}
