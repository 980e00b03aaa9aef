//! What a scenario run measured per step and per flow.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::stats::{ErrorCounts, Timing};

/// A histogram for one step or one flow: two significant figures (1%),
/// grown to the values it holds. A scenario keeps one per step and flow on
/// every thread, so its size is what bounds a scenario of many steps: a
/// step whose answers take up to 10 s costs about 20 KiB, where the run's
/// own three-figure histograms cost 256 KiB each.
fn step_histogram() -> Histogram<u64> {
    let mut h = Histogram::new(2).expect("2 significant figures are valid");
    h.auto(true);
    h
}

/// What one step's requests came to, on one thread or merged: the part of
/// the run's figures a step reports.
#[derive(Debug, Clone)]
pub struct StepStats {
    /// Latency of each answered request (corrected in the open model).
    pub latency: Histogram<u64>,
    /// Completed responses (any status).
    pub responses: u64,
    /// Failed requests by class.
    pub errors: ErrorCounts,
    /// Body bytes of completed responses.
    pub body_bytes: u64,
    /// Requests under way when the run ended (or was interrupted).
    pub unfinished: u64,
}

impl Default for StepStats {
    fn default() -> Self {
        StepStats {
            latency: step_histogram(),
            responses: 0,
            errors: ErrorCounts::default(),
            body_bytes: 0,
            unfinished: 0,
        }
    }
}

impl StepStats {
    /// One completed response.
    pub fn response(&mut self, body_bytes: u64, t: Timing) {
        self.responses += 1;
        self.body_bytes += body_bytes;
        let ns = u64::try_from(t.latency().as_nanos()).unwrap_or(u64::MAX);
        let _ = self.latency.record(ns.max(1));
    }

    fn add(&mut self, other: &StepStats) {
        let _ = self.latency.add(&other.latency);
        self.responses += other.responses;
        self.errors.add(&other.errors);
        self.body_bytes += other.body_bytes;
        self.unfinished += other.unfinished;
    }
}

/// Per-step and per-flow figures of one thread, or of the run once merged.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Indexed by [`super::Step::index`]: the step's requests.
    pub steps: Vec<StepStats>,
    /// Indexed like [`super::Scenario::flows`].
    pub flows: Vec<FlowFigures>,
}

/// One flow's runs.
#[derive(Debug, Clone)]
pub struct FlowFigures {
    /// Measured flows started.
    pub started: u64,
    /// Flows that made every step and passed every check.
    pub completed: u64,
    /// Flows ended early by a failed step.
    pub failed: u64,
    /// From the flow's start (its due time in the open model) to its last
    /// answer, think times included, for completed flows.
    pub duration: Histogram<u64>,
}

impl Default for FlowFigures {
    fn default() -> Self {
        FlowFigures {
            started: 0,
            completed: 0,
            failed: 0,
            duration: step_histogram(),
        }
    }
}

impl FlowFigures {
    /// Flows cut by the end of the run (or an interrupt) before their last
    /// step was answered: neither completed nor failed.
    pub fn unfinished(&self) -> u64 {
        self.started - self.completed - self.failed
    }
}

impl Figures {
    /// Empty figures for `steps` steps and `flows` flows.
    pub fn new(steps: usize, flows: usize) -> Figures {
        Figures {
            steps: (0..steps).map(|_| StepStats::default()).collect(),
            flows: (0..flows).map(|_| FlowFigures::default()).collect(),
        }
    }

    /// Adds another thread's figures.
    pub fn add(&mut self, other: &Figures) {
        if self.steps.is_empty() && self.flows.is_empty() {
            *self = other.clone();
            return;
        }
        for (a, b) in self.steps.iter_mut().zip(&other.steps) {
            a.add(b);
        }
        for (a, b) in self.flows.iter_mut().zip(&other.flows) {
            a.started += b.started;
            a.completed += b.completed;
            a.failed += b.failed;
            let _ = a.duration.add(&b.duration);
        }
    }

    /// A flow ended: `Some(took)` completed, `None` failed.
    pub(crate) fn flow_ended(&mut self, flow: usize, took: Option<Duration>) {
        let f = &mut self.flows[flow];
        match took {
            Some(took) => {
                f.completed += 1;
                let _ = f
                    .duration
                    .record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1));
            }
            None => f.failed += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's figures cost tens of KiB whatever its answers took, so a
    /// scenario of a thousand steps on a thread holds tens of MiB, not
    /// gigabytes (newcomer M4: 3.7 MB a step a thread).
    #[test]
    fn a_steps_figures_stay_small_over_any_latency() {
        let mut step = StepStats::default();
        for ns in [1_000, 50_000, 2_000_000, 300_000_000, 10_000_000_000] {
            let timing = Timing {
                connect: Duration::ZERO,
                waiting: Duration::from_nanos(ns),
                processing: Duration::from_nanos(ns),
                corrected: None,
            };
            step.response(10, timing);
        }
        let bytes = step.latency.distinct_values() * std::mem::size_of::<u64>();
        assert!(bytes <= 32 << 10, "{bytes} bytes of counts");
        // 1% apart, as the two significant figures promise.
        let p50 = step.latency.value_at_quantile(0.5) as f64;
        assert!((p50 / 2_000_000.0 - 1.0).abs() < 0.01, "{p50}");
        let mut merged = StepStats::default();
        merged.add(&step);
        merged.add(&step);
        assert_eq!((merged.responses, merged.latency.len()), (10, 10));
    }
}
