//! Entries put in time order and turned into send offsets.
//!
//! [`Ordered`] repairs a log that goes backwards a little (nginx stamps a
//! request when it ends, so a slow request is logged after faster ones that
//! began later) with a bounded window. [`Spreader`] then gives each entry an
//! offset from the first entry's stamp, spreading the entries that share a
//! coarse stamp (a whole second in the common log format) over it, so a
//! replay does not send a second's requests in one burst.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use super::{Entry, LineError};

/// The default reordering bound: how far back an entry may go, 2 s.
pub const DEFAULT_MAX_BACK_US: u64 = 2_000_000;
/// The default most entries the reordering window holds.
pub const DEFAULT_MAX_ENTRIES: usize = 65_536;
/// The default most entries of one stamp spread together.
pub const DEFAULT_MAX_GROUP: usize = 100_000;

/// An item that cannot be replayed: a line that did not parse, or an entry
/// too far out of time order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// A line (or HAR entry) that could not be read.
    #[error(transparent)]
    Line(#[from] LineError),
    /// An entry earlier than the latest one seen by more than the bound.
    #[error(
        "line {line} is {} earlier than line {latest_line}, beyond the {} reordering bound: \
         sort the log first (sort -k4) or raise it",
        seconds(*back_us),
        seconds(*bound_us)
    )]
    TooFarBack {
        /// The entry's line.
        line: u64,
        /// The line of the latest stamp seen so far.
        latest_line: u64,
        /// How far back the entry went, in microseconds.
        back_us: u64,
        /// The reordering bound, in microseconds.
        bound_us: u64,
    },
    /// An entry earlier than one the full window already had to let go.
    #[error(
        "line {line} is {} earlier than line {yielded_line}, which was already passed on \
         because the reordering window holds at most {max_entries} entries: sort the log \
         first (sort -k4) or raise the window's size",
        seconds(*back_us)
    )]
    WindowFull {
        /// The entry's line.
        line: u64,
        /// The line already passed on.
        yielded_line: u64,
        /// How far back the entry went, in microseconds.
        back_us: u64,
        /// The window's size in entries.
        max_entries: usize,
    },
}

impl ReplayError {
    /// The line (for HAR, the entry) it is about.
    pub fn line(&self) -> u64 {
        match self {
            ReplayError::Line(e) => e.line,
            ReplayError::TooFarBack { line, .. } | ReplayError::WindowFull { line, .. } => *line,
        }
    }
}

/// Microseconds as seconds for messages: `5.2 s`, `2 s`, `0.035 s`.
fn seconds(us: u64) -> String {
    let text = format!("{:.3}", us as f64 / 1e6);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

/// An entry waiting in the window, ordered by stamp then by arrival; the
/// entry itself waits in [`Ordered::held`] at `slot`. The heap moves its
/// items a dozen times per entry, and moving whole entries (over 100 bytes)
/// was most of the window's cost (callgrind on bench/replay-read.sh's log).
struct Pending {
    at_us: i64,
    seq: u64,
    slot: u32,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    // Reversed: BinaryHeap is a max-heap and the earliest must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at_us, other.seq).cmp(&(self.at_us, self.seq))
    }
}

/// Entries in time order, repaired within a bounded window.
///
/// An entry is held until the latest stamp seen is more than `max_back_us`
/// past it (or the window is full, or the input ends), so entries that
/// went back by at most the bound come out in order; entries with equal
/// stamps keep their file order. An entry further back than the bound is an
/// error item ([`ReplayError::TooFarBack`]) and is dropped; reading goes on
/// and the caller decides whether to stop. Line errors pass straight through.
pub struct Ordered<I> {
    inner: I,
    max_back_us: u64,
    max_entries: usize,
    window: BinaryHeap<Pending>,
    /// The entries the window holds, by slot; `None` for a free slot.
    held: Vec<Option<Entry>>,
    /// The free slots of `held`.
    free: Vec<u32>,
    seq: u64,
    /// The latest stamp seen, and its line.
    latest: Option<(i64, u64)>,
    /// The last stamp passed on, and its line.
    yielded: Option<(i64, u64)>,
    done: bool,
}

