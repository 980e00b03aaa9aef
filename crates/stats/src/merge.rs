//! The segments of one run (`--segment I/N --group NAME`), merged into the
//! Run of the whole, without loss:
//!
//! - each metric merges by the rule its engine declared
//!   ([`dyno_model::Merge`]): counts and bytes are summed; a rate is the
//!   merged count over the merged window (from the common start to the end
//!   of the segment that ended last), never a sum of the segments' rates,
//!   which cover different windows when segments end apart (`-n`);
//! - latency histograms are merged bucket by bucket, so every percentile
//!   is the whole run's, never an average of the segments' percentiles;
//! - the per-second timelines are aligned by each segment's start by the
//!   wall clock, and each second's latency histograms merged the same way;
//! - a segment that is missing (never arrived, or arrived and saved no
//!   run) or failed (interrupted) is named, and the merged run marked
//!   incomplete;
//! - segments whose starts (or clocks, where the store measured them)
//!   disagree by more than [`START_TOLERANCE`] are warned about, with the
//!   spread measured.
//!
//! The result is an ordinary [`Run`]: every view, comparison and report
//! takes it as it takes any other.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use dyno_model::names::label;
use dyno_model::record::{
    GroupRecord, GroupSegment, PER_SEGMENT_SETTINGS, SUMMED_SETTINGS, SegmentRecord,
};
use dyno_model::{Merge, Metric, Run, RunId, Warning};
use serde_json::{Value, json};

use crate::hdr;

/// How far apart the segments' starts may be before the merged run warns:
/// a few scheduler ticks. Beyond it, the seconds of the aligned timeline
/// do not quite hold the same instants.
pub const START_TOLERANCE: Duration = Duration::from_millis(50);

/// A segment that arrived at the barrier, as the store saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrived {
    pub index: u32,
    pub host: String,
}

/// Why segments could not be merged.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error(
        "no run of group '{0}' is in the store: `dyno history --tag group:{0}` lists a group's runs"
    )]
    Empty(String),
    #[error("{0}")]
    Mismatch(String),
}

/// Merges the runs of group `group` (the segments' own runs, in any
/// order) into the run of the whole; `arrived` are the segments the
/// store's barrier saw, to tell a segment that never came from one that
/// came and saved nothing.
pub fn merge(group: &str, runs: &[Run], arrived: &[Arrived]) -> Result<Run, MergeError> {
    let (parts, duplicates) = segments(group, runs)?;
    let (first, first_run) = parts.first().cloned().expect("segments() refuses none");
    let count = first.count;
    let earliest = parts
        .iter()
        .map(|(i, _)| i.started_common_ns())
        .min()
        .unwrap_or(0);
    // Whole seconds each segment's timeline is shifted by, from its start
    // against the earliest one's.
    let shift = |info: &SegmentRecord| -> u64 {
        ((info.started_common_ns() - earliest).max(0) as u64 + 500_000_000) / 1_000_000_000
    };
    let offset_ns =
        |info: &SegmentRecord| -> f64 { (info.started_common_ns() - earliest).max(0) as f64 };

    let mut merged = merged_run(group, &parts, first_run, count);
    merged.metrics = merge_metrics(&parts, &shift, &offset_ns);
    let incomplete = completeness_warnings(&mut merged, &parts, arrived, count, &duplicates);
    settings_warnings(&mut merged, &parts);
    spread_warnings(&mut merged, &parts);
    merge_warnings(&mut merged, &parts, count);
    merged.settings = merged_settings(group, &parts, first_run, count, incomplete);
    Ok(merged)
}

/// A segment's place and its run.
type Part<'a> = (SegmentRecord, &'a Run);

