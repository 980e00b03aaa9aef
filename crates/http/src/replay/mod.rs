//! Access logs read back as requests, for `dyno http --replay FILE`.
//!
//! The data flow: [`Reader`] streams a log (plain or gzip) line by line and
//! turns each line into an [`Entry`] with the [`LogFormat`] given or
//! detected; [`Ordered`] puts entries that went a little backwards (nginx
//! stamps a request when it ends) back in time order within a bounded
//! window; [`Spreader`] turns stamps into offsets from the first request,
//! spreading the requests that share a whole-second stamp over that second;
//! [`Templates`] folds targets into path templates for per-endpoint counts.
//!
//! Nothing here collects the log: memory stays bounded by the reordering
//! window and one stamp group, whatever the file's length. HAR is the one
//! exception: a HAR file is one JSON document and is read whole.

mod feed;
mod format;
mod har;
mod nginx;
mod order;
mod template;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

pub use feed::Feed;
pub(crate) use feed::Item;
pub use feed::{
    DEFAULT_SCRUB, MAX_ENDPOINTS, OTHER_ENDPOINT, QUOTED_BAD_LINES, Replay, SAFE_METHODS, Summary,
    Window,
};
pub use format::{FormatError, JsonFields, LogFormat};
use nginx::StampCache;
pub use nginx::{NginxError, NginxFormat};
pub use order::{
    DEFAULT_MAX_BACK_US, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_GROUP, Ordered, ReplayError, Spread,
    Spreader,
};
pub use template::{TemplateError, Templates, template};

/// One request read from a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The 1-based line number in the file; for HAR, the entry's index + 1.
    pub line: u64,
    /// When the request was logged, in microseconds since the Unix epoch (UTC).
    pub at_us: i64,
    /// The stamp's resolution in microseconds: 1_000_000 for whole seconds
    /// (the common log format), 1_000 for milliseconds (`$msec`, ISO stamps
    /// with three decimals), 1 when finer.
    pub resolution_us: u64,
    /// The request method as logged (`GET` when the format has none).
    pub method: String,
    /// The path and query as logged, starting with `/`; an absolute URL is
    /// reduced to its path and query.
    pub target: String,
    /// The response status, when the log has it.
    pub status: Option<u16>,
    /// Request headers the log kept (`Referer`, `User-Agent`, `$http_*`, ...).
    pub headers: Vec<(String, String)>,
    /// The request body, when the log kept it.
    pub body: Option<Vec<u8>>,
}

/// A line that could not be read as a request. Reading goes on after it:
/// the caller counts these and quotes a few.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why} (the line reads: {text})")]
pub struct LineError {
    /// The 1-based line number (for HAR, the entry's index + 1).
    pub line: u64,
    /// The line itself, cut to 200 characters.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl LineError {
    /// Builds an error for `line`, keeping at most 200 characters of `text`.
    pub fn new(line: u64, text: &str, why: impl Into<String>) -> LineError {
        LineError {
            line,
            text: text.chars().take(200).collect(),
            why: why.into(),
        }
    }
}

