//! The `int64` workload: a 64-bit integer loop long used to compare CPUs on
//! integer division, multiplication and addition.
//!
//! ```text
//! a = b = c = d = 1
//! repeat N times: a = d % 0xFFFFFFFFFFFFFFF; b = a + a + 1; c = b * 4; d = c / 2
//! ```
//!
//! After the standard 100,000,000 iterations the state is
//! `a=436906 b=873813 c=3495252 d=1747626`. The loop is run for real: its
//! inputs pass through [`std::hint::black_box`], so the compiler cannot fold
//! it to constants, and every result is checked against an independent
//! oracle ([`expected`]), so a broken or "optimised away" loop is caught.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Iterations of the standard workload.
pub const STANDARD_ITERATIONS: u64 = 100_000_000;

const MODULUS: i64 = 0xFFF_FFFF_FFFF_FFFF;

/// The loop's four variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub a: i64,
    pub b: i64,
    pub c: i64,
    pub d: i64,
}

impl State {
    /// The state every run starts from.
    pub const START: State = State {
        a: 1,
        b: 1,
        c: 1,
        d: 1,
    };
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a={} b={} c={} d={}", self.a, self.b, self.c, self.d)
    }
}

/// Runs the loop `iterations` times from [`State::START`].
///
/// Values stay below 2^63, so no step overflows.
#[inline(never)]
pub fn run_loop(iterations: u64) -> State {
    // Opaque inputs: the optimiser must execute every iteration.
    let State {
        mut a,
        mut b,
        mut c,
        mut d,
    } = black_box(State::START);
    for _ in 0..black_box(iterations) {
        a = d % MODULUS;
        b = a + a + 1;
        c = b * 4;
        d = c / 2;
    }
    black_box(State { a, b, c, d })
}

/// The state after `iterations` steps, computed without running them all.
///
/// `d` only ever takes the values 4a + 2 with `a = d mod (2^60 − 1)`, and the
/// sequence returns to its first value after [`PERIOD`] steps, so the state
/// after n steps equals the state after `n mod PERIOD` steps (for n ≥ 1).
pub fn expected(iterations: u64) -> State {
    if iterations == 0 {
        return State::START;
    }
    let steps = match iterations % PERIOD {
        0 => PERIOD,
        r => r,
    };
    let mut s = State::START;
    for _ in 0..steps {
        s.a = s.d % MODULUS;
        s.b = s.a + s.a + 1;
        s.c = s.b * 4;
        s.d = s.c / 2;
    }
    s
}

/// Length of the cycle of the loop's state (found by direct simulation and
/// checked by a test).
pub const PERIOD: u64 = 90;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Iterations per copy of the loop.
    pub iterations: u64,
    /// Copies run at the same time, one per thread.
    pub threads: usize,
    /// Timed repetitions.
    pub repetitions: usize,
}

/// The wall times of one measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub settings: Settings,
    /// For each repetition, the wall time from the common start of all
    /// threads until the last one finished.
    pub wall: Vec<Duration>,
}

impl Measurement {
    /// Loop iterations per second across all threads, one value per
    /// repetition.
    pub fn throughput_per_sec(&self) -> Vec<f64> {
        let work = self.settings.iterations as f64 * self.settings.threads as f64;
        self.wall.iter().map(|w| work / w.as_secs_f64()).collect()
    }
}

/// Why a measurement failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(
        "the int64 loop ended with {got} but must end with {expected}: the CPU, the compiler or the build is broken"
    )]
    WrongResult { got: State, expected: State },
    #[error("the int64 workload needs at least one thread and one repetition")]
    Empty,
    #[error("could not start a worker thread: {0}")]
    Spawn(String),
}

/// Runs `settings.threads` copies of the loop at once, `repetitions` times,
/// and checks every copy's result.
pub fn measure(settings: Settings) -> Result<Measurement, Error> {
    if settings.threads == 0 || settings.repetitions == 0 {
        return Err(Error::Empty);
    }
    let want = expected(settings.iterations);
    let mut wall = Vec::with_capacity(settings.repetitions);
    for _ in 0..settings.repetitions {
        let (elapsed, results) = run_parallel(settings.iterations, settings.threads)?;
        if let Some(&got) = results.iter().find(|&&s| s != want) {
            return Err(Error::WrongResult {
                got,
                expected: want,
            });
        }
        wall.push(elapsed);
    }
    Ok(Measurement { settings, wall })
}

