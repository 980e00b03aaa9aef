//! How a measured run ends, judged from its outcome: the engine's reasons
//! to stop early, an interrupt, a lost target, then `--max-error-rate`.

use std::time::Duration;

use crate::stats::ErrorClass;
use crate::warnings::{HttpWarning, error_rate};
use crate::{Asked, Outcome};

/// A run's verdict, in the words the user reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// It stands.
    Passed,
    /// Interrupted: the partial run stands, and says so.
    Interrupted,
    /// It measured, but fails (exit 1): why.
    Failed(String),
    /// It measured nothing it could keep (an error, exit 2): why.
    Broken(String),
}

impl Outcome {
    /// Whether the run measured a server, and is saved. Nothing listened
    /// there (refused, silent, or no answer in the protocol asked for): the
    /// run stopped at once, and is shown but not saved.
    pub fn measured_a_server(&self) -> bool {
        !(self.refused || self.silent || self.no_answer_in_protocol().is_some())
    }

    /// `--h2`'s or `--h3`'s failure when no response came in that protocol.
    fn no_answer_in_protocol(&self) -> Option<&str> {
        self.protocol_failure
            .as_deref()
            .filter(|_| self.stats.responses == 0)
    }

    /// How the run ends; `timeout` is the run's `--timeout`.
    pub fn ending(&self, timeout: Duration, asked: &Asked) -> Ending {
        if let Some(why) = self.no_answer_in_protocol() {
            return Ending::Broken(format!("{why}; nothing was saved"));
        }
        if self.refused {
            return Ending::Failed(format!(
                "every connection to {} was refused ({} attempts, none accepted), so the run stopped: is the server up and listening there? Nothing was saved",
                self.endpoint,
                self.stats.errors.of(ErrorClass::ConnectRefused),
            ));
        }
        if self.silent {
            return Ending::Failed(format!(
                "{} accepted connections but answered none of the first {} requests within --timeout {}, so the run stopped: is the server stuck, or does it need a longer --timeout? Nothing was saved",
                self.endpoint,
                self.stats.errors.of(ErrorClass::ReadTimeout),
                dyno_model::units::duration_flag(timeout),
            ));
        }
        // One verdict for every interrupted run, checks or not: a script
        // must be able to tell a partial run from a complete one.
        if self.interrupted {
            return Ending::Interrupted;
        }
        if !self.lost.is_empty() {
            return Ending::Failed(format!(
                "the target answered nothing {} (target_lost): the run fails",
                dyno_load::silence::spells_in_words(&self.lost)
            ));
        }
        // The record's `error_rate_exceeded` warning is the same judgement.
        if let Some(HttpWarning::ErrorRateExceeded { percent, max }) =
            error_rate(self, asked.max_error_rate_percent)
        {
            return Ending::Failed(format!(
                "{percent:.2}% of requests failed, above --max-error-rate {max}%"
            ));
        }
        Ending::Passed
    }
}
