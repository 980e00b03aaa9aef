//! The replay's one reader: a thread that reads the log once
//! ([`Reader`] → [`Ordered`] → [`Spreader`]), keeps the requests a replay
//! sends (its window, its methods, its segment's lines), encodes each as a
//! [`RequestTemplate`] due at its offset ÷ speed, and hands request k of
//! this process to worker thread k mod T over a bounded channel. So the
//! file is parsed once whatever the threads, and memory holds a few
//! batches per thread, never the log.
//!
//! What it saw (lines, bad lines with the first few quoted, requests left
//! out and why, the log's own status mix and per-second profile, the path
//! templates) comes back as a [`Summary`] when the thread ends.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::{LogFormat, Ordered, Reader, Spread, Spreader, Templates};
use crate::request::{RequestSpec, RequestTemplate, Target};
use dyno_model::Segment;

/// The methods replayed unless `--methods` names others: the safe ones,
/// which change nothing on the target.
pub const SAFE_METHODS: [&str; 2] = ["GET", "HEAD"];

/// Headers never taken from a log by default: credentials of the users
/// whose requests were logged.
pub const DEFAULT_SCRUB: [&str; 2] = ["cookie", "authorization"];

/// Headers the replay always sets itself (the target's `Host`, the body's
/// length, the connection's handling), whatever the log says.
const OWN_HEADERS: [&str; 6] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
];

/// The path templates a run keeps apart; the rest count under
/// [`OTHER_ENDPOINT`].
pub const MAX_ENDPOINTS: usize = 50;

/// The name under which requests beyond [`MAX_ENDPOINTS`] templates count.
pub const OTHER_ENDPOINT: &str = "other";

/// Bad lines quoted in the report; the rest are counted.
pub const QUOTED_BAD_LINES: usize = 5;

/// Requests in one hand-off to a worker thread, at most.
const BATCH: usize = 64;

/// A batch is handed off before it spans more than this much of the
/// replay's time, so a sparse log's request never waits in a half-full
/// batch past its due time.
const BATCH_SPAN_NS: u64 = 10_000_000;

/// Batches waiting for each worker thread: what bounds the read-ahead.
const QUEUED_BATCHES: usize = 32;

/// Requests encoded recently, kept to be sent again as they are (a log
/// repeats its pages): at most this many, forgotten all at once when full.
/// Encoding a request anew cost the replay about 40% more client CPU per
/// request than `--url-file` (bench/replay.sh).
const ENCODED: usize = 4096;

/// The part of the log replayed, in seconds from its first request.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Window {
    pub from_s: f64,
    /// `None`: to the log's end.
    pub to_s: Option<f64>,
}

impl Window {
    /// Reads `FROM..TO`, each a duration from the log's first request read
    /// by `duration` (the CLI's: `90`, `90s`, `2m`, `1h30m`); either side
    /// may be left out (`..10m`, `5m..`).
    pub fn parse(
        text: &str,
        duration: impl Fn(&str) -> Result<std::time::Duration, String>,
    ) -> Result<Window, String> {
        let Some((from, to)) = text.split_once("..") else {
            return Err(format!(
                "'{text}' is not a window: give FROM..TO as times from the log's first request, e.g. 5m..10m, ..90s or 1h.."
            ));
        };
        let side = |s: &str| -> Result<Option<f64>, String> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            duration(s)
                .map(|d| Some(d.as_secs_f64()))
                .map_err(|e| format!("the window '{text}': {e}"))
        };
        let (from_s, to_s) = (side(from)?.unwrap_or(0.0), side(to)?);
        if let Some(to) = to_s
            && to <= from_s
        {
            return Err(format!(
                "the window '{text}' ends before it starts: give FROM..TO with FROM earlier"
            ));
        }
        Ok(Window { from_s, to_s })
    }

    fn holds(&self, offset_us: u64) -> Holds {
        let s = offset_us as f64 / 1e6;
        if s < self.from_s {
            Holds::Before
        } else if self.to_s.is_some_and(|to| s >= to) {
            Holds::After
        } else {
            Holds::In
        }
    }
}

enum Holds {
    Before,
    In,
    After,
}

