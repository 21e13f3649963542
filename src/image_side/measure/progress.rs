//! Progress counters shared between a worker (and its instance children) and
//! the runner, in an anonymous MAP_SHARED page.
//!
//! Atomics in shared memory need no syscalls and no futex: the runner reads
//! them for heartbeats and, when a watchdog cuts a hung workload, for the
//! partial results it reports.

use std::sync::atomic::{AtomicU64, Ordering};

#[repr(C)]
struct Counters {
    bytes_written: AtomicU64,
    bytes_read: AtomicU64,
}

/// Handle to the shared counters. Created before fork; children inherit it.
pub struct Progress {
    counters: *const Counters,
}

impl Progress {
    pub fn new() -> std::io::Result<Progress> {
        // SAFETY: anonymous shared mapping of one page; zeroed memory is two
        // valid AtomicU64s.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Progress { counters: p as *const Counters })
    }

    fn c(&self) -> &Counters {
        // SAFETY: the mapping lives as long as self.
        unsafe { &*self.counters }
    }

    pub fn add_written(&self, n: u64) {
        self.c().bytes_written.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_read(&self, n: u64) {
        self.c().bytes_read.fetch_add(n, Ordering::Relaxed);
    }

    pub fn written(&self) -> u64 {
        self.c().bytes_written.load(Ordering::Relaxed)
    }

    pub fn read(&self) -> u64 {
        self.c().bytes_read.load(Ordering::Relaxed)
    }

    pub fn reset(&self) {
        self.c().bytes_written.store(0, Ordering::Relaxed);
        self.c().bytes_read.store(0, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.counters as *mut libc::c_void, 4096) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_updates_the_parents_view() {
        let p = Progress::new().unwrap();
        // SAFETY: the test child only touches atomics and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            p.add_written(4096);
            p.add_read(10);
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(p.written(), 4096);
        assert_eq!(p.read(), 10);
    }
}
