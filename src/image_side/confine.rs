//! Where a user's program (a `command` workload, fio) runs in a boot: where
//! other disks cannot be reached by name. bootmark's first rule is that only
//! the designated target is written, and a program is the user's own code:
//! a reproducer or a job file that names `/dev/sdb` because that was the
//! scratch disk on the machine it was written for would, on the server
//! under test, write the installed OS.
//!
//! So the program starts in its own mount namespace (clone with
//! CLONE_NEWNS: Linux 2.4.19 on, where unshare came in 2.6.16) whose `/dev`
//! is a fresh, read-only tmpfs holding only null, zero, full, random and
//! urandom (and a writable `/dev/shm`), with the results stick unmounted
//! from its view; and without the capabilities that would give a disk
//! back: CAP_MKNOD (a new node), CAP_SYS_ADMIN (a mount), CAP_SYS_RAWIO
//! and CAP_SYS_MODULE. They are dropped from its permitted, effective and
//! inheritable sets and from the bounding set, which decides what an exec
//! as root gets: the program's own since 2.6.25 (PR_CAPBSET_DROP); before,
//! one for the whole system (/proc/sys/kernel/cap-bound), lowered for the
//! rest of the boot (only the kernel's PID 1 may raise it, and bootmark
//! execs nothing after the plan's programs that needs them).
//!
//! What it does not stop: a program that sets out to escape as root
//! (through another process's `/proc/PID/root`, say). It keeps a careless
//! name from reaching a disk; the record says it ran confined.

use std::ffi::CString;
use std::io;

/// CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_ADMIN, CAP_MKNOD (linux/capability.h, unchanged since 2.2).
pub const DROPPED: [(u32, &str); 4] =
    [(16, "CAP_SYS_MODULE"), (17, "CAP_SYS_RAWIO"), (21, "CAP_SYS_ADMIN"), (27, "CAP_MKNOD")];

/// The character devices a program may have: (name, major, minor).
pub const NODES: [(&str, u32, u32); 5] =
    [("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8), ("urandom", 1, 9)];

/// Where /init mounts the results stick: unmounted from a program's view.
pub const STICK_MOUNT: &str = "/results";

const CLONE_NEWNS: libc::c_ulong = 0x0002_0000;
const PR_CAPBSET_READ: libc::c_int = 23;
const PR_CAPBSET_DROP: libc::c_int = 24;
const CAP_V1: u32 = 0x1998_0330;
const CAP_V3: u32 = 0x2008_0522;
const CAP_BOUND: &str = "/proc/sys/kernel/cap-bound";

/// Which bounding set holds the drop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bounding {
    /// The program's own (2.6.25+).
    Own,
    /// The system's, for the rest of the boot (before 2.6.25).
    System,
}

/// A step of entering the confinement that failed in the child, as it
/// comes back on the exec-error pipe.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u32)]
pub enum Step {
    Exec = 0,
    Private = 1,
    Dev = 2,
    Nodes = 3,
    Stick = 4,
    Capabilities = 5,
}

impl Step {
    pub fn from_code(code: u32) -> Step {
        [Step::Private, Step::Dev, Step::Nodes, Step::Stick, Step::Capabilities]
            .into_iter()
            .find(|s| *s as u32 == code)
            .unwrap_or(Step::Exec)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Step::Exec => "cannot run",
            Step::Private => "cannot make the program's mount namespace private, so it was not run",
            Step::Dev => "cannot give the program its own /dev (tmpfs, or ramfs), so it was not run",
            Step::Nodes => "cannot make the program's /dev nodes, so it was not run",
            Step::Stick => "cannot hide the results stick from the program, so it was not run",
            Step::Capabilities => "cannot drop the program's capabilities, so it was not run",
        }
    }
}

/// Everything the child needs, made before the fork (the child allocates nothing).
pub struct Confinement {
    pub bounding: Bounding,
    root: CString,
    dev: CString,
    shm: CString,
    tmpfs: CString,
    ramfs: CString,
    dev_options: CString,
    results: Option<CString>,
    nodes: Vec<(CString, libc::dev_t)>,
    links: Vec<(CString, CString)>,
}

