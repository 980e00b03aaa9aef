//! `dyno scale`: sweeps, data files and the built-in workload through the binary.

use crate::common::warning_codes as codes;
use crate::common::*;

/// Writes `text` to `name` in `dir` and returns its path as a string.
fn data_file(dir: &Path, name: &str, text: &str) -> String {
    write_file(dir, name, text).to_str().unwrap().to_owned()
}

/// T(N) = 0.1 + 0.9/N: Amdahl's law with p = 0.9, for every N in `ns`.
fn amdahl_csv(ns: impl IntoIterator<Item = u32>) -> String {
    let mut text = String::from("threads,seconds\n");
    for n in ns {
        text.push_str(&format!("{n},{}\n", 0.1 + 0.9 / f64::from(n)));
    }
    text
}

/// `dyno scale args… --json`, expecting success; the schema-checked Run and
/// stderr.
fn scale_json(home: &Path, args: &[&str]) -> (Value, String) {
    let (run, stderr) = json_run(home, &[&["scale"], args].concat(), 0);
    assert_eq!(run["kind"], "scale");
    assert_finite(&run);
    (run, stderr)
}

/// Every figure is a finite number (JSON has no NaN or infinity; serde_json
/// would write null, which the schema refuses, but check the values too).
fn assert_finite(run: &Value) {
    for m in run["metrics"].as_array().unwrap() {
        let v = m["value"].as_f64();
        assert!(v.is_some_and(f64::is_finite), "{m}");
    }
}

/// The value of metric `name` at `n` (`None`: the unlabelled fit metric).
fn at(run: &Value, name: &str, n: Option<&str>) -> Option<f64> {
    metrics(run)
        .find(|m| m["name"] == name && m["labels"]["n"].as_str() == n)
        .and_then(|m| m["value"].as_f64())
}

/// The metric `name` at `n`, which must be there.
fn point<'a>(run: &'a Value, name: &str, n: &str) -> &'a Value {
    metrics(run)
        .find(|m| m["name"] == name && m["labels"]["n"] == n)
        .unwrap_or_else(|| panic!("no {name} at N = {n}"))
}

#[test]
fn scale_file_with_an_amdahl_curve_finds_p_in_the_report_and_the_json() {
    let home = temp();
    let csv = data_file(home.path(), "amdahl.csv", &amdahl_csv(1..=8));

    let report = ok(home.path(), &["scale", "--file", &csv, "--no-save"]);
    assert!(report.contains("parallel fraction p = 90.0%"), "{report}");
    assert!(
        report.contains("ceiling 1/(1 − p) = 10.00×") && report.contains("(predicted)"),
        "{report}"
    );
    assert!(report.contains("Best       N = 8"), "{report}");
    assert!(report.contains("USL        σ = 0.1000"), "{report}");
    for n in 2..=8 {
        // Every N's own Amdahl fraction is 90% and its Karp–Flatt 10%.
        let line = report
            .lines()
            .find(|l| l.starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("no row for N = {n} in {report}"));
        assert!(line.contains("90.0%") && line.contains("10.0%"), "{line}");
    }

    let (run, _) = scale_json(home.path(), &["--file", &csv, "--no-save"]);
    let p = at(&run, "amdahl_fit_parallel_fraction", None).unwrap();
    assert!((p - 0.9).abs() < 1e-6, "{p}");
    let ceiling = at(&run, "amdahl_fit_ceiling", None).unwrap();
    assert!((ceiling - 10.0).abs() < 1e-4, "{ceiling}");
    for n in ["2", "4", "8"] {
        let p = at(&run, "amdahl_parallel_fraction", Some(n)).unwrap();
        assert!((p - 0.9).abs() < 1e-9, "N = {n}: {p}");
        let e = at(&run, "karp_flatt_serial_fraction", Some(n)).unwrap();
        assert!((e - 0.1).abs() < 1e-9, "N = {n}: {e}");
    }
    let s8 = at(&run, "speedup", Some("8")).unwrap();
    assert!((s8 - 1.0 / (0.1 + 0.9 / 8.0)).abs() < 1e-9, "{s8}");
    let t8 = at(&run, "time_ns", Some("8")).unwrap();
    assert!((t8 - 212.5e6).abs() < 1.0, "{t8}");
    // The USL: present, finite, and here it is Amdahl's law (κ = 0, σ = 1 − p).
    let sigma = at(&run, "usl_sigma", None).unwrap();
    assert!((sigma - 0.1).abs() < 1e-3, "{sigma}");
    for name in ["usl_kappa", "usl_lambda", "usl_r_squared", "usl_bound"] {
        assert!(at(&run, name, None).is_some(), "no {name}");
    }
    assert!(at(&run, "usl_r_squared", None).unwrap() > 0.999);
    assert_eq!(run["headline"], "best_speedup");
    assert_eq!(run["settings"]["source"], "file");
    assert_eq!(run["settings"]["n_column"], "threads");
    assert_eq!(run["settings"]["measure"], "time");
    assert!(codes(&run).is_empty(), "{:?}", codes(&run));
}

