//! What differs between the compared runs: their settings (like with like)
//! and the machines they ran on (what else could explain a difference).

use std::collections::BTreeMap;

use dyno_model::Run;
use serde_json::Value;

/// One setting or environment field whose value is not the same in every
/// group, with the value(s) each group holds (`a | b` when the runs of one
/// group disagree among themselves).
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Dotted path: `http.connections`, `cpu.model`.
    pub key: String,
    /// Group name → value(s) as text, in the order the groups were given.
    pub values: Vec<(String, String)>,
}

/// Setting leaves that differ between any two runs by design and say
/// nothing about like with like: a random seed, a temporary file's name.
const VOLATILE_SETTINGS: [&str; 2] = ["seed", "file"];

/// Setting subtrees that record where a run's parts came from, not what
/// was asked: a segment's index, host and start times, and a merged run's
/// list of them. Two runs differ there by design.
const PROVENANCE_SETTINGS: [&str; 2] = ["segment", "group.segments"];

/// Setting subtrees that hold what a run found, not what was asked: a
/// capacity search's (`--find-max`) answer, steps and a sweep's USL fit,
/// and a load plan's (`--rate-plan`) per-stage figures. Two runs of one
/// server differ there by design, as their metrics do.
const OUTCOME_SETTINGS: [&str; 4] = [
    "capacity.answer",
    "capacity.steps",
    "capacity.sweep.usl",
    "rate_plan.stages",
];

/// Environment fields that change from minute to minute on one machine.
const VOLATILE_ENVIRONMENT: [&str; 4] = [
    "memory.available_bytes",
    "memory.swap_used_bytes",
    "cpu.frequency_current_hz",
    "load_average",
];

/// Settings that differ between the groups or within one, keyed by
/// `kind.path` so that an http run's `connections` is never set beside a
/// disk run's.
pub(super) fn settings(groups: &[(&str, Vec<&Run>)]) -> Vec<Difference> {
    differences(groups, |run| {
        let mut out = BTreeMap::new();
        let builtin = run.settings.get("builtin_server") == Some(&Value::Bool(true));
        // A search's own run is its step at the answer's rate: that rate,
        // and a start a probe chose, are findings too.
        let search = run.settings.get("capacity");
        let probed = search.and_then(|c| c.get("start_probed")) == Some(&Value::Bool(true));
        flatten(run.kind.as_str(), &run.settings, &mut out);
        out.retain(|key, _| {
            let leaf = key.rsplit('.').next().unwrap_or(key);
            // The built-in server listens on a fresh port each run.
            let builtin_url = builtin && (leaf == "url" || leaf == "urls");
            let path = key.split_once('.').map_or("", |(_, path)| path);
            let under = |p: &str| path == p || path.starts_with(&format!("{p}."));
            let provenance = PROVENANCE_SETTINGS.iter().any(|p| under(p));
            let found = OUTCOME_SETTINGS.iter().any(|p| under(p))
                || (search.is_some() && path == "rate_per_sec")
                || (probed && path == "capacity.start");
            !VOLATILE_SETTINGS.contains(&leaf) && !builtin_url && !provenance && !found
        });
        out
    })
}

/// Environment fields that differ between the groups or within one.
pub(super) fn environment(groups: &[(&str, Vec<&Run>)]) -> Vec<Difference> {
    differences(groups, |run| {
        let mut out = BTreeMap::new();
        let env = serde_json::to_value(&run.environment).unwrap_or(Value::Null);
        flatten("", &env, &mut out);
        out.retain(|key, _| !VOLATILE_ENVIRONMENT.contains(&key.as_str()));
        out
    })
}

fn differences(
    groups: &[(&str, Vec<&Run>)],
    fields: impl Fn(&Run) -> BTreeMap<String, String>,
) -> Vec<Difference> {
    // key → per group, the distinct values of its runs (in order seen).
    let mut table: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    for (g, (_, runs)) in groups.iter().enumerate() {
        for run in runs {
            for (key, value) in fields(run) {
                let per_group = table
                    .entry(key)
                    .or_insert_with(|| vec![Vec::new(); groups.len()]);
                if !per_group[g].contains(&value) {
                    per_group[g].push(value);
                }
            }
        }
    }
    // A key some runs lack counts as "absent" there, so a setting only one
    // side has is a difference too.
    for (g, (_, runs)) in groups.iter().enumerate() {
        for run in runs {
            let have = fields(run);
            for (key, per_group) in table.iter_mut() {
                if !have.contains_key(key) && !per_group[g].iter().any(|v| v == ABSENT) {
                    per_group[g].push(ABSENT.to_owned());
                }
            }
        }
    }
    table
        .into_iter()
        .filter(|(_, per_group)| {
            let first = &per_group[0];
            per_group.iter().any(|v| v.len() > 1 || v != first)
        })
        .map(|(key, per_group)| Difference {
            key,
            values: groups
                .iter()
                .zip(per_group)
                .map(|((name, _), values)| ((*name).to_owned(), values.join(" | ")))
                .collect(),
        })
        .collect()
}

/// How a field that a run does not have is shown.
const ABSENT: &str = "(none)";

