//! Each stage's own figures under a load plan (`--rate-plan`): a request
//! (or transaction) belongs to the stage it was due in, whenever it ended,
//! so a stage that overloads the server shows its own backlog in its own
//! latency rather than in the next stage's.
//!
//! A thread keeps one [`StageFigures`] per stage and merges them once at
//! the end; [`record`] turns them into the run's record part, and
//! [`metrics`] into labelled metrics (`stage` = 1, 2, …) that `compare`
//! matches stage by stage.

use dyno_model::names::{common, label};
use dyno_model::record::{RatePlanRecord, StageRecord};
use dyno_model::{Direction, Merge, Metric, Unit};
use dyno_stats::hdr::{self, latency_histogram};
use hdrhistogram::Histogram;

use crate::plan::RatePlan;

/// One stage's figures on one thread, or merged.
#[derive(Debug, Clone)]
pub struct StageFigures {
    /// Latency from each due time, of those that ended with an answer.
    pub latency: Histogram<u64>,
    /// From each due time to the send.
    pub lag: Histogram<u64>,
    /// Ended: answered or failed.
    pub ended: u64,
    pub errors: u64,
    pub dropped: u64,
    /// Sent, but cut by the run's end (under way at the deadline, or
    /// ended after it).
    pub unfinished: u64,
    /// Sent and not ended yet: unfinished if the run ends now.
    pub in_flight: u64,
    /// Taken from the schedule, due before the end, and waited for: the
    /// run's end cuts the wait, and then they were never sent (dropped).
    pub waiting: u64,
}

impl Default for StageFigures {
    fn default() -> Self {
        StageFigures {
            latency: latency_histogram(),
            lag: latency_histogram(),
            ended: 0,
            errors: 0,
            dropped: 0,
            unfinished: 0,
            in_flight: 0,
            waiting: 0,
        }
    }
}

impl StageFigures {
    /// One per stage of `plan`; none without a plan.
    pub fn for_plan(plan: Option<&RatePlan>) -> Vec<StageFigures> {
        plan.map(|p| p.stages.iter().map(|_| StageFigures::default()).collect())
            .unwrap_or_default()
    }

    pub fn add(&mut self, other: &StageFigures) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.lag.add(&other.lag);
        self.ended += other.ended;
        self.errors += other.errors;
        self.dropped += other.dropped;
        self.unfinished += other.unfinished;
        self.in_flight += other.in_flight;
        self.waiting += other.waiting;
    }

    /// A due time of this stage taken from the schedule, waited for until
    /// [`StageFigures::came`].
    pub fn awaits(&mut self) {
        self.waiting += 1;
    }

    /// A due time waited for has come: it is sent now.
    pub fn came(&mut self) {
        self.waiting = self.waiting.saturating_sub(1);
    }

    /// A request of this stage sent: in flight until it ends
    /// ([`StageFigures::landed`]).
    pub fn took_off(&mut self) {
        self.in_flight += 1;
    }

    /// A request of this stage in flight no more (it ended, or ended
    /// after the run: [`StageFigures::cut`]).
    pub fn landed(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// A request of this stage that ended after the run's end: unfinished.
    pub fn cut(&mut self) {
        self.unfinished += 1;
    }

    /// The run ended: what is still in flight is unfinished, and what was
    /// still waited for is dropped, unless the run was `stopped` (cut
    /// short: the wait may have been for a time after the stop).
    pub fn close(&mut self, stopped: bool) {
        self.unfinished += std::mem::take(&mut self.in_flight);
        let waiting = std::mem::take(&mut self.waiting);
        if !stopped {
            self.dropped += waiting;
        }
    }

    /// A request that ended: answered after `latency_ns` (from its due
    /// time), counted as an error when `error`, or failed with no answer
    /// (`latency_ns` is `None`).
    pub fn ended(&mut self, latency_ns: Option<u64>, error: bool) {
        self.ended += 1;
        self.errors += u64::from(error);
        if let Some(ns) = latency_ns {
            let _ = self.latency.record(ns.max(1));
        }
    }

    /// A send `lag_ns` after its due time.
    pub fn sent(&mut self, lag_ns: u64) {
        let _ = self.lag.record(lag_ns);
    }
}

