//! What a scenario run measured per step and per flow.

use std::time::Duration;

use hdrhistogram::Histogram;

use dyno_stats::hdr::latency_histogram;

use crate::stats::Stats;

/// Per-step and per-flow figures of one thread, or of the run once merged.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Indexed by [`super::Step::index`]: the step's requests, as the run's
    /// [`Stats`] count them.
    pub steps: Vec<Stats>,
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
            duration: latency_histogram(),
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
            steps: (0..steps).map(|_| Stats::default()).collect(),
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
            *a += b;
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