/// Strong scaling: a fixed amount of work shared out among a pool of
/// threads, so more threads should finish the same work sooner.
///
/// The total of iterations is cut into `tasks` pieces of (nearly) equal
/// length. The cut does not depend on `threads`, so every thread count does
/// exactly the same work; workers take the next task from a shared counter
/// until none is left, which balances the load without a lock per task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitSettings {
    /// Iterations in total, over all tasks.
    pub iterations: u64,
    /// Pieces the work is cut into (keep it the same across thread counts).
    pub tasks: usize,
    /// Worker threads taking tasks.
    pub threads: usize,
    /// Timed repetitions.
    pub repetitions: usize,
}

impl SplitSettings {
    /// The iterations of task `i`: the remainder of the cut goes one each to
    /// the first tasks.
    pub fn task_iterations(&self, i: usize) -> u64 {
        let tasks = self.tasks as u64;
        let base = self.iterations / tasks;
        base + u64::from((i as u64) < self.iterations % tasks)
    }
}

/// The wall times of one strong-scaling measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitMeasurement {
    pub settings: SplitSettings,
    /// For each repetition, the wall time from the common start of all
    /// workers until the last task was done.
    pub wall: Vec<Duration>,
}

impl SplitMeasurement {
    /// Loop iterations per second, one value per repetition.
    pub fn throughput_per_sec(&self) -> Vec<f64> {
        let work = self.settings.iterations as f64;
        self.wall.iter().map(|w| work / w.as_secs_f64()).collect()
    }
}

/// Runs `settings.iterations` in total, cut into `settings.tasks` tasks that
/// `settings.threads` workers share, `repetitions` times, and checks every
/// task's result against [`expected`].
pub fn measure_split(settings: SplitSettings) -> Result<SplitMeasurement, Error> {
    if settings.threads == 0 || settings.repetitions == 0 || settings.tasks == 0 {
        return Err(Error::Empty);
    }
    // Tasks have one of two lengths; their answers are known before timing.
    let short = settings.task_iterations(settings.tasks - 1);
    let answers = [(short, expected(short)), (short + 1, expected(short + 1))];
    let mut wall = Vec::with_capacity(settings.repetitions);
    for _ in 0..settings.repetitions {
        let next = AtomicUsize::new(0);
        let (elapsed, results) = run_gated(settings.threads, || {
            let (mut done, mut wrong) = (0usize, None);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= settings.tasks {
                    break;
                }
                let n = settings.task_iterations(i);
                let got = run_loop(n);
                let want = if n == short {
                    answers[0].1
                } else {
                    answers[1].1
                };
                if got != want {
                    wrong.get_or_insert((got, want));
                }
                done += 1;
            }
            (done, wrong)
        })?;
        if let Some((got, expected)) = results.iter().find_map(|r| r.1) {
            return Err(Error::WrongResult { got, expected });
        }
        let done: usize = results.iter().map(|r| r.0).sum();
        assert_eq!(done, settings.tasks, "every task runs exactly once");
        wall.push(elapsed);
    }
    Ok(SplitMeasurement { settings, wall })
}

/// Starts `threads` copies together and times from the moment they are
/// released until the last one is done.
fn run_parallel(iterations: u64, threads: usize) -> Result<(Duration, Vec<State>), Error> {
    run_gated(threads, || run_loop(iterations))
}

/// Starts `threads` workers, each running `work` once, releases them
/// together and times from that moment until the last one is done. Spawning
/// happens before the clock starts, so thread creation is not timed.
fn run_gated<T: Send>(
    threads: usize,
    work: impl Fn() -> T + Sync,
) -> Result<(Duration, Vec<T>), Error> {
    let gate = Gate::default();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let (gate, work) = (&gate, &work);
            let spawned = std::thread::Builder::new()
                .name(format!("int64-{i}"))
                .spawn_scoped(scope, move || gate.arrive_and_wait().then(work));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    // Let the threads already waiting go home without working.
                    gate.open(false);
                    return Err(Error::Spawn(e.to_string()));
                }
            }
        }
        gate.wait_for(threads);
        let start = Instant::now();
        gate.open(true);
        let results: Vec<T> = handles
            .into_iter()
            .filter_map(|h| h.join().expect("the int64 loop cannot panic"))
            .collect();
        Ok((start.elapsed(), results))
    })
}

