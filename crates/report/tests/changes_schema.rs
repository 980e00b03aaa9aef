//! `schema/changes.schema.json` is what the `dyno changes --json` types
//! generate: run with `DYNO_UPDATE_SCHEMA=1` to write it after changing
//! them. (The CLI's tests validate real output against the file.)

use std::path::Path;

#[test]
fn the_checked_in_changes_schema_is_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/changes.schema.json");
    let generated = dyno_report::changes::changes_schema();
    let mut text = serde_json::to_string_pretty(&generated).unwrap();
    text.push('\n');
    if std::env::var_os("DYNO_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == text,
        "schema/changes.schema.json is stale: run `DYNO_UPDATE_SCHEMA=1 cargo test -p dyno-report --test changes_schema` and commit it"
    );
}