#[test]
fn scale_file_finds_n_under_the_names_people_give_it() {
    let home = temp();
    for name in ["concurrency", "Clients", "CPUS", "processes", "Load"] {
        let text = amdahl_csv([1, 2, 4]).replacen("threads", name, 1);
        let csv = data_file(home.path(), &format!("{name}.csv"), &text);
        let (run, _) = scale_json(home.path(), &["--file", &csv, "--no-save"]);
        assert_eq!(run["settings"]["n_column"], name);
        let p = at(&run, "amdahl_parallel_fraction", Some("4")).unwrap();
        assert!((p - 0.9).abs() < 1e-9, "{name}: {p}");
    }
    let help = ok(home.path(), &["scale", "--help"]);
    for name in ["concurrency", "clients", "cpus", "processes", "load"] {
        assert!(help.contains(name), "{name} not in --help: {help}");
    }
}

#[test]
fn a_parallel_fraction_keeps_three_figures_of_its_serial_part_in_every_report() {
    let home = temp();
    // Amdahl's law with p = 0.9896: 1 − p = 1.04% needs two decimals.
    let mut text = String::from("threads,seconds\n");
    for n in [1, 2, 4, 8] {
        text.push_str(&format!("{n},{}\n", 0.0104 + 0.9896 / f64::from(n)));
    }
    let csv = data_file(home.path(), "p.csv", &text);
    let report = ok(home.path(), &["scale", "--file", &csv, "--no-save"]);
    assert!(report.contains("parallel fraction p = 98.96%"), "{report}");
    let row = report
        .lines()
        .find(|l| l.starts_with("8 "))
        .unwrap_or_else(|| panic!("no N = 8 row in {report}"));
    assert!(row.contains("98.96%"), "{row}");
    let (run, _) = scale_json(home.path(), &["--file", &csv]);
    let shown = ok(home.path(), &["show", run["id"].as_str().unwrap()]);
    let fit = shown
        .lines()
        .find(|l| l.starts_with("amdahl_fit_parallel_fraction"))
        .unwrap_or_else(|| panic!("no fit row in {shown}"));
    assert!(fit.contains("98.96%"), "{fit}");
}

#[test]
fn scale_reads_json_files_and_throughputs_and_labels_a_predicted_peak() {
    let home = temp();
    // X(N) = 1000 N / (1 + 0.05 (N − 1) + 0.002 N (N − 1)): peak at N* = 21.
    let usl = |n: f64| 1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
    let items: Vec<String> = [1, 2, 4, 6, 8, 12]
        .iter()
        .map(|&n| format!("{{\"clients\": {n}, \"rps\": {}}}", usl(f64::from(n))))
        .collect();
    let json = data_file(home.path(), "rps.json", &format!("[{}]", items.join(",\n")));
    let line = format!("--file {json} --n-column clients --value-column rps --measure throughput");
    let args = words(&line);
    let (run, _) = scale_json(home.path(), &args);
    assert_eq!(run["settings"]["format"], "json");
    assert_eq!(run["settings"]["measure"], "throughput");
    let kappa = at(&run, "usl_kappa", None).unwrap();
    assert!((kappa - 0.002).abs() < 1e-5, "{kappa}");
    let peak = find_metric(&run, "usl_peak_n");
    assert_eq!(peak["value"], 21.0);
    assert_eq!(peak["labels"]["predicted"], "true");
    assert!(at(&run, "throughput", Some("12")).is_some());
    assert!(codes(&run).is_empty(), "{:?}", codes(&run));
    // Saved, and listed with its headline.
    let history = ok(home.path(), &["history", "--kind", "scale"]);
    assert!(history.contains("best speedup"), "{history}");

    let mut again = vec!["scale", "--no-save"];
    again.extend(args);
    let report = ok(home.path(), &again);
    assert!(report.contains("THROUGHPUT"), "{report}");
    assert!(report.contains("peak at N* = 21"), "{report}");
    assert!(report.contains("(predicted)"), "{report}");
}

