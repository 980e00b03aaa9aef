//! The worker pool both load drivers run on: threads, each with its own
//! current-thread event loop; a start gate that waits until every thread
//! is ready (connected); the run's clock (start, end of warm-up,
//! deadline); the deadline cut-off; the per-second timeline; progress
//! counters on their own cache lines; client CPU time.
//!
//! A protocol is a [`Job`]: it sets a thread up (connects), loads (its
//! connections pull tickets from the schedule and record into the thread's
//! own accumulators) and hands back what the thread measured. The pool
//! does everything else, the same way for every protocol:
//!
//! 1. one thread per share, named `<name>-<index>`; each builds its event
//!    loop and runs [`Job::setup`];
//! 2. once every thread is ready, the caller's gate says when the clock
//!    starts (at once, at a wall-clock time shared with other segments,
//!    or never: the run is called off);
//! 3. the threads run [`Job::load`] until it ends by itself (its count
//!    done) or the cut-off comes (the deadline, an interrupt, or a halt a
//!    protocol called; the caller's thread keeps the time and wakes the
//!    threads, so that their event loops hold no timer of the pool's):
//!    what is still under way then is dropped, and the protocol counts it
//!    from its own state in [`Job::finish`];
//! 4. a thread sends each second of the timeline to the caller's thread,
//!    which merges them, once work of a later second ends, and the rest
//!    at the end.
//!
//! No lock, channel message or read-modify-write per request: a thread's
//! tasks share its accumulators through `Rc<RefCell<…>>`; the one
//! cross-thread write per request is a relaxed store of the thread's
//! running totals into its own cache line, which the progress line reads.

use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant, SystemTime};

use tokio::task::LocalSet;

/// How a pool runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Threads are named `<name>-<index>`.
    pub name: &'static str,
    /// Time at the start whose work runs but is not measured.
    pub warmup: Duration,
    /// A duration run: no work starts after the warm-up plus this, and
    /// work under way then is cut. `None`: the run ends when every thread's
    /// load has ended by itself (a count).
    pub duration: Option<Duration>,
    /// A duration run: how long work already under way at the deadline
    /// is waited for before it is cut (k6's `gracefulStop`). Work that
    /// ends in this time belongs to the run, filed in its last second; no
    /// new work starts in it. A capacity step waits up to its objective's
    /// latency limit, so that what was due in the step is judged by its
    /// latency rather than cut for being slow; a plain run waits for
    /// nothing.
    pub grace: Duration,
    /// How often the progress callback is called.
    pub progress_every: Duration,
}

/// The run's clock, fixed when it starts.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Start of the run: the warm-up's start.
    pub start: Instant,
    /// End of the warm-up: what ends before it is not measured.
    pub measure_from: Instant,
    /// A duration run's deadline: no work starts at or after it.
    pub end: Option<Instant>,
    /// The deadline plus the grace ([`Settings::grace`]): work still under
    /// way then is cut, and work that ends at or after it is not part of
    /// the run.
    pub cut: Option<Instant>,
}

impl Clock {
    /// Whether work ending at `at` ended too late to be part of the run:
    /// past the deadline and its grace.
    pub fn over(&self, at: Instant) -> bool {
        self.cut.is_some_and(|cut| at >= cut)
    }

    /// The measured second `at` falls in (0 is the first); work that ended
    /// in the grace after the deadline is filed in the last second.
    fn second(&self, at: Instant) -> usize {
        let at = match self.end {
            Some(end) if at >= end => end
                .checked_sub(Duration::from_nanos(1))
                .unwrap_or(end)
                .max(self.measure_from),
            _ => at,
        };
        at.saturating_duration_since(self.measure_from).as_secs() as usize
    }
}