/// The group's segments, checked to be of one run and ordered by index,
/// one run each; and the runs of a segment left out as its second run
/// (imported twice, say), so that none is counted twice.
fn segments<'a>(group: &str, runs: &'a [Run]) -> Result<(Vec<Part<'a>>, Vec<RunId>), MergeError> {
    let mut parts: Vec<(SegmentRecord, &Run)> = Vec::new();
    for run in runs {
        let info = run.segment().ok_or_else(|| {
            MergeError::Mismatch(format!(
                "run {} carries the group's tag but is not a segment's run (its settings have no segment)",
                run.id
            ))
        })?;
        if info.group != group {
            return Err(MergeError::Mismatch(format!(
                "run {} is a segment of group '{}', not '{group}'",
                run.id, info.group
            )));
        }
        parts.push((info, run));
    }
    let Some((first, first_run)) = parts.first().cloned() else {
        return Err(MergeError::Empty(group.to_owned()));
    };
    let count = first.count;
    if let Some((other, run)) = parts.iter().find(|(i, _)| i.count != count) {
        return Err(MergeError::Mismatch(format!(
            "the runs of group '{group}' disagree on the number of segments: run {} is {}/{}, run {} is {}/{count}",
            run.id, other.index, other.count, first_run.id, first.index
        )));
    }
    if let Some((_, run)) = parts.iter().find(|(_, r)| r.kind != first_run.kind) {
        return Err(MergeError::Mismatch(format!(
            "the runs of group '{group}' are of different kinds ({} and {})",
            first_run.kind, run.kind
        )));
    }
    parts.sort_by_key(|(i, r)| (i.index, r.started_at));
    let mut duplicates = Vec::new();
    parts.dedup_by(|b, a| {
        let same = a.0.index == b.0.index;
        if same {
            duplicates.push(b.1.id);
        }
        same
    });
    Ok((parts, duplicates))
}

