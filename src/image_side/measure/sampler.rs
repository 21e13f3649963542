//! The system-state timeline: every `sample_interval`, the memory and
//! writeback counters that show dirty data piling up and the disk draining it.
//!
//! Runs in the runner's own process between polls (reading /proc never waits
//! for the disk), so it costs no extra process and no locks.

use super::clock::{mono_ns, secs};
use super::procstat::{self, DiskStat};
use crate::schema::measures::{DiskDelta, Timeline};
use std::collections::BTreeMap;

/// meminfo fields sampled (kB). Mapped: 2.6 kernels cap the dirty limit
/// at half the unmapped memory.
const MEMINFO: [(&str, &str); 5] = [
    ("MemFree", "mem_free_kib"),
    ("Dirty", "dirty_kib"),
    ("Writeback", "writeback_kib"),
    ("Cached", "cached_kib"),
    ("Mapped", "mapped_kib"),
];
/// vmstat fields sampled (pages or events, cumulative where the kernel says so).
/// The two thresholds are the dirty limits as the kernel computed them (2.6.37+).
const VMSTAT: [&str; 7] = [
    "nr_dirty",
    "nr_writeback",
    "pgpgout",
    "allocstall",
    "pgscan_direct_normal",
    "nr_dirty_threshold",
    "nr_dirty_background_threshold",
];

/// Pressure stall information (4.20+, CONFIG_PSI): the microseconds some
/// task, and all tasks, were stalled on I/O and on memory, cumulative;
/// sampled as `psi_io_some_us`, `psi_io_full_us`, and the same for memory.
pub const PSI: [(&str, &str); 2] = [("/proc/pressure/io", "psi_io"), ("/proc/pressure/memory", "psi_memory")];

/// Distinct kernel stacks a timeline keeps (each sample points at one),
/// and lines per stack: a writer's and a probe's waits repeat (a run sees a
/// dozen or so), and each stack is about 1 KiB of every record on the serial line.
const STACKS_KEPT: usize = 32;
const STACK_LINES: usize = 24;

/// The probe's late samples a timeline keeps: a few per slow tick (the
/// longer a tick runs, the sparser: `observe`), about 60 bytes each on the
/// serial line, so at most some 30 KiB of a record.
const LATE_SAMPLES_KEPT: usize = 512;

/// Of the table of distinct stacks, the most the probe's samples (the
/// timeline's and the late ones) may add: its ls and read paths vary from
/// tick to tick, and they must not leave the writer's none (a CI boot of
/// 6.1 under wbt_lat_usec 2000 had the table full, 14 of its stacks the
/// probe's, before the writer's flush waited in wbt).
const PROBE_STACKS_KEPT: usize = 12;

/// Whose stack is read: the probe's may fill only PROBE_STACKS_KEPT slots.
#[derive(Clone, Copy, PartialEq)]
enum Whose {
    Writer,
    Probe,
}

/// Counters at one moment, for before/after deltas.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub vmstat: BTreeMap<String, i64>,
    pub disk: Option<DiskStat>,
}

pub struct Sampler {
    /// The diskstats name of the device under test, when it has one.
    device: Option<String>,
    /// The worker process, while it runs: its wchan is sampled.
    pub writer: Option<libc::pid_t>,
    /// The probe process, while the workload runs: sampled the same way, so
    /// that a late tick says where the probe itself waited.
    pub probe: Option<libc::pid_t>,
    origin_ns: u64,
    /// Stacks the probe's samples added to the table.
    probe_stacks: usize,
    pub timeline: Timeline,
}

impl Snapshot {
    pub fn take(device: Option<&str>) -> Snapshot {
        Snapshot { vmstat: procstat::vmstat(), disk: device.and_then(disk_stat) }
    }

