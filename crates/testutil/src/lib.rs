//! Helpers shared by more than one of dyno's test suites, so no suite
//! includes another's files by path: the HTTPS server of the HTTP engine's
//! and the CLI's TLS tests ([`tls`]), and the size-limited tmpfs mounts of
//! the disk engine's and the CLI's full-disk tests ([`tmpfs`]), and the
//! throwaway PostgreSQL of the CLI's db tests and the guide's examples
//! ([`pg`]), and the Prometheus exporters of the `--watch URL` tests
//! ([`exporter`]), and httpbin under gunicorn, a real web app
//! ([`httpbin`]), and the runner of the engines' fault suites
//! ([`suite`]), and an HTTP/3 client for `dyno serve --h3` ([`h3`]).
//!
//! Only tests depend on this crate (`publish = false`); it is never part of
//! the binary.

// A test helper says on stderr what it had to skip and why.
#![allow(clippy::print_stderr)]

pub mod exporter;
pub mod h3;
pub mod httpbin;
pub mod pg;
mod process;
pub mod suite;
pub mod tls;
pub mod tmpfs;
