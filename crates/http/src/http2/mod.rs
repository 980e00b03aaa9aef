//! dyno's HTTP/2 client connection (RFC 9113), without I/O: bytes read go
//! into [`Session::receive`], which reports what they mean for each stream
//! as [`Event`]s; frames to send pile up in [`Session::out`] for the
//! driver to write. The driver (`engine::h2`) owns the socket and the
//! streams' bookkeeping (`T`, one per open stream).
//!
//! Why dyno owns this instead of using the `h2` crate (issue 32, measured
//! with `bench/h2-vs-h2load.sh` and `bench/profile.sh h2`): `h2` copies
//! every DATA frame out of its read buffer into a body queue per stream,
//! re-allocates that buffer under nginx's 8 KiB frames, decodes every
//! header block into a header map, and wakes a stream's task per read; a
//! load generator needs none of that. Here the frames are read in place
//! from the driver's one buffer per connection; a DATA payload is counted
//! (and copied only for a scenario step that reads it) as it streams by,
//! whatever its size; header blocks are encoded and decoded by `httlib-hpack`
//! (a request's block is reused once every field of it is indexed). `h2`'s server side stays the
//! conformance reference of the tests (`crates/http/tests/h2.rs`).
//!
//! What it does of the protocol: the preface and SETTINGS both ways
//! (stream limit, initial window, frame size, header table size), flow
//! control both ways (WINDOW_UPDATE once half a window is used; request
//! bodies wait for the server's windows), header blocks over
//! CONTINUATION frames, padding, interim (1xx) heads and trailers, PING,
//! RST_STREAM and GOAWAY (streams above its last stream id come back as
//! unprocessed). Push is refused in the client's SETTINGS, so a
//! PUSH_PROMISE is a protocol error. Priorities are ignored.

pub(crate) mod frame;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::Bytes;

use self::frame::*;

/// A stream's or the connection's receive window: what the server may
/// send before the client's WINDOW_UPDATE. Nothing is buffered per stream
/// (DATA is counted as it is read), so a large window costs no memory and
/// spares the server waiting for updates, as h2load's 2^30 - 1 does.
pub(crate) const STREAM_WINDOW: u32 = (1 << 30) - 1;
pub(crate) const CONNECTION_WINDOW: u32 = (1 << 30) - 1;

/// A header field: name and value.
pub(crate) type Field = (Box<[u8]>, Box<[u8]>);

/// One request as the session sends it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// Pseudo-header fields first, then the others, names in lower case.
    pub(crate) fields: Vec<Field>,
    pub(crate) body: Option<Bytes>,
    /// The header fields' plain size (name and value bytes), as h2load
    /// adds them up.
    pub(crate) plain: u64,
    /// The same request is sent again and again (a static template's
    /// index): its header block can be reused once it stops changing.
    pub(crate) key: Option<usize>,
}

impl Request {
    /// The request's fields fit the encoder's table together, so that
    /// after one encoding every field is indexed and a second encoding
    /// changes nothing in the table (which makes reusing it sound).
    fn fits(&self, table: usize) -> bool {
        self.fields
            .iter()
            .map(|(n, v)| n.len() + v.len() + 32)
            .sum::<usize>()
            <= table
    }
}

/// What a header block says that the session needs.
#[derive(Debug, Clone, Copy, Default)]
struct Decoded {
    status: Option<u16>,
    /// The fields' plain size: name and value bytes.
    plain: u64,
    /// `content-length`.
    length: Option<u64>,
}

/// What the bytes read meant for a stream.
pub(crate) enum Event<'a, T> {
    /// The server's SETTINGS came: it speaks HTTP/2, and its stream limit
    /// is known (the first time only).
    Ready,
    /// A stream's final head: its status, the plain size of its fields,
    /// its body's announced length, and, for a session that keeps them,
    /// the fields (but the pseudo-fields) as `name: value\r\n` lines.
    Head {
        stream: &'a mut T,
        status: u16,
        plain: u64,
        length: Option<u64>,
        fields: &'a [u8],
    },
    /// Body bytes of a stream, in order, as they stream by.
    Data { stream: &'a mut T, data: &'a [u8] },
    /// A stream's answer is complete.
    End { stream: T },
    /// A stream ended without its answer.
    Failed { stream: T, why: Failure },
    /// The server sent GOAWAY: no new stream goes on this connection.
    GoAway { code: u32 },
}

/// Why a stream ended without its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server reset it (RST_STREAM) with this code.
    Reset(u32),
    /// Its answer broke the protocol (no status, DATA before the head, a
    /// zero window increment); the client reset it, the connection stays.
    Malformed,
    /// Above the last stream id of the server's GOAWAY: not processed, so
    /// it can go again on another connection (§6.8).
    Unprocessed,
}

/// Why the connection cannot go on; the session has queued a GOAWAY
/// saying so where that applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// The server's first frame is not SETTINGS: it does not speak
    /// HTTP/2 (or not with prior knowledge).
    NotHttp2(String),
    /// The server broke the protocol.
    Protocol(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotHttp2(why) | Error::Protocol(why) => f.write_str(why),
        }
    }
}

/// Stream ids are small odd numbers, already spread: hashed as they are.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u32 keys")
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Streams<T> = HashMap<u32, Open<T>, BuildHasherDefault<IdHasher>>;

/// An open stream.
struct Open<T> {
    data: T,
    /// What the server's window lets the client still send on it.
    send_window: i64,
    /// Request body bytes not yet sent (waiting for a window), from `at`.
    body: Option<(Bytes, usize)>,
    /// Body bytes received and not yet given back by WINDOW_UPDATE.
    unacked: u32,
    /// The final (non-1xx) head has come.
    headed: bool,
}

