//! One HTTP/3 connection's driver (`--h3`): QUIC from quinn, HTTP/3
//! framing and QPACK in dyno's own [`crate::http3`]. A connection is a
//! QUIC handshake to the URL's port over UDP, a task reading the server's
//! streams (its control stream's GOAWAY), and `-m` stream loops, each
//! taking tickets from the same schedule as HTTP/1.1 and HTTP/2
//! connections, so `-n`, `-d`, `--rate`, `--replay` and the warm-up mean
//! the same thing over all three.
//!
//! A connection the server ends (CONNECTION_CLOSE, GOAWAY, the idle
//! timeout) fails the requests it still held, by class, and a new one is
//! opened while tickets remain. A request refused before it was sent
//! (after a GOAWAY) goes on the next connection uncounted; one the server
//! says it did not process (H3_REQUEST_REJECTED, RFC 9114 §8.1) goes again
//! counted as retried (`h3_goaway_retried`), not as an error, so `-n`
//! stays exact.
//!
//! What QUIC did (datagrams, system calls, losses, congestion events, the
//! path's round trip, stream-limit stalls) is added to the thread's
//! figures as each connection ends.

use std::cell::{Cell, RefCell};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exchange::Answered;
use super::h2::{Tickets, given_back, static_requests};
use super::scenario::{Filling, Sent, User};
use super::schedule::{Ticket, until_due};
use super::{Local, Shared, Task};
use crate::conn::Endpoint;
use crate::http2;
use crate::http3::client::{Failed, H3_NO_ERROR, H3_REQUEST_REJECTED, Request};
use crate::http3::tickets::{self, Store};
use crate::scenario::template::Refused;
use crate::settings::Settings;
use crate::stats::{ErrorClass, Timing};
use crate::tls::{TlsSetupError, client_config, server_name};

/// What every QUIC connection of a run needs: quinn's client
/// configuration (TLS 1.3 through the run's rustls settings, ALPN `h3`,
/// the transport's limits) and the name the certificate must carry.
#[derive(Clone)]
pub(crate) struct Quic {
    config: quinn::ClientConfig,
    server_name: String,
    /// `--0rtt`: the run's tickets and the configurations that use them.
    early: Option<Early>,
}

/// What `--0rtt` adds: the run's tickets, a configuration whose
/// connections offer early data with one (`config`, above, then resumes
/// without early data once the server has rejected it), and one for the
/// connections opened before the clock to collect them.
#[derive(Clone)]
struct Early {
    tickets: Arc<tickets::Tickets>,
    offer: quinn::ClientConfig,
    collect: quinn::ClientConfig,
}

impl std::fmt::Debug for Quic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quic")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl Quic {
    pub(crate) fn new(settings: &Settings) -> Result<Quic, TlsSetupError> {
        // Checked as TLS checks it; quinn takes the host as text.
        server_name(&settings.target.host)?;
        // One TLS configuration for all: a ticket is taken only by a
        // connection whose certificate verifier made it.
        let tls = client_config(&settings.tls, &[b"h3".to_vec()], &[&rustls::version::TLS13])?;
        let (config, early) = if settings.zero_rtt {
            let tickets = Arc::new(tickets::Tickets::default());
            let giving = Arc::new(Store::giving(Arc::clone(&tickets)));
            let collecting = Arc::new(Store::collecting(Arc::clone(&tickets)));
            let early = Early {
                offer: quinn_config(settings, &tls, Some(giving.clone()), true)?,
                collect: quinn_config(settings, &tls, Some(collecting), false)?,
                tickets,
            };
            (
                quinn_config(settings, &tls, Some(giving), false)?,
                Some(early),
            )
        } else {
            (quinn_config(settings, &tls, None, false)?, None)
        };
        Ok(Quic {
            config,
            early,
            server_name: settings
                .target
                .host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
        })
    }
}

impl Quic {
    /// The configuration a connection for `purpose` uses, and whether it
    /// offers early data: the run's connections do while `--0rtt` holds
    /// and the server has not rejected it.
    fn config_for(&self, purpose: Purpose) -> (&quinn::ClientConfig, bool) {
        match (&self.early, purpose) {
            (Some(early), Purpose::Collect) => (&early.collect, false),
            (Some(early), Purpose::Run) if !early.tickets.rejected() => (&early.offer, true),
            _ => (&self.config, false),
        }
    }
}

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// The run's requests.
    Run,
    /// `--0rtt`, before the clock: collecting the server's tickets.
    Collect,
}

/// A connection made: QUIC's and the HTTP/3 session over it; `early`:
/// it sent its first requests as 0-RTT early data, and this is the
/// server's verdict on them, to come with the handshake's end.
struct Connected {
    connection: quinn::Connection,
    send: SendRequest,
    early: Option<quinn::ZeroRttAccepted>,
}

