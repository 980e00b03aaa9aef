//! A Prometheus text endpoint as a watched source (`--watch URL`): one
//! scrape reads the families dyno understands into named counters and
//! gauges, and a series of scrapes over a run gives the target machine's
//! CPU by mode and core, memory, disk busy time and throughput, network
//! bytes, TCP retransmits and listen drops (node_exporter), PostgreSQL's
//! transactions and cache hits (postgres_exporter), and the exporting
//! process's own CPU and memory (any exporter made with a Prometheus
//! client library).
//!
//! The text is parsed by the `prometheus-parse` crate. Fetching is a
//! blocking `ureq` GET with a deadline, on the watcher's own thread. A
//! scrape that fails (refused, timed out, not HTTP 200, no sample in the
//! answer) is counted, not fatal: the run goes on, and the failures are
//! reported once at its end.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use dyno_model::names::{label, telemetry};
use dyno_model::{Direction, Merge, Metric, Unit};

/// Why a URL cannot be watched at all (a usage error before the run).
pub fn check_url(url: &str) -> Result<(), String> {
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| format!("{url} is not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(format!(
                "{url}: dyno scrapes exporters over plain http only; exporters listen on http (node_exporter on :9100, postgres_exporter on :9187)"
            ));
        }
        _ => {
            return Err(format!(
                "{url} has no http:// scheme; give the exporter's metrics URL, e.g. http://127.0.0.1:9100/metrics"
            ));
        }
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{url} names no host"));
    }
    Ok(())
}

/// What a source is called in labels and messages: its host and port
/// (`127.0.0.1:9100`); a PostgreSQL server's host, port and database
/// (`127.0.0.1:5432/bench`); or the whole URL when that does not parse.
pub fn source_name(url: &str) -> String {
    if let Some(place) = url.strip_prefix("postgresql://") {
        return place.to_owned();
    }
    url.parse::<ureq::http::Uri>()
        .ok()
        .and_then(|u| u.authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_else(|| url.to_owned())
}

/// How the clock of a source compares with this machine's: the source's
/// wall clock minus this one's, and how far off that estimate may be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockOffset {
    pub offset: Duration,
    /// The source is behind this machine (the offset is negative).
    pub behind: bool,
    pub uncertainty: Duration,
}

impl ClockOffset {
    /// The offset in signed milliseconds.
    pub fn millis(&self) -> f64 {
        let ms = self.offset.as_secs_f64() * 1e3;
        if self.behind { -ms } else { ms }
    }
}

/// One scrape: when it was taken, on this process's clock, and the values
/// it read, by dyno's own keys (`cpu/user`, `core/3/busy`, `disk/sda/io`,
/// `tcp/retransmits` …).
#[derive(Debug, Clone, PartialEq)]
pub struct Scrape {
    /// The middle of the request, or, where the samples carry the
    /// source's own timestamps, that time on this process's clock.
    pub at: Instant,
    pub values: BTreeMap<String, f64>,
    /// Lines of the answer that were not Prometheus text (skipped).
    pub skipped_lines: usize,
    /// This scrape's estimate of the source's clock, if it gave one.
    pub clock: Option<ClockOffset>,
}

/// Why one scrape failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeError {
    #[error("could not be read ({0})")]
    Fetch(String),
    #[error("answered HTTP {0}")]
    Status(u16),
    #[error("answered no Prometheus samples (is it a metrics endpoint?)")]
    NoSamples,
}

/// The most an answer may be: node_exporter's is about 100 KiB.
const MAX_BODY: u64 = 16 << 20;