/// Adds `other`'s stages to `mine`, stage by stage.
pub fn add_all(mine: &mut [StageFigures], other: &[StageFigures]) {
    for (m, o) in mine.iter_mut().zip(other) {
        m.add(o);
    }
}

/// The run's record part: the plan as given and each stage's figures.
pub fn record(plan: &RatePlan, figures: &[StageFigures]) -> RatePlanRecord {
    let at = |h: &Histogram<u64>, p: f64| {
        if h.is_empty() {
            0
        } else {
            hdr::value_at_percentile(h, p)
        }
    };
    let mut start = 0.0;
    let stages = plan
        .stages
        .iter()
        .zip(figures)
        .map(|(stage, f)| {
            let d = stage.duration().as_secs_f64();
            let expected = plan.cumulative(start + d) - plan.cumulative(start);
            let r = StageRecord {
                stage: stage.to_string(),
                start_ns: (start * 1e9) as u64,
                duration_ns: (d * 1e9) as u64,
                requested: expected / d,
                achieved: f.ended as f64 / d,
                ended: f.ended,
                errors: f.errors,
                dropped: f.dropped,
                unfinished: f.unfinished,
                p50_ns: at(&f.latency, 50.0),
                p90_ns: at(&f.latency, 90.0),
                p99_ns: at(&f.latency, 99.0),
                p999_ns: at(&f.latency, 99.9),
                max_ns: if f.latency.is_empty() {
                    0
                } else {
                    f.latency.max()
                },
                send_lag_p99_ns: at(&f.lag, 99.0),
                send_lag_max_ns: if f.lag.is_empty() { 0 } else { f.lag.max() },
            };
            start += d;
            r
        })
        .collect();
    RatePlanRecord {
        plan: plan.to_string(),
        stages,
    }
}

/// Each stage's figures as metrics labelled with the stage (1, 2, …) and
/// its text: the achieved rate, the latency and send lag distributions,
/// the errors and dropped sends. The rate, the latency, the errors and
/// the dropped sends are diagnostics, so `compare` sets each stage beside
/// the same stage of the other side (a stage that regressed is not
/// averaged away) without counting them in its score; the send lag and
/// the unfinished are context. The run's headline stays its own.
pub fn metrics(plan: &RatePlan, figures: &[StageFigures]) -> Vec<Metric> {
    let mut metrics = Vec::new();
    for (i, (stage, f)) in plan.stages.iter().zip(figures).enumerate() {
        let labelled = |mut m: Metric| {
            m.labels.insert(label::STAGE.into(), (i + 1).to_string());
            m.labels.insert(label::PLAN.into(), stage.to_string());
            m
        };
        let d = stage.duration().as_secs_f64();
        metrics.push(labelled(
            Metric::new(
                common::STAGE_RATE,
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                f.ended as f64 / d,
            )
            .diagnostic()
            .merged(Merge::Sum),
        ));
        metrics.push(labelled(
            hdr::latency_metric(common::STAGE_LATENCY, &f.latency).diagnostic(),
        ));
        metrics.push(labelled(
            hdr::latency_metric(common::STAGE_SEND_LAG, &f.lag).context(),
        ));
        for (name, n, compared) in [
            (common::STAGE_ERRORS, f.errors, true),
            (common::STAGE_DROPPED_SENDS, f.dropped, true),
            (common::STAGE_UNFINISHED, f.unfinished, false),
        ] {
            let m = Metric::new(name, Unit::Count, Direction::LowerIsBetter, n as f64);
            let m = if compared {
                m.diagnostic()
            } else {
                m.context()
            };
            metrics.push(labelled(m.merged(Merge::Sum)));
        }
    }
    metrics
}

