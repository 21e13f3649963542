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

/// Distinct blocking points whose stacks a timeline keeps, and lines per stack.
const STACKS_KEPT: usize = 8;
const STACK_LINES: usize = 24;

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
    origin_ns: u64,
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
        Sampler { device, writer: None, origin_ns, timeline: Timeline { interval_s, ..Timeline::default() } }
    }

    /// Seconds on the timeline's axis for a CLOCK_MONOTONIC time.
    pub fn at(&self, mono: u64) -> f64 {
        secs(mono.saturating_sub(self.origin_ns))
    }

    pub fn sample(&mut self) {
        let t = secs(mono_ns().saturating_sub(self.origin_ns));
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
        push("disk_sectors_written", disk.as_ref().map(|d| d.sectors_written));
        push("disk_in_flight", disk.as_ref().and_then(|d| d.in_flight));
        let wchan = self.writer.and_then(|pid| crate::fsutil::read_trimmed(format!("/proc/{pid}/wchan")));
        if let (Some(pid), Some(w)) = (self.writer, wchan.as_deref()) {
            self.keep_stack(pid, w);
        }
        self.timeline.writer_wchan.resize(n, None);
        self.timeline.writer_wchan.push(wchan);
    }

    /// The writer's kernel stack, the first time it is blocked in `wchan`.
    fn keep_stack(&mut self, pid: libc::pid_t, wchan: &str) {
        let stacks = &mut self.timeline.writer_stacks;
        if wchan == "0" || stacks.contains_key(wchan) || stacks.len() >= STACKS_KEPT {
            return;
        }
        let Some(text) = crate::fsutil::read_capped(format!("/proc/{pid}/stack"), 16 << 10) else { return };
        // "[<0>] balance_dirty_pages+0x2d1/0x8e0" → "balance_dirty_pages+0x2d1/0x8e0"
        let frames: Vec<String> = String::from_utf8_lossy(&text)
            .lines()
            .map(|l| l.split_once("] ").map_or(l, |(_, f)| f).trim().to_string())
            .filter(|f| !f.is_empty())
            .take(STACK_LINES)
            .collect();
        if !frames.is_empty() {
            stacks.insert(wchan.to_string(), frames);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut s = Sampler::new(None, 0.01, mono_ns());
        s.writer = Some(child.id() as libc::pid_t);
        s.sample();
        child.kill().unwrap();
        child.wait().unwrap();
        let w = s.timeline.writer_wchan[0].clone().expect("a wchan for a live process");
        assert!(w != "0" && !w.is_empty(), "sleeping, so blocked somewhere: {w}");
        // Where stacks can be read (root, a kernel with stack traces), its
        // kernel stack is kept under that wchan, from the function itself down.
        if std::fs::read("/proc/self/stack").is_ok() {
            let stack = &s.timeline.writer_stacks[&w];
            assert!(stack.iter().any(|f| f.starts_with(&w)), "{w}: {stack:?}");
        }
    }
}