/// Scrapes `url` once, giving up after `timeout`.
pub fn scrape(agent: &ureq::Agent, url: &str) -> Result<Scrape, ScrapeError> {
    let sent = (Instant::now(), SystemTime::now());
    let mut answer = agent
        .get(url)
        .call()
        .map_err(|e| ScrapeError::Fetch(e.to_string()))?;
    let status = answer.status().as_u16();
    if status != 200 {
        return Err(ScrapeError::Status(status));
    }
    let date = answer
        .headers()
        .get("date")
        .and_then(|d| d.to_str().ok())
        .and_then(|d| jiff::fmt::rfc2822::parse(d).ok())
        .map(|z| z.timestamp());
    let body = answer
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .read_to_string()
        .map_err(|e| ScrapeError::Fetch(e.to_string()))?;
    let received = Instant::now();
    let round_trip = received - sent.0;
    let at = sent.0 + round_trip / 2;
    let wall_at = sent.1 + round_trip / 2;
    let mut scrape = parse(&body, at)?;
    // The source's clock: node_exporter's node_time_seconds (to the
    // microsecond), else the answer's Date header (to the second).
    let (source_wall, coarse) = match scrape.values.get("time/seconds") {
        Some(&s) if s > 0.0 => (Some(s), Duration::ZERO),
        _ => (
            date.map(|t| t.as_millisecond() as f64 / 1e3),
            Duration::from_millis(500),
        ),
    };
    if let Some(source) = source_wall {
        let here = wall_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let diff = source - here;
        scrape.clock = Some(ClockOffset {
            offset: Duration::from_secs_f64(diff.abs()),
            behind: diff < 0.0,
            uncertainty: round_trip / 2 + coarse,
        });
    }
    // Samples stamped by the source are placed at their own time.
    if let (Some(stamp), Some(clock)) = (scrape.values.remove("stamp/seconds"), scrape.clock) {
        let here = wall_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let local = stamp - clock.millis() / 1e3;
        let shift = local - here;
        let moved = if shift >= 0.0 {
            at.checked_add(Duration::from_secs_f64(shift))
        } else {
            at.checked_sub(Duration::from_secs_f64(-shift))
        };
        scrape.at = moved.unwrap_or(at);
    }
    Ok(scrape)
}

/// A Prometheus text endpoint (`--watch URL`) as the watcher reads it.
#[derive(Debug)]
pub struct Endpoint {
    agent: ureq::Agent,
    url: String,
}

impl Endpoint {
    /// One scrape may take [`crate::watch::scrape_timeout`] of `interval`.
    pub fn new(url: String, interval: Duration) -> Endpoint {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(crate::watch::scrape_timeout(interval)))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        Endpoint { agent, url }
    }
}

impl crate::watch::Probe for Endpoint {
    fn url(&self) -> String {
        self.url.clone()
    }

    fn read(&mut self) -> Result<Scrape, String> {
        scrape(&self.agent, &self.url).map_err(|e| e.to_string())
    }
}

/// Reads an exposition's families into dyno's keys.
pub fn parse(body: &str, at: Instant) -> Result<Scrape, ScrapeError> {
    use prometheus_parse::Value;
    // Only the lines of the families dyno reads go to the parser (a tenth
    // of node_exporter's): parsing is most of what watching costs the
    // client. The rest are only told apart from lines that are no
    // Prometheus text at all.
    let (mut samples, mut skipped_lines) = (0, 0);
    let mut wanted = Vec::new();
    for line in body.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !looks_like_sample(line) {
            skipped_lines += 1;
            continue;
        }
        samples += 1;
        if FAMILIES.iter().any(|f| line.starts_with(f)) {
            wanted.push(line);
        }
    }
    if samples == 0 {
        return Err(ScrapeError::NoSamples);
    }
    // The epoch stands for "no timestamp of its own".
    let unstamped = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let parsed =
        prometheus_parse::Scrape::parse_at(wanted.iter().map(|l| Ok((*l).to_owned())), unstamped)
            .map_err(|e| ScrapeError::Fetch(e.to_string()))?;
    let mut values = BTreeMap::new();
    let mut add = |key: String, v: f64| {
        if v.is_finite() {
            *values.entry(key).or_insert(0.0) += v;
        }
    };
    let mut stamp: Option<i64> = None;
    for s in &parsed.samples {
        if s.timestamp != unstamped {
            stamp = stamp.max(Some(s.timestamp.timestamp_millis()));
        }
        let v = match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            _ => continue,
        };
        let label = |name: &str| s.labels.get(name).unwrap_or("").to_owned();
        match s.metric.as_str() {
            "node_cpu_seconds_total" => {
                let (mode, cpu) = (label("mode"), label("cpu"));
                add(format!("cpu/{mode}"), v);
                add(format!("core/{cpu}/total"), v);
                if mode != "idle" && mode != "iowait" {
                    add(format!("core/{cpu}/busy"), v);
                }
            }
            "node_memory_MemAvailable_bytes" => add("memory/available".into(), v),
            "node_memory_MemTotal_bytes" => add("memory/total".into(), v),
            "node_disk_io_time_seconds_total" => add(format!("disk/{}/io", label("device")), v),
            "node_disk_read_bytes_total" => add(format!("disk/{}/read", label("device")), v),
            "node_disk_written_bytes_total" => add(format!("disk/{}/written", label("device")), v),
            "node_network_receive_bytes_total" => {
                add(format!("net/{}/receive", label("device")), v)
            }
            "node_network_transmit_bytes_total" => {
                add(format!("net/{}/transmit", label("device")), v);
            }
            "node_network_speed_bytes" if v > 0.0 => {
                add(format!("net/{}/speed", label("device")), v)
            }
            "node_netstat_Tcp_RetransSegs" => add("tcp/retransmits".into(), v),
            "node_netstat_TcpExt_ListenDrops" => add("tcp/listen_drops".into(), v),
            "node_time_seconds" => add("time/seconds".into(), v),
            "pg_up" => add("pg/up".into(), v),
            m if m.starts_with("pg_stat_database_") => {
                add(format!("pg/db/{}", &m["pg_stat_database_".len()..]), v);
            }
            m if m.starts_with("pg_stat_bgwriter_") => {
                let column = &m["pg_stat_bgwriter_".len()..];
                add(
                    format!("pg/bgwriter/{}", column.trim_end_matches("_total")),
                    v,
                );
            }
            "process_cpu_seconds_total" => add("process/cpu".into(), v),
            "process_resident_memory_bytes" => add("process/memory".into(), v),
            _ => {}
        }
    }
    if let Some(ms) = stamp {
        values.insert("stamp/seconds".into(), ms as f64 / 1e3);
    }
    Ok(Scrape {
        at,
        values,
        skipped_lines,
        clock: None,
    })
}

