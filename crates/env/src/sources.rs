//! What `--watch-pid`, `--watch-name`, `--watch-cgroup` and `--watch URL`
//! name, checked on this machine before anything is opened or measured:
//! a PID that does not exist, a name no process has, a directory that is
//! no cgroup, a URL that is no http URL are usage errors (an endpoint that
//! is down is not one, since it may come up, and is warned of after the
//! run).

use std::path::PathBuf;

use crate::watch::{self, Source, Tree};

/// The sources the flags name, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asked {
    pub pids: Vec<u32>,
    pub names: Vec<String>,
    pub cgroups: Vec<PathBuf>,
    pub urls: Vec<String>,
    /// The port the loaded server listens on, which picks the server
    /// among several of one name.
    pub port: Option<u16>,
}

impl Asked {
    /// Whether no source is named.
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
            && self.names.is_empty()
            && self.cgroups.is_empty()
            && self.urls.is_empty()
    }

    /// Each source checked, once however many flags named it (a PID given
    /// and matched by a name too: its metrics' labels must be unique), and
    /// the notices to show (which of several servers of a name is watched).
    pub fn check(&self) -> Result<(Vec<Source>, Vec<String>), String> {
        let mut sources = Vec::new();
        let mut notices = Vec::new();
        for &pid in &self.pids {
            if let Err(e) = watch::sample(pid) {
                return Err(format!(
                    "--watch-pid {pid}: {e}; give the PID of a running server process (pgrep NAME lists them)"
                ));
            }
            sources.push(Source::Pid(pid));
        }
        for name in &self.names {
            // Those running now and those that start during the run (a
            // server's process per connection), of one server's tree.
            let (root, notice) = tree_named(name, self.port)?;
            notices.extend(notice);
            sources.push(Source::Named {
                name: name.clone(),
                tree: Some(root),
            });
        }
        for dir in &self.cgroups {
            if let Err(e) = watch::sample_cgroup(dir) {
                return Err(format!("--watch-cgroup: {e}"));
            }
            sources.push(Source::Cgroup(dir.clone()));
        }
        for url in &self.urls {
            crate::scrape::check_url(url).map_err(|why| format!("--watch {why}"))?;
            sources.push(Source::Prometheus(url.clone()));
        }
        let mut seen = Vec::with_capacity(sources.len());
        sources.retain(|s| {
            let new = !seen.contains(s);
            if new {
                seen.push(s.clone());
            }
            new
        });
        Ok((sources, notices))
    }
}

/// The root of the tree of processes `--watch-name NAME` watches: the one
/// tree of that name; among several (two clusters, two servers), the one
/// that listens on the loaded server's `port`, with a notice that says so;
/// else none (refused, listing them), since their figures added up would
/// be no one server's.
fn tree_named(name: &str, port: Option<u16>) -> Result<(u32, Option<String>), String> {
    let trees = watch::trees_named(name);
    let many = match trees.as_slice() {
        [] => {
            return Err(format!(
                "--watch-name {name}: no process is named so (the name is /proc/PID/comm's, at most 15 characters, as pgrep matches it; dyno's own process is left out): is the server running?"
            ));
        }
        [one] => return Ok((one.root, None)),
        many => many,
    };
    let listening = port.map(watch::listening_on).unwrap_or_default();
    let serving: Vec<&Tree> = many
        .iter()
        .filter(|t| t.pids.iter().any(|p| listening.contains(p)))
        .collect();
    if let ([tree], Some(port)) = (serving.as_slice(), port) {
        let notice = format!(
            "dyno: --watch-name {name}: {} servers go by that name; watching the one that listens on port {port}: pid {} and the {} under it",
            many.len(),
            tree.root,
            under(tree),
        );
        return Ok((tree.root, Some(notice)));
    }
    let list: Vec<String> = many
        .iter()
        .map(|t| format!("pid {} ({} under it)", t.root, under(t)))
        .collect();
    let why = match port {
        Some(port) => format!("none of them alone listens on port {port}, the target's"),
        None => "this command loads no server on a port of this machine".to_owned(),
    };
    Err(format!(
        "--watch-name {name} matches {} servers, whose figures added up would be no one server's: {}; dyno watches the one that listens on the target's port, and {why}: stop the others, or watch the server's processes with --watch-pid PID (each once)",
        many.len(),
        list.join(", ")
    ))
}

/// How many processes are under a tree's root: `1 process`, `3 processes`.
fn under(tree: &Tree) -> String {
    let n = tree.pids.len() - 1;
    format!("{n} {}", if n == 1 { "process" } else { "processes" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_is_checked_and_kept_once() {
        let me = std::process::id();
        let asked = Asked {
            pids: vec![me, me],
            ..Asked::default()
        };
        assert!(!asked.is_empty());
        let (sources, notices) = asked.check().unwrap();
        assert_eq!(sources, [Source::Pid(me)]);
        assert!(notices.is_empty());
        for (asked, says) in [
            (
                Asked {
                    pids: vec![u32::MAX - 1],
                    ..Asked::default()
                },
                "--watch-pid 4294967294",
            ),
            (
                Asked {
                    names: vec!["no-such-dyno-x".into()],
                    ..Asked::default()
                },
                "--watch-name no-such-dyno-x: no process is named so",
            ),
            (
                Asked {
                    urls: vec!["ftp://x/metrics".into()],
                    ..Asked::default()
                },
                "--watch ",
            ),
            (
                Asked {
                    cgroups: vec!["/nonexistent/cgroup".into()],
                    ..Asked::default()
                },
                "--watch-cgroup",
            ),
        ] {
            let e = asked.check().unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        assert!(Asked::default().is_empty());
    }
}