/// Where the reader is in the byte stream.
enum Reading {
    /// A frame header, `have` bytes of it so far.
    Head { have: usize },
    /// A DATA frame's payload, streamed.
    Data(DataFrame),
    /// Another frame's payload, gathered whole into `frame`.
    Whole(Head),
}

struct DataFrame {
    stream: u32,
    end_stream: bool,
    /// Padded: the pad length byte is still to come.
    pad_length_due: bool,
    /// The frame's payload length.
    len: usize,
    data_left: usize,
    pad_left: usize,
}

/// The server's settings as they stand.
struct Peer {
    max_streams: Option<usize>,
    initial_window: i64,
    max_frame: usize,
}

/// One HTTP/2 client connection's protocol state.
pub(crate) struct Session<T> {
    /// Frames to send, in order; the driver writes and clears them.
    pub(crate) out: Vec<u8>,
    /// Header-block bytes (HEADERS and CONTINUATION payloads) read and
    /// written, for HPACK's savings; the driver takes them.
    pub(crate) header_block_read: u64,
    pub(crate) header_block_written: u64,
    encoder: httlib_hpack::Encoder<'static>,
    decoder: httlib_hpack::Decoder<'static>,
    /// The header block being decoded (the decoder consumes it), and its
    /// fields.
    hpack_in: Vec<u8>,
    decoded: Vec<(Vec<u8>, Vec<u8>, u8)>,
    /// The last block decoded, and what it meant (its fields are still in
    /// `fields`) where decoding it again would mean the same and leave the
    /// decoder's table as it is.
    known_block: Vec<u8>,
    known: Option<Decoded>,
    /// What the decodes of `known_block` in a row, up to the last, inserted
    /// into the decoder's table (RFC 7541 §4.1 sizes).
    run_inserted: usize,
    /// Header blocks decoded in full (not taken as known).
    blocks_decoded: u64,
    /// The encoder's table size the server allows: the client signals
    /// a change at the start of the next header block.
    table_size: usize,
    table_size_update: Option<usize>,
    peer: Peer,
    ready: bool,
    send_window: i64,
    /// What the server may still send on the connection.
    recv_window: i64,
    recv_unacked: u32,
    reading: Reading,
    head: [u8; HEADER_LEN],
    /// A whole frame's payload being gathered.
    frame: Vec<u8>,
    /// A header block being gathered over CONTINUATION frames: its stream
    /// (0: none), and whether its HEADERS ended the stream.
    block: Vec<u8>,
    block_stream: u32,
    block_end_stream: bool,
    /// The last header block's fields as lines, with `keep_fields`.
    fields: Vec<u8>,
    keep_fields: bool,
    next_id: u32,
    streams: Streams<T>,
    goaway: bool,
    /// The last request encoded: its key, how many times in a row, and
    /// its block.
    last_block: Option<(usize, u32, Vec<u8>)>,
    scratch: Vec<u8>,
}

