//! The result record: one JSON object per workload run, the contract between
//! the image side (which writes records) and the workstation side (which
//! collects and compares them). Every field and unit is in docs/record-format.md.

use crate::measure::evidence::{Host, Kernel, Storage};
use crate::measure::histogram::LatencySummary;
use crate::measure::probe::Responsiveness;
use crate::measure::sampler::Timeline;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "bootmark.result/1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Timeout,
    Error,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub schema: String,
    pub run_id: String,
    /// Position of this record in its run, from 0.
    pub seq: u32,
    pub repetition: u32,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub started_unix_s: f64,
    pub bootmark: Tool,
    pub plan: PlanRef,
    pub workload: WorkloadRef,
    pub kernel: Kernel,
    pub host: Host,
    pub storage: Storage,
    pub vm: BTreeMap<String, Option<i64>>,
    pub times: Times,
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// (bytes_written + bytes_read) / MiB / times.wall_s
    pub throughput_mib_s: f64,
    pub latency: Latency,
    /// Null when the plan turned the probe off.
    pub responsiveness: Option<Responsiveness>,
    pub counters: Counters,
    pub timeline: Timeline,
    /// Workload-specific facts (cache state for seqread, per-instance figures, sort phases).
    pub details: serde_json::Value,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tool {
    pub version: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlanRef {
    pub name: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadRef {
    pub name: String,
    pub params: serde_json::Value,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Times {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub writes_returned_s: Option<f64>,
    pub closed_s: Option<f64>,
    pub durable_s: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Latency {
    /// Every write() syscall the workload made.
    pub write: LatencySummary,
    /// Every read() syscall the workload made.
    pub read: LatencySummary,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counters {
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// /proc/vmstat changes over the workload; keys that did not change (or that
    /// the kernel lacks) are left out.
    pub vmstat_delta: BTreeMap<String, i64>,
    /// /proc/diskstats increases of the device under test; null without one.
    pub disk_delta: serde_json::Value,
}

pub fn mib_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 { bytes as f64 / (1u64 << 20) as f64 / seconds } else { 0.0 }
}

impl Record {
    /// One line for people watching a terminal or a serial console.
    pub fn summary_line(&self) -> String {
        let mut s = format!(
            "{:<10} {:>8} in {:>7.2} s ({:>7.1} MiB/s) user {:.2} s sys {:.2} s",
            self.workload.name,
            crate::size::human(self.bytes_written + self.bytes_read),
            self.times.wall_s,
            self.throughput_mib_s,
            self.times.user_s,
            self.times.sys_s
        );
        if let Some(d) = self.times.durable_s {
            s += &format!(", durable {d:.2} s");
        }
        if let Some(r) = &self.responsiveness {
            s += &format!(
                "; probe p99 {:.1} ms max {:.1} ms, {} stalls >1s, recovery {}",
                r.p99_ms,
                r.max_ms,
                r.stalls_over_1s,
                r.recovery_s.map(|v| format!("{v:.1} s")).unwrap_or_else(|| "not reached".into())
            );
        }
        if self.status != Status::Ok {
            s += &format!(" [{:?}: {}]", self.status, self.error.as_deref().unwrap_or(""));
        }
        for n in &self.notes {
            s += &format!(" [{n}]");
        }
        s
    }
}
