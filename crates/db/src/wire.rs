//! The load loop's own PostgreSQL connection: the frontend/backend protocol
//! spoken directly on a non-blocking socket, with `postgres-protocol` (the
//! message code tokio-postgres is built on) writing the messages and doing
//! the password exchanges.
//!
//! tokio-postgres answers every statement with its own Sync, behind a
//! channel to a connection task, and builds rows the load loop throws
//! away. Here the caller queues what a transaction sends, any number of
//! statements and as few Syncs as it wants, then one write goes out and
//! the answers are read in place until the last ReadyForQuery: a
//! pipelined tpcb-like transaction is one send and, usually, one wake-up,
//! as pgbench's `\startpipeline` is. Parameters travel as text with their
//! types left to the server, as libpq sends pgbench's.

use std::io::{self, Read, Write};
use std::time::Duration;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::script::Value;

/// A connected socket of either family.
///
/// A Unix socket is watched for reading only. The kernel wakes a Unix
/// socket's writer each time its peer reads (the space freed), so a
/// socket watched for writing too woke the event loop twice a round trip:
/// once when the server read the query, with nothing to do, and once for
/// its answer. A write that finds the socket full waits through a second
/// registration made for that wait alone.
enum Socket {
    Tcp(tokio::net::TcpStream),
    Unix(AsyncFd<std::os::unix::net::UnixStream>),
}

impl Socket {
    async fn readable(&self) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.readable().await,
            // The readiness stays set for the read that follows.
            Socket::Unix(s) => s.readable().await.map(drop),
        }
    }

    async fn writable(&self) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.writable().await,
            Socket::Unix(s) => {
                let write_side = watch(s.get_ref().try_clone()?, Interest::WRITABLE)?;
                write_side.writable().await.map(drop)
            }
        }
    }

    /// A read that never waits: `WouldBlock` when nothing is there.
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.try_read(buf),
            Socket::Unix(s) => s.try_io(Interest::READABLE, |s| (&*s).read(buf)),
        }
    }

    /// Tells tokio that the socket has nothing to read, so that the next
    /// read waits for the kernel's next readiness event instead of trying
    /// a read that would fail. Only for a socket a short read has just
    /// emptied: whatever arrives after that read raises a new event, so
    /// nothing is missed, and the round trip saves a `recv` that would
    /// only say `EAGAIN`.
    fn forget_readable(&self) {
        let empty = || Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock));
        let _ = match self {
            Socket::Tcp(s) => s.try_io(Interest::READABLE, empty),
            Socket::Unix(s) => s.try_io(Interest::READABLE, |_| empty()),
        };
    }

    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.try_write(buf),
            Socket::Unix(s) => s.get_ref().write(buf),
        }
    }
}

/// Why a statement or the connection failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The server said no; the connection may still be usable, unless
    /// `fatal`.
    #[error("{message} (SQLSTATE {code})")]
    Server {
        code: String,
        message: String,
        fatal: bool,
    },
    #[error("{0}")]
    Lost(io::Error),
    /// The server sent what the protocol does not allow here.
    #[error("the server broke the protocol: {0}")]
    Protocol(String),
    /// Something this client does not do (COPY in a script, an
    /// authentication method).
    #[error("{0}")]
    Unsupported(String),
}

impl WireError {
    /// The SQLSTATE, when the server sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            WireError::Server { code, .. } => Some(code),
            _ => None,
        }
    }

    /// True when the connection cannot be used any more.
    pub fn is_lost(&self) -> bool {
        match self {
            WireError::Server { fatal, .. } => *fatal,
            _ => true,
        }
    }
}

/// Where and as whom to connect.
pub(crate) struct Endpoint<'a> {
    pub host: Host<'a>,
    pub port: u16,
    pub user: &'a str,
    pub password: Option<&'a [u8]>,
    pub database: &'a str,
    pub application_name: Option<&'a str>,
    pub options: Option<&'a str>,
    pub timeout: Duration,
}