/// What `--replay` asks for, as plain values.
#[derive(Debug, Clone)]
pub struct Replay {
    pub path: PathBuf,
    /// `None`: told from the file.
    pub format: Option<LogFormat>,
    /// Offsets are divided by it: 2 sends the log at twice its pace.
    pub speed: f64,
    pub spread: Spread,
    pub window: Window,
    /// Replays the log (its window) again when it ends, until the run's
    /// `-d` or `-n`.
    pub looped: bool,
    /// The methods sent, upper case; the others are left out and counted.
    pub methods: Vec<String>,
    /// Header names (lower case) not taken from the log.
    pub scrub: Vec<String>,
    pub templates: Templates,
}

impl Replay {
    /// `path` at its own pace, as the defaults have it.
    pub fn new(path: PathBuf) -> Replay {
        Replay {
            path,
            format: None,
            speed: 1.0,
            spread: Spread::Even,
            window: Window::default(),
            looped: false,
            methods: SAFE_METHODS.iter().map(|m| (*m).to_owned()).collect(),
            scrub: DEFAULT_SCRUB.iter().map(|h| (*h).to_owned()).collect(),
            templates: Templates::default(),
        }
    }
}

/// One request handed to a worker thread.
pub(crate) struct Item {
    /// When it is due, from the run's start.
    pub(crate) due_ns: u64,
    /// Shared by every request of the same method, target, headers and
    /// body that [`ENCODED`] still holds.
    pub(crate) request: std::sync::Arc<RequestTemplate>,
    /// Its path template's number in [`Summary::endpoints`].
    pub(crate) endpoint: u32,
}

/// What the reader saw of the log, once it has ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// The format the log was read in.
    pub format: String,
    /// Lines (HAR: entries) read, blank and bad ones included.
    pub lines: u64,
    /// Requests handed to the load; once the run is over, those that fell
    /// due in it (a run cut short does not count what was read ahead).
    pub requests: u64,
    /// Lines that could not be read as requests, or could not be sent
    /// (a target HTTP cannot carry), or were too far out of time order.
    pub bad: u64,
    /// The first [`QUOTED_BAD_LINES`] of them, with their line numbers.
    pub quoted: Vec<String>,
    /// Requests left out for their method (not in `--methods`).
    pub skipped_methods: BTreeMap<String, u64>,
    /// Requests outside `--window`.
    pub outside_window: u64,
    /// Requests of another segment's lines.
    pub other_segments: u64,
    /// Requests sent without a body whose method has one (POST, PUT,
    /// PATCH): the log kept no body.
    pub without_body: u64,
    /// The log's own statuses of the requests replayed.
    pub statuses: BTreeMap<u16, u64>,
    /// The log's requests per second of the replay (offset ÷ speed), from
    /// the window's start: what the replayed rate is drawn against.
    pub per_second: Vec<u64>,
    /// From the window's first request to its last, in the log's time
    /// (one pass).
    pub span_s: f64,
    /// Path templates by number; the last is [`OTHER_ENDPOINT`] when more
    /// than [`MAX_ENDPOINTS`] were seen.
    pub endpoints: Vec<String>,
    /// Times the log was read (more than one with `--loop`).
    pub passes: u32,
    /// The run ended (`-d`, `-n`, Ctrl-C) before the log did.
    pub cut: bool,
}

impl Summary {
    /// The log's busiest second of replay time, in requests per second.
    pub fn peak_rate(&self) -> u64 {
        self.per_second.iter().copied().max().unwrap_or(0)
    }
}

/// The reader thread and the receiving ends the worker threads take.
#[derive(Debug)]
pub struct Feed {
    receivers: Mutex<Vec<Option<mpsc::Receiver<Vec<Item>>>>>,
    reader: Mutex<Option<JoinHandle<Summary>>>,
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Item")
            .field("due_ns", &self.due_ns)
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl Feed {
    /// Opens the log and starts reading it for `threads` worker threads.
    /// Returns once the first request to replay is ready, so that a log
    /// that cannot be opened, has no request, or none in the window, is an
    /// error before any load.
    pub(crate) fn start(
        replay: &Replay,
        target: &Target,
        keep_alive: bool,
        threads: usize,
        segment: Segment,
    ) -> Result<Feed, String> {
        let reader =
            Reader::open(&replay.path, replay.format.clone()).map_err(|e| e.to_string())?;
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..threads.max(1))
            .map(|_| mpsc::channel::<Vec<Item>>(QUEUED_BATCHES))
            .unzip();
        let (ready_tx, ready_rx) = std_mpsc::sync_channel::<Result<(), String>>(1);
        let mut work = Work {
            replay: replay.clone(),
            target: target.clone(),
            keep_alive,
            segment,
            senders,
            pending: (0..threads.max(1)).map(|_| Vec::new()).collect(),
            summary: Summary {
                format: reader.format_name().to_owned(),
                ..Summary::default()
            },
            endpoints: HashMap::new(),
            encoded: HashMap::default(),
            ready: Some(ready_tx),
            next: 0,
            pass_origin_ns: 0,
        };
        let handle = std::thread::Builder::new()
            .name("dyno-replay".into())
            .spawn(move || {
                work.run(reader);
                work.summary
            })
            .map_err(|e| format!("could not start the replay's reader thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(why)) => {
                let _ = handle.join();
                return Err(why);
            }
            Err(_) => {
                return Err(match handle.join() {
                    Ok(_) => "the replay's reader ended without a word".to_owned(),
                    Err(_) => "the replay's reader thread panicked".to_owned(),
                });
            }
        }
        Ok(Feed {
            receivers: Mutex::new(receivers.into_iter().map(Some).collect()),
            reader: Mutex::new(Some(handle)),
        })
    }