#[test]
fn scale_refuses_bad_files_naming_the_line_and_column() {
    let home = temp();
    let h = home.path();
    let bad_number = data_file(h, "bad.csv", "n,seconds\n1,1.0\n2,0.55\n3,O.4\n4,0.325\n");
    let duplicate = data_file(h, "dup.csv", "n,seconds\n1,1.0\n2,0.55\n2,0.5\n");
    let below_one = data_file(h, "zero.csv", "n,seconds\n0,2.0\n1,1.0\n2,0.55\n");
    let negative = data_file(h, "neg.csv", "n,seconds\n1,1.0\n2,-0.5\n4,0.3\n");
    let ragged = data_file(h, "ragged.csv", "n,seconds\n1,1.0\n2,0.5,9\n");
    let no_n = data_file(h, "non.csv", "cores,seconds\n1,1.0\n2,0.5\n");
    let one = data_file(h, "one.csv", "n,seconds\n1,1.0\n");
    let bad_json = data_file(
        h,
        "bad.json",
        "[{\"n\": 1, \"seconds\": 1.0},\n {\"n\": 2, \"seconds\": }]",
    );
    let missing = h.join("nope.csv");
    let missing = missing.to_str().unwrap();
    let cases: [(&[&str], &[&str]); 10] = [
        (
            &["scale", "--file", &bad_number],
            &["line 4", "column 'seconds'", "'O.4' is not a number"],
        ),
        (
            &["scale", "--file", &duplicate],
            &["line 3 and line 4", "N = 2"],
        ),
        (
            &["scale", "--file", &below_one],
            &["line 2", "column 'n'", "below 1"],
        ),
        (&["scale", "--file", &negative], &["line 3", "above zero"]),
        (&["scale", "--file", &ragged], &["line: 3"]),
        (
            &["scale", "--file", &no_n],
            &["'cores', 'seconds'", "--n-column"],
        ),
        (&["scale", "--file", &one], &["at least 2 values of N"]),
        (
            &["scale", "--file", &bad_json],
            &["not valid JSON", "line 2"],
        ),
        (
            &["scale", "--file", missing],
            &["could not read", "nope.csv"],
        ),
        (
            &["scale", "--file", &no_n, "--n-column", "cpus"],
            &["--n-column 'cpus' is not a column"],
        ),
    ];
    assert_refused(h, &cases);
}