pub(crate) enum Host<'a> {
    Tcp(&'a str),
    /// The directory of the server's socket.
    Unix(&'a std::path::Path),
}

/// What a transaction's statements are read back as.
const READ_CHUNK: usize = 16 * 1024;

/// One connection, idle between [`Wire::finish`] calls.
pub struct Wire {
    io: Socket,
    out: BytesMut,
    buf: Vec<u8>,
    /// `buf[start..end]` is read and not yet handled.
    start: usize,
    end: usize,
    /// The last read took less than it had room for: the socket was empty
    /// after it.
    drained: bool,
    /// ReadyForQuery messages the queued messages will bring.
    pending: usize,
    /// The transaction status of the last ReadyForQuery: `I` idle, `T` in
    /// a transaction block, `E` in a failed one.
    status: u8,
    /// Whether the next round trip keeps its result's rows (`\gset`).
    capture: bool,
    rows: Rows,
}

/// The result of a statement whose rows were asked for
/// ([`Wire::capture`]): its columns' names, how many rows came, and the
/// last row's values as text (`None` for NULL).
#[derive(Debug, Default)]
pub struct Rows {
    pub names: Vec<String>,
    pub count: u64,
    pub last: Vec<Option<String>>,
    /// The statements before the last one of a compound query (`\;`)
    /// that returned rows: their columns' names and last row.
    pub earlier: Vec<(Vec<String>, Vec<Option<String>>)>,
}

impl Rows {
    /// Reads a RowDescription's body: the fields' names.
    fn describe(&mut self, body: &[u8]) -> Result<(), WireError> {
        if self.count > 0 {
            self.earlier.push((
                std::mem::take(&mut self.names),
                std::mem::take(&mut self.last),
            ));
        }
        self.names.clear();
        self.last.clear();
        self.count = 0;
        let n = u16::from_be_bytes(read_n(body, 0)?) as usize;
        let mut at = 2;
        for _ in 0..n {
            let len = body
                .get(at..)
                .and_then(|b| b.iter().position(|&b| b == 0))
                .ok_or_else(|| protocol("a RowDescription field name without its end"))?;
            self.names
                .push(String::from_utf8_lossy(&body[at..at + len]).into_owned());
            // The name's NUL, then table oid, column, type oid, size,
            // modifier and format: 18 bytes.
            at += len + 1 + 18;
        }
        Ok(())
    }

    /// Reads a DataRow's body: it becomes the last row.
    fn row(&mut self, body: &[u8]) -> Result<(), WireError> {
        self.count += 1;
        self.last.clear();
        let n = u16::from_be_bytes(read_n(body, 0)?) as usize;
        let mut at = 2;
        for _ in 0..n {
            let len = i32::from_be_bytes(read_n(body, at)?);
            at += 4;
            if len < 0 {
                self.last.push(None);
                continue;
            }
            let end = at + len as usize;
            let value = body
                .get(at..end)
                .ok_or_else(|| protocol("a DataRow shorter than its values"))?;
            self.last
                .push(Some(String::from_utf8_lossy(value).into_owned()));
            at = end;
        }
        Ok(())
    }
}

/// `N` bytes of `body` from `at`.
fn read_n<const N: usize>(body: &[u8], at: usize) -> Result<[u8; N], WireError> {
    body.get(at..at + N)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| protocol("a message shorter than its fields"))
}

