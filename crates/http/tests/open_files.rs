//! Connections past the open-file limit fail with their errno named
//! ("too many open files"), not as an unnamed "connect failed". Its own
//! test binary: it lowers the process's open-file limit.

/// The fault tests' servers and settings; this binary uses the settings.
#[allow(dead_code)]
mod common;

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_http::{ErrorClass, Stop};

/// Descriptors open in this process now.
fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64)
}

#[test]
fn connections_past_the_open_file_limit_are_named_too_many_open_files() {
    // A listener that never accepts: connects complete in its backlog.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("bound");
    // Room for the engine's event loop and a few connections, not 200.
    let limit = open_descriptors() + 24;
    let rl = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: setrlimit on this process with a valid struct; lowering is
    // always allowed.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) }, 0);

    let settings = common::settings(
        &format!("http://{addr}/"),
        Stop::Duration(Duration::from_millis(500)),
        200,
        Duration::from_secs(5),
    );
    let o = dyno_http::run(settings, Arc::new(AtomicBool::new(false)), |_| {}).expect("runs");
    let s = &o.stats;
    assert!(
        s.errors.of(ErrorClass::ConnectTooManyFiles) > 0,
        "errors: {:?}",
        s.errors
    );
    assert_eq!(s.errors.of(ErrorClass::ConnectOther), 0, "none unnamed");
    assert_eq!(
        ErrorClass::ConnectTooManyFiles.as_str(),
        "connect_too_many_open_files"
    );
    drop(listener);
}
