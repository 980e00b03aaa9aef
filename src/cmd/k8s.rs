//! `dyno k8s job`: the Kubernetes manifests that run one dyno command as
//! N segments, an Indexed Job whose pod I runs `--segment I/N`, and with
//! `--merge` a Job that prints the merged run. Printed, never applied:
//! `kubectl` stays the tool that talks to the cluster.
//!
//! The manifests are YAML written from JSON values: every string is
//! double-quoted with JSON's escapes, which YAML reads as the same string,
//! so no value (a URL with `:` or `#`, a header, `yes`) can change meaning.

use anyhow::{Result, bail};
use clap::Parser;
use serde_json::{Value, json};

use crate::ExitStatus;
use crate::cli::{Cli, Command, K8sArgs, K8sCommand, K8sJobArgs};

/// How long the merge Job waits for the segments to save their runs.
const MERGE_WAIT: &str = "1h";

pub fn run(args: K8sArgs) -> Result<ExitStatus> {
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
    check_command(&args.command, args.segments, &group)?;
    let mut docs = vec![segments_job(&args, &group)];
    if args.merge {
        docs.push(merge_job(&args, &group));
    }
    let mut out = String::new();
    for doc in &docs {
        out.push_str("---\n");
        yaml(doc, 0, &mut out);
    }
    super::print(&out)?;
    Ok(ExitStatus::Success)
}

/// Refuses a command the segments could not run: one dyno would not
/// parse, one that is not `http` or `db run`, one without a server to
/// load, or one that sets what the Job sets.
fn check_command(command: &[String], segments: u32, group: &str) -> Result<()> {
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
    match cli.command {
        Command::Http(http) if http.url.is_none() && http.url_file.is_none() => bail!(
            "the segments need the URL of the server to load (`http URL …`): each pod would otherwise load a built-in server of its own"
        ),
        _ => Ok(()),
    }
}

/// A name Kubernetes takes (lower case, digits and '-'), from the group's.
fn k8s_name(group: &str) -> String {
    let name: String = group
        .chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' => c,
            _ => '-',
        })
        .collect();
    format!("dyno-{}", name.trim_matches('-'))
}

fn labels(group: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "dyno",
        "app.kubernetes.io/instance": k8s_name(group),
    })
}

fn metadata(args: &K8sJobArgs, name: String, group: &str) -> Value {
    let mut m = json!({ "name": name, "labels": labels(group) });
    if let Some(ns) = &args.namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// The container's environment: the store's URL from the Secret (dyno
/// reads DYNO_STORE), a home for the local store it never falls back to,
/// and, for segments, the pod's index.
fn env(args: &K8sJobArgs, with_index: bool) -> Value {
    let mut env = Vec::new();
    if with_index {
        env.push(json!({
            "name": "DYNO_SEGMENT_INDEX",
            "valueFrom": { "fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            } }
        }));
    }
    env.push(json!({
        "name": "DYNO_STORE",
        "valueFrom": { "secretKeyRef": { "name": args.store_secret, "key": args.store_secret_key } }
    }));
    env.push(json!({ "name": "DYNO_HOME", "value": "/tmp/dyno" }));
    Value::Array(env)
}

fn segments_job(args: &K8sJobArgs, group: &str) -> Value {
    let n = args.segments;
    // Kubernetes expands $(NAME) in args: a literal one in the command is
    // written $$( so it reaches dyno as typed.
    let mut container_args: Vec<Value> = args
        .command
        .iter()
        .map(|a| json!(a.replace("$(", "$$(")))
        .collect();
    container_args.extend([
        json!("--segment"),
        json!(format!("$(DYNO_SEGMENT_INDEX)/{n}")),
        json!("--group"),
        json!(group),
    ]);
    let resources = json!({ "cpu": args.cpu, "memory": args.memory });
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(args, k8s_name(group), group),
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            // A segment runs once: its index has arrived at the barrier,
            // and a second try would be refused there.
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels(group) },
                "spec": {
                    "restartPolicy": "Never",
                    // SIGTERM ends a segment early, and it saves what it
                    // measured: time to do so.
                    "terminationGracePeriodSeconds": 30,
                    "affinity": { "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": { "matchLabels": labels(group) },
                            "topologyKey": "kubernetes.io/hostname"
                        }]
                    } },
                    "containers": [{
                        "name": "dyno",
                        "image": args.image,
                        "command": ["dyno"],
                        "args": container_args,
                        "env": env(args, true),
                        "resources": { "requests": resources, "limits": resources }
                    }]
                }
            }
        }
    })
}

