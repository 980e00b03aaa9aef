//! Whether the target went away during a run: spells in which it answered
//! nothing while the client kept asking (`target_lost`).
//!
//! A server that dies mid-run is easy to miss in the averages: a closed
//! model's connect back-off keeps the refusals to a few a second, so a
//! server dead for most of the run is well under 1% of errors, and the
//! rate is averaged over the dead seconds. So each worker thread keeps a
//! [`Silence`]: a spell starts at the first failed attempt after the last
//! answer (any answer, whatever its status: the server was there) and
//! ends at the next answer, or at the end of the run; a run that ends
//! with requests under way and no answer for a while ends in one too
//! (a server that accepts and then hangs fails nothing before the
//! timeout). The run's spells are the times every thread was in one
//! ([`lost`]), and only those longer than [`Silence::threshold`] count.
//!
//! Nothing here prints; the engines turn the spells into their warnings.

use std::time::{Duration, Instant};

/// The shortest spell a thread keeps: shorter ones are ordinary gaps
/// between answers, whatever the run.
const KEEP: Duration = Duration::from_millis(50);

/// One thread's watch over its answers.
#[derive(Debug, Clone, Default)]
pub struct Silence {
    /// The last answer.
    last: Option<Instant>,
    /// The first failure since the last answer.
    failing_since: Option<Instant>,
    spells: Vec<(Instant, Instant)>,
}

impl Silence {
    /// Something was answered at `at`.
    #[inline]
    pub fn answered(&mut self, at: Instant) {
        if let Some(since) = self.failing_since.take() {
            self.keep(since, at);
        }
        if self.last.is_none_or(|last| at > last) {
            self.last = Some(at);
        }
    }

    /// An attempt failed at `at` (refused, reset, timed out …).
    #[inline]
    pub fn failed(&mut self, at: Instant) {
        if self.failing_since.is_none() {
            self.failing_since = Some(self.last.map_or(at, |last| at.max(last)));
        }
    }

    /// The measured run, from `from`, ended at `end`. `waiting`: requests
    /// were still under way, and the longest any answer took: a hung
    /// server fails nothing before the timeout, so a wait since the last
    /// answer longer than any answer took is a spell too (a slow API's
    /// wait within its own latency is not). This thread's spells.
    pub fn end(
        mut self,
        from: Instant,
        end: Instant,
        waiting: Option<Duration>,
    ) -> Vec<(Instant, Instant)> {
        match (self.failing_since.take(), waiting) {
            (Some(since), _) => self.keep(since, end),
            (None, Some(longest)) => {
                let since = self.last.unwrap_or(from);
                if end.saturating_duration_since(since) > longest {
                    self.keep(since, end);
                }
            }
            (None, None) => {}
        }
        self.spells
    }

    fn keep(&mut self, from: Instant, to: Instant) {
        if to.saturating_duration_since(from) >= KEEP {
            self.spells.push((from, to));
        }
    }

    /// How long a spell must last to count as the target lost in a run of
    /// `length`: a second, or a tenth of a shorter run (but never under
    /// 100 ms).
    pub fn threshold(length: Duration) -> Duration {
        (length / 10).clamp(Duration::from_millis(100), Duration::from_secs(1))
    }
}

/// A spell of the whole run with no answer, from the start of the
/// measured run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lost {
    pub from: Duration,
    pub to: Duration,
    /// It lasted to the end of the run.
    pub to_end: bool,
}

impl Lost {
    pub fn length(&self) -> Duration {
        self.to.saturating_sub(self.from)
    }
}

/// The run's spells: the times every thread was in one of its own,
/// longer than the run's threshold, from `start` (the measured run's
/// start) to `end`. A thread with no spell was answered throughout.
pub fn lost(threads: Vec<Vec<(Instant, Instant)>>, start: Instant, end: Instant) -> Vec<Lost> {
    let mut threads = threads.into_iter();
    let Some(mut common) = threads.next() else {
        return Vec::new();
    };
    for other in threads {
        common = intersect(&common, &other);
    }
    let threshold = Silence::threshold(end.saturating_duration_since(start));
    common
        .into_iter()
        .filter(|(from, to)| to.saturating_duration_since(*from) >= threshold)
        .map(|(from, to)| Lost {
            from: from.saturating_duration_since(start),
            to: to.saturating_duration_since(start),
            to_end: to >= end,
        })
        .collect()
}

