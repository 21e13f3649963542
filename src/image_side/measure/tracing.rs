//! The session with the kernel's tracing: find (or mount) tracefs, have the
//! events that prove each waiting mechanism on, read `trace_pipe` without
//! ever blocking while the workload runs, and put everything back as found.
//!
//! Only where bootmark owns the machine (the boot image, or `bootmark run
//! --kernel-events`): tracing is machine-wide, and a tracer someone else set
//! up is left alone. Kernels without it say why, in the record's `sources`:
//! tracefs is 4.1+, debugfs's `tracing` 2.6.27+ (2.6.9 and 2.6.16 have
//! neither), and lockdown=confidentiality closes both.
//!
//! The boot image never switches an event on or off: that patches kernel
//! text on every CPU (static keys, text_poke_bp), which livelocked 6.1 under
//! QEMU's TCG with two CPUs (a soft lockup of PID 1 in event_enable_write).
//! Its events are switched on by the kernel command line the image builder
//! writes ([`boot_parameters`]: `trace_event=`, before the other CPUs start),
//! and /init reads those that are on. `bootmark run --kernel-events`, on a
//! machine the user runs, switches them itself.

use super::clock::{mono_ns, secs};
use super::trace_lines::Reader;
use crate::image_side::tunables::bracketed;
use crate::schema::events::{KernelEvents, RECLAIM_EVENTS};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The events read, each the kernel's own account of one mechanism.
pub const EVENTS: [&str; 10] = [
    // dirty throttling: the pause balance_dirty_pages() made a writer sleep (3.2+)
    "writeback/balance_dirty_pages",
    // block writeback throttling (4.10+): its depth steps, read latency over target, windows
    "wbt/wbt_step",
    "wbt/wbt_lat",
    "wbt/wbt_timer",
    // each request's time in the scheduler's queue, size and device time
    "block/block_rq_insert",
    "block/block_rq_issue",
    "block/block_rq_complete",
    // a task reclaiming memory itself, begin to end (2.6.36+)
    "vmscan/mm_vmscan_direct_reclaim_begin",
    "vmscan/mm_vmscan_direct_reclaim_end",
    // ext3/ext4 journal commits (jbd2 is a module: present once the filesystem is mounted)
    "jbd2/jbd2_run_stats",
];
/// Per-CPU ring buffer the boot asks for: drained every sample tick, it holds
/// a few thousand events per CPU between ticks; more are counted as lost.
const BOOT_BUFFER: &str = "512K";

/// How the events come to be on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Events {
    /// Not read.
    Off,
    /// Read those the kernel command line switched on; never switch any.
    AsBooted,
    /// Switch them on for each workload and off after (not under emulation).
    AtRunTime,
}

/// The kernel parameters that switch the events on at boot (every entry of an image).
pub fn boot_parameters() -> String {
    // jbd2's events are a module's where ext3/ext4 are modules: not there at
    // boot, so not switched on (/init says so); where they are built in, they are.
    let events: Vec<String> = EVENTS.iter().map(|e| e.replace('/', ":")).collect();
    format!("trace_event={} trace_buf_size={BOOT_BUFFER}", events.join(","))
}

/// Bytes read from trace_pipe per call, so one call never holds up the watch loop.
const READ_PER_CALL: usize = 1 << 20;

/// What a session leaves: the record's summary, and the events on the
/// timeline's ticks (`Reader::per_tick`), series to add to the timeline.
pub struct Finished {
    pub summary: KernelEvents,
    pub per_tick: Vec<(String, Vec<Option<u64>>)>,
}

/// Tracing enabled for one workload.
pub struct Session {
    dir: PathBuf,
    pipe: std::fs::File,
    marker: String,
    marker_at_s: f64,
    clock: String,
    clock_found: Option<String>,
    /// `tracing_on` as found ("0" or "1"), put back at the end.
    on_found: Option<String>,
    enabled: Vec<String>,
    absent: Vec<String>,
    /// The events this session switched on (and so switches off).
    switched: Vec<&'static str>,
    partial: Vec<u8>,
    pub reader: Reader,
}

/// Whether the kernel has pipe2 (2.6.27, with debugfs's tracing): before it
/// there are no events to read, and nothing of tracing is looked for — 2.6.9
/// and 2.6.16 say so without a mount or a file touched.
fn kernel_has_pipe2() -> bool {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: pipe2 writes two fds into the array; both are closed below.
    let r = unsafe { libc::syscall(libc::SYS_pipe2, fds.as_mut_ptr(), libc::O_CLOEXEC) };
    let enosys = r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS);
    for fd in fds.into_iter().filter(|fd| *fd >= 0) {
        // SAFETY: an fd pipe2 just made, closed once.
        unsafe { libc::close(fd) };
    }
    !enosys
}

