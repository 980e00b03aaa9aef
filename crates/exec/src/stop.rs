//! A stop request that a blocked wait can see: a socket pair whose read end
//! is polled beside the child. The binary hands the write end to the Ctrl-C
//! handler (`signal_hook::low_level::pipe::register`); tests trigger it from
//! another thread.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;

/// Asks a running measurement to stop after killing its current command.
#[derive(Debug)]
pub struct Stop {
    read: UnixStream,
    write: UnixStream,
}

impl Stop {
    pub fn new() -> io::Result<Stop> {
        let (read, write) = UnixStream::pair()?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        Ok(Stop { read, write })
    }

    /// A handle that stops the measurement when a byte is written to it
    /// (what a signal handler does).
    pub fn sender(&self) -> io::Result<UnixStream> {
        self.write.try_clone()
    }

    /// Asks the measurement to stop.
    pub fn trigger(&self) {
        // A full socket buffer means a stop is already pending.
        let _ = (&self.write).write(&[1]);
    }

    /// Whether a stop was asked for. It stays asked for.
    pub fn is_triggered(&self) -> bool {
        let mut fd = libc::pollfd {
            fd: self.read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no timeout.
        let ready = unsafe { libc::poll(&mut fd, 1, 0) };
        ready > 0 && fd.revents & libc::POLLIN != 0
    }

    /// The descriptor that becomes readable once a stop is asked for.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_seen_once_triggered_and_stays() {
        let stop = Stop::new().unwrap();
        assert!(!stop.is_triggered());
        stop.trigger();
        assert!(stop.is_triggered());
        assert!(stop.is_triggered());
        let stop = Stop::new().unwrap();
        (&stop.sender().unwrap()).write_all(&[0]).unwrap();
        assert!(stop.is_triggered());
    }
}