/// The run-wide flags and the clock, shared by every thread and task of a
/// run and by its caller.
#[derive(Debug)]
pub struct Control {
    /// Ctrl-C: the caller's flag.
    interrupt: Arc<AtomicBool>,
    /// A protocol gave the run up (nothing listens, nothing answers), or
    /// the run was called off before it started.
    halt: AtomicBool,
    clock: OnceLock<Clock>,
    /// Threads ready, and the condition the clock is announced on.
    ready: Mutex<usize>,
    started: Condvar,
    /// The load is cut: the deadline and its grace have passed, or the
    /// run stopped. Set by the caller's thread (or a halt), which wakes
    /// every thread's cut-off through `wake`: a thread's event loop holds
    /// no timer of the pool's, so a closed-model thread parks without
    /// one (a pending timer costs every park of the loop a clock read
    /// and a look through the timer wheel).
    cut: AtomicBool,
    wake: tokio::sync::Notify,
}

impl Control {
    pub fn new(interrupt: Arc<AtomicBool>) -> Arc<Control> {
        Arc::new(Control {
            interrupt,
            halt: AtomicBool::new(false),
            clock: OnceLock::new(),
            ready: Mutex::new(0),
            started: Condvar::new(),
            cut: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
        })
    }

    /// The run's clock.
    ///
    /// # Panics
    /// Before the run has started (in [`Job::setup`]).
    pub fn clock(&self) -> &Clock {
        self.clock.get().expect("the clock is set before any load")
    }

    /// The run's clock, once it has started.
    pub fn started_clock(&self) -> Option<&Clock> {
        self.clock.get()
    }

    /// The run must stop: interrupted, or halted.
    pub fn stopped(&self) -> bool {
        self.interrupted() || self.halted()
    }

    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// Stops the run from within: every thread's load is cut soon after.
    pub fn halt(&self) {
        self.halt.store(true, Ordering::Relaxed);
        self.cut();
    }

    /// Cuts every thread's load now.
    fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }

    pub fn halted(&self) -> bool {
        self.halt.load(Ordering::Relaxed)
    }

    fn lock_ready(&self) -> std::sync::MutexGuard<'_, usize> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the clock now and lets every waiting thread go.
    fn start(&self, settings: &Settings) -> Clock {
        let start = Instant::now();
        let measure_from = start + settings.warmup;
        let end = settings.duration.map(|d| measure_from + d);
        let clock = *self.clock.get_or_init(|| Clock {
            start,
            measure_from,
            end,
            cut: end.map(|end| end + settings.grace),
        });
        let _guard = self.lock_ready();
        self.started.notify_all();
        clock
    }

    /// A thread is ready: says so, and waits for the clock.
    fn ready_and_wait(&self) {
        let mut ready = self.lock_ready();
        *ready += 1;
        self.started.notify_all();
        while self.clock.get().is_none() {
            ready = self.started.wait(ready).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Slots of a thread's [`Counters`].
pub const SLOTS: usize = 8;

/// A thread's running totals for the progress line (what each slot holds
/// is the protocol's), on a cache line of their own; written only by
/// their thread.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct Counters([AtomicU64; SLOTS]);

impl Counters {
    /// Publishes the thread's running total of slot `slot`.
    pub fn set(&self, slot: usize, total: u64) {
        self.0[slot].store(total, Ordering::Relaxed);
    }

    fn get(&self, slot: usize) -> u64 {
        self.0[slot].load(Ordering::Relaxed)
    }
}

/// What one thread finished in one second of the timeline: merged over
/// the threads second by second.
pub trait Slice: Default + Send + 'static {
    fn add(&mut self, other: &Self);
}

/// A thread's timeline: the slice of the second under way, sent to the
/// caller's thread when the next second begins.
#[derive(Debug)]
struct Timeline<S> {
    index: usize,
    current: S,
    tx: Option<mpsc::Sender<(usize, S)>>,
}

impl<S: Slice> Timeline<S> {
    /// Sends the current slice if it is older than `index`, and starts
    /// slice `index`.
    fn roll(&mut self, index: usize) {
        if self.index < index {
            let finished = std::mem::take(&mut self.current);
            if let Some(tx) = &self.tx {
                let _ = tx.send((self.index, finished));
            }
            self.index = index;
        }
    }
}

/// A handle on a thread's timeline, for its tasks.
#[derive(Debug)]
pub struct Seconds<S>(Rc<RefCell<Timeline<S>>>);

impl<S> Clone for Seconds<S> {
    fn clone(&self) -> Self {
        Seconds(Rc::clone(&self.0))
    }
}

impl<S: Slice> Seconds<S> {
    /// The slice of measured work that ended at `at`: the second it fell
    /// in, found from the clock that marked it measured. The seconds
    /// before it are sent, if they were not yet; work ending in a second
    /// already sent goes into the current one.
    pub fn at(&self, clock: &Clock, at: Instant) -> RefMut<'_, S> {
        let mut timeline = self.0.borrow_mut();
        timeline.roll(clock.second(at));
        RefMut::map(timeline, |t| &mut t.current)
    }

    /// Sends the last, partial second and lets the caller's thread know
    /// this thread is done.
    fn close(&self) {
        let mut timeline = self.0.borrow_mut();
        let next = timeline.index + 1;
        timeline.roll(next);
        timeline.tx = None;
    }
}