/// Where the tracing files are: tracefs, or debugfs's `tracing`; mounted if
/// the kernel has them and nobody has.
fn find_tracefs() -> Result<PathBuf, String> {
    let tracefs = Path::new("/sys/kernel/tracing");
    let debugfs = Path::new("/sys/kernel/debug");
    if tracefs.join("trace_pipe").exists() {
        return Ok(tracefs.into());
    }
    if debugfs.join("tracing/trace_pipe").exists() {
        return Ok(debugfs.join("tracing"));
    }
    let mount = |what: &str, at: &Path| {
        nix::mount::mount(Some(what), at, Some(what), nix::mount::MsFlags::empty(), None::<&str>)
            .map_err(|e| format!("mount {what} on {}: {e}", at.display()))
    };
    let mut tried = Vec::new();
    if tracefs.is_dir() {
        match mount("tracefs", tracefs) {
            Ok(()) if tracefs.join("trace_pipe").exists() => return Ok(tracefs.into()),
            Ok(()) => tried.push(format!("{} mounted without trace_pipe", tracefs.display())),
            Err(e) => tried.push(e),
        }
    }
    if debugfs.is_dir() && !debugfs.join("tracing").exists() {
        match mount("debugfs", debugfs) {
            Ok(()) if debugfs.join("tracing/trace_pipe").exists() => return Ok(debugfs.join("tracing")),
            Ok(()) => tried.push("debugfs has no tracing directory (CONFIG_FTRACE off?)".into()),
            Err(e) => tried.push(e),
        }
    }
    if super::evidence::lockdown(Path::new("/sys")).as_deref() == Some("confidentiality") {
        return Err("the kernel is locked down (confidentiality): tracing is closed".into());
    }
    if tried.is_empty() {
        return Err("the kernel has neither tracefs (4.1+) nor debugfs tracing (2.6.27+)".into());
    }
    Err(format!("no tracing: {}", tried.join("; ")))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(value.as_bytes()).map_err(|e| format!("write {value:?} to {}: {e}", path.display()))
}

/// Disk names by the "major,minor" block events print.
fn disks_by_number() -> BTreeMap<String, String> {
    let disks = crate::image_side::sysfs_block::walk(Path::new("/sys")).into_iter().filter(|e| e.partition.is_none());
    disks.map(|e| (format!("{},{}", e.major, e.minor), e.name)).collect()
}

impl Session {
    /// Have the events on; `origin_ns` is the timeline's zero. Err: why not.
    pub fn start(how: Events, origin_ns: u64) -> Result<Session, String> {
        let switch = match how {
            Events::Off => return Err("not asked for".into()),
            Events::AsBooted => false,
            Events::AtRunTime => true,
        };
        if !kernel_has_pipe2() {
            return Err("the kernel predates 2.6.27 (no pipe2): it has no trace events; tracefs not looked for".into());
        }
        let dir = find_tracefs()?;
        // Someone else's tracing is theirs: never reconfigured from under them.
        // (Booted with our trace_event=, the events on are ours.)
        let tracer = crate::fsutil::read_trimmed(dir.join("current_tracer")).unwrap_or_default();
        let in_use = crate::fsutil::read_trimmed(dir.join("set_event")).unwrap_or_default();
        if (!tracer.is_empty() && tracer != "nop") || (switch && !in_use.is_empty()) {
            return Err(format!(
                "{} is in use (tracer {tracer}, events {:?}): left alone",
                dir.display(),
                in_use.lines().take(3).collect::<Vec<_>>()
            ));
        }
        let clock_found =
            std::fs::read_to_string(dir.join("trace_clock")).ok().and_then(|t| bracketed(&t).map(str::to_string));
        // CLOCK_MONOTONIC where the kernel offers it (4.x); the marker maps any other.
        let _ = write(&dir.join("trace_clock"), "mono");
        let clock = std::fs::read_to_string(dir.join("trace_clock"))
            .ok()
            .and_then(|t| bracketed(&t).map(str::to_string))
            .unwrap_or_default();
        write(&dir.join("trace"), "")?;
        let (mut enabled, mut absent, mut switched) = (Vec::new(), Vec::new(), Vec::new());
        for event in EVENTS {
            let name = event.replace('/', ":");
            let path = dir.join("events").join(event).join("enable");
            let on = || crate::fsutil::read_trimmed(&path).is_some_and(|v| v.starts_with('1'));
            if !path.exists() {
                absent.push(name);
            } else if on() {
                enabled.push(name);
            } else if !switch {
                absent.push(format!("{name} (not switched on at boot)"));
            } else if write(&path, "1").is_ok() {
                enabled.push(name);
                switched.push(event);
            } else {
                absent.push(format!("{name} (enable refused)"));
            }
        }
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(dir.join("trace_pipe"))
            .map_err(|e| format!("{}: {e}", dir.join("trace_pipe").display()))?;
        let on_found = crate::fsutil::read_trimmed(dir.join("tracing_on"));
        let _ = write(&dir.join("tracing_on"), "1");
        let marker = format!("bootmark-clock {}", std::process::id());
        let marker_at_s = secs(mono_ns().saturating_sub(origin_ns));
        let _ = write(&dir.join("trace_marker"), &marker);
        let mut reader = Reader::new(disks_by_number());
        // Both ends on, or no reclaim is timed (and none is said absent).
        reader.reclaim_on = RECLAIM_EVENTS.iter().all(|e| enabled.iter().any(|on| on == e));
        let mut session = Session {
            dir,
            pipe,
            marker,
            marker_at_s,
            clock,
            clock_found,
            on_found,
            enabled,
            absent,
            switched,
            partial: Vec::new(),
            reader,
        };
        if session.enabled.is_empty() {
            session.restore();
            return Err(format!("none of the events is on in this kernel: {}", session.absent.join(", ")));
        }
        Ok(session)
    }