/// The merged run's identity: its description, window (the earliest start
/// to the latest end), id, machine (the first segment's, with every host
/// named), headline and tags.
fn merged_run(group: &str, parts: &[(SegmentRecord, &Run)], first_run: &Run, count: u32) -> Run {
    let mut merged = Run::new(
        first_run.kind,
        format!(
            "{} [group {group}: {} of {count} segments]",
            strip_segment_suffix(&first_run.description),
            parts.len()
        ),
    );
    let start = parts
        .iter()
        .map(|(_, r)| r.started_at)
        .min()
        .expect("one run");
    let end_ns = parts
        .iter()
        .map(|(_, r)| r.started_at.as_nanosecond() + i128::from(r.duration_ns))
        .max()
        .expect("one run");
    merged.started_at = start;
    merged.duration_ns = u64::try_from(end_ns - start.as_nanosecond()).unwrap_or(0);
    merged.id = merged_id(group, start.as_millisecond(), parts);
    merged.environment = first_run.environment.clone();
    let mut hosts: Vec<&str> = parts.iter().map(|(i, _)| i.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    merged.environment.hostname = Some(if hosts.len() <= 3 {
        hosts.join("+")
    } else {
        format!("{} hosts", hosts.len())
    });
    merged.headline.clone_from(&first_run.headline);
    merged.tags = vec![format!("group:{group}"), "merged".to_owned()];
    merged
}

/// Warns of the segments that are missing, failed or came twice; whether
/// the merged run is incomplete.
fn completeness_warnings(
    merged: &mut Run,
    parts: &[(SegmentRecord, &Run)],
    arrived: &[Arrived],
    count: u32,
    duplicates: &[RunId],
) -> bool {
    let present: Vec<u32> = parts.iter().map(|(i, _)| i.index).collect();
    let mut gaps = Vec::new();
    for index in (0..count).filter(|i| !present.contains(i)) {
        gaps.push(match arrived.iter().find(|a| a.index == index) {
            Some(a) => format!(
                "segment {index}/{count} arrived from {} but saved no run (killed, or its machine failed)",
                a.host
            ),
            None => format!("segment {index}/{count} never arrived"),
        });
    }
    let failed: Vec<String> = parts
        .iter()
        .filter(|(_, r)| r.warnings.iter().any(|w| w.code == "interrupted"))
        .map(|(i, _)| format!("segment {}/{count} ({}) was interrupted", i.index, i.host))
        .collect();
    let incomplete = !gaps.is_empty() || !failed.is_empty();
    if incomplete {
        let mut what = gaps.clone();
        what.extend(failed.iter().cloned());
        merged.warn(
            "segments_incomplete",
            format!(
                "incomplete: {}; the merged run covers {} of {count} segments fully, so it is not the whole run",
                what.join("; "),
                parts.len() - failed.len()
            ),
        );
    }
    if !duplicates.is_empty() {
        merged.warn(
            "duplicate_segments",
            format!(
                "the store holds more than one run of a segment; only the first of each was merged (left out: {})",
                duplicates.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    incomplete
}

/// The first segment's settings without its `segment`, with each of the
/// [`SUMMED_SETTINGS`] the segments' sum, and the [`GroupRecord`] under
/// `group`.
fn merged_settings(
    group: &str,
    parts: &[(SegmentRecord, &Run)],
    first_run: &Run,
    count: u32,
    incomplete: bool,
) -> Value {
    let mut settings = first_run.settings.clone();
    let Some(map) = settings.as_object_mut() else {
        return settings;
    };
    map.remove("segment");
    for key in SUMMED_SETTINGS {
        let sum: u64 = parts
            .iter()
            .filter_map(|(_, r)| r.settings.get(key).and_then(Value::as_u64))
            .sum();
        if map.contains_key(key) {
            map.insert(key.to_owned(), json!(sum));
        }
    }
    let present: Vec<u32> = parts.iter().map(|(i, _)| i.index).collect();
    let record = GroupRecord {
        name: group.to_owned(),
        count,
        incomplete,
        missing: (0..count).filter(|i| !present.contains(i)).collect(),
        segments: parts
            .iter()
            .map(|(i, r)| GroupSegment {
                index: i.index,
                host: i.host.clone(),
                run_id: r.id.to_string(),
                start_at_ns: i.start_at_ns,
                started_at_ns: i.started_at_ns,
                clock_offset_ns: i.clock_offset_ns,
            })
            .collect(),
    };
    map.insert(
        "group".to_owned(),
        serde_json::to_value(record).expect("a group record serializes"),
    );
    settings
}

/// A segment's description without its " [segment I/N of G]".
fn strip_segment_suffix(description: &str) -> &str {
    match description.rfind(" [segment ") {
        Some(at) => &description[..at],
        None => description,
    }
}

/// The same segments always merge into the same id: the earliest start,
/// and a hash of the group and the runs merged.
fn merged_id(group: &str, start_ms: i64, parts: &[(SegmentRecord, &Run)]) -> RunId {
    let mut high = DefaultHasher::new();
    let mut low = DefaultHasher::new();
    group.hash(&mut high);
    "low".hash(&mut low);
    for (_, r) in parts {
        r.id.to_string().hash(&mut high);
        r.id.to_string().hash(&mut low);
    }
    let random = (u128::from(high.finish()) << 64 | u128::from(low.finish())) & ((1 << 80) - 1);
    RunId::from_parts(u64::try_from(start_ms).unwrap_or(0), random)
}

/// A metric's name and labels: what is merged across segments.
type MetricKey = (String, BTreeMap<String, String>);

/// The metrics of the whole run, in the order the first segment has them
/// (then any that only later segments have), each merged by the rule it
/// declared. `shift` is a segment's start after the earliest in whole
/// seconds (to align per-second series), `offset_ns` the same in
/// nanoseconds (to place its window on the common clock).
///
/// [`Merge::Recompute`] metrics are left out, for the engine to recompute
/// from the merged ones, except in a merge of a single segment, whose own
/// values are already the whole run's.
fn merge_metrics(
    parts: &[(SegmentRecord, &Run)],
    shift: &dyn Fn(&SegmentRecord) -> u64,
    offset_ns: &dyn Fn(&SegmentRecord) -> f64,
) -> Vec<Metric> {
    // Every (name, labels) in order of first appearance; per-second
    // histograms (labelled with their `second`) are keyed by their aligned
    // second.
    let mut order: Vec<MetricKey> = Vec::new();
    let mut groups: BTreeMap<MetricKey, Vec<(&SegmentRecord, Metric)>> = BTreeMap::new();
    for (info, run) in parts {
        for m in &run.metrics {
            let mut m = m.clone();
            if let Some(second) = m
                .labels
                .get(label::SECOND)
                .and_then(|s| s.parse::<u64>().ok())
            {
                m.labels
                    .insert(label::SECOND.into(), (second + shift(info)).to_string());
            }
            let key = (m.name.clone(), m.labels.clone());
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key).or_default().push((info, m));
        }
    }
    let lone = parts.len() == 1;
    let mut out = Vec::new();
    for key in &order {
        let ms = &groups[key];
        let template = &ms[0].1;
        let mut merged = template.clone();
        merged.samples.clear();
        merged.histogram = None;
        merged.uncertainty = None;
        match template.merge() {
            Merge::None => continue,
            Merge::Recompute if lone => merged = template.clone(),
            Merge::Recompute => continue,
            Merge::Histogram => {
                let mut h = hdr::latency_histogram();
                let mut readable = true;
                for (_, m) in ms {
                    match m.histogram.as_ref().map(hdr::from_model) {
                        Some(Ok(one)) => {
                            let _ = h.add(&one);
                        }
                        _ => readable = false,
                    }
                }
                if readable {
                    let whole = hdr::latency_metric(&template.name, &h);
                    merged.value = whole.value;
                    merged.histogram = whole.histogram;
                } else {
                    // A damaged histogram cannot be merged: the largest
                    // mean stands in, and says so by having none.
                    merged.value = ms.iter().map(|(_, m)| m.value).fold(0.0, f64::max);
                }
            }
            Merge::Sum => merged.value = ms.iter().map(|(_, m)| m.value).sum(),
            Merge::Max => merged.value = ms.iter().map(|(_, m)| m.value).fold(f64::MIN, f64::max),
            Merge::Min => merged.value = ms.iter().map(|(_, m)| m.value).fold(f64::MAX, f64::min),
            Merge::Window => {
                merged.value = ms
                    .iter()
                    .map(|(info, m)| offset_ns(info) + m.value)
                    .fold(0.0, f64::max);
            }
            Merge::Rate => merged.value = merged_rate(parts, ms, offset_ns),
            Merge::Timeline => {
                let mut seconds: Vec<f64> = Vec::new();
                for (info, m) in ms {
                    let at = shift(info) as usize;
                    if seconds.len() < at + m.samples.len() {
                        seconds.resize(at + m.samples.len(), 0.0);
                    }
                    for (i, v) in m.samples.iter().enumerate() {
                        seconds[at + i] += v;
                    }
                }
                merged.value = if seconds.is_empty() {
                    0.0
                } else {
                    seconds.iter().sum::<f64>() / seconds.len() as f64
                };
                merged.samples = seconds;
            }
        }
        out.push(merged);
    }
    out
}

/// For an engine recomputing a per-second percentile of a merged run
/// ([`Merge::Recompute`]): the series `name` of the `percentile` of each
/// second, read from the merged per-second histograms named `histograms`
/// (each labelled with its aligned `second`, 1 for the first), as many
/// seconds as the per-second series `timeline` has, 0 for a second without
/// entries; its value is the mean over the seconds with entries. Declared
/// as the engines declare it (context, recomputed, one sample a second).
/// `None` when the run has no such histogram.
pub fn per_second_percentile(
    metrics: &[Metric],
    name: &str,
    timeline: &str,
    histograms: &str,
    percentile: f64,
) -> Option<Metric> {
    let seconds = metrics
        .iter()
        .find(|m| m.name == timeline)
        .map_or(0, |m| m.samples.len());
    let mut values = vec![0.0; seconds];
    let mut any = false;
    for m in metrics.iter().filter(|m| m.name == histograms) {
        let second: usize = m
            .label(label::SECOND)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if let (Some(slot), Some(Ok(h))) = (
            second.checked_sub(1).and_then(|i| values.get_mut(i)),
            m.histogram.as_ref().map(hdr::from_model),
        ) {
            *slot = hdr::value_at_percentile(&h, percentile) as f64;
            any = true;
        }
    }
    if !any {
        return None;
    }
    let seen: Vec<f64> = values.iter().copied().filter(|&v| v > 0.0).collect();
    let mut m = Metric::new(
        name,
        dyno_model::Unit::Ns,
        dyno_model::Direction::LowerIsBetter,
        seen.iter().sum::<f64>() / seen.len().max(1) as f64,
    );
    m.samples = values;
    Some(
        m.context()
            .merged(Merge::Recompute)
            .samples_are(dyno_model::Samples::Seconds),
    )
}

/// The whole run's rate of the segments' rate metrics `ms`: the summed
/// count each is of ([`Metric::rate_of`], with the same labels) over the
/// merged window, the latest of each segment's start on the common clock
/// plus its own window (its count over its rate). A segment that answered
/// nothing adds nothing and has no window. Without a declared count the
/// rates are summed, which is right only for windows that coincide.
fn merged_rate(
    parts: &[(SegmentRecord, &Run)],
    ms: &[(&SegmentRecord, Metric)],
    offset_ns: &dyn Fn(&SegmentRecord) -> f64,
) -> f64 {
    let template = &ms[0].1;
    let Some(count_name) = template.rate_of.as_deref() else {
        return ms.iter().map(|(_, m)| m.value).sum();
    };
    let mut total = 0.0;
    let mut window_ns: f64 = 0.0;
    for (info, m) in ms {
        let run = parts
            .iter()
            .find(|(i, _)| i.index == info.index)
            .map(|(_, r)| *r);
        let count = run
            .and_then(|r| r.referenced(template, count_name))
            .map_or(0.0, |c| c.value);
        total += count;
        if count > 0.0 && m.value > 0.0 {
            window_ns = window_ns.max(offset_ns(info) + count / m.value * 1e9);
        }
    }
    if window_ns > 0.0 {
        total / (window_ns / 1e9)
    } else {
        0.0
    }
}

/// Warns when the segments were not made alike: the barrier refuses
/// segments of different commands, but runs imported from elsewhere, or
/// made by a dyno without that check, may still differ. Names each setting
/// that differs with the segments' values.
fn settings_warnings(merged: &mut Run, parts: &[(SegmentRecord, &Run)]) {
    let Some((_, first)) = parts.first() else {
        return;
    };
    let empty = serde_json::Map::new();
    let of = |r: &Run| {
        r.settings
            .as_object()
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let base = of(first);
    let mut keys: Vec<&String> = base.keys().collect();
    for (_, r) in parts {
        for k in r.settings.as_object().into_iter().flat_map(|m| m.keys()) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let mut differ = Vec::new();
    for key in keys {
        if PER_SEGMENT_SETTINGS.contains(&key.as_str()) {
            continue;
        }
        let values: Vec<String> = parts
            .iter()
            .map(|(i, r)| {
                let v = r
                    .settings
                    .get(key)
                    .map_or("(none)".to_owned(), Value::to_string);
                format!("{}/{}: {v}", i.index, i.count)
            })
            .collect();
        let first_value = first.settings.get(key);
        if parts
            .iter()
            .any(|(_, r)| r.settings.get(key) != first_value)
        {
            differ.push(format!("{key} ({})", values.join(", ")));
        }
    }
    if !differ.is_empty() {
        merged.warn(
            "settings_differ",
            format!(
                "the segments were not made alike, so the merged run mixes different measurements: {}",
                differ.join("; ")
            ),
        );
    }
}

/// Warns when the segments did not start together, or their clocks
/// disagree, by more than [`START_TOLERANCE`].
fn spread_warnings(merged: &mut Run, parts: &[(SegmentRecord, &Run)]) {
    let tolerance = START_TOLERANCE.as_nanos() as i64;
    let spread = |values: Vec<i64>| -> i64 {
        let lo = values.iter().copied().min().unwrap_or(0);
        let hi = values.iter().copied().max().unwrap_or(0);
        hi - lo
    };
    let ms = |ns: i64| ns as f64 / 1e6;
    let starts = spread(parts.iter().map(|(i, _)| i.started_common_ns()).collect());
    if starts > tolerance {
        let late: Vec<String> = parts
            .iter()
            .map(|(i, _)| {
                format!(
                    "{}/{} {:+.1} ms",
                    i.index,
                    i.count,
                    ms(i.started_common_ns() - i.start_at_ns - i.clock_offset_ns.unwrap_or(0))
                )
            })
            .collect();
        merged.warn(
            "segment_start_spread",
            format!(
                "the segments started {:.1} ms apart (tolerance {} ms), so their seconds do not hold the same instants; start against the agreed instant: {}",
                ms(starts),
                START_TOLERANCE.as_millis(),
                late.join(", ")
            ),
        );
    }
    let offsets: Vec<i64> = parts
        .iter()
        .filter_map(|(i, _)| i.clock_offset_ns)
        .collect();
    if offsets.len() >= 2 {
        let clocks = spread(offsets);
        if clocks > tolerance {
            merged.warn(
                "segment_clock_skew",
                format!(
                    "the segments' clocks disagree by {:.1} ms (measured against the store server's clock; tolerance {} ms): a common start by the clock is only as good as the clocks; sync them (chrony, NTP)",
                    ms(clocks),
                    START_TOLERANCE.as_millis()
                ),
            );
        }
    }
}

/// The segments' own warnings: each once, naming the segments it came
/// from when not all of them had it.
fn merge_warnings(merged: &mut Run, parts: &[(SegmentRecord, &Run)], count: u32) {
    let mut seen: Vec<(Warning, Vec<u32>)> = Vec::new();
    for (info, run) in parts {
        for w in &run.warnings {
            match seen.iter_mut().find(|(s, _)| s == w) {
                Some((_, from)) => from.push(info.index),
                None => seen.push((w.clone(), vec![info.index])),
            }
        }
    }
    for (w, from) in seen {
        let message = if from.len() == parts.len() {
            w.message
        } else {
            let names: Vec<String> = from.iter().map(|i| format!("{i}/{count}")).collect();
            format!("segment {}: {}", names.join(", "), w.message)
        };
        merged.warnings.push(Warning {
            code: w.code,
            message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Kind, Unit};

    /// Segment `index` of `count` of group g: `n` answers of `latency` ns
    /// in one second, started `late_ms` after the agreed instant, its clock
    /// `offset_ms` behind the store's.
    fn part(
        index: u32,
        count: u32,
        n: u64,
        latency: u64,
        late_ms: i64,
        offset_ms: Option<i64>,
    ) -> Run {
        part_over(index, count, n, 1.0, latency, late_ms, offset_ms)
    }

    /// [`part`] whose `n` answers took `secs` seconds.
    fn part_over(
        index: u32,
        count: u32,
        n: u64,
        secs: f64,
        latency: u64,
        late_ms: i64,
        offset_ms: Option<i64>,
    ) -> Run {
        let mut run = Run::new(
            Kind::Http,
            format!("GET / c=1 [segment {index}/{count} of g]"),
        );
        let start_at_ns = 1_800_000_000_000_000_000i64;
        let mut h = hdr::latency_histogram();
        h.record_n(latency, n).unwrap();
        run.metrics = vec![
            Metric::new(
                "requests_per_sec",
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                n as f64 / secs,
            )
            .primary()
            .rate_of("responses"),
            Metric::new("responses", Unit::Count, Direction::LowerIsBetter, n as f64).context(),
            Metric::new(
                "measured_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                secs * 1e9,
            )
            .context()
            .merged(Merge::Window),
            Metric::new(
                "client_cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
                10.0 + f64::from(index),
            ),
            hdr::latency_metric("latency_ns", &h),
            {
                let mut t = Metric::new(
                    "timeline_requests_per_sec",
                    Unit::RequestsPerSec,
                    Direction::HigherIsBetter,
                    0.0,
                );
                t.samples = vec![n as f64];
                t.context()
                    .merged(Merge::Timeline)
                    .samples_are(dyno_model::Samples::Seconds)
            },
            {
                let mut t = hdr::latency_metric("timeline_latency_ns", &h);
                t.labels.insert("second".into(), "1".into());
                t.context()
            },
            Metric::new(
                "timeline_latency_p99_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                latency as f64,
            )
            .context()
            .merged(Merge::Recompute),
        ];
        run.settings = json!({
            "connections": 1,
            "segment": {
                "group": "g", "index": index, "count": count, "host": format!("h{index}"),
                "start_at_ns": start_at_ns,
                "started_at_ns": start_at_ns + late_ms * 1_000_000,
                "clock_offset_ns": offset_ms.map(|ms| ms * 1_000_000),
            }
        });
        run
    }

    fn codes(run: &Run) -> Vec<&str> {
        run.warnings.iter().map(|w| w.code.as_str()).collect()
    }

    /// Segments `a` and `b` merged as group g, no arrival recorded.
    fn merge_pair(a: Run, b: Run) -> Run {
        merge("g", &[a, b], &[]).unwrap()
    }

    /// The message of `run`'s warning `code`.
    fn warning<'a>(run: &'a Run, code: &str) -> &'a str {
        let found = run.warnings.iter().find(|w| w.code == code);
        &found
            .unwrap_or_else(|| panic!("no {code}: {:?}", run.warnings))
            .message
    }

    /// `run` gives warning `code` (and shows its warnings when it does not).
    fn assert_warns(run: &Run, code: &str) {
        assert!(codes(run).contains(&code), "{:?}", run.warnings);
    }

    #[test]
    fn counts_add_up_and_histograms_merge_bucket_by_bucket() {
        let runs = [
            part(1, 2, 300, 2_000, 0, None),
            part(0, 2, 100, 1_000, 1, None),
        ];
        let merged = merge("g", &runs, &[]).unwrap();
        let get = |name: &str| {
            merged
                .metrics
                .iter()
                .find(|m| m.name == name && m.labels.is_empty())
                .unwrap()
        };
        assert_eq!(get("responses").value, 400.0);
        // 400 answers from the common start (segment 0 started 1 ms late)
        // to the last answer, 1.001 s.
        assert_eq!(get("requests_per_sec").value, 400.0 / 1.001);
        assert_eq!(get("client_cpu_percent").value, 11.0, "the busiest client");
        let h = hdr::from_model(get("latency_ns").histogram.as_ref().unwrap()).unwrap();
        assert_eq!(h.len(), 400);
        // The whole run's p50 is the slower segment's, which an average of
        // the two p50s (1,500 ns) would miss.
        assert!(h.equivalent(hdr::value_at_percentile(&h, 50.0), 2_000));
        assert_eq!(get("timeline_requests_per_sec").samples, vec![400.0]);
        // Recomputed by the engine from the merged per-second histograms,
        // which are kept for it.
        assert!(merged.metric("timeline_latency_p99_ns").is_none());
        assert!(
            merged
                .metrics
                .iter()
                .any(|m| m.name == "timeline_latency_ns" && m.label("second") == Some("1"))
        );
        assert_eq!(get("measured_ns").value, 1e9 + 1e6, "the common window");
        assert_eq!(merged.settings["connections"], 2);
        assert_eq!(merged.description, "GET / c=1 [group g: 2 of 2 segments]");
        assert!(codes(&merged).is_empty(), "{:?}", merged.warnings);
        // The same segments, in any order, make the same run.
        let again = merge("g", &[runs[1].clone(), runs[0].clone()], &[]).unwrap();
        assert_eq!(again.id, merged.id);
    }

    #[test]
    fn a_merged_rate_is_the_merged_count_over_the_merged_window() {
        // The audit's -n run: three segments of 10,000 answers each, done
        // in 0.472, 0.747 and 0.531 s. The whole answered 30,000 in
        // 0.747 s: 40,161 req/s, not the 53,385 the rates add up to.
        let runs = [
            part_over(0, 3, 10_000, 0.4722, 1_000, 0, None),
            part_over(1, 3, 10_000, 0.747, 1_000, 0, None),
            part_over(2, 3, 10_000, 0.5313, 1_000, 0, None),
        ];
        let merged = merge("g", &runs, &[]).unwrap();
        let rate = merged.metric("requests_per_sec").unwrap().value;
        assert!((rate - 30_000.0 / 0.747).abs() < 1e-6, "{rate}");
        let summed: f64 = runs
            .iter()
            .map(|r| r.metric("requests_per_sec").unwrap().value)
            .sum();
        assert!(summed > rate * 1.3, "the old rule overstated it: {summed}");
        // A segment that started late stretches the window by its lateness.
        let late = [
            part_over(0, 2, 1_000, 1.0, 1_000, 0, None),
            part_over(1, 2, 1_000, 1.0, 1_000, 500, None),
        ];
        let merged = merge("g", &late, &[]).unwrap();
        let rate = merged.metric("requests_per_sec").unwrap().value;
        assert!((rate - 2_000.0 / 1.5).abs() < 1e-6, "{rate}");
        // A duration run's segments end together: the rates add up.
        let even = [
            part_over(0, 2, 3_000, 2.0, 1_000, 0, None),
            part_over(1, 2, 1_000, 2.0, 1_000, 0, None),
        ];
        let merged = merge("g", &even, &[]).unwrap();
        assert_eq!(merged.metric("requests_per_sec").unwrap().value, 2_000.0);
    }

    #[test]
    fn segments_of_different_commands_are_warned_about_with_what_differs() {
        let mut other = part(1, 2, 10, 1_000, 0, None);
        other.settings["url"] = json!("http://127.0.0.1:18081/blob/1k");
        other.settings["connections"] = json!(4);
        let mut first = part(0, 2, 10, 1_000, 0, None);
        first.settings["url"] = json!("http://127.0.0.1:18081/hello");
        let merged = merge_pair(first, other);
        let w = warning(&merged, "settings_differ");
        assert!(
            w.contains("url (0/2: \"http://127.0.0.1:18081/hello\""),
            "{w:?}"
        );
        assert!(w.contains("/blob/1k"), "{w:?}");
        assert!(!w.contains("connections"), "shares differ by design: {w:?}");
        // So do the seeds each segment draws and a db run's clean-up,
        // which one segment makes (M5: every default merge warned).
        let (mut a, mut b) = (part(0, 2, 1, 1, 0, None), part(1, 2, 1, 1, 0, None));
        a.settings["seed"] = json!(1264);
        b.settings["seed"] = json!(1197);
        a.settings["clean_up"] = json!(["vacuum pgbench_branches"]);
        b.settings["clean_up"] = json!([]);
        let drawn = merge_pair(a, b);
        assert!(
            !codes(&drawn).contains(&"settings_differ"),
            "{:?}",
            drawn.warnings
        );
        // Alike segments get no such warning.
        let alike = merge_pair(part(0, 2, 1, 1, 0, None), part(1, 2, 1, 1, 0, None));
        assert!(!codes(&alike).contains(&"settings_differ"));
    }

    #[test]
    fn missing_and_interrupted_segments_are_named() {
        let mut interrupted = part(2, 4, 10, 1_000, 0, None);
        interrupted.warn("interrupted", "stopped early");
        let runs = [part(0, 4, 10, 1_000, 0, None), interrupted];
        let arrived = [Arrived {
            index: 1,
            host: "h1".into(),
        }];
        let merged = merge("g", &runs, &arrived).unwrap();
        let why = warning(&merged, "segments_incomplete");
        assert!(
            why.contains("segment 1/4 arrived from h1 but saved no run"),
            "{why}"
        );
        assert!(why.contains("segment 3/4 never arrived"), "{why}");
        assert!(why.contains("segment 2/4 (h2) was interrupted"), "{why}");
        assert_eq!(merged.settings["group"]["incomplete"], true);
        assert_eq!(merged.settings["group"]["missing"], json!([1, 3]));
        // The segment's own warning is kept, naming where it came from.
        let own = warning(&merged, "interrupted");
        assert!(own.starts_with("segment 2/4: "), "{own}");
    }

    #[test]
    fn starts_and_clocks_apart_beyond_the_tolerance_are_warned_with_the_spread() {
        // Started 200 ms apart by the recorded start times.
        let late = merge_pair(
            part(0, 2, 10, 1_000, 0, None),
            part(1, 2, 10, 1_000, 200, None),
        );
        let why = warning(&late, "segment_start_spread");
        assert!(
            why.contains("200.0 ms apart") && why.contains("1/2 +200.0 ms"),
            "{why}"
        );
        // Clocks 300 ms apart against the store's: each started on time by
        // its own clock, so 300 ms apart in fact.
        let skewed = merge_pair(
            part(0, 2, 10, 1_000, 0, Some(0)),
            part(1, 2, 10, 1_000, 0, Some(300)),
        );
        assert_warns(&skewed, "segment_clock_skew");
        assert_warns(&skewed, "segment_start_spread");
        // Within the tolerance: nothing to say.
        let close = merge_pair(
            part(0, 2, 10, 1_000, 0, Some(0)),
            part(1, 2, 10, 1_000, 20, Some(10)),
        );
        assert!(codes(&close).is_empty(), "{:?}", close.warnings);
    }

    #[test]
    fn a_late_segments_seconds_are_shifted_onto_the_common_clock() {
        let merged = merge_pair(
            part(0, 2, 10, 1_000, 0, None),
            part(1, 2, 30, 1_000, 1_000, None),
        );
        let t = merged.metric("timeline_requests_per_sec").unwrap();
        assert_eq!(t.samples, vec![10.0, 30.0]);
        let seconds: Vec<&str> = merged
            .metrics
            .iter()
            .filter(|m| m.name == "timeline_latency_ns")
            .map(|m| m.labels["second"].as_str())
            .collect();
        assert_eq!(seconds, ["1", "2"]);
    }

    #[test]
    fn runs_that_do_not_belong_together_are_refused() {
        assert!(matches!(merge("g", &[], &[]), Err(MergeError::Empty(_))));
        let e = merge(
            "g",
            &[part(0, 2, 1, 1, 0, None), part(1, 3, 1, 1, 0, None)],
            &[],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("disagree on the number of segments"),
            "{e}"
        );
        let e = merge("other", &[part(0, 2, 1, 1, 0, None)], &[]).unwrap_err();
        assert!(e.to_string().contains("not 'other'"), "{e}");
        let plain = Run::new(Kind::Http, "x");
        let e = merge("g", &[plain], &[]).unwrap_err();
        assert!(e.to_string().contains("not a segment's run"), "{e}");
        // The same segment twice counts once, and says so.
        let merged = merge_pair(part(0, 1, 5, 1, 0, None), part(0, 1, 5, 1, 0, None));
        assert_eq!(merged.metric("responses").unwrap().value, 5.0);
        assert_warns(&merged, "duplicate_segments");
    }
}