/// What a [`Job`] sees of its thread.
#[derive(Debug)]
pub struct Thread<S> {
    /// 0-based, below `threads`.
    pub index: usize,
    pub threads: usize,
    pub control: Arc<Control>,
    counters: Arc<Counters>,
    seconds: Seconds<S>,
}

impl<S: Slice> Thread<S> {
    /// This thread's progress counters.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// This thread's timeline.
    pub fn seconds(&self) -> Seconds<S> {
        self.seconds.clone()
    }

    /// This thread's even share of `total` (the first threads take the
    /// remainder).
    pub fn share(&self, total: u64) -> u64 {
        share(total, self.index, self.threads)
    }
}

/// Part `index` of `parts` even shares of `total`, the first parts taking
/// the remainder.
pub fn share(total: u64, index: usize, parts: usize) -> u64 {
    let parts = parts.max(1) as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

/// A protocol's work on one thread.
pub trait Job: Sync {
    /// One second of the timeline.
    type Slice: Slice;
    /// A thread's state: its connections and accumulators.
    type State;
    /// What a thread hands back.
    type Done: Send;
    /// Why a thread could not get ready: the run is called off.
    type Error: Send;

    /// Gets a thread ready before the clock starts (opens its
    /// connections), on the thread's event loop.
    fn setup(
        &self,
        thread: &Thread<Self::Slice>,
    ) -> impl Future<Output = Result<Self::State, Self::Error>>;

    /// The load, from the clock's start; cut (dropped) at the deadline or
    /// when the run stops, so what it measures belongs in `state`.
    fn load(&self, thread: &Thread<Self::Slice>, state: &Self::State) -> impl Future<Output = ()>;

    /// What the thread measured, once its event loop is gone (every task
    /// of it dropped).
    fn finish(&self, thread: &Thread<Self::Slice>, state: Self::State) -> Self::Done;
}

/// The progress of a run, about once per [`Settings::progress_every`].
#[derive(Debug, Clone, Copy)]
pub struct Tick {
    /// Since the clock started (the warm-up included).
    pub elapsed: Duration,
    pub warmup: bool,
    /// Each counter slot summed over the threads.
    pub totals: [u64; SLOTS],
}

/// Why a run did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Failure<E> {
    #[error("could not start load thread {0}: {1}")]
    Thread(usize, io::Error),
    /// A thread's setup failed (the first one's reason).
    #[error("a load thread could not get ready")]
    Setup(E),
    /// The gate called the run off, saying why.
    #[error("{0}")]
    Gate(String),
    #[error("a load thread panicked")]
    Panicked,
}

