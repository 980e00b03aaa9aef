//! The runner of the fault suites (methodology: "The servers every load
//! mode meets"): the HTTP engine's (`crates/http/tests/suite.rs`) and the
//! db engine's (`crates/db/tests/suite.rs`) run every mode of theirs
//! against one fault through [`meet`], so a failure reads the same in
//! both: one line per mode that went wrong, all of them at once.

/// Runs `run` on each of `modes` against the fault `fault` (its words
/// after "a server that"), and panics with one line per mode whose run
/// went wrong, naming the mode by `name` and saying why.
pub fn meet<M>(
    fault: &str,
    modes: &[M],
    name: impl Fn(&M) -> &str,
    run: impl Fn(&M) -> Result<(), String>,
) {
    let wrong: Vec<String> = modes
        .iter()
        .filter_map(|mode| {
            run(mode)
                .err()
                .map(|why| format!("{} against a server that {fault}: {why}", name(mode)))
        })
        .collect();
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}
