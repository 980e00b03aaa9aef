//! Every kind's typed settings record against runs dyno made: the fixtures
//! under `tests/fixtures/` (written by `scripts/fixtures` from a real dyno,
//! one run of every kind and of each variant of its settings) read as their
//! kind's record and write back the very same JSON, and
//! `schema/run.schema.json` describes them with the schemas the records
//! generate.

use std::path::{Path, PathBuf};

use dyno_model::record::{
    CompareRecord, DbRecord, DiskRecord, ExecRecord, FiguresRecord, HttpRecord, QuickRecord,
    Record, ScaleRecord, settings_schemas,
};
use dyno_model::{Kind, Run};
use serde_json::Value;

fn fixtures() -> Vec<(String, Run)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the fixtures folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let run: Run = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} does not read as a Run: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), run)
        })
        .collect()
}

/// The run's settings read as `R` and written back.
fn round_trip<R: Record>(run: &Run) -> Value {
    let record: R = run
        .record()
        .unwrap_or_else(|e| panic!("{}: {e}", run.description));
    serde_json::to_value(&record).unwrap()
}

/// Where two JSON values differ, as paths, for a readable failure.
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let p = format!("{path}.{key}");
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => differences(&p, u, v, out),
                    (u, v) => out.push(format!("{p}: {u:?} vs {v:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{i}]"), u, v, out);
            }
        }
        (u, v) if u != v => out.push(format!("{path}: {u} vs {v}")),
        _ => {}
    }
}

#[test]
fn every_fixture_reads_as_its_kinds_record_and_writes_back_the_same_json() {
    let fixtures = fixtures();
    let kinds: Vec<Kind> = fixtures.iter().map(|(_, r)| r.kind).collect();
    for kind in [
        Kind::Http,
        Kind::Disk,
        Kind::Db,
        Kind::Exec,
        Kind::Scale,
        Kind::Quick,
        Kind::Compare,
        Kind::Figures,
    ] {
        assert!(kinds.contains(&kind), "no fixture of kind {kind}");
    }
    for (name, run) in &fixtures {
        let back = match run.kind {
            Kind::Http => round_trip::<HttpRecord>(run),
            Kind::Disk => round_trip::<DiskRecord>(run),
            Kind::Db => round_trip::<DbRecord>(run),
            Kind::Exec => round_trip::<ExecRecord>(run),
            Kind::Scale => round_trip::<ScaleRecord>(run),
            Kind::Quick => round_trip::<QuickRecord>(run),
            Kind::Compare => round_trip::<CompareRecord>(run),
            Kind::Figures => round_trip::<FiguresRecord>(run),
            Kind::Cpu => panic!("{name}: no record for kind cpu"),
        };
        let mut diff = Vec::new();
        differences("settings", &run.settings, &back, &mut diff);
        assert!(
            diff.is_empty(),
            "{name}: the record does not write back what was read:\n{}",
            diff.join("\n")
        );
    }
}

/// The first fixture run of `kind`.
fn fixture_of(kind: Kind) -> Run {
    let (_, run) = fixtures()
        .into_iter()
        .find(|(_, r)| r.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} fixture"));
    run
}

#[test]
fn a_record_of_another_kind_is_refused_by_name() {
    let run = fixture_of(Kind::Disk);
    let e = run.record::<HttpRecord>().unwrap_err().to_string();
    assert!(e.contains("is a disk run, not a http run"), "{e}");
}

#[test]
fn settings_of_the_wrong_shape_are_an_error_naming_the_kind() {
    let mut run = fixture_of(Kind::Http);
    run.settings["connections"] = Value::from("many");
    let e = run.record::<HttpRecord>().unwrap_err().to_string();
    assert!(e.contains("do not read as a http record"), "{e}");
}

#[test]
fn setting_a_record_keeps_the_keys_it_does_not_know() {
    let mut run = fixture_of(Kind::Http);
    run.settings["future_key"] = Value::from(7);
    let mut record: HttpRecord = run.record().unwrap();
    record.connections = 99;
    run.set_record(&record);
    assert_eq!(run.settings["future_key"], 7);
    assert_eq!(run.settings["connections"], 99);
}

#[test]
fn a_run_saved_before_a_field_existed_reads_with_its_default() {
    let mut run = fixture_of(Kind::Http);
    for key in ["streams", "alpn", "pipeline", "url_file", "seed"] {
        run.settings.as_object_mut().unwrap().remove(key);
    }
    let record: HttpRecord = run.record().unwrap();
    assert_eq!((record.streams, record.pipeline), (1, 1));
    assert!(record.alpn.is_empty() && record.url_file.is_none());
}

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/run.schema.json")
}

/// `schema/run.schema.json` holds the schemas the records generate: run
/// with `DYNO_UPDATE_SCHEMA=1` to write them after changing a record.
#[test]
fn the_checked_in_schema_describes_every_kinds_settings_as_the_records_do() {
    let path = schema_path();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut schema: Value = serde_json::from_str(&text).unwrap();
    let generated = settings_schemas();
    // Every kind's record is chosen by one if-kind-then rule.
    let rules = schema["allOf"].as_array().map_or(0, Vec::len);
    let kinds = generated
        .keys()
        .filter(|k| k.starts_with("settings_"))
        .count();
    assert_eq!(
        rules, kinds,
        "one allOf rule per settings_<kind> definition"
    );
    let defs = schema["$defs"].as_object_mut().unwrap();
    // A settings definition no record generates any more is stale too.
    let stale: Vec<&String> = defs
        .keys()
        .filter(|k| k.starts_with("settings_") && !generated.contains_key(*k))
        .collect();
    assert!(
        stale.is_empty(),
        "schema/run.schema.json defines {stale:?}, which no record generates: remove them"
    );
    let stale: Vec<&String> = generated
        .iter()
        .filter(|(k, v)| defs.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    if stale.is_empty() {
        return;
    }
    if std::env::var_os("DYNO_UPDATE_SCHEMA").is_some() {
        defs.extend(generated.clone());
        let mut text = serde_json::to_string_pretty(&schema).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        return;
    }
    panic!(
        "schema/run.schema.json is stale for {stale:?}: run `DYNO_UPDATE_SCHEMA=1 cargo test -p dyno-model --test records` and commit the schema"
    );
}

#[test]
fn the_schema_accepts_every_fixture_and_refuses_settings_of_the_wrong_shape() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    for (name, run) in fixtures() {
        let value = serde_json::to_value(&run).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        if run.kind == Kind::Http {
            let mut bad = value.clone();
            bad["settings"]["connections"] = Value::from("many");
            assert!(
                !validator.is_valid(&bad),
                "{name}: a string connections passed"
            );
        }
    }
}

/// A figure read back from JSON (a store, an import) is the figure that
/// was written, to the last bit: serde_json's default float parser is off
/// by one unit in the last place for some values, which made an imported
/// run differ from the exported one in the 17th digit.
#[test]
fn figures_read_back_from_json_are_bit_for_bit_the_same() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200_000 {
        // xorshift64*, scaled to the magnitudes runs hold (ns, req/s, ratios).
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let bits = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let value = (bits >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((bits % 19) as i32 - 6);
        let text = serde_json::to_string(&value).unwrap();
        let back: f64 = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back.to_bits(),
            value.to_bits(),
            "{value:e} written as {text}"
        );
    }
}
