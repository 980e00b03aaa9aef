//! What `dyno run` was asked to do, as plain values: the binary resolves its
//! flags into these, the engine reads nothing else, and the run records them
//! so it can be repeated. The types are the run's settings record, in
//! `dyno_model::record`, so what the engine runs with is what is stored.

pub use dyno_model::record::{CommandSpec, ExecSettings as Settings, Hooks, Output, Policy, Shell};
