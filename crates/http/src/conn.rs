//! The connection layer: where requests go (an [`Endpoint`]) and the byte
//! stream to it, plain or TLS. The engine reads through
//! [`Stream::poll_read`] into the thread's one buffer, so every connection
//! of a thread parses from the same memory whatever its transport. New
//! transports (HTTP/2) are new variants here; the driver loop does not
//! change.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;

use crate::tls::{TlsClient, TlsSession};

/// Where connections go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// The server's address, and the local address to connect from, if
    /// one was asked for (`--source-addr`, ab's `-B`).
    Tcp(SocketAddr, Option<IpAddr>),
    /// A Unix domain socket; the URL still names the Host header and path.
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(addr, _) => write!(f, "{addr}"),
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// An open connection; [`AsyncRead`] and [`AsyncWrite`] for the HTTP/2
/// codec, which drives its own reads and writes.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// HTTPS. Boxed: rustls' connection state is large, and a plain
    /// connection should not pay for it.
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a connection could not be made.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// Connecting the socket failed.
    Transport(io::Error),
    /// The socket connected, but the TLS handshake failed (certificate not
    /// trusted or for another name, no common protocol, not TLS at all).
    Handshake(io::Error),
}

/// Connects to `addr` from the local address `ip` (any free port).
async fn connect_from(addr: SocketAddr, ip: IpAddr) -> io::Result<TcpStream> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(addr).await
}

impl Stream {
    /// Connects, with Nagle's algorithm off for TCP (requests are written
    /// whole, and waiting would add latency that is not the server's), and
    /// with `tls` completes the TLS handshake too: it belongs to setting up
    /// the connection, and is timed with it.
    pub(crate) async fn connect(
        endpoint: &Endpoint,
        tls: Option<&TlsClient>,
    ) -> Result<Stream, ConnectError> {
        match endpoint {
            Endpoint::Tcp(addr, from) => {
                let stream = match from {
                    None => TcpStream::connect(addr).await,
                    Some(ip) => connect_from(*addr, *ip).await,
                }
                .map_err(ConnectError::Transport)?;
                let _ = stream.set_nodelay(true);
                match tls {
                    None => Ok(Stream::Tcp(stream)),
                    Some(tls) => {
                        // Boxed: the handshake holds rustls' connection
                        // state, and every connection's task would carry
                        // its size for its whole life, TLS or not.
                        let stream =
                            Box::pin(tls.connector.connect(tls.server_name.clone(), stream))
                                .await
                                .map_err(ConnectError::Handshake)?;
                        Ok(Stream::Tls(Box::new(stream)))
                    }
                }
            }
            // The engine refuses TLS over a Unix socket before it starts.
            Endpoint::Unix(path) => Ok(Stream::Unix(
                UnixStream::connect(path)
                    .await
                    .map_err(ConnectError::Transport)?,
            )),
        }
    }

    /// Reads what is there into `buf`, or registers for a wake-up when
    /// nothing is. Nothing read at all (and `Ready`) means the peer closed.
    ///
    /// A TLS peer that closes without `close_notify` is taken as closed,
    /// not as an error: many servers end close-delimited bodies that way,
    /// and a body with a length still shows its truncation to the parser.
    pub(crate) fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => match Pin::new(&mut **s).poll_read(cx, buf) {
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    Poll::Ready(Ok(()))
                }
                other => other,
            },
        }
    }

    /// Sets the socket's receive low-water mark (SO_RCVLOWAT): the kernel
    /// wakes the reader once this many bytes are in (or at the end, or on
    /// an error). A TCP socket's only; nothing for a Unix one.
    pub(crate) fn set_receive_low_water(&self, bytes: usize) {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.get_ref().0.as_raw_fd(),
            Stream::Unix(_) => return,
        };
        let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: a valid socket descriptor and an int option of its size.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                std::ptr::from_ref(&value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }

    /// What the TLS handshake settled on; `None` for plain connections.
    pub(crate) fn tls_session(&self) -> Option<TlsSession> {
        match self {
            Stream::Tls(s) => TlsSession::of(s.get_ref().1),
            Stream::Tcp(_) | Stream::Unix(_) => None,
        }
    }

    /// Writes all of `buf`, and for TLS the records rustls still holds.
    pub(crate) async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
            Stream::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Stream::poll_read(self.get_mut(), cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}