fn merge_job(args: &K8sJobArgs, group: &str) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(args, format!("{}-merge", k8s_name(group)), group),
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": { "app.kubernetes.io/name": "dyno" } },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "merge",
                        "image": args.image,
                        "command": ["dyno"],
                        "args": ["merge", group, "--wait", MERGE_WAIT],
                        "env": env(args, false),
                        "resources": {
                            "requests": { "cpu": "100m", "memory": "128Mi" },
                            "limits": { "cpu": "1", "memory": "512Mi" }
                        }
                    }]
                }
            }
        }
    })
}

/// `v` as block-style YAML at `indent` spaces.
fn yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                out.push_str(&pad);
                out.push_str(&key(k));
                out.push(':');
                nested(v, indent, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&pad);
                out.push('-');
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key on the dash's line, the rest below.
                        let mut first = true;
                        for (k, v) in m {
                            if first {
                                out.push(' ');
                                first = false;
                            } else {
                                out.push_str(&" ".repeat(indent + 2));
                            }
                            out.push_str(&key(k));
                            out.push(':');
                            nested(v, indent + 2, out);
                        }
                    }
                    other => nested(other, indent, out),
                }
            }
        }
        scalar => {
            out.push_str(&pad);
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

/// What follows `key:` or `-`: a scalar on the same line, or a block below.
fn nested(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml(v, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml(v, indent + 2, out);
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

fn inline(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".to_owned(),
        Value::Array(_) => "[]".to_owned(),
        // JSON's scalars are YAML's: numbers, true/false, null, and
        // double-quoted strings with the same escapes.
        other => other.to_string(),
    }
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if plain {
        k.to_owned()
    } else {
        Value::String(k.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_keeps_every_string_as_it_is() {
        let v = json!({
            "a": "yes",
            "b": ["http://x:1/#frag", "line\nbreak", 3, true, null],
            "c": {},
            "d": [{ "e": 1, "f": { "g": "h" } }],
            "weird key": "'quoted'",
        });
        let mut out = String::new();
        yaml(&v, 0, &mut out);
        assert_eq!(
            out,
            "a: \"yes\"\nb:\n  - \"http://x:1/#frag\"\n  - \"line\\nbreak\"\n  - 3\n  - true\n  - null\nc: {}\nd:\n  - e: 1\n    f:\n      g: \"h\"\n\"weird key\": \"'quoted'\"\n"
        );
    }

    #[test]
    fn job_names_follow_kubernetes_rules() {
        assert_eq!(k8s_name("Web_1.b"), "dyno-web-1-b");
        assert_eq!(k8s_name("-x-"), "dyno-x");
    }

    #[test]
    fn the_command_is_checked_as_a_segment_would_parse_it() {
        let words = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert!(check_command(&words("http http://svc/ -n 100 -c 6"), 3, "g").is_ok());
        assert!(check_command(&words("db run -c 6 -T 10"), 3, "g").is_ok());
        for (bad, says) in [
            ("http", "URL"),
            ("http http://svc/ --segment 0/3", "Job's to set"),
            ("http http://svc/ --store=x", "Job's to set"),
            ("http http://svc/ --no-such-flag", "not one dyno runs"),
            ("disk", "neither"),
            ("db init", "neither"),
        ] {
            let e = check_command(&words(bad), 3, "g").unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