/// Why a log could not be opened at all.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file could not be opened or its start could not be read.
    #[error("could not read the log '{}': {source}", path.display())]
    Io {
        /// The log's path (empty for a reader given by the caller).
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// No format was given and none could be recognised.
    #[error(
        "could not tell the format of the log '{}': {why}; name it with --log-format \
         (combined, common, json, har, or an nginx log_format string)",
        path.display()
    )]
    Detect {
        /// The log's path (empty for a reader given by the caller).
        path: PathBuf,
        /// What was seen.
        why: String,
    },
    /// The log is empty (or only blank lines).
    #[error("the log '{}' has no requests in it: it is empty or blank", path.display())]
    Empty {
        /// The log's path (empty for a reader given by the caller).
        path: PathBuf,
    },
    /// A HAR document that is not valid JSON or lacks `log.entries`.
    #[error("the HAR file '{}' cannot be read: {why}", path.display())]
    Har {
        /// The log's path (empty for a reader given by the caller).
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// A streaming reader of an access log: an iterator of entries, with a
/// [`LineError`] item for each line that does not parse.
///
/// Lines are read one at a time through a buffer, so memory does not grow
/// with the file, except for HAR, which is one JSON document read whole.
pub struct Reader {
    source: Source,
    lines_read: u64,
}

enum Source {
    // Boxed: the line state is much larger than the HAR iterator.
    Lines(Box<Lines>),
    Har(std::vec::IntoIter<Result<Entry, LineError>>),
}

/// The state of a line log being read.
struct Lines {
    input: Box<dyn BufRead + Send>,
    format: LogFormat,
    /// The first non-empty line, read for detection and not yet parsed.
    first: Option<(u64, String)>,
    /// Whether that first line was longer than [`MAX_LINE`].
    first_too_long: bool,
    buf: Vec<u8>,
    /// The last stamp read, for the lines that share it.
    stamps: StampCache,
    done: bool,
}

impl Lines {
    /// The next entry or bad line, counting every line read in `lines_read`.
    fn next_item(&mut self, lines_read: &mut u64) -> Option<Result<Entry, LineError>> {
        if let Some((number, line)) = self.first.take() {
            if self.first_too_long {
                return Some(Err(long_line(number, line.as_bytes())));
            }
            return Some(parse_numbered(
                &self.format,
                number,
                &line,
                &mut self.stamps,
            ));
        }
        while !self.done {
            self.buf.clear();
            match read_line(&mut self.input, &mut self.buf) {
                Ok(None) => self.done = true,
                Ok(Some(true)) => {
                    *lines_read += 1;
                    return Some(Err(long_line(*lines_read, &self.buf)));
                }
                Ok(Some(false)) => {
                    *lines_read += 1;
                    let line = line_text(&self.buf);
                    if !line.trim().is_empty() {
                        return Some(parse_numbered(
                            &self.format,
                            *lines_read,
                            &line,
                            &mut self.stamps,
                        ));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // A truncated gzip stream or a failing disk: report it
                    // once, on the line that could not be read, and stop.
                    self.done = true;
                    let why = format!("the log could not be read past this point: {e}");
                    return Some(Err(LineError::new(*lines_read + 1, "", why)));
                }
            }
        }
        None
    }
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let format = match &self.source {
            Source::Lines(lines) => lines.format.name(),
            Source::Har(_) => "har",
        };
        f.debug_struct("Reader")
            .field("format", &format)
            .field("lines_read", &self.lines_read)
            .finish()
    }
}

/// The gzip magic bytes; the extension is not trusted.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

impl Reader {
    /// Opens the log at `path`, gzip-compressed or not (told by its first
    /// bytes), in `format`, or in the format detected from the file when
    /// `None`: a `.har` extension is HAR, a first line starting with `{` is
    /// JSON lines, else the combined format if the first line parses as it,
    /// else the common format.
    pub fn open(path: &Path, format: Option<LogFormat>) -> Result<Reader, OpenError> {
        let file = File::open(path).map_err(|source| OpenError::Io {
            path: path.to_owned(),
            source,
        })?;
        let input = BufReader::with_capacity(64 * 1024, file);
        let is_har_name = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("har"))
            || path
                .to_string_lossy()
                .to_ascii_lowercase()
                .ends_with(".har.gz");
        let format = match format {
            None if is_har_name => Some(LogFormat::Har),
            other => other,
        };
        Reader::build(Box::new(input), format, path)
    }

    /// Reads a log from `input` (for tests and standard input); gzip is
    /// recognised by its first bytes as with [`Reader::open`], and the format
    /// is detected from the first line when `None`.
    pub fn from_read(
        input: impl BufRead + Send + 'static,
        format: Option<LogFormat>,
    ) -> Result<Reader, OpenError> {
        Reader::build(Box::new(input), format, Path::new(""))
    }

    /// How many lines (for HAR, entries) have been read so far, blank and
    /// bad ones included.
    pub fn lines_read(&self) -> u64 {
        self.lines_read
    }

    /// The format the log is read in.
    pub fn format_name(&self) -> &'static str {
        match &self.source {
            Source::Lines(lines) => lines.format.name(),
            Source::Har(_) => "har",
        }
    }

    fn build(
        mut input: Box<dyn BufRead + Send>,
        format: Option<LogFormat>,
        path: &Path,
    ) -> Result<Reader, OpenError> {
        let io_err = |source| OpenError::Io {
            path: path.to_owned(),
            source,
        };
        let head = input.fill_buf().map_err(io_err)?;
        if head.starts_with(&GZIP_MAGIC) {
            let decoder = flate2::bufread::MultiGzDecoder::new(input);
            input = Box::new(BufReader::with_capacity(64 * 1024, decoder));
        }
        if matches!(format, Some(LogFormat::Har)) {
            return Reader::read_har(input, path);
        }
        let mut buf = Vec::new();
        let mut lines_read = 0;
        let mut first_too_long = false;
        let first = loop {
            buf.clear();
            // A first line too long is kept cut: it fails to detect, or is
            // reported as too long.
            let Some(too_long) = read_line(&mut input, &mut buf).map_err(io_err)? else {
                break None;
            };
            first_too_long = too_long;
            lines_read += 1;
            let line = line_text(&buf);
            if !line.trim().is_empty() {
                break Some((lines_read, line.into_owned()));
            }
        };
        let format = match (format, &first) {
            (Some(format), _) => format,
            (None, None) => {
                return Err(OpenError::Empty {
                    path: path.to_owned(),
                });
            }
            (None, Some((_, line))) if looks_like_json_document(line) => {
                return Reader::read_har(prepend(line, input), path);
            }
            (None, Some((_, line))) => {
                LogFormat::detect(line).map_err(|why| OpenError::Detect {
                    path: path.to_owned(),
                    why,
                })?
            }
        };
        Ok(Reader {
            source: Source::Lines(Box::new(Lines {
                input,
                format,
                first,
                first_too_long,
                buf,
                stamps: StampCache::default(),
                done: false,
            })),
            lines_read,
        })
    }

    fn read_har(mut input: Box<dyn BufRead + Send>, path: &Path) -> Result<Reader, OpenError> {
        let mut text = Vec::new();
        input
            .read_to_end(&mut text)
            .map_err(|source| OpenError::Io {
                path: path.to_owned(),
                source,
            })?;
        let entries = har::parse(&text).map_err(|why| OpenError::Har {
            path: path.to_owned(),
            why,
        })?;
        Ok(Reader {
            lines_read: entries.len() as u64,
            source: Source::Har(entries.into_iter()),
        })
    }
}