    /// Checks, before a run, that `replay`'s log opens and holds a request
    /// to send: reads it up to its first such request (the whole log only
    /// when it has none), and lets the reader go.
    pub fn probe(replay: &Replay, target: &Target) -> Result<(), String> {
        Feed::start(replay, target, true, 1, Segment::WHOLE).map(drop)
    }

    /// Worker thread `thread`'s receiving end (taken once).
    pub(crate) fn take(&self, thread: usize) -> Option<mpsc::Receiver<Vec<Item>>> {
        self.receivers
            .lock()
            .ok()?
            .get_mut(thread)
            .and_then(Option::take)
    }

    /// Waits for the reader (which stops at once when the workers have
    /// dropped their ends) and returns what it saw.
    pub(crate) fn finish(&self) -> Summary {
        if let Ok(mut receivers) = self.receivers.lock() {
            receivers.clear();
        }
        let handle = self.reader.lock().ok().and_then(|mut h| h.take());
        handle.and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

/// The reader thread's state.
struct Work {
    replay: Replay,
    target: Target,
    keep_alive: bool,
    segment: Segment,
    senders: Vec<mpsc::Sender<Vec<Item>>>,
    pending: Vec<Vec<Item>>,
    summary: Summary,
    endpoints: HashMap<String, u32>,
    /// Requests encoded lately, by their line's method, target, headers
    /// and body ([`ENCODED`]).
    encoded: HashMap<EncodedKey, (std::sync::Arc<RequestTemplate>, u32), BuildFastHasher>,
    /// Told once: the first request is ready, or there is none.
    ready: Option<std_mpsc::SyncSender<Result<(), String>>>,
    /// The number, among all requests replayed by every segment, of the
    /// next one.
    next: u64,
    /// Where this pass's offsets start (`--loop`).
    pass_origin_ns: u64,
}

/// Why reading stopped.
enum Ended {
    /// The log (or its window) ended.
    Log,
    /// The workers are gone: the run is over.
    Run,
}

impl Work {
    fn run(&mut self, mut reader: Reader) {
        loop {
            self.summary.passes += 1;
            let numbered_before = self.next;
            let (ended, last_ns) = self.pass(reader);
            if matches!(ended, Ended::Run) {
                self.summary.cut = true;
                return;
            }
            if !self.replay.looped || self.next == numbered_before {
                break;
            }
            // The next pass starts one mean gap after this one's last,
            // both of every segment's requests, so that segments keep one
            // timetable across passes too.
            let this_pass = self.next - numbered_before;
            let gap = last_ns.saturating_sub(self.pass_origin_ns) / this_pass.max(1);
            self.pass_origin_ns = last_ns + gap.max(1);
            reader = match Reader::open(&self.replay.path, self.replay.format.clone()) {
                Ok(r) => r,
                Err(e) => {
                    self.bad(e.to_string());
                    break;
                }
            };
        }
        if self.flush_all().is_err() {
            self.summary.cut = true;
        }
        if let Some(ready) = self.ready.take() {
            let s = &self.summary;
            let seen = s.requests
                + s.bad
                + s.outside_window
                + s.other_segments
                + s.skipped_methods.values().sum::<u64>();
            let why = if seen == 0 {
                format!(
                    "the log '{}' has no requests in it",
                    self.replay.path.display()
                )
            } else {
                self.nothing_to_send()
            };
            let _ = ready.send(Err(why));
        }
    }

    /// Why a log with lines has nothing to send.
    fn nothing_to_send(&self) -> String {
        let s = &self.summary;
        let mut parts = Vec::new();
        if s.bad > 0 {
            parts.push(format!("{} bad lines", s.bad));
        }
        if s.outside_window > 0 {
            parts.push(format!("{} outside --window", s.outside_window));
        }
        let skipped: u64 = s.skipped_methods.values().sum();
        if skipped > 0 {
            let methods: Vec<&str> = s.skipped_methods.keys().map(String::as_str).collect();
            parts.push(format!(
                "{skipped} of methods left out ({}; --methods adds them)",
                methods.join(", ")
            ));
        }
        if s.other_segments > 0 {
            parts.push(format!("{} of other segments", s.other_segments));
        }
        let mut why = format!(
            "nothing to replay from '{}': of its {} lines, {}",
            self.replay.path.display(),
            s.lines,
            if parts.is_empty() {
                "none is a request".to_owned()
            } else {
                parts.join(", ")
            }
        );
        if let Some(first) = s.quoted.first() {
            why.push_str(&format!("; the first bad one: {first}"));
        }
        why
    }

    /// One pass over the log; the last due time of the pass's requests
    /// (every segment's, not only those handed off here).
    fn pass(&mut self, reader: Reader) -> (Ended, u64) {
        let mut last_ns = self.pass_origin_ns;
        // Offsets count from the window's first request, which every
        // segment sees alike, so that segments keep one timetable.
        let mut origin_us: Option<u64> = None;
        let base = self.summary.lines;
        let counter = LinesRead::default();
        let spread = Spreader::new(
            Ordered::new(Counting(reader, counter.clone())),
            self.replay.spread,
        );
        let mut ended = Ended::Log;
        for item in spread {
            self.summary.lines = base + counter.get();
            let (offset_us, entry) = match item {
                Ok(x) => x,
                Err(e) => {
                    // Every segment reads every line: a bad one is counted
                    // by the segment its line number falls to, once.
                    if self.segment.owns(e.line()) {
                        self.bad(e.to_string());
                    }
                    continue;
                }
            };
            match self.replay.window.holds(offset_us) {
                Holds::Before => {
                    self.summary.outside_window += 1;
                    continue;
                }
                Holds::After => {
                    // Offsets never decrease: the rest is outside too, and
                    // is not read.
                    self.summary.outside_window += 1;
                    break;
                }
                Holds::In => {}
            }
            let in_window_us = offset_us - *origin_us.get_or_insert(offset_us);
            // As comparing `to_ascii_uppercase()`, without its copy per line.
            let kept = self
                .replay
                .methods
                .iter()
                .any(|m| is_upper_case_of(m, &entry.method));
            if !kept {
                let method = entry.method.to_ascii_uppercase();
                *self.summary.skipped_methods.entry(method).or_default() += 1;
                continue;
            }
            let k = self.next;
            self.next += 1;
            let due_ns =
                self.pass_origin_ns + (in_window_us as f64 * 1e3 / self.replay.speed) as u64;
            last_ns = due_ns;
            if !self.segment.owns(k) {
                self.summary.other_segments += 1;
                // Templates are numbered in the order the whole log shows
                // them, so that every segment keeps the same ones apart.
                if self.summary.endpoints.len() <= MAX_ENDPOINTS {
                    self.endpoint(&entry.target);
                }
                continue;
            }
            let (line, status) = (entry.line, entry.status);
            let bodiless = entry.body.is_none() && crate::request::sends_content(&entry.method);
            let (request, endpoint) = match self.encoded(entry) {
                Ok(r) => r,
                Err(why) => {
                    self.bad(format!("line {line}: {why}"));
                    continue;
                }
            };
            self.note(status, bodiless, due_ns, in_window_us);
            // Request k of this process goes to thread k mod T.
            let thread = (self.summary.requests % self.senders.len() as u64) as usize;
            self.summary.requests += 1;
            if self
                .hand(
                    thread,
                    Item {
                        due_ns,
                        request,
                        endpoint,
                    },
                )
                .is_err()
            {
                ended = Ended::Run;
                break;
            }
        }
        self.summary.lines = base + counter.get();
        (ended, last_ns)
    }

    /// Counts what the log says of a request kept.
    fn note(&mut self, status: Option<u16>, bodiless: bool, due_ns: u64, in_window_us: u64) {
        if let Some(status) = status {
            *self.summary.statuses.entry(status).or_default() += 1;
        }
        if bodiless {
            self.summary.without_body += 1;
        }
        let second = (due_ns / 1_000_000_000) as usize;
        if second < 1 << 24 {
            if self.summary.per_second.len() <= second {
                self.summary.per_second.resize(second + 1, 0);
            }
            self.summary.per_second[second] += 1;
        }
        self.summary.span_s = self.summary.span_s.max(in_window_us as f64 / 1e6);
    }

    fn bad(&mut self, why: String) {
        self.summary.bad += 1;
        if self.summary.quoted.len() < QUOTED_BAD_LINES {
            self.summary.quoted.push(why);
        }
    }

    /// The request as it goes on the wire, and its path template: encoded
    /// lately ([`ENCODED`]) or now.
    fn encoded(
        &mut self,
        entry: super::Entry,
    ) -> Result<(std::sync::Arc<RequestTemplate>, u32), String> {
        let key = EncodedKey {
            method: entry.method,
            target: entry.target,
            headers: entry.headers,
            body: entry.body,
        };
        if let Some((request, endpoint)) = self.encoded.get(&key) {
            return Ok((std::sync::Arc::clone(request), *endpoint));
        }
        let request = std::sync::Arc::new(self.encode(&key)?);
        let endpoint = self.endpoint(&key.target);
        if self.encoded.len() >= ENCODED {
            self.encoded.clear();
        }
        self.encoded
            .insert(key, (std::sync::Arc::clone(&request), endpoint));
        Ok((request, endpoint))
    }

    /// The request as it goes on the wire: the log's method, target, kept
    /// headers and body, to the run's target.
    fn encode(&self, entry: &EncodedKey) -> Result<RequestTemplate, String> {
        // A logged `{` is a brace, not a placeholder.
        let path = if entry.target.contains(['{', '}']) {
            entry.target.replace('{', "{{").replace('}', "}}")
        } else {
            entry.target.clone()
        };
        let headers = entry
            .headers
            .iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                !OWN_HEADERS.contains(&name.as_str()) && !self.replay.scrub.contains(&name)
            })
            .cloned()
            .collect();
        let spec = RequestSpec {
            method: entry.method.clone(),
            path,
            headers,
            body: entry.body.clone(),
            keep_alive: self.keep_alive,
        };
        RequestTemplate::new(&self.target, &spec).map_err(|e| format!("cannot be sent: {e}"))
    }

