//! The settings record of a comparison (`dyno compare`): which runs were
//! compared, how, and what differs between them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Record;
use crate::Kind;

/// What a comparison compared and with which options. A record without
/// `noise` or `alpha` reads with `dyno compare`'s defaults (2%, 0.05).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CompareRecord {
    /// The name of the baseline group.
    pub baseline: String,
    /// Each side, the baseline first.
    pub groups: Vec<CompareGroup>,
    /// The noise band: ratios within 1 ± this are called the same.
    pub noise: f64,
    /// The significance level of the tests.
    pub alpha: f64,
    /// The bootstrap's seed.
    pub seed: u64,
    /// Settings whose values differ between the sides.
    pub setting_differences: Vec<Difference>,
    /// Facts of the machines that differ between the sides.
    pub environment_differences: Vec<Difference>,
    /// Metrics found on one side only.
    pub unmatched: Vec<Unmatched>,
}

impl Default for CompareRecord {
    fn default() -> Self {
        CompareRecord {
            baseline: String::new(),
            groups: Vec::new(),
            noise: 0.02,
            alpha: 0.05,
            seed: 0,
            setting_differences: Vec::new(),
            environment_differences: Vec::new(),
            unmatched: Vec::new(),
        }
    }
}

impl Record for CompareRecord {
    const KIND: Kind = Kind::Compare;
}

/// One side of a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CompareGroup {
    pub name: String,
    /// How the side was chosen (run ids or filters).
    pub selector: String,
    /// The ids of its runs.
    pub runs: Vec<String>,
}

/// A setting or machine fact whose value differs between sides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Difference {
    /// The setting, as a dotted path (`http.connections`).
    pub key: String,
    /// Its value on each side, as text, by side name.
    pub values: BTreeMap<String, String>,
}

/// A metric of one side with no partner on another.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Unmatched {
    /// The side that has it.
    pub group: String,
    /// The metric, as shown.
    pub metric: String,
    /// The side that lacks it.
    pub partner: String,
}
