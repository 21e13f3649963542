//! What the kernel's own tracepoints showed over one workload, summarised
//! (the raw stream is far too large for a serial record): per event and per
//! phase of the workload, the dirty-throttling pauses, block writeback
//! throttling's steps, each request's size and device time, the journal's
//! commits, and a capped excerpt of the raw lines as the exhibit. The image
//! side reads them (`measure::kernel_events`); the report's findings cite them.

use super::measures::LatencySummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The event that proves dirty throttling, as `enabled` names it.
pub const BALANCE_DIRTY_PAGES: &str = "writeback:balance_dirty_pages";

/// The tracepoints read, each proving one mechanism (docs/results.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelEvents {
    /// The tracing directory read (`/sys/kernel/tracing`, or debugfs's `tracing`).
    pub tracefs: String,
    /// The trace clock; its timestamps are put on the timeline's axis through a
    /// marker written at a known CLOCK_MONOTONIC time.
    pub clock: String,
    /// Events enabled, as `system:event`.
    pub enabled: Vec<String>,
    /// Events asked for that this kernel lacks (its version or its config).
    pub absent: Vec<String>,
    /// Lines read from trace_pipe.
    pub read: u64,
    /// Events the kernel overwrote before they were read (its per-CPU `overrun`):
    /// the summaries below miss them.
    pub lost: u64,
    /// Per event, how many fell in each phase.
    pub counts: BTreeMap<String, Phased<u64>>,
    /// `writeback:balance_dirty_pages` (3.2+): a task over the dirty limit's
    /// freerun point, and the pause the kernel made it sleep.
    pub dirty_pauses: Phased<Pauses>,
    /// The highest global dirty limit and dirty count it reported, in pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_limit_pages: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_pages_max: Option<u64>,
    /// `wbt:*` (4.10+): block writeback throttling at work, per disk it fired on.
    pub wbt: BTreeMap<String, Wbt>,
    /// `block:block_rq_issue` → `block_rq_complete` (and `block_rq_insert` → issue), per disk and direction
    /// (`sda W`): how large the requests were and how long the device held them.
    pub requests: BTreeMap<String, Requests>,
    /// `vmscan:mm_vmscan_direct_reclaim_begin` → `_end` (2.6.36+): tasks
    /// that reclaimed memory themselves (an allocation that found too little
    /// free), each span from begin to end, by the phase it ended in; every
    /// task's, paired by PID. Null where the two events were not both on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_reclaim: Option<Phased<Pauses>>,
    /// `jbd2:jbd2_run_stats`: the ext3/ext4 journal's commits; null when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<Journal>,
    /// Raw lines as the exhibit (a few per event, the longest pause and the
    /// deepest wbt step among them), each prefixed by its time on the timeline's axis.
    pub excerpt: Vec<String>,
}

/// A figure split by the workload's phases: until the last write() returned,
/// from then until the workload ended (the flush), and after it (recovery).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phased<T> {
    pub writing: T,
    pub flushing: T,
    pub after: T,
}

impl<T: Clone + std::ops::Add<Output = T>> Phased<T> {
    /// The three phases together.
    pub fn total(&self) -> T {
        self.writing.clone() + self.flushing.clone() + self.after.clone()
    }
}

/// The pauses one phase's `balance_dirty_pages` events asked for (pause > 0);
/// also the spans of a phase's direct reclaims.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pauses {
    pub count: u64,
    pub total_ms: f64,
    pub max_ms: f64,
}

impl std::ops::Add for Pauses {
    type Output = Pauses;
    fn add(self, o: Pauses) -> Pauses {
        Pauses { count: self.count + o.count, total_ms: self.total_ms + o.total_ms, max_ms: self.max_ms.max(o.max_ms) }
    }
}

/// Block writeback throttling's own account.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Wbt {
    /// `wbt_step` events, and of them those that scaled the queue down.
    pub steps: u64,
    pub scaled_down: u64,
    /// The smallest `max` depth a step set: how far it throttled writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest_max_depth: Option<u64>,
    /// The longest read latency `wbt_lat` reported over its target (µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_us: Option<u64>,
    /// `wbt_timer` events: its monitoring windows.
    pub windows: u64,
}

/// Both ends of a task's own memory reclaim: timed only when both are on.
pub const RECLAIM_EVENTS: [&str; 2] = ["vmscan:mm_vmscan_direct_reclaim_begin", "vmscan:mm_vmscan_direct_reclaim_end"];

/// A request entering the I/O scheduler's queue: with the issue, its time there.
pub const INSERT_EVENT: &str = "block:block_rq_insert";

/// Whether the requests' queue times (`Requests::queued_ms`) speak for the
/// queue: `block_rq_insert` was on and a scheduler ran. Under `none` only
/// some requests are inserted (while the device was busy, or a plug was
/// flushed): their times say nothing of the others.
pub fn queue_timed<S: AsRef<str>>(enabled: &[S], scheduler: Option<&str>) -> bool {
    scheduler.is_some_and(|s| s != "none") && enabled.iter().any(|e| e.as_ref() == INSERT_EVENT)
}

/// Both ends of a request: it is timed in the device only when both are on.
pub const REQUEST_EVENTS: [&str; 2] = ["block:block_rq_issue", "block:block_rq_complete"];

/// The reads the disks `disks` served while traced (all disks when none is
/// named), from `requests` keyed "sda R": the disk that served most of them.
/// None unless both request events were `enabled`.
pub fn reads_on<'a, S: AsRef<str> + 'a>(
    enabled: &[S],
    requests: impl IntoIterator<Item = (&'a S, &'a Requests)>,
    disks: &[&str],
) -> Option<(&'a str, &'a Requests)> {
    if !REQUEST_EVENTS.iter().all(|e| enabled.iter().any(|on| on.as_ref() == *e)) {
        return None;
    }
    requests
        .into_iter()
        .filter_map(|(key, q)| {
            let disk = key.as_ref().strip_suffix(" R")?;
            (disks.is_empty() || disks.contains(&disk)).then_some((disk, q))
        })
        .max_by_key(|(_, q)| q.count)
}

/// Requests of one disk and direction, issued and completed while traced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    pub count: u64,
    /// Request sizes (KiB).
    pub kib_p50: u32,
    pub kib_max: u32,
    /// Issue to completion: the time the device (and its driver) held each request.
    pub device_ms: LatencySummary,
    /// `block:block_rq_insert` → issue, of the requests whose insert was
    /// seen: the time in the I/O scheduler's queue, including a wait for the
    /// driver's tag while the device's queue was full. Null where the event
    /// was off (records before it was read) or no request was inserted (a
    /// queue without a scheduler issues most straight to the driver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_ms: Option<LatencySummary>,
}

/// The journal's commits, from `jbd2_run_stats` (ms as the kernel converted its jiffies).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub commits: u64,
    /// Longest time a transaction ran (took handles) and was locked before commit.
    pub max_running_ms: u64,
    pub max_locked_ms: u64,
    /// Longest time writing a commit to the journal.
    pub max_logging_ms: u64,
}