    /// The number of `target`'s path template.
    fn endpoint(&mut self, target: &str) -> u32 {
        let name = self.replay.templates.template(target);
        if let Some(&n) = self.endpoints.get(&name) {
            return n;
        }
        let names = &mut self.summary.endpoints;
        if names.len() < MAX_ENDPOINTS {
            names.push(name.clone());
            let n = (names.len() - 1) as u32;
            self.endpoints.insert(name, n);
            return n;
        }
        if names.len() == MAX_ENDPOINTS {
            names.push(OTHER_ENDPOINT.to_owned());
        }
        MAX_ENDPOINTS as u32
    }

    /// Queues `item` for `thread`, handing the batch off when it is full
    /// or spans [`BATCH_SPAN_NS`]. `Err`: the run is over.
    fn hand(&mut self, thread: usize, item: Item) -> Result<(), ()> {
        let batch = &mut self.pending[thread];
        if batch
            .first()
            .is_some_and(|first| item.due_ns.saturating_sub(first.due_ns) > BATCH_SPAN_NS)
        {
            self.flush(thread)?;
        }
        self.pending[thread].push(item);
        if self.pending[thread].len() >= BATCH {
            self.flush(thread)?;
        }
        Ok(())
    }

    fn flush(&mut self, thread: usize) -> Result<(), ()> {
        let batch = std::mem::replace(&mut self.pending[thread], Vec::with_capacity(BATCH));
        if batch.is_empty() {
            return Ok(());
        }
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(Ok(()));
        }
        self.senders[thread].blocking_send(batch).map_err(|_| ())
    }

    fn flush_all(&mut self) -> Result<(), ()> {
        for t in 0..self.pending.len() {
            self.flush(t)?;
        }
        Ok(())
    }
}