    /// Read what the kernel has buffered, without blocking.
    pub fn drain(&mut self) {
        let mut buf = vec![0u8; 65536];
        let mut taken = 0;
        while taken < READ_PER_CALL {
            match self.pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    taken += n;
                    self.partial.extend_from_slice(&buf[..n]);
                    self.lines();
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break, // EAGAIN: nothing more buffered
            }
        }
    }

    fn lines(&mut self) {
        let Some(last) = self.partial.iter().rposition(|b| *b == b'\n') else { return };
        let whole: Vec<u8> = self.partial.drain(..=last).collect();
        for line in String::from_utf8_lossy(&whole).lines() {
            self.reader.line(line, (&self.marker, self.marker_at_s));
        }
    }

    /// Disable the events, read the rest, and summarise; phases split at
    /// `writes_end_s` and `workload_end_s` on the timeline's axis.
    pub fn finish(mut self, writes_end_s: f64, workload_end_s: f64, t_s: &[f64]) -> Finished {
        self.switch_off();
        self.drain();
        let per_tick = self.reader.per_tick(t_s);
        let mut summary = self.reader.summarize(writes_end_s, workload_end_s);
        summary.tracefs = self.dir.display().to_string();
        summary.clock = match self.reader.offset_s {
            Some(_) => self.clock.clone(),
            None => format!("{} (the marker was not read back: times unmapped)", self.clock),
        };
        summary.enabled = self.enabled.clone();
        summary.absent = self.absent.clone();
        summary.lost = self.overruns();
        self.restore();
        Finished { summary, per_tick }
    }

    /// Events overwritten before they were read, over every CPU.
    fn overruns(&self) -> u64 {
        let per_cpu = std::fs::read_dir(self.dir.join("per_cpu")).into_iter().flatten().flatten();
        per_cpu
            .filter_map(|cpu| std::fs::read_to_string(cpu.path().join("stats")).ok())
            .flat_map(|stats| {
                stats
                    .lines()
                    .filter_map(|l| l.strip_prefix("overrun:").and_then(|n| n.trim().parse::<u64>().ok()))
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    /// The events this session switched on, off again.
    fn switch_off(&mut self) {
        for event in std::mem::take(&mut self.switched) {
            let _ = write(&self.dir.join("events").join(event).join("enable"), "0");
        }
    }

    /// Events off, the buffer emptied, the clock as found.
    fn restore(&mut self) {
        self.switch_off();
        let _ = write(&self.dir.join("trace"), "");
        if let Some(on) = &self.on_found {
            let _ = write(&self.dir.join("tracing_on"), on);
        }
        if let Some(clock) = &self.clock_found {
            let _ = write(&self.dir.join("trace_clock"), clock);
        }
    }
}