impl Iterator for Reader {
    type Item = Result<Entry, LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.source {
            Source::Har(entries) => entries.next(),
            Source::Lines(lines) => lines.next_item(&mut self.lines_read),
        }
    }
}

/// The longest line read; the rest of a longer one is skipped, so a file
/// that is not a log (no line breaks) cannot fill the memory.
const MAX_LINE: usize = 1 << 20;

/// Reads one line into `buf`: `None` at the end, else whether the line was
/// longer than [`MAX_LINE`] (then `buf` holds its start, the rest skipped).
fn read_line(input: &mut Box<dyn BufRead + Send>, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    let n = input
        .by_ref()
        .take(MAX_LINE as u64)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    if n < MAX_LINE || buf.last() == Some(&b'\n') {
        return Ok(Some(false));
    }
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(Some(true));
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(Some(true));
            }
            None => {
                let len = available.len();
                input.consume(len);
            }
        }
    }
}

/// The error for a line longer than [`MAX_LINE`], quoting its start.
fn long_line(number: u64, start: &[u8]) -> LineError {
    let text = line_text(&start[..start.len().min(200)]);
    let why = format!("the line is longer than {MAX_LINE} bytes: is this an access log?");
    LineError::new(number, &text, why)
}

fn parse_numbered(
    format: &LogFormat,
    number: u64,
    line: &str,
    stamps: &mut StampCache,
) -> Result<Entry, LineError> {
    match format.parse_line_with(line, stamps) {
        Ok(mut entry) => {
            entry.line = number;
            Ok(entry)
        }
        Err(why) => Err(LineError::new(number, line, why)),
    }
}

/// A line's text without its line ending; bytes that are not UTF-8 become
/// replacement characters rather than failing the line. Borrowed from
/// `buf` when it is UTF-8, as log lines are: copying each line cost an
/// allocation per line.
fn line_text(buf: &[u8]) -> Cow<'_, str> {
    let mut end = buf.len();
    while end > 0 && (buf[end - 1] == b'\n' || buf[end - 1] == b'\r') {
        end -= 1;
    }
    // `from_utf8` checks ASCII a word at a time; the lossy decoder, which
    // borrows too when it can, goes chunk by chunk and cost twice as much.
    match std::str::from_utf8(&buf[..end]) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(&buf[..end]),
    }
}

/// A first line that is only `{` opens a pretty-printed JSON document,
/// which among the formats read here can only be HAR.
fn looks_like_json_document(line: &str) -> bool {
    line.trim() == "{"
}