/// Whether `method`, upper-cased, is `upper` (which is upper case).
fn is_upper_case_of(upper: &str, method: &str) -> bool {
    upper.len() == method.len()
        && upper
            .bytes()
            .zip(method.bytes())
            .all(|(u, m)| u == m.to_ascii_uppercase())
}

/// The hasher of the encoded requests' cache: foldhash's fast one. The
/// default SipHash of each line's method, target and headers was the
/// reader thread's largest cost after parsing (perf on bench/replay.sh).
/// The keys come from the user's own log and the cache is bounded
/// ([`ENCODED`]), so resisting crafted collisions buys nothing.
type BuildFastHasher = foldhash::fast::RandomState;

/// What makes two logged requests the same on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EncodedKey {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

/// The count of lines a [`Reader`] has read, seen from outside the
/// iterator chain that owns it.
#[derive(Debug, Clone, Default)]
struct LinesRead(std::rc::Rc<std::cell::Cell<u64>>);

impl LinesRead {
    fn get(&self) -> u64 {
        self.0.get()
    }
}

/// A [`Reader`] that keeps [`LinesRead`] current.
struct Counting(Reader, LinesRead);

impl Iterator for Counting {
    type Item = <Reader as Iterator>::Item;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.0.next();
        self.1.0.set(self.0.lines_read());
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(s: &str) -> Result<std::time::Duration, String> {
        s.trim_end_matches('s')
            .parse::<f64>()
            .map(std::time::Duration::from_secs_f64)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_window_reads_either_side_or_both() {
        assert_eq!(
            Window::parse("5..10", seconds).unwrap(),
            Window {
                from_s: 5.0,
                to_s: Some(10.0)
            }
        );
        assert_eq!(Window::parse("..9s", seconds).unwrap().to_s, Some(9.0));
        assert_eq!(Window::parse("3s..", seconds).unwrap().to_s, None);
        assert!(
            Window::parse("5", seconds)
                .unwrap_err()
                .contains("FROM..TO")
        );
        assert!(
            Window::parse("9..2", seconds)
                .unwrap_err()
                .contains("before it starts")
        );
        assert!(
            Window::parse("x..2", seconds)
                .unwrap_err()
                .contains("the window 'x..2'")
        );
        let w = Window::parse("1..2", seconds).unwrap();
        assert!(matches!(w.holds(999_999), Holds::Before));
        assert!(matches!(w.holds(1_000_000), Holds::In));
        assert!(matches!(w.holds(2_000_000), Holds::After));
    }

    #[test]
    fn a_method_is_kept_as_its_upper_case() {
        assert!(is_upper_case_of("GET", "get"));
        assert!(is_upper_case_of("GET", "GET"));
        assert!(is_upper_case_of("M-SEARCH", "m-search"));
        assert!(!is_upper_case_of("GET", "GETS"));
        assert!(!is_upper_case_of("HEAD", "HEAP"));
        assert!(!is_upper_case_of("get", "get"));
    }

    /// A log read for two threads: the requests alternate between them in
    /// order, a repeated request is encoded once and shared, and the
    /// summary counts what was left out.
    #[test]
    fn the_feed_hands_requests_round_robin_and_shares_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let line = |s: u32, m: &str, p: &str| {
            format!(
                "1.2.3.4 - - [30/Nov/2026:10:00:0{s} +0000] \"{m} {p} HTTP/1.1\" 200 1 \"-\" \"-\"\n"
            )
        };
        let log = [
            line(0, "GET", "/a"),
            line(0, "GET", "/users/1"),
            line(1, "POST", "/a"),
            line(1, "GET", "/a"),
            line(2, "GET", "/users/2"),
        ]
        .concat();
        std::fs::write(&path, log).unwrap();
        let (target, _) = crate::request::parse_url("http://127.0.0.1:9/").unwrap();
        let feed = Feed::start(&Replay::new(path), &target, true, 2, Segment::WHOLE).unwrap();
        let drain = |t: usize| {
            let mut rx = feed.take(t).unwrap();
            let mut items = Vec::new();
            while let Some(batch) = rx.blocking_recv() {
                items.extend(batch);
            }
            items
        };
        let (zero, one) = (drain(0), drain(1));
        let summary = feed.finish();
        assert_eq!(summary.requests, 4);
        assert_eq!(summary.skipped_methods.get("POST"), Some(&1));
        assert_eq!(summary.endpoints, ["/a", "/users/{id}"]);
        let dues = |items: &[Item]| items.iter().map(|i| i.due_ns).collect::<Vec<_>>();
        // The POST left out still had its place in its second's spread.
        assert_eq!(dues(&zero), [0, 1_500_000_000]);
        assert_eq!(dues(&one), [500_000_000, 2_000_000_000]);
        // Both GET /a are one encoded request.
        assert!(std::sync::Arc::ptr_eq(&zero[0].request, &zero[1].request));
        assert_eq!(one[1].endpoint, 1);
    }
}