/// What a run measured, besides what its threads hand back.
#[derive(Debug)]
pub struct Pooled<D, S> {
    /// Each thread's [`Job::finish`], in thread order.
    pub threads: Vec<D>,
    /// The measured seconds, merged over the threads: entry i is second i
    /// of the measured window (the last one partial).
    pub timeline: Vec<S>,
    pub clock: Clock,
    /// The wall-clock time the clock started: what segments of one run
    /// compare to see that they started together.
    pub started_at: SystemTime,
    /// From the first thread's start to every thread ready.
    pub setup: Duration,
    /// When every thread's load had ended or been cut.
    pub finished: Instant,
    /// CPU time (user + system) the threads used from the clock's start
    /// to the end of their load.
    pub cpu: Duration,
    /// How long the threads waited, runnable, for a CPU over the same
    /// time ([`dyno_env::thread_cpu_wait`]); zero where the kernel does
    /// not say. With `cpu` it is how much CPU the client wanted: a client
    /// starved by other work waits where a saturated one runs.
    pub cpu_wait: Duration,
    pub interrupted: bool,
    pub halted: bool,
}

impl<D, S> Pooled<D, S> {
    /// The measured window every rate divides by: from the end of the
    /// warm-up to the deadline of a duration run (or to the stop, if that
    /// came first); for a count, to `last`, the end of the last measured
    /// work (or to the end of the run, if none is known), or to the stop
    /// of a count cut short.
    pub fn window(&self, last: Option<Instant>) -> Duration {
        let Clock {
            measure_from, end, ..
        } = self.clock;
        match end {
            Some(end) if self.interrupted || self.halted => self
                .finished
                .min(end)
                .saturating_duration_since(measure_from),
            Some(end) => end.saturating_duration_since(measure_from),
            // A count cut short ends when it was stopped: its rates are
            // over the time it ran, not up to its last answer (users
            // thinking till the interrupt were part of the run).
            None if self.interrupted || self.halted => {
                self.finished.saturating_duration_since(measure_from)
            }
            None => last
                .unwrap_or(self.finished)
                .saturating_duration_since(measure_from),
        }
    }
}

/// What [`run`] gives back for a job.
pub type PooledBy<J> = Pooled<<J as Job>::Done, <J as Job>::Slice>;

/// The share of `threads` threads that `cpu` kept busy over `window`, in
/// percent: near 100 the client, not the server, set the pace.
pub fn busy_percent(cpu: Duration, window: Duration, threads: usize) -> f64 {
    let capacity = window.as_secs_f64() * threads.max(1) as f64;
    if capacity > 0.0 {
        100.0 * cpu.as_secs_f64() / capacity
    } else {
        0.0
    }
}

/// How often the caller's thread looks at the interrupt flag (which a
/// signal handler sets) while the load runs: an interrupt cuts the load
/// within this long, a delay no one at a terminal notices. Each look is a
/// wake-up of an otherwise idle thread; at 20 ms they cost about 1% of an
/// open-model client's CPU at 2,000 transactions a second.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Resolves when the load must be cut: when the caller's thread (at the
/// deadline and its grace, or soon after an interrupt) or a halt says so.
async fn cutoff(control: &Control) {
    loop {
        let notified = control.wake.notified();
        let mut notified = std::pin::pin!(notified);
        // Registered before the flag is read: a cut between the two
        // still wakes this wait.
        notified.as_mut().enable();
        if control.cut.load(Ordering::Acquire) {
            return;
        }
        notified.await;
    }
}

