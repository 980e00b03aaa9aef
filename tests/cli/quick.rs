//! `dyno quick` and `dyno sysinfo`.

use crate::common::*;

#[test]
fn quick_prints_its_table_saves_and_history_lists_it() {
    let home = temp();
    let out = dyno(home.path())
        .args([
            "quick",
            "--int64-iterations",
            "200000",
            "--repetitions",
            "2",
        ])
        .args(["--threads", "2", "--tag", "ci", "--http-duration", "1s"])
        .assert()
        .success()
        .get_output()
        .clone();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("int64, 1 thread"), "{table}");
    assert!(table.contains("int64, 2 threads"), "{table}");
    assert!(table.contains("speedup"), "{table}");
    assert!(table.contains("ops/s"), "{table}");
    assert!(
        table.contains("http /hello") && table.contains("req/s"),
        "{table}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let id = stderr
        .split_whitespace()
        .skip_while(|w| *w != "as")
        .nth(1)
        .unwrap_or_else(|| panic!("no id in {stderr}"))
        .to_owned();
    assert_eq!(id.len(), 26, "{stderr}");

    let history = ok(home.path(), &["history"]);
    assert!(history.contains(&id), "{history}");
    assert!(history.contains("quick"), "{history}");
    assert!(history.contains("int64 1 thread"), "{history}");

    let shown = ok(home.path(), &["show", &id[..10]]);
    assert!(
        shown.contains(&id) && shown.contains("int64_nt_ops_per_sec"),
        "{shown}"
    );
    assert!(shown.contains("Tags: ci"), "{shown}");

    let json = dyno(home.path())
        .args(["show", &id, "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let run = stdout_json(&json);
    assert_valid(&run, None);
    assert_eq!(run["id"], id.as_str());
    assert_eq!(run["tags"], serde_json::json!(["ci"]));
    // The HTTP line's figures keep the engine's names, labelled with their
    // part, and the count a rate is of is the same part's.
    let rate = find_part_metric(&run, "http", "requests_per_sec");
    assert_eq!(rate["rate_of"], "responses");
    assert!(rate["value"].as_f64().unwrap() > 0.0, "{rate}");
    assert!(
        find_part_metric(&run, "http", "responses")["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(
        find_part_metric(&run, "http", "latency_ns")["role"],
        "primary"
    );
    // Every figure but the int64 line's and the machine's is of a part,
    // and no name carries a line's prefix any more.
    for m in metrics(&run) {
        let name = m["name"].as_str().unwrap();
        let part = m["labels"]["part"].as_str();
        if name.starts_with("int64_") || name.starts_with("machine_") {
            assert_eq!(part, None, "{m}");
        } else {
            assert!(matches!(part, Some("http" | "disk")), "{m}");
        }
        assert!(
            ["http_", "disk_", "db_"]
                .iter()
                .all(|p| !name.starts_with(p)),
            "{m}"
        );
    }
    assert!(shown.contains("requests_per_sec{part=http}"), "{shown}");
}

#[test]
fn quick_json_is_a_valid_run_with_checked_figures() {
    let home = temp();
    let run = quick_json(home.path(), &["--no-save", "--threads", "2"]);
    assert_valid(&run, None);
    assert_eq!(run["kind"], "quick");
    let metric = |name: &str| find_metric(&run, name).clone();
    let one = metric("int64_1t_ns");
    assert_eq!(one["unit"], "ns");
    assert_eq!(one["direction"], "lower_is_better");
    assert_eq!(one["samples"].as_array().unwrap().len(), 2);
    assert_eq!(one["uncertainty"]["n"], 2);
    assert!(one["value"].as_f64().unwrap() > 0.0);
    // Each throughput sample is the iterations over its own wall time, and
    // the figure is their mean: exact relations, whatever the machine's noise.
    let rate = metric("int64_1t_ops_per_sec");
    let floats = |m: &Value| -> Vec<f64> {
        m["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (walls, rates) = (floats(&one), floats(&rate));
    assert_eq!(walls.len(), rates.len());
    for (wall, r) in walls.iter().zip(&rates) {
        let implied = 200_000.0 / (wall / 1e9);
        assert!((r / implied - 1.0).abs() < 1e-9, "{r} vs {implied}");
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!((rate["value"].as_f64().unwrap() / mean - 1.0).abs() < 1e-9);
    assert!(metric("int64_speedup")["value"].as_f64().unwrap() > 0.0);
    assert_eq!(run["settings"]["int64"]["iterations"], 200_000);
    assert!(
        has_warning(&run, "nonstandard_iterations"),
        "a short run must say it is not comparable"
    );
    assert!(run["environment"]["dyno"]["git_revision"].is_string());
    assert!(
        !home.path().join("dyno.db").exists(),
        "--no-save must not create a store"
    );
}

#[test]
fn sysinfo_prints_the_machine_and_valid_json() {
    let home = temp();
    let text = ok(home.path(), &["sysinfo"]);
    assert_contains_all(
        &text,
        &[
            "host",
            "kernel",
            "logical cores",
            "memory total",
            "open files",
            "somaxconn",
            "dyno",
        ],
    );
    let out = dyno(home.path())
        .args(["sysinfo", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let env = stdout_json(&out);
    assert_valid(&env, Some("environment"));
    assert!(env["cpu"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(env["memory"]["total_bytes"].as_u64().unwrap() > 0);
}
