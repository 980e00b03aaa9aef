//! What one process measured of a capacity step, and the step's whole
//! observation merged from every process that ran a part of it.
//!
//! A search split over segments (`--segment I/N`) runs each step on every
//! segment at once, each with its share of the rate (or of the
//! connections); each then reports its [`Part`] to the others through the
//! store ([`Together`]), and every segment merges the same parts in the
//! same order ([`observe`]), so every segment's search judges the same
//! observation and asks for the same next step. A search in one process
//! merges its one shard the same way.

use std::time::{Duration, SystemTime};

use dyno_stats::hdr;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::capacity::{self, CLIENT_SATURATED_PERCENT, Extra};
use crate::search::Observation;
use crate::slo::Slo;
use crate::trend;

/// What one process measured in one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// Measured requests (or transactions) that ended, errors included.
    pub requests: u64,
    pub errors: u64,
    /// Sends that were due in the measured window.
    pub sends: u64,
    /// Of those, sent late (past the plan's threshold) or never sent.
    pub late: u64,
    /// The measured window.
    pub elapsed: Duration,
    /// Corrected latency, nanoseconds.
    pub latency: Histogram<u64>,
    /// Send (or schedule) lag, nanoseconds.
    pub lag: Histogram<u64>,
    /// Latency by second of the measured window (the trend test's series).
    pub seconds: Vec<Histogram<u64>>,
    /// The client's CPU, in percent of its threads.
    pub client_cpu_percent: f64,
    /// How long its threads waited, runnable, for a CPU, in percent of
    /// their time: other work on the machine took it.
    pub client_wait_percent: f64,
    /// The rate this process's part was asked, when only its run knows it
    /// (a replay's: its log's requests over their due times' span).
    pub asked_per_sec: Option<f64>,
}

/// How one process's part of a step ended: what it reports to the others.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per process and step, moved once: boxing would buy nothing"
)]
pub enum Part {
    Measured(Shard),
    /// Stopped inside the step (Ctrl-C): the step is left out everywhere.
    Interrupted,
    /// The target stopped answering this process: why.
    Lost(String),
}

/// How the processes of a split search meet: before each step, and after
/// it to exchange their parts. The binary implements it on the store's
/// group barrier; a search in one process has none.
pub trait Together {
    /// How many processes share each step.
    fn count(&self) -> u32;
    /// Waits for the others before the step called `label`; the instant
    /// every process starts it, or why the group cannot start it.
    fn start(&mut self, label: &str) -> Result<SystemTime, String>;
    /// Reports this process's part of step `label` and waits for every
    /// other's; all the parts by process, or why they did not all come.
    fn exchange(&mut self, label: &str, mine: &Part) -> Result<Vec<Part>, String>;
}

/// The rate a step asked for, as its observation reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Asked {
    /// The open model at this rate: its latency's trend is judged too.
    Rate(f64),
    /// A replay's: the log's own rate, known by what fell due in the step.
    Log,
    /// The closed model asks for no rate: what it achieved.
    Closed,
}

