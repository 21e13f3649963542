//! Running another program from /init — the user's, for a `command`
//! workload; mkfs, to format the target — with fork, execve, poll and
//! wait4, which Linux 2.6.9 has. Not std's `Command`: its machinery was
//! 24 KB of the gzip'ed /init (1,068,785 bytes with it, 1,044,791 without;
//! 2026-12-04), whose common initramfs has a 1 MiB budget.
//!
//! The program gets its own process group, so stopping it stops what it
//! started, and dies with the process that started it (PR_SET_PDEATHSIG),
//! so a watchdog's kill of a worker never leaves it behind. stdin is
//! /dev/null; stdout and stderr come back on pipes, their last bytes kept.

use crate::image_side::confine::{Confinement, Step};
use crate::image_side::measure::clock::{mono_ns, sleep_until};
use crate::image_side::process;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The last `limit` bytes of a stream, and how many there were.
#[derive(Default)]
pub struct Tail {
    kept: Vec<u8>,
    pub total: u64,
    limit: usize,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        self.kept.extend_from_slice(data);
        if self.kept.len() > self.limit {
            self.kept.drain(..self.kept.len() - self.limit);
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.kept).into_owned()
    }

    /// The last few non-empty lines, joined with " | ", for an error message.
    pub fn last_lines(&self, n: usize) -> String {
        let text = self.text();
        let lines: Vec<&str> = text.split('\n').filter(|l| !l.is_empty()).collect();
        lines[lines.len().saturating_sub(n)..].join(" | ")
    }
}

/// One pipe the program writes to, read until it closes.
pub struct Stream {
    file: File,
    open: bool,
    pub tail: Tail,
}

impl Stream {
    fn new(file: File, limit: usize) -> Stream {
        Stream { file, open: true, tail: Tail { limit, ..Tail::default() } }
    }

    /// Read what is there (poll said so); a closed pipe is no longer open.
    fn read_some(&mut self) {
        let mut buf = [0u8; 8192];
        match self.file.read(&mut buf) {
            Ok(0) => self.open = false,
            Ok(n) => self.tail.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.open = false,
        }
    }
}

fn c_string(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::other(format!("'{s}' contains a NUL byte")))
}

/// A started program: its pid and its two output streams.
pub struct Started {
    pub pid: libc::pid_t,
    pub stdout: Stream,
    pub stderr: Stream,
}

