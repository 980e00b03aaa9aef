//! The runner of the fault suites (methodology: "The servers every load
//! mode meets"): the HTTP engine's (`crates/http/tests/suite.rs`) and the
//! db engine's (`crates/db/tests/suite.rs`) run every mode of theirs
//! against one fault through [`meet`], so a failure reads the same in
//! both: one line per mode that went wrong, all of them at once. Both
//! suites share the pace of their faults and runs ([`SLOW`], [`LENGTH`],
//! [`SLACK`]) and the capacity search their search mode makes
//! ([`search_plan`]).

use std::time::Duration;

use dyno_load::capacity::{Axis, Plan};

/// A duration run's length.
pub const LENGTH: Duration = Duration::from_millis(1500);
/// What a slow server takes to answer.
pub const SLOW: Duration = Duration::from_millis(100);
/// Added to every bound on a run's wall time (a busy machine).
pub const SLACK: Duration = Duration::from_secs(10);
/// A capacity search's time, all steps together.
pub const SEARCH_BUDGET: Duration = Duration::from_secs(5);
/// A search step's measured length, and its warm-up.
pub const SEARCH_STEP: Duration = Duration::from_secs(1);
pub const SEARCH_WARMUP: Duration = Duration::from_millis(200);

/// A short rate search from `start` per second against the objective
/// `p99<=400ms,errors<=1%`, in [`SEARCH_STEP`]s within [`SEARCH_BUDGET`]:
/// four steps at most.
pub fn search_plan(start: f64) -> Plan {
    let slo = "p99<=400ms,errors<=1%";
    Plan {
        slo: slo.parse().expect("a valid objective"),
        slo_text: slo.into(),
        step: SEARCH_STEP,
        warmup: SEARCH_WARMUP,
        budget: SEARCH_BUDGET,
        axis: Axis::Rate {
            start: Some(start),
            precision: 0.25,
        },
    }
}

/// One `#[test]` a fault of a suite's table:
/// `fault_tests!(meet(FAULTS) { name => 2, … })` defines `fn name()`, which
/// runs `meet(&FAULTS[2])` (every mode against that fault, through
/// [`meet`]).
#[macro_export]
macro_rules! fault_tests {
    ($meet:ident($faults:ident) { $($name:ident => $index:literal),* $(,)? }) => {
        $(
            #[test]
            fn $name() {
                $meet(&$faults[$index]);
            }
        )*
    };
}

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