/// The observation of a step from every process's shard, and the figures
/// the step table shows besides: `asked` says the whole step's rate (a
/// closed-model step's is what it achieved, and its latency has no due
/// times to trend against; a replay's is the log's).
pub fn observe(shards: &[Shard], slo: &Slo, asked: Asked) -> (Observation, Extra) {
    let mut latency = hdr::latency_histogram();
    let mut lag = hdr::latency_histogram();
    let mut seconds: Vec<Histogram<u64>> = Vec::new();
    for s in shards {
        // Auto-resizing histograms take any value the shards hold.
        let _ = latency.add(&s.latency);
        let _ = lag.add(&s.lag);
        for (i, h) in s.seconds.iter().enumerate() {
            if seconds.len() <= i {
                seconds.push(hdr::latency_histogram());
            }
            let _ = seconds[i].add(h);
        }
    }
    let sum = |f: fn(&Shard) -> u64| shards.iter().map(f).sum::<u64>();
    let requests = sum(|s| s.requests);
    // Each process's rate over its own window, added up.
    let achieved: f64 = shards
        .iter()
        .filter(|s| !s.elapsed.is_zero())
        .map(|s| s.requests as f64 / s.elapsed.as_secs_f64())
        .sum();
    let cpu = shards
        .iter()
        .map(|s| s.client_cpu_percent)
        .fold(0.0, f64::max);
    let wait = shards
        .iter()
        .map(|s| s.client_wait_percent)
        .fold(0.0, f64::max);
    let busy = shards
        .iter()
        .any(|s| capacity::starved(s.client_cpu_percent, s.client_wait_percent));
    // What the busiest client wanted of its CPUs: what it ran and what it
    // waited to run. A client starved by other work is as saturated as one
    // that ran out of CPU: its sends go late for its own reasons.
    let wanted = shards
        .iter()
        .map(|s| s.client_cpu_percent + s.client_wait_percent)
        .fold(0.0, f64::max);
    let requested = match asked {
        Asked::Rate(rate) => rate,
        // Each process's log rate, or its sends due over its own window,
        // added up.
        Asked::Log => shards
            .iter()
            .filter(|s| !s.elapsed.is_zero())
            .map(|s| {
                s.asked_per_sec
                    .unwrap_or(s.sends as f64 / s.elapsed.as_secs_f64())
            })
            .sum(),
        Asked::Closed => achieved,
    };
    let observation = Observation {
        requested,
        achieved,
        latency: capacity::percentiles(&latency, slo),
        requests,
        errors: sum(|s| s.errors),
        sends: sum(|s| s.sends),
        late: sum(|s| s.late),
        // A log's bursts and lulls move latency by themselves: only a
        // steady rate's rise is a queue growing.
        rise: matches!(asked, Asked::Rate(_))
            .then(|| trend::rising(&capacity::medians(&seconds)))
            .flatten(),
        client_saturated: wanted >= CLIENT_SATURATED_PERCENT,
        busy,
    };
    let extra = Extra {
        send_lag_p99_ns: if lag.is_empty() {
            0
        } else {
            lag.value_at_quantile(0.99)
        },
        client_cpu_percent: cpu,
        client_wait_percent: wait,
    };
    (observation, extra)
}

/// What an engine counted of one step, for [`Shard::of`].
#[derive(Debug, Clone)]
pub struct Counted<'a> {
    /// What ended in the measured window (requests, transactions or a
    /// scenario's flows), the failed and the unfinished included, and of
    /// them the failed.
    pub ended: u64,
    pub failed: u64,
    /// Due in the window and never sent (dropped, skipped).
    pub missed: u64,
    /// Requests (transactions) still under way when the wait after the
    /// step's end ran out.
    pub unfinished: u64,
    /// Corrected latency and send (or schedule) lag, nanoseconds, and the
    /// latency by second of the window.
    pub latency: &'a Histogram<u64>,
    pub lag: &'a Histogram<u64>,
    pub seconds: Vec<Histogram<u64>>,
    pub elapsed: Duration,
    pub client_cpu_percent: f64,
    pub client_wait_percent: f64,
    /// [`Shard::asked_per_sec`].
    pub asked_per_sec: Option<f64>,
}

impl Shard {
    /// What this process measured of a step, judged by what was due in
    /// it (`late_after`: the open model's threshold for a late send, `None`
    /// in a closed-model step, which has no due times; `grace`: how long
    /// the step waited for what was under way at its end). What was sent
    /// on schedule and still unanswered when the wait ran out counts as
    /// ended, at a latency past the wait ([`waited_out`]); only what was
    /// never sent, or sent late, counts against the schedule.
    pub fn of(counted: Counted<'_>, late_after: Option<Duration>, grace: Duration) -> Shard {
        let Counted {
            ended,
            failed,
            missed,
            unfinished,
            latency,
            lag,
            mut seconds,
            elapsed,
            client_cpu_percent,
            client_wait_percent,
            asked_per_sec,
        } = counted;
        let (sends, late) = match late_after {
            Some(after) => (ended + missed, capacity::late(lag, after) + missed),
            None => (ended, 0),
        };
        let mut latency = latency.clone();
        waited_out(&mut latency, &mut seconds, unfinished, grace);
        Shard {
            requests: ended,
            errors: failed,
            sends,
            late,
            elapsed,
            latency,
            lag: lag.clone(),
            seconds,
            client_cpu_percent,
            client_wait_percent,
            asked_per_sec,
        }
    }
}

