//! Latency distributions: HDR histograms as every engine records them, and
//! their lossless form inside a Run (HdrHistogram's V2 compressed encoding
//! in base64, the encoding of the HdrHistogram log format), so that
//! histograms from many threads, runs or machines merge exactly.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use dyno_model::Percentile;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// The encoding name stored in [`dyno_model::Histogram::encoding`].
pub const ENCODING: &str = "hdr-v2-deflate-base64";

/// The percentiles every latency report prints (methodology.md).
pub const REPORTED_PERCENTILES: [f64; 6] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99];

/// Highest latency a histogram can hold: one hour, in nanoseconds.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// Why a stored histogram could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum HdrError {
    #[error("unknown histogram encoding '{0}' (expected {ENCODING})")]
    Encoding(String),
    #[error("the histogram data is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("the histogram data is damaged: {0:?}")]
    Decode(hdrhistogram::serialization::DeserializeError),
}

/// An empty latency histogram: nanoseconds from 1 ns to one hour with three
/// significant digits, auto-resizing past that rather than dropping values.
pub fn latency_histogram() -> Histogram<u64> {
    let mut h =
        Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("constant bounds are valid");
    h.auto(true);
    h
}

/// A latency metric named `name`: the mean (0 with nothing recorded) and
/// the whole histogram, lower is better; its entries are the requests of
/// one run and it merges bucket by bucket. Its role is the caller's to
/// declare (a diagnostic unless it says otherwise).
pub fn latency_metric(name: &str, h: &Histogram<u64>) -> dyno_model::Metric {
    let mean = if h.is_empty() { 0.0 } else { h.mean() };
    let mut m = dyno_model::Metric::new(
        name,
        dyno_model::Unit::Ns,
        dyno_model::Direction::LowerIsBetter,
        mean,
    );
    m.histogram = Some(to_model(h));
    m.merged(dyno_model::Merge::Histogram)
        .samples_are(dyno_model::Samples::Requests)
}

/// The rank (1-based) of the `percentile` (0–100) among `count` values, by
/// HdrHistogram's rule: ⌈count · p / 100⌉ with p first stepped one unit in
/// the last place down, as the Java reference (`Math.nextAfter`) and
/// Python's `hdrh` read it. Without the step, floating point rounds some
/// products up past a whole number: 99.9 / 100 is 0.9990000000000001, so
/// p99.9 of 30,000 values would be the 29,971st instead of the 29,970th.
/// At least 1; `count` for p = 100.
pub fn percentile_rank(count: u64, percentile: f64) -> u64 {
    let stepped = if percentile > 0.0 && percentile.is_finite() {
        f64::from_bits(percentile.to_bits() - 1)
    } else {
        0.0
    };
    let q = stepped.clamp(0.0, 100.0) / 100.0;
    ((q * count as f64).ceil() as u64).clamp(1, count.max(1))
}

/// The value at the `percentile` (0–100) of `h`: the highest value
/// equivalent to the bucket that holds the value of rank
/// [`percentile_rank`]. 0 for an empty histogram. Every percentile dyno
/// reports is read here.
pub fn value_at_percentile(h: &Histogram<u64>, percentile: f64) -> u64 {
    let count = h.len();
    if count == 0 {
        return 0;
    }
    let rank = percentile_rank(count, percentile);
    // The crate's scan over the counts (summed eight at a time) finds the
    // bucket where the running count reaches ceil(q × count): a quantile
    // half a value short of `rank` asks for exactly `rank` without the
    // crate's own rounding of q × count. Its recorded-values iterator,
    // which gives the same bucket, costs some fifty times as much per
    // bucket: a per-second p99 of a long run read that way cost more
    // than its requests.
    h.value_at_quantile((rank as f64 - 0.5) / count as f64)
}

/// The model form of `h`: the lossless encoding plus a readable summary.
pub fn to_model(h: &Histogram<u64>) -> dyno_model::Histogram {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serialising into a Vec cannot fail");
    let empty = h.is_empty();
    dyno_model::Histogram {
        encoding: ENCODING.to_owned(),
        data: STANDARD.encode(bytes),
        count: h.len(),
        min: if empty { 0.0 } else { h.min() as f64 },
        max: h.max() as f64,
        mean: h.mean(),
        stddev: h.stdev(),
        percentiles: REPORTED_PERCENTILES
            .iter()
            .map(|&p| Percentile {
                percentile: p,
                value: value_at_percentile(h, p) as f64,
            })
            .collect(),
    }
}

/// Decodes the histogram stored in a Run.
pub fn from_model(m: &dyno_model::Histogram) -> Result<Histogram<u64>, HdrError> {
    if m.encoding != ENCODING {
        return Err(HdrError::Encoding(m.encoding.clone()));
    }
    decode(&m.data)
}

