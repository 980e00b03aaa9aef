//! Segments: one run split over several processes or machines, each
//! running segment `I` of `N` (`--segment I/N`), so that the union of the
//! segments is exactly the single run.
//!
//! The split is by stride, as k6's execution segments split arrival-rate
//! iterations: number the whole run's requests 0, 1, 2, … (in the open
//! model, request k is the one due at start + k / rate); segment `I` owns
//! the requests whose number is `I` modulo `N`. So
//!
//! - `-n R` gives segment `I` the requests `I, I + N, I + 2N, …` below `R`:
//!   `R / N` of them, one more for the first `R mod N` segments
//!   (1,000,000 over 3 is 333,334 + 333,333 + 333,333), none lost or doubled;
//! - an open-model rate gives segment `I` every `N`-th due time of the one
//!   uniform timetable, offset by `I`, so the combined send schedule is the
//!   single run's;
//! - `{seq}` in a request template is the request's number in the whole
//!   run, so no two segments ever fill in the same value;
//! - connections and threads are shared out the same way: `c / N`, one more
//!   for the first `c mod N` segments (threads at least one).
//!
//! Strides rather than contiguous blocks, because a run given by its
//! duration has no last request to cut blocks from; under `-n` the two
//! give the same sets of numbers, only dealt out differently.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Segment `index` of `count` (counted from 0, as Kubernetes numbers an
/// Indexed Job's pods, so `--segment $JOB_COMPLETION_INDEX/N` works as is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Segment {
    pub index: u32,
    pub count: u32,
}

/// The most segments a run may be split into.
pub const MAX_SEGMENTS: u32 = 10_000;

impl Segment {
    /// The whole run, unsplit.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// Segment `index` of `count`, if `index < count` and `count` is at most
    /// [`MAX_SEGMENTS`].
    pub fn new(index: u32, count: u32) -> Option<Segment> {
        (index < count && count <= MAX_SEGMENTS).then_some(Segment { index, count })
    }

    /// Whether this is the whole run.
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// How many of `total` things numbered 0.. are this segment's: those
    /// whose number is `index` modulo `count`.
    pub fn share(self, total: u64) -> u64 {
        let (count, index) = (u64::from(self.count), u64::from(self.index));
        total / count + u64::from(index < total % count)
    }

    /// The whole run's number of this segment's `local`-th thing.
    pub fn global(self, local: u64) -> u64 {
        u64::from(self.index) + u64::from(self.count) * local
    }

    /// Whether the whole run's thing number `global` is this segment's.
    pub fn owns(self, global: u64) -> bool {
        global % u64::from(self.count) == u64::from(self.index)
    }
}

impl Default for Segment {
    fn default() -> Self {
        Segment::WHOLE
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a `--segment` value was refused, with the way out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseSegmentError(String);

impl FromStr for Segment {
    type Err = ParseSegmentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shape = || {
            ParseSegmentError(format!(
                "'{s}' is not a segment: write INDEX/COUNT with the index counted from 0, e.g. 0/3, 1/3 and 2/3 for three machines"
            ))
        };
        let (i, n) = s.trim().split_once('/').ok_or_else(shape)?;
        let index: u32 = i.trim().parse().map_err(|_| shape())?;
        let count: u32 = n.trim().parse().map_err(|_| shape())?;
        if count == 0 {
            return Err(ParseSegmentError(format!(
                "'{s}': a run cannot be split into 0 segments; the count is how many processes run it (1 or more)"
            )));
        }
        if count > MAX_SEGMENTS {
            return Err(ParseSegmentError(format!(
                "'{s}': at most {MAX_SEGMENTS} segments"
            )));
        }
        if index >= count {
            return Err(ParseSegmentError(format!(
                "'{s}': the index counts from 0, so it must be below {count} (0/{count} … {}/{count})",
                count - 1
            )));
        }
        Ok(Segment { index, count })
    }
}

/// A short hash of `settings` (16 hex digits, FNV-1a over the names and
/// values in order), the same on every machine and in every dyno for the
/// same settings: a group's arrival fingerprint, a series' identity.
pub fn fingerprint(settings: &std::collections::BTreeMap<String, String>) -> String {
    use std::hash::Hasher as _;
    let mut h = fnv::FnvHasher::default();
    for (k, v) in settings {
        for part in [k, v] {
            h.write(part.as_bytes());
            h.write(&[0]);
        }
    }
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_whole_with_the_remainder_first() {
        let parts: Vec<u64> = (0..3)
            .map(|i| Segment::new(i, 3).unwrap().share(1_000_000))
            .collect();
        assert_eq!(parts, [333_334, 333_333, 333_333]);
        for total in 0..50u64 {
            for count in 1..8 {
                let sum: u64 = (0..count)
                    .map(|i| Segment::new(i, count).unwrap().share(total))
                    .sum();
                assert_eq!(sum, total, "{total} over {count}");
            }
        }
    }

    #[test]
    fn the_segments_numbers_are_disjoint_and_cover_the_run() {
        let count = 4;
        let total = 103;
        let mut seen = vec![0u32; total as usize];
        for i in 0..count {
            let s = Segment::new(i, count).unwrap();
            for local in 0..s.share(total) {
                let g = s.global(local);
                assert!(s.owns(g));
                seen[g as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    }

    #[test]
    fn parsing_says_what_is_wrong() {
        assert_eq!(
            "2/3".parse::<Segment>().unwrap(),
            Segment { index: 2, count: 3 }
        );
        assert_eq!(" 0 / 1 ".parse::<Segment>().unwrap(), Segment::WHOLE);
        for (bad, says) in [
            ("3/3", "counts from 0"),
            ("1/0", "0 segments"),
            ("2", "INDEX/COUNT"),
            ("a/3", "INDEX/COUNT"),
            ("-1/3", "INDEX/COUNT"),
            ("0/20000", "at most"),
        ] {
            let e = bad.parse::<Segment>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
