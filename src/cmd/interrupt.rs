//! Interrupts: SIGINT (Ctrl-C), SIGTERM (what `timeout`, systemd and CI
//! cancellation send) and SIGHUP (a closed terminal) all end a measurement
//! the same way. The first one sets a flag the engine polls, so the run stops
//! early, its clean-up runs (child processes killed, test files removed) and
//! what was measured is printed and saved; the command then exits with
//! [`EXIT_CODE`]. Where a subcommand allows it, a second signal exits at once.

use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use signal_hook::SigId;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The exit code of a run that an interrupt ended early (128 + SIGINT, the
/// shell's code for Ctrl-C), whichever of the three signals it was.
pub(crate) const EXIT_CODE: u8 = 130;

/// The signals that interrupt a measurement.
const SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// The installed handlers; dropping it removes them (signal-hook then
/// ignores those signals until another handler is installed).
pub(crate) struct Interrupt {
    flag: Arc<AtomicBool>,
    ids: Vec<SigId>,
}

/// What a second interrupt does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Second {
    /// Exit at once with [`EXIT_CODE`]: for engines with nothing to clean
    /// up on disk.
    Exits,
    /// Nothing more than the first: for engines whose clean-up must run
    /// (a disk test file to remove), which poll the flag often.
    Waits,
}

impl Interrupt {
    /// Installs the handlers for SIGINT, SIGTERM and SIGHUP.
    pub(crate) fn install(second: Second) -> Result<Interrupt> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for signal in SIGNALS {
            if second == Second::Exits {
                // Registered first, so it sees the flag as the first signal
                // left it: set means this is the second.
                ids.push(
                    signal_hook::flag::register_conditional_shutdown(
                        signal,
                        i32::from(EXIT_CODE),
                        Arc::clone(&flag),
                    )
                    .context("could not install the interrupt handler")?,
                );
            }
            ids.push(
                signal_hook::flag::register(signal, Arc::clone(&flag))
                    .context("could not install the interrupt handler")?,
            );
        }
        Ok(Interrupt { flag, ids })
    }

    /// The flag an engine polls; it is set by the first interrupt.
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// Whether an interrupt arrived.
    pub(crate) fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Also writes a byte to `sender` on every interrupt, to wake an engine
    /// blocked in `poll` (the command timer's stop socket).
    pub(crate) fn wake(&mut self, sender: &UnixStream) -> Result<()> {
        for signal in SIGNALS {
            let sender = sender
                .try_clone()
                .context("could not install the interrupt handler")?;
            self.ids.push(
                signal_hook::low_level::pipe::register(signal, sender)
                    .context("could not install the interrupt handler")?,
            );
        }
        Ok(())
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_sets_the_flag_and_dropping_unregisters() {
        for signal in SIGNALS {
            let interrupt = Interrupt::install(Second::Waits).unwrap();
            assert!(!interrupt.is_set());
            signal_hook::low_level::raise(signal).unwrap();
            assert!(interrupt.is_set(), "signal {signal} did not set the flag");
            // Keep a handler installed while the next one is dropped, so a
            // raise can never reach the default action (termination).
            let keep = Interrupt::install(Second::Waits).unwrap();
            drop(interrupt);
            signal_hook::low_level::raise(signal).unwrap();
            assert!(keep.is_set());
        }
    }

    #[test]
    fn wake_writes_to_the_socket() {
        use std::io::Read;
        let (mut read, write) = UnixStream::pair().unwrap();
        let mut interrupt = Interrupt::install(Second::Waits).unwrap();
        interrupt.wake(&write).unwrap();
        signal_hook::low_level::raise(SIGHUP).unwrap();
        let mut byte = [0u8; 1];
        read.read_exact(&mut byte).unwrap();
        assert!(interrupt.is_set());
    }
}