/// The starts of the names of the families dyno reads.
const FAMILIES: &[&str] = &[
    "node_cpu_seconds_total",
    "node_memory_MemAvailable_bytes",
    "node_memory_MemTotal_bytes",
    "node_disk_io_time_seconds_total",
    "node_disk_read_bytes_total",
    "node_disk_written_bytes_total",
    "node_network_receive_bytes_total",
    "node_network_transmit_bytes_total",
    "node_network_speed_bytes",
    "node_netstat_Tcp_RetransSegs",
    "node_netstat_TcpExt_ListenDrops",
    "node_time_seconds",
    "pg_up",
    "pg_stat_database_",
    "pg_stat_bgwriter_",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
];

/// Whether a line has a sample's shape: a metric name, its labels if any,
/// and a number (the parser itself reads only the lines dyno wants).
fn looks_like_sample(line: &str) -> bool {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    if name_end == 0 || line.as_bytes()[0].is_ascii_digit() {
        return false;
    }
    let mut rest = &line[name_end..];
    if rest.starts_with('{') {
        let Some(close) = rest.rfind('}') else {
            return false;
        };
        rest = &rest[close + 1..];
    }
    if !rest.starts_with([' ', '\t']) {
        return false;
    }
    rest.split_whitespace().next().is_some_and(|v| {
        v.parse::<f64>().is_ok()
            || matches!(v.to_ascii_lowercase().as_str(), "nan" | "+inf" | "-inf")
    })
}

/// The key of a last reading that a source took once what the load did
/// was all published (PostgreSQL's counters, after its sessions ended):
/// it holds what was done by the reading before it, so any time between
/// the two reads it whole.
pub const SETTLED: &str = "settled";

/// One endpoint's scrapes over a run.
#[derive(Debug, Clone, Default)]
pub struct ScrapeSeries {
    /// The URL as given.
    pub url: String,
    pub scrapes: Vec<Scrape>,
    /// Failed scrapes, by why, and how many times each.
    pub failures: BTreeMap<String, usize>,
    /// The CPU time its thread used (fetching and parsing).
    pub cost: Duration,
    /// What the source said of its own readings (see
    /// [`crate::watch::Probe::notes`]).
    pub notes: Vec<String>,
}

impl ScrapeSeries {
    /// The host and port, as labels and messages name it.
    pub fn name(&self) -> String {
        source_name(&self.url)
    }

    /// The value of `key` at `at`, linearly between the scrapes around it.
    pub(crate) fn value_at(&self, key: &str, at: Instant) -> Option<f64> {
        // The scrapes are in time order: the first at or after `at` that
        // has the key, and the last before it that has it.
        let split = self.scrapes.partition_point(|s| s.at < at);
        let point = |s: &Scrape| Some((s.at, *s.values.get(key)?));
        let after = self.scrapes[split..]
            .iter()
            .find(|s| s.values.contains_key(key))?;
        if after.values.contains_key(SETTLED) {
            return after.values.get(key).copied();
        }
        let (t1, v1) = (after.at, *after.values.get(key)?);
        let Some((t0, v0)) = self.scrapes[..split].iter().rev().find_map(point) else {
            return (t1 == at).then_some(v1);
        };
        let span = (t1 - t0).as_secs_f64();
        let part = if span > 0.0 {
            (at - t0).as_secs_f64() / span
        } else {
            1.0
        };
        Some(v0 + part * (v1 - v0))
    }