impl<I> std::fmt::Debug for Ordered<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ordered")
            .field("max_back_us", &self.max_back_us)
            .field("max_entries", &self.max_entries)
            .field("held", &self.window.len())
            .finish()
    }
}

impl<I, E> Ordered<I>
where
    I: Iterator<Item = Result<Entry, E>>,
    ReplayError: From<E>,
{
    /// Orders `inner` with the default bounds: 2 s back, 65,536 entries.
    pub fn new(inner: I) -> Ordered<I> {
        Ordered::with_bounds(inner, DEFAULT_MAX_BACK_US, DEFAULT_MAX_ENTRIES)
    }

    /// Orders `inner`, letting entries go back up to `max_back_us` and
    /// holding at most `max_entries` (at least 1) at a time.
    pub fn with_bounds(inner: I, max_back_us: u64, max_entries: usize) -> Ordered<I> {
        Ordered {
            inner,
            max_back_us,
            max_entries: max_entries.max(1),
            window: BinaryHeap::new(),
            held: Vec::new(),
            free: Vec::new(),
            seq: 0,
            latest: None,
            yielded: None,
            done: false,
        }
    }

    /// Whether the earliest held entry may be passed on now.
    fn ready(&self) -> Option<bool> {
        let top = self.window.peek()?;
        let behind = self
            .latest
            .map_or(0, |(at, _)| at.saturating_sub(top.at_us));
        Some(self.done || self.window.len() > self.max_entries || behind > self.max_back_us as i64)
    }

    /// Checks a new entry against what was seen and passed on.
    fn admit(&mut self, entry: Entry) -> Result<(), ReplayError> {
        if let Some((latest, latest_line)) = self.latest {
            let back = latest.saturating_sub(entry.at_us);
            if back > self.max_back_us as i64 {
                return Err(ReplayError::TooFarBack {
                    line: entry.line,
                    latest_line,
                    back_us: back as u64,
                    bound_us: self.max_back_us,
                });
            }
        }
        if let Some((yielded, yielded_line)) = self.yielded
            && entry.at_us < yielded
        {
            return Err(ReplayError::WindowFull {
                line: entry.line,
                yielded_line,
                back_us: (yielded - entry.at_us) as u64,
                max_entries: self.max_entries,
            });
        }
        if self.latest.is_none_or(|(latest, _)| entry.at_us > latest) {
            self.latest = Some((entry.at_us, entry.line));
        }
        self.seq += 1;
        let at_us = entry.at_us;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.held[slot as usize] = Some(entry);
                slot
            }
            None => {
                // At most max_entries + 1 are held: a u32 is plenty.
                self.held.push(Some(entry));
                (self.held.len() - 1) as u32
            }
        };
        self.window.push(Pending {
            at_us,
            seq: self.seq,
            slot,
        });
        Ok(())
    }
}

