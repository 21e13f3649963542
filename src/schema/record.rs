//! The result record: one JSON object per workload run, the contract between
//! the image side (which writes records) and the workstation side (which
//! collects and compares them). Every field and unit is in docs/record-format.md.

// The parts of a record in their own files of this folder, re-exported so
// that a reader of records finds every type a record carries here.
pub use super::events::{Journal, KernelEvents, Pauses, Phased, Requests, Wbt};
pub use super::layer::Layer;
pub use super::machine::{Device, Firmware, Host, Kernel, Storage};
pub use super::measures::{DiskDelta, KernelLog, LatencySummary, Responsiveness, Spread, Timeline};
pub use super::variant::Applied;
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

impl Status {
    /// As the record spells it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Timeout => "timeout",
            Status::Error => "error",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// The plan's variant this run was made under (null: the settings as found).
    #[serde(default)]
    pub variant: Option<Applied>,
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
    /// The kernel's blocked-task dumps (SysRq-W) taken when the probe went
    /// silent over a second; only the boot image takes them.
    #[serde(default)]
    pub blocked_tasks: Vec<String>,
    /// The kernel's tracepoints over the workload, summarised; null where
    /// they were not read (`sources.tracepoints` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_events: Option<KernelEvents>,
    /// Each source of evidence about where tasks waited (`wchan`, `stack`,
    /// `sysrq_w`, `tracepoints`): "used…" or "not used: why".
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// What the boot image cost the server when the plan started; absent
    /// outside the boot image and in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<crate::schema::measures::Footprint>,
    /// Workload-specific facts (cache state for seqread, per-instance figures, sort phases).
    pub details: serde_json::Value,
    pub notes: Vec<String>,
}

/// One document as the image emits it: a result record or a run record.
/// Serialised as the record itself (each carries its `schema`); read back
/// with [`Document::from_json`], which picks the type by `schema` and says
/// exactly what does not fit.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Document {
    Result(Box<Record>),
    Run(Box<RunRecord>),
}

impl Document {
    /// Parse a document's JSON bytes as the type its `schema` names.
    pub fn from_json(bytes: &[u8]) -> Result<Document, String> {
        #[derive(Deserialize)]
        struct Head {
            schema: Option<String>,
        }
        // bootmark writes `schema` first: a record that begins with it needs
        // no pass of its own to find it (a third of a fleet report's parsing).
        let ours = [SCHEMA, RUN_SCHEMA].into_iter().find(|s| begins_with_schema(bytes, s));
        let schema = match ours {
            Some(s) => Some(s.to_string()),
            None => serde_json::from_slice::<Head>(bytes).map_err(|e| format!("not valid JSON: {e}"))?.schema,
        };
        match schema.as_deref() {
            Some(SCHEMA) => serde_json::from_slice(bytes)
                .map(|r| Document::Result(Box::new(r)))
                .map_err(|e| format!("not a valid {SCHEMA} record: {e}")),
            Some(RUN_SCHEMA) => serde_json::from_slice(bytes)
                .map(|r| Document::Run(Box::new(r)))
                .map_err(|e| format!("not a valid {RUN_SCHEMA} record: {e}")),
            Some(other) => Err(format!("not a bootmark document (schema {other})")),
            None => Err("a document without a schema".into()),
        }
    }

    pub fn result(&self) -> Option<&Record> {
        match self {
            Document::Result(r) => Some(r),
            Document::Run(_) => None,
        }
    }

    pub fn run(&self) -> Option<&RunRecord> {
        match self {
            Document::Run(r) => Some(r),
            Document::Result(_) => None,
        }
    }

    pub fn schema(&self) -> &str {
        match self {
            Document::Result(r) => &r.schema,
            Document::Run(r) => &r.schema,
        }
    }

    pub fn run_id(&self) -> &str {
        match self {
            Document::Result(r) => &r.run_id,
            Document::Run(r) => &r.run_id,
        }
    }

    pub fn seq(&self) -> u32 {
        match self {
            Document::Result(r) => r.seq,
            Document::Run(r) => r.seq,
        }
    }
}