#[test]
fn scale_fits_only_what_the_points_allow() {
    let home = temp();
    let h = home.path();
    // Two points: figures and Amdahl, the USL refused with the reason.
    let two = data_file(h, "two.csv", &amdahl_csv([1, 2]));
    let (run, _) = scale_json(h, &["--file", &two, "--no-save"]);
    assert!(at(&run, "speedup", Some("2")).is_some());
    assert!(at(&run, "amdahl_fit_parallel_fraction", None).is_some());
    assert_eq!(at(&run, "usl_sigma", None), None);
    assert_eq!(codes(&run), ["too_few_points"]);
    let report = ok(h, &["scale", "--file", &two, "--no-save"]);
    assert!(
        report.contains("USL        not fitted") && report.contains("at least 3 values of N"),
        "{report}"
    );
    // Four points: fitted, with a warning.
    let four = data_file(h, "four.csv", &amdahl_csv([1, 2, 3, 4]));
    let (run, _) = scale_json(h, &["--file", &four, "--no-save"]);
    assert!(at(&run, "usl_sigma", None).is_some());
    assert_eq!(codes(&run), ["few_points"]);
    let report = ok(h, &["scale", "--file", &four, "--no-save"]);
    assert!(report.contains("6 or more recommended"), "{report}");
    // No N = 1: the baseline is named.
    let no_one = data_file(h, "no1.csv", &amdahl_csv([2, 4, 6, 8, 10, 12]));
    let (run, _) = scale_json(h, &["--file", &no_one, "--no-save"]);
    assert_eq!(codes(&run), ["no_baseline_at_1"]);
    assert_eq!(at(&run, "speedup", Some("2")), Some(2.0));
    // One point: nothing to analyse.
    let one = data_file(h, "one.csv", "n,seconds\n4,1.0\n");
    let err = fails(h, &["scale", "--file", &one]);
    assert!(err.contains("at least 2 values of N"), "{err}");
    assert!(
        !h.join("dyno.db").exists(),
        "--no-save and refusals save nothing"
    );
}

#[test]
fn scale_workload_int64_measures_and_saves_a_valid_run() {
    let home = temp();
    let (run, stderr) = scale_json(
        home.path(),
        &words("--workload int64 --threads 1,2 --iterations 2000000 --repetitions 2"),
    );
    let settings = &run["settings"];
    assert_eq!(settings["source"], "workload");
    assert_eq!(settings["scaling"], "strong");
    assert_eq!(settings["threads"], serde_json::json!([1, 2]));
    assert_eq!(settings["iterations"], 2_000_000);
    assert_eq!(settings["repetitions"], 2);
    let time = point(&run, "time_ns", "2");
    assert_eq!(time["samples"].as_array().unwrap().len(), 2);
    assert!(time["value"].as_f64().unwrap() > 0.0);
    assert_eq!(at(&run, "speedup", Some("1")), Some(1.0));
    assert!(at(&run, "speedup", Some("2")).unwrap() > 0.0);
    assert!(at(&run, "amdahl_parallel_fraction", Some("2")).is_some());
    assert!(codes(&run).contains(&"too_few_points"));
    assert!(run["environment"]["dyno"]["version"].is_string());
    assert!(stderr.is_empty() || !stderr.contains("error"), "{stderr}");

    // Saved: history lists it, show returns the same valid record.
    let id = run["id"].as_str().unwrap();
    let history = ok(home.path(), &["history", "--kind", "scale"]);
    assert!(history.contains(id), "{history}");
    let (shown, _) = json_run(home.path(), &["show", id], 0);
    assert_eq!(shown["metrics"], run["metrics"]);

    let report = ok(
        home.path(),
        &words(
            "scale --workload int64 --threads 1,2,3 --iterations 1000000 --repetitions 1 --no-save",
        ),
    );
    assert!(
        report.contains("int64 measured now, strong scaling"),
        "{report}"
    );
    assert!(report.contains("USL        σ = "), "{report}");
}

