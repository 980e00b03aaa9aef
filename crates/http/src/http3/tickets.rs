//! `--0rtt`'s session tickets. A QUIC connection sends its first
//! requests as 0-RTT early data only with a TLS 1.3 ticket from an
//! earlier connection to the same server, and each ticket serves one
//! connection. rustls's own store keeps eight a server, fewer than a run
//! has connections, so the run keeps every ticket a server gives in this
//! store, up to [`MAX_TICKETS`]. Connections opened before the clock to
//! collect them ([`Store::collecting`]) put tickets in and take none out.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustls::NamedGroup;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;

/// The most tickets kept: the oldest go first.
pub(crate) const MAX_TICKETS: usize = 4096;

/// The run's tickets, for its one server.
#[derive(Debug, Default)]
pub(crate) struct Tickets {
    held: Mutex<Held>,
    /// The server rejected early data once: no connection tries again.
    rejected: AtomicBool,
    /// Tickets that came in, all told.
    arrived: tokio::sync::watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Held {
    tickets: VecDeque<(ServerName<'static>, Tls13ClientSessionValue)>,
    kx_hint: Option<(ServerName<'static>, NamedGroup)>,
}

impl Tickets {
    /// Tickets held now.
    pub(crate) fn len(&self) -> usize {
        self.lock().tickets.len()
    }

    /// Tickets that came in, all told.
    pub(crate) fn arrived(&self) -> u64 {
        *self.arrived.borrow()
    }

    /// Waits until more than `n` tickets have come in (a server sends
    /// them after the handshake).
    pub(crate) async fn more_than(&self, n: u64) {
        let _ = self.arrived.subscribe().wait_for(|&m| m > n).await;
    }

    /// The server rejected early data: the next connections do not offer
    /// it (they still resume with a ticket, in one round trip).
    pub(crate) fn reject(&self) {
        self.rejected.store(true, Ordering::Relaxed);
    }

    pub(crate) fn rejected(&self) -> bool {
        self.rejected.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The face of [`Tickets`] rustls sees: one that gives tickets out, or
/// one that only collects them.
#[derive(Debug)]
pub(crate) struct Store {
    tickets: Arc<Tickets>,
    gives: bool,
}

impl Store {
    /// The store of the run's measured connections: each takes a ticket.
    pub(crate) fn giving(tickets: Arc<Tickets>) -> Store {
        Store {
            tickets,
            gives: true,
        }
    }

    /// The store of connections opened to collect tickets: they make a
    /// full handshake, and keep what the server sends them.
    pub(crate) fn collecting(tickets: Arc<Tickets>) -> Store {
        Store {
            tickets,
            gives: false,
        }
    }
}

impl ClientSessionStore for Store {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.tickets.lock().kx_hint = Some((server_name, group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        match &self.tickets.lock().kx_hint {
            Some((name, group)) if name == server_name => Some(*group),
            _ => None,
        }
    }

    // QUIC is TLS 1.3 only.
    fn set_tls12_session(&self, _: ServerName<'static>, _: Tls12ClientSessionValue) {}

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {}

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        let mut held = self.tickets.lock();
        if held.tickets.len() == MAX_TICKETS {
            held.tickets.pop_front();
        }
        held.tickets.push_back((server_name, value));
        drop(held);
        self.tickets.arrived.send_modify(|n| *n += 1);
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        if !self.gives {
            return None;
        }
        let mut held = self.tickets.lock();
        let at = held
            .tickets
            .iter()
            .position(|(name, _)| name == server_name)?;
        held.tickets.remove(at).map(|(_, value)| value)
    }
}