impl<I, E> Iterator for Ordered<I>
where
    I: Iterator<Item = Result<Entry, E>>,
    ReplayError: From<E>,
{
    type Item = Result<Entry, ReplayError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.ready() {
                Some(true) => {
                    let pending = self.window.pop()?;
                    let entry = self.held.get_mut(pending.slot as usize)?.take()?;
                    self.free.push(pending.slot);
                    self.yielded = Some((pending.at_us, entry.line));
                    return Some(Ok(entry));
                }
                None if self.done => return None,
                _ => {}
            }
            match self.inner.next() {
                None => self.done = true,
                Some(Err(e)) => return Some(Err(e.into())),
                Some(Ok(entry)) => {
                    if let Err(e) = self.admit(entry) {
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}

/// How the entries that share one coarse stamp are placed within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// Evenly: the k-th of n entries of a stamp with resolution r goes at
    /// `stamp + r * k / n`.
    Even,
    /// As a Poisson process with n arrivals in the stamp's interval would
    /// place them: n sorted uniform points in `[stamp, stamp + r)`, drawn
    /// from a generator seeded with `seed`, so a replay can be repeated.
    Poisson {
        /// The generator's seed; record it with the run.
        seed: u64,
    },
}

/// Entries as `(offset_us, entry)`, the offset counted from the first
/// entry's stamp, with the entries that share a stamp spread over its
/// resolution as [`Spread`] says. Entries with a resolution of 1 µs are not
/// moved.
///
/// Only one stamp group is held at a time, of at most `max_group` entries
/// (100,000 by default); a larger group is spread in chunks of that size,
/// the later chunks clamped so that offsets never decrease. Offsets never
/// decrease in any case: an entry earlier than one already passed on (input
/// not ordered through [`Ordered`]) is given the same offset as that one.
pub struct Spreader<I> {
    inner: I,
    spread: Spread,
    rng: fastrand::Rng,
    max_group: usize,
    group: Vec<Entry>,
    out: VecDeque<(u64, Entry)>,
    origin: Option<i64>,
    last_offset: u64,
    done: bool,
}

impl<I> std::fmt::Debug for Spreader<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spreader")
            .field("spread", &self.spread)
            .field("max_group", &self.max_group)
            .field("origin", &self.origin)
            .finish()
    }
}

impl<I, E> Spreader<I>
where
    I: Iterator<Item = Result<Entry, E>>,
    ReplayError: From<E>,
{
    /// Spreads the entries of `inner` (which should be in time order, as
    /// [`Ordered`] gives them).
    pub fn new(inner: I, spread: Spread) -> Spreader<I> {
        Spreader::with_max_group(inner, spread, DEFAULT_MAX_GROUP)
    }

    /// As [`Spreader::new`], holding at most `max_group` (at least 1)
    /// entries of one stamp.
    pub fn with_max_group(inner: I, spread: Spread, max_group: usize) -> Spreader<I> {
        let seed = match spread {
            Spread::Poisson { seed } => seed,
            Spread::Even => 0,
        };
        Spreader {
            inner,
            spread,
            rng: fastrand::Rng::with_seed(seed),
            max_group: max_group.max(1),
            group: Vec::new(),
            out: VecDeque::new(),
            origin: None,
            last_offset: 0,
            done: false,
        }
    }

    /// Places the held group's entries and moves them to the output.
    fn flush(&mut self) {
        let n = self.group.len() as u64;
        let Some(first) = self.group.first() else {
            return;
        };
        let (stamp, resolution) = (first.at_us, first.resolution_us.max(1));
        let shifts: Vec<u64> = match self.spread {
            Spread::Even => (0..n)
                .map(|k| (u128::from(resolution) * u128::from(k) / u128::from(n)) as u64)
                .collect(),
            Spread::Poisson { .. } => {
                let mut points: Vec<u64> = (0..n).map(|_| self.rng.u64(0..resolution)).collect();
                points.sort_unstable();
                points
            }
        };
        let origin = *self.origin.get_or_insert(stamp);
        for (entry, shift) in self.group.drain(..).zip(shifts) {
            let at = i128::from(stamp) + i128::from(shift) - i128::from(origin);
            let offset = u64::try_from(at.max(0))
                .unwrap_or(u64::MAX)
                .max(self.last_offset);
            self.last_offset = offset;
            self.out.push_back((offset, entry));
        }
    }
}

