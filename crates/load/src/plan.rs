//! A load plan (`--rate-plan`): stages at fixed rates and linear ramps,
//! one after another: `1000@30s,2000@30s,4000@60s`, `0..5000/60s`, or both
//! (`0..5000/60s,5000@5m`). Pure arithmetic, shared by the drivers: the
//! arrivals expected by a time (the integral of the rate), its inverse
//! (when the k-th arrival is due), and which stage a time falls in.
//!
//! A fixed schedule puts arrival k at the time where the expected count
//! reaches k, as `--rate` puts request k at k / rate; Poisson arrivals are
//! a unit-rate Poisson process mapped through the same inverse (time
//! rescaling), so both keep to the plan's shape.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// One part of a plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stage {
    /// `RATE@DURATION`: this rate (per second) for this long.
    Hold { rate: f64, duration: Duration },
    /// `FROM..TO/DURATION`: the rate moves linearly from `from` to `to`
    /// over this long.
    Ramp {
        from: f64,
        to: f64,
        duration: Duration,
    },
}

impl Stage {
    pub fn duration(&self) -> Duration {
        match *self {
            Stage::Hold { duration, .. } | Stage::Ramp { duration, .. } => duration,
        }
    }

    /// The rate at `t` seconds into the stage.
    pub fn rate_at(&self, t: f64) -> f64 {
        match *self {
            Stage::Hold { rate, .. } => rate,
            Stage::Ramp { from, to, duration } => {
                from + (to - from) * (t / duration.as_secs_f64()).clamp(0.0, 1.0)
            }
        }
    }

    /// Arrivals expected in the first `t` seconds of the stage.
    fn cumulative(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.duration().as_secs_f64());
        match *self {
            Stage::Hold { rate, .. } => rate * t,
            Stage::Ramp { from, to, duration } => {
                let slope = (to - from) / duration.as_secs_f64();
                from * t + slope * t * t / 2.0
            }
        }
    }

    /// The time into the stage at which `x` arrivals are expected
    /// (0 ≤ x ≤ the stage's total).
    fn inverse(&self, x: f64) -> f64 {
        let d = self.duration().as_secs_f64();
        match *self {
            Stage::Hold { rate, .. } => (x / rate).min(d),
            Stage::Ramp { from, to, .. } => {
                let slope = (to - from) / d;
                let t = if slope.abs() < 1e-12 {
                    x / from
                } else {
                    // slope/2 t² + from t - x = 0, the root in [0, d].
                    let disc = (from * from + 2.0 * slope * x).max(0.0);
                    (disc.sqrt() - from) / slope
                };
                t.clamp(0.0, d)
            }
        }
    }
}

/// The plan: its stages in order.
#[derive(Debug, Clone, PartialEq)]
pub struct RatePlan {
    pub stages: Vec<Stage>,
}

/// Why a plan could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(String);

const ACCEPTED: &str = "a plan is stages joined by commas, each RATE@DURATION (hold a rate) or FROM..TO/DURATION (a linear ramp), e.g. '1000@30s,2000@30s' or '0..5000/60s,5000@2m'";

impl RatePlan {
    /// One stage: `rate` per second for `duration` (a plain `--rate`).
    pub fn hold(rate: f64, duration: Duration) -> RatePlan {
        RatePlan {
            stages: vec![Stage::Hold { rate, duration }],
        }
    }

    /// The same plan at `factor` times every rate: a segment's share.
    pub fn scaled(&self, factor: f64) -> RatePlan {
        let stages = self
            .stages
            .iter()
            .map(|s| match *s {
                Stage::Hold { rate, duration } => Stage::Hold {
                    rate: rate * factor,
                    duration,
                },
                Stage::Ramp { from, to, duration } => Stage::Ramp {
                    from: from * factor,
                    to: to * factor,
                    duration,
                },
            })
            .collect();
        RatePlan { stages }
    }

    /// The whole plan's length.
    pub fn duration(&self) -> Duration {
        self.stages.iter().map(Stage::duration).sum()
    }

    /// Arrivals expected in the first `t` seconds.
    pub fn cumulative(&self, t: f64) -> f64 {
        let mut total = 0.0;
        let mut start = 0.0;
        for stage in &self.stages {
            let d = stage.duration().as_secs_f64();
            if t <= start {
                break;
            }
            total += stage.cumulative(t - start);
            start += d;
        }
        total
    }

    /// Arrivals expected over the whole plan.
    pub fn total(&self) -> f64 {
        self.cumulative(self.duration().as_secs_f64())
    }

