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

use std::ffi::CStr;
use std::io;

/// CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_ADMIN, CAP_MKNOD (linux/capability.h, unchanged since 2.2).
pub const DROPPED: [(u32, &str); 4] =
    [(16, "CAP_SYS_MODULE"), (17, "CAP_SYS_RAWIO"), (21, "CAP_SYS_ADMIN"), (27, "CAP_MKNOD")];

/// The character devices a program may have: (path, major, minor).
const NODES: [(&CStr, u32, u32); 5] =
    [(c"/dev/null", 1, 3), (c"/dev/zero", 1, 5), (c"/dev/full", 1, 7), (c"/dev/random", 1, 8), (c"/dev/urandom", 1, 9)];
/// Their names, as the record gives them.
pub const NODE_NAMES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];
/// The links a program's /dev has: (link, target).
const LINKS: [(&CStr, &CStr); 4] = [
    (c"/dev/fd", c"/proc/self/fd"),
    (c"/dev/stdin", c"/proc/self/fd/0"),
    (c"/dev/stdout", c"/proc/self/fd/1"),
    (c"/dev/stderr", c"/proc/self/fd/2"),
];

/// Where /init mounts the results stick: unmounted from a program's view.
pub const STICK_MOUNT: &str = "/results";
const STICK_MOUNT_C: &CStr = c"/results";

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

/// How the child confines itself (all it uses is static: it allocates nothing).
pub struct Confinement {
    pub bounding: Bounding,
    /// Unmount the results stick from the program's view.
    hide_stick: bool,
}

impl Confinement {
    /// Prepare, and on a kernel without per-process bounding sets lower the
    /// system's now. `hide_stick`: the results stick is mounted at [`STICK_MOUNT`].
    pub fn prepare(hide_stick: bool) -> io::Result<Confinement> {
        // SAFETY: PR_CAPBSET_READ only reads; on a kernel without it, EINVAL.
        let own = unsafe { libc::prctl(PR_CAPBSET_READ, 0, 0, 0, 0) } >= 0;
        if !own {
            lower_system_bounding_set()?;
        }
        Ok(Confinement { bounding: if own { Bounding::Own } else { Bounding::System }, hide_stick })
    }

    /// What the record says of it.
    pub fn facts(&self) -> serde_json::Value {
        serde_json::json!({
            "dev": NODE_NAMES,
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
            if libc::mount(std::ptr::null(), c"/".as_ptr(), std::ptr::null(), libc::MS_REC | libc::MS_PRIVATE, null)
                != 0
                && errno() != libc::EINVAL
            {
                return Err((Step::Private, errno()));
            }
            let flags = libc::MS_NOSUID | libc::MS_NOEXEC;
            if libc::mount(c"tmpfs".as_ptr(), c"/dev".as_ptr(), c"tmpfs".as_ptr(), flags, c"mode=0755".as_ptr().cast())
                != 0
                && libc::mount(c"ramfs".as_ptr(), c"/dev".as_ptr(), c"ramfs".as_ptr(), flags, null) != 0
            {
                return Err((Step::Dev, errno()));
            }
            for (path, major, minor) in NODES {
                let dev = libc::makedev(major, minor);
                // mknod's mode goes through the umask: chmod makes it 0666.
                if libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, dev) != 0 || libc::chmod(path.as_ptr(), 0o666) != 0
                {
                    return Err((Step::Nodes, errno()));
                }
            }
            for (link, to) in LINKS {
                libc::symlink(to.as_ptr(), link.as_ptr());
            }
            if libc::mkdir(c"/dev/shm".as_ptr(), 0o1777) != 0 {
                return Err((Step::Nodes, errno()));
            }
            // No new name under /dev, not even a regular file called sdb.
            if libc::mount(
                c"tmpfs".as_ptr(),
                c"/dev".as_ptr(),
                c"tmpfs".as_ptr(),
                flags | libc::MS_REMOUNT | libc::MS_RDONLY,
                null,
            ) != 0
                && libc::mount(
                    c"ramfs".as_ptr(),
                    c"/dev".as_ptr(),
                    c"ramfs".as_ptr(),
                    flags | libc::MS_REMOUNT | libc::MS_RDONLY,
                    null,
                ) != 0
            {
                return Err((Step::Dev, errno()));
            }
            // Shared memory still works (musl's shm_open is /dev/shm); best effort.
            libc::mount(c"tmpfs".as_ptr(), c"/dev/shm".as_ptr(), c"tmpfs".as_ptr(), flags | libc::MS_NODEV, null);
            if self.hide_stick
                && libc::umount2(STICK_MOUNT_C.as_ptr(), libc::MNT_DETACH) != 0
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