#[test]
fn scale_last_analyses_a_dyno_run_sweep() {
    let home = temp();
    let h = home.path();
    let sweep = dyno(h)
        .args(["run", "-N", "-P", "n", "1", "3", "--runs", "3", "--json"])
        .arg("sleep 0.0{n}")
        .assert()
        .success()
        .get_output()
        .clone();
    let sweep = stdout_json(&sweep);
    let sweep_id = sweep["id"].as_str().unwrap();

    let (run, _) = scale_json(h, &["--last", "--no-save"]);
    assert_eq!(run["settings"]["source"], "run");
    assert_eq!(run["settings"]["run_id"], sweep_id);
    assert_eq!(run["settings"]["parameter"], "n");
    assert_eq!(run["settings"]["command"], "sleep 0.0{n}");
    let (t1, t3) = (
        at(&run, "time_ns", Some("1")).unwrap(),
        at(&run, "time_ns", Some("3")).unwrap(),
    );
    assert!(t1 >= 10e6 && t3 >= 30e6 && t3 > t1, "{t1} {t3}");
    // The sweep's own runs travel with the point.
    let samples = point(&run, "time_ns", "2")["samples"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(samples, 3);
    // Sleeping longer with larger N is negative scaling, reported as such.
    assert!(at(&run, "speedup", Some("3")).unwrap() < 1.0);
    assert_eq!(at(&run, "amdahl_fit_parallel_fraction", None), Some(0.0));
    assert_eq!(
        run["environment"]["hostname"],
        sweep["environment"]["hostname"]
    );

    // By id prefix too, and the report names its source.
    let report = ok(h, &["scale", &sweep_id[..12], "--no-save"]);
    assert!(report.contains(&format!("run {sweep_id}")), "{report}");
    assert!(report.contains("N = parameter n"), "{report}");
}

#[test]
fn scale_picks_one_curve_of_a_sweep_with_several() {
    let home = temp();
    let h = home.path();
    dyno(h)
        .args([
            "run", "-N", "-P", "n", "1", "3", "-L", "m", "1,2", "--runs", "2",
        ])
        .args(["sleep 0.0{n}{m}", "sleep 0.0{m}{n}"])
        .assert()
        .success();
    let err = fails(h, &["scale", "--last"]);
    assert!(
        err.contains("parameters n, m") && err.contains("--param"),
        "{err}"
    );
    let err = fails(h, &["scale", "--last", "--param", "n"]);
    assert!(
        err.contains("4 curves over n") && err.contains("--command") && err.contains("--where m="),
        "{err}"
    );
    let (run, _) = scale_json(
        h,
        &words("--last --param n --command 2 --where m=2 --no-save"),
    );
    assert_eq!(run["settings"]["command"], "sleep 0.0{m}{n}");
    assert_eq!(run["settings"]["where"]["m"], "2");
    // n = 1, 2, 3 with m = 2: 'sleep 0.021', 'sleep 0.022', 'sleep 0.023'.
    for n in ["1", "2", "3"] {
        let t = at(&run, "time_ns", Some(n)).unwrap();
        assert!((21e6..200e6).contains(&t), "N = {n}: {t}");
    }
    let (run, _) = scale_json(
        h,
        &[
            &["--last", "--param", "m", "--command", "sleep 0.0{n}{m}"][..],
            &words("--where n=3 --no-save"),
        ]
        .concat(),
    );
    assert!(at(&run, "time_ns", Some("2")).unwrap() >= 32e6);
    let err = fails(h, &["scale", "--last", "--param", "n", "--command", "3"]);
    assert!(err.contains("numbered from 1"), "{err}");
    let err = fails(h, &words("scale --last --param n --command 2 --where m=7"));
    assert!(
        err.contains("no benchmark") && err.contains("1, 2"),
        "{err}"
    );
}

#[test]
fn scale_refuses_runs_it_cannot_analyse() {
    let home = temp();
    let h = home.path();
    let err = fails(h, &["scale", "--last"]);
    assert!(err.contains("no saved `dyno run`"), "{err}");
    let err = fails(h, &["scale", "01ZZZZZZZZZZZZZZZZZZZZZZZZ"]);
    assert!(err.contains("01ZZZZZZZZZZZZZZZZZZZZZZZZ"), "{err}");

    let quick = quick_json(h, &[]);
    let quick_id = quick["id"].as_str().unwrap();
    let err = fails(h, &["scale", quick_id]);
    assert!(
        err.contains("quick run") && err.contains("not a `dyno run` sweep"),
        "{err}"
    );

    dyno(h)
        .args(["run", "-N", "--runs", "2", "true"])
        .assert()
        .success();
    let err = fails(h, &["scale", "--last"]);
    assert!(err.contains("no parameter to use as N"), "{err}");

    dyno(h)
        .args(["run", "-N", "-L", "w", "a,b", "--runs", "2", "echo {w}"])
        .assert()
        .success();
    let err = fails(h, &["scale", "--last"]);
    assert!(
        err.contains("'a'") && err.contains("not a number") && err.contains("--param"),
        "{err}"
    );
    let err = fails(h, &["scale", "--last", "--param", "x"]);
    assert!(
        err.contains("no parameter 'x'") && err.contains(": w"),
        "{err}"
    );
}

#[test]
fn scale_usage_errors_exit_2() {
    let home = temp();
    let cases: [(&[&str], &[&str]); 9] = [
        (&["scale"], &["--last", "--file", "--workload"]),
        (
            &["scale", "--last", "--file", "x.csv"],
            &["cannot be used with"],
        ),
        (
            &["scale", "--file", "x.csv", "--threads", "2"],
            &["--threads", "cannot be used with", "--file"],
        ),
        (
            &["scale", "--workload", "int64", "--n-column", "x"],
            &["--n-column", "cannot be used with", "--workload"],
        ),
        (&["scale", "--file", "x.csv", "--param", "n"], &["RUN_ID"]),
        (
            &["scale", "--workload", "int64", "--threads", "1,2,1"],
            &["twice"],
        ),
        (
            &["scale", "--workload", "int64", "--threads", "0,2"],
            &["--threads", "from 1"],
        ),
        (
            &["scale", "--workload", "tree-read", "--depth", "0"],
            &["--depth", "from 1 to 64"],
        ),
        (
            &["scale", "--file", "x.csv", "--tasks", "5"],
            &["--tasks", "cannot be used with"],
        ),
    ];
    assert_refused(home.path(), &cases);
    Command::cargo_bin("dyno")
        .unwrap()
        .args(["scale", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"))
        .stdout(predicate::str::contains("dyno scale --workload int64"));
}

#[test]
fn quick_shows_the_int64_scaling_line() {
    let home = temp();
    let run = quick_json(home.path(), &["--no-save", "--threads", "2"]);
    assert_valid(&run, None);
    let s = metric(&run, "int64_speedup").unwrap();
    let p = metric(&run, "int64_amdahl_parallel_fraction").unwrap();
    // The per-point Amdahl formula at N = 2, of the speedup shown.
    let from_mean = (1.0 - 1.0 / s) / (1.0 - 1.0 / 2.0);
    assert!(
        (p - from_mean).abs() < 0.1,
        "p {p} vs {from_mean} from S = {s}"
    );
    let table = ok(
        home.path(),
        &[&SMALL_QUICK[..], &["--threads", "2", "--no-save"]].concat(),
    );
    let line = table
        .lines()
        .find(|l| l.starts_with("int64 scaling, 1→2 threads"))
        .unwrap_or_else(|| panic!("no scaling line in {table}"));
    assert!(
        line.contains("throughput speedup")
            && line.contains("weak scaling: 2 copies")
            && line.contains("Amdahl parallel fraction"),
        "{line}"
    );
}

/// Defect 31: fractional N is refused; --measure throughput on a seconds
/// column names the column and the fix.
#[test]
fn scale_file_refuses_fractional_n_and_names_the_other_kind_of_column() {
    let home = temp();
    let h = home.path();
    let fractional = data_file(h, "frac.csv", "n,seconds\n1,1.0\n1.5,0.8\n2,0.6\n");
    let err = fails(h, &["scale", "--file", &fractional]);
    assert!(
        err.contains("N = 1.5 is not a whole number") && err.contains("line 3"),
        "{err}"
    );
    let times = data_file(h, "t.csv", "threads,seconds\n1,1.0\n2,0.6\n4,0.4\n");
    let err = fails(h, &["scale", "--file", &times, "--measure", "throughput"]);
    assert!(
        err.contains("'seconds' holds a time") && err.contains("--measure time"),
        "{err}"
    );
}

/// Defect 31: super-linear points are warned and not called "almost
/// linear"; a file's run says its measuring machine is not recorded.
#[test]
fn scale_file_warns_superlinear_points_and_unknown_machine() {
    let home = temp();
    let h = home.path();
    let file = data_file(h, "super.csv", "n,seconds\n1,10\n2,4\n4,2\n8,1\n");
    let (run, _) = scale_json(h, &["--file", &file]);
    let c = codes(&run);
    assert!(c.contains(&"superlinear"), "{c:?}");
    assert!(
        run["settings"]["environment"]
            .as_str()
            .unwrap()
            .starts_with("not recorded"),
        "{}",
        run["settings"]
    );
    let text = run["warnings"].to_string();
    assert!(text.contains("N = 2 (125%)"), "{text}");
    let shown = ok(h, &["show", run["id"].as_str().unwrap()]);
    assert!(!shown.contains("almost linearly"), "{shown}");
    assert!(shown.contains("super-linear"), "{shown}");
    // An ordinary Amdahl curve gets neither super-linear warning nor label.
    let amdahl = data_file(h, "a.csv", &amdahl_csv([1, 2, 4, 8, 16, 32]));
    let (run, _) = scale_json(h, &["--file", &amdahl]);
    assert!(!codes(&run).contains(&"superlinear"));
}

/// The flags of the workload `kind` (`tree-read`, `tree-write`) on 1 and 2
/// threads: `tasks` trees of `depth` levels and about `nodes` nodes,
/// measured `repetitions` times, saved nowhere.
fn tree_workload(kind: &str, tasks: u32, depth: u32, nodes: u32, repetitions: u32) -> String {
    format!(
        "--workload {kind} --threads 1,2 --tasks {tasks} --depth {depth} --nodes {nodes} \
         --repetitions {repetitions} --no-save"
    )
}

#[test]
fn scale_workload_tree_read_checks_every_count_and_fits_the_curve() {
    let home = temp();
    let flags = tree_workload("tree-read", 30, 5, 20000, 2);
    let (run, _) = scale_json(home.path(), &words(&flags));
    let settings = &run["settings"];
    assert_eq!(settings["workload"], "tree-read");
    assert_eq!(settings["tasks"], 30);
    assert_eq!(settings["depth"], 5);
    let nodes = settings["nodes"].as_u64().unwrap();
    assert!((15_000..25_000).contains(&nodes), "{nodes}");
    for n in ["1", "2"] {
        assert!(at(&run, "time_ns", Some(n)).unwrap() > 0.0);
    }
    assert!(at(&run, "speedup", Some("2")).unwrap() > 0.0);
    assert!(at(&run, "amdahl_fit_parallel_fraction", None).is_some());
    let flags = tree_workload("tree-read", 10, 3, 500, 1);
    let text = ok(home.path(), &words(&format!("scale {flags}")));
    assert!(text.contains("every count checked"), "{text}");
    assert!(text.contains("tree-read: 10 tasks over"), "{text}");
}

#[test]
fn scale_workload_tree_write_is_durable_checks_every_tree_and_reports_the_log() {
    let home = temp();
    let dir = home.path().join("db-here");
    std::fs::create_dir(&dir).unwrap();
    let in_dir = format!("--dir {}", dir.display());
    let flags = tree_workload("tree-write", 20, 3, 300, 1);
    let (run, _) = scale_json(home.path(), &words(&format!("{flags} {in_dir}")));
    let settings = &run["settings"];
    assert_eq!(settings["workload"], "tree-write");
    assert_eq!(settings["durable"], true);
    assert_eq!(settings["tasks"], 20);
    assert!(settings["dir"].as_str().unwrap().ends_with("db-here"));
    for n in ["1", "2"] {
        assert!(at(&run, "time_ns", Some(n)).unwrap() > 0.0);
        assert!(at(&run, "commits_per_sec", Some(n)).unwrap() > 0.0);
        let fsyncs = at(&run, "fsyncs_per_commit", Some(n)).unwrap();
        assert!(fsyncs > 0.0 && fsyncs <= 1.0, "{fsyncs}");
        assert_eq!(at(&run, "retries", Some(n)), Some(0.0));
        assert!(at(&run, "log_bytes_per_commit", Some(n)).unwrap() > 0.0);
    }
    // The run's database is gone afterwards.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let flags = tree_workload("tree-write", 5, 2, 50, 1);
    let text = ok(home.path(), &words(&format!("scale {flags} {in_dir}")));
    assert!(text.contains("FSYNCS/COMMIT"), "{text}");
    assert!(text.contains("every tree counted back"), "{text}");
    let missing = home.path().join("nowhere");
    Command::cargo_bin("dyno")
        .unwrap()
        .current_dir(home.path())
        .args(words("scale --workload tree-write --threads 1,2 --dir"))
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such directory"));
}