impl Wire {
    /// Connects, logs in, and waits until the server is ready.
    pub(crate) async fn connect(to: &Endpoint<'_>) -> Result<Wire, WireError> {
        let socket = tokio::time::timeout(to.timeout, open(&to.host, to.port))
            .await
            .map_err(|_| {
                WireError::Lost(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no answer within {} s", to.timeout.as_secs()),
                ))
            })?
            .map_err(WireError::Lost)?;
        let mut wire = Wire {
            io: socket,
            out: BytesMut::with_capacity(1024),
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            drained: false,
            pending: 0,
            status: b'I',
            capture: false,
            rows: Rows::default(),
        };
        tokio::time::timeout(to.timeout, wire.start_up(to))
            .await
            .map_err(|_| {
                WireError::Lost(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the server did not finish the login in time",
                ))
            })??;
        Ok(wire)
    }

    async fn start_up(&mut self, to: &Endpoint<'_>) -> Result<(), WireError> {
        let mut params = vec![("user", to.user), ("database", to.database)];
        if let Some(name) = to.application_name {
            params.push(("application_name", name));
        }
        if let Some(options) = to.options {
            params.push(("options", options));
        }
        frontend::startup_message(params, &mut self.out).map_err(WireError::Lost)?;
        self.flush().await?;
        let password = || {
            to.password.ok_or_else(|| WireError::Server {
                code: "28P01".into(),
                message: "the server asks for a password and none was given (PGPASSWORD or the connection string)".into(),
                fatal: true,
            })
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.next_message().await? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password()?, &mut self.out)
                        .map_err(WireError::Lost)?;
                    self.flush().await?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(to.user.as_bytes(), password()?, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.out)
                        .map_err(WireError::Lost)?;
                    self.flush().await?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut offered = false;
                    while let Some(m) = mechanisms.next().map_err(protocol)? {
                        offered |= m == SCRAM_SHA_256;
                    }
                    if !offered {
                        return Err(WireError::Unsupported(
                            "the server wants a SASL mechanism other than SCRAM-SHA-256".into(),
                        ));
                    }
                    let s = ScramSha256::new(password()?, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.out)
                        .map_err(WireError::Lost)?;
                    scram = Some(s);
                    self.flush().await?;
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or_else(|| protocol("SASL out of turn"))?;
                    s.update(body.data()).map_err(protocol)?;
                    frontend::sasl_response(s.message(), &mut self.out).map_err(WireError::Lost)?;
                    self.flush().await?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram.as_mut().ok_or_else(|| protocol("SASL out of turn"))?;
                    s.finish(body.data()).map_err(protocol)?;
                }
                Message::ReadyForQuery(body) => {
                    self.status = body.status();
                    return Ok(());
                }
                Message::AuthenticationGss
                | Message::AuthenticationKerberosV5
                | Message::AuthenticationScmCredential
                | Message::AuthenticationSspi
                | Message::AuthenticationGssContinue(_) => {
                    return Err(WireError::Unsupported(
                        "the server wants GSSAPI, Kerberos or SSPI authentication; use a password or trust for the load's role".into(),
                    ));
                }
                // ParameterStatus, BackendKeyData, notices.
                _ => {}
            }
        }
    }

    /// The transaction status the last answer left: `b'I'` idle, `b'T'`
    /// in a transaction block, `b'E'` in a failed one.
    pub fn status(&self) -> u8 {
        self.status
    }

    /// Queues a simple-protocol query (one or more statements).
    pub fn query(&mut self, sql: &str) -> Result<(), WireError> {
        frontend::query(sql, &mut self.out).map_err(WireError::Lost)?;
        self.pending += 1;
        Ok(())
    }

    /// Queues the parsing of `sql` as statement `name` (`""`: the unnamed
    /// one), its parameters' types left to the server.
    pub fn parse(&mut self, name: &str, sql: &str) -> Result<(), WireError> {
        frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(WireError::Lost)
    }

    /// Queues the execution of statement `name` with `params` as text.
    pub fn execute<'a>(
        &mut self,
        name: &str,
        params: impl Iterator<Item = &'a Value>,
    ) -> Result<(), WireError> {
        frontend::bind(
            "",
            name,
            std::iter::empty(),
            params,
            |value, out| {
                use std::fmt::Write as _;
                match value {
                    // The common case, without the formatting machinery.
                    Value::Int(i) => {
                        out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes())
                    }
                    other => write!(out, "{other}")?,
                }
                Ok(IsNull::No)
            },
            std::iter::empty(),
            &mut self.out,
        )
        .map_err(|e| match e {
            frontend::BindError::Conversion(e) => WireError::Unsupported(e.to_string()),
            frontend::BindError::Serialization(e) => WireError::Lost(e),
        })?;
        if self.capture {
            // The columns' names come with the portal's description.
            frontend::describe(b'P', "", &mut self.out).map_err(WireError::Lost)?;
        }
        frontend::execute("", 0, &mut self.out).map_err(WireError::Lost)
    }

    /// The next round trip ([`Wire::finish`]) keeps its result's columns
    /// and last row, for [`Wire::rows`].
    pub fn capture(&mut self) {
        self.capture = true;
        self.rows.names.clear();
        self.rows.last.clear();
        self.rows.count = 0;
        self.rows.earlier.clear();
    }

    /// The rows the last captured round trip brought.
    pub fn rows(&self) -> &Rows {
        &self.rows
    }

    /// Queues a Sync: the end of an extended-protocol batch.
    pub fn sync(&mut self) {
        frontend::sync(&mut self.out);
        self.pending += 1;
    }

    /// Sends what is queued and reads until every query and Sync has been
    /// answered. The first error the server sent is the result; the rest of
    /// its batch was skipped by the server, as the protocol says.
    pub async fn finish(&mut self) -> Result<(), WireError> {
        let result = self.round_trip().await;
        self.capture = false;
        if result.is_err() {
            // A lost connection leaves nothing to read; a server error has
            // been read up to its ReadyForQuery already.
            self.out.clear();
            self.pending = 0;
        }
        result
    }

    async fn round_trip(&mut self) -> Result<(), WireError> {
        self.flush().await?;
        let mut first: Option<WireError> = None;
        while self.pending > 0 {
            let Some((tag, len)) = self.header() else {
                if let Err(e) = self.fill().await {
                    // A FATAL error then the close: the error says why.
                    return Err(first.filter(WireError::is_lost).unwrap_or(e));
                }
                continue;
            };
            let body = self.start + 5..self.start + 1 + len;
            match tag {
                b'Z' => {
                    self.status = self.buf.get(body.start).copied().unwrap_or(b'I');
                    self.pending -= 1;
                }
                b'E' => {
                    let e = error_fields(&self.buf[body.clone()]);
                    first.get_or_insert(e);
                }
                b'T' if self.capture => self.rows.describe(&self.buf[body.clone()])?,
                b'D' if self.capture => self.rows.row(&self.buf[body.clone()])?,
                // CopyInResponse: refused, so that the server goes on.
                b'G' => {
                    frontend::copy_fail("dyno db run does not send COPY data", &mut self.out)
                        .map_err(WireError::Lost)?;
                    self.flush().await?;
                    first.get_or_insert(WireError::Unsupported(
                        "COPY FROM STDIN is not supported in scripts".into(),
                    ));
                }
                // Rows, completions, notices, parameter changes: the load
                // loop needs none of them.
                _ => {}
            }
            self.start += 1 + len;
        }
        if self.start == self.end && self.drained {
            // The server has said all it will until it is sent more.
            self.io.forget_readable();
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The tag and length of the next message, when all of it is in.
    fn header(&self) -> Option<(u8, usize)> {
        let have = &self.buf[self.start..self.end];
        if have.len() < 5 {
            return None;
        }
        let len = u32::from_be_bytes([have[1], have[2], have[3], have[4]]) as usize;
        (have.len() > len).then_some((have[0], len))
    }

    /// The next whole message, decoded (the login's messages); an
    /// ErrorResponse is the error.
    async fn next_message(&mut self) -> Result<Message, WireError> {
        loop {
            if let Some((tag, len)) = self.header() {
                if tag == b'E' {
                    let e = error_fields(&self.buf[self.start + 5..self.start + 1 + len]);
                    self.start += 1 + len;
                    return Err(e);
                }
                let mut one = BytesMut::from(&self.buf[self.start..self.start + 1 + len]);
                self.start += 1 + len;
                return Message::parse(&mut one)
                    .map_err(protocol)?
                    .ok_or_else(|| protocol("a message shorter than its length"));
            }
            self.fill().await?;
        }
    }

    /// Reads what the socket has, waiting for it if need be.
    async fn fill(&mut self) -> Result<(), WireError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.end == self.buf.len() {
                // One message larger than the buffer.
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        loop {
            match self.io.try_read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    return Err(WireError::Lost(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    )));
                }
                Ok(n) => {
                    self.drained = self.end + n < self.buf.len();
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.io.readable().await.map_err(WireError::Lost)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(WireError::Lost(e)),
            }
        }
    }

    /// Writes everything queued.
    async fn flush(&mut self) -> Result<(), WireError> {
        let mut sent = 0;
        while sent < self.out.len() {
            match self.io.try_write(&self.out[sent..]) {
                Ok(0) => return Err(WireError::Lost(io::ErrorKind::WriteZero.into())),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.io.writable().await.map_err(WireError::Lost)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(WireError::Lost(e)),
            }
        }
        self.out.clear();
        Ok(())
    }
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire")
            .field("pending", &self.pending)
            .field("status", &char::from(self.status))
            .finish_non_exhaustive()
    }
}