/// Runs `job` on a pool. `gate` is called on the calling thread once every
/// thread is ready and says when the clock starts: `Ok(None)` at once,
/// `Ok(Some(t))` when the wall clock reads `t` (a segment's common start),
/// `Err(why)` never (the run is called off: [`Failure::Gate`]).
/// `progress` is called from the calling thread.
pub fn run<J: Job>(
    settings: &Settings,
    control: &Arc<Control>,
    job: &J,
    mut progress: impl FnMut(Tick),
    gate: impl FnOnce() -> Result<Option<SystemTime>, String>,
) -> Result<PooledBy<J>, Failure<J::Error>> {
    let threads = settings.threads.max(1);
    let (tx, rx) = mpsc::channel::<(usize, J::Slice)>();
    let counters: Vec<Arc<Counters>> = (0..threads).map(|_| Arc::default()).collect();
    let began = Instant::now();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for (index, counters) in counters.iter().enumerate() {
            let (tx, counters) = (tx.clone(), Arc::clone(counters));
            let for_thread = Arc::clone(control);
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{index}", settings.name))
                .spawn_scoped(scope, move || {
                    let thread = Thread {
                        index,
                        threads,
                        control: for_thread,
                        counters,
                        seconds: Seconds(Rc::new(RefCell::new(Timeline {
                            index: 0,
                            current: J::Slice::default(),
                            tx: Some(tx),
                        }))),
                    };
                    work(job, &thread)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    // Let the threads already started go, to end at once.
                    control.halt();
                    control.start(settings);
                    return Err(Failure::Thread(index, e));
                }
            }
        }
        drop(tx);
        // Start once every thread is ready; one that ended early (its
        // setup failed) does not hold the others.
        wait_ready(control, &handles, threads);
        let setup = began.elapsed();
        let mut called_off = None;
        if handles.iter().any(|h| h.is_finished()) {
            control.halt();
        } else {
            match gate() {
                Ok(Some(at)) => crate::sleep_until_wall(at, || control.stopped()),
                Ok(None) => {}
                Err(why) => {
                    called_off = Some(why);
                    control.halt();
                }
            }
        }
        let started_at = SystemTime::now();
        let clock = control.start(settings);
        let timeline = merge_seconds::<J>(settings, control, &clock, &rx, &counters, &mut progress);
        let finished = Instant::now();
        let (done, cpu, cpu_wait) = join::<J>(handles)?;
        if let Some(why) = called_off {
            return Err(Failure::Gate(why));
        }
        Ok(Pooled {
            threads: done,
            timeline,
            clock,
            started_at,
            setup,
            finished,
            cpu,
            cpu_wait,
            interrupted: control.interrupted(),
            halted: control.halted(),
        })
    })
}