    /// Per-key increase from `self` to `later` (keys present in both).
    pub fn delta(&self, later: &Snapshot) -> Deltas {
        let vmstat = later
            .vmstat
            .iter()
            .filter_map(|(k, v)| self.vmstat.get(k).map(|a| (k.clone(), v - a)))
            .filter(|(_, d)| *d != 0)
            .collect();
        let disk = match (&self.disk, &later.disk) {
            (Some(a), Some(b)) => Some(DiskDelta {
                device: b.name.clone(),
                ms_io: b.ms_io.zip(a.ms_io).map(|(b, a)| b.wrapping_sub(a)),
                ms_writing: b.ms_writing.zip(a.ms_writing).map(|(b, a)| b.wrapping_sub(a)),
                reads: b.reads.wrapping_sub(a.reads),
                sectors_read: b.sectors_read.wrapping_sub(a.sectors_read),
                sectors_written: b.sectors_written.wrapping_sub(a.sectors_written),
                writes: b.writes.wrapping_sub(a.writes),
            }),
            _ => None,
        };
        Deltas { vmstat, disk }
    }
}

/// What changed over one workload, from its before and after [`Snapshot`]s.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deltas {
    /// /proc/vmstat keys that changed (those the kernel lacks or that did not move are left out).
    pub vmstat: BTreeMap<String, i64>,
    /// The device under test's /proc/diskstats increases; None without a device.
    pub disk: Option<DiskDelta>,
}

fn disk_stat(name: &str) -> Option<DiskStat> {
    procstat::diskstats().into_iter().find(|d| d.name == name)
}

impl Sampler {
    pub fn new(device: Option<String>, interval_s: f64, origin_ns: u64) -> Sampler {
        Sampler {
            device,
            writer: None,
            probe: None,
            origin_ns,
            probe_stacks: 0,
            timeline: Timeline { interval_s, ..Timeline::default() },
        }
    }

    /// Seconds on the timeline's axis for a CLOCK_MONOTONIC time.
    pub fn at(&self, mono: u64) -> f64 {
        secs(mono.saturating_sub(self.origin_ns))
    }

    pub fn sample(&mut self) {
        let t = secs(mono_ns().saturating_sub(self.origin_ns));
        // The tasks first, at the sample's time: the /proc counters after them
        // take milliseconds on a loaded machine, longer than a slow read lasts.
        let writer = self.task(self.writer, Whose::Writer);
        let probe = (self.probe.is_some() || !self.timeline.probe_wchan.is_empty())
            .then(|| self.task(self.probe, Whose::Probe));
        let mem = procstat::meminfo();
        let vm = procstat::vmstat();
        let disk = self.device.as_deref().and_then(disk_stat);
        let n = self.timeline.t_s.len();
        self.timeline.t_s.push(t);
        let mut push = |key: &str, value: Option<u64>| {
            let column = self.timeline.series.entry(key.to_string()).or_insert_with(|| vec![None; n]);
            column.push(value);
        };
        for (field, key) in MEMINFO {
            push(key, mem.get(field).copied());
        }
        for key in VMSTAT {
            push(key, vm.get(key).map(|v| *v as u64));
        }
        for (path, key) in PSI {
            let [some, full] =
                crate::fsutil::read_capped(path, 4096).map_or([None, None], |t| procstat::psi_totals(&t));
            push(&format!("{key}_some_us"), some);
            push(&format!("{key}_full_us"), full);
        }
        push("disk_sectors_written", disk.as_ref().map(|d| d.sectors_written));
        push("disk_in_flight", disk.as_ref().and_then(|d| d.in_flight));
        // The writer's and the probe's wchan, state and stack, each sample on
        // its own: one wait site can be reached from several call chains, and
        // a wchan of 0 (running, or a sleep x86_64 4.14–5.15 hides) still has a stack.
        let (wchan, state, stack) = writer;
        let tl = &mut self.timeline;
        push_at(&mut tl.writer_wchan, n, wchan);
        push_at(&mut tl.writer_state, n, state);
        push_at(&mut tl.writer_stack, n, stack);
        if let Some((wchan, state, stack)) = probe {
            push_at(&mut tl.probe_wchan, n, wchan);
            push_at(&mut tl.probe_state, n, state);
            push_at(&mut tl.probe_stack, n, stack);
        }
    }