impl Confinement {
    /// Prepare, and on a kernel without per-process bounding sets lower the
    /// system's now. `results`: the stick's mount point, hidden from the program.
    pub fn prepare(results: Option<&str>) -> io::Result<Confinement> {
        let c = |s: &str| CString::new(s).map_err(io::Error::other);
        // SAFETY: PR_CAPBSET_READ only reads; on a kernel without it, EINVAL.
        let own = unsafe { libc::prctl(PR_CAPBSET_READ, 0, 0, 0, 0) } >= 0;
        if !own {
            lower_system_bounding_set()?;
        }
        let nodes = NODES
            .iter()
            .map(|(name, major, minor)| Ok((c(&format!("/dev/{name}"))?, libc::makedev(*major, *minor))))
            .collect::<io::Result<_>>()?;
        let links = [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ]
        .iter()
        .map(|(name, to)| Ok((c(&format!("/dev/{name}"))?, c(to)?)))
        .collect::<io::Result<_>>()?;
        Ok(Confinement {
            bounding: if own { Bounding::Own } else { Bounding::System },
            root: c("/")?,
            dev: c("/dev")?,
            shm: c("/dev/shm")?,
            tmpfs: c("tmpfs")?,
            ramfs: c("ramfs")?,
            dev_options: c("mode=0755")?,
            results: results.map(c).transpose()?,
            nodes,
            links,
        })
    }

    /// What the record says of it.
    pub fn facts(&self) -> serde_json::Value {
        serde_json::json!({
            "dev": NODES.iter().map(|n| n.0).collect::<Vec<_>>(),
            "capabilities_dropped": DROPPED.iter().map(|d| d.1).collect::<Vec<_>>(),
            "bounding_set": match self.bounding {
                Bounding::Own => "the program's own",
                Bounding::System => "the system's, for the rest of the boot (a kernel before 2.6.25)",
            },
        })
    }

    /// A child in a new mount namespace (fork's semantics otherwise): the
    /// pid, 0 in the child, or -1.
    ///
    /// # Safety
    /// As fork in a single-threaded process: the child may only make
    /// syscalls, then exec or _exit.
    pub unsafe fn clone_process() -> libc::pid_t {
        // clone(flags, stack = 0 → the parent's, copied): every argument
        // after the flags is 0, so their order (which differs per arch) does not matter.
        unsafe {
            libc::syscall(libc::SYS_clone, CLONE_NEWNS | libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) as libc::pid_t
        }
    }

    /// In the child made by [`Confinement::clone_process`]: make its view
    /// of the mounts its own, give it the small /dev, hide the stick, drop
    /// the capabilities, close every descriptor past stderr but `keep` (the
    /// exec-error pipe, close-on-exec). On failure, the step and errno.
    ///
    /// # Safety
    /// Only in that child, before exec: it changes the process's mounts and capabilities.
    pub unsafe fn enter(&self, keep: libc::c_int) -> Result<(), (Step, i32)> {
        let errno = || unsafe { *libc::__errno_location() };
        let null = std::ptr::null::<libc::c_void>();
        unsafe {
            // Mounts made below must not propagate back (a shared / since
            // 2.6.15); a kernel before propagation has nothing to change.
            if libc::mount(
                std::ptr::null(),
                self.root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                null,
            ) != 0
                && errno() != libc::EINVAL
            {
                return Err((Step::Private, errno()));
            }
            let flags = libc::MS_NOSUID | libc::MS_NOEXEC;
            if libc::mount(
                self.tmpfs.as_ptr(),
                self.dev.as_ptr(),
                self.tmpfs.as_ptr(),
                flags,
                self.dev_options.as_ptr().cast(),
            ) != 0
                && libc::mount(self.ramfs.as_ptr(), self.dev.as_ptr(), self.ramfs.as_ptr(), flags, null) != 0
            {
                return Err((Step::Dev, errno()));
            }
            for (path, dev) in &self.nodes {
                // mknod's mode goes through the umask: chmod makes it 0666.
                if libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, *dev) != 0
                    || libc::chmod(path.as_ptr(), 0o666) != 0
                {
                    return Err((Step::Nodes, errno()));
                }
            }
            for (link, to) in &self.links {
                libc::symlink(to.as_ptr(), link.as_ptr());
            }
            if libc::mkdir(self.shm.as_ptr(), 0o1777) != 0 {
                return Err((Step::Nodes, errno()));
            }
            // No new name under /dev, not even a regular file called sdb.
            if libc::mount(
                self.tmpfs.as_ptr(),
                self.dev.as_ptr(),
                self.tmpfs.as_ptr(),
                flags | libc::MS_REMOUNT | libc::MS_RDONLY,
                null,
            ) != 0
                && libc::mount(
                    self.ramfs.as_ptr(),
                    self.dev.as_ptr(),
                    self.ramfs.as_ptr(),
                    flags | libc::MS_REMOUNT | libc::MS_RDONLY,
                    null,
                ) != 0
            {
                return Err((Step::Dev, errno()));
            }
            // Shared memory still works (musl's shm_open is /dev/shm); best effort.
            libc::mount(self.tmpfs.as_ptr(), self.shm.as_ptr(), self.tmpfs.as_ptr(), flags | libc::MS_NODEV, null);
            if let Some(results) = &self.results
                && libc::umount2(results.as_ptr(), libc::MNT_DETACH) != 0
                && !matches!(errno(), libc::EINVAL | libc::ENOENT)
            {
                return Err((Step::Stick, errno()));
            }
            if self.bounding == Bounding::Own {
                for (cap, _) in DROPPED {
                    if libc::prctl(PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err((Step::Capabilities, errno()));
                    }
                }
            }
            drop_from_own_sets().map_err(|e| (Step::Capabilities, e))?;
            close_inherited(keep);
            Ok(())
        }
    }
}