impl<T> Session<T> {
    /// A session that has queued the client's preface: the magic, its
    /// SETTINGS (no push, the stream window) and the connection window.
    /// `keep_fields`: heads carry their fields as lines (a scenario's steps
    /// read them); otherwise that is not worth writing per answer.
    pub(crate) fn new(keep_fields: bool) -> Session<T> {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(PREFACE);
        write_settings(
            &mut out,
            &[
                (SETTINGS_ENABLE_PUSH, 0),
                (SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            ],
        );
        write_window_update(&mut out, 0, CONNECTION_WINDOW - DEFAULT_WINDOW as u32);
        Session {
            out,
            header_block_read: 0,
            header_block_written: 0,
            encoder: httlib_hpack::Encoder::default(),
            decoder: httlib_hpack::Decoder::default(),
            hpack_in: Vec::new(),
            decoded: Vec::new(),
            known_block: Vec::new(),
            known: None,
            run_inserted: 0,
            blocks_decoded: 0,
            table_size: 4096,
            table_size_update: None,
            peer: Peer {
                max_streams: None,
                initial_window: DEFAULT_WINDOW,
                max_frame: MAX_FRAME,
            },
            ready: false,
            send_window: DEFAULT_WINDOW,
            recv_window: i64::from(CONNECTION_WINDOW),
            recv_unacked: 0,
            reading: Reading::Head { have: 0 },
            head: [0; HEADER_LEN],
            frame: Vec::new(),
            block: Vec::new(),
            block_stream: 0,
            block_end_stream: false,
            fields: Vec::new(),
            keep_fields,
            next_id: 1,
            streams: Streams::default(),
            goaway: false,
            last_block: None,
            scratch: Vec::new(),
        }
    }

    /// The server's SETTINGS have come.
    pub(crate) fn ready(&self) -> bool {
        self.ready
    }

    /// The server's limit of concurrent streams, once its SETTINGS gave one.
    pub(crate) fn max_streams(&self) -> Option<usize> {
        self.peer.max_streams
    }

    /// Streams open now.
    pub(crate) fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// The server sent GOAWAY (or the stream ids ran out): no new stream.
    pub(crate) fn closing(&self) -> bool {
        self.goaway || self.next_id > MAX_WINDOW as u32
    }

    /// A new stream may open now: one before the server's SETTINGS are in
    /// (opening more could exceed a lower limit and have them refused),
    /// then as many as its limit allows, and none after a GOAWAY.
    pub(crate) fn can_open(&self) -> bool {
        !self.closing()
            && if self.ready {
                self.peer
                    .max_streams
                    .is_none_or(|max| self.streams.len() < max)
            } else {
                self.streams.is_empty()
            }
    }

    /// Opens a stream for `request`: queues its HEADERS (and CONTINUATION
    /// frames past the server's frame size), then as much of its body as
    /// the windows allow.
    pub(crate) fn open(&mut self, request: &Request, data: T) -> u32 {
        debug_assert!(self.can_open());
        let id = self.next_id;
        self.next_id += 2;
        let block = self.encode(request);
        let end = if request.body.is_none() {
            END_STREAM
        } else {
            0
        };
        let max = self.peer.max_frame;
        self.header_block_written += block.len() as u64;
        let mut chunks = block.chunks(max).peekable();
        let mut kind = HEADERS;
        // An empty block still needs its one HEADERS frame.
        let first = chunks.next().unwrap_or_default();
        let mut chunk = first;
        loop {
            let last = chunks.peek().is_none();
            let flags = if kind == HEADERS { end } else { 0 } | if last { END_HEADERS } else { 0 };
            write_head(&mut self.out, chunk.len(), kind, flags, id);
            self.out.extend_from_slice(chunk);
            match chunks.next() {
                Some(next) => {
                    chunk = next;
                    kind = CONTINUATION;
                }
                None => break,
            }
        }
        self.scratch = block;
        let open = Open {
            data,
            send_window: self.peer.initial_window,
            body: request.body.clone().map(|b| (b, 0)),
            unacked: 0,
            headed: false,
        };
        self.streams.insert(id, open);
        if request.body.is_some() {
            self.send_body(id);
        }
        id
    }

    /// The request's header block. A request sent again and again is
    /// encoded until its block comes out the same twice in a row with
    /// nothing else encoded between (every field is then indexed, and
    /// encoding it changes nothing), and that block is reused.
    fn encode(&mut self, request: &Request) -> Vec<u8> {
        let mut block = std::mem::take(&mut self.scratch);
        block.clear();
        if let Some(size) = self.table_size_update.take() {
            // A dynamic table size update (RFC 7541 §6.3).
            let _ = self
                .encoder
                .update_max_dynamic_size(size as u32, &mut block);
        }
        if let (Some(key), Some((last, times, reused))) = (request.key, &self.last_block)
            && key == *last
            && *times >= 2
            && block.is_empty()
        {
            block.extend_from_slice(reused);
            return block;
        }
        // Every field is indexed (as nghttp2 does), so the next request's
        // block is all indexes; values are Huffman-coded.
        let flags = httlib_hpack::Encoder::BEST_FORMAT
            | httlib_hpack::Encoder::WITH_INDEXING
            | httlib_hpack::Encoder::HUFFMAN_VALUE;
        for (name, value) in &request.fields {
            let _ = self
                .encoder
                .encode((name.to_vec(), value.to_vec(), flags), &mut block);
        }
        self.last_block = match (request.key, self.last_block.take()) {
            (Some(key), Some((last, times, mut reused)))
                if key == last && request.fits(self.table_size) =>
            {
                let times = if reused == block { times + 1 } else { 1 };
                reused.clear();
                reused.extend_from_slice(&block);
                Some((key, times, reused))
            }
            (Some(key), _) if request.fits(self.table_size) => Some((key, 1, block.clone())),
            _ => None,
        };
        block
    }

    /// Queues what the windows allow of stream `id`'s pending body.
    fn send_body(&mut self, id: u32) {
        let Some(open) = self.streams.get_mut(&id) else {
            return;
        };
        while let Some((body, at)) = &mut open.body {
            let left = body.len() - *at;
            let n = left
                .min(self.peer.max_frame)
                .min(open.send_window.max(0) as usize)
                .min(self.send_window.max(0) as usize);
            if n == 0 && left > 0 {
                return;
            }
            let end = if n == left { END_STREAM } else { 0 };
            write_head(&mut self.out, n, DATA, end, id);
            self.out.extend_from_slice(&body[*at..*at + n]);
            *at += n;
            open.send_window -= n as i64;
            self.send_window -= n as i64;
            if end != 0 {
                open.body = None;
            }
        }
    }

    /// The open streams: id, data, and whether body bytes the server's
    /// window held back are still to send.
    pub(crate) fn streams(&self) -> impl Iterator<Item = (u32, &T, bool)> {
        self.streams
            .iter()
            .map(|(id, s)| (*id, &s.data, s.body.is_some()))
    }

    /// Stream `id`'s data, while it is open.
    pub(crate) fn data_mut(&mut self, id: u32) -> Option<&mut T> {
        self.streams.get_mut(&id).map(|s| &mut s.data)
    }

    /// Resets stream `id` (RST_STREAM with `code`) and gives its data back.
    pub(crate) fn reset(&mut self, id: u32, code: u32) -> Option<T> {
        let open = self.streams.remove(&id)?;
        write_rst_stream(&mut self.out, id, code);
        Some(open.data)
    }

    /// Every open stream, taken out (the connection is over).
    pub(crate) fn take_all(&mut self) -> Vec<T> {
        self.streams.drain().map(|(_, s)| s.data).collect()
    }

    /// Queues a GOAWAY that ends the connection from the client's side.
    pub(crate) fn close(&mut self, code: u32) {
        // The last stream id is of the server's own streams the client
        // processed: a client takes none (push is off).
        write_goaway(&mut self.out, 0, code);
    }

    /// Takes in bytes read from the server, reporting what they mean.
    pub(crate) fn receive(
        &mut self,
        mut input: &[u8],
        on: &mut impl FnMut(Event<'_, T>),
    ) -> Result<(), Error> {
        while !input.is_empty() {
            match &mut self.reading {
                Reading::Head { have } => {
                    let n = (HEADER_LEN - *have).min(input.len());
                    self.head[*have..*have + n].copy_from_slice(&input[..n]);
                    *have += n;
                    input = &input[n..];
                    if *have == HEADER_LEN {
                        let head = Head::parse(&self.head);
                        self.reading = Reading::Head { have: 0 };
                        self.begin(head, on)?;
                        if head.len == 0 && matches!(self.reading, Reading::Whole(_)) {
                            self.reading = Reading::Head { have: 0 };
                            self.frame_done(head, &[], on)?;
                        }
                    }
                }
                Reading::Data(d) => {
                    let used = Self::stream_data(d, &mut self.streams, input, on);
                    input = &input[used..];
                    if d.pad_length_due || d.data_left > 0 || d.pad_left > 0 {
                        continue;
                    }
                    let (stream, end) = (d.stream, d.end_stream);
                    self.reading = Reading::Head { have: 0 };
                    self.data_done(stream, end, on);
                }
                Reading::Whole(head) => {
                    let head = *head;
                    let want = head.len - self.frame.len();
                    if self.frame.is_empty() && input.len() >= head.len {
                        // Whole in what was read: no copy.
                        let (payload, rest) = input.split_at(head.len);
                        input = rest;
                        self.reading = Reading::Head { have: 0 };
                        self.frame_done(head, payload, on)?;
                    } else {
                        let n = want.min(input.len());
                        self.frame.extend_from_slice(&input[..n]);
                        input = &input[n..];
                        if self.frame.len() == head.len {
                            self.reading = Reading::Head { have: 0 };
                            let payload = std::mem::take(&mut self.frame);
                            let done = self.frame_done(head, &payload, on);
                            self.frame = payload;
                            self.frame.clear();
                            done?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A frame header has been read: checks it, and sets up reading its
    /// payload.
    fn begin(&mut self, head: Head, on: &mut impl FnMut(Event<'_, T>)) -> Result<(), Error> {
        if !self.ready && head.kind != SETTINGS {
            return Err(Error::NotHttp2(if self.head.starts_with(b"HTTP/1.") {
                "it answered in HTTP/1.x".into()
            } else {
                format!("its first frame is {}, not SETTINGS", name(head.kind))
            }));
        }
        if head.len > MAX_FRAME {
            return Err(self.fail(
                FRAME_SIZE_ERROR,
                format!(
                    "the server sent a {} frame of {} bytes, larger than SETTINGS_MAX_FRAME_SIZE ({MAX_FRAME})",
                    name(head.kind),
                    head.len
                ),
            ));
        }
        if self.block_stream != 0 && (head.kind != CONTINUATION || head.stream != self.block_stream)
        {
            return Err(self.fail(
                PROTOCOL_ERROR,
                format!(
                    "a header block split over CONTINUATION frames was interrupted by a {} frame",
                    name(head.kind)
                ),
            ));
        }
        if matches!(head.kind, HEADERS | CONTINUATION) {
            self.header_block_read += head.len as u64;
        }
        if head.kind != DATA {
            self.reading = Reading::Whole(head);
            return Ok(());
        }
        if head.stream == 0 {
            return Err(self.fail(PROTOCOL_ERROR, "a DATA frame on stream 0".into()));
        }
        // Flow control counts the whole payload, padding included.
        self.recv_window -= head.len as i64;
        if self.recv_window < 0 {
            return Err(self.fail(
                FLOW_CONTROL_ERROR,
                "the server sent more DATA than the connection's window".into(),
            ));
        }
        self.recv_unacked += head.len as u32;
        if self.recv_unacked >= CONNECTION_WINDOW / 2 {
            write_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_window += i64::from(self.recv_unacked);
            self.recv_unacked = 0;
        }
        let padded = head.flags & PADDED != 0;
        if padded && head.len == 0 {
            return Err(self.fail(
                PROTOCOL_ERROR,
                "a padded DATA frame without its pad length".into(),
            ));
        }
        let end_stream = head.flags & END_STREAM != 0;
        let mut malformed = None;
        if let Some(open) = self.streams.get_mut(&head.stream) {
            if !open.headed {
                malformed = Some(head.stream);
            } else {
                open.unacked += head.len as u32;
                if open.unacked >= STREAM_WINDOW / 2 && !end_stream {
                    write_window_update(&mut self.out, head.stream, open.unacked);
                    open.unacked = 0;
                }
            }
        } else if head.stream >= self.next_id || head.stream.is_multiple_of(2) {
            return Err(self.fail(
                PROTOCOL_ERROR,
                format!(
                    "DATA on stream {}, which the client never opened",
                    head.stream
                ),
            ));
        }
        if let Some(id) = malformed {
            self.malformed(id, on);
        }
        self.reading = Reading::Data(DataFrame {
            stream: head.stream,
            end_stream,
            pad_length_due: padded,
            len: head.len,
            data_left: if padded { 0 } else { head.len },
            pad_left: 0,
        });

        if head.len == 0 {
            self.reading = Reading::Head { have: 0 };
            self.data_done(head.stream, end_stream, on);
        }
        Ok(())
    }

    /// Streams a DATA payload's bytes; how many of `input` it used.
    fn stream_data(
        d: &mut DataFrame,
        streams: &mut Streams<T>,
        input: &[u8],
        on: &mut impl FnMut(Event<'_, T>),
    ) -> usize {
        let mut used = 0;
        if d.pad_length_due {
            let pad = usize::from(input[0]);
            let len = d.len;
            used = 1;
            d.pad_length_due = false;
            // A pad longer than the payload is the server's error; the
            // frame's bytes are consumed anyway, none counted as body.
            d.data_left = (len - 1).saturating_sub(pad);
            d.pad_left = (len - 1) - d.data_left;
        }
        let n = d.data_left.min(input.len() - used);
        if n > 0 {
            if let Some(open) = streams.get_mut(&d.stream) {
                on(Event::Data {
                    stream: &mut open.data,
                    data: &input[used..used + n],
                });
            }
            d.data_left -= n;
            used += n;
        }
        let p = d.pad_left.min(input.len() - used);
        d.pad_left -= p;
        used + p
    }

    /// A DATA frame is read whole.
    fn data_done(&mut self, stream: u32, end_stream: bool, on: &mut impl FnMut(Event<'_, T>)) {
        if end_stream && let Some(open) = self.streams.remove(&stream) {
            on(Event::End { stream: open.data });
        }
    }

    /// Stream `id`'s answer broke the protocol: it is reset.
    fn malformed(&mut self, id: u32, on: &mut impl FnMut(Event<'_, T>)) {
        if let Some(data) = self.reset(id, frame::PROTOCOL_ERROR) {
            on(Event::Failed {
                stream: data,
                why: Failure::Malformed,
            });
        }
    }

    /// A connection error: queues the GOAWAY that says so.
    fn fail(&mut self, code: u32, why: String) -> Error {
        self.close(code);
        Error::Protocol(why)
    }

    /// A frame other than DATA is read whole.
    fn frame_done(
        &mut self,
        head: Head,
        payload: &[u8],
        on: &mut impl FnMut(Event<'_, T>),
    ) -> Result<(), Error> {
        match head.kind {
            SETTINGS => self.settings(head, payload, on),
            HEADERS => self.headers(head, payload, on),
            CONTINUATION => {
                if self.block_stream == 0 {
                    return Err(self.fail(
                        PROTOCOL_ERROR,
                        "a CONTINUATION frame without a header block before it".into(),
                    ));
                }
                self.block.extend_from_slice(payload);
                if head.flags & END_HEADERS != 0 {
                    let block = std::mem::take(&mut self.block);
                    let (stream, end) = (self.block_stream, self.block_end_stream);
                    self.block_stream = 0;
                    let done = self.header_block(stream, end, &block, on);
                    self.block = block;
                    self.block.clear();
                    done?;
                }
                Ok(())
            }
            RST_STREAM => {
                if head.len != 4 || head.stream == 0 {
                    return Err(self.fail(PROTOCOL_ERROR, "a malformed RST_STREAM frame".into()));
                }
                if let Some(open) = self.streams.remove(&head.stream) {
                    on(Event::Failed {
                        stream: open.data,
                        why: Failure::Reset(u32_at(payload, 0)),
                    });
                }
                Ok(())
            }
            PING => {
                if head.len != 8 || head.stream != 0 {
                    return Err(self.fail(FRAME_SIZE_ERROR, "a malformed PING frame".into()));
                }
                if head.flags & ACK == 0 {
                    write_head(&mut self.out, 8, PING, ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(())
            }
            GOAWAY => {
                if head.len < 8 || head.stream != 0 {
                    return Err(self.fail(PROTOCOL_ERROR, "a malformed GOAWAY frame".into()));
                }
                let last = u32_at(payload, 0) & 0x7fff_ffff;
                let code = u32_at(payload, 4);
                self.goaway = true;
                let above: Vec<u32> = self
                    .streams
                    .keys()
                    .copied()
                    .filter(|id| *id > last)
                    .collect();
                on(Event::GoAway { code });
                for id in above {
                    if let Some(open) = self.streams.remove(&id) {
                        on(Event::Failed {
                            stream: open.data,
                            why: Failure::Unprocessed,
                        });
                    }
                }
                Ok(())
            }
            WINDOW_UPDATE => self.window_update(head, payload, on),
            PUSH_PROMISE => Err(self.fail(
                PROTOCOL_ERROR,
                "the server sent PUSH_PROMISE, though the client's SETTINGS disabled push".into(),
            )),
            // PRIORITY is advice the client does not need; unknown frame
            // types are ignored (§4.1).
            _ => Ok(()),
        }
    }

    fn settings(
        &mut self,
        head: Head,
        payload: &[u8],
        on: &mut impl FnMut(Event<'_, T>),
    ) -> Result<(), Error> {
        if head.stream != 0 {
            return Err(self.fail(PROTOCOL_ERROR, "a SETTINGS frame on a stream".into()));
        }
        if head.flags & ACK != 0 {
            if head.len != 0 {
                return Err(self.fail(FRAME_SIZE_ERROR, "a SETTINGS ACK with a payload".into()));
            }
            return Ok(());
        }
        if !head.len.is_multiple_of(6) {
            return Err(self.fail(
                FRAME_SIZE_ERROR,
                format!(
                    "a SETTINGS frame of {} bytes, not a multiple of 6",
                    head.len
                ),
            ));
        }
        for setting in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([setting[0], setting[1]]);
            let value = u32_at(setting, 2);
            match id {
                SETTINGS_HEADER_TABLE_SIZE => {
                    let size = (value as usize).min(4096);
                    if size != self.table_size {
                        self.table_size = size;
                        self.table_size_update = Some(size);
                        self.last_block = None;
                    }
                }
                SETTINGS_MAX_CONCURRENT_STREAMS => {
                    self.peer.max_streams = Some(value as usize);
                }
                SETTINGS_INITIAL_WINDOW_SIZE => {
                    if i64::from(value) > MAX_WINDOW {
                        return Err(self.fail(
                            FLOW_CONTROL_ERROR,
                            format!("SETTINGS_INITIAL_WINDOW_SIZE of {value}, above 2^31 - 1"),
                        ));
                    }
                    let delta = i64::from(value) - self.peer.initial_window;
                    self.peer.initial_window = i64::from(value);
                    for open in self.streams.values_mut() {
                        open.send_window += delta;
                    }
                }
                SETTINGS_MAX_FRAME_SIZE => {
                    if !(MAX_FRAME as u32..=(1 << 24) - 1).contains(&value) {
                        return Err(self.fail(
                            PROTOCOL_ERROR,
                            format!("SETTINGS_MAX_FRAME_SIZE of {value}, outside 2^14..2^24 - 1"),
                        ));
                    }
                    self.peer.max_frame = value as usize;
                }
                _ => {}
            }
        }
        write_head(&mut self.out, 0, SETTINGS, ACK, 0);
        if !self.ready {
            self.ready = true;
            on(Event::Ready);
        }
        self.flush_bodies();
        Ok(())
    }

    fn window_update(
        &mut self,
        head: Head,
        payload: &[u8],
        on: &mut impl FnMut(Event<'_, T>),
    ) -> Result<(), Error> {
        if head.len != 4 {
            return Err(self.fail(
                FRAME_SIZE_ERROR,
                "a WINDOW_UPDATE frame not of 4 bytes".into(),
            ));
        }
        let increment = i64::from(u32_at(payload, 0) & 0x7fff_ffff);
        if head.stream == 0 {
            if increment == 0 {
                return Err(self.fail(
                    PROTOCOL_ERROR,
                    "a WINDOW_UPDATE of 0 for the connection".into(),
                ));
            }
            self.send_window += increment;
            if self.send_window > MAX_WINDOW {
                return Err(self.fail(
                    FLOW_CONTROL_ERROR,
                    "the server opened the connection's window past 2^31 - 1".into(),
                ));
            }
            self.flush_bodies();
            return Ok(());
        }
        let Some(open) = self.streams.get_mut(&head.stream) else {
            return Ok(());
        };
        open.send_window += increment;
        if increment == 0 || open.send_window > MAX_WINDOW {
            self.malformed(head.stream, on);
            return Ok(());
        }
        self.send_body(head.stream);
        Ok(())
    }

    /// Sends what the windows now allow of every pending body.
    fn flush_bodies(&mut self) {
        let waiting: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, s)| s.body.is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.send_body(id);
        }
    }

    fn headers(
        &mut self,
        head: Head,
        payload: &[u8],
        on: &mut impl FnMut(Event<'_, T>),
    ) -> Result<(), Error> {
        if head.stream == 0 {
            return Err(self.fail(PROTOCOL_ERROR, "a HEADERS frame on stream 0".into()));
        }
        let mut fragment = payload;
        if head.flags & PADDED != 0 {
            let pad = usize::from(*fragment.first().unwrap_or(&0));
            if fragment.is_empty() || pad >= fragment.len() {
                return Err(self.fail(
                    PROTOCOL_ERROR,
                    "a HEADERS frame's padding is too long".into(),
                ));
            }
            fragment = &fragment[1..fragment.len() - pad];
        }
        if head.flags & PRIORITY_FLAG != 0 {
            if fragment.len() < 5 {
                return Err(self.fail(FRAME_SIZE_ERROR, "a HEADERS frame's priority is cut".into()));
            }
            fragment = &fragment[5..];
        }
        let end_stream = head.flags & END_STREAM != 0;
        if head.flags & END_HEADERS != 0 {
            return self.header_block(head.stream, end_stream, fragment, on);
        }
        self.block.clear();
        self.block.extend_from_slice(fragment);
        self.block_stream = head.stream;
        self.block_end_stream = end_stream;
        Ok(())
    }

    /// Decodes a header block: what the session needs of it, and its
    /// fields as lines in `fields`.
    ///
    /// A block the same as the last one decoded is, in two cases, known
    /// to mean the same again and to leave the decoder's table as it
    /// stands, so it is not decoded twice:
    /// - it inserts nothing (and updates no table size): a server whose
    ///   encoder indexes its fields (the `h2` crate's, nghttp2's) answers
    ///   the same resource with the same block of indexes;
    /// - it inserts, but the same block decoded in a row before it has
    ///   inserted at least the table's maximum size. The table then holds
    ///   nothing but that block's insertions (RFC 7541 §4.4: an entry is
    ///   evicted only once newer ones leave it no room), and it holds the
    ///   same after another decode, whose references read the same
    ///   entries. nginx's blocks insert their fields every time and
    ///   differ only when the `date` changes, once a second; decoding them
    ///   every time, Huffman and all, was the larger part of the client's
    ///   own CPU on small answers (`bench/profile.sh h2`).
    ///
    /// A table size update resets the run.
    fn decode(&mut self, block: &[u8]) -> Result<Decoded, Error> {
        if let Some(known) = self.known
            && self.known_block == block
        {
            return Ok(known);
        }
        self.blocks_decoded += 1;
        let mut d = Decoded::default();
        self.fields.clear();
        self.hpack_in.clear();
        self.hpack_in.extend_from_slice(block);
        self.decoded.clear();
        let decoded = self.decoder.decode(&mut self.hpack_in, &mut self.decoded);
        for (name, value, _) in &self.decoded {
            d.plain += (name.len() + value.len()) as u64;
            if &name[..] == b":status" {
                d.status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u16>().ok())
                    .filter(|s| (100..1000).contains(s));
            } else if &name[..] == b"content-length" {
                d.length = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok());
            }
            if self.keep_fields && !name.starts_with(b":") {
                self.fields.extend_from_slice(name);
                self.fields.extend_from_slice(b": ");
                self.fields.extend_from_slice(value);
                self.fields.extend_from_slice(b"\r\n");
            }
        }
        if let Err(e) = decoded {
            self.known = None;
            self.known_block.clear();
            self.run_inserted = 0;
            return Err(self.fail(
                COMPRESSION_ERROR,
                format!("a header block HPACK cannot decode ({e:?})"),
            ));
        }
        let size_update = block.first().is_some_and(|b| b & 0xe0 == 0x20);
        let inserted: usize = self
            .decoded
            .iter()
            .filter(|f| f.2 & httlib_hpack::Decoder::WITH_INDEXING != 0)
            .map(|(name, value, _)| name.len() + value.len() + 32)
            .sum();
        let before = if self.known_block == block {
            self.run_inserted
        } else {
            self.known_block.clear();
            self.known_block.extend_from_slice(block);
            0
        };
        self.run_inserted = if size_update {
            0
        } else {
            before.saturating_add(inserted)
        };
        let table_max = self.decoder.max_dynamic_size() as usize;
        let stands = inserted == 0 || before >= table_max;
        self.known = (!size_update && stands).then_some(d);
        Ok(d)
    }

    /// A whole header block of stream `id`: decoded (always, to keep the
    /// decoder's table in step with the server's), then reported.
    fn header_block(
        &mut self,
        id: u32,
        end_stream: bool,
        block: &[u8],
        on: &mut impl FnMut(Event<'_, T>),
    ) -> Result<(), Error> {
        let Decoded {
            status,
            plain,
            length,
        } = self.decode(block)?;
        let Some(open) = self.streams.get_mut(&id) else {
            if id >= self.next_id || id.is_multiple_of(2) {
                return Err(self.fail(
                    PROTOCOL_ERROR,
                    format!("HEADERS on stream {id}, which the client never opened"),
                ));
            }
            // A stream the client reset (timed out): its answer is late.
            return Ok(());
        };
        if open.headed {
            // Trailers: they must end the stream.
            if !end_stream {
                self.malformed(id, on);
            } else if let Some(open) = self.streams.remove(&id) {
                on(Event::End { stream: open.data });
            }
            return Ok(());
        }
        match status {
            Some(s) if s < 200 && s != 101 => {
                // An interim head; the final one follows.
                if end_stream {
                    self.malformed(id, on);
                }
                Ok(())
            }
            Some(status) if status != 101 => {
                open.headed = true;
                on(Event::Head {
                    stream: &mut open.data,
                    status,
                    plain,
                    length,
                    fields: &self.fields,
                });
                if end_stream && let Some(open) = self.streams.remove(&id) {
                    on(Event::End { stream: open.data });
                }
                Ok(())
            }
            _ => {
                self.malformed(id, on);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(key: Option<usize>) -> Request {
        let field = |n: &str, v: &str| (n.as_bytes().into(), v.as_bytes().into());
        Request {
            fields: vec![
                field(":method", "GET"),
                field(":scheme", "http"),
                field(":authority", "127.0.0.1:8080"),
                field(":path", "/index.html"),
                field("user-agent", "dyno"),
            ],
            body: None,
            plain: 0,
            key,
        }
    }

    /// The HEADERS payloads in `out`, past the preface.
    fn header_blocks(out: &[u8]) -> Vec<Vec<u8>> {
        let mut at = PREFACE.len();
        let mut blocks = Vec::new();
        while at < out.len() {
            let head = Head::parse(out[at..at + HEADER_LEN].try_into().unwrap());
            let payload = &out[at + HEADER_LEN..at + HEADER_LEN + head.len];
            if head.kind == HEADERS {
                blocks.push(payload.to_vec());
            }
            at += HEADER_LEN + head.len;
        }
        blocks
    }

    #[test]
    fn a_repeated_request_is_indexed_then_its_block_reused() {
        let mut session = Session::<()>::new(false);
        session.ready = true;
        for _ in 0..4 {
            session.open(&request(Some(0)), ());
        }
        let blocks = header_blocks(&session.out);
        assert_eq!(blocks.len(), 4);
        // The first sends literals (and indexes them); then indexes only,
        // one byte per field.
        assert!(blocks[0].len() > 3 * 5, "{:?}", blocks[0]);
        assert_eq!(blocks[1].len(), 5, "{:?}", blocks[1]);
        assert_eq!(blocks[2], blocks[1]);
        assert_eq!(blocks[3], blocks[1]);
        assert!(matches!(session.last_block, Some((0, times, _)) if times >= 2));
        // The decoder on the other side reads the same fields every time.
        let mut decoder = httlib_hpack::Decoder::default();
        for block in blocks {
            let mut fields = Vec::new();
            decoder.decode(&mut block.clone(), &mut fields).unwrap();
            let names: Vec<&[u8]> = fields.iter().map(|f| &f.0[..]).collect();
            assert_eq!(
                names,
                [
                    &b":method"[..],
                    b":scheme",
                    b":authority",
                    b":path",
                    b"user-agent"
                ]
            );
            assert_eq!(fields[2].1, b"127.0.0.1:8080");
        }
    }

    #[derive(Debug, PartialEq)]
    enum Seen {
        Ready,
        Head(u32, u16, Option<u64>),
        Data(u32, usize),
        End(u32),
        Failed(u32, Failure),
        GoAway(u32),
    }

    /// What `bytes` mean to a session with streams 1, 3 and 5 open, fed
    /// in two pieces split at `split`.
    fn events(bytes: &[u8], split: usize) -> Vec<Seen> {
        let mut session = Session::<u32>::new(true);
        for id in [1, 3, 5] {
            if id > 1 {
                session.ready = true;
            }
            session.open(&request(None), id);
        }
        session.ready = false;
        let mut seen = Vec::new();
        let mut on = |e: Event<'_, u32>| {
            seen.push(match e {
                Event::Ready => Seen::Ready,
                Event::Head {
                    stream,
                    status,
                    length,
                    ..
                } => Seen::Head(*stream, status, length),
                Event::Data { stream, data } => Seen::Data(*stream, data.len()),
                Event::End { stream } => Seen::End(stream),
                Event::Failed { stream, why } => Seen::Failed(stream, why),
                Event::GoAway { code } => Seen::GoAway(code),
            });
        };
        let (a, b) = bytes.split_at(split);
        session.receive(a, &mut on).unwrap();
        session.receive(b, &mut on).unwrap();
        // Data comes in pieces where the split cuts it: merged per stream.
        let mut merged: Vec<Seen> = Vec::new();
        for s in seen {
            if let (Some(Seen::Data(id, n)), Seen::Data(id2, m)) = (merged.last_mut(), &s)
                && id == id2
            {
                *n += m;
                continue;
            }
            merged.push(s);
        }
        merged
    }

    #[test]
    fn frames_mean_the_same_however_the_reads_cut_them() {
        let mut bytes = Vec::new();
        write_settings(&mut bytes, &[(SETTINGS_MAX_CONCURRENT_STREAMS, 7)]);
        // Stream 1: a padded HEADERS with a priority, "content-length: 5"
        // (static name 28), then a padded DATA frame that ends it.
        let block = [&[0x88u8][..], b"\x0f\x0d\x015"].concat();
        let mut payload = vec![2u8];
        payload.extend_from_slice(&[0, 0, 0, 0, 16]);
        payload.extend_from_slice(&block);
        payload.extend_from_slice(&[0, 0]);
        write_head(
            &mut bytes,
            payload.len(),
            HEADERS,
            END_HEADERS | PADDED | PRIORITY_FLAG,
            1,
        );
        bytes.extend_from_slice(&payload);
        write_head(&mut bytes, 1 + 5 + 3, DATA, PADDED | END_STREAM, 1);
        bytes.extend_from_slice(&[3, b'h', b'e', b'l', b'l', b'o', 0, 0, 0]);
        // Stream 3: reset. Then a GOAWAY whose last stream is 3.
        write_rst_stream(&mut bytes, 3, 0x7);
        write_goaway(&mut bytes, 3, NO_ERROR);
        let want = vec![
            Seen::Ready,
            Seen::Head(1, 200, Some(5)),
            Seen::Data(1, 5),
            Seen::End(1),
            Seen::Failed(3, Failure::Reset(0x7)),
            Seen::GoAway(NO_ERROR),
            Seen::Failed(5, Failure::Unprocessed),
        ];
        for split in 0..=bytes.len() {
            assert_eq!(events(&bytes, split), want, "split at {split}");
        }
    }

    #[test]
    fn a_known_header_block_is_reused_only_while_the_table_stands() {
        // "x-a: 1" inserted, then referenced by index 62 twice; then
        // "x-b: 2" inserted, which moves index 62 to it.
        let literal =
            |n: &[u8], v: &[u8]| [&[0x40, n.len() as u8][..], n, &[v.len() as u8], v].concat();
        let blocks = [
            [&[0x88u8][..], &literal(b"x-a", b"1")].concat(),
            vec![0x88, 0xbe],
            vec![0x88, 0xbe],
            [&[0x88u8][..], &literal(b"x-b", b"2")].concat(),
            vec![0x88, 0xbe],
        ];
        let (fields, decoded) = heads_decoded(&blocks);
        assert_eq!(
            fields,
            [
                "x-a: 1\r\n",
                "x-a: 1\r\n",
                "x-a: 1\r\n",
                "x-b: 2\r\n",
                "x-b: 2\r\n"
            ]
        );
        // The third block is the second again, taken as known; the fifth
        // follows an insertion and is decoded.
        assert_eq!(decoded, 4);
    }

    /// Each block as the answer on a stream of its own, read by one
    /// session: each head's fields, in order, and how many blocks the
    /// session decoded in full.
    fn heads_decoded(blocks: &[Vec<u8>]) -> (Vec<String>, u64) {
        let mut session = Session::<u32>::new(true);
        session.ready = true;
        let mut bytes = Vec::new();
        write_settings(&mut bytes, &[]);
        for (i, block) in blocks.iter().enumerate() {
            let id = session.open(&request(None), i as u32);
            write_head(
                &mut bytes,
                block.len(),
                HEADERS,
                END_HEADERS | END_STREAM,
                id,
            );
            bytes.extend_from_slice(block);
        }
        let mut fields = Vec::new();
        session
            .receive(&bytes, &mut |e| {
                if let Event::Head { fields: f, .. } = e {
                    fields.push(String::from_utf8(f.to_vec()).unwrap());
                }
            })
            .unwrap();
        (fields, session.blocks_decoded)
    }

    /// Fields as the session writes them: lines, pseudo-fields left out.
    fn lines(fields: &[(Vec<u8>, Vec<u8>, u8)]) -> String {
        let mut out = String::new();
        for (name, value, _) in fields.iter().filter(|f| !f.0.starts_with(b":")) {
            out += &format!(
                "{}: {}\r\n",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value)
            );
        }
        out
    }

    #[test]
    fn a_block_that_inserts_is_reused_once_its_run_fills_the_table() {
        // Every entry is 237 bytes (RFC 7541 §4.1), so 17 fit in 4,096.
        let literal = |n: &[u8], v: &[u8]| {
            [
                &[0x40, n.len() as u8][..],
                n,
                &[0x7f, (v.len() - 127) as u8],
                v,
            ]
            .concat()
        };
        let old = |i: usize| literal(b"x-old", format!("{i:0>200}").as_bytes());
        // Like nginx's: inserts a field, then (unlike nginx) refers to the
        // table's oldest entry, the 17th newest (index 61 + 17), whose
        // field changes until the run of this block fills the table.
        let repeated = [&[0x88u8][..], &literal(b"x-a", &[b'a'; 202]), &[0x80 | 78]].concat();
        let mut blocks: Vec<Vec<u8>> = (0..20).map(|i| [&[0x88u8][..], &old(i)].concat()).collect();
        blocks.extend(std::iter::repeat_n(repeated.clone(), 40));
        // Then another block and the run again, from a mixed table.
        blocks.push([&[0x88u8][..], &old(99)].concat());
        blocks.extend(std::iter::repeat_n(repeated, 25));

        let mut truth = httlib_hpack::Decoder::default();
        let want: Vec<String> = blocks
            .iter()
            .map(|b| {
                let mut fields = Vec::new();
                truth.decode(&mut b.clone(), &mut fields).unwrap();
                lines(&fields)
            })
            .collect();

        let (got, decoded) = heads_decoded(&blocks);
        assert_eq!(got.len(), want.len());
        for (i, (got, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "block {i}");
        }
        // The oldest entry's field changed within each run: the blocks
        // were decoded until their run had filled the table (18 inserts
        // of 237 bytes, 4,266 ≥ 4,096), then the 19th of each run on
        // was known.
        assert_ne!(want[20], want[59]);
        assert_eq!(decoded, 20 + 19 + 1 + 19);
    }
}
