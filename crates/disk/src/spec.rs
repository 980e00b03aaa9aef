//! What to measure: a test is an access pattern, a block size, a queue
//! depth and a thread count ("SEQ1M Q8T1"), run as reads, writes or a mix.
//! Presets are CrystalDiskMark's tables; `--test seq:1m:q8:t1` adds custom
//! ones. Nothing here touches a disk.

use std::fmt;

use dyno_model::size::parse_size;

/// How offsets are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Consecutive blocks; several threads each walk their own region.
    Sequential,
    /// Uniform, block-aligned, seeded offsets over the whole file.
    Random,
}

/// One test of a table row: pattern, block size, queue depth, threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestSpec {
    pub pattern: Pattern,
    pub block_bytes: u64,
    /// I/Os in flight per thread.
    pub queue_depth: u32,
    pub threads: u32,
}

impl TestSpec {
    pub const fn new(pattern: Pattern, block_bytes: u64, queue_depth: u32, threads: u32) -> Self {
        TestSpec {
            pattern,
            block_bytes,
            queue_depth,
            threads,
        }
    }

    /// I/Os in flight over all threads.
    pub fn in_flight(&self) -> u32 {
        self.queue_depth * self.threads
    }

    /// Parses `PATTERN:BLOCK[:qDEPTH][:tTHREADS]`, e.g. `seq:1m:q8:t1` or
    /// `rnd:4k:q32`; the queue depth and threads default to 1.
    pub fn parse(input: &str) -> Result<TestSpec, SpecError> {
        let bad = |why: String| SpecError {
            input: input.to_owned(),
            why,
        };
        let mut parts = input.trim().split(':');
        let pattern = match parts.next().unwrap_or("").to_ascii_lowercase().as_str() {
            "seq" | "sequential" => Pattern::Sequential,
            "rnd" | "rand" | "random" => Pattern::Random,
            other => {
                return Err(bad(format!(
                    "unknown pattern '{other}': start with seq or rnd"
                )));
            }
        };
        let block = parts
            .next()
            .ok_or_else(|| bad("no block size: add one, e.g. seq:1m".into()))?;
        let block_bytes = parse_size(block).map_err(|e| bad(e.to_string()))?;
        if block_bytes == 0 || !block_bytes.is_multiple_of(512) {
            return Err(bad(format!(
                "block size {block} must be a positive multiple of 512 bytes (direct I/O needs aligned blocks)"
            )));
        }
        if block_bytes > 64 << 20 {
            return Err(bad(format!("block size {block} is above the 64m limit")));
        }
        let (mut queue_depth, mut threads) = (1, 1);
        for part in parts {
            let lower = part.to_ascii_lowercase();
            let (slot, digits, what, max) = if let Some(d) = lower.strip_prefix('q') {
                (&mut queue_depth, d, "queue depth", 1024)
            } else if let Some(d) = lower.strip_prefix('t') {
                (&mut threads, d, "thread count", 256)
            } else {
                return Err(bad(format!(
                    "'{part}' is neither a queue depth (q32) nor a thread count (t4)"
                )));
            };
            *slot = digits
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| bad(format!("{what} '{part}' must be between 1 and {max}")))?;
        }
        Ok(TestSpec::new(pattern, block_bytes, queue_depth, threads))
    }
}

/// A `--test` value that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad test '{input}': {why} (write PATTERN:BLOCK[:qDEPTH][:tTHREADS], e.g. rnd:4k:q32:t1)")]
pub struct SpecError {
    input: String,
    why: String,
}

/// CrystalDiskMark's row names: "SEQ1M Q8T1", "RND4K Q32T16", "RND512K Q1T1".
impl fmt::Display for TestSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pattern = match self.pattern {
            Pattern::Sequential => "SEQ",
            Pattern::Random => "RND",
        };
        write!(
            f,
            "{pattern}{} Q{}T{}",
            block_name(self.block_bytes),
            self.queue_depth,
            self.threads
        )
    }
}

/// 1048576 → "1M", 4096 → "4K", 512 → "512", 1536 → "1536".
fn block_name(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (size, unit) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    bytes.to_string()
}

/// What each test does: read, write, or both in one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// Each I/O is a read with this probability (percent), else a write.
    Mix {
        read_percent: u8,
    },
}

impl Op {
    /// "read", "write", "mix70".
    pub fn name(&self) -> String {
        match self {
            Op::Read => "read".into(),
            Op::Write => "write".into(),
            Op::Mix { read_percent } => format!("mix{read_percent}"),
        }
    }
}

