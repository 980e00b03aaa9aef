//! `dyno compare`: saved runs of every kind set side by side, from the
//! store, through the real binary.

use crate::common::*;

/// Ids of the saved runs, oldest first.
fn ids(home: &Path) -> Vec<String> {
    let out = ok(home, &["export", "--format", "jsonl"]);
    out.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The compare metric `name` of `subject` for `group`.
fn compared<'a>(run: &'a Value, name: &str, subject: &str, group: &str) -> &'a Value {
    metrics(run)
        .find(|m| {
            m["name"] == name && m["labels"]["metric"] == subject && m["labels"]["group"] == group
        })
        .unwrap_or_else(|| panic!("no {name} of {subject} for {group} in {run:#}"))
}

#[test]
fn two_quick_runs_compare_to_a_verdict_table_with_a_geomean_that_show_reprints() {
    let home = temp();
    let h = home.path();
    ok(h, &SMALL_QUICK);
    ok(h, &[&SMALL_QUICK[..], &["--tag", "after"]].concat());
    let (text, stderr) = super::store::ok_both(h, &["compare", "--last", "2"]);
    let line = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle} in\n{text}"))
            .to_owned()
    };
    // Two repetitions a side: Mann–Whitney cannot reach 0.05 with 2 and 2.
    let int64 = line("int64_1t_ns ↓");
    assert!(
        int64.contains("too-few-runs: need ≥ 4 runs a side"),
        "{int64}"
    );
    assert!(int64.contains('×'), "the ratio is shown: {int64}");
    // Nothing primary could be tested (two repetitions, one HTTP run a
    // side): no score, and the warning says why.
    assert!(!text.contains("geomean ("), "{text}");
    let geomean = line("[no_score]");
    assert!(
        geomean.contains("no primary figure could be tested"),
        "{geomean}"
    );
    assert!(text.contains("noise band ±2%"), "{text}");
    let saved = stderr
        .split_whitespace()
        .skip_while(|w| *w != "as")
        .nth(1)
        .unwrap_or_else(|| panic!("no 'saved as' in {stderr}"))
        .to_owned();

    // Saved as a run of kind compare; show reprints the table from it.
    let shown = ok(h, &["show", &saved]);
    assert!(shown.contains(&int64), "show lost the row:\n{shown}");
    assert!(shown.contains(&geomean), "{shown}");
    let history = ok(h, &["history", "--kind", "compare"]);
    assert!(history.contains(&saved), "{history}");
    // A comparison is never itself a side of --last.
    let again = ok(
        h,
        &["compare", "--last", "2", "--format", "json", "--no-save"],
    );
    let run: Value = serde_json::from_str(&again).unwrap();
    assert_valid(&run, None);
    assert_eq!(run["kind"], "compare");
    assert_eq!(run["headline"], "geomean");
    let groups = run["settings"]["groups"].as_array().unwrap();
    let all = ids(h);
    assert_eq!(groups[0]["runs"][0], all[0].as_str());
    assert_eq!(groups[1]["runs"][0], all[1].as_str());
    assert_eq!(
        ids(h).len(),
        3,
        "--no-save saved nothing; the first comparison was saved"
    );

    let md = ok(
        h,
        &[
            "compare",
            "--last",
            "2",
            "--format",
            "markdown",
            "--no-save",
        ],
    );
    assert!(md.contains("| quick | int64_1t_ns ↓ |"), "{md}");
    let csv_text = ok(
        h,
        &["compare", "--last", "2", "--format", "csv", "--no-save"],
    );
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let verdict = headers.iter().position(|c| c == "verdict").unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| !r[verdict].is_empty()), "{csv_text}");
}

/// `dyno run --runs 5 CMD --tag TAG`, saved.
fn timed(home: &Path, command: &str, tag: &str) {
    timed_after(home, "0", command, tag);
}

/// [`timed`] after `warmup` runs not counted.
fn timed_after(home: &Path, warmup: &str, command: &str, tag: &str) {
    ok(
        home,
        &[
            "run", "--runs", "5", "--warmup", warmup, "--tag", tag, command,
        ],
    );
}

