//! The HTTP load engine behind `dyno http`.
//!
//! Settings in, a measurement out: the engine never prints, parses flags or
//! touches the store. Each worker thread runs its own event loop (a tokio
//! current-thread runtime) with its own connections, histograms and
//! counters; they are merged once per second for the timeline and once at
//! the end.
//!
//! - [`request`]: request templates, encoded once and filled per request.
//! - [`parse`]: the incremental response parser (framing only).
//! - [`settings`]: what to do; [`engine`]: the driver; [`stats`]: what was measured.
//! - [`record`]: settings and outcome in, the run's `Run` out (record, metrics,
//!   warnings, headline); [`quick`]: `dyno quick`'s HTTP line.
//! - [`capacity`]: `--find-max`, the capacity search's steps on the engine.
//! - `conn` and `tls`: the byte streams, plain or through rustls.

pub mod capacity;
mod conn;
mod ending;
pub mod engine;
mod http2;
mod http3;
mod outcome;
pub mod parse;
pub mod quick;
pub mod record;
/// Access logs (nginx, Apache, JSON lines, HAR) read back as requests for `dyno http --replay`.
pub mod replay;
pub mod request;
pub mod scenario;
pub mod settings;
pub mod stats;
pub mod status;
mod tls;
pub mod warnings;

pub use conn::Endpoint;
pub use ending::Ending;
pub use engine::{EngineError, Outcome, Progress, run, run_gated};
pub use outcome::recompute_merged;
pub use record::{Asked, record};
pub use settings::{Schedule, Segment, Settings, Stop, TlsSettings};
pub use stats::{ErrorClass, ErrorCounts, Interval, Stats};
pub use status::{StatusSet, StatusSetError};
pub use tls::{TlsSession, TlsSetupError};
pub use warnings::HttpWarning;