impl<I, E> Iterator for Spreader<I>
where
    I: Iterator<Item = Result<Entry, E>>,
    ReplayError: From<E>,
{
    type Item = Result<(u64, Entry), ReplayError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                if self.group.is_empty() {
                    return None;
                }
                self.flush();
                continue;
            }
            match self.inner.next() {
                None => self.done = true,
                Some(Err(e)) => return Some(Err(e.into())),
                Some(Ok(entry)) => {
                    let ends_group = self.group.first().is_some_and(|g| {
                        g.at_us != entry.at_us
                            || g.resolution_us != entry.resolution_us
                            || self.group.len() >= self.max_group
                    });
                    if ends_group {
                        self.flush();
                    }
                    self.group.push(entry);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry at `at_us` with the resolution `resolution_us` (µs, as `S`).
    fn entry(line: u64, at_us: i64, resolution_us: i64) -> Entry {
        Entry {
            line,
            at_us,
            resolution_us: resolution_us as u64,
            method: "GET".to_owned(),
            target: format!("/{line}"),
            status: Some(200),
            headers: Vec::new(),
            body: None,
        }
    }

    fn ok(entries: Vec<Entry>) -> impl Iterator<Item = Result<Entry, LineError>> {
        entries.into_iter().map(Ok)
    }

    const S: i64 = 1_000_000;

    #[test]
    fn reorders_within_the_bound_keeping_file_order_on_ties() {
        let input = vec![
            entry(1, 10 * S, S),
            entry(2, 11 * S, S),
            entry(3, 10 * S, S), // one second back: within 2 s
            entry(4, 12 * S, S),
            entry(5, 11 * S, S),
            entry(6, 15 * S, S),
        ];
        let lines: Vec<u64> = Ordered::new(ok(input)).map(|e| e.unwrap().line).collect();
        assert_eq!(lines, vec![1, 3, 2, 5, 4, 6]);
    }

    #[test]
    fn refuses_an_entry_beyond_the_bound_and_goes_on() {
        let input = vec![
            entry(788, 100 * S, S),
            entry(790, 106 * S, S),
            entry(812, 100_800_000, S), // 5.2 s before line 790
            entry(813, 107 * S, S),
        ];
        let items: Vec<_> = Ordered::new(ok(input)).collect();
        let err = items.iter().find_map(|i| i.as_ref().err()).unwrap();
        assert_eq!(
            *err,
            ReplayError::TooFarBack {
                line: 812,
                latest_line: 790,
                back_us: 5_200_000,
                bound_us: 2_000_000
            }
        );
        assert_eq!(
            err.to_string(),
            "line 812 is 5.2 s earlier than line 790, beyond the 2 s reordering bound: \
             sort the log first (sort -k4) or raise it"
        );
        let lines: Vec<u64> = items
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| e.line)
            .collect();
        assert_eq!(lines, vec![788, 790, 813]);
    }

    #[test]
    fn a_full_window_lets_go_early_and_refuses_what_then_comes_too_late() {
        let input = vec![
            entry(1, 10 * S, S),
            entry(2, 11 * S, S),
            entry(3, 12 * S, S),
            entry(4, 9_500_000, S),
        ];
        let items: Vec<_> = Ordered::with_bounds(ok(input), 5 * S as u64, 2).collect();
        assert_eq!(items[0].as_ref().unwrap().line, 1);
        let err = items[1].as_ref().unwrap_err();
        assert!(
            matches!(
                err,
                ReplayError::WindowFull {
                    line: 4,
                    yielded_line: 1,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("holds at most 2 entries"), "{err}");
        let rest: Vec<u64> = items[2..]
            .iter()
            .map(|i| i.as_ref().unwrap().line)
            .collect();
        assert_eq!(rest, vec![2, 3]);
    }

    #[test]
    fn passes_line_errors_through() {
        let input: Vec<Result<Entry, LineError>> = vec![
            Ok(entry(1, 10 * S, S)),
            Err(LineError::new(2, "garbage", "not a log line")),
            Ok(entry(3, 10 * S, S)),
        ];
        let items: Vec<_> = Ordered::new(input.into_iter()).collect();
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[0], Err(ReplayError::Line(e)) if e.line == 2));
        assert_eq!(items[1].as_ref().unwrap().line, 1);
    }

    #[test]
    fn holds_no_more_than_the_window() {
        // A long, ordered stream: the window never holds more than its bound.
        let input = (0..10_000).map(|i| Ok::<_, LineError>(entry(i + 1, i as i64 * 1_000, 1)));
        let mut ordered = Ordered::with_bounds(input, 2 * S as u64, 100);
        let mut count = 0;
        while let Some(item) = ordered.next() {
            item.unwrap();
            assert!(ordered.window.len() <= 101);
            count += 1;
        }
        assert_eq!(count, 10_000);
    }

    fn offsets(input: Vec<Entry>, spread: Spread) -> Vec<u64> {
        Spreader::new(ok(input), spread)
            .map(|i| i.unwrap().0)
            .collect()
    }

    #[test]
    fn spreads_a_second_evenly() {
        let input = vec![
            entry(1, 10 * S, S),
            entry(2, 10 * S, S),
            entry(3, 10 * S, S),
            entry(4, 10 * S, S),
            entry(5, 11 * S, S),
            entry(6, 12 * S, S),
            entry(7, 12 * S, S),
        ];
        assert_eq!(
            offsets(input, Spread::Even),
            vec![
                0, 250_000, 500_000, 750_000, 1_000_000, 2_000_000, 2_500_000
            ]
        );
    }

    #[test]
    fn does_not_move_microsecond_stamps() {
        let input = vec![entry(1, 5, 1), entry(2, 5, 1), entry(3, 9, 1)];
        assert_eq!(offsets(input.clone(), Spread::Even), vec![0, 0, 4]);
        assert_eq!(offsets(input, Spread::Poisson { seed: 3 }), vec![0, 0, 4]);
    }

    #[test]
    fn spreads_milliseconds_within_their_millisecond() {
        let input = vec![
            entry(1, 1_000, 1_000),
            entry(2, 1_000, 1_000),
            entry(3, 2_000, 1_000),
        ];
        assert_eq!(offsets(input, Spread::Even), vec![0, 500, 1_000]);
    }

    #[test]
    fn poisson_is_sorted_within_the_second_and_repeatable() {
        let input: Vec<Entry> = (1..=50)
            .map(|i| entry(i, 20 * S, S))
            .chain((51..=60).map(|i| entry(i, 21 * S, S)))
            .collect();
        let first = offsets(input.clone(), Spread::Poisson { seed: 42 });
        let again = offsets(input.clone(), Spread::Poisson { seed: 42 });
        let other = offsets(input, Spread::Poisson { seed: 43 });
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert!(first.windows(2).all(|w| w[0] <= w[1]), "{first:?}");
        assert!(first[..50].iter().all(|&o| o < 1_000_000));
        assert!(
            first[50..]
                .iter()
                .all(|&o| (1_000_000..2_000_000).contains(&o))
        );
        // Not bunched at the start as the raw stamps would be.
        assert!(first[49] > 500_000, "{first:?}");
    }

    #[test]
    fn a_large_group_is_chunked_and_offsets_never_decrease() {
        let input: Vec<Entry> = (1..=5).map(|i| entry(i, 0, S)).collect();
        let got: Vec<u64> = Spreader::with_max_group(ok(input), Spread::Even, 2)
            .map(|i| i.unwrap().0)
            .collect();
        assert_eq!(got, vec![0, 500_000, 500_000, 500_000, 500_000]);
    }

    #[test]
    fn works_on_ordered_entries_and_keeps_entries_whole() {
        let input = vec![entry(1, 11 * S, S), entry(2, 10 * S, S)];
        let items: Vec<(u64, Entry)> = Spreader::new(Ordered::new(ok(input)), Spread::Even)
            .map(Result::unwrap)
            .collect();
        assert_eq!(items[0].0, 0);
        assert_eq!(items[0].1.line, 2);
        assert_eq!(items[1].0, 1_000_000);
        assert_eq!(items[1].1.target, "/1");
    }

    #[test]
    fn formats_seconds_for_messages() {
        assert_eq!(seconds(2_000_000), "2 s");
        assert_eq!(seconds(5_200_000), "5.2 s");
        assert_eq!(seconds(35_000), "0.035 s");
    }
}