/// fork + execve with stdout/stderr on pipes, stdin on /dev/null, in `dir`.
/// An exec failure comes back on a close-on-exec pipe as the errno.
/// With a `confinement`, the program starts inside it (confine.rs).
pub fn start(
    program: &Path,
    args: &[String],
    dir: &Path,
    limit: usize,
    confinement: Option<&Confinement>,
) -> io::Result<Started> {
    let path = c_string(&program.to_string_lossy())?;
    let mut argv = vec![path.clone()];
    for a in args {
        argv.push(c_string(a)?);
    }
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let dir_c = c_string(&dir.to_string_lossy())?;
    let dev_null = c_string("/dev/null")?;
    let (out_r, out_w) = process::pipe()?;
    let (err_r, err_w) = process::pipe()?;
    let (exec_r, exec_w) = process::pipe()?;
    // SAFETY: the program is single-threaded; the child only makes syscalls
    // on memory prepared above, then execs or _exits.
    let pid = match confinement {
        Some(_) => unsafe { Confinement::clone_process() },
        None => unsafe { libc::fork() },
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: plain syscalls on valid fds and NUL-terminated strings.
        unsafe {
            // Its own process group, so stopping it stops what it started.
            libc::setpgid(0, 0);
            // Dies with the worker: the run's watchdog kills the worker's
            // group, which this one is not in.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            let null = libc::open(dev_null.as_ptr(), libc::O_RDONLY);
            if null > 0 {
                libc::dup2(null, 0);
                libc::close(null);
            }
            libc::dup2(out_w.as_raw_fd(), 1);
            libc::dup2(err_w.as_raw_fd(), 2);
            // dup2 onto itself (a parent started with 1 or 2 closed) keeps
            // close-on-exec: clear it, or the program starts without them.
            for fd in 0..3 {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            let failed = match confinement.map(|c| c.enter(exec_w.as_raw_fd())) {
                Some(Err(failed)) => failed,
                _ => {
                    if libc::chdir(dir_c.as_ptr()) == 0 {
                        libc::execv(path.as_ptr(), argv_ptrs.as_ptr());
                    }
                    (Step::Exec, *libc::__errno_location())
                }
            };
            let report = [failed.0 as u32, failed.1 as u32];
            libc::write(exec_w.as_raw_fd(), report.as_ptr().cast(), 8);
            libc::_exit(127);
        }
    }
    // SAFETY: also from this side, so the group exists before any kill.
    unsafe { libc::setpgid(pid, pid) };
    drop((out_w, err_w, exec_w));
    let mut report = [0u8; 8];
    let mut exec_r = exec_r;
    if exec_r.read(&mut report)? == 8 {
        let _ = process::wait(pid);
        let word = |i: usize| u32::from_ne_bytes(report[i..i + 4].try_into().unwrap_or_default());
        let e = io::Error::from_raw_os_error(word(4) as i32);
        let step = Step::from_code(word(0));
        return Err(io::Error::other(format!("{} {}: {e}", step.describe(), program.display())));
    }
    Ok(Started { pid, stdout: Stream::new(out_r, limit), stderr: Stream::new(err_r, limit) })
}

/// How the program's run ended.
pub struct Ended {
    pub exit: process::Exit,
    /// CLOCK_MONOTONIC when the exit was seen.
    pub at_ns: u64,
    pub stopped_at_limit: bool,
    /// Processes it started were still running when it ended (and were killed).
    pub left_behind: bool,
}

/// Read both streams until the program ends, stopping it at `limit_ns`.
pub fn follow(p: &mut Started, limit_ns: u64) -> io::Result<Ended> {
    let mut stopped_at_limit = false;
    loop {
        if let Some(exit) = process::try_wait(p.pid)? {
            let at_ns = mono_ns();
            // What is already in the pipes; a child the program left behind
            // may hold them open, so do not wait for their end.
            poll_streams(p, 0);
            // Its leftovers would run into the next workload's figures.
            // SAFETY: kill has no memory effects.
            let left_behind = unsafe { libc::kill(-p.pid, libc::SIGKILL) } == 0;
            return Ok(Ended { exit, at_ns, stopped_at_limit, left_behind });
        }
        if mono_ns() >= limit_ns && !stopped_at_limit {
            process::kill(-p.pid, libc::SIGKILL);
            stopped_at_limit = true;
        }
        if p.stdout.open || p.stderr.open {
            // Both pipes close when the program exits: poll returns at once.
            let left_ms = limit_ns.saturating_sub(mono_ns()) / 1_000_000;
            poll_streams(p, left_ms.clamp(1, 20) as libc::c_int);
        } else {
            // It closed its output and runs on.
            sleep_until(mono_ns() + 1_000_000);
        }
    }
}

/// poll() both open streams for up to `timeout_ms`, reading what is ready.
fn poll_streams(p: &mut Started, timeout_ms: libc::c_int) {
    loop {
        let streams = [&p.stdout, &p.stderr];
        let mut fds: Vec<libc::pollfd> = streams
            .iter()
            .filter(|s| s.open)
            .map(|s| libc::pollfd { fd: s.file.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        if fds.is_empty() {
            return;
        }
        // SAFETY: fds is a valid array of pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n <= 0 {
            return;
        }
        for fd in fds.iter().filter(|f| f.revents != 0) {
            for s in [&mut p.stdout, &mut p.stderr] {
                if s.open && s.file.as_raw_fd() == fd.fd {
                    s.read_some();
                }
            }
        }
        if timeout_ms != 0 {
            return;
        }
        // With no timeout: keep draining while data is there.
    }
}

/// Run a program to its end in `/` (no time limit), keeping the last
/// `keep` bytes of its output: mkfs and its version.
pub fn run_to_end(program: &Path, args: &[String], keep: usize) -> io::Result<(Ended, Started)> {
    let mut started = start(program, args, Path::new("/"), keep, None)?;
    let ended = follow(&mut started, u64::MAX)?;
    Ok((ended, started))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_bytes_and_counts_all() {
        let mut t = Tail { limit: 8, ..Tail::default() };
        t.push(b"first line\n");
        t.push(b"second\nthird\n");
        assert_eq!(t.total, 24);
        assert_eq!(t.text(), "d\nthird\n");
        assert_eq!(t.last_lines(2), "d | third");
    }

    #[test]
    fn a_program_runs_with_its_output_kept_and_a_missing_one_is_an_error() {
        let args = vec!["-c".to_string(), "echo out; echo err >&2; exit 4".to_string()];
        let (ended, started) = run_to_end(Path::new("/bin/sh"), &args, 100).unwrap();
        assert_eq!(ended.exit.describe(), "exited with code 4");
        assert_eq!((started.stdout.tail.text(), started.stderr.tail.text()), ("out\n".into(), "err\n".into()));
        let err = run_to_end(Path::new("/nonexistent/x"), &[], 100).err().unwrap().to_string();
        assert!(err.contains("cannot run /nonexistent/x") && err.contains("No such file"), "{err}");
    }
}
