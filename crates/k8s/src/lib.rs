//! `dyno k8s job`'s manifests: one dyno command run as N segments, an
//! Indexed Job whose pod I runs `--segment I/N`, the ConfigMap that
//! carries the command's local files, and with `--merge` a Job that
//! prints the merged run. Built from a checked [`Job`]; printed, never
//! applied (`kubectl` stays the tool that talks to the cluster).
//!
//! The manifests are YAML written from JSON values: every string is
//! double-quoted with JSON's escapes, which YAML reads as the same string,
//! so no value (a URL with `:` or `#`, a header, `yes`) can change
//! meaning. Kubernetes reads YAML 1.1, where a plain `yes`, `no`, `on` or
//! `off` is a boolean; a YAML library writes those plain, by YAML 1.2's
//! rules (serde_yaml_ng 0.10 writes `- yes` for the string "yes"), so the
//! writer is this one, forty lines that quote every string.

mod carry;

pub use carry::{CONFIGMAP_MAX, PodCommand, carry, scenario_data_path};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// Where the carried files are mounted in each segment's pod.
pub const FILES_DIR: &str = "/etc/dyno/files";

/// How long the merge Job waits for the segments to save their runs.
const MERGE_WAIT: &str = "1h";

/// A local file the command names, carried to the pods in a ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    /// Its key in the ConfigMap.
    pub key: String,
    /// Where it is under [`FILES_DIR`]: its key, or, for a scenario's data
    /// file, the path the scenario names it by (from its own folder).
    pub path: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// What the manifests are made of: the checked command and the Job's
/// settings.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// The group the segments meet in (and the Job's name, made a name
    /// Kubernetes takes).
    pub group: &'a str,
    pub segments: u32,
    pub image: &'a str,
    pub namespace: Option<&'a str>,
    /// The Secret and key that hold the store's URL (`DYNO_STORE`).
    pub store_secret: &'a str,
    pub store_secret_key: &'a str,
    /// A Secret whose keys are libpq's variables, for `db run`.
    pub db_secret: Option<&'a str>,
    /// Each segment's pod's CPU and memory (requests and limits).
    pub cpu: &'a str,
    pub memory: &'a str,
    /// The dyno command the pods run, its local files pointed at the
    /// mounted copies of [`Job::files`].
    pub command: &'a [String],
    pub files: &'a [Carried],
    /// A merge Job too.
    pub merge: bool,
}

/// The manifests, as one YAML stream: the files' ConfigMap (when there
/// are files), the segments' Indexed Job, and the merge Job.
pub fn manifests(job: &Job) -> String {
    let group = job.group;
    let mut docs = Vec::new();
    if !job.files.is_empty() {
        docs.push(files_config_map(job, group));
    }
    docs.push(segments_job(job, group));
    if job.merge {
        docs.push(merge_job(job, group));
    }
    let mut out = String::new();
    for doc in &docs {
        out.push_str("---\n");
        yaml(doc, 0, &mut out);
    }
    out
}

/// A name Kubernetes takes (lower case, digits and '-'), from the group's.
pub fn k8s_name(group: &str) -> String {
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

fn metadata(job: &Job, name: String, group: &str) -> Value {
    let mut m = json!({ "name": name, "labels": labels(group) });
    if let Some(ns) = &job.namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// The container's environment: the store's URL from the Secret (dyno
/// reads DYNO_STORE), a home for the local store it never falls back to,
/// and, for segments, the pod's index.
fn env(job: &Job, with_index: bool) -> Value {
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
        "valueFrom": { "secretKeyRef": { "name": job.store_secret, "key": job.store_secret_key } }
    }));
    env.push(json!({ "name": "DYNO_HOME", "value": "/tmp/dyno" }));
    Value::Array(env)
}

/// The ConfigMap that carries the command's local files to the pods.
fn files_config_map(job: &Job, group: &str) -> Value {
    let mut data = serde_json::Map::new();
    let mut binary = serde_json::Map::new();
    for f in job.files {
        match std::str::from_utf8(&f.data) {
            Ok(text) => data.insert(f.key.clone(), json!(text)),
            Err(_) => binary.insert(f.key.clone(), json!(STANDARD.encode(&f.data))),
        };
    }
    let mut map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(job, files_name(group), group),
        // Read once by the pods; never edited in place.
        "immutable": true,
    });
    if !data.is_empty() {
        map["data"] = Value::Object(data);
    }
    if !binary.is_empty() {
        map["binaryData"] = Value::Object(binary);
    }
    map
}