/// The wall-time row of a comparison table.
fn wall_line(text: &str) -> &str {
    text.lines()
        .find(|l| l.contains("wall_ns"))
        .unwrap_or_else(|| panic!("no wall_ns row in {text}"))
}

#[test]
fn a_tagged_baseline_catches_a_regression_with_fail_if_worse() {
    let home = temp();
    let h = home.path();
    timed(h, "sleep 0.01", "main");
    timed(h, "sleep 0.06", "pr");
    let out = dyno(h)
        .args([
            "compare",
            "--baseline",
            "@tag:main",
            "@tag:pr",
            "--fail-if-worse",
            "5",
            "--no-save",
        ])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let wall = wall_line(&text);
    // 5 against 5 completely separated: exact Mann–Whitney p = 2/252.
    assert!(
        wall.contains("0.008") && wall.trim_end().ends_with("worse"),
        "{wall}"
    );
    assert!(stderr.contains("regression: @tag:pr's wall_ns"), "{stderr}");
    assert!(
        text.contains("the commands differ") || text.contains("[different_commands]"),
        "{text}"
    );
    // The other way round the wall time is an improvement, not a
    // regression. (The exit code is not asserted: the two sides ran
    // different commands, and a `sleep`'s user time and peak RSS — which
    // holds dyno's own, the child being spawned from its memory — differ
    // between the runs by chance, sometimes significantly.)
    let out = dyno(h)
        .args([
            "compare",
            "--baseline",
            "@tag:pr",
            "@tag:main",
            "--fail-if-worse",
            "5",
            "--no-save",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let wall = wall_line(&text);
    assert!(wall.trim_end().ends_with("better"), "{wall}");
    assert!(!stderr.contains("wall_ns"), "{stderr}");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
}

#[test]
fn compare_gives_the_numbers_dyno_run_gives_for_the_same_samples() {
    let home = temp();
    let h = home.path();
    let (run, _) = json_run(
        h,
        &[
            "run",
            "--runs",
            "6",
            "--warmup",
            "0",
            "--no-save",
            "sleep 0.01",
            "sleep 0.03",
        ],
        0,
    );
    let seed = run["settings"]["seed"].as_u64().unwrap();
    let ratio = find_metric(&run, "ratio_to_reference").clone();
    let reference = ratio["labels"]["reference"].as_str().unwrap().to_owned();
    let candidate = ratio["labels"]["command"].as_str().unwrap().to_owned();
    // The candidate is the second command, compared with seed + 1.
    assert_eq!(candidate, "sleep 0.03");
    // Split the run in two, one command each, and import both.
    let half = |command: &str, id: &str| {
        let mut r = run.clone();
        r["id"] = Value::from(id);
        let metrics: Vec<Value> = metrics(&r)
            .filter(|m| m["labels"]["command"] == command && m["labels"].get("reference").is_none())
            .cloned()
            .collect();
        r["metrics"] = Value::Array(metrics);
        r
    };
    let file = h.join("halves.json");
    let halves = Value::Array(vec![
        half(&reference, "01JD0000000000000000000001"),
        half(&candidate, "01JD0000000000000000000002"),
    ]);
    std::fs::write(&file, halves.to_string()).unwrap();
    ok(h, &["import", file.to_str().unwrap()]);
    let seed = (seed + 1).to_string();
    let out = ok(
        h,
        &[
            "compare",
            "a=01JD0000000000000000000001",
            "b=01JD0000000000000000000002",
            "--seed",
            &seed,
            "--format",
            "json",
            "--no-save",
        ],
    );
    let c: Value = serde_json::from_str(&out).unwrap();
    let mine = compared(&c, "ratio", "wall_ns{command=sleep 0.01}", "b");
    assert_eq!(mine["value"], ratio["value"]);
    assert_eq!(mine["uncertainty"]["low"], ratio["uncertainty"]["low"]);
    assert_eq!(mine["uncertainty"]["high"], ratio["uncertainty"]["high"]);
    let p_run = find_metric(&run, "p_value");
    assert_eq!(
        compared(&c, "p_value", "wall_ns{command=sleep 0.01}", "b")["value"],
        p_run["value"]
    );
}

/// A quick run saved when its lines' metrics had a prefix (the checked-in
/// fixture: `http_requests_per_sec`, `http_latency_ns`) compares with one
/// of today's line by line: the same figure of the same part meets.
#[test]
fn an_old_quick_run_compares_with_a_new_one_part_by_part() {
    let home = temp();
    let h = home.path();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/model/tests/fixtures/quick.json"
    );
    ok(h, &["import", fixture]);
    ok(
        h,
        &words(
            "quick --int64-iterations 200000 --repetitions 2 --http-duration 1s --disk-duration 0",
        ),
    );
    let [old, new] = <[String; 2]>::try_from(ids(h)).unwrap();
    let out = ok(h, &["compare", &old, &new, "--format", "json", "--no-save"]);
    let run: Value = serde_json::from_str(&out).unwrap();
    let ratio_of = |subject: &str| {
        metrics(&run)
            .find(|m| m["name"] == "ratio" && m["labels"]["metric"] == subject)
            .unwrap_or_else(|| panic!("{subject} not compared in {run:#}"))["value"]
            .as_f64()
            .unwrap()
    };
    for subject in [
        "int64_1t_ns",
        "requests_per_sec{part=http}",
        "latency_ns{part=http, percentile=50}",
        "client_cpu_percent{part=http}",
    ] {
        assert!(ratio_of(subject) > 0.0, "{subject}");
    }
    // Only the lines the new run skipped are left without a partner.
    let unmatched = run["settings"]["unmatched"].as_array().unwrap();
    assert!(!unmatched.is_empty(), "the old run has a db line");
    for u in unmatched {
        let metric = u["metric"].as_str().unwrap();
        assert!(
            metric.contains("part=db") || metric.contains("part=disk"),
            "{metric} unmatched in {unmatched:#?}"
        );
    }
}

#[test]
fn runs_from_another_machine_compare_after_export_and_import() {
    let (a, b) = (temp(), temp());
    ok(
        a.path(),
        &[&SMALL_QUICK[..], &["--tag", "machine-a"]].concat(),
    );
    ok(
        b.path(),
        &[&SMALL_QUICK[..], &["--tag", "machine-b"]].concat(),
    );
    let file = a.path().join("b.json");
    ok(
        b.path(),
        &["export", "--tag", "machine-b", "-o", file.to_str().unwrap()],
    );
    ok(a.path(), &["import", file.to_str().unwrap()]);
    let text = ok(
        a.path(),
        &[
            "compare",
            "a=@tag:machine-a",
            "b=@tag:machine-b",
            "--no-save",
        ],
    );
    assert!(
        text.contains("b (1 run: @tag:machine-b) against a"),
        "{text}"
    );
    assert!(text.contains("int64_nt_ns"), "{text}");
}

#[test]
fn bad_comparisons_exit_2_and_save_nothing() {
    let home = temp();
    let h = home.path();
    ok(h, &SMALL_QUICK);
    ok(h, &["run", "--runs", "2", "--warmup", "0", "true"]);
    let all = ids(h);
    let (quick, exec) = (all[0].as_str(), all[1].as_str());
    let cases: [(&[&str], &str); 12] = [
        (&["compare"], "at least two sides"),
        (&["compare", quick], "at least two sides"),
        (&["compare", quick, quick], "compared with itself"),
        (&["compare", quick, exec], "no metric in common"),
        (
            &["compare", quick, "01JD000000000000000000000Z"],
            "01JD000000000000000000000Z",
        ),
        (
            &["compare", "a=@tag:nope", "b=@kind:quick"],
            "'@tag:nope' selects no runs",
        ),
        (
            &["compare", "a=@colour:red", quick],
            "unknown filter @colour",
        ),
        // --tag is a filter every side must match: the error says so
        // (real-clients 14).
        (
            &["compare", "a=@kind:quick", "b=@kind:exec", "--tag", "rep"],
            "selects no runs together with --tag rep, which every side must also match",
        ),
        (
            &["compare", &format!("a={quick},@tag:x"), exec],
            "mixes run ids and @filters",
        ),
        (
            &["compare", "x=@kind:quick", &format!("x={exec}")],
            "two sides are named 'x'",
        ),
        (&["compare", "--last", "2", "--noise", "150"], "noise band"),
        (&["compare", "--last", "5"], "--last 5 needs 5 saved runs"),
    ];
    for (args, needle) in cases {
        let stderr = fails(h, args);
        assert!(
            stderr.contains(needle),
            "{args:?}: no {needle:?} in {stderr}"
        );
    }
    assert_eq!(ids(h).len(), 2, "a refused comparison saves nothing");
    // A saved comparison is not itself comparable.
    ok(h, &[&SMALL_QUICK[..]].concat());
    // --json is --format json, and --label tags the saved comparison.
    let out = ok(
        h,
        &[
            "compare",
            "--kind",
            "quick",
            "--last",
            "2",
            "--json",
            "--label",
            "rep-compare",
        ],
    );
    let c: Value = serde_json::from_str(&out).unwrap();
    let id = c["id"].as_str().unwrap();
    assert_eq!(c["tags"], serde_json::json!(["rep-compare"]));
    let listed = ok(h, &["history", "--tag", "rep-compare"]);
    assert!(listed.contains(id), "{listed}");
    let stderr = fails(h, &["compare", quick, id]);
    assert!(stderr.contains("is itself a comparison"), "{stderr}");
}

#[test]
fn a_damaged_record_in_a_group_is_skipped_and_named() {
    let home = temp();
    let h = home.path();
    for tag in ["a", "a", "b"] {
        ok(h, &[&SMALL_QUICK[..], &["--tag", tag]].concat());
    }
    let damaged = ids(h)[0].clone();
    super::store::damage_record(h, &damaged, "{not json", None);
    let (text, stderr) =
        super::store::ok_both(h, &["compare", "a=@tag:a", "b=@tag:b", "--no-save"]);
    assert!(text.contains("Baseline a (1 run: @tag:a)"), "{text}");
    assert!(
        stderr.contains(&format!("skipped run {damaged}")) && stderr.contains("dyno rm"),
        "{stderr}"
    );
}

/// The verdict column of every row of a comparison table (its last word).
fn verdicts(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains('×') && !l.contains("geomean"))
        .map(|l| l.split_whitespace().last().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_a_single_http_runs_are_never_called_different_and_the_gate_refuses_to_judge_them() {
    // Identical back-to-back runs of one server: their percentiles differ
    // by more than their within-run intervals, and the audit's gate
    // failed on half of such pairs. One run a side is shown, untested.
    let home = temp();
    let h = home.path();
    let (_server, base) = super::http::reference_server();
    let url = format!("{base}/hello");
    for _ in 0..4 {
        ok(h, &["http", &url, "-d", "300ms", "-c", "2", "-t", "1"]);
    }
    let all = ids(h);
    for pair in all.windows(2) {
        let text = ok(h, &["compare", &pair[0], &pair[1], "--no-save"]);
        let called: Vec<String> = verdicts(&text)
            .into_iter()
            .filter(|v| v == "better" || v == "worse")
            .collect();
        assert!(
            called.is_empty(),
            "an A/A pair was called {called:?}:\n{text}"
        );
        assert!(text.contains("untested: one run a side"), "{text}");
        assert!(text.contains("[no_score]"), "{text}");
        // The gate cannot test one run a side: it refuses, never passes
        // silently and never fails the build on noise.
        let gate = |flags: &str| {
            dyno(h)
                .args(["compare", &pair[0], &pair[1], "--fail-if-worse", "5"])
                .args(words(flags))
                .arg("--no-save")
                .output()
                .unwrap()
        };
        let out = gate("");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("could not judge anything"), "{stderr}");
        assert!(
            stderr.contains("requests_per_sec (one value a side)"),
            "{stderr}"
        );
        assert!(stderr.contains("at least 4 runs a side"), "{stderr}");
        let out = gate("--score");
        assert_eq!(out.status.code(), Some(2));
    }
}

#[test]
fn a_a_groups_of_exec_runs_pass_the_gate_and_a_real_slowdown_fails_it() {
    // Interleaved A B A B …, so that drift of the machine is shared.
    let home = temp();
    let h = home.path();
    for _ in 0..4 {
        for tag in ["a", "b"] {
            timed_after(h, "1", "sleep 0.02", tag);
        }
    }
    let out = dyno(h)
        .args(words(
            "compare --baseline @tag:a @tag:b --fail-if-worse 20 --no-save",
        ))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}\n{stderr}");
    assert!(!stderr.contains("regression"), "{stderr}");
    let wall = wall_line(&text);
    assert!(
        !wall.contains("too-few-runs"),
        "4 runs a side are tested: {wall}"
    );
    let geomean = text
        .lines()
        .find(|l| l.contains("geomean ("))
        .unwrap_or_else(|| panic!("no score in\n{text}"));
    assert!(geomean.contains("geomean (1 tested primary)"), "{geomean}");

    // A real slowdown of 2.5× in groups of 4 fails the gate, in the
    // figures and in the score.
    for _ in 0..4 {
        timed_after(h, "1", "sleep 0.05", "slow");
    }
    for extra in [&[][..], &["--score"][..]] {
        let out = dyno(h)
            .args(words(
                "compare --baseline @tag:a @tag:slow --fail-if-worse 5 --no-save",
            ))
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {stderr}");
        assert!(stderr.contains("regression: @tag:slow's"), "{stderr}");
    }
}