/// A named set of tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// CrystalDiskMark 8's default table.
    Cdm8,
    /// CrystalDiskMark 8's NVMe SSD table.
    Nvme,
    /// CrystalDiskMark 3's table.
    Cdm3,
    /// fsync latency, like pg_test_fsync.
    Sync,
    /// create, stat and unlink rates of small files.
    Meta,
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::Cdm8,
        Preset::Nvme,
        Preset::Cdm3,
        Preset::Sync,
        Preset::Meta,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Cdm8 => "cdm8",
            Preset::Nvme => "nvme",
            Preset::Cdm3 => "cdm3",
            Preset::Sync => "sync",
            Preset::Meta => "meta",
        }
    }

    /// The throughput tests of the preset, in table order; empty for
    /// `sync` and `meta`, which are not block-throughput tests.
    pub fn tests(self) -> Vec<TestSpec> {
        use Pattern::{Random as R, Sequential as S};
        const K: u64 = 1024;
        const M: u64 = 1024 * 1024;
        match self {
            Preset::Cdm8 => vec![
                TestSpec::new(S, M, 8, 1),
                TestSpec::new(S, M, 1, 1),
                TestSpec::new(R, 4 * K, 32, 1),
                TestSpec::new(R, 4 * K, 1, 1),
            ],
            Preset::Nvme => vec![
                TestSpec::new(S, M, 8, 1),
                TestSpec::new(S, 128 * K, 32, 1),
                TestSpec::new(R, 4 * K, 32, 16),
                TestSpec::new(R, 4 * K, 1, 1),
            ],
            Preset::Cdm3 => vec![
                TestSpec::new(S, M, 1, 1),
                TestSpec::new(R, 512 * K, 1, 1),
                TestSpec::new(R, 4 * K, 1, 1),
                TestSpec::new(R, 4 * K, 32, 1),
            ],
            Preset::Sync | Preset::Meta => Vec::new(),
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown preset '{s}': choose cdm8, nvme, cdm3, sync or meta"))
    }
}

/// CrystalDiskMark's profiles: which rows of a table to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Every row.
    #[default]
    All,
    /// The rows with more than one I/O in flight ("Peak Performance").
    Peak,
    /// The rows at queue depth 1, one thread ("Real World Performance").
    Real,
}

impl Profile {
    /// Keeps the tests this profile selects.
    pub fn select(self, tests: &[TestSpec]) -> Vec<TestSpec> {
        tests
            .iter()
            .copied()
            .filter(|t| match self {
                Profile::All => true,
                Profile::Peak => t.in_flight() > 1,
                Profile::Real => t.in_flight() == 1,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tests: &[TestSpec]) -> Vec<String> {
        tests.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn presets_are_crystaldiskmarks_tables() {
        assert_eq!(
            names(&Preset::Cdm8.tests()),
            ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"]
        );
        assert_eq!(
            names(&Preset::Nvme.tests()),
            ["SEQ1M Q8T1", "SEQ128K Q32T1", "RND4K Q32T16", "RND4K Q1T1"]
        );
        assert_eq!(
            names(&Preset::Cdm3.tests()),
            ["SEQ1M Q1T1", "RND512K Q1T1", "RND4K Q1T1", "RND4K Q32T1"]
        );
        assert!(Preset::Sync.tests().is_empty() && Preset::Meta.tests().is_empty());
    }

    #[test]
    fn profiles_pick_the_high_queue_or_the_qd1_rows() {
        let cdm8 = Preset::Cdm8.tests();
        assert_eq!(
            names(&Profile::Peak.select(&cdm8)),
            ["SEQ1M Q8T1", "RND4K Q32T1"]
        );
        assert_eq!(
            names(&Profile::Real.select(&cdm8)),
            ["SEQ1M Q1T1", "RND4K Q1T1"]
        );
        assert_eq!(Profile::All.select(&cdm8), cdm8);
        let nvme = Preset::Nvme.tests();
        assert_eq!(
            names(&Profile::Peak.select(&nvme)),
            ["SEQ1M Q8T1", "SEQ128K Q32T1", "RND4K Q32T16"]
        );
    }

    #[test]
    fn custom_tests_parse_with_defaults() {
        let t = TestSpec::parse("seq:1m:q8:t2").unwrap();
        assert_eq!(t, TestSpec::new(Pattern::Sequential, 1 << 20, 8, 2));
        assert_eq!(t.in_flight(), 16);
        let t = TestSpec::parse("RND:4k").unwrap();
        assert_eq!(t, TestSpec::new(Pattern::Random, 4096, 1, 1));
        assert_eq!(t.to_string(), "RND4K Q1T1");
        assert_eq!(
            TestSpec::parse("rnd:512:t3").unwrap().to_string(),
            "RND512 Q1T3"
        );
        assert_eq!(
            TestSpec::parse("seq:1536").unwrap().to_string(),
            "SEQ1536 Q1T1"
        );
    }

    #[test]
    fn bad_tests_say_what_is_wrong() {
        for (input, needle) in [
            ("", "unknown pattern"),
            ("zig:4k", "unknown pattern 'zig'"),
            ("seq", "no block size"),
            ("seq:4x", "unknown unit"),
            ("seq:1000", "multiple of 512"),
            ("seq:0", "multiple of 512"),
            ("seq:128m", "64m limit"),
            ("rnd:4k:q0", "between 1 and 1024"),
            ("rnd:4k:q2000", "between 1 and 1024"),
            ("rnd:4k:tx", "thread count 'tx'"),
            ("rnd:4k:z3", "neither a queue depth"),
        ] {
            let err = TestSpec::parse(input).unwrap_err().to_string();
            assert!(err.contains(needle), "{input}: {err}");
            assert!(err.contains("rnd:4k:q32:t1"), "{input}: {err}");
        }
    }

    #[test]
    fn presets_parse_by_name() {
        assert_eq!("CDM8".parse::<Preset>(), Ok(Preset::Cdm8));
        assert_eq!("meta".parse::<Preset>(), Ok(Preset::Meta));
        assert!("cdm9".parse::<Preset>().unwrap_err().contains("cdm8, nvme"));
    }

    #[test]
    fn ops_are_named() {
        assert_eq!(Op::Read.name(), "read");
        assert_eq!(Op::Mix { read_percent: 70 }.name(), "mix70");
    }
}