/// Decodes base64 text of a compressed V2 histogram: the `data` of a
/// [`dyno_model::Histogram`], or a line of an HdrHistogram interval log.
pub fn decode(base64: &str) -> Result<Histogram<u64>, HdrError> {
    let bytes = STANDARD.decode(base64)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(HdrError::Decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_losslessly_and_summarises() {
        let mut h = latency_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let m = to_model(&h);
        assert_eq!(m.count, 1000);
        assert_eq!(m.encoding, ENCODING);
        let p50 = m.percentiles.iter().find(|p| p.percentile == 50.0).unwrap();
        assert!((p50.value - 500_000.0).abs() <= 500.0, "{}", p50.value);
        let back = from_model(&m).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn merged_histograms_equal_one_recorded_together() {
        let (mut a, mut b, mut all) = (
            latency_histogram(),
            latency_histogram(),
            latency_histogram(),
        );
        for v in [10u64, 2_000, 3_000_000] {
            a.record(v).unwrap();
            all.record(v).unwrap();
        }
        for v in [7u64, 90_000, 4_000_000_000] {
            b.record(v).unwrap();
            all.record(v).unwrap();
        }
        let mut merged = from_model(&to_model(&a)).unwrap();
        merged.add(from_model(&to_model(&b)).unwrap()).unwrap();
        assert_eq!(merged, all);
    }

    #[test]
    fn damaged_data_is_an_error_not_a_panic() {
        let mut m = to_model(&latency_histogram());
        m.data = "not base64!".into();
        assert!(matches!(from_model(&m), Err(HdrError::Base64(_))));
        m.data = STANDARD.encode(b"garbage");
        assert!(matches!(from_model(&m), Err(HdrError::Decode(_))));
        m.encoding = "zip".into();
        assert!(matches!(from_model(&m), Err(HdrError::Encoding(_))));
    }

    #[test]
    fn percentile_ranks_follow_hdrhistogram_and_do_not_round_up_at_round_counts() {
        // The audit's case: p99.9 of 30,000 values is the 29,970th.
        assert_eq!(percentile_rank(30_000, 99.9), 29_970);
        assert_eq!(percentile_rank(10_000, 99.9), 9_990);
        assert_eq!(percentile_rank(1_000, 50.0), 500);
        assert_eq!(percentile_rank(1_001, 50.0), 501);
        assert_eq!(percentile_rank(30_000, 99.99), 29_997);
        assert_eq!(percentile_rank(7, 100.0), 7);
        assert_eq!(percentile_rank(7, 0.0), 1);
        assert_eq!(percentile_rank(0, 99.0), 1);
        // Values 1..=30000 each once: the value is its rank (exact below
        // 2048, within the bucket's width above).
        let mut h = latency_histogram();
        for v in 1..=30_000u64 {
            h.record(v).unwrap();
        }
        let p999 = value_at_percentile(&h, 99.9);
        assert_eq!(p999, h.highest_equivalent(29_970), "{p999}");
        assert!(
            value_at_percentile(&h, 99.9) < h.highest_equivalent(29_990),
            "one rank too high lands in the next bucket"
        );
        let mut small = latency_histogram();
        for v in 1..=1000u64 {
            small.record(v).unwrap();
        }
        assert_eq!(value_at_percentile(&small, 99.9), 999);
        assert_eq!(value_at_percentile(&small, 50.0), 500);
        assert_eq!(value_at_percentile(&small, 100.0), 1000);
        assert_eq!(value_at_percentile(&latency_histogram(), 99.0), 0);
    }

    #[test]
    fn each_percentile_is_the_bucket_where_the_running_count_reaches_its_rank() {
        // The reading walked bucket by bucket, as the definition says.
        let walked = |h: &Histogram<u64>, p: f64| {
            let rank = percentile_rank(h.len(), p);
            let mut seen = 0;
            h.iter_recorded()
                .find(|v| {
                    seen += v.count_at_value();
                    seen >= rank
                })
                .map_or(0, |v| h.highest_equivalent(v.value_iterated_to()))
        };
        let mut rng = fastrand::Rng::with_seed(11);
        for case in 0..40 {
            let mut h = latency_histogram();
            let n = [1, 2, 3, 7, 100, 1000, 30_000][case % 7];
            for _ in 0..n {
                // Zeros, small exact values, long tails and repeats.
                let v = match rng.u8(0..4) {
                    0 => 0,
                    1 => rng.u64(1..2048),
                    2 => rng.u64(1..60_000_000_000),
                    _ => 5_000,
                };
                h.record_n(v, rng.u64(1..4)).unwrap();
            }
            for p in [
                0.0, 0.1, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0,
            ] {
                assert_eq!(
                    value_at_percentile(&h, p),
                    walked(&h, p),
                    "case {case}, p{p}"
                );
            }
        }
    }

    #[test]
    fn empty_histograms_encode() {
        let m = to_model(&latency_histogram());
        assert_eq!((m.count, m.min, m.max), (0, 0.0, 0.0));
    }
}