/// Merges each second's slices as the threads send them, and reports
/// progress from the threads' live counts, until every thread has ended;
/// cuts the threads' loads at the clock's cut, or soon after an interrupt.
fn merge_seconds<J: Job>(
    settings: &Settings,
    control: &Control,
    clock: &Clock,
    rx: &mpsc::Receiver<(usize, J::Slice)>,
    counters: &[Arc<Counters>],
    progress: &mut impl FnMut(Tick),
) -> Vec<J::Slice> {
    let mut timeline: Vec<J::Slice> = Vec::new();
    let mut next_tick = clock.start + settings.progress_every;
    loop {
        // The threads' loads are cut from here: at the cut, or soon
        // after an interrupt.
        let now = Instant::now();
        let mut wake = next_tick.min(now + STOP_POLL);
        if !control.cut.load(Ordering::Relaxed) {
            if control.stopped() || clock.over(now) {
                control.cut();
            } else if let Some(cut) = clock.cut {
                // Not once it is cut: the threads' last work after
                // the cut is waited for, not spun on.
                wake = wake.min(cut);
            }
        }
        match rx.recv_timeout(wake.saturating_duration_since(now)) {
            Ok((index, slice)) => {
                if timeline.len() <= index {
                    timeline.resize_with(index + 1, J::Slice::default);
                }
                timeline[index].add(&slice);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = Instant::now();
        if now >= next_tick {
            let mut totals = [0; SLOTS];
            for c in counters {
                for (slot, total) in totals.iter_mut().enumerate() {
                    *total += c.get(slot);
                }
            }
            progress(Tick {
                elapsed: now.saturating_duration_since(clock.start),
                warmup: now < clock.measure_from,
                totals,
            });
            next_tick += settings.progress_every;
        }
    }
    timeline
}

/// Waits until every thread is ready, or one has ended early.
fn wait_ready<T>(
    control: &Control,
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
    threads: usize,
) {
    let mut ready = control.lock_ready();
    while *ready < threads && !handles.iter().any(|h| h.is_finished()) {
        ready = control
            .started
            .wait_timeout(ready, Duration::from_millis(50))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Each thread's result in thread order, with the CPU they used and the
/// time they waited for one; the first failure if any thread failed.
#[allow(clippy::type_complexity)]
fn join<J: Job>(
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<(J::Done, Used), Ended<J::Error>>>>,
) -> Result<(Vec<J::Done>, Duration, Duration), Failure<J::Error>> {
    let mut done = Vec::with_capacity(handles.len());
    let mut cpu = Duration::ZERO;
    let mut cpu_wait = Duration::ZERO;
    let mut failed = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok((d, used))) => {
                done.push(d);
                cpu += used.cpu;
                cpu_wait += used.waited;
            }
            Ok(Err(Ended::Setup(e))) => {
                failed.get_or_insert(Failure::Setup(e));
            }
            Ok(Err(Ended::CalledOff)) => {}
            Err(_) => {
                failed.get_or_insert(Failure::Panicked);
            }
        }
    }
    match failed {
        Some(failure) => Err(failure),
        None => Ok((done, cpu, cpu_wait)),
    }
}

/// The CPU a thread's load used, and how long it waited for one.
struct Used {
    cpu: Duration,
    waited: Duration,
}

/// How a thread ended without its load.
enum Ended<E> {
    Setup(E),
    CalledOff,
}

/// One thread: its event loop, its setup, the wait for the clock, its load
/// with the cut-off. A second of the timeline is sent when work of a later
/// second ends (or the thread ends): no timer of the pool's runs on the
/// thread's event loop.
fn work<J: Job>(job: &J, thread: &Thread<J::Slice>) -> Result<(J::Done, Used), Ended<J::Error>> {
    // Sockets and timers; no signal driver, which every park would visit.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds");
    let set = LocalSet::new();
    let state = set.block_on(&runtime, job.setup(thread));
    let state = match state {
        Ok(state) => state,
        Err(e) => {
            // Ends the thread at once, which the caller's thread sees.
            thread.seconds.0.borrow_mut().tx = None;
            return Err(Ended::Setup(e));
        }
    };
    // Blocks this thread (nothing runs on its event loop yet) until every
    // thread is ready and the clock starts.
    thread.control.ready_and_wait();
    if thread.control.halted() {
        thread.seconds.0.borrow_mut().tx = None;
        return Err(Ended::CalledOff);
    }
    let cpu_before = dyno_env::thread_cpu_time();
    let wait_before = dyno_env::thread_cpu_wait();
    set.block_on(&runtime, async {
        // The load runs until it ends or the cut-off aborts it. The cut-off
        // is a task of its own, so that the load's every wake-up does not
        // poll its timer too.
        let (load, cut) = futures_util::future::abortable(job.load(thread, &state));
        let cutter = {
            let control = Arc::clone(&thread.control);
            tokio::task::spawn_local(async move {
                cutoff(&control).await;
                cut.abort();
            })
        };
        // Aborted or ended, the load is over.
        let _ = load.await;
        cutter.abort();
    });
    // Every task of the thread is dropped with its event loop, before the
    // protocol reads its state.
    drop(set);
    drop(runtime);
    let used = Used {
        cpu: dyno_env::thread_cpu_time().saturating_sub(cpu_before),
        waited: match (wait_before, dyno_env::thread_cpu_wait()) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => Duration::ZERO,
        },
    };
    let done = job.finish(thread, state);
    thread.seconds.close();
    Ok((done, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts ticks of work and when each ended.
    #[derive(Debug, Default)]
    struct Count(u64);

    impl Slice for Count {
        fn add(&mut self, other: &Self) {
            self.0 += other.0;
        }
    }

    /// Each thread does `per_thread` units of `unit` work (1 ms when
    /// `None`; or works until cut with `None`), recording each measured
    /// one in the timeline; one that ends past the cut is not measured.
    struct Sleeper {
        per_thread: Option<u64>,
        fail_setup: Option<usize>,
        unit: Option<Duration>,
    }

    impl Job for Sleeper {
        type Slice = Count;
        type State = Rc<RefCell<(u64, u64)>>;
        type Done = (u64, u64);
        type Error = String;

        async fn setup(&self, thread: &Thread<Count>) -> Result<Self::State, String> {
            if self.fail_setup == Some(thread.index) {
                return Err(format!("thread {} cannot connect", thread.index));
            }
            Ok(Rc::default())
        }

        async fn load(&self, thread: &Thread<Count>, state: &Self::State) {
            let clock = *thread.control.clock();
            let seconds = thread.seconds();
            let counters = thread.counters();
            let mut done = 0;
            // With a unit of its own, none starts past the deadline (as a
            // protocol's loop); without, it works until it is cut.
            while self.per_thread.is_none_or(|n| done < n)
                && (self.unit.is_none() || clock.end.is_none_or(|end| Instant::now() < end))
            {
                // Under way: counted as started, finished below.
                state.borrow_mut().1 += 1;
                tokio::time::sleep(self.unit.unwrap_or(Duration::from_millis(1))).await;
                let now = Instant::now();
                let mut s = state.borrow_mut();
                s.1 -= 1;
                if now >= clock.measure_from && !clock.over(now) {
                    s.0 += 1;
                    seconds.at(&clock, now).0 += 1;
                    counters.set(0, s.0);
                }
                done += 1;
            }
        }

        fn finish(&self, _: &Thread<Count>, state: Self::State) -> (u64, u64) {
            Rc::try_unwrap(state)
                .expect("every task is gone")
                .into_inner()
        }
    }

    fn settings(threads: usize, duration: Option<Duration>) -> Settings {
        Settings {
            threads,
            name: "test",
            warmup: Duration::ZERO,
            duration,
            grace: Duration::ZERO,
            progress_every: Duration::from_millis(100),
        }
    }

    #[test]
    fn a_count_runs_to_its_end_and_the_timeline_adds_up() {
        let control = Control::new(Arc::default());
        let job = Sleeper {
            per_thread: Some(50),
            fail_setup: None,
            unit: None,
        };
        let pooled = run(&settings(3, None), &control, &job, |_| {}, || Ok(None)).expect("runs");
        assert_eq!(pooled.threads, vec![(50, 0); 3]);
        let in_timeline: u64 = pooled.timeline.iter().map(|c| c.0).sum();
        assert_eq!(in_timeline, 150);
        assert!(!pooled.interrupted && !pooled.halted);
        assert!(pooled.window(None) > Duration::from_millis(45));
    }

    #[test]
    fn a_duration_run_is_cut_at_its_deadline_with_work_under_way() {
        let control = Control::new(Arc::default());
        let job = Sleeper {
            per_thread: None,
            fail_setup: None,
            unit: None,
        };
        let mut ticks = Vec::new();
        let d = Duration::from_millis(1300);
        let pooled = run(
            &settings(2, Some(d)),
            &control,
            &job,
            |t| ticks.push(t),
            || Ok(None),
        )
        .expect("runs");
        assert_eq!(pooled.window(None), d);
        for (measured, under_way) in &pooled.threads {
            assert!(*measured > 0);
            // Cut while sleeping: the unit under way was never finished.
            assert_eq!(*under_way, 1);
        }
        let measured: u64 = pooled.threads.iter().map(|t| t.0).sum();
        let in_timeline: u64 = pooled.timeline.iter().map(|c| c.0).sum();
        assert_eq!(in_timeline, measured);
        // Two seconds: one whole, one partial.
        assert_eq!(pooled.timeline.len(), 2);
        assert!(!ticks.is_empty());
        let last = ticks.last().expect("ticked");
        assert!(last.totals[0] <= measured);
    }

    #[test]
    fn work_under_way_at_the_deadline_is_waited_for_through_the_grace() {
        // Units of 400 ms from the start of a 1 s run: the third (0.8 s
        // to 1.2 s) is under way at the deadline and ends in the grace,
        // so it is measured, filed in the last second; none starts after.
        // (A busy machine may delay each by up to 100 ms and change
        // nothing.)
        let job = Sleeper {
            per_thread: None,
            fail_setup: None,
            unit: Some(Duration::from_millis(400)),
        };
        // One thread for 1 s, waiting `grace` past its end.
        let with = |grace: u64| {
            let mut s = settings(1, Some(Duration::from_secs(1)));
            s.grace = Duration::from_millis(grace);
            run(&s, &Control::new(Arc::default()), &job, |_| {}, || Ok(None)).expect("runs")
        };
        let pooled = with(500);
        assert_eq!(pooled.threads, vec![(3, 0)]);
        assert_eq!(pooled.window(None), Duration::from_secs(1));
        assert_eq!(pooled.timeline.len(), 1);
        assert_eq!(pooled.timeline[0].0, 3);
        // Without the grace the third is cut.
        assert_eq!(with(0).threads, vec![(2, 1)]);
        // A grace shorter than the work left cuts it at the grace's end.
        assert_eq!(with(100).threads, vec![(2, 1)]);
    }

    #[test]
    fn a_failed_setup_calls_the_run_off() {
        let control = Control::new(Arc::default());
        let job = Sleeper {
            per_thread: Some(10),
            fail_setup: Some(1),
            unit: None,
        };
        match run(&settings(3, None), &control, &job, |_| {}, || Ok(None)) {
            Err(Failure::Setup(why)) => assert_eq!(why, "thread 1 cannot connect"),
            other => panic!("expected a setup failure, got {other:?}"),
        }
    }

    #[test]
    fn the_gate_can_call_the_run_off() {
        let control = Control::new(Arc::default());
        let job = Sleeper {
            per_thread: Some(10),
            fail_setup: None,
            unit: None,
        };
        match run(
            &settings(2, None),
            &control,
            &job,
            |_| {},
            || Err("no".into()),
        ) {
            Err(Failure::Gate(why)) => assert_eq!(why, "no"),
            other => panic!("expected the gate's refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_interrupt_cuts_a_count() {
        let interrupt = Arc::new(AtomicBool::new(false));
        let control = Control::new(Arc::clone(&interrupt));
        let job = Sleeper {
            per_thread: Some(u64::MAX),
            fail_setup: None,
            unit: None,
        };
        let pooled = run(
            &settings(2, None),
            &control,
            &job,
            |_| interrupt.store(true, Ordering::Relaxed),
            || Ok(None),
        )
        .expect("runs");
        assert!(pooled.interrupted);
        assert!(pooled.threads.iter().all(|t| t.0 > 0 && t.0 < u64::MAX));
        // Its window ends at the stop, not at some earlier last answer
        // (newcomer L21: 50 answers "in 4 ms" of an 8 s run).
        let early = pooled.clock.measure_from;
        assert_eq!(
            pooled.window(Some(early)),
            pooled.finished.saturating_duration_since(early)
        );
    }

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for total in [0u64, 1, 7, 100, 101] {
            for parts in 1..6 {
                let shares: Vec<u64> = (0..parts).map(|i| share(total, i, parts)).collect();
                assert_eq!(shares.iter().sum::<u64>(), total);
                let (lo, hi) = (shares.iter().min(), shares.iter().max());
                assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1));
            }
        }
    }
}
