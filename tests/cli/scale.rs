//! `dyno scale`: sweeps, data files and the built-in workload through the binary.
