//! The names of the metrics a `disk` run writes.
//!
//! Every one is of one test and operation (labels [`super::label::TEST`]
//! and [`super::label::OP`]); the latency of the timed passes is
//! [`super::common::LATENCY`].

/// The best pass's bytes per second, every pass as samples:
/// CrystalDiskMark's figure, and the headline of a run that moves data.
pub const THROUGHPUT_BYTES_PER_SEC: &str = "throughput_bytes_per_sec";
/// The best pass's I/Os per second, every pass as samples: the throughput
/// over the block size (the headline of `--preset sync`).
pub const IOPS: &str = "iops";
/// A metadata test's (`--preset meta`) files per second, every pass as
/// samples: its headline.
pub const FILES_PER_SEC: &str = "files_per_sec";
/// CPU time of the I/O threads per I/O, over all timed passes.
pub const CPU_PER_IO: &str = "cpu_ns_per_io";
/// I/Os that moved fewer bytes than asked; written only when there were
/// any.
pub const SHORT_IOS: &str = "short_ios";