    /// The time, in seconds from the start, at which `x` arrivals are
    /// expected; `None` past the plan's total.
    pub fn time_of(&self, x: f64) -> Option<f64> {
        if !(0.0..self.total()).contains(&x) {
            return None;
        }
        let mut before = 0.0;
        let mut start = 0.0;
        for stage in &self.stages {
            let d = stage.duration().as_secs_f64();
            let here = stage.cumulative(d);
            if x < before + here {
                return Some(start + stage.inverse(x - before));
            }
            before += here;
            start += d;
        }
        None
    }

    /// When arrival `k` (from 0) is due on a fixed schedule, in seconds
    /// from the start; `None` when the plan holds fewer.
    pub fn due(&self, k: u64) -> Option<f64> {
        self.time_of(k as f64)
    }

    /// The stage `t` seconds from the start falls in (the last one for
    /// any time past the end).
    pub fn stage_at(&self, t: f64) -> usize {
        let mut end = 0.0;
        for (i, stage) in self.stages.iter().enumerate() {
            end += stage.duration().as_secs_f64();
            if t < end {
                return i;
            }
        }
        self.stages.len().saturating_sub(1)
    }
}

/// A plan's inverse for a driver that asks in order: when `x` arrivals
/// are expected, looked up from the stage the last answer fell in rather
/// than from the first, with each stage's start and counts worked out
/// once. A schedule asks once per arrival, so this is its hot path.
#[derive(Debug, Clone)]
pub struct Walk {
    parts: Vec<Part>,
    /// The part the last answer fell in.
    at: usize,
    total: f64,
    seconds: f64,
}

#[derive(Debug, Clone)]
struct Part {
    stage: Stage,
    /// Seconds from the plan's start to the stage's.
    start: f64,
    /// Arrivals expected before the stage, and in it.
    before: f64,
    here: f64,
}

impl Walk {
    pub fn new(plan: &RatePlan) -> Walk {
        let (mut start, mut before) = (0.0, 0.0);
        let parts = plan
            .stages
            .iter()
            .map(|&stage| {
                let d = stage.duration().as_secs_f64();
                let here = stage.cumulative(d);
                let part = Part {
                    stage,
                    start,
                    before,
                    here,
                };
                start += d;
                before += here;
                part
            })
            .collect();
        Walk {
            parts,
            at: 0,
            total: before,
            seconds: start,
        }
    }

    /// Arrivals expected over the whole plan ([`RatePlan::total`]).
    pub fn total(&self) -> f64 {
        self.total
    }

    /// The plan's length in seconds.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// [`RatePlan::time_of`]: the time at which `x` arrivals are
    /// expected, `None` past the plan's total.
    pub fn time_of(&mut self, x: f64) -> Option<f64> {
        if !(0.0..self.total).contains(&x) {
            return None;
        }
        if x < self.parts[self.at].before {
            self.at = 0;
        }
        // A stage expecting nothing is stepped over: x lies in a later one.
        while x >= self.parts[self.at].before + self.parts[self.at].here
            && self.at + 1 < self.parts.len()
        {
            self.at += 1;
        }
        let part = &self.parts[self.at];
        Some(part.start + part.stage.inverse(x - part.before))
    }
}

/// Due times of `count` arrivals placed as those of a Poisson process
/// given their number, following a plan's rates: the order statistics of
/// uniform draws over the plan's expected arrivals, made one at a time,
/// each mapped to the time the plan expects that many (time rescaling; at
/// one rate, uniform draws over the time). The open model's law in
/// `dyno db run -R`, as pgbench's `--rate`.
#[derive(Debug)]
pub struct PoissonArrivals {
    start: Instant,
    walk: Walk,
    /// Expected arrivals up to the last due time given.
    at: f64,
    left: u64,
    rng: fastrand::Rng,
}

impl PoissonArrivals {
    pub fn new(start: Instant, plan: &RatePlan, count: u64, rng: fastrand::Rng) -> Self {
        PoissonArrivals {
            start,
            walk: Walk::new(plan),
            at: 0.0,
            left: count,
            rng,
        }
    }

    /// The next due time, `None` once `count` were given.
    pub fn next_due(&mut self) -> Option<Instant> {
        if self.left == 0 {
            return None;
        }
        // The least of `left` uniform draws over what is left of the
        // expected arrivals: 1 - U^(1/n) of the way there.
        let u = 1.0 - self.rng.f64();
        let total = self.walk.total();
        self.at += (total - self.at) * (1.0 - u.powf(1.0 / self.left as f64));
        self.left -= 1;
        let t = self
            .walk
            .time_of(self.at)
            .unwrap_or_else(|| self.walk.seconds());
        Some(self.start + Duration::from_secs_f64(t))
    }
}

