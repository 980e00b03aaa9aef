//! What makes a db run's figures less trustworthy, judged from the
//! settings and the outcome ([`judge`]).
//!
//! Each warning is a [`DbWarning`] with a stable code ([`dyno_model::Judgement`]) and a
//! message for people (its `Display`); the binary turns them into the
//! run's [`dyno_model::Warning`]s. Nothing here prints.

use std::fmt;
use std::time::Duration;

use dyno_load::silence::{Lost, target_lost_words};

use crate::run::{Outcome, RunSettings};

/// One warning about a db run.
#[derive(Debug, Clone, PartialEq)]
pub enum DbWarning {
    /// Open model: under 99% of the asked rate was achieved.
    RateNotReached { achieved: f64, requested: f64 },
    /// The client threads were busy at least 90% of the time.
    ClientSaturated { cpu_percent: f64, threads: usize },
    /// pgbench's warning for -s with a built-in script: the scale `given`
    /// was ignored for the one `counted` from pgbench_branches.
    ScaleIgnored { given: i64, counted: i64 },
    /// The server ended no transaction for a spell while clients failed
    /// or waited: it went away (or hung) during the run.
    TargetLost {
        lost: Vec<Lost>,
        /// The measured run's length.
        length: Duration,
        /// The first client's abort, if one did.
        first_abort: Option<String>,
    },
}

impl dyno_model::Judgement for DbWarning {
    /// The stable, machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            DbWarning::RateNotReached { .. } => "rate_not_reached",
            DbWarning::ClientSaturated { .. } => "client_saturated",
            DbWarning::ScaleIgnored { .. } => "scale_ignored",
            DbWarning::TargetLost { .. } => "target_lost",
        }
    }
}

impl fmt::Display for DbWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbWarning::RateNotReached {
                achieved,
                requested: rate,
            } => write!(
                f,
                "{achieved:.1} tps of the {rate} requested: the server (or the client) could not keep up, and latency from the schedule grew with the backlog; lower -R, or add clients (-c) if the schedule lag is high"
            ),
            DbWarning::ClientSaturated {
                cpu_percent: cpu,
                threads,
            } => write!(
                f,
                "dyno used {cpu:.0}% of its {threads} thread{}: the client may be the bottleneck, so the figures are a lower bound for the server; add threads (-j) or a second client machine",
                if *threads == 1 { "" } else { "s" }
            ),
            DbWarning::ScaleIgnored { given, counted } => write!(
                f,
                "scale option ignored, using count from pgbench_branches table ({counted}): the built-in scripts use the scale the tables were made with (-s {given} applies to custom scripts, -f, only)"
            ),
            DbWarning::TargetLost {
                lost,
                length,
                first_abort,
            } => {
                let why = match first_abort {
                    Some(abort) => format!("clients stopped ({abort})"),
                    None => "transactions went unanswered".to_owned(),
                };
                f.write_str(&target_lost_words(lost, *length, &why))
            }
        }
    }
}

/// Warnings about what the figures mean. `scale_given` is the scale the
/// user asked for (`-s`), if any: with the built-in scripts, whose scale
/// is always the count of pgbench_branches (`settings.scale` is `None`),
/// it was ignored, and pgbench says so.
pub fn judge(
    outcome: &Outcome,
    settings: &RunSettings,
    scale_given: Option<i64>,
) -> Vec<DbWarning> {
    let threads = settings.threads;
    let mut warnings = Vec::new();
    if !outcome.lost.is_empty() {
        warnings.push(DbWarning::TargetLost {
            lost: outcome.lost.clone(),
            length: outcome.elapsed,
            first_abort: outcome.aborted.first().cloned(),
        });
    }
    if let Some(rate) = settings.rate {
        let achieved = outcome.tps();
        if !outcome.interrupted && dyno_load::judge::rate_not_reached(achieved, rate) {
            warnings.push(DbWarning::RateNotReached {
                achieved,
                requested: rate,
            });
        }
    }
    let cpu = outcome.client_cpu_percent(threads);
    if dyno_load::judge::client_saturated(cpu, outcome.elapsed) {
        warnings.push(DbWarning::ClientSaturated {
            cpu_percent: cpu,
            threads,
        });
    }
    if settings.scale.is_none()
        && let Some(given) = scale_given
    {
        warnings.push(DbWarning::ScaleIgnored {
            given,
            counted: outcome.scale,
        });
    }
    warnings
}

#[cfg(test)]
mod tests {
    use dyno_model::Judgement as _;

    use super::*;
    use crate::Target;

    /// `dyno quick`'s select-only settings, parsed only (nothing
    /// connects), on 4 clients and 2 threads, without scripts.
    fn settings() -> RunSettings {
        let target = Target::new("host=localhost dbname=bench", |_| None).unwrap();
        let mut s = crate::quick::settings(target, Duration::from_secs(1), 0, 2);
        s.scripts = Vec::new();
        s.clients = 4;
        s
    }

    /// A second of 1000 transactions with the client threads 10% busy.
    fn outcome() -> Outcome {
        Outcome {
            transactions: 1000,
            elapsed: Duration::from_secs(1),
            cpu: Duration::from_millis(200),
            scale: 10,
            ..Outcome::empty()
        }
    }

    fn codes(warnings: &[DbWarning]) -> Vec<&'static str> {
        warnings.iter().map(DbWarning::code).collect()
    }

    #[test]
    fn a_clean_run_has_no_warnings() {
        assert_eq!(judge(&outcome(), &settings(), None), vec![]);
    }

    #[test]
    fn a_rate_under_99_percent_is_not_reached_unless_interrupted() {
        let mut s = settings();
        s.rate = Some(1005.0);
        assert_eq!(judge(&outcome(), &s, None), vec![]);
        s.rate = Some(2000.0);
        let warnings = judge(&outcome(), &s, None);
        assert_eq!(codes(&warnings), ["rate_not_reached"]);
        assert!(
            warnings[0]
                .to_string()
                .starts_with("1000.0 tps of the 2000 requested:")
        );
        let mut o = outcome();
        o.interrupted = true;
        assert_eq!(judge(&o, &s, None), vec![]);
    }

    #[test]
    fn busy_client_threads_are_a_saturated_client_over_100_ms() {
        let mut o = outcome();
        o.cpu = Duration::from_millis(1900);
        let warnings = judge(&o, &settings(), None);
        assert_eq!(codes(&warnings), ["client_saturated"]);
        let w = dyno_model::Warning::from(warnings[0].clone());
        assert_eq!(
            w.message,
            "dyno used 95% of its 2 threads: the client may be the bottleneck, so the figures are a lower bound for the server; add threads (-j) or a second client machine"
        );
        // Too few clock ticks to judge by.
        o.elapsed = Duration::from_millis(50);
        o.cpu = Duration::from_millis(95);
        assert_eq!(judge(&o, &settings(), None), vec![]);
    }

    #[test]
    fn a_scale_given_to_the_built_ins_is_ignored() {
        let warnings = judge(&outcome(), &settings(), Some(50));
        assert_eq!(
            warnings,
            vec![DbWarning::ScaleIgnored {
                given: 50,
                counted: 10
            }]
        );
        assert_eq!(
            warnings[0].to_string(),
            "scale option ignored, using count from pgbench_branches table (10): the built-in scripts use the scale the tables were made with (-s 50 applies to custom scripts, -f, only)"
        );
        // A custom script's scale is the one given.
        let mut s = settings();
        s.scale = Some(50);
        assert_eq!(judge(&outcome(), &s, Some(50)), vec![]);
    }
}