fn files_name(group: &str) -> String {
    format!("{}-files", k8s_name(group))
}

fn segments_job(job: &Job, group: &str) -> Value {
    let n = job.segments;
    // Kubernetes expands $(NAME) in args: a literal one in the command is
    // written $$( so it reaches dyno as typed.
    let mut container_args: Vec<Value> = job
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
    let resources = json!({ "cpu": job.cpu, "memory": job.memory });
    let mut container = json!({
        "name": "dyno",
        "image": job.image,
        "command": ["dyno"],
        "args": container_args,
        "env": env(job, true),
        "resources": { "requests": resources, "limits": resources }
    });
    let mut volumes = Vec::new();
    if !job.files.is_empty() {
        container["volumeMounts"] =
            json!([{ "name": "files", "mountPath": FILES_DIR, "readOnly": true }]);
        let items: Vec<Value> = job
            .files
            .iter()
            .map(|f| json!({ "key": f.key, "path": f.path }))
            .collect();
        volumes.push(json!({ "name": "files", "configMap": {
            "name": files_name(group),
            "items": items,
        } }));
    }
    if let Some(secret) = &job.db_secret {
        // libpq's variables (PGHOST, PGPASSWORD, …) from the Secret.
        container["envFrom"] = json!([{ "secretRef": { "name": secret } }]);
    }
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(job, k8s_name(group), group),
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
                    "containers": [container]
                }
            }
        }
    });
    if !volumes.is_empty() {
        job["spec"]["template"]["spec"]["volumes"] = Value::Array(volumes);
    }
    job
}

fn merge_job(job: &Job, group: &str) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(job, format!("{}-merge", k8s_name(group)), group),
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": { "app.kubernetes.io/name": "dyno" } },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "merge",
                        "image": job.image,
                        "command": ["dyno"],
                        "args": ["merge", group, "--wait", MERGE_WAIT],
                        "env": env(job, false),
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

/// Refuses a `db run` database the pods could not reach as this machine
/// does, or one whose password would sit in the pods' args.
pub fn check_conninfo(conninfo: Option<&str>, db_secret: Option<&str>) -> Result<(), String> {
    let secret_hint = "put libpq's variables in a Secret and pass --db-secret NAME, which the pods read as their environment (kubectl create secret generic dyno-db --from-literal=PGHOST=db.default.svc --from-literal=PGUSER=bench --from-literal=PGPASSWORD=… --from-literal=PGDATABASE=bench)";
    let conninfo = conninfo.map(str::trim).unwrap_or("");
    if conninfo_has_password(conninfo) {
        return Err(format!(
            "the conninfo holds a password, which would sit in plain text in the Job's pod args (`kubectl get job -o yaml` shows them): leave it out of the conninfo and {secret_hint}"
        ));
    }
    if db_secret.is_some() {
        return Ok(());
    }
    if conninfo.is_empty() {
        return Err(format!(
            "`db run` without a conninfo takes its server from this machine's PG* variables (PGHOST, PGPORT, PGUSER, …), which the pods do not have: give the conninfo in the command, as the pods reach the server (`db run 'host=db.default.svc dbname=bench user=bench' …`), or {secret_hint}"
        ));
    }
    if !conninfo_has_host(conninfo) {
        return Err(format!(
            "the conninfo '{conninfo}' names no host, so it takes this machine's PGHOST (or a local socket), which the pods do not have: add host=… as the pods reach the server, or {secret_hint}"
        ));
    }
    Ok(())
}

/// Whether `s` has the keyword `key` followed by `=` (spaces allowed), at
/// the start of a word: `password=x`, `host = db`.
fn has_keyword(s: &str, key: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    lower.match_indices(key).any(|(at, _)| {
        let starts = at == 0 || matches!(bytes[at - 1], b' ' | b'\t' | b'?' | b'&');
        let rest = lower[at + key.len()..].trim_start();
        starts && rest.starts_with('=')
    })
}