/// Counts `unfinished` requests (or transactions) as ended: each was due
/// in a step and still under way when the wait after the step's end
/// (`grace`, [`crate::capacity::Plan::grace`]) ran out, so its latency is
/// at least the wait. Each is recorded just past it, in `latency` and in
/// the last of `seconds`: a lower bound, which fails every latency target
/// the wait covers once there are enough of them for the percentile,
/// instead of a shortfall of the achieved rate that any slow target
/// would show.
fn waited_out(
    latency: &mut Histogram<u64>,
    seconds: &mut [Histogram<u64>],
    unfinished: u64,
    grace: Duration,
) {
    if unfinished == 0 {
        return;
    }
    let past = u64::try_from((grace + PAST_THE_WAIT).as_nanos()).unwrap_or(u64::MAX);
    let _ = latency.record_n(past, unfinished);
    if let Some(last) = seconds.last_mut() {
        let _ = last.record_n(past, unfinished);
    }
}

/// How far past the wait an unfinished request is recorded: enough to be
/// above a limit equal to the wait.
const PAST_THE_WAIT: Duration = Duration::from_millis(1);

/// A part as the store keeps it (JSON).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Wire {
    Measured {
        requests: u64,
        errors: u64,
        sends: u64,
        late: u64,
        elapsed_ns: u64,
        /// HdrHistogram V2 compressed, base64 (as runs store them).
        latency: String,
        lag: String,
        seconds: Vec<String>,
        client_cpu_percent: f64,
        #[serde(default)]
        client_wait_percent: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked_per_sec: Option<f64>,
    },
    Interrupted,
    Lost(String),
}

impl Part {
    /// The part as text for the store.
    pub fn to_json(&self) -> String {
        let encode = |h: &Histogram<u64>| hdr::to_model(h).data;
        let wire = match self {
            Part::Measured(s) => Wire::Measured {
                requests: s.requests,
                errors: s.errors,
                sends: s.sends,
                late: s.late,
                elapsed_ns: u64::try_from(s.elapsed.as_nanos()).unwrap_or(u64::MAX),
                latency: encode(&s.latency),
                lag: encode(&s.lag),
                seconds: s.seconds.iter().map(encode).collect(),
                client_cpu_percent: s.client_cpu_percent,
                client_wait_percent: s.client_wait_percent,
                asked_per_sec: s.asked_per_sec,
            },
            Part::Interrupted => Wire::Interrupted,
            Part::Lost(why) => Wire::Lost(why.clone()),
        };
        serde_json::to_string(&wire).expect("a part serializes")
    }