    /// The probe's wchan, state and stack now, while one of its ticks is
    /// late: kept beside the timeline's samples (`Timeline::probe_late`).
    /// Returns false once no more are kept (the table is full, or there is
    /// no probe).
    pub fn sample_late_probe(&mut self) -> bool {
        if self.probe.is_none() || self.timeline.probe_late.t_s.len() >= LATE_SAMPLES_KEPT {
            return false;
        }
        let now = self.at(mono_ns());
        let (wchan, state, stack) = self.task(self.probe, Whose::Probe);
        let late = &mut self.timeline.probe_late;
        late.t_s.push(now);
        late.wchan.push(wchan);
        late.state.push(state);
        late.stack.push(stack);
        true
    }

    /// One task's wchan, state and stack now; all None without a task or
    /// once it has gone. A running task's stack is not read: the state says
    /// where it was (on the CPU), and its stacks differ at every sample (a
    /// CI boot's writer filled 18 of the table's 32 slots so, and its wait
    /// in wbt later had none to show it).
    fn task(&mut self, pid: Option<libc::pid_t>, whose: Whose) -> (Option<String>, Option<String>, Option<u32>) {
        let Some(pid) = pid else { return (None, None, None) };
        let Some(wchan) = crate::fsutil::read_trimmed(format!("/proc/{pid}/wchan")) else { return (None, None, None) };
        let state = procstat::task_state(pid);
        let running = state.as_deref().is_some_and(|s| s.starts_with('R'));
        let stack = if running { None } else { self.stack_index(pid, whose) };
        (Some(wchan), state, stack)
    }

    /// A task's kernel stack now (/proc/PID/stack: 2.6.29+, root), as its
    /// index in the timeline's table of distinct stacks; None where
    /// unreadable, empty, or new once the table is full (for the probe:
    /// once it added PROBE_STACKS_KEPT).
    fn stack_index(&mut self, pid: libc::pid_t, whose: Whose) -> Option<u32> {
        let text = crate::fsutil::read_capped(format!("/proc/{pid}/stack"), 16 << 10)?;
        // "[<0>] balance_dirty_pages+0x2d1/0x8e0" → "balance_dirty_pages+0x2d1/0x8e0"
        let frames: Vec<String> = String::from_utf8_lossy(&text)
            .lines()
            .map(|l| l.split_once("] ").map_or(l, |(_, f)| f).trim().to_string())
            .filter(|f| !f.is_empty())
            .take(STACK_LINES)
            .collect();
        if frames.is_empty() {
            return None;
        }
        let stacks = &mut self.timeline.stacks;
        let room = stacks.len() < STACKS_KEPT && (whose == Whose::Writer || self.probe_stacks < PROBE_STACKS_KEPT);
        let index = match stacks.iter().position(|s| *s == frames) {
            Some(i) => i,
            None if room => {
                stacks.push(frames);
                self.probe_stacks += (whose == Whose::Probe) as usize;
                stacks.len() - 1
            }
            None => return None,
        };
        Some(index as u32)
    }
}

