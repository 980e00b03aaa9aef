//! `dyno k8s job`: the Kubernetes manifests that run one dyno command as
//! N segments, an Indexed Job whose pod I runs `--segment I/N`, and with
//! `--merge` a Job that prints the merged run. Printed, never applied:
//! `kubectl` stays the tool that talks to the cluster.
//!
//! This module checks the command and reads its files; the manifests
//! are `dyno_k8s`'s.

use anyhow::{Result, bail};
use clap::Parser;
use dyno_k8s::{PodCommand, carry};

use crate::ExitStatus;
use crate::cli::{Cli, Command, K8sArgs, K8sCommand, K8sJobArgs};

pub(super) fn run(args: K8sArgs) -> Result<ExitStatus> {
    match args.command {
        K8sCommand::Job(args) => job(*args),
    }
}

fn job(args: K8sJobArgs) -> Result<ExitStatus> {
    let group = args.group.clone().unwrap_or_else(|| {
        jiff::Zoned::now()
            .strftime("dyno-%Y%m%d-%H%M%S")
            .to_string()
    });
    let checked = check_command(
        &args.command,
        args.segments,
        &group,
        args.db_secret.as_deref(),
    )?;
    let out = dyno_k8s::manifests(&dyno_k8s::Job {
        group: &group,
        segments: args.segments,
        image: &args.image,
        namespace: args.namespace.as_deref(),
        store_secret: &args.store_secret,
        store_secret_key: &args.store_secret_key,
        db_secret: args.db_secret.as_deref(),
        cpu: &args.cpu,
        memory: &args.memory,
        command: &checked.args,
        files: &checked.files,
        merge: args.merge,
    });
    super::print(&out)?;
    Ok(ExitStatus::Success)
}