    /// The part of `from..to` that the scrapes cover.
    pub(crate) fn covered(&self, from: Instant, to: Instant) -> Option<(Instant, Instant)> {
        let first = self.scrapes.first()?.at;
        let last = self.scrapes.last()?.at;
        let (from, to) = (from.max(first), to.min(last));
        (to > from).then_some((from, to))
    }

    /// How much a counter grew from `from` to `to` (a counter reset
    /// counts as no growth).
    pub(crate) fn delta(&self, key: &str, from: Instant, to: Instant) -> Option<f64> {
        Some((self.value_at(key, to)? - self.value_at(key, from)?).max(0.0))
    }

    /// How fast a counter grew over `covered`, per second (0 where it is
    /// missing or did not grow).
    fn per_sec(&self, key: &str, covered: (Instant, Instant)) -> f64 {
        let (from, to) = covered;
        self.delta(key, from, to).unwrap_or(0.0) / (to - from).as_secs_f64()
    }

    /// The keys of a kind present in the scrapes, in order: `disk/` →
    /// the devices.
    pub(crate) fn names(&self, prefix: &str, suffix: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .scrapes
            .iter()
            .flat_map(|s| s.values.keys())
            .filter_map(|k| k.strip_prefix(prefix)?.strip_suffix(suffix))
            .map(str::to_owned)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The target's CPU busy share from `from` to `to`, in percent of all
    /// its cores (idle and iowait are not busy).
    pub fn cpu_busy(&self, from: Instant, to: Instant) -> Option<f64> {
        let total: f64 = self
            .names("cpu/", "")
            .iter()
            .filter_map(|m| self.delta(&format!("cpu/{m}"), from, to))
            .sum();
        let idle =
            self.delta("cpu/idle", from, to)? + self.delta("cpu/iowait", from, to).unwrap_or(0.0);
        (total > 0.0).then(|| 100.0 * (1.0 - idle / total).clamp(0.0, 1.0))
    }

    /// What the series says of the run's measured window: its metrics,
    /// and what it found saturated.
    pub fn findings(&self, from: Instant, to: Instant, operations: u64) -> Findings {
        let mut out = Findings::default();
        let window = (from, to);
        let Some(covered) = self.covered(from, to) else {
            return out;
        };
        let name = self.name();
        let Findings { metrics, saturated } = &mut out;
        let mut push = |mut m: Metric| {
            m.labels.insert(label::WATCHED.into(), name.clone());
            metrics.push(m.merged(Merge::None));
        };
        self.cpu(window, covered, &name, &mut push, saturated);
        self.memory(covered, &mut push);
        self.disks(covered, &name, &mut push, saturated);
        self.network(covered, &name, &mut push, saturated);
        self.tcp(covered, operations, &name, &mut push, saturated);
        // PostgreSQL (postgres_exporter, --pg-stats).
        self.postgres(window, covered, operations, &mut push, saturated);
        self.exporting_process(covered, operations, &mut push);
        self.clock(&mut push);
        out
    }

    /// CPU, the whole machine, each mode and its busiest core, over
    /// `covered`, and its busy share in each second of the run's own
    /// `window`.
    fn cpu(
        &self,
        window: (Instant, Instant),
        covered: (Instant, Instant),
        name: &str,
        push: &mut impl FnMut(Metric),
        saturated: &mut Vec<(&'static str, String)>,
    ) {
        let (from, to) = covered;
        let Some(busy) = self.cpu_busy(from, to) else {
            return;
        };
        let cores = self.names("core/", "/total");
        push(
            Metric::new(
                telemetry::TARGET_CPU_BUSY_PERCENT,
                Unit::Percent,
                Direction::LowerIsBetter,
                busy,
            )
            .diagnostic(),
        );
        self.cpu_modes(covered, push);
        let busiest = cores
            .iter()
            .filter_map(|c| {
                let busy = self.delta(&format!("core/{c}/busy"), from, to)?;
                let all = self.delta(&format!("core/{c}/total"), from, to)?;
                (all > 0.0).then(|| (c.clone(), 100.0 * busy / all))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((core, share)) = &busiest {
            push(labelled(
                Metric::new(
                    telemetry::TARGET_CPU_BUSIEST_CORE_PERCENT,
                    Unit::Percent,
                    Direction::LowerIsBetter,
                    *share,
                )
                .diagnostic(),
                label::CORE,
                core,
            ));
        }
        if busy >= 100.0 * crate::watch::SATURATED_SHARE {
            saturated.push((
                "target_cpu_bound",
                format!(
                    "the target machine {name} was CPU-bound: {busy:.0}% busy over its {} cores",
                    cores.len()
                ),
            ));
        } else if let Some((core, share)) =
            busiest.filter(|(_, s)| *s >= 100.0 * crate::watch::SATURATED_SHARE)
        {
            saturated.push((
                "target_core_bound",
                format!("one core of {name} was saturated: cpu {core} at {share:.0}% busy while the machine was {busy:.0}% busy (one thread, or interrupts all on one core)"),
            ));
        }
        self.cpu_timeline(window, busy, push);
    }

    /// Each CPU mode's share of the CPU time over `covered`.
    fn cpu_modes(&self, covered: (Instant, Instant), push: &mut impl FnMut(Metric)) {
        let (from, to) = covered;
        let total: f64 = self
            .names("cpu/", "")
            .iter()
            .filter_map(|m| self.delta(&format!("cpu/{m}"), from, to))
            .sum();
        for mode in self.names("cpu/", "") {
            if let Some(d) = self.delta(&format!("cpu/{mode}"), from, to) {
                push(labelled(
                    Metric::new(
                        telemetry::TARGET_CPU_MODE_PERCENT,
                        Unit::Percent,
                        Direction::LowerIsBetter,
                        100.0 * d / total.max(f64::MIN_POSITIVE),
                    )
                    .context(),
                    label::MODE,
                    &mode,
                ));
            }
        }
    }

    /// The CPU busy share in each second of the run's own `window`,
    /// clipped to the scrapes (a second they do not cover is 0), its value
    /// the share over the whole run, `busy`.
    fn cpu_timeline(&self, window: (Instant, Instant), busy: f64, push: &mut impl FnMut(Metric)) {
        let series = crate::watch::per_second(window.0, window.1, |a, b| {
            let (a, b) = self.covered(a, b)?;
            self.cpu_busy(a, b)
        });
        if !series.is_empty() {
            let mut m = Metric::new(
                telemetry::TIMELINE_TARGET_CPU_BUSY_PERCENT,
                Unit::Percent,
                Direction::LowerIsBetter,
                busy,
            )
            .context();
            m.samples = series;
            push(m);
        }
    }

    /// Memory: the least available over `covered`.
    fn memory(&self, covered: (Instant, Instant), push: &mut impl FnMut(Metric)) {
        let (from, to) = covered;
        let least = self
            .scrapes
            .iter()
            .filter(|s| s.at >= from && s.at <= to)
            .filter_map(|s| s.values.get("memory/available"))
            .copied()
            .reduce(f64::min);
        if let Some(least) = least {
            push(
                Metric::new(
                    telemetry::TARGET_MEMORY_AVAILABLE_MIN,
                    Unit::Bytes,
                    Direction::HigherIsBetter,
                    least,
                )
                .context(),
            );
        }
    }

    /// Disks: busy time and throughput over `covered`, of the devices that
    /// did work.
    fn disks(
        &self,
        covered: (Instant, Instant),
        name: &str,
        push: &mut impl FnMut(Metric),
        saturated: &mut Vec<(&'static str, String)>,
    ) {
        for dev in self.names("disk/", "/io") {
            let rate = |what: &str| self.per_sec(&format!("disk/{dev}/{what}"), covered);
            let (io, read, written) = (rate("io"), rate("read"), rate("written"));
            if io == 0.0 && read == 0.0 && written == 0.0 {
                continue;
            }
            // The device's io time grows by up to a second each second.
            let util = (100.0 * io).min(100.0);
            push(labelled(
                Metric::new(
                    telemetry::TARGET_DISK_UTIL_PERCENT,
                    Unit::Percent,
                    Direction::LowerIsBetter,
                    util,
                )
                .diagnostic(),
                label::DEVICE,
                &dev,
            ));
            push_byte_rates(
                push,
                &dev,
                [
                    (telemetry::TARGET_DISK_READ_BYTES_PER_SEC, read),
                    (telemetry::TARGET_DISK_WRITTEN_BYTES_PER_SEC, written),
                ],
            );
            if util >= 100.0 * crate::watch::SATURATED_SHARE {
                saturated.push((
                    "disk_bound",
                    format!("disk {dev} of {name} was busy {util:.0}% of the run (node_exporter's io time)"),
                ));
            }
        }
    }

    /// Network: bytes each way over `covered`, against the link's speed
    /// where known.
    fn network(
        &self,
        covered: (Instant, Instant),
        name: &str,
        push: &mut impl FnMut(Metric),
        saturated: &mut Vec<(&'static str, String)>,
    ) {
        let to = covered.1;
        for dev in self.names("net/", "/receive") {
            let rx = self.per_sec(&format!("net/{dev}/receive"), covered);
            let tx = self.per_sec(&format!("net/{dev}/transmit"), covered);
            if rx == 0.0 && tx == 0.0 {
                continue;
            }
            push_byte_rates(
                push,
                &dev,
                [
                    (telemetry::TARGET_NET_RECEIVE_BYTES_PER_SEC, rx),
                    (telemetry::TARGET_NET_TRANSMIT_BYTES_PER_SEC, tx),
                ],
            );
            if let Some(speed) = self.value_at(&format!("net/{dev}/speed"), to) {
                let share = rx.max(tx) / speed;
                if share >= crate::watch::SATURATED_SHARE {
                    saturated.push((
                        "network_bound",
                        format!(
                            "{dev} of {name} carried {:.0}% of its link speed ({:.0} MB/s)",
                            100.0 * share,
                            speed / 1e6
                        ),
                    ));
                }
            }
        }
    }

    /// TCP: retransmits and listen drops over `covered`.
    fn tcp(
        &self,
        covered: (Instant, Instant),
        operations: u64,
        name: &str,
        push: &mut impl FnMut(Metric),
        saturated: &mut Vec<(&'static str, String)>,
    ) {
        let (from, to) = covered;
        if let Some(r) = self.delta("tcp/retransmits", from, to) {
            push(
                Metric::new(
                    telemetry::TARGET_TCP_RETRANSMITS,
                    Unit::Count,
                    Direction::LowerIsBetter,
                    r,
                )
                .context(),
            );
            if let Some(m) = per_op(
                telemetry::TARGET_RETRANSMITS_PER_1K_OPS,
                Unit::Count,
                1000.0 * r,
                operations,
                telemetry::TARGET_TCP_RETRANSMITS,
            ) {
                push(m);
            }
        }
        if let Some(d) = self.delta("tcp/listen_drops", from, to) {
            push(
                Metric::new(
                    telemetry::TARGET_LISTEN_DROPS,
                    Unit::Count,
                    Direction::LowerIsBetter,
                    d,
                )
                .context(),
            );
            if d > 0.0 {
                saturated.push((
                    "listen_drops",
                    format!("{name} dropped {d:.0} connections at a full listen queue (raise the server's backlog or somaxconn)"),
                ));
            }
        }
    }

    /// Any other exporter: the exporting process's own CPU over `covered`
    /// (the server itself, when it exports its own metrics).
    fn exporting_process(
        &self,
        covered: (Instant, Instant),
        operations: u64,
        push: &mut impl FnMut(Metric),
    ) {
        let (from, to) = covered;
        let secs = (to - from).as_secs_f64();
        let machine = self.scrapes.iter().any(|s| {
            s.values
                .keys()
                .any(|k| k.starts_with("cpu/") || k.starts_with("pg/"))
        });
        if machine {
            return;
        }
        let Some(cpu) = self.delta("process/cpu", from, to) else {
            return;
        };
        push(
            Metric::new(
                telemetry::SERVER_CPU_PERCENT,
                Unit::Percent,
                Direction::LowerIsBetter,
                100.0 * cpu / secs,
            )
            .diagnostic(),
        );
        if let Some(m) = per_op(
            telemetry::SERVER_CPU_PER_OP,
            Unit::Ns,
            cpu * 1e9,
            operations,
            telemetry::SERVER_CPU_PERCENT,
        ) {
            push(m);
        }
    }

    /// The clock: the best estimate of the run.
    fn clock(&self, push: &mut impl FnMut(Metric)) {
        if let Some(c) = self
            .scrapes
            .iter()
            .filter_map(|s| s.clock)
            .min_by_key(|c| c.uncertainty)
        {
            push(
                Metric::new(
                    telemetry::TARGET_CLOCK_OFFSET,
                    Unit::Ns,
                    Direction::LowerIsBetter,
                    c.millis() * 1e6,
                )
                .context(),
            );
        }
    }

    /// What went wrong while scraping, for a warning: failures by why,
    /// lines that were not Prometheus text, a PostgreSQL the exporter
    /// could not reach. Empty when nothing did.
    pub fn troubles(&self) -> Vec<String> {
        let mut out = Vec::new();
        let failed: usize = self.failures.values().sum();
        if failed > 0 {
            let whys: Vec<String> = self
                .failures
                .iter()
                .map(|(why, n)| format!("{n}× {why}"))
                .collect();
            out.push(format!(
                "{failed} of {} scrapes failed: {}",
                failed + self.scrapes.len(),
                whys.join("; ")
            ));
        }
        let skipped = self
            .scrapes
            .iter()
            .map(|s| s.skipped_lines)
            .max()
            .unwrap_or(0);
        if skipped > 0 {
            out.push(format!(
                "{skipped} lines of its answer were not Prometheus text and were skipped"
            ));
        }
        if self
            .scrapes
            .iter()
            .any(|s| s.values.get("pg/up") == Some(&0.0))
        {
            out.push("postgres_exporter says pg_up 0: it could not reach PostgreSQL (check its DATA_SOURCE_NAME and the role's rights)".into());
        }
        out.extend(self.notes.iter().cloned());
        out
    }
}

/// What a watched source says of a run.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub metrics: Vec<Metric>,
    /// What was saturated: a warning code and its line.
    pub saturated: Vec<(&'static str, String)>,
}

/// `m` with the label `key` set to `value`.
/// A device's bytes per second each way (read and written, received and
/// sent), as context metrics labelled with the device.
fn push_byte_rates(push: &mut impl FnMut(Metric), dev: &str, rates: [(&'static str, f64); 2]) {
    for (metric, rate) in rates {
        push(labelled(
            Metric::new(metric, Unit::BytesPerSec, Direction::HigherIsBetter, rate).context(),
            label::DEVICE,
            dev,
        ));
    }
}

/// `amount` shared out over the `operations` that ended, as the metric
/// `name` (lower is better) derived from `of`; none when none ended.
pub(crate) fn per_op(
    name: &'static str,
    unit: Unit,
    amount: f64,
    operations: u64,
    of: &'static str,
) -> Option<Metric> {
    (operations > 0).then(|| {
        Metric::new(
            name,
            unit,
            Direction::LowerIsBetter,
            amount / operations as f64,
        )
        .derived_of(of)
    })
}

fn labelled(mut m: Metric, key: &str, value: &str) -> Metric {
    m.labels.insert(key.into(), value.into());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "\
# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 100
node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 50
node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 100
node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} 50
# TYPE node_netstat_Tcp_RetransSegs untyped
node_netstat_Tcp_RetransSegs 10
node_disk_io_time_seconds_total{device=\"sda\"} 5
node_disk_read_bytes_total{device=\"sda\"} 1000
node_disk_written_bytes_total{device=\"sda\"} 0
";

    /// The same exposition, `secs` seconds of work later: core 0 busy
    /// `busy0` of them, core 1 idle; `io` seconds of disk time.
    fn later(secs: f64, busy0: f64, io: f64, retrans: f64) -> String {
        NODE.replace(
            "cpu=\"0\",mode=\"idle\"} 100",
            &format!("cpu=\"0\",mode=\"idle\"}} {}", 100.0 + secs - busy0),
        )
        .replace(
            "cpu=\"0\",mode=\"user\"} 50",
            &format!("cpu=\"0\",mode=\"user\"}} {}", 50.0 + busy0),
        )
        .replace(
            "cpu=\"1\",mode=\"idle\"} 100",
            &format!("cpu=\"1\",mode=\"idle\"}} {}", 100.0 + secs),
        )
        .replace("RetransSegs 10", &format!("RetransSegs {}", 10.0 + retrans))
        .replace(
            "device=\"sda\"} 5",
            &format!("device=\"sda\"}} {}", 5.0 + io),
        )
    }

    fn series(bodies: &[(u64, String)]) -> (ScrapeSeries, Instant) {
        let t0 = Instant::now();
        let scrapes = bodies
            .iter()
            .map(|(ms, b)| parse(b, t0 + Duration::from_millis(*ms)).unwrap())
            .collect();
        (
            ScrapeSeries {
                url: "http://127.0.0.1:9100/metrics".into(),
                scrapes,
                ..ScrapeSeries::default()
            },
            t0,
        )
    }

    fn value(f: &Findings, name: &str) -> f64 {
        f.metrics
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name}"))
            .value
    }

    #[test]
    fn the_families_are_read_into_dyno_keys() {
        let s = parse(NODE, Instant::now()).unwrap();
        assert_eq!(s.values["cpu/idle"], 200.0);
        assert_eq!(s.values["core/0/busy"], 50.0);
        assert_eq!(s.values["core/1/total"], 150.0);
        assert_eq!(s.values["tcp/retransmits"], 10.0);
        assert_eq!(s.values["disk/sda/io"], 5.0);
        assert_eq!(s.skipped_lines, 0);
    }

    #[test]
    fn a_saturated_core_and_disk_are_found_and_the_rates_are_per_second() {
        // Two seconds: core 0 busy all of them, core 1 idle; the disk
        // busy 1.9 s of 2; 4 retransmits over 1,000 requests.
        let (s, t0) = series(&[(0, NODE.into()), (2000, later(2.0, 2.0, 1.9, 4.0))]);
        let f = s.findings(t0, t0 + Duration::from_secs(2), 1000);
        assert!((value(&f, "target_cpu_busy_percent") - 50.0).abs() < 1e-9);
        assert!((value(&f, "target_cpu_busiest_core_percent") - 100.0).abs() < 1e-9);
        assert!((value(&f, "target_disk_util_percent") - 95.0).abs() < 1e-9);
        assert!((value(&f, "target_retransmits_per_1k_ops") - 4.0).abs() < 1e-9);
        let codes: Vec<_> = f.saturated.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, ["target_core_bound", "disk_bound"]);
        let timeline = f
            .metrics
            .iter()
            .find(|m| m.name == "timeline_target_cpu_busy_percent")
            .unwrap();
        assert_eq!(timeline.samples.len(), 2);
        assert!(
            f.metrics
                .iter()
                .all(|m| m.label("watched") == Some("127.0.0.1:9100"))
        );
    }

    #[test]
    fn an_idle_target_is_not_saturated_and_a_window_inside_the_scrapes_is_interpolated() {
        let (s, t0) = series(&[(0, NODE.into()), (4000, later(4.0, 1.0, 0.0, 0.0))]);
        // The middle two seconds of four: half of the counters' growth.
        let f = s.findings(t0 + Duration::from_secs(1), t0 + Duration::from_secs(3), 10);
        assert!((value(&f, "target_cpu_busy_percent") - 12.5).abs() < 1e-9);
        assert!(f.saturated.is_empty());
    }

    #[test]
    fn garbage_and_an_empty_answer_are_told_apart() {
        assert_eq!(
            parse("<html>hello</html>\n", Instant::now()),
            Err(ScrapeError::NoSamples)
        );
        let s = parse(
            &format!("{NODE}<html>\nnot a sample at all\nx{{a=\"1\"}} 1\ny NaN\n"),
            Instant::now(),
        )
        .unwrap();
        assert_eq!(s.skipped_lines, 2);
        assert!(looks_like_sample("a:b_c{x=\"}\"} -1.5e3 1700000000000"));
        assert!(!looks_like_sample("9lives 1"));
        assert!(!looks_like_sample("Hello world"));
    }

    #[test]
    fn an_app_exporting_its_own_process_metrics_gives_server_cpu_per_request() {
        let body = |cpu: f64| {
            format!("process_cpu_seconds_total {cpu}\nprocess_resident_memory_bytes 1e6\n")
        };
        let (s, t0) = series(&[(0, body(1.0)), (1000, body(1.5))]);
        let f = s.findings(t0, t0 + Duration::from_secs(1), 500);
        assert!((value(&f, "server_cpu_per_op_ns") - 1e6).abs() < 1e-3);
        assert!((value(&f, "server_cpu_percent") - 50.0).abs() < 1e-9);
    }

    #[test]
    fn urls_are_checked() {
        assert!(check_url("http://127.0.0.1:9100/metrics").is_ok());
        assert!(
            check_url("https://x/metrics")
                .unwrap_err()
                .contains("plain http")
        );
        assert!(check_url("127.0.0.1:9100").unwrap_err().contains("http://"));
        assert!(check_url("http://").is_err());
        assert_eq!(source_name("http://h:9187/metrics"), "h:9187");
    }
}
