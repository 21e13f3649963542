//! The figures a record carries about its run: latency percentiles, the
//! probe's responsiveness, the system-state timeline, the disk's counters
//! and the kernel log's summary. The `measure` modules compute them; the
//! workstation reads them from every record.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Percentile summary in milliseconds, as it appears in a record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub max_ms: f64,
}

/// The kernel's log at the end of a boot, summarised.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelLog {
    pub lines: usize,
    /// Lines per kind of trouble (I/O errors, hung tasks, OOM, oops…).
    pub counts: BTreeMap<String, usize>,
    /// The last lines (the whole log would not fit a serial record).
    pub tail: Vec<String>,
}

/// Component figures of one probe measurement (ms).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Spread {
    pub p50_ms: f64,
    /// Records from before it was kept read 0.
    #[serde(default)]
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The ticks these figures are of: a p99 of fewer than 100 is their worst.
    #[serde(default)]
    pub samples: u64,
}

/// The responsiveness part of a record.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Responsiveness {
    pub interval_ms: f64,
    /// Ticks from the workload's start until recovery (or the deadline).
    pub samples: u64,
    /// Response time (timer lateness + ls + read) while the workload ran and until recovery.
    pub p50_ms: f64,
    #[serde(default)]
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub stalls_over_100ms: u64,
    pub stalls_over_1s: u64,
    /// Seconds after the workload ended until the probe was back to its baseline;
    /// null when it had not recovered by the deadline.
    pub recovery_s: Option<f64>,
    pub baseline: Spread,
    pub baseline_samples: u64,
    pub ls: Spread,
    pub read: Spread,
    pub timer_late: Spread,
    /// CPU the probe itself used (user + sys), to show its cost.
    pub probe_cpu_s: f64,
}

/// Columns of samples: `t_s[i]` is when sample i was taken; each series has
/// one entry per sample, null where the kernel did not report the value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Timeline {
    pub interval_s: f64,
    pub t_s: Vec<f64>,
    pub series: BTreeMap<String, Vec<Option<u64>>>,
    /// Every probe tick on the same time axis: when it was due (s) and its
    /// response (timer lateness + ls + read, ms) — the stall as it built up.
    #[serde(default)]
    pub probe_t_s: Vec<f64>,
    #[serde(default)]
    pub probe_response_ms: Vec<f64>,
    /// Each tick's own parts, ms: the 4 KiB read and the `ls` (the rest of
    /// its response is the timer's lateness); empty in records from before
    /// they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_read_ms: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_ls_ms: Vec<f64>,
    /// When the workload ran, on the same axis.
    #[serde(default)]
    pub workload_start_s: f64,
    #[serde(default)]
    pub workload_end_s: f64,
    /// Where the worker (the writer) was blocked in the kernel at each sample
    /// (/proc/PID/wchan: a function name, `0` when running; a bare address
    /// on kernels without KALLSYMS); null before it started or after it ended.
    #[serde(default)]
    pub writer_wchan: Vec<Option<String>>,
    /// For each function the writer was seen blocked in, its kernel stack
    /// the first time (/proc/PID/stack, 2.6.29+, root only; at most
    /// STACKS_KEPT of them): the call chain behind a wchan.
    #[serde(default)]
    pub writer_stacks: BTreeMap<String, Vec<String>>,
    /// The writer's state at each sample, from /proc/PID/stat: `R` running,
    /// `D` uninterruptible, `S` sleeping…; null where unread. Empty in
    /// records from before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writer_state: Vec<Option<String>>,
    /// The writer's kernel stack at each sample, as an index into
    /// `stacks` (read whatever wchan said: a `0` wchan still has a stack; not read while the task runs, state `R`);
    /// null where none was read or the table was full. Empty in records
    /// from before each sample kept its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writer_stack: Vec<Option<u32>>,
    /// The probe's wchan, state and stack at each sample while the workload
    /// ran (null outside it), as the writer's: where the probe itself
    /// waited at a late tick. Empty in records from before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_wchan: Vec<Option<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_state: Vec<Option<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_stack: Vec<Option<u32>>,
    /// The probe sampled again and again while one of its ticks was late
    /// (slower than its baseline allows), between the timeline's samples:
    /// where the probe waited in exactly the ticks that were slow. Empty
    /// where no tick was late, and in records from before.
    #[serde(default, skip_serializing_if = "LateTicks::is_empty")]
    pub probe_late: LateTicks,
    /// The distinct kernel stacks the samples saw (writer's and probe's), innermost frame first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<Vec<String>>,
}

/// The probe's samples taken while a tick was late, as columns: sample `i`
/// was taken at `t_s[i]` on the timeline's axis, so it belongs to the tick
/// of `probe_t_s` whose response spans that time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LateTicks {
    pub t_s: Vec<f64>,
    /// The probe's wchan, state and stack (an index into `Timeline::stacks`), as at the timeline's samples.
    pub wchan: Vec<Option<String>>,
    pub state: Vec<Option<String>>,
    pub stack: Vec<Option<u32>>,
}

impl LateTicks {
    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }
}

impl Timeline {
    /// The writer's kernel stack at sample `i`: its own where the record
    /// kept one per sample, else the first stack seen under its wchan
    /// (records from before), which may be another moment's.
    pub fn writer_stack_at(&self, i: usize) -> Option<&[String]> {
        if !self.writer_stack.is_empty() {
            let index = (*self.writer_stack.get(i)?)?;
            return self.stacks.get(index as usize).map(Vec::as_slice);
        }
        let wchan = self.writer_wchan.get(i)?.as_deref()?;
        self.writer_stacks.get(wchan).map(Vec::as_slice)
    }

    /// The probe's kernel stack at sample `i`.
    pub fn probe_stack_at(&self, i: usize) -> Option<&[String]> {
        let index = (*self.probe_stack.get(i)?)?;
        self.stacks.get(index as usize).map(Vec::as_slice)
    }

    /// The probe's kernel stack at its late sample `i`.
    pub fn probe_late_stack_at(&self, i: usize) -> Option<&[String]> {
        let index = (*self.probe_late.stack.get(i)?)?;
        self.stacks.get(index as usize).map(Vec::as_slice)
    }
}

/// /proc/diskstats increases of one device over a workload. Fields in
/// alphabetical order: the order records have always had them in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskDelta {
    pub device: String,
    /// Time the device was busy; None where diskstats has no such column (2.6 partitions).
    pub ms_io: Option<u64>,
    pub ms_writing: Option<u64>,
    pub reads: u64,
    pub sectors_read: u64,
    pub sectors_written: u64,
    pub writes: u64,
}

/// What the boot image cost the server when the plan started (/init only;
/// `measure::footprint`): what a comparison of kernels must know it shares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    /// The root filesystem's regular files (the initramfs, held in memory
    /// that is never reclaimed), KiB; null past the walk's bound.
    pub rootfs_kib: Option<u64>,
    /// /init's peak resident memory (VmHWM), KiB.
    pub init_peak_rss_kib: Option<u64>,
    /// Seconds the kernel had been up when the plan started (/proc/uptime).
    pub uptime_s: Option<f64>,
}