/// Counts a connection made at `began`, when `counted` (made in the
/// measured part, or before a clock without warm-up), the one place that
/// does: the connection, and its handshake with its time. A 0-RTT one's
/// handshake is counted when the server's verdict on its early data
/// comes; a rejection is counted, and the run's next connections offer
/// no early data (the requests it held go again: [`Failed::EarlyRejected`]).
/// What the first answer on it is charged for connecting.
fn handshaken(
    shared: &Arc<Shared>,
    local: &Rc<RefCell<Local>>,
    began: Instant,
    connected: &mut Connected,
    counted: bool,
) -> Duration {
    let took = began.elapsed();
    shared.connect_succeeded();
    let mut l = local.borrow_mut();
    l.stats.connects += u64::from(counted);
    let Some(verdict) = connected.early.take() else {
        if counted {
            l.stats.h3.handshake(took, false);
        }
        return took;
    };
    drop(l);
    let (shared, local) = (Arc::clone(shared), Rc::clone(local));
    let session = connected.send.clone();
    tokio::task::spawn_local(async move {
        let accepted = verdict.await;
        let handshake = began.elapsed();
        if session.conn.close_reason().is_some() {
            // Lost before the handshake ended: no verdict.
            return;
        }
        if !accepted {
            if let Some(early) = shared.quic.as_ref().and_then(|q| q.early.as_ref()) {
                early.tickets.reject();
            }
            // The control stream went in the rejected early data.
            let _ = session.reopen_control().await;
        }
        if counted {
            let h3 = &mut local.borrow_mut().stats.h3;
            h3.handshake(handshake, accepted);
            h3.early_data_rejected += u64::from(!accepted);
        }
    });
    // The requests went at once: none waited for the handshake.
    took
}

/// `--0rtt`, before the clock: opens connections, one after another,
/// until the run holds a ticket for each of its connections (or this
/// thread has tried twice its `connections`), and closes them. Threads
/// collect at once, into the run's one store. A server that gives no ticket
/// leaves the run's connections to full handshakes, counted as such.
/// `Err`: the server does not speak HTTP/3 there.
pub(super) async fn collect_tickets(shared: &Shared, connections: usize) -> Result<(), String> {
    let Some(quic) = shared.quic.as_ref() else {
        return Ok(());
    };
    let Some(early) = quic.early.as_ref() else {
        return Ok(());
    };
    let endpoint = open_endpoint(shared)?;
    for _ in 0..connections * 2 {
        if early.tickets.len() >= shared.settings.connections {
            break;
        }
        let arrived = early.tickets.arrived();
        let connected = match connect(shared, &endpoint, quic, Purpose::Collect).await {
            Ok(c) => c,
            Err(failed) if failed.refuses_h3 => return Err(refusal(&failed)),
            Err(_) => break,
        };
        // The server sends its tickets after the handshake: wait for one,
        // a while at most.
        let waited =
            tokio::time::timeout(Duration::from_secs(1), early.tickets.more_than(arrived)).await;
        connected.connection.close(H3_NO_ERROR.into(), b"");
        if waited.is_err() {
            // This server gives none.
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_millis(100), endpoint.wait_idle()).await;
    Ok(())
}

/// A QUIC client configuration over `tls`, the run's TLS configuration
/// (TLS 1.3, ALPN `h3`); `store`: where its tickets come from and go
/// (rustls's own in-memory store without); `early_data`: its connections
/// offer 0-RTT.
fn quinn_config(
    settings: &Settings,
    tls: &rustls::ClientConfig,
    store: Option<Arc<Store>>,
    early_data: bool,
) -> Result<quinn::ClientConfig, TlsSetupError> {
    let mut tls = tls.clone();
    if let Some(store) = store {
        tls.resumption = rustls::client::Resumption::store(store);
    }
    tls.enable_early_data = early_data;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| TlsSetupError::Config(rustls::Error::General(e.to_string())))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    // A connection the server stops answering ends after the run's
    // timeout, as a TCP read would; QUIC's own default is 30 s.
    transport.max_idle_timeout(quinn::IdleTimeout::try_from(settings.timeout).ok());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Why a connection's stream loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// No ticket is left.
    Done,
    /// The connection is over; tickets may remain for the next.
    Over,
}

/// An open-model connection opened before the clock starts, as TCP's
/// are (wrk2's way): no request pays for its handshake.
pub(super) struct Opened {
    endpoint: quinn::Endpoint,
    connection: quinn::Connection,
    send: SendRequest,
}

/// Opens one connection for the open model before the clock starts.
/// `Ok(None)`: it failed, and is tried again when its first request is
/// due (and counted then, as TCP's are); `Err(why)`: the server does not
/// speak HTTP/3 there, so the run is not started.
pub(super) async fn open_early(
    shared: &Arc<Shared>,
    local: &Rc<RefCell<Local>>,
) -> Result<Option<Box<Opened>>, String> {
    let Some(quic) = shared.quic.as_ref() else {
        unreachable!("an --h3 run has its QUIC configuration")
    };
    let endpoint = open_endpoint(shared)?;
    let began = Instant::now();
    match connect(shared, &endpoint, quic, Purpose::Run).await {
        Ok(mut connected) => {
            let counted = shared.settings.schedule.warmup.is_zero();
            handshaken(shared, local, began, &mut connected, counted);
            Ok(Some(Box::new(Opened {
                endpoint,
                connection: connected.connection,
                send: connected.send,
            })))
        }
        Err(failed) if failed.refuses_h3 => Err(refusal(&failed)),
        Err(_) => Ok(None),
    }
}

/// The run's QUIC socket for one connection and its successors.
fn open_endpoint(shared: &Shared) -> Result<quinn::Endpoint, String> {
    let Endpoint::Tcp(addr, source) = shared.endpoint else {
        unreachable!("--h3 over a Unix socket is refused by validate")
    };
    quic_endpoint(bind_address(addr, source))
        .map_err(|e| format!("--h3: cannot open a UDP socket for QUIC: {e}"))
}

