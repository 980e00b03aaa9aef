//! dyno's own HTTP/3 framing over quinn (issue 50), as `http2` is over
//! TCP: through the h3 crate the client spent ~42,650 instructions a page
//! request against `dyno serve --h3`, a fifth of them in QPACK Huffman
//! coding; in this framing, 19,200 before the last-head cache
//! (callgrind, `probe` below).

pub(crate) mod client;
pub(crate) mod frame;
pub(crate) mod qpack;
pub(crate) mod tickets;

/// A measure, not a test: `DYNO_H3_ADDR=127.0.0.1:PORT cargo test -p
/// dyno-http --release --lib http3::probe -- --ignored --nocapture`
/// against `dyno serve --h3 --threads 1`, to set beside `dyno http --h3
/// --insecure -t1 -c 2 -m 8 -n 20000` on the same server: the CPU a
/// request of the client's `Session` alone (no engine, no histograms), 2
/// connections × 8 streams, one thread. `DYNO_H3_PATH` (`/hello`) and
/// `DYNO_H3_N` (20,000) choose what and how many.
#[cfg(test)]
mod probe {
    use std::rc::Rc;
    use std::time::Duration;

    use super::client::tests::{connect, get};

    #[test]
    #[ignore = "a measure: needs DYNO_H3_ADDR"]
    fn cpu_per_request() {
        let Ok(addr) = std::env::var("DYNO_H3_ADDR") else {
            return;
        };
        let addr: std::net::SocketAddr = addr.parse().unwrap();
        let path = std::env::var("DYNO_H3_PATH").unwrap_or_else(|_| "/hello".into());
        let n: u64 = std::env::var("DYNO_H3_N").map_or(20_000, |n| n.parse().unwrap());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        let path_sent = path.clone();
        let (took, cpu) = local.block_on(&runtime, async move {
            let request = Rc::new(get(addr, "GET", &path_sent));
            let left = Rc::new(std::cell::Cell::new(n));
            let mut sessions = Vec::new();
            for _ in 0..2 {
                sessions.push(connect(addr).await);
            }
            let began = std::time::Instant::now();
            let cpu_before = dyno_env::thread_cpu_time();
            let mut tasks = tokio::task::JoinSet::new();
            for (_, session) in &sessions {
                for _ in 0..8 {
                    let (session, left, request) =
                        (session.clone(), Rc::clone(&left), Rc::clone(&request));
                    tasks.spawn_local(async move {
                        while left.get() > 0 {
                            left.set(left.get() - 1);
                            let answer = session
                                .exchange(&request, Duration::from_secs(10), None, |_, _| {}, || {})
                                .await
                                .unwrap();
                            assert_eq!(answer.status, 200);
                            assert!(answer.body_bytes > 0);
                        }
                    });
                }
            }
            while tasks.join_next().await.is_some() {}
            let took = began.elapsed();
            let cpu = dyno_env::thread_cpu_time() - cpu_before;
            for (endpoint, session) in sessions {
                session.conn.close(0u32.into(), b"");
                endpoint.wait_idle().await;
            }
            (took, cpu)
        });
        eprintln!(
            "{n} requests of {path} in {took:?}: {:.0} req/s, client CPU {:.2} µs a request",
            n as f64 / took.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / n as f64
        );
    }
}
