//! The connection layer: where requests go (an [`Endpoint`]) and the byte
//! stream to it. The engine reads with `readable` + `try_read` so that
//! every connection of a thread can parse from the thread's one buffer.
//! New transports (TLS, HTTP/2) are new variants here; the driver loop does
//! not change.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UnixStream};

/// Where connections go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    /// A Unix domain socket; the URL still names the Host header and path.
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(addr) => write!(f, "{addr}"),
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// An open connection.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Connects, with Nagle's algorithm off for TCP (requests are written
    /// whole, and waiting would add latency that is not the server's).
    pub(crate) async fn connect(endpoint: &Endpoint) -> io::Result<Stream> {
        match endpoint {
            Endpoint::Tcp(addr) => {
                let stream = TcpStream::connect(addr).await?;
                let _ = stream.set_nodelay(true);
                Ok(Stream::Tcp(stream))
            }
            Endpoint::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await?)),
        }
    }

    /// Waits until a read may make progress.
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.readable().await,
            Stream::Unix(s) => s.readable().await,
        }
    }

    /// Reads what is there without waiting (`WouldBlock` when nothing is).
    pub(crate) fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_read(buf),
            Stream::Unix(s) => s.try_read(buf),
        }
    }

    pub(crate) async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
        }
    }
}
