//! Child processes: the only concurrency bootmark uses.
//!
//! Threads would need futexes, and std's futex use (PRIVATE, BITSET flags)
//! spins on kernels before 2.6.22/2.6.25. A forked child that reports through
//! a pipe and is reaped with wait4 works on every kernel, and wait4's rusage
//! gives honest user/sys figures for exactly the work the child did.
//! The program is single-threaded, so fork is safe.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, RawFd};

/// A running child and the read end of the pipe it reports on.
pub struct Child {
    pub pid: libc::pid_t,
    pub output: File,
}

/// How a child ended and what it used.
#[derive(Clone, Copy, Debug)]
pub struct Exit {
    pub status: libc::c_int,
    pub usage: libc::rusage,
}

impl Exit {
    pub fn success(&self) -> bool {
        libc::WIFEXITED(self.status) && libc::WEXITSTATUS(self.status) == 0
    }

    pub fn describe(&self) -> String {
        if libc::WIFEXITED(self.status) {
            format!("exited with code {}", libc::WEXITSTATUS(self.status))
        } else if libc::WIFSIGNALED(self.status) {
            format!("killed by signal {}", libc::WTERMSIG(self.status))
        } else {
            format!("ended with wait status {}", self.status)
        }
    }
}

/// pipe() with close-on-exec set by fcntl: pipe2 is 2.6.27+.
pub fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for fd in fds {
        // SAFETY: fd was just returned by pipe.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both fds are fresh and owned by nobody else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// Fork a child named `name` (in /proc/PID/comm) that runs `body` with the
/// write end of its pipe and exits with the code `body` returns. A panic in
/// the child becomes exit code 101 with its message on the pipe's reader side
/// missing (the parent sees no report), never a second copy of the parent.
pub fn spawn<F: FnOnce(&mut File) -> i32>(name: &str, body: F) -> io::Result<Child> {
    let (read_end, mut write_end) = pipe()?;
    // SAFETY: single-threaded program; the child only runs `body` and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        drop(read_end);
        set_name(name);
        restore_default_signals();
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut write_end))).unwrap_or(101);
        let _ = write_end.flush();
        // SAFETY: leave without running the parent's atexit handlers or destructors.
        unsafe { libc::_exit(code) };
    }
    drop(write_end);
    Ok(Child { pid, output: read_end })
}

/// Name the process (prctl PR_SET_NAME, 2.6.9+) so `ps` and tests can find it.
pub fn set_name(name: &str) {
    let mut bytes = [0u8; 16];
    for (b, c) in bytes.iter_mut().zip(name.bytes().take(15)) {
        *b = c;
    }
    // SAFETY: a NUL-terminated 16-byte buffer.
    unsafe { libc::prctl(libc::PR_SET_NAME, bytes.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// Children take the default action on SIGINT/SIGTERM, whatever the parent installed.
fn restore_default_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGALRM] {
        // SAFETY: resetting a handler to SIG_DFL is always valid.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Block until `pid` ends; return its status and resource usage (wait4).
pub fn wait(pid: libc::pid_t) -> io::Result<Exit> {
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = raw_wait4(pid, &mut status, 0, &mut usage);
        if r == pid {
            return Ok(Exit { status, usage });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// wait4 as the kernel defines it. Not libc's wrapper: on i686, musl 1.2's
/// `wait4` fills a 64-bit-time rusage while the libc crate's struct still has
/// 32-bit timevals, so every CPU figure read back as zero. The raw syscall
/// fills the kernel's native layout, which is the libc crate's on both arches.
fn raw_wait4(
    pid: libc::pid_t,
    status: &mut libc::c_int,
    options: libc::c_int,
    usage: &mut libc::rusage,
) -> libc::pid_t {
    // SAFETY: valid out-pointers of the kernel's types.
    unsafe { libc::syscall(libc::SYS_wait4, pid, status as *mut _, options, usage as *mut _) as libc::pid_t }
}

/// Non-blocking check: Some(exit) if `pid` has ended.
pub fn try_wait(pid: libc::pid_t) -> io::Result<Option<Exit>> {
    let mut status = 0;
    // SAFETY: as in `wait`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = raw_wait4(pid, &mut status, libc::WNOHANG, &mut usage);
    match r {
        0 => Ok(None),
        r if r == pid => Ok(Some(Exit { status, usage })),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Send a signal to a process (or, with a negative pid, a process group).
pub fn kill(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(pid, sig) };
}

/// Read a child's whole report, then reap it.
pub fn collect_report(mut child: Child) -> io::Result<(Vec<u8>, Exit)> {
    let mut out = Vec::new();
    child.output.read_to_end(&mut out)?;
    let exit = wait(child.pid)?;
    Ok((out, exit))
}

/// Seconds of user and system CPU in a rusage.
pub fn cpu_seconds(u: &libc::rusage) -> (f64, f64) {
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(u.ru_utime), s(u.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_reports_through_its_pipe_and_is_reaped_with_usage() {
        let child = spawn("bm-test", |out| {
            out.write_all(b"hello from child").unwrap();
            7
        })
        .unwrap();
        let (out, exit) = collect_report(child).unwrap();
        assert_eq!(out, b"hello from child");
        assert!(libc::WIFEXITED(exit.status));
        assert_eq!(libc::WEXITSTATUS(exit.status), 7);
        assert!(!exit.success());
    }
}