impl FromStr for RatePlan {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<RatePlan, PlanError> {
        if s.trim().is_empty() {
            return Err(PlanError(format!("the plan is empty: {ACCEPTED}")));
        }
        let mut stages = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let stage = if let Some((rate, duration)) = part.split_once('@') {
                Stage::Hold {
                    rate: rate_of(part, rate)?,
                    duration: duration_of(part, duration)?,
                }
            } else if let Some((range, duration)) = part.split_once('/') {
                let (from, to) = range.split_once("..").ok_or_else(|| {
                    PlanError(format!(
                        "'{part}': a ramp is FROM..TO/DURATION, e.g. 0..5000/60s"
                    ))
                })?;
                Stage::Ramp {
                    from: rate_of(part, from)?,
                    to: rate_of(part, to)?,
                    duration: duration_of(part, duration)?,
                }
            } else {
                return Err(PlanError(format!(
                    "'{part}' is neither RATE@DURATION nor FROM..TO/DURATION: {ACCEPTED}"
                )));
            };
            stages.push(stage);
        }
        let plan = RatePlan { stages };
        if plan.total() < 1.0 {
            return Err(PlanError(format!(
                "'{s}' schedules no request at all: give a rate above zero somewhere"
            )));
        }
        Ok(plan)
    }
}

fn rate_of(part: &str, rate: &str) -> Result<f64, PlanError> {
    match rate.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && (0.0..=1e9).contains(&r) => Ok(r),
        _ => Err(PlanError(format!(
            "'{part}': '{}' is not a rate: give requests per second, 0 or more, e.g. 1000",
            rate.trim()
        ))),
    }
}

fn duration_of(part: &str, duration: &str) -> Result<Duration, PlanError> {
    let t = duration.trim();
    let bad = || {
        PlanError(format!(
            "'{part}': '{t}' is not a duration: write it as 30s, 500ms or 2m"
        ))
    };
    if t.parse::<f64>().is_ok() {
        return Err(PlanError(format!(
            "'{part}': '{t}' has no unit: give a duration such as {t}s"
        )));
    }
    let d: jiff::SignedDuration = t.parse().map_err(|_| bad())?;
    match Duration::try_from(d) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(bad()),
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Stage::Hold { rate, duration } => {
                write!(f, "{rate}@{}", dyno_model::units::duration_flag(duration))
            }
            Stage::Ramp { from, to, duration } => {
                write!(
                    f,
                    "{from}..{to}/{}",
                    dyno_model::units::duration_flag(duration)
                )
            }
        }
    }
}