/// Refuses a command the segments could not run: one dyno would not
/// parse, one that is not `http` or `db run`, one without a server to
/// load, one that sets what the Job sets, one that a segment would refuse
/// (the share-out of -c and -n over the segments, a --start-at that
/// passed), a file that is not there, or a database named only by this
/// machine's environment or with a password in plain sight. Local files
/// (--url-file, --body-file, db -f) are read here, to travel in a
/// ConfigMap.
fn check_command(
    command: &[String],
    segments: u32,
    group: &str,
    db_secret: Option<&str>,
) -> Result<PodCommand> {
    for taken in ["--segment", "--group", "--store", "--no-save"] {
        if command
            .iter()
            .any(|a| a == taken || a.starts_with(&format!("{taken}=")))
        {
            bail!(
                "{taken} is the Job's to set (each pod gets its segment, the group and the store from the Secret): leave it out of the command"
            );
        }
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
        format!("0/{segments}"),
        "--group".to_owned(),
        group.to_owned(),
    ]);
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        anyhow::anyhow!(
            "the command after -- is not one dyno runs: {}",
            e.render().to_string().trim()
        )
    })?;
    // Each segment's share, as the segment itself would check it.
    let each_segment = |seg: &crate::cli::SegmentArgs,
                        check: &dyn Fn(&crate::settings::segment::Plan) -> Result<()>|
     -> Result<()> {
        let Some(mut plan) = crate::settings::segment::Plan::from_args(seg, None)? else {
            return Ok(());
        };
        for i in 0..segments {
            plan.segment = dyno_model::Segment::new(i, segments).expect("below the count");
            check(&plan).map_err(|e| {
                anyhow::anyhow!("segment {i}/{segments} would refuse the command: {e}")
            })?;
        }
        Ok(())
    };
    // (flag names whose value is a local file to carry, the values given)
    let (file_flags, files): (&[&str], Vec<String>) = match cli.command {
        Command::Http(http) => {
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
            let threads = http.threads.unwrap_or(1) as usize;
            each_segment(&http.segments, &|plan| {
                plan.share(http.connections.to, threads, http.requests)
                    .map(|_| ())
            })?;
            // The whole of a segment's checks, as the last segment (whose
            // virtual users are numbered highest) makes them: the scenario
            // and its data, a search's share-out, the flags together.
            let mut last = vec!["dyno".to_owned()];
            last.extend(command.iter().cloned());
            last.extend([
                "--segment".to_owned(),
                format!("{}/{segments}", segments - 1),
                "--group".to_owned(),
                group.to_owned(),
            ]);
            let Command::Http(args) = Cli::try_parse_from(&last)?.command else {
                unreachable!("parsed as http above")
            };
            let (plan, _) = super::http::resolve(*args, &super::environment()).map_err(|e| {
                anyhow::anyhow!(
                    "segment {}/{segments} would refuse the command: {e:#}",
                    segments - 1
                )
            })?;
            // The scenario as the segment loaded it: its data file.
            let data = match (&http.scenario, &plan.engine.scenario) {
                (Some(file), Some(scenario)) => scenario.data.as_ref().map(|data| {
                    dyno_k8s::scenario_data_path(file, &data.path).map(|named| (&data.path, named))
                }),
                _ => None,
            }
            .transpose()
            .map_err(anyhow::Error::msg)?;
            let files: Vec<String> = [&http.url_file, &http.body_file, &http.scenario]
                .into_iter()
                .flatten()
                .map(|p| p.display().to_string())
                .collect();
            let mut checked = carry(
                command,
                &["--url-file", "--body-file", "--scenario"],
                &files,
            )
            .map_err(anyhow::Error::msg)?;
            if let Some((path, named)) = data {
                checked.add_data(path, named).map_err(anyhow::Error::msg)?;
            }
            return Ok(checked);
        }
        Command::Db(db) => {
            let crate::cli::DbCommand::Run(run) = db.command else {
                unreachable!("checked above: db run")
            };
            each_segment(&run.segments, &|plan| {
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
            (&["-f", "--file"], files)
        }
        _ => unreachable!("checked above: http or db run"),
    };
    carry(command, file_flags, &files).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_checked_as_a_segment_would_parse_it() {
        // '~' is a space within one word.
        let words = |s: &str| {
            s.split(' ')
                .map(|w| w.replace('~', " "))
                .collect::<Vec<_>>()
        };
        let check = |s: &str| check_command(&words(s), 3, "g", None);
        assert_eq!(
            check("http http://svc/ -n 100 -c 6").unwrap().args,
            words("http http://svc/ -n 100 -c 6")
        );
        assert!(check("db run host=db -c 6 -T 10").is_ok());
        assert!(check_command(&words("db run -c 6 -T 10"), 3, "g", Some("dyno-db")).is_ok());
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
            // Files that are not there.
            (
                "http --url-file /nonexistent/urls.txt -c 4",
                "could not read the URL file '/nonexistent/urls.txt'",
            ),
            (
                "db run host=db -c 3 -f /nonexistent/s1.sql",
                "could not read '/nonexistent/s1.sql'",
            ),
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
        assert!(
            check_command(
                &words("db run postgres://u:pw@db/x -c 3"),
                3,
                "g",
                Some("s")
            )
            .unwrap_err()
            .to_string()
            .contains("holds a password")
        );
        assert!(
            check_command(&words("http http://svc/ -c 3"), 3, "g", Some("s"))
                .unwrap_err()
                .to_string()
                .contains("drop it")
        );
    }

    #[test]
    fn local_files_are_carried_and_their_paths_pointed_at_the_copies() {
        let dir = tempfile::tempdir().unwrap();
        let urls = dir.path().join("urls list.txt");
        std::fs::write(&urls, "http://svc/a\nhttp://svc/b\n").unwrap();
        let body = dir.path().join("body.bin");
        std::fs::write(&body, [0xff, 0, 1]).unwrap();
        let script = dir.path().join("s1.sql");
        std::fs::write(&script, "SELECT 1;\n").unwrap();
        let (urls, body, script) = (
            urls.display().to_string(),
            body.display().to_string(),
            script.display().to_string(),
        );
        let checked = check_command(
            &[
                "http".into(),
                format!("--url-file={urls}"),
                "--body-file".into(),
                body.clone(),
                "-c".into(),
                "3".into(),
            ],
            3,
            "g",
            None,
        )
        .unwrap();
        assert_eq!(
            checked.args,
            [
                "http",
                "--url-file=/etc/dyno/files/f0-urls-list.txt",
                "--body-file",
                "/etc/dyno/files/f1-body.bin",
                "-c",
                "3"
            ]
        );
        assert_eq!(checked.files[0].key, "f0-urls-list.txt");
        assert_eq!(checked.files[1].data, [0xff, 0, 1]);
        let checked = check_command(
            &[
                "db".into(),
                "run".into(),
                "host=db".into(),
                "-c".into(),
                "3".into(),
                "-f".into(),
                format!("{script}@3"),
            ],
            3,
            "g",
            None,
        )
        .unwrap();
        assert_eq!(checked.args[6], "/etc/dyno/files/f0-s1.sql@3");
        assert_eq!(checked.files[0].data, b"SELECT 1;\n");
    }
}