/// The user-info and host of a postgres:// URL, if `s` is one.
fn url_authority(s: &str) -> Option<(&str, &str)> {
    let lower = s.to_ascii_lowercase();
    let rest = ["postgres://", "postgresql://"]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map(|p| &s[p.len()..])?;
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    Some(match authority.rsplit_once('@') {
        Some((user, host)) => (user, host),
        None => ("", authority),
    })
}

/// Whether a conninfo (keywords or a postgres:// URL) holds a password.
fn conninfo_has_password(s: &str) -> bool {
    url_authority(s).is_some_and(|(user, _)| user.contains(':')) || has_keyword(s, "password")
}

/// Whether a conninfo (keywords or a postgres:// URL) names a host.
fn conninfo_has_host(s: &str) -> bool {
    let in_url = url_authority(s).is_some_and(|(_, host)| {
        host.split(',')
            .any(|h| !h.is_empty() && !h.starts_with(':'))
    });
    in_url || has_keyword(s, "host") || has_keyword(s, "hostaddr")
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
    fn binary_files_travel_in_standard_base64() {
        let files = [
            Carried {
                key: "a.sql".into(),
                path: "a.sql".into(),
                data: b"SELECT 1;\n".to_vec(),
            },
            Carried {
                key: "b.bin".into(),
                path: "b.bin".into(),
                data: vec![0xff, 0xfe, 0x00],
            },
        ];
        let command = ["http".to_owned(), "http://svc/".to_owned()];
        let job = Job {
            group: "g",
            segments: 3,
            image: "dyno:1",
            namespace: None,
            store_secret: "s",
            store_secret_key: "url",
            db_secret: None,
            cpu: "1",
            memory: "1Gi",
            command: &command,
            files: &files,
            merge: true,
        };
        let map = files_config_map(&job, "g");
        assert_eq!(map["data"]["a.sql"], "SELECT 1;\n");
        assert_eq!(map["binaryData"]["b.bin"], "//4A");
        let out = manifests(&job);
        assert_eq!(out.matches("---\n").count(), 3, "{out}");
        assert!(
            out.contains("\"--segment\"\n") && out.contains("\"$(DYNO_SEGMENT_INDEX)/3\""),
            "{out}"
        );
    }
}

#[cfg(test)]
mod conninfo_tests {
    use super::*;

    #[test]
    fn a_password_is_found_in_keywords_and_in_urls() {
        assert!(conninfo_has_password("host=db password=x"));
        assert!(conninfo_has_password("host=db PASSWORD = x"));
        assert!(conninfo_has_password("postgres://bench:secret@db/bench"));
        assert!(conninfo_has_password("postgresql://db/bench?password=x"));
        assert!(!conninfo_has_password("host=db user=bench"));
        assert!(!conninfo_has_password("postgres://bench@db/bench"));
        // A word that only ends in the keyword is not it.
        assert!(!conninfo_has_password(
            "host=db application_name=nopassword"
        ));
    }

    #[test]
    fn a_host_is_found_in_keywords_and_in_urls() {
        assert!(conninfo_has_host("host=db.default.svc dbname=bench"));
        assert!(conninfo_has_host("hostaddr=10.0.0.1"));
        assert!(conninfo_has_host("postgres://bench@db:5432/bench"));
        assert!(!conninfo_has_host("dbname=bench user=bench"));
        assert!(!conninfo_has_host("postgres:///bench"));
        assert!(!conninfo_has_host("postgres://:5432/bench"));
    }

    #[test]
    fn the_pods_need_a_host_or_a_secret_and_no_password_in_their_args() {
        assert!(check_conninfo(Some("host=db"), None).is_ok());
        assert!(check_conninfo(None, Some("dyno-db")).is_ok());
        assert!(check_conninfo(Some("dbname=bench"), Some("dyno-db")).is_ok());
        let no_host = check_conninfo(Some("dbname=bench"), None).unwrap_err();
        assert!(no_host.contains("names no host"), "{no_host}");
        let none = check_conninfo(None, None).unwrap_err();
        assert!(none.contains("PG* variables"), "{none}");
        // A secret does not make a password in the args acceptable.
        let password = check_conninfo(Some("host=db password=x"), Some("dyno-db")).unwrap_err();
        assert!(password.contains("holds a password"), "{password}");
    }
}