/// What the user is told when the server does not speak HTTP/3.
fn refusal(failed: &NotConnected) -> String {
    format!(
        "--h3: {}",
        failed
            .why
            .as_deref()
            .unwrap_or("the server does not speak HTTP/3 there")
    )
}

/// The driver loop of one HTTP/3 connection (and its successors), from
/// `opened` when the open model opened it before the clock.
pub(super) async fn h3_connection(task: Task, opened: Option<Box<Opened>>) {
    let Task {
        shared,
        local,
        timer,
        global: global_index,
        ..
    } = task;
    let settings = &shared.settings;
    let tickets = Rc::new(Tickets::new(&shared, &local, global_index));
    let converted: Rc<Converted> = Rc::new(
        static_requests(settings)
            .iter()
            .map(|r| {
                let r = r.as_ref()?;
                Some(h3_request(r))
            })
            .collect(),
    );
    let Some(quic) = shared.quic.clone() else {
        unreachable!("an --h3 run has its QUIC configuration")
    };
    let (endpoint, mut opened) = match opened {
        Some(o) => (o.endpoint.clone(), Some(o)),
        None => match open_endpoint(&shared) {
            Ok(e) => (e, None),
            Err(why) => {
                local
                    .borrow_mut()
                    .firsts
                    .protocol_failure
                    .get_or_insert(why);
                shared.protocol_refused();
                return;
            }
        },
    };
    if settings.scenario.is_some() {
        let link = Rc::new(Link::with(&shared, &local, endpoint.clone(), opened));
        scenario_users(&link, &tickets, timer.as_ref(), global_index).await;
        drop(link);
        let _ = tokio::time::timeout(Duration::from_millis(100), endpoint.wait_idle()).await;
        return;
    }
    let mut backoff = Duration::ZERO;
    loop {
        let began = Instant::now();
        let early = opened.take();
        let early_one = early.is_some();
        let connected = match early {
            Some(o) => Ok(Connected {
                connection: o.connection,
                send: o.send,
                early: None,
            }),
            None => connect(&shared, &endpoint, &quic, Purpose::Run).await,
        };
        let mut connected = match connected {
            Ok(c) => c,
            Err(failed) => {
                // A server that never answered QUIC, or refused h3: every
                // connection would fail alike, so the run stops at the
                // first (as --h2 does against a server without HTTP/2).
                failed.remember(&shared, &local);
                // One ticket pays for the failed attempt.
                let Some(ticket) = tickets.next_waiting(&shared, &local).await else {
                    break;
                };
                local
                    .borrow_mut()
                    .record_error(&shared, &ticket, failed.class, false);
                backoff = (backoff * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
                if !settings.open_model() {
                    tokio::time::sleep(backoff).await;
                }
                continue;
            }
        };
        // One opened before the clock was counted then, and no request
        // pays for its handshake.
        let handshake = (!early_one).then(|| {
            let counted = Instant::now() >= shared.measure_from();
            handshaken(&shared, &local, began, &mut connected, counted)
        });
        let Connected {
            connection, send, ..
        } = connected;
        let state = Rc::new(Conn::new(&shared, connection, handshake));
        // Ends the connection and counts what QUIC did, also when the
        // run's deadline or an interrupt drops this task mid-request.
        let ending = Ending {
            conn: Rc::clone(&state),
            local: Rc::clone(&local),
        };
        let mut loops = tokio::task::JoinSet::new();
        for _ in 0..settings.streams {
            loops.spawn_local(stream_loop(
                Arc::clone(&shared),
                Rc::clone(&local),
                Rc::clone(&tickets),
                timer.clone(),
                Rc::clone(&state),
                send.clone(),
                Rc::clone(&converted),
            ));
        }
        drop(send);
        let mut ended = Ended::Done;
        while let Some(result) = loops.join_next().await {
            if result.map_or(true, |e| e == Ended::Over) {
                ended = Ended::Over;
            }
        }
        drop(ending);
        if ended == Ended::Done || shared.stopped() {
            break;
        }
    }
    // The polite end (CONNECTION_CLOSE) goes out before the socket closes;
    // a server that never answers it is not waited for.
    let _ = tokio::time::timeout(Duration::from_millis(100), endpoint.wait_idle()).await;
}

/// The UDP socket a connection's QUIC endpoint uses, its buffers asked
/// to be [`SOCKET_BUFFER`] (the kernel caps them at net.core.rmem_max and
/// wmem_max, which `dyno doctor http` checks): the defaults (about 208
/// KiB here) drop datagrams a fast server sends while the client is busy.
fn quic_endpoint(bind: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    let socket = std::net::UdpSocket::bind(bind)?;
    let state = quinn::udp::UdpSocketState::new((&socket).into())?;
    // A smaller size granted is not an error: the kernel's ceiling.
    let _ = state.set_recv_buffer_size((&socket).into(), SOCKET_BUFFER);
    let _ = state.set_send_buffer_size((&socket).into(), SOCKET_BUFFER);
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// What a QUIC socket's buffers are asked to be: quic-go's advice (7.5
/// MB), rounded up.
const SOCKET_BUFFER: usize = 8 << 20;

/// The local address QUIC's socket binds: `--source-addr`, or any of the
/// server's IP version.
fn bind_address(server: SocketAddr, source: Option<IpAddr>) -> SocketAddr {
    let ip = source.unwrap_or(match server {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    });
    SocketAddr::new(ip, 0)
}

type SendRequest = crate::http3::client::Session;

/// The static templates' requests and bodies, converted once (keyed by
/// the template's index); `None` for a template made per request.
type Converted = Vec<Option<Request>>;

/// One QUIC connection, as its stream loops share it.
struct Conn {
    connection: quinn::Connection,
    /// The handshake's time, charged to the connection's first answer.
    connect_time: Cell<Option<Duration>>,
    /// Some answer came on this connection.
    answered: Cell<bool>,
    /// What QUIC had done when the measured part began (`None` while the
    /// warm-up lasts): the run counts what it did after.
    baseline: RefCell<Option<quinn::ConnectionStats>>,
}

impl Conn {
    /// A connection made now; `handshake`: its time, which its first
    /// answer is charged (none for one opened before the clock).
    fn new(shared: &Shared, connection: quinn::Connection, handshake: Option<Duration>) -> Conn {
        Conn {
            connection,
            connect_time: Cell::new(handshake),
            answered: Cell::new(false),
            // A connection made in the measured part counts whole.
            baseline: RefCell::new(
                shared
                    .measures(Instant::now())
                    .then(quinn::ConnectionStats::default),
            ),
        }
    }

    /// Takes the baseline of a connection made during the warm-up, at
    /// its first answer after the warm-up's end.
    fn measuring(&self, shared: &Shared, now: Instant) {
        if shared.measures(now) && self.baseline.borrow().is_none() {
            *self.baseline.borrow_mut() = Some(self.connection.stats());
        }
    }
}

/// A connection's end: closed (H3_NO_ERROR), and what QUIC did after the
/// warm-up added to the thread's figures.
struct Ending {
    conn: Rc<Conn>,
    local: Rc<RefCell<Local>>,
}

impl Ending {
    fn new(conn: Conn, local: &Rc<RefCell<Local>>) -> Ending {
        Ending {
            conn: Rc::new(conn),
            local: Rc::clone(local),
        }
    }
}

impl Drop for Ending {
    fn drop(&mut self) {
        let connection = &self.conn.connection;
        connection.close(H3_NO_ERROR.into(), b"");
        if let Some(baseline) = self.conn.baseline.borrow().as_ref()
            && let Ok(mut l) = self.local.try_borrow_mut()
        {
            let stats = connection.stats();
            l.stats.bytes_read += stats.udp_rx.bytes - baseline.udp_rx.bytes;
            l.stats.bytes_written += stats.udp_tx.bytes - baseline.udp_tx.bytes;
            l.stats.h3.add_connection(&stats, baseline);
        }
    }
}

/// A failed attempt to connect.
struct NotConnected {
    class: ErrorClass,
    /// What the server did, in words.
    why: Option<String>,
    /// The server does not speak HTTP/3 there: nothing answered QUIC, or
    /// its handshake refused h3.
    refuses_h3: bool,
}

impl NotConnected {
    /// Keeps what the user is told: the first TLS failure's reason, and a
    /// server that does not speak HTTP/3, which stops the run when no
    /// connection ever succeeded.
    fn remember(&self, shared: &Shared, local: &RefCell<Local>) {
        if self.class == ErrorClass::Tls
            && let Some(why) = &self.why
        {
            local
                .borrow_mut()
                .firsts
                .tls_failure
                .get_or_insert_with(|| why.clone());
        }
        if self.refuses_h3 {
            local
                .borrow_mut()
                .firsts
                .protocol_failure
                .get_or_insert(refusal(self));
            shared.protocol_refused();
        }
    }
}

/// A QUIC handshake and the HTTP/3 connection over it, within
/// `--connect-timeout`. The task reading the server's streams is spawned
/// here.
async fn connect(
    shared: &Shared,
    endpoint: &quinn::Endpoint,
    quic: &Quic,
    purpose: Purpose,
) -> Result<Connected, NotConnected> {
    let Endpoint::Tcp(addr, _) = shared.endpoint else {
        unreachable!("--h3 runs over UDP")
    };
    let answered_before = shared.connected.load(std::sync::atomic::Ordering::Relaxed);
    let timeout = shared.settings.connect_timeout;
    let (config, offer) = quic.config_for(purpose);
    let setup = async {
        let connecting = endpoint
            .connect_with(config.clone(), addr, &quic.server_name)
            .map_err(|e| NotConnected {
                class: ErrorClass::ConnectOther,
                why: Some(format!("QUIC cannot connect to {addr}: {e}")),
                refuses_h3: false,
            })?;
        // With a ticket, the requests go at once as early data, and the
        // server's verdict on it comes with the handshake's end.
        let attempt = if offer {
            connecting.into_0rtt()
        } else {
            Err(connecting)
        };
        let (connection, early) = match attempt {
            Ok((connection, verdict)) => (connection, Some(verdict)),
            Err(connecting) => (
                connecting
                    .await
                    .map_err(|e| handshake_failed(&e, addr, answered_before))?,
                None,
            ),
        };
        // The session reads the server's control stream (GOAWAY) in its
        // own task until the connection ends.
        let send = crate::http3::client::Session::open(connection.clone())
            .await
            .map_err(|e| NotConnected {
                class: ErrorClass::H3Protocol,
                why: Some(format!("the HTTP/3 connection could not be set up: {e}")),
                refuses_h3: !answered_before,
            })?;
        Ok(Connected {
            connection,
            send,
            early,
        })
    };
    match tokio::time::timeout(timeout, setup).await {
        Ok(result) => result,
        Err(_) => Err(NotConnected {
            class: ErrorClass::ConnectTimeout,
            why: Some(format!(
                "no QUIC answer from {addr} (UDP) within {timeout:?}: does the server speak HTTP/3 on that port? (a server announces it in an alt-svc: h3=\":PORT\" header over HTTPS)"
            )),
            refuses_h3: !answered_before,
        }),
    }
}

/// The class of a failed QUIC handshake, and what to tell the user.
fn handshake_failed(
    e: &quinn::ConnectionError,
    addr: SocketAddr,
    answered_before: bool,
) -> NotConnected {
    use quinn::ConnectionError as E;
    let text = e.to_string();
    let (class, refuses_h3, why) = match e {
        E::TimedOut => (
            ErrorClass::ConnectTimeout,
            !answered_before,
            format!(
                "no QUIC answer from {addr} (UDP): does the server speak HTTP/3 on that port? (a server announces it in an alt-svc: h3=\":PORT\" header over HTTPS)"
            ),
        ),
        E::ConnectionClosed(close) if close.error_code == quinn_proto_alert(120) => (
            ErrorClass::H3Protocol,
            true,
            format!("the server refused ALPN h3 ({text}): it speaks QUIC but not HTTP/3 there"),
        ),
        // Crypto errors (RFC 9001 §4.8: 0x100 + a TLS alert), whichever
        // side found them: a certificate not trusted, no SNI a server
        // wants, no common parameters.
        E::ConnectionClosed(close) if is_crypto(close.error_code) => (
            ErrorClass::Tls,
            false,
            format!("the server ended the QUIC handshake: {text}"),
        ),
        E::TransportError(t) if is_crypto(t.code) => (
            ErrorClass::Tls,
            false,
            format!("the QUIC handshake failed: {text}"),
        ),
        E::ConnectionClosed(_) | E::ApplicationClosed(_) => (
            ErrorClass::H3Protocol,
            !answered_before,
            format!("the server closed the QUIC connection during its handshake: {text}"),
        ),
        E::Reset => (
            ErrorClass::Reset,
            false,
            format!("the server reset the QUIC connection: {text}"),
        ),
        E::VersionMismatch | E::TransportError(_) => (
            ErrorClass::H3Protocol,
            !answered_before,
            format!("the QUIC handshake failed: {text}"),
        ),
        E::LocallyClosed | E::CidsExhausted => (
            ErrorClass::ConnectOther,
            false,
            format!("QUIC could not connect: {text}"),
        ),
    };
    NotConnected {
        class,
        why: Some(why),
        refuses_h3,
    }
}

/// The transport error code of TLS alert `alert` (RFC 9001 §4.8).
fn quinn_proto_alert(alert: u8) -> quinn::TransportErrorCode {
    quinn::TransportErrorCode::crypto(alert)
}

fn is_crypto(code: quinn::TransportErrorCode) -> bool {
    (0x100..0x200).contains(&u64::from(code))
}

/// One stream's loop: a ticket, its request, its answer, again, while the
/// connection lasts and tickets remain.
async fn stream_loop(
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    tickets: Rc<Tickets>,
    timer: Option<dyno_load::Timer>,
    conn: Rc<Conn>,
    mut send: SendRequest,
    converted: Rc<Converted>,
) -> Ended {
    let mut scratch = Vec::new();
    loop {
        let Some(ticket) = tickets.next_waiting(&shared, &local).await else {
            return Ended::Done;
        };
        until_due(&ticket, timer.as_ref()).await;
        if conn.connection.close_reason().is_some() {
            // Not sent: the next connection takes it.
            tickets.carried.borrow_mut().push(ticket);
            return Ended::Over;
        }
        let Some(request) = request_for(&shared, &local, &converted, &ticket, &mut scratch) else {
            local
                .borrow_mut()
                .record_error(&shared, &ticket, ErrorClass::Write, false);
            continue;
        };
        let mut step = exchange(&shared, &local, &conn, &mut send, ticket, &request).await;
        while let Step::Again(ticket) = step {
            step = exchange(&shared, &local, &conn, &mut send, ticket, &request).await;
        }
        match step {
            Step::Next | Step::Again(_) => {}
            Step::Unsent => {
                tickets.carried.borrow_mut().push(ticket);
                return Ended::Over;
            }
            Step::Retry => {
                let ticket = given_back(&local, ticket);
                local.borrow_mut().stats.h3.goaway_retried += u64::from(ticket.measured);
                tickets.carried.borrow_mut().push(ticket);
                return Ended::Over;
            }
            Step::Lost => return Ended::Over,
        }
    }
}

/// A scenario's connection over HTTP/3, as its virtual users share it:
/// the current QUIC connection, made again when it is lost or the server
/// sends GOAWAY. The users outlive each connection, as over HTTP/2: a
/// lost connection ends a flow, not a user.
pub(super) struct Link {
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    endpoint: quinn::Endpoint,
    quic: Quic,
    /// The connection steps go on now; it ends when the last step on it
    /// does and it is no longer current.
    current: RefCell<Option<(Rc<Ending>, SendRequest)>>,
    /// A user is making the next connection; the others wait for it.
    connecting: Cell<bool>,
    /// Connection attempts finished, and the class of the last failed one
    /// with its number: the users that waited for it fail with it.
    attempts: Cell<u64>,
    failed: Cell<Option<(u64, ErrorClass)>>,
    ready: tokio::sync::Notify,
    /// The closed model's pause after a failed connection, doubling.
    backoff: Cell<Duration>,
}

impl Link {
    /// A link of its own (a scenario's setup steps).
    pub(super) fn new(
        shared: &Arc<Shared>,
        local: &Rc<RefCell<Local>>,
        opened: Option<Box<Opened>>,
    ) -> Result<Link, String> {
        Ok(Link::with(shared, local, open_endpoint(shared)?, opened))
    }

    /// A link over `endpoint`, starting from `opened` if the open model
    /// opened its connection before the clock.
    fn with(
        shared: &Arc<Shared>,
        local: &Rc<RefCell<Local>>,
        endpoint: quinn::Endpoint,
        opened: Option<Box<Opened>>,
    ) -> Link {
        let Some(quic) = shared.quic.clone() else {
            unreachable!("an --h3 run has its QUIC configuration")
        };
        Link {
            shared: Arc::clone(shared),
            local: Rc::clone(local),
            endpoint,
            quic,
            current: RefCell::new(opened.map(|o| {
                let conn = Conn::new(shared, o.connection, None);
                (Rc::new(Ending::new(conn, local)), o.send)
            })),
            connecting: Cell::new(false),
            attempts: Cell::new(0),
            failed: Cell::new(None),
            ready: tokio::sync::Notify::new(),
            backoff: Cell::new(Duration::ZERO),
        }
    }

    /// A scenario step's request, filled as HTTP/3 fields, and its answer.
    pub(super) async fn send_filling(
        &self,
        filling: Filling<'_>,
        capture: Option<&mut Vec<u8>>,
        ticket: &Ticket,
    ) -> Sent {
        match filling.http2(self.shared.settings.target.scheme.as_str()) {
            Ok(request) => self.step(&request, capture, ticket).await,
            Err(Refused::Unsendable(_)) => Sent::Unsendable,
            Err(Refused::Http2(_)) => Sent::Failed {
                class: ErrorClass::Write,
                sent: false,
            },
        }
    }

    /// The live connection, made now if there is none.
    async fn get(&self) -> Result<(Rc<Ending>, SendRequest), ErrorClass> {
        let seen = self.attempts.get();
        loop {
            if let Some((ending, send)) = self.current.borrow().as_ref()
                && ending.conn.connection.close_reason().is_none()
            {
                return Ok((Rc::clone(ending), send.clone()));
            }
            if let Some((attempt, class)) = self.failed.get()
                && attempt > seen
            {
                return Err(class);
            }
            if !self.connecting.get() {
                break;
            }
            self.ready.notified().await;
        }
        self.connecting.set(true);
        self.current.borrow_mut().take();
        let began = Instant::now();
        let connected = connect(&self.shared, &self.endpoint, &self.quic, Purpose::Run).await;
        self.connecting.set(false);
        self.attempts.set(self.attempts.get() + 1);
        let result = match connected {
            Ok(mut connected) => {
                let counted = self.shared.measures(Instant::now());
                let handshake =
                    handshaken(&self.shared, &self.local, began, &mut connected, counted);
                self.backoff.set(Duration::ZERO);
                let Connected {
                    connection, send, ..
                } = connected;
                let conn = Conn::new(&self.shared, connection, Some(handshake));
                let ending = Rc::new(Ending::new(conn, &self.local));
                *self.current.borrow_mut() = Some((Rc::clone(&ending), send.clone()));
                Ok((ending, send))
            }
            Err(failed) => {
                failed.remember(&self.shared, &self.local);
                self.failed.set(Some((self.attempts.get(), failed.class)));
                self.backoff.set(
                    (self.backoff.get() * 2)
                        .clamp(Duration::from_millis(1), Duration::from_millis(100)),
                );
                Err(failed.class)
            }
        };
        self.ready.notify_waiters();
        result
    }

    /// Retires `ending`'s connection (the server's GOAWAY): the next step
    /// makes a new one, while those still under way on it finish.
    fn retire(&self, ending: &Rc<Ending>) {
        let mut current = self.current.borrow_mut();
        if current.as_ref().is_some_and(|(c, _)| Rc::ptr_eq(c, ending)) {
            current.take();
        }
    }

    /// A scenario step's exchange: its request on the live connection,
    /// again on the next when the server did not process it.
    async fn step(
        &self,
        request: &http2::Request,
        mut capture: Option<&mut Vec<u8>>,
        ticket: &Ticket,
    ) -> Sent {
        let (shared, local) = (&*self.shared, &*self.local);
        let converted = h3_request(request);
        let mut ticket = *ticket;
        loop {
            let (ending, mut send) = match self.get().await {
                Ok(live) => live,
                Err(class) => return Sent::Failed { class, sent: false },
            };
            let got = answer(
                shared,
                local,
                &ending.conn,
                &mut send,
                &ticket,
                &converted,
                capture.as_deref_mut(),
            )
            .await;
            return match got {
                Ok(Got {
                    length_mismatch: true,
                    ..
                }) if &*request.fields[0].1 != b"HEAD" => Sent::Failed {
                    class: ErrorClass::BodyLengthMismatch,
                    sent: true,
                },
                Ok(got) => Sent::Answered(got.answered),
                Err(NoAnswer::Unsent) => {
                    self.retire(&ending);
                    continue;
                }
                Err(NoAnswer::Rejected) => {
                    self.retire(&ending);
                    ticket = given_back(local, ticket);
                    local.borrow_mut().stats.h3.goaway_retried += u64::from(ticket.measured);
                    continue;
                }
                Err(NoAnswer::Early) => {
                    ticket = given_back(local, ticket);
                    continue;
                }
                Err(NoAnswer::Failed { class, sent, lost }) => {
                    if lost {
                        self.retire(&ending);
                    }
                    Sent::Failed { class, sent }
                }
            };
        }
    }
}

/// A connection's scenario users, one per stream (`-m`): each takes a
/// flow's start, makes the flow's steps one after another over the live
/// connection, repeats; they end when the tickets do.
async fn scenario_users(
    link: &Rc<Link>,
    tickets: &Rc<Tickets>,
    timer: Option<&dyno_load::Timer>,
    global_index: usize,
) {
    let settings = &link.shared.settings;
    let Some(scenario) = settings.scenario.as_deref() else {
        return;
    };
    let mut users = tokio::task::JoinSet::new();
    for i in 0..settings.streams {
        let vu = settings
            .segment
            .global((global_index * settings.streams + i) as u64);
        let mut user = User::new(scenario, vu, settings.seed);
        let (link, tickets, timer) = (Rc::clone(link), Rc::clone(tickets), timer.cloned());
        users.spawn_local(async move {
            let (shared, local) = (&*link.shared, &*link.local);
            let mut send = async |filling: Filling<'_>,
                                  _head: bool,
                                  capture: Option<&mut Vec<u8>>,
                                  ticket: &Ticket| {
                link.send_filling(filling, capture, ticket).await
            };
            let pause = || match shared.settings.open_model() {
                false => link.backoff.get(),
                true => Duration::ZERO,
            };
            let next = || tickets.next(shared, local);
            user.live(shared, local, timer.as_ref(), next, &mut send, pause)
                .await;
        });
    }
    while users.join_next().await.is_some() {}
}

/// The request of `ticket` and its body: a static template's converted
/// once, else made now (a template with slots, a replayed request).
fn request_for(
    shared: &Shared,
    local: &RefCell<Local>,
    converted: &[Option<Request>],
    ticket: &Ticket,
    scratch: &mut Vec<u8>,
) -> Option<Request> {
    let settings = &shared.settings;
    let scheme = settings.target.scheme.as_str();
    let made = if settings.replay.is_some() {
        let l = local.borrow();
        let template = l.replayed.get(&ticket.seq)?;
        template.http2(
            scheme,
            ticket.seq,
            &mut fastrand::Rng::with_seed(0),
            scratch,
        )
    } else {
        let which = (ticket.seq % settings.requests.len() as u64) as usize;
        if let Some(request) = &converted[which] {
            return Some(request.clone());
        }
        settings.requests[which].http2(scheme, ticket.seq, &mut local.borrow_mut().rng, scratch)
    };
    Some(h3_request(&made.ok()?))
}

/// An HTTP/2 request's fields as an HTTP/3 request (the same fields:
/// pseudo-fields first, names in lower case), without its body.
fn h3_request(r: &http2::Request) -> Request {
    let fields: Vec<(&[u8], &[u8])> = r.fields.iter().map(|(n, v)| (&n[..], &v[..])).collect();
    Request::new(&fields, r.body.clone())
}

/// What became of one exchange, for the stream's loop.
enum Step {
    /// Answered or failed, and counted: take the next ticket.
    Next,
    /// Not sent: the connection cannot take requests any more (GOAWAY, or
    /// it is closed); the ticket goes on the next connection.
    Unsent,
    /// Sent, and the server says it did not process it: again on the next
    /// connection.
    Retry,
    /// Failed with the connection, and counted.
    Lost,
    /// Sent as early data the server rejected: again on this connection,
    /// with this ticket.
    Again(Ticket),
}

/// Sends `request` for `ticket` and reads its answer, within the run's
/// timeout, and records what came.
async fn exchange(
    shared: &Shared,
    local: &RefCell<Local>,
    conn: &Conn,
    send: &mut SendRequest,
    ticket: Ticket,
    request: &Request,
) -> Step {
    match answer(shared, local, conn, send, &ticket, request, None).await {
        Ok(Got {
            answered,
            length_mismatch,
        }) => {
            let status = answered.status;
            let error = if length_mismatch && !head_request(shared, &ticket) {
                Some(ErrorClass::BodyLengthMismatch)
            } else {
                (!shared.settings.expect_status.contains(status)).then_some(ErrorClass::Status)
            };
            local.borrow_mut().record_response(
                shared,
                &ticket,
                answered.done,
                status,
                answered.body_bytes,
                answered.timing,
                error,
            );
            Step::Next
        }
        Err(NoAnswer::Unsent) => Step::Unsent,
        Err(NoAnswer::Rejected) => Step::Retry,
        Err(NoAnswer::Early) => Step::Again(given_back(local, ticket)),
        Err(NoAnswer::Failed { class, sent, lost }) => {
            local
                .borrow_mut()
                .record_error(shared, &ticket, class, sent);
            if lost { Step::Lost } else { Step::Next }
        }
    }
}

/// An answer, and whether its body's length differs from the length its
/// head announced (a 304's and a HEAD's aside, which announce one they
/// do not send).
struct Got {
    answered: Answered,
    length_mismatch: bool,
}

/// Why a request got no answer.
enum NoAnswer {
    /// Not sent: the connection takes no new request (GOAWAY, closed).
    Unsent,
    /// Sent on a connection that had answered before, and the server says
    /// it did not process it (H3_REQUEST_REJECTED): it may go again.
    Rejected,
    /// Sent as early data the server rejected: it goes again on the same
    /// connection, now past its handshake.
    Early,
    /// It failed with `class`; `sent`: it was in flight; `lost`: the
    /// connection went with it.
    Failed {
        class: ErrorClass,
        sent: bool,
        lost: bool,
    },
}

/// Sends `request` for `ticket` and reads its answer within the run's
/// timeout; with `capture`, the answer's head and body go there as
/// HTTP/1.1 text (a scenario step's checks and extractions read it).
async fn answer(
    shared: &Shared,
    local: &RefCell<Local>,
    conn: &Conn,
    send: &mut SendRequest,
    ticket: &Ticket,
    request: &Request,
    capture: Option<&mut Vec<u8>>,
) -> Result<Got, NoAnswer> {
    let sent = Instant::now();
    let mut server = None;
    let want_server = local.borrow().firsts.server.is_none();
    let result = send
        .exchange(
            request,
            shared.settings.timeout,
            capture,
            |name, value| {
                if want_server && name == b"server" {
                    server = Some(String::from_utf8_lossy(value).into_owned());
                }
            },
            || took_off(local, ticket, sent),
        )
        .await;
    let now = Instant::now();
    match result {
        Ok(answer) => {
            conn.answered.set(true);
            conn.measuring(shared, now);
            if ticket.measured {
                let h3 = &mut local.borrow_mut().stats.h3;
                h3.header_block_written += request.block;
                h3.plain_header_written += request.plain;
                h3.header_block_read += answer.block;
                h3.plain_header_read += answer.plain;
            }
            if let Some(server) = server {
                local
                    .borrow_mut()
                    .firsts
                    .server
                    .get_or_insert(server.into());
            }
            let timing = Timing {
                connect: conn.connect_time.take().unwrap_or(Duration::ZERO),
                waiting: answer.head_at.saturating_duration_since(sent),
                processing: now.saturating_duration_since(sent),
                corrected: ticket.due.map(|due| now.saturating_duration_since(due)),
            };
            Ok(Got {
                answered: Answered {
                    done: now,
                    status: answer.status,
                    body_bytes: answer.body_bytes,
                    timing,
                },
                length_mismatch: answer
                    .content_length
                    .is_some_and(|n| n != answer.body_bytes)
                    && answer.status != 304,
            })
        }
        Err(Failed::Unsent) => Err(NoAnswer::Unsent),
        Err(Failed::EarlyRejected) => Err(NoAnswer::Early),
        Err(Failed::Reset(code)) if code == H3_REQUEST_REJECTED && conn.answered.get() => {
            Err(NoAnswer::Rejected)
        }
        Err(Failed::Reset(_)) => Err(NoAnswer::Failed {
            class: ErrorClass::H3StreamReset,
            sent: true,
            lost: false,
        }),
        Err(Failed::Lost(e)) => Err(NoAnswer::Failed {
            class: connection_class(&e),
            sent: true,
            lost: true,
        }),
        Err(Failed::Timeout) => Err(NoAnswer::Failed {
            class: ErrorClass::ReadTimeout,
            sent: true,
            lost: false,
        }),
        Err(Failed::Malformed(why)) => {
            local.borrow_mut().firsts.malformed.get_or_insert(why);
            Err(NoAnswer::Failed {
                class: ErrorClass::H3Protocol,
                sent: true,
                lost: false,
            })
        }
    }
}

/// Whether `ticket`'s request is a HEAD, whose answer announces a length
/// it does not send.
fn head_request(shared: &Shared, ticket: &Ticket) -> bool {
    let requests = &shared.settings.requests;
    shared.settings.replay.is_none()
        && !requests.is_empty()
        && requests[(ticket.seq % requests.len() as u64) as usize].is_head()
}

/// A measured request is in flight from `sent`: it leaves what is held,
/// its stage takes off, and in the open model its send lag is counted.
fn took_off(local: &RefCell<Local>, ticket: &Ticket, sent: Instant) {
    if !ticket.measured {
        return;
    }
    let mut l = local.borrow_mut();
    l.in_flight += 1;
    l.step_flight(ticket, true);
    l.release(ticket);
    if let Some(stage) = l.stages.get_mut(ticket.stage) {
        stage.took_off();
    }
    if let Some(due) = ticket.due
        && !ticket.retried
    {
        l.lateness(ticket, sent.saturating_duration_since(due));
    }
}

/// The class of a request lost with its connection.
fn connection_class(e: &quinn::ConnectionError) -> ErrorClass {
    use quinn::ConnectionError as E;
    match e {
        // The server closed without error, or went away, while the
        // request was under way.
        E::ApplicationClosed(close) if close.error_code == H3_NO_ERROR.into() => {
            ErrorClass::H3GoAway
        }
        E::TimedOut => ErrorClass::ReadTimeout,
        E::Reset => ErrorClass::Reset,
        E::ConnectionClosed(_) | E::LocallyClosed => ErrorClass::ClosedEarly,
        _ => ErrorClass::H3Protocol,
    }
}