/// Whether a document's JSON text begins `{"schema":"SCHEMA"`, as bootmark writes it.
pub fn begins_with_schema(bytes: &[u8], schema: &str) -> bool {
    let rest = bytes.strip_prefix(br#"{"schema":""#.as_slice());
    let rest = rest.and_then(|r| r.strip_prefix(schema.as_bytes()));
    rest.is_some_and(|r| r.first() == Some(&b'"'))
}

impl std::fmt::Display for Document {
    /// The document as one line of JSON, as a stick's journal holds it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).map_err(|_| std::fmt::Error)?)
    }
}

/// The last document of every boot of the image: how the boot went, what
/// it found and did (`facts`), and the kernel's log. Fields in
/// docs/record-format.md, "Run record".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanRef {
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadRef {
    pub name: String,
    pub params: serde_json::Value,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Times {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub writes_returned_s: Option<f64>,
    pub closed_s: Option<f64>,
    pub durable_s: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Every write() syscall the workload made.
    pub write: LatencySummary,
    /// Every read() syscall the workload made.
    pub read: LatencySummary,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// /proc/vmstat changes over the workload; keys that did not change (or that
    /// the kernel lacks) are left out.
    pub vmstat_delta: BTreeMap<String, i64>,
    /// /proc/diskstats increases of the device under test; null without one.
    pub disk_delta: Option<DiskDelta>,
}

/// The boot entry a record's command line came from (`bootmark.entry=k0`,
/// which the image builder puts on every entry's command line).
pub fn boot_entry(cmdline: Option<&str>) -> Option<&str> {
    cmdline?.split_whitespace().find_map(|w| w.strip_prefix("bootmark.entry="))
}

/// The settings a boot was given on its command line (`bootmark.set=`), if any.
pub fn boot_settings(cmdline: Option<&str>) -> Option<&str> {
    cmdline?.split_whitespace().find_map(|w| w.strip_prefix("bootmark.set="))
}

pub fn mib_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 { bytes as f64 / (1u64 << 20) as f64 / seconds } else { 0.0 }
}

impl Record {
    /// An `ok` record of run `run_id` with nothing measured: what tests (here,
    /// in xtask and in tests/) start from and fill in, so that each states
    /// only the fields it is about and stays a whole, valid record.
    pub fn blank(run_id: &str, seq: u32) -> Record {
        Record {
            schema: SCHEMA.into(),
            run_id: run_id.into(),
            seq,
            repetition: 0,
            status: Status::Ok,
            error: None,
            started_unix_s: 0.0,
            bootmark: Tool { version: env!("CARGO_PKG_VERSION").into() },
            plan: PlanRef { name: "test".into() },
            workload: WorkloadRef { name: "idle".into(), params: serde_json::json!({}) },
            variant: None,
            kernel: Kernel::default(),
            host: Host::default(),
            storage: Storage::default(),
            vm: BTreeMap::new(),
            times: Times::default(),
            bytes_written: 0,
            bytes_read: 0,
            throughput_mib_s: 0.0,
            latency: Latency::default(),
            responsiveness: None,
            counters: Counters::default(),
            timeline: Timeline::default(),
            blocked_tasks: Vec::new(),
            kernel_events: None,
            sources: BTreeMap::new(),
            footprint: None,
            details: serde_json::Value::Null,
            notes: Vec::new(),
        }
    }

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
pub(crate) mod tests {
    use super::*;

    /// A valid result record with nothing in it, for tests to fill in.
    pub(crate) fn record() -> Record {
        Record::blank("r", 0)
    }

    /// A record read and written again keeps every float to the last digit
    /// (serde_json's float_roundtrip: without it 11.977118935939021 came
    /// back as 11.97711893593902). The report and export re-serialise
    /// records; the evidence must come out as it was verified.
    #[test]
    fn floats_survive_a_read_and_a_write_exactly() {
        let mut r = record();
        r.throughput_mib_s = 11.977118935939021;
        r.times.wall_s = 0.1 + 0.2;
        let text = serde_json::to_string(&r).unwrap();
        let again: Record = serde_json::from_str(&text).unwrap();
        assert_eq!(again.throughput_mib_s.to_bits(), r.throughput_mib_s.to_bits());
        assert_eq!(serde_json::to_string(&again).unwrap(), text);
        for n in ["11.977118935939021", "1796055822.7029932", "2.2250738585072014e-308", "0.30000000000000004"] {
            let v: f64 = serde_json::from_str(n).unwrap();
            assert_eq!(serde_json::to_string(&v).unwrap(), n, "{n}");
        }
    }

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
        let docs = include_str!("../../docs/record-format.md");
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