    /// A part read back from the store; why it cannot be read otherwise.
    pub fn from_json(text: &str) -> Result<Part, String> {
        let wire: Wire = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let decode = |data: &str| hdr::decode(data).map_err(|e| e.to_string());
        Ok(match wire {
            Wire::Measured {
                requests,
                errors,
                sends,
                late,
                elapsed_ns,
                latency,
                lag,
                seconds,
                client_cpu_percent,
                client_wait_percent,
                asked_per_sec,
            } => Part::Measured(Shard {
                requests,
                errors,
                sends,
                late,
                elapsed: Duration::from_nanos(elapsed_ns),
                latency: decode(&latency)?,
                lag: decode(&lag)?,
                seconds: seconds
                    .iter()
                    .map(|s| decode(s))
                    .collect::<Result<_, _>>()?,
                client_cpu_percent,
                client_wait_percent,
                asked_per_sec,
            }),
            Wire::Interrupted => Part::Interrupted,
            Wire::Lost(why) => Part::Lost(why),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(latencies_ms: &[u64], secs: f64, cpu: f64) -> Shard {
        let mut latency = hdr::latency_histogram();
        let mut seconds = vec![hdr::latency_histogram(), hdr::latency_histogram()];
        for (i, ms) in latencies_ms.iter().enumerate() {
            latency.record(ms * 1_000_000).unwrap();
            seconds[i % 2].record(ms * 1_000_000).unwrap();
        }
        let mut lag = hdr::latency_histogram();
        lag.record(2_000_000).unwrap();
        Shard {
            requests: latencies_ms.len() as u64,
            errors: 1,
            sends: latencies_ms.len() as u64 + 1,
            late: 1,
            elapsed: Duration::from_secs_f64(secs),
            latency,
            lag,
            seconds,
            client_cpu_percent: cpu,
            client_wait_percent: 0.0,
            asked_per_sec: None,
        }
    }

    #[test]
    fn the_whole_step_is_merged_from_every_shard() {
        let slo: Slo = "p50<=1s".parse().unwrap();
        let a = shard(&[1, 2, 3, 4], 2.0, 30.0);
        let b = shard(&[10, 20, 30, 40, 50, 60], 2.0, 95.0);
        let (o, extra) = observe(&[a.clone(), b.clone()], &slo, Asked::Rate(5.0));
        assert_eq!(o.requested, 5.0);
        assert_eq!(o.requests, 10);
        assert_eq!(o.errors, 2);
        assert_eq!((o.sends, o.late), (12, 2));
        // 2/s and 3/s.
        assert!((o.achieved - 5.0).abs() < 1e-9, "{}", o.achieved);
        // The median of all ten latencies, not of either shard.
        let p50 = o.percentile(50.0).unwrap();
        assert!(
            p50 >= Duration::from_millis(9) && p50 <= Duration::from_millis(11),
            "{p50:?}"
        );
        // One saturated client saturates the step; the CPU shown is the
        // busiest's.
        assert!(o.client_saturated);
        assert_eq!(extra.client_cpu_percent, 95.0);
        assert!(extra.send_lag_p99_ns >= 1_999_000 && extra.send_lag_p99_ns <= 2_001_000);
        // One shard alone is itself.
        let (alone, _) = observe(std::slice::from_ref(&a), &slo, Asked::Rate(2.0));
        assert_eq!(alone.requests, 4);
        assert!(!alone.client_saturated);
        // A closed step's rate is what it achieved; it has no trend.
        let (closed, _) = observe(&[a, b], &slo, Asked::Closed);
        assert!((closed.requested - 5.0).abs() < 1e-9);
        assert_eq!(closed.rise, None);
    }

    #[test]
    fn a_part_reads_back_as_written() {
        for part in [
            Part::Measured(shard(&[1, 5, 9], 1.5, 12.5)),
            Part::Interrupted,
            Part::Lost("every connection was refused".into()),
        ] {
            let text = part.to_json();
            assert_eq!(Part::from_json(&text).unwrap(), part, "{text}");
        }
        for bad in ["", "{", r#"{"measured":{}}"#, r#"{"lost":"x","extra":1}"#] {
            assert!(Part::from_json(bad).is_err(), "{bad}");
        }
        let damaged = Part::Measured(shard(&[1], 1.0, 1.0))
            .to_json()
            .replacen("HIST", "XXXX", 1);
        assert!(Part::from_json(&damaged).is_err());
    }

    #[test]
    fn a_rise_over_the_merged_seconds_is_seen() {
        // Two shards, each rising over four seconds: the merged series
        // rises; a closed-model step is never judged on it.
        let rising = |base: u64| {
            let mut s = shard(&[1], 4.0, 1.0);
            s.seconds = (0..6)
                .map(|i| {
                    let mut h = hdr::latency_histogram();
                    h.record((base + 10 * i) * 1_000_000).unwrap();
                    h
                })
                .collect();
            s
        };
        let slo: Slo = "p99<=1s".parse().unwrap();
        let (o, _) = observe(&[rising(10), rising(12)], &slo, Asked::Rate(1.0));
        assert!(o.rise.is_some());
        let (closed, _) = observe(&[rising(10), rising(12)], &slo, Asked::Closed);
        assert_eq!(closed.rise, None);
    }
}