/// Leaves of `value` as `prefix.path` → text. Arrays of scalars are one
/// leaf (`[1, 2]`); arrays of objects are one leaf of their JSON.
pub(crate) fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    let join = |key: &str| {
        if prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{prefix}.{key}")
        }
    };
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                flatten(&join(key), v, out);
            }
        }
        Value::Null => {}
        Value::String(s) => {
            out.insert(prefix.to_owned(), s.clone());
        }
        other => {
            out.insert(prefix.to_owned(), other.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::Kind;
    use serde_json::json;

    fn run(kind: Kind, settings: Value, cpu: &str) -> Run {
        let mut r = Run::new(kind, "x");
        r.settings = settings;
        r.environment.cpu.model = Some(cpu.into());
        r.environment.memory.available_bytes = Some(fastrand::u64(..));
        r
    }

    #[test]
    fn what_a_capacity_search_found_is_not_a_setting() {
        let search = |max: f64, steps: u64, start: f64, slo: &str| {
            json!({"connections": 50, "rate_per_sec": max,
                   "capacity": {"slo": slo, "start": start, "start_probed": true,
                                "answer": {"outcome": "found", "max_rate": max},
                                "steps": vec![json!({"requested": max}); steps as usize]}})
        };
        let a = run(Kind::Http, search(476.0, 12, 224.0, "p99<=20ms"), "Xeon");
        let b = run(Kind::Http, search(488.0, 10, 230.0, "p99<=20ms"), "Xeon");
        assert_eq!(settings(&[("a", vec![&a]), ("b", vec![&b])]), vec![]);
        // The objective is asked for: a different one is a difference.
        let c = run(Kind::Http, search(488.0, 10, 230.0, "p99<=50ms"), "Xeon");
        let d = settings(&[("a", vec![&a]), ("c", vec![&c])]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].key, "http.capacity.slo");
        // Without a search, the rate is asked for.
        let fixed = |rate: f64| json!({"connections": 50, "rate_per_sec": rate});
        let (e, f) = (
            run(Kind::Http, fixed(100.0), "Xeon"),
            run(Kind::Http, fixed(200.0), "Xeon"),
        );
        assert_eq!(settings(&[("e", vec![&e]), ("f", vec![&f])]).len(), 1);
    }

    #[test]
    fn what_each_stage_of_a_plan_measured_is_not_a_setting() {
        let planned = |plan: &str, p99: u64| {
            json!({"rate_plan": {"plan": plan,
                                 "stages": [{"stage": plan, "ended": 100, "p99_ns": p99}]}})
        };
        let a = run(Kind::Http, planned("100@1s", 4_000), "Xeon");
        let b = run(Kind::Http, planned("100@1s", 5_000), "Xeon");
        assert_eq!(settings(&[("a", vec![&a]), ("b", vec![&b])]), vec![]);
        // The plan is asked for: a different one is a difference.
        let c = run(Kind::Http, planned("200@1s", 4_000), "Xeon");
        let d = settings(&[("a", vec![&a]), ("c", vec![&c])]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].key, "http.rate_plan.plan");
    }

    #[test]
    fn differing_settings_are_named_per_group_and_volatile_ones_ignored() {
        let a = run(
            Kind::Http,
            json!({"connections": 16, "seed": 1, "tls": false}),
            "Xeon",
        );
        let b = run(
            Kind::Http,
            json!({"connections": 64, "seed": 2, "tls": false}),
            "Opteron",
        );
        let b2 = run(
            Kind::Http,
            json!({"connections": 32, "seed": 3, "tls": false}),
            "Opteron",
        );
        let groups = [("xeon", vec![&a]), ("opteron", vec![&b, &b2])];
        let d = settings(&groups);
        assert_eq!(
            d,
            vec![Difference {
                key: "http.connections".into(),
                values: vec![
                    ("xeon".into(), "16".into()),
                    ("opteron".into(), "64 | 32".into())
                ]
            }]
        );
        let e = environment(&groups);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].key, "cpu.model");
        assert_eq!(e[0].values[1].1, "Opteron");
    }

    #[test]
    fn where_segments_came_from_is_not_a_difference_but_their_count_is() {
        let seg = |i: u32, host: &str| {
            run(
                Kind::Http,
                json!({"c": 2, "segment": {"index": i, "host": host, "started_at_ns": i}}),
                "x",
            )
        };
        let (a, b) = (seg(0, "h0"), seg(1, "h1"));
        assert!(settings(&[("a", vec![&a]), ("b", vec![&b])]).is_empty());
        let merged = run(
            Kind::Http,
            json!({"c": 2, "group": {"count": 3, "segments": [{"host": "h0"}]}}),
            "x",
        );
        let single = run(Kind::Http, json!({"c": 2}), "x");
        let d = settings(&[("m", vec![&merged]), ("s", vec![&single])]);
        let keys: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["http.group.count"]);
    }

    #[test]
    fn a_setting_only_one_side_has_is_a_difference() {
        let a = run(Kind::Disk, json!({"size_bytes": 1}), "x");
        let b = run(Kind::Disk, json!({"size_bytes": 1, "direct_io": true}), "x");
        let d = settings(&[("a", vec![&a]), ("b", vec![&b])]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].key, "disk.direct_io");
        assert_eq!(d[0].values[0].1, "(none)");
    }

    #[test]
    fn identical_runs_have_no_differences() {
        let a = run(Kind::Exec, json!({"runs": 10, "commands": ["a", "b"]}), "x");
        let b = run(Kind::Exec, json!({"runs": 10, "commands": ["a", "b"]}), "x");
        assert!(settings(&[("a", vec![&a]), ("b", vec![&b])]).is_empty());
        assert!(environment(&[("a", vec![&a]), ("b", vec![&b])]).is_empty());
    }
}
