//! The one clock every measurement uses: CLOCK_MONOTONIC in nanoseconds.
//!
//! It is system-wide, so timestamps taken in the probe, the workers and the
//! runner can be compared directly. CLOCK_MONOTONIC exists on every kernel we
//! support (2.6.9 has only clock ids 0..=3, so nothing newer is used).

/// Nanoseconds on CLOCK_MONOTONIC.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Seconds since the Unix epoch (CLOCK_REALTIME), for run ids and record stamps.
pub fn unix_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Sleep until `deadline` (mono ns); returns at once if it has passed.
/// nanosleep, not clock_nanosleep: it is in every kernel and never spins.
pub fn sleep_until(deadline: u64) {
    loop {
        let now = mono_ns();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        let ts = libc::timespec { tv_sec: (left / 1_000_000_000) as _, tv_nsec: (left % 1_000_000_000) as _ };
        // SAFETY: valid timespec; EINTR just loops.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    }
}