/// Close every descriptor from 3 up but `keep`: one left open by whoever
/// started bootmark (a disk opened by a shell's `9<>/dev/sdb`) would reach
/// that disk from inside.
unsafe fn close_inherited(keep: libc::c_int) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    let max = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur.min(65_536) as libc::c_int,
        _ => 1024,
    };
    for fd in 3..max {
        if fd != keep {
            // SAFETY: closing a descriptor this child owns a copy of.
            unsafe { libc::close(fd) };
        }
    }
}

/// The mask of [`DROPPED`] (all below 32).
fn dropped_mask() -> u32 {
    DROPPED.iter().fold(0, |m, (cap, _)| m | 1 << cap)
}

/// capget + capset without the dropped ones: v3 (two 32-bit words, 2.6.26+)
/// and, where the kernel answers EINVAL, v1 (one word).
unsafe fn drop_from_own_sets() -> Result<(), i32> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut data = [Data::default(); 2];
    for version in [CAP_V3, CAP_V1] {
        let mut header = Header { version, pid: 0 };
        // SAFETY: header and data are valid for the version's one or two words.
        if unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut Header, data.as_mut_ptr()) } != 0 {
            if unsafe { *libc::__errno_location() } == libc::EINVAL && version == CAP_V3 {
                continue;
            }
            return Err(unsafe { *libc::__errno_location() });
        }
        let keep = !dropped_mask();
        data[0].effective &= keep;
        data[0].permitted &= keep;
        data[0].inheritable &= keep;
        let mut header = Header { version, pid: 0 };
        // SAFETY: as above.
        if unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) } != 0 {
            return Err(unsafe { *libc::__errno_location() });
        }
        return Ok(());
    }
    Err(libc::EINVAL)
}

/// Before 2.6.25 the bounding set is the system's: lower it (a process
/// other than PID 1 can only take bits away, and the worker is not PID 1).
fn lower_system_bounding_set() -> io::Result<()> {
    let text = std::fs::read_to_string(CAP_BOUND).map_err(|e| io::Error::other(format!("{CAP_BOUND}: {e}")))?;
    let bound: i64 = text.trim().parse().map_err(|_| io::Error::other(format!("{CAP_BOUND}: '{}'", text.trim())))?;
    let lowered = (bound as u32 & !dropped_mask()) as i32;
    std::fs::write(CAP_BOUND, format!("{lowered}\n")).map_err(|e| io::Error::other(format!("{CAP_BOUND}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dropped_capabilities_are_the_ones_that_give_a_disk_back() {
        assert_eq!(dropped_mask(), 1 << 16 | 1 << 17 | 1 << 21 | 1 << 27);
        for code in 0..7 {
            let step = Step::from_code(code);
            assert!(code > 5 || step as u32 == code, "{code}");
        }
    }
}
