//! `dyno k8s job`: the Kubernetes manifests that run one dyno command as
//! N segments, an Indexed Job whose pod I runs `--segment I/N`, and with
//! `--merge` a Job that prints the merged run. Printed, never applied:
//! `kubectl` stays the tool that talks to the cluster.
//!
//! The command is checked by `settings::k8s`; this module reads its
//! files. The manifests are `dyno_k8s`'s.

use anyhow::Result;
use dyno_k8s::{PodCommand, carry};

use crate::ExitStatus;
use crate::cli::{K8sArgs, K8sCommand, K8sJobArgs};
use crate::settings::{self, Segmented};

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

/// The command as the segments would run it ([`settings::segmented`]),
/// then what needs its files: the whole of a segment's checks (the
/// scenario and its data, a search's share-out, the flags together) and
/// the local files (--url-file, --body-file, --scenario and its data,
/// --replay, db run -f), read here to travel in a ConfigMap.
fn check_command(
    command: &[String],
    segments: u32,
    group: &str,
    db_secret: Option<&str>,
) -> Result<PodCommand> {
    let checked = settings::segmented(command, segments, group, db_secret)?;
    let flags = checked.file_flags();
    let (last, files) = match checked {
        Segmented::Db { files } => {
            return carry(command, flags, &files).map_err(anyhow::Error::msg);
        }
        Segmented::Http { last, files } => (last, files),
    };
    let scenario_file = last.scenario.clone();
    let (plan, _) = super::http::resolve(*last, &super::environment()).map_err(|e| {
        anyhow::anyhow!(
            "segment {}/{segments} would refuse the command: {e:#}",
            segments - 1
        )
    })?;
    // The scenario as the segment loaded it: its data file.
    let data = match (&scenario_file, &plan.engine.scenario) {
        (Some(file), Some(scenario)) => scenario.data.as_ref().map(|data| {
            dyno_k8s::scenario_data_path(file, &data.path).map(|named| (&data.path, named))
        }),
        _ => None,
    }
    .transpose()
    .map_err(anyhow::Error::msg)?;
    let mut checked = carry(command, flags, &files).map_err(anyhow::Error::msg)?;
    if let Some((path, named)) = data {
        checked.add_data(path, named).map_err(anyhow::Error::msg)?;
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_are_not_there_are_refused() {
        for (bad, says) in [
            (
                "http --url-file /nonexistent/urls.txt -c 4",
                "could not read the URL file '/nonexistent/urls.txt'",
            ),
            (
                "db run host=db -c 3 -f /nonexistent/s1.sql",
                "could not read '/nonexistent/s1.sql'",
            ),
        ] {
            let words: Vec<String> = bad.split(' ').map(str::to_owned).collect();
            let e = check_command(&words, 3, "g", None).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let words: Vec<String> = "http http://svc/ -n 100 -c 6"
            .split(' ')
            .map(str::to_owned)
            .collect();
        assert_eq!(check_command(&words, 3, "g", None).unwrap().args, words);
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
        // A replayed log travels too.
        let log = dir.path().join("access.log");
        std::fs::write(
            &log,
            "10.0.0.1 - - [30/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"-\"\n",
        )
        .unwrap();
        let command: Vec<String> = [
            "http",
            "http://svc",
            "--replay",
            log.to_str().unwrap(),
            "-c",
            "3",
        ]
        .map(str::to_owned)
        .to_vec();
        let checked = check_command(&command, 3, "g", None).unwrap();
        assert_eq!(checked.args[3], "/etc/dyno/files/f0-access.log");
        assert_eq!(checked.files[0].data, std::fs::read(&log).unwrap());
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
