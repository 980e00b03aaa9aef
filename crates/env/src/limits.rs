//! Per-process resource limits of the running process (`getrlimit`).

use dyno_model::Limits;

/// The soft and hard `RLIMIT_NOFILE` of this process; unlimited is
/// `u64::MAX`. Both are `None` if the call fails.
#[cfg(unix)]
pub(crate) fn capture() -> Limits {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` only writes to the `rlimit` we pass, which is a
    // valid, exclusively borrowed value for the duration of the call.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if rc != 0 {
        return Limits::default();
    }
    Limits {
        open_files_soft: Some(rlim_to_u64(limit.rlim_cur)),
        open_files_hard: Some(rlim_to_u64(limit.rlim_max)),
    }
}

/// Without `getrlimit` the limits are unknown.
#[cfg(not(unix))]
pub(crate) fn capture() -> Limits {
    Limits::default()
}

// `rlim_t` is `u64` on Linux but narrower on some other Unixes, so the cast
// is needed there and redundant here.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)]
fn rlim_to_u64(value: libc::rlim_t) -> u64 {
    if value == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        value as u64
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn matches_getrlimit_and_soft_is_within_hard() {
        let limits = capture();
        let soft = limits.open_files_soft.unwrap();
        let hard = limits.open_files_hard.unwrap();
        assert!(soft >= 1, "a process can always open at least one file");
        assert!(soft <= hard);
    }

    #[test]
    fn infinity_is_u64_max() {
        assert_eq!(rlim_to_u64(libc::RLIM_INFINITY), u64::MAX);
        assert_eq!(rlim_to_u64(1024), 1024);
    }
}
