//! Reads an access log as `dyno http --replay` will (the reader, the
//! reordering and the spreading, nothing sent) and prints how many entries
//! and bad lines it held, and how long reading took: bench/replay-read.sh
//! measures its speed and peak memory on logs of millions of lines.
//!
//! Usage: cargo run --release -p dyno-http --example replay_read -- FILE [FORMAT]

#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench tool prints its answer

use std::path::Path;
use std::time::Instant;

use dyno_http::replay::{LogFormat, Ordered, Reader, Spread, Spreader};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: replay_read FILE [FORMAT]");
        std::process::exit(2);
    };
    let format = args.next().map(|f| {
        LogFormat::parse(&f).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        })
    });
    let started = Instant::now();
    let reader = Reader::open(Path::new(&file), format).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let (mut entries, mut bad, mut last) = (0u64, 0u64, 0u64);
    for item in Spreader::new(Ordered::new(reader), Spread::Even) {
        match item {
            Ok((offset, _)) => {
                entries += 1;
                last = offset;
            }
            Err(_) => bad += 1,
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{entries} entries, {bad} bad, spanning {:.1} s of log, read in {secs:.2} s ({:.0} entries/s, {:.2} µs each)",
        last as f64 / 1e6,
        entries as f64 / secs,
        secs / entries.max(1) as f64 * 1e6
    );
}