/// Says goodbye, as libpq's `PQfinish` does, so that the server's log does
/// not count the connection as lost; best effort, never waiting.
impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.io.try_write(&[b'X', 0, 0, 0, 4]);
    }
}

async fn open(host: &Host<'_>, port: u16) -> io::Result<Socket> {
    match host {
        Host::Tcp(name) => {
            let stream = tokio::net::TcpStream::connect((*name, port)).await?;
            stream.set_nodelay(true)?;
            Ok(Socket::Tcp(stream))
        }
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let stream = tokio::net::UnixStream::connect(path).await?.into_std()?;
            Ok(Socket::Unix(watch(stream, Interest::READABLE)?))
        }
    }
}

/// `stream` registered with the event loop for `interest` alone.
fn watch(
    stream: std::os::unix::net::UnixStream,
    interest: Interest,
) -> io::Result<AsyncFd<std::os::unix::net::UnixStream>> {
    // SAFETY: the stream owns its descriptor, which stays open and the
    // same until the AsyncFd, which owns the stream, is dropped.
    unsafe { AsyncFd::register_with_interest(stream, interest) }.map_err(io::Error::from)
}

fn protocol(e: impl ToString) -> WireError {
    WireError::Protocol(e.to_string())
}

/// An ErrorResponse's body: fields of a type byte and a C string, ended by
/// a zero.
fn error_fields(mut body: &[u8]) -> WireError {
    let (mut code, mut message, mut fatal) = (String::new(), String::new(), false);
    while let [kind, rest @ ..] = body
        && *kind != 0
    {
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let value = String::from_utf8_lossy(&rest[..end]);
        match kind {
            b'C' => code = value.into_owned(),
            b'M' => message = value.into_owned(),
            b'V' => fatal = matches!(&*value, "FATAL" | "PANIC"),
            _ => {}
        }
        body = rest.get(end + 1..).unwrap_or_default();
    }
    WireError::Server {
        code,
        message,
        fatal,
    }
}
