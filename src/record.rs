//! The result record: one JSON object per workload run, the contract between
//! the image side (which writes records) and the workstation side (which
//! collects and compares them). Every field and unit is in docs/record-format.md.

use crate::measure::evidence::{Host, Kernel, Storage};
use crate::measure::histogram::LatencySummary;
use crate::measure::probe::Responsiveness;
use crate::measure::sampler::Timeline;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema of a result record: one workload run.
pub const SCHEMA: &str = "bootmark.result/1";
/// The schema of a run record: the last document of every boot of the
/// image (its facts, status and error; see docs/record-format.md).
pub const RUN_SCHEMA: &str = "bootmark.run/1";

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

/// The last document of every boot of the image: how the boot went, what
/// it found and did (`facts`), and the kernel's log. Fields in
/// docs/record-format.md, "Run record".
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: String,
    pub run_id: String,
    /// After the boot's result records: their count.
    pub seq: u32,
    /// `ok`, or `error` (the boot stopped early; `error` says why).
    pub status: Status,
    pub error: Option<String>,
    pub started_unix_s: f64,
    pub finished_unix_s: f64,
    pub bootmark: Tool,
    pub kernel: Kernel,
    pub host: Host,
    /// Result records this boot emitted, and how many of them were not ok.
    pub records: u32,
    pub failed_records: u32,
    /// What the boot found and did, one key per topic (bring-up, modules,
    /// devices, target, results stick, sequence…): see the docs.
    pub facts: serde_json::Map<String, serde_json::Value>,
    pub kernel_log: KernelLog,
}

/// The kernel's log at the end of a boot, summarised.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct KernelLog {
    pub lines: usize,
    /// Lines per kind of trouble (I/O errors, hung tasks, OOM, oops…).
    pub counts: BTreeMap<String, usize>,
    /// The last lines (the whole log would not fit a serial record).
    pub tail: Vec<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/record-format.md's run record table names exactly the fields
    /// a RunRecord serialises to.
    #[test]
    fn the_run_record_docs_name_every_field_and_no_other() {
        let doc = RunRecord {
            schema: RUN_SCHEMA.into(),
            run_id: "r".into(),
            seq: 0,
            status: Status::Ok,
            error: None,
            started_unix_s: 0.0,
            finished_unix_s: 0.0,
            bootmark: Tool { version: "0".into() },
            kernel: Kernel::default(),
            host: Host::default(),
            records: 0,
            failed_records: 0,
            facts: serde_json::Map::new(),
            kernel_log: KernelLog::default(),
        };
        let fields: std::collections::BTreeSet<String> =
            serde_json::to_value(&doc).unwrap().as_object().unwrap().keys().cloned().collect();
        let docs = include_str!("../docs/record-format.md");
        let table = docs.split("# Run record").nth(1).unwrap().split("`facts` keys").next().unwrap();
        let documented: std::collections::BTreeSet<String> = table
            .lines()
            .filter(|l| l.starts_with("| `"))
            .flat_map(|l| {
                l.split(" | ").next().unwrap().split('`').skip(1).step_by(2).map(String::from).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(documented, fields);
    }
}