/// `value` as sample `n` of a series that may have missed earlier samples.
fn push_at<T: Clone>(series: &mut Vec<Option<T>>, n: usize, value: Option<T>) {
    series.resize(n, None);
    series.push(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child asleep in the kernel (nanosleep), settled there.
    fn asleep() -> std::process::Child {
        let child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        child
    }

    #[test]
    fn every_series_has_one_entry_per_sample() {
        let mut s = Sampler::new(None, 0.01, mono_ns());
        for _ in 0..3 {
            s.sample();
        }
        let tl = &s.timeline;
        assert_eq!(tl.t_s.len(), 3);
        assert!(tl.t_s.windows(2).all(|w| w[0] <= w[1]));
        for (k, v) in &tl.series {
            assert_eq!(v.len(), 3, "{k}");
        }
        // This host has /proc/meminfo: the dirty column holds numbers.
        assert!(tl.series["dirty_kib"].iter().all(|v| v.is_some()));
        assert!(tl.series["disk_sectors_written"].iter().all(|v| v.is_none()));
        assert_eq!(tl.writer_wchan, [None, None, None], "no writer yet");
    }

    /// A writer blocked in the kernel shows where: a child asleep in
    /// nanosleep reads as a sleep function, never as running.
    #[test]
    fn the_writers_wchan_is_sampled() {
        let mut child = asleep();
        let mut s = Sampler::new(None, 0.01, mono_ns());
        s.writer = Some(child.id() as libc::pid_t);
        s.sample();
        child.kill().unwrap();
        child.wait().unwrap();
        let w = s.timeline.writer_wchan[0].clone().expect("a wchan for a live process");
        assert!(w != "0" && !w.is_empty(), "sleeping, so blocked somewhere: {w}");
        // Asleep, not running: its state says so.
        assert_eq!(s.timeline.writer_state[0].as_deref(), Some("S"));
        // Where stacks can be read (root, a kernel with stack traces), the
        // sample's own kernel stack is kept, from the function itself down.
        if std::fs::read("/proc/self/stack").is_ok() {
            let stack = s.timeline.writer_stack_at(0).expect("a stack for the sample");
            assert!(stack.iter().any(|f| f.starts_with(&w)), "{w}: {stack:?}");
        }
    }

    /// A late tick's samples go beside the timeline's, on its axis, and
    /// stop at the table's bound; without a probe none is taken.
    #[test]
    fn a_late_probe_is_sampled_beside_the_timeline() {
        let mut s = Sampler::new(None, 0.25, mono_ns());
        assert!(!s.sample_late_probe(), "no probe, no sample");
        let mut child = asleep();
        s.probe = Some(child.id() as libc::pid_t);
        assert!(s.sample_late_probe());
        let late = &s.timeline.probe_late;
        assert_eq!((late.t_s.len(), late.wchan.len(), late.state.len(), late.stack.len()), (1, 1, 1, 1));
        assert!(late.t_s[0] >= 0.2, "on the timeline's axis: {}", late.t_s[0]);
        assert_eq!(late.state[0].as_deref(), Some("S"));
        assert!(s.timeline.t_s.is_empty(), "not a timeline sample");
        while s.sample_late_probe() {}
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(s.timeline.probe_late.t_s.len(), LATE_SAMPLES_KEPT);
    }

    /// The probe's stacks fill at most their share of the table: once it
    /// added PROBE_STACKS_KEPT, a new stack of the probe is not kept, while
    /// the writer's still is.
    #[test]
    fn the_probes_stacks_leave_the_writer_room() {
        if std::fs::read("/proc/self/stack").is_err() {
            return; // not root, or a kernel without stack traces: nothing to read
        }
        let mut child = asleep();
        let pid = child.id() as libc::pid_t;
        let mut s = Sampler::new(None, 0.25, mono_ns());
        s.probe = Some(pid);
        s.probe_stacks = PROBE_STACKS_KEPT;
        assert!(s.sample_late_probe());
        assert_eq!(s.timeline.probe_late.stack, [None], "the probe's share is used up");
        s.probe = None;
        s.writer = Some(pid);
        s.sample();
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(s.timeline.writer_stack, [Some(0)], "the writer's is kept");
    }

    /// Each sample points at its own stack; a stack seen again is not
    /// stored again; a command with spaces and parentheses does not hide
    /// the state.
    #[test]
    fn samples_share_one_table_of_distinct_stacks() {
        if std::fs::read("/proc/self/stack").is_err() {
            return; // not root, or a kernel without stack traces: nothing to read
        }
        let mut child = asleep();
        let mut s = Sampler::new(None, 0.01, mono_ns());
        s.writer = Some(child.id() as libc::pid_t);
        for _ in 0..3 {
            s.sample();
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let tl = &s.timeline;
        assert_eq!(tl.writer_stack.len(), 3);
        assert_eq!(tl.stacks.len(), 1, "one sleep, one stack: {:?}", tl.stacks);
        assert!(tl.writer_stack.iter().all(|i| *i == Some(0)));
    }
}