/// The row of `metric` in a comparison table.
fn row<'a>(text: &'a str, metric: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(metric))
        .unwrap_or_else(|| panic!("no {metric} row in\n{text}"))
}

/// The server's CPU per request (`--watch-pid` of a `dyno serve` child)
/// is compared side by side: four runs a side of one server at 1 ms of CPU
/// per request are not called different (A/A), and the same server at
/// 3 ms per request is called worse, by about 3×.
#[test]
fn watched_server_cpu_per_request_compares_a_a_alike_and_a_costlier_server_worse() {
    let home = temp();
    let h = home.path();
    let (mut server, addr) = spawn_serve("127.0.0.1:0", 1);
    let pid = server.id().to_string();
    let run = |path: &str, tag: &str| {
        ok(
            h,
            &[
                "http",
                &format!("http://{addr}{path}"),
                "-n",
                "300",
                "-c",
                "1",
                "--watch-pid",
                &pid,
                "--watch-interval",
                "50ms",
                "--tag",
                tag,
            ],
        );
    };
    // Interleaved, so that drift of the machine is shared.
    for _ in 0..4 {
        run("/cpu/1000", "a");
        run("/cpu/1000", "b");
        run("/cpu/3000", "costly");
    }
    stop_server(&mut server);
    // The watched CPU is read from /proc in 10 ms ticks, and a run here
    // holds 0.3 s of it: a few percent of noise per run, so the band is
    // wider than the default 2%.
    let compare = |b: &str| {
        ok(
            h,
            &[
                "compare",
                "--baseline",
                "@tag:a",
                b,
                "--noise",
                "10",
                "--no-save",
            ],
        )
    };
    let same = compare("@tag:b");
    let line = row(&same, "server_cpu_per_op_ns{watched=dyno}");
    let verdict = line.split_whitespace().last().unwrap();
    assert!(
        verdict != "better" && verdict != "worse",
        "an A/A pair was called {verdict}:\n{same}"
    );
    let costly = compare("@tag:costly");
    let line = row(&costly, "server_cpu_per_op_ns{watched=dyno}");
    assert!(line.ends_with("worse"), "{costly}");
    let ratio: f64 = line
        .split_whitespace()
        .find_map(|w| w.strip_suffix('×')?.parse().ok())
        .unwrap();
    assert!((2.4..=3.6).contains(&ratio), "{ratio}: {line}");
}
