//! The `dyno` binary: parses the command line, hands each subcommand to its
//! module under `cmd/`, and turns the outcome into an exit code.
//!
//! Exit codes are decided here and nowhere else: 0 success, 1 a measurement
//! that ran but failed its checks, 2 a usage or configuration error (clap's
//! own usage errors exit 2 as well), 130 a run that an interrupt (SIGINT,
//! SIGTERM or SIGHUP) ended early.

// The binary is where messages to people are written: libraries never
// print (the workspace denies print_stderr), the binary does.
#![allow(clippy::print_stderr)]

mod cli;
mod cmd;
mod settings;

use std::process::ExitCode;

use clap::FromArgMatches;

/// How a subcommand that did not error ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything asked for was done and passed its checks.
    Success,
    /// The measurement ran, but failed its checks (errors over threshold,
    /// output mismatch).
    ChecksFailed,
    /// An interrupt ended the measurement early; what was measured was
    /// printed and saved.
    Interrupted,
}

/// mimalloc keeps allocations of one size together, which is what the tree
/// database's traversals want (see `Cargo.toml`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli =
        cli::Cli::from_arg_matches(&cli::command().get_matches()).unwrap_or_else(|e| e.exit());
    match cmd::run(cli) {
        Ok(ExitStatus::Success) => ExitCode::SUCCESS,
        Ok(ExitStatus::ChecksFailed) => ExitCode::from(1),
        Ok(ExitStatus::Interrupted) => ExitCode::from(cmd::interrupt::EXIT_CODE),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("dyno: error: {}", in_words(&err));
            ExitCode::from(2)
        }
    }
}

/// An error and its causes, `: `-joined, each cause once: an error whose
/// message already says its cause (`could not read 'x': No such file or
/// directory`) does not repeat it.
fn in_words(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if !out.contains(&cause) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&cause);
        }
    }
    out
}

/// `dyno history | head` closes our stdout early; that is not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