/// A starting gate: workers report in and wait; the timer opens the gate
/// once all are ready (or tells them to quit when one could not start).
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    ready: usize,
    open: Option<bool>,
}

impl Gate {
    /// Reports in and waits; true means "go", false means "quit".
    fn arrive_and_wait(&self) -> bool {
        let mut state = self.state.lock().expect("gate lock");
        state.ready += 1;
        self.changed.notify_all();
        loop {
            if let Some(go) = state.open {
                return go;
            }
            state = self.changed.wait(state).expect("gate lock");
        }
    }

    fn wait_for(&self, workers: usize) {
        let mut state = self.state.lock().expect("gate lock");
        while state.ready < workers {
            state = self.changed.wait(state).expect("gate lock");
        }
    }

    fn open(&self, go: bool) {
        self.state.lock().expect("gate lock").open = Some(go);
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_run_ends_with_the_published_state() {
        let want = State {
            a: 436_906,
            b: 873_813,
            c: 3_495_252,
            d: 1_747_626,
        };
        assert_eq!(expected(STANDARD_ITERATIONS), want);
        assert_eq!(run_loop(STANDARD_ITERATIONS), want);
    }

    #[test]
    fn the_oracle_agrees_with_the_loop_for_every_short_run() {
        for n in 0..400 {
            assert_eq!(run_loop(n), expected(n), "after {n} iterations");
        }
        assert_eq!(run_loop(123_457), expected(123_457));
    }

    #[test]
    fn the_period_is_the_first_return_of_d() {
        let first = expected(1);
        let returns: Vec<u64> = (2..=200).filter(|&n| expected(n) == first).collect();
        assert_eq!(returns.first(), Some(&(PERIOD + 1)));
        // And it is a real cycle, not only the same d by chance.
        let mut s = State::START;
        let mut seen = Vec::new();
        for _ in 0..PERIOD {
            s.a = s.d % MODULUS;
            s.b = s.a + s.a + 1;
            s.c = s.b * 4;
            s.d = s.c / 2;
            assert!(!seen.contains(&s.d));
            seen.push(s.d);
        }
    }

    #[test]
    fn measure_runs_every_copy_and_times_each_repetition() {
        let m = measure(Settings {
            iterations: 1_000_000,
            threads: 2,
            repetitions: 3,
        })
        .unwrap();
        assert_eq!(m.wall.len(), 3);
        assert!(m.wall.iter().all(|w| !w.is_zero()));
        let tp = m.throughput_per_sec();
        assert_eq!(tp.len(), 3);
        assert!(tp.iter().all(|&x| x.is_finite() && x > 0.0));
    }

    #[test]
    fn the_split_shares_out_every_iteration_whatever_the_thread_count() {
        let s = SplitSettings {
            iterations: 1_003,
            tasks: 10,
            threads: 3,
            repetitions: 1,
        };
        let lengths: Vec<u64> = (0..s.tasks).map(|i| s.task_iterations(i)).collect();
        assert_eq!(lengths.iter().sum::<u64>(), 1_003);
        assert_eq!(lengths[..3], [101, 101, 101]);
        assert!(lengths[3..].iter().all(|&n| n == 100));
        for threads in [1, 2, 3, 7] {
            let m = measure_split(SplitSettings {
                iterations: 2_000_000,
                tasks: 16,
                threads,
                repetitions: 2,
            })
            .unwrap();
            assert_eq!(m.wall.len(), 2);
            assert!(
                m.throughput_per_sec()
                    .iter()
                    .all(|&x| x.is_finite() && x > 0.0)
            );
        }
    }

    #[test]
    fn the_split_runs_with_more_tasks_than_iterations_and_refuses_empty_settings() {
        let m = measure_split(SplitSettings {
            iterations: 5,
            tasks: 8,
            threads: 2,
            repetitions: 1,
        })
        .unwrap();
        assert_eq!(m.wall.len(), 1);
        let empty = SplitSettings {
            iterations: 10,
            tasks: 0,
            threads: 1,
            repetitions: 1,
        };
        assert_eq!(measure_split(empty), Err(Error::Empty));
    }

    #[test]
    fn measure_refuses_empty_settings() {
        let empty = Settings {
            iterations: 10,
            threads: 0,
            repetitions: 1,
        };
        assert_eq!(measure(empty), Err(Error::Empty));
    }
}