fn prepend(line: &str, rest: Box<dyn BufRead + Send>) -> Box<dyn BufRead + Send> {
    let head = io::Cursor::new(format!("{line}\n").into_bytes());
    Box::new(BufReader::new(head.chain(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    const COMBINED: &str = "\
203.0.113.7 - - [10/Oct/2023:13:55:36 +0000] \"GET /index.html HTTP/1.1\" 200 612 \"-\" \"curl/8.4.0\"
2001:db8::1 - alice [10/Oct/2023:13:55:37 +0000] \"POST /api/users?x=1 HTTP/1.1\" 201 31 \"https://example.com/\" \"Mozilla/5.0 (X11; Linux x86_64)\"
";

    fn read_all(text: &str, format: Option<LogFormat>) -> (Vec<Entry>, Vec<LineError>) {
        let reader = Reader::from_read(Cursor::new(text.as_bytes().to_vec()), format).unwrap();
        let (mut ok, mut bad) = (Vec::new(), Vec::new());
        for item in reader {
            match item {
                Ok(e) => ok.push(e),
                Err(e) => bad.push(e),
            }
        }
        (ok, bad)
    }

    #[test]
    fn detects_combined_and_numbers_lines() {
        let reader = Reader::from_read(Cursor::new(COMBINED.as_bytes().to_vec()), None).unwrap();
        assert_eq!(reader.format_name(), "combined");
        let entries: Vec<Entry> = reader.map(Result::unwrap).collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].line, 1);
        assert_eq!(entries[1].line, 2);
        assert_eq!(entries[1].method, "POST");
        assert_eq!(entries[1].target, "/api/users?x=1");
        assert_eq!(entries[1].at_us - entries[0].at_us, 1_000_000);
    }

    #[test]
    fn detects_common_when_not_combined() {
        let text = "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326\n";
        let reader = Reader::from_read(Cursor::new(text.as_bytes().to_vec()), None).unwrap();
        assert_eq!(reader.format_name(), "common");
        let entries: Vec<Entry> = reader.map(Result::unwrap).collect();
        assert_eq!(entries[0].target, "/apache_pb.gif");
        assert_eq!(entries[0].status, Some(200));
    }

    #[test]
    fn detects_json_lines() {
        let text = "{\"time\":\"2023-11-14T22:13:20Z\",\"method\":\"GET\",\"path\":\"/a\"}\n";
        let reader = Reader::from_read(Cursor::new(text.as_bytes().to_vec()), None).unwrap();
        assert_eq!(reader.format_name(), "json");
    }

    #[test]
    fn refuses_an_unknown_format_with_a_hint() {
        let err = Reader::from_read(Cursor::new(b"hello world\n".to_vec()), None).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, OpenError::Detect { .. }));
        assert!(message.contains("--log-format"), "{message}");
    }

    #[test]
    fn refuses_an_empty_log() {
        let err = Reader::from_read(Cursor::new(b"\n  \n".to_vec()), None).unwrap_err();
        assert!(matches!(err, OpenError::Empty { .. }), "{err}");
    }

    #[test]
    fn skips_blank_lines_and_reports_bad_ones_by_number() {
        let text = format!(
            "\n{}\nthis is not a log line\n\n{}",
            COMBINED.lines().next().unwrap(),
            COMBINED.lines().nth(1).unwrap()
        );
        let reader = Reader::from_read(Cursor::new(text.into_bytes()), Some(LogFormat::Combined));
        let mut reader = reader.unwrap();
        let items: Vec<_> = reader.by_ref().collect();
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].as_ref().unwrap().line, 2);
        let bad = items[1].as_ref().unwrap_err();
        assert_eq!(bad.line, 3);
        assert_eq!(bad.text, "this is not a log line");
        assert_eq!(items[2].as_ref().unwrap().line, 5);
        assert_eq!(reader.lines_read(), 5);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_read_with_replacement_characters() {
        let mut text = b"10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"GET /a\xff HTTP/1.1\" 200 1 \"-\" \"-\"\n".to_vec();
        text.extend_from_slice(b"\xfe\xff\n");
        let reader = Reader::from_read(Cursor::new(text), Some(LogFormat::Combined)).unwrap();
        let items: Vec<_> = reader.collect();
        assert_eq!(items[0].as_ref().unwrap().target, "/a\u{fffd}");
        assert_eq!(items[1].as_ref().unwrap_err().text, "\u{fffd}\u{fffd}");
    }

    #[test]
    fn cuts_quoted_bad_lines_to_200_chars() {
        let long = "x".repeat(500);
        let (ok, bad) = read_all(&format!("{}{long}\n", COMBINED), Some(LogFormat::Combined));
        assert_eq!(ok.len(), 2);
        assert_eq!(bad[0].line, 3);
        assert_eq!(bad[0].text.chars().count(), 200);
    }

    #[test]
    fn a_line_without_end_is_cut_and_skipped() {
        // Too long as the first line (read for detection) and later on.
        let long = "x".repeat(3 * MAX_LINE);
        let text = format!("{long}\n{COMBINED}{long}");
        let (ok, bad) = read_all(&text, Some(LogFormat::Combined));
        assert_eq!(bad.iter().map(|e| e.line).collect::<Vec<_>>(), vec![1, 4]);
        assert!(bad[0].why.contains("longer than"), "{}", bad[0].why);
        assert!(bad[1].why.contains("longer than"), "{}", bad[1].why);
        assert_eq!(bad[1].text.len(), 200);
        assert_eq!(ok.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 3]);
    }

    #[test]
    fn reads_orders_and_spreads_end_to_end() {
        // nginx logs a slow request when it ends: line 2 began before line 1.
        let text = "\
10.0.0.1 - - [14/Nov/2023:22:13:21 +0000] \"GET /a HTTP/1.1\" 200 1 \"-\" \"k6\"
10.0.0.2 - - [14/Nov/2023:22:13:20 +0000] \"GET /slow HTTP/1.1\" 200 1 \"-\" \"k6\"
10.0.0.3 - - [14/Nov/2023:22:13:21 +0000] \"GET /b HTTP/1.1\" 200 1 \"-\" \"k6\"
";
        let reader = Reader::from_read(Cursor::new(text.as_bytes().to_vec()), None).unwrap();
        let spread: Vec<(u64, String)> = Spreader::new(Ordered::new(reader), Spread::Even)
            .map(|item| item.map(|(offset, e)| (offset, e.target)).unwrap())
            .collect();
        assert_eq!(
            spread,
            vec![
                (0, "/slow".to_owned()),
                (1_000_000, "/a".to_owned()),
                (1_500_000, "/b".to_owned())
            ]
        );
    }

    #[test]
    fn reads_gzip_by_magic_bytes_from_a_file() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(COMBINED.as_bytes()).unwrap();
        let bytes = gz.finish().unwrap();
        let dir = tempfile::tempdir().unwrap();
        // No .gz extension: the magic bytes decide.
        let path = dir.path().join("access.log");
        std::fs::write(&path, bytes).unwrap();
        let reader = Reader::open(&path, None).unwrap();
        let entries: Vec<Entry> = reader.map(Result::unwrap).collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].target, "/api/users?x=1");
    }

    #[test]
    fn reads_concatenated_gzip_members() {
        let mut bytes = Vec::new();
        for line in COMBINED.lines() {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            writeln!(gz, "{line}").unwrap();
            bytes.extend(gz.finish().unwrap());
        }
        let (ok, bad) = read_all_bytes(bytes);
        assert!(bad.is_empty());
        assert_eq!(ok.len(), 2);
    }

    fn read_all_bytes(bytes: Vec<u8>) -> (Vec<Entry>, Vec<LineError>) {
        let reader = Reader::from_read(Cursor::new(bytes), None).unwrap();
        let (ok, bad): (Vec<_>, Vec<_>) = reader.partition(Result::is_ok);
        let ok = ok.into_iter().map(Result::unwrap).collect();
        let bad = bad.into_iter().map(Result::unwrap_err).collect();
        (ok, bad)
    }

    #[test]
    fn a_truncated_gzip_stream_is_one_error_item() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(COMBINED.repeat(50).as_bytes()).unwrap();
        let mut bytes = gz.finish().unwrap();
        bytes.truncate(bytes.len() / 2);
        let (_, bad) = read_all_bytes(bytes);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].why.contains("could not be read"), "{}", bad[0].why);
    }

    #[test]
    fn opens_har_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.har");
        std::fs::write(&path, har::tests::SMALL_HAR).unwrap();
        let mut reader = Reader::open(&path, None).unwrap();
        assert_eq!(reader.format_name(), "har");
        assert_eq!(reader.lines_read(), 2);
        let first = reader.next().unwrap().unwrap();
        assert_eq!(first.line, 1);
        assert_eq!(first.target, "/api/items?page=2");
    }

    #[test]
    fn a_pretty_printed_document_without_extension_is_har() {
        let reader =
            Reader::from_read(Cursor::new(har::tests::SMALL_HAR.as_bytes().to_vec()), None);
        let entries: Vec<Entry> = reader.unwrap().map(Result::unwrap).collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].method, "POST");
    }

    #[test]
    fn open_names_a_missing_file() {
        let err = Reader::open(Path::new("/nonexistent/dir/access.log"), None).unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/dir/access.log"),
            "{err}"
        );
    }
}
