//! A microsecond-precise timer for the open model's schedules, shared by
//! the HTTP engine (`dyno http --rate`) and the database engine
//! (`dyno db run -R`).
//!
//! tokio's timer wheel has millisecond ticks and rounds deadlines up, so a
//! request due at t would leave 1–2 ms late and that delay, the
//! generator's own, would be counted as server latency. Each worker thread
//! instead keeps its due times in a heap behind one `timerfd` (nanosecond
//! resolution), armed for the earliest of them and watched by the thread's
//! event loop; one driver task wakes every sleeper whose time has come.
//! Single-threaded by design: it lives on a worker's `LocalSet`.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

/// One thread's precise timer. Clone it into every task that sleeps.
#[derive(Debug, Clone)]
pub struct Timer {
    fd: Rc<AsyncFd<OwnedFd>>,
    state: Rc<RefCell<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Sleepers by due time; `u64` breaks ties and keeps the order total.
    queue: BinaryHeap<Reverse<(Instant, u64, WakerCell)>>,
    next_id: u64,
    /// The due time the timerfd is armed for.
    armed: Option<Instant>,
}

/// A waker that sorts as equal to every other, so the heap orders entries
/// by time and id alone.
#[derive(Debug)]
struct WakerCell(Waker);

impl PartialEq for WakerCell {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for WakerCell {}
impl PartialOrd for WakerCell {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for WakerCell {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl Timer {
    /// Creates the timer of the current thread; must be called inside its
    /// tokio runtime. Also spawns (on the current `LocalSet`) the task that
    /// fires it; that task ends when every clone of the timer is dropped.
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall; the returned descriptor is owned below.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // The thread's timer slack delays hrtimer expiry (50 µs by
        // default); 1 µs is plenty for a load generator's schedule.
        // SAFETY: prctl with PR_SET_TIMERSLACK only changes this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong) };
        // SAFETY: an OwnedFd keeps its descriptor open and unchanged until
        // the AsyncFd that owns it is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        let timer = Timer {
            fd: Rc::new(fd),
            state: Rc::new(RefCell::new(State::default())),
        };
        let weak_state = Rc::downgrade(&timer.state);
        let fd = Rc::clone(&timer.fd);
        tokio::task::spawn_local(async move {
            loop {
                let Ok(mut guard) = fd.readable().await else {
                    return;
                };
                let mut expirations = [0u8; 8];
                // SAFETY: reading 8 bytes into an 8-byte buffer.
                unsafe {
                    libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8);
                }
                guard.clear_ready();
                let Some(state) = weak_state.upgrade() else {
                    return;
                };
                fire(&fd, &state);
            }
        });
        Ok(timer)
    }

    /// Completes at `due` (immediately if it has passed).
    pub fn sleep_until(&self, due: Instant) -> Sleep {
        Sleep {
            timer: self.clone(),
            due,
        }
    }
}

/// Wakes every sleeper whose time has come and re-arms for the next.
fn fire(fd: &AsyncFd<OwnedFd>, state: &RefCell<State>) {
    let mut s = state.borrow_mut();
    let now = Instant::now();
    while let Some(Reverse((due, _, _))) = s.queue.peek() {
        if *due > now {
            break;
        }
        if let Some(Reverse((_, _, waker))) = s.queue.pop() {
            waker.0.wake();
        }
    }
    s.armed = None;
    if let Some(Reverse((due, _, _))) = s.queue.peek() {
        let due = *due;
        arm(fd, due);
        s.armed = Some(due);
    }
}

/// Arms the timerfd to fire at `due` (relative to now; at least 1 ns, as a
/// zero value would disarm it).
fn arm(fd: &AsyncFd<OwnedFd>, due: Instant) {
    let wait = due
        .saturating_duration_since(Instant::now())
        .max(Duration::from_nanos(1));
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(wait.subsec_nanos() as i32),
        },
    };
    // SAFETY: a valid timerfd and a fully initialised itimerspec.
    unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
}

/// The future of [`Timer::sleep_until`].
#[derive(Debug)]
pub struct Sleep {
    timer: Timer,
    due: Instant,
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.due {
            return Poll::Ready(());
        }
        let mut s = self.timer.state.borrow_mut();
        let id = s.next_id;
        s.next_id += 1;
        s.queue
            .push(Reverse((self.due, id, WakerCell(cx.waker().clone()))));
        if s.armed.is_none_or(|armed| self.due < armed) {
            arm(&self.timer.fd, self.due);
            s.armed = Some(self.due);
        }
        Poll::Pending
    }
}

/// Blocks the calling thread until the wall clock reads `at` (a start
/// that several machines agreed on), or `stopped` says to give up; wakes
/// every 20 ms at most to look. Both engines wait at their segment's start
/// barrier with it.
pub fn sleep_until_wall(at: std::time::SystemTime, stopped: impl Fn() -> bool) {
    while !stopped() {
        match at.duration_since(std::time::SystemTime::now()) {
            Ok(left) if !left.is_zero() => std::thread::sleep(left.min(Duration::from_millis(20))),
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wall_clock_wait_ends_at_its_time_or_when_stopped() {
        use std::time::SystemTime;
        // A time already past: at once, though nothing says stop.
        let past = SystemTime::now() - Duration::from_secs(1);
        let started = std::time::Instant::now();
        sleep_until_wall(past, || false);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not waited for"
        );
        // A time far ahead: until told to stop.
        let asked = std::cell::Cell::new(0);
        sleep_until_wall(SystemTime::now() + Duration::from_secs(3600), || {
            asked.set(asked.get() + 1);
            asked.get() > 3
        });
        assert_eq!(asked.get(), 4);
        // The time reached: it returns with the wall clock past it.
        let at = SystemTime::now() + Duration::from_millis(30);
        sleep_until_wall(at, || false);
        assert!(SystemTime::now() >= at);
    }

    use super::*;

    fn local<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    #[test]
    fn sleepers_wake_at_their_due_time_in_order() {
        let woke = local(async {
            let timer = Timer::new().unwrap();
            let start = Instant::now();
            let order = Rc::new(RefCell::new(Vec::new()));
            let mut tasks = Vec::new();
            // Registered out of order; must wake in due order.
            for ms in [30u64, 10, 20, 0] {
                let timer = timer.clone();
                let order = Rc::clone(&order);
                tasks.push(tokio::task::spawn_local(async move {
                    let due = start + Duration::from_millis(ms);
                    timer.sleep_until(due).await;
                    assert!(Instant::now() >= due, "woke before its due time");
                    order.borrow_mut().push(ms);
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            order.take()
        });
        assert_eq!(woke, vec![0, 10, 20, 30]);
    }

    #[test]
    fn a_past_due_time_completes_at_once() {
        local(async {
            let timer = Timer::new().unwrap();
            timer
                .sleep_until(Instant::now() - Duration::from_secs(1))
                .await;
        });
    }
}