/// Where two sorted lists of disjoint spans overlap.
fn intersect(a: &[(Instant, Instant)], b: &[(Instant, Instant)]) -> Vec<(Instant, Instant)> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let from = a[i].0.max(b[j].0);
        let to = a[i].1.min(b[j].1);
        if from < to {
            out.push((from, to));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The spells in words: `from 1.2 s to 4.0 s (the end)`, joined by `, `.
pub fn spells_in_words(lost: &[Lost]) -> String {
    lost.iter()
        .map(|l| {
            format!(
                "from {:.1} s to {:.1} s{}",
                l.from.as_secs_f64(),
                l.to.as_secs_f64(),
                if l.to_end { " (the end)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `target_lost` warning's words, for every engine: when, how much of
/// the run, and `why` (what the client saw then).
pub fn target_lost_words(lost: &[Lost], length: Duration, why: &str) -> String {
    let silent: Duration = lost.iter().map(Lost::length).sum();
    let share = 100.0 * silent.as_secs_f64() / length.as_secs_f64().max(1e-9);
    format!(
        "the target answered nothing {} of the {:.1} s run ({share:.0}% of it) while {why}: it went away or hung, and the figures average over time without it; find out why, then run again",
        spells_in_words(lost),
        length.as_secs_f64(),
    )
}

/// The metric that marks a run's figures: `target_lost_ns`, how long the
/// target answered nothing (none where it always did).
pub fn lost_metric(lost: &[Lost]) -> Option<dyno_model::Metric> {
    use dyno_model::{Direction, Merge, Metric, Unit};
    let silent: Duration = lost.iter().map(Lost::length).sum();
    (!lost.is_empty()).then(|| {
        Metric::new(
            dyno_model::names::common::TARGET_LOST,
            Unit::Ns,
            Direction::LowerIsBetter,
            silent.as_nanos() as f64,
        )
        .diagnostic()
        .merged(Merge::Max)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    #[test]
    fn a_server_that_dies_is_lost_from_the_first_failure_to_the_end() {
        let t0 = Instant::now();
        let mut s = Silence::default();
        for t in (0..1200).step_by(10) {
            s.answered(ms(t0, t));
        }
        s.failed(ms(t0, 1210));
        s.failed(ms(t0, 1300));
        let spells = s.end(t0, ms(t0, 4000), None);
        let lost = lost(vec![spells], t0, ms(t0, 4000));
        assert_eq!(
            lost,
            [Lost {
                from: Duration::from_millis(1210),
                to: Duration::from_millis(4000),
                to_end: true
            }]
        );
        assert_eq!(spells_in_words(&lost), "from 1.2 s to 4.0 s (the end)");
    }

    #[test]
    fn failures_between_answers_are_no_spell() {
        // A server shedding a share of the load: failures, answers between.
        let t0 = Instant::now();
        let mut s = Silence::default();
        for t in (0..4000).step_by(10) {
            if t % 30 == 0 {
                s.failed(ms(t0, t));
            } else {
                s.answered(ms(t0, t));
            }
        }
        assert!(lost(vec![s.end(t0, ms(t0, 4000), None)], t0, ms(t0, 4000)).is_empty());
    }

    #[test]
    fn quiet_without_failures_is_no_spell_but_a_hang_at_the_end_is() {
        // The open model at 0.5 req/s: two seconds between answers, none
        // failed, nothing under way at the end.
        let t0 = Instant::now();
        let mut s = Silence::default();
        s.answered(ms(t0, 2000));
        assert!(lost(vec![s.end(t0, ms(t0, 4000), None)], t0, ms(t0, 4000)).is_empty());
        // A server that accepts and hangs: requests under way at the end,
        // the answers before took 2 ms.
        let mut s = Silence::default();
        s.answered(ms(t0, 1500));
        let spells = s.end(t0, ms(t0, 4000), Some(Duration::from_millis(2)));
        let lost = lost(vec![spells], t0, ms(t0, 4000));
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].from, Duration::from_millis(1500));
        // A slow API: each answer takes 2 s, one is under way at the end.
        let mut s = Silence::default();
        s.answered(ms(t0, 2000));
        let spells = s.end(t0, ms(t0, 3000), Some(Duration::from_secs(2)));
        assert!(super::lost(vec![spells], t0, ms(t0, 3000)).is_empty());
    }

    #[test]
    fn the_run_is_lost_only_where_every_thread_is() {
        let t0 = Instant::now();
        let a = vec![(ms(t0, 1000), ms(t0, 3000))];
        let b = vec![(ms(t0, 500), ms(t0, 1200)), (ms(t0, 1500), ms(t0, 4000))];
        let lost = lost(vec![a.clone(), b], t0, ms(t0, 4000));
        assert_eq!(lost.len(), 1, "1.0–1.2 is under a second");
        assert_eq!(lost[0].from, Duration::from_millis(1500));
        assert_eq!(lost[0].to, Duration::from_millis(3000));
        assert!(!lost[0].to_end);
        // A thread that was answered throughout: nothing lost.
        assert!(super::lost(vec![a, Vec::new()], t0, ms(t0, 4000)).is_empty());
    }

    #[test]
    fn a_short_run_counts_a_tenth_of_itself() {
        assert_eq!(
            Silence::threshold(Duration::from_millis(500)),
            Duration::from_millis(100)
        );
        assert_eq!(
            Silence::threshold(Duration::from_secs(4)),
            Duration::from_millis(400)
        );
        assert_eq!(
            Silence::threshold(Duration::from_secs(60)),
            Duration::from_secs(1)
        );
    }
}