/// A merged run's record part, rebuilt from its merged stage metrics
/// (what [`metrics`] wrote in each segment, summed and their histograms
/// merged): the segments of one plan split each stage's requests by
/// stride, so the whole run's stage is their sum.
pub fn rebuild(plan: &RatePlan, merged: &[Metric]) -> RatePlanRecord {
    let figures: Vec<StageFigures> = plan
        .stages
        .iter()
        .enumerate()
        .map(|(i, stage)| {
            let stage_no = (i + 1).to_string();
            let find = |name: &str| {
                merged.iter().find(|m| {
                    m.name == name && m.labels.get(label::STAGE).is_some_and(|s| *s == stage_no)
                })
            };
            let histogram = |name: &str| {
                find(name)
                    .and_then(|m| m.histogram.as_ref())
                    .and_then(|h| hdr::from_model(h).ok())
                    .unwrap_or_else(latency_histogram)
            };
            let count = |name: &str| find(name).map_or(0, |m| m.value.round() as u64);
            let rate = find(common::STAGE_RATE).map_or(0.0, |m| m.value);
            StageFigures {
                latency: histogram(common::STAGE_LATENCY),
                lag: histogram(common::STAGE_SEND_LAG),
                ended: (rate * stage.duration().as_secs_f64()).round() as u64,
                errors: count(common::STAGE_ERRORS),
                dropped: count(common::STAGE_DROPPED_SENDS),
                unfinished: count(common::STAGE_UNFINISHED),
                in_flight: 0,
                waiting: 0,
            }
        })
        .collect();
    record(plan, &figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_record_has_its_own_rates_and_percentiles() {
        let plan: RatePlan = "100@2s,0..200/2s".parse().unwrap();
        let mut figures = StageFigures::for_plan(Some(&plan));
        assert_eq!(figures.len(), 2);
        for ms in 1..=100 {
            figures[0].ended(Some(ms * 1_000_000), ms > 98);
            figures[0].sent(1000);
        }
        figures[1].ended(None, true);
        figures[1].dropped = 3;
        // Three sent: one landed, one landed after the end, one still in
        // flight when the run closed.
        for _ in 0..3 {
            figures[1].took_off();
        }
        figures[1].landed();
        figures[1].landed();
        figures[1].cut();
        // Two due times waited for, one came: the other is dropped when
        // the run ends, and forgotten when it was stopped.
        figures[1].awaits();
        figures[1].awaits();
        figures[1].came();
        let mut stopped = figures[1].clone();
        stopped.close(true);
        assert_eq!((stopped.dropped, stopped.waiting), (3, 0));
        figures[1].close(false);
        assert_eq!((figures[1].unfinished, figures[1].in_flight), (2, 0));
        assert_eq!((figures[1].dropped, figures[1].waiting), (4, 0));
        figures[1].dropped = 3;
        let mut twice = StageFigures::for_plan(Some(&plan));
        add_all(&mut twice, &figures);
        add_all(&mut twice, &figures);
        let r = record(&plan, &twice);
        assert_eq!(r.plan, "100@2s,0..200/2s");
        let (a, b) = (&r.stages[0], &r.stages[1]);
        assert_eq!(
            (a.stage.as_str(), b.stage.as_str()),
            ("100@2s", "0..200/2s")
        );
        assert_eq!((a.start_ns, b.start_ns), (0, 2_000_000_000));
        assert_eq!(a.requested, 100.0);
        // The ramp's mean rate is halfway.
        assert!((b.requested - 100.0).abs() < 1e-9, "{}", b.requested);
        assert_eq!((a.ended, a.errors, a.achieved), (200, 4, 100.0));
        assert_eq!((b.ended, b.errors, b.dropped, b.unfinished), (2, 2, 6, 4));
        assert!((a.p50_ns as f64 - 50e6).abs() < 0.01 * 50e6, "{}", a.p50_ns);
        assert!((a.p99_ns as f64 - 99e6).abs() < 0.01 * 99e6, "{}", a.p99_ns);
        assert_eq!(b.p99_ns, 0);
        let m = metrics(&plan, &twice);
        let rate = m
            .iter()
            .find(|m| m.name == "stage_rate_per_sec" && m.labels["stage"] == "2")
            .unwrap();
        assert_eq!(rate.value, 1.0);
        assert_eq!(rate.labels["plan"], "0..200/2s");
        // What a merge keeps of the metrics gives the record back.
        assert_eq!(rebuild(&plan, &m), r);
    }
}