impl fmt::Display for RatePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.stages.iter().map(Stage::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(s: &str) -> RatePlan {
        s.parse().unwrap()
    }

    #[test]
    fn reads_stages_and_ramps() {
        let p = plan("1000@30s, 2000@30s,4000@1m");
        assert_eq!(p.stages.len(), 3);
        assert_eq!(p.duration(), Duration::from_secs(120));
        assert_eq!(p.total(), 1000.0 * 30.0 + 2000.0 * 30.0 + 4000.0 * 60.0);
        let p = plan("0..5000/60s,5000@500ms");
        assert_eq!(
            p.stages[0],
            Stage::Ramp {
                from: 0.0,
                to: 5000.0,
                duration: Duration::from_secs(60)
            }
        );
        assert_eq!(p.total(), 5000.0 * 60.0 / 2.0 + 2500.0);
        assert_eq!(p.to_string(), "0..5000/60s,5000@500ms");
    }

    #[test]
    fn says_what_a_plan_is() {
        let err = |s: &str| s.parse::<RatePlan>().unwrap_err().to_string();
        assert!(err("").contains("empty"));
        assert!(err("1000").contains("neither RATE@DURATION nor FROM..TO/DURATION"));
        assert!(err("1000@30").contains("has no unit"));
        assert!(err("fast@30s").contains("not a rate"));
        assert!(err("-5@30s").contains("not a rate"));
        assert!(err("1000@0s").contains("not a duration"));
        assert!(err("0-5000/60s").contains("FROM..TO/DURATION"));
        assert!(err("0@10s").contains("no request at all"));
    }

    #[test]
    fn a_constant_plan_is_the_fixed_rate_schedule() {
        // As --rate 1000: request k at k / 1000 s.
        let p = plan("1000@10s");
        for k in [0u64, 1, 999, 5000, 9999] {
            let t = p.due(k).unwrap();
            assert!((t - k as f64 / 1000.0).abs() < 1e-9, "{k}: {t}");
        }
        assert_eq!(p.due(10_000), None);
    }

    #[test]
    fn stages_follow_each_other_and_ramps_accelerate() {
        let p = plan("100@1s,200@1s");
        assert!((p.due(100).unwrap() - 1.0).abs() < 1e-9);
        assert!((p.due(150).unwrap() - 1.25).abs() < 1e-9);
        assert_eq!(p.stage_at(0.5), 0);
        assert_eq!(p.stage_at(1.0), 1);
        assert_eq!(p.stage_at(7.0), 1);
        // 0..1000/10s: Λ(t) = 50 t², so arrival k at sqrt(k / 50).
        let r = plan("0..1000/10s");
        for k in [1u64, 50, 200, 4999] {
            let t = r.due(k).unwrap();
            assert!((t - (k as f64 / 50.0).sqrt()).abs() < 1e-9, "{k}: {t}");
        }
        // A ramp down mirrors it.
        let down = plan("1000..0/10s");
        assert!((down.total() - 5000.0).abs() < 1e-9);
        let t = down.due(4999).unwrap();
        assert!((t - (10.0 - (1.0f64 / 50.0).sqrt())).abs() < 1e-6, "{t}");
    }

    #[test]
    fn time_of_inverts_cumulative_everywhere() {
        let p = plan("0..3000/7s,3000@3s,3000..500/5s,0@1s,10@2s");
        let total = p.total();
        let mut x = 0.0;
        while x < total {
            let t = p.time_of(x).unwrap();
            assert!(
                (p.cumulative(t) - x).abs() < 1e-6 * total.max(1.0),
                "{x} → {t}"
            );
            x += total / 997.0;
        }
    }

    #[test]
    fn the_walk_answers_as_the_plan_in_order_and_out_of_it() {
        let p = plan("0..3000/7s,3000@3s,0@1s,3000..500/5s,10@2s");
        let mut walk = Walk::new(&p);
        assert_eq!(walk.total(), p.total());
        assert_eq!(walk.seconds(), p.duration().as_secs_f64());
        let total = p.total();
        let xs: Vec<f64> = (0..997).map(|i| total * i as f64 / 997.0).collect();
        // In order, as a schedule asks; then backwards and jumping about.
        let backwards = xs.iter().rev();
        let jumping = xs.iter().step_by(7).chain(xs.iter().step_by(13));
        for &x in xs.iter().chain(backwards).chain(jumping) {
            let (a, b) = (walk.time_of(x).unwrap(), p.time_of(x).unwrap());
            assert!((a - b).abs() < 1e-9, "{x}: walk {a}, plan {b}");
        }
        assert_eq!(walk.time_of(total), None);
        assert_eq!(walk.time_of(-1.0), None);
        // The count reached at the end of the 3000@3s stage (10 s) is next
        // reached when the ramp after the zero-rate stage starts (11 s): a
        // walk that stopped at the boundary would say 10 s.
        let x = 3000.0 * 7.0 / 2.0 + 9000.0;
        walk.time_of(0.0);
        assert_eq!(walk.time_of(x), Some(11.0));
        assert_eq!(walk.time_of(x), p.time_of(x));
    }

    #[test]
    fn poisson_arrivals_come_in_order_all_of_them_inside_the_plan() {
        let p = plan("200@10s,800@10s");
        let start = Instant::now();
        let mut arrivals = PoissonArrivals::new(start, &p, 10_000, fastrand::Rng::with_seed(7));
        let (mut last, mut counts) = (start, [0u64; 2]);
        while let Some(due) = arrivals.next_due() {
            assert!(due >= last);
            last = due;
            counts[p.stage_at((due - start).as_secs_f64())] += 1;
        }
        assert_eq!(counts.iter().sum::<u64>(), 10_000);
        assert!(last <= start + p.duration());
        // Given their number, the stages share it as their rates do.
        for (count, expected) in counts.into_iter().zip([2000.0f64, 8000.0]) {
            assert!(
                (count as f64 - expected).abs() < 4.0 * expected.sqrt(),
                "{count} {expected}"
            );
        }
    }

    #[test]
    fn poisson_arrivals_through_the_plan_keep_its_shape() {
        // A unit-rate Poisson process mapped through the inverse: the count
        // per stage is the stage's expected count, within a few sd.
        let p = plan("200@10s,800@10s");
        let mut rng = fastrand::Rng::with_seed(3);
        let (mut x, mut counts) = (0.0, [0u64; 2]);
        loop {
            x += -(1.0 - rng.f64()).ln();
            let Some(t) = p.time_of(x) else { break };
            counts[p.stage_at(t)] += 1;
        }
        for (count, expected) in counts.into_iter().zip([2000.0f64, 8000.0]) {
            assert!(
                (count as f64 - expected).abs() < 4.0 * expected.sqrt(),
                "{count} {expected}"
            );
        }
    }
}
