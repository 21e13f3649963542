//! A result record at a glance: the fields the report groups and sums,
//! read from the record's JSON with its strings borrowed, while every other
//! field is read only to check that it has its schema's type (`check`):
//! the timeline's arrays are visited element by element and never built.
//! So a glance refuses exactly the records the whole schema refuses — the
//! report leaves out what collect and export reject — at a fraction of the
//! cost of building the whole `Record` (measured in docs: README "Collecting
//! and comparing"), which is what lets `report` read a fleet's million
//! records in seconds.
//!
//! The whole record is still one call away (`Glance::whole`): from the same
//! bytes, parsed against the full schema, for the few records a finding or
//! the HTML timeline keeps.

use crate::schema::record::{Record, SCHEMA, Status, Times};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::borrow::Cow;
use std::cell::OnceCell;

mod check;
use check::{Check, F64, Map, OptU64, Seq, Str};

type Text<'a> = Cow<'a, str>;

/// A result record at a glance. Every field of the schema is read and
/// checked against its type (`check`), so a glance refuses exactly the
/// records a whole parse refuses; only the fields the report uses are kept.
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Deserialize)]
pub struct Glance<'a> {
    #[serde(borrow)]
    pub schema: Text<'a>,
    #[serde(borrow)]
    pub run_id: Text<'a>,
    pub seq: u32,
    repetition: Check<u32>,
    pub status: Status,
    #[serde(borrow, default)]
    pub error: Option<Text<'a>>,
    pub started_unix_s: f64,
    bootmark: ToolCheck,
    #[serde(borrow)]
    pub plan: Named<'a>,
    #[serde(borrow)]
    pub workload: Workload<'a>,
    #[serde(borrow, default)]
    pub variant: Option<Variant<'a>>,
    #[serde(borrow)]
    pub kernel: Kernel<'a>,
    #[serde(borrow)]
    pub host: Host<'a>,
    #[serde(borrow)]
    pub storage: Storage<'a>,
    /// Kept: a handful of sysctls, the settings in force a group's runs must share.
    #[serde(borrow)]
    pub vm: std::collections::BTreeMap<Text<'a>, Option<i64>>,
    pub times: Times,
    pub bytes_written: u64,
    bytes_read: Check<u64>,
    pub throughput_mib_s: f64,
    pub latency: Latency,
    pub responsiveness: Option<Probe>,
    pub counters: Counters,
    /// How many probe ticks the timeline holds (the HTML page draws only a record with some).
    #[serde(rename = "timeline", deserialize_with = "probe_ticks")]
    pub probe_ticks: usize,
    #[serde(default)]
    blocked_tasks: Seq<Str>,
    /// The tracepoints' summary: which events were on and the dirty-throttling
    /// pauses kept (the rules count them over every run); the rest checked.
    #[serde(borrow, default)]
    pub kernel_events: Option<KernelEvents<'a>>,
    #[serde(default)]
    sources: Map<Str, Str>,
    /// Any JSON: a workload's own facts; of them, fio's per-job figures are kept.
    #[serde(default)]
    pub details: Details,
    #[serde(borrow)]
    pub notes: Vec<Text<'a>>,
    /// Where the whole record is: the bytes glanced at, or a record already parsed.
    #[serde(skip)]
    whole: Whole<'a>,
    /// The whole record once parsed from the bytes (a record several
    /// findings keep is parsed once).
    #[serde(skip)]
    parsed: OnceCell<Box<Record>>,
}

/// `details` at a glance: what a `fio` workload measured per job, when it
/// ran; any other workload's facts (any JSON) are skipped unbuilt.
#[derive(Debug, Default)]
pub struct Details {
    pub fio: Vec<FioJob>,
}

/// One fio job's figures (`details.fio.jobs[]`), a direction where it did I/O.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct FioJob {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub read: Option<FioDirection>,
    #[serde(default)]
    pub write: Option<FioDirection>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct FioDirection {
    #[serde(default)]
    pub bw_bytes: f64,
    #[serde(default)]
    pub iops: f64,
    #[serde(default)]
    pub clat: FioClat,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct FioClat {
    #[serde(default)]
    pub p99_ms: Option<f64>,
}

#[derive(Default, Deserialize)]
struct FioJobs {
    #[serde(default)]
    jobs: Vec<FioJob>,
}

impl Details {
    /// From a whole record's `details`.
    fn of(details: &Value) -> Details {
        let jobs = details.get("fio").and_then(|f| serde_json::from_value::<FioJobs>(f.clone()).ok());
        Details { fio: jobs.map(|j| j.jobs).unwrap_or_default() }
    }
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Details;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Details, A::Error> {
                let mut out = Details::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "fio" {
                        out.fio = map.next_value::<FioJobs>()?.jobs;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(out)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Details, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Details::default())
            }
            fn visit_unit<E>(self) -> Result<Details, E> {
                Ok(Details::default())
            }
            fn visit_none<E>(self) -> Result<Details, E> {
                Ok(Details::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Details, E> {
                Ok(Details::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Details, E> {
                Ok(Details::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Details, E> {
                Ok(Details::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Details, E> {
                Ok(Details::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<Details, E> {
                Ok(Details::default())
            }
        }
        d.deserialize_any(Visit)
    }
}

/// `counters` (`record::Counters`): the disk's request counts kept (the
/// report's request size), the rest checked.
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
pub struct Counters {
    voluntary_switches: Check<u64>,
    involuntary_switches: Check<u64>,
    minor_faults: Check<u64>,
    major_faults: Check<u64>,
    vmstat_delta: Map<Str, Check<i64>>,
    pub disk_delta: Option<crate::schema::measures::DiskDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Named<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
}

/// `bootmark` (`record::Tool`), checked.
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
struct ToolCheck {
    version: Check<Str>,
}

#[derive(Debug, Deserialize)]
pub struct Workload<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    pub params: Value,
}

/// `variant` (`variant::Applied`).
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
pub struct Variant<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    asked: Map<Str, Str>,
    read_back: Map<Str, Option<Str>>,
    not_applied: Map<Str, Str>,
    #[serde(default)]
    note: Check<Str>,
}

#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
pub struct Kernel<'a> {
    #[serde(borrow, default)]
    pub release: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub version: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub cmdline: Option<Text<'a>>,
    #[serde(default)]
    arch: Check<Option<Str>>,
}

#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
pub struct Host<'a> {
    #[serde(borrow, default)]
    pub hostname: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub cpu_model: Option<Text<'a>>,
    cpus: Check<usize>,
    #[serde(default)]
    cpu_mhz: Check<Option<f64>>,
    #[serde(default)]
    bogomips: Check<Option<f64>>,
    #[serde(default)]
    mem_total_kib: Check<Option<u64>>,
    #[serde(default)]
    low_total_kib: Check<Option<u64>>,
    #[serde(default)]
    high_total_kib: Check<Option<u64>>,
    #[serde(borrow, default)]
    pub dmi_vendor: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub dmi_product: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub dmi_asset_tag: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub firmware: Option<Firmware<'a>>,
}

/// `host.firmware` (`measure::evidence::Firmware`).
#[derive(Debug, Deserialize)]
pub struct Firmware<'a> {
    #[serde(borrow, default)]
    pub boot_mode: Option<Text<'a>>,
    #[serde(default)]
    pub secure_boot: Option<bool>,
    #[serde(borrow, default)]
    pub lockdown: Option<Text<'a>>,
}

#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
pub struct Storage<'a> {
    dir: Check<Str>,
    #[serde(borrow, default)]
    pub fs: Option<Text<'a>>,
    #[serde(default)]
    mount_point: Check<Option<Str>>,
    #[serde(default)]
    mount_source: Check<Option<Str>>,
    #[serde(default)]
    mount_options: Check<Option<Str>>,
    #[serde(borrow, default)]
    pub device: Option<Device<'a>>,
    #[serde(borrow, default)]
    pub scheduler: Option<Text<'a>>,
    #[serde(default)]
    nr_requests: Check<Option<u64>>,
    #[serde(default)]
    write_cache: Check<Option<Str>>,
    /// The target's queue settings by sysfs path (`queue/max_sectors_kb`…): kept,
    /// a handful of short strings, for the causes a comparison names.
    #[serde(borrow, default)]
    pub queue: std::collections::BTreeMap<Text<'a>, Text<'a>>,
    /// Kept whole: empty for a plain disk, a handful of layers otherwise.
    #[serde(default)]
    pub layers: Vec<crate::schema::layer::Layer>,
}

#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
pub struct Device<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    #[serde(borrow)]
    pub disk: Text<'a>,
    major: Check<u32>,
    minor: Check<u32>,
    #[serde(borrow, default)]
    pub model: Option<Text<'a>>,
    #[serde(default)]
    rotational: Check<Option<bool>>,
    #[serde(default)]
    size_bytes: Check<Option<u64>>,
}

/// The probe's summary figures (`measure::probe::Responsiveness`).
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct Probe {
    interval_ms: Check<f64>,
    pub samples: u64,
    p50_ms: Check<f64>,
    #[serde(default)]
    p90_ms: Check<f64>,
    pub p99_ms: f64,
    pub max_ms: f64,
    stalls_over_100ms: Check<u64>,
    pub stalls_over_1s: u64,
    pub recovery_s: Option<f64>,
    baseline: Max,
    baseline_samples: Check<u64>,
    ls: Max,
    pub read: Max,
    pub timer_late: Max,
    probe_cpu_s: Check<f64>,
}

/// The latency of write() and read() (`record::Latency`): the slowest write kept.
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct Latency {
    pub write: LatencyMax,
    read: LatencyMax,
}

/// A `LatencySummary`: its worst kept, the rest checked.
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct LatencyMax {
    count: Check<u64>,
    mean_ms: Check<f64>,
    min_ms: Check<f64>,
    p50_ms: Check<f64>,
    p90_ms: Check<f64>,
    p99_ms: Check<f64>,
    p99_9_ms: Check<f64>,
    pub max_ms: f64,
}

/// The worst of a spread of times (`probe::Spread`), the rest checked.
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct Max {
    pub p50_ms: f64,
    #[serde(default)]
    p90_ms: Check<f64>,
    p99_ms: Check<f64>,
    pub max_ms: f64,
    #[serde(default)]
    samples: Check<u64>,
}

/// `kernel_events` (`schema::events::KernelEvents`), field by field.
#[allow(dead_code)] // fields not kept are read only to be checked
#[derive(Debug, Default, Deserialize)]
pub struct KernelEvents<'a> {
    tracefs: Str,
    clock: Str,
    #[serde(borrow)]
    pub enabled: Vec<Text<'a>>,
    absent: Seq<Str>,
    read: Check<u64>,
    lost: Check<u64>,
    counts: Map<Str, Check<crate::schema::events::Phased<u64>>>,
    pub dirty_pauses: crate::schema::events::Phased<crate::schema::events::Pauses>,
    #[serde(default)]
    dirty_limit_pages: Check<Option<u64>>,
    #[serde(default)]
    dirty_pages_max: Check<Option<u64>>,
    wbt: Map<Str, Check<crate::schema::events::Wbt>>,
    /// Kept: a few entries ("sda R", "sda W"), for the device's share of a read's wait.
    #[serde(borrow, default)]
    pub requests: std::collections::BTreeMap<Text<'a>, crate::schema::events::Requests>,
    #[serde(default)]
    direct_reclaim: Check<Option<crate::schema::events::Phased<crate::schema::events::Pauses>>>,
    #[serde(default)]
    journal: Check<Option<crate::schema::events::Journal>>,
    excerpt: Seq<Str>,
}

impl Glance<'_> {
    /// The median time the target's disk held a read, from the block
    /// tracepoints (issue to completion); None when they were not read.
    pub fn device_read_p50_ms(&self) -> Option<f64> {
        let reads = self.target_reads()?;
        (reads.count > 0).then_some(reads.device_ms.p50_ms)
    }

    /// The median time a read of the target's disk waited in the I/O
    /// scheduler's queue (block_rq_insert to issue); None where that event
    /// was off or no read was seen inserted.
    pub fn queued_read_p50_ms(&self) -> Option<f64> {
        let k = self.kernel_events.as_ref()?;
        if !crate::schema::events::queue_timed(&k.enabled, self.storage.scheduler.as_deref()) {
            return None;
        }
        Some(self.target_reads()?.queued_ms.as_ref()?.p50_ms)
    }

    /// The traced reads of the target's disk (or of the disks under it).
    fn target_reads(&self) -> Option<&crate::schema::events::Requests> {
        let k = self.kernel_events.as_ref()?;
        let mut disks: Vec<&str> = self.storage.device.iter().map(|d| d.disk.as_ref()).collect();
        disks.extend(self.storage.layers.iter().filter(|l| l.kind == "disk").map(|l| l.name.as_str()));
        let (_, reads) = crate::schema::events::reads_on(&k.enabled, &k.requests, &disks)?;
        Some(reads)
    }
}

impl KernelEvents<'_> {
    /// Milliseconds the kernel paused writers at the dirty limit; None when its tracepoint was not on.
    pub fn dirty_pause_ms(&self) -> Option<f64> {
        let traced = self.enabled.iter().any(|e| e == crate::schema::events::BALANCE_DIRTY_PAGES);
        traced.then(|| self.dirty_pauses.total().total_ms)
    }
}

#[derive(Debug, Default)]
enum Whole<'a> {
    #[default]
    Unknown,
    Json(&'a [u8]),
    Record(&'a Record),
}

/// `timeline.probe_t_s`'s length; every array of the timeline checked
/// element by element, none of them built (`measure::sampler::Timeline`).
fn probe_ticks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    #[derive(Deserialize)]
    #[allow(dead_code)] // read to be checked
    struct Timeline {
        interval_s: Check<f64>,
        t_s: Seq<F64>,
        series: Map<Str, Seq<OptU64>>,
        #[serde(default)]
        probe_t_s: Seq<F64>,
        #[serde(default)]
        probe_response_ms: Seq<F64>,
        #[serde(default)]
        probe_read_ms: Seq<F64>,
        #[serde(default)]
        probe_ls_ms: Seq<F64>,
        #[serde(default)]
        workload_start_s: Check<f64>,
        #[serde(default)]
        workload_end_s: Check<f64>,
        #[serde(default)]
        writer_wchan: Seq<Option<Str>>,
        #[serde(default)]
        writer_stacks: Map<Str, Seq<Str>>,
        #[serde(default)]
        writer_state: Seq<Option<Str>>,
        #[serde(default)]
        writer_stack: Seq<Option<Check<u32>>>,
        #[serde(default)]
        probe_wchan: Seq<Option<Str>>,
        #[serde(default)]
        probe_state: Seq<Option<Str>>,
        #[serde(default)]
        probe_stack: Seq<Option<Check<u32>>>,
        #[serde(default)]
        probe_late: LateTicks,
        #[serde(default)]
        stacks: Seq<Seq<Str>>,
    }
    #[derive(Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read to be checked
    struct LateTicks {
        t_s: Seq<F64>,
        wchan: Seq<Option<Str>>,
        state: Seq<Option<Str>>,
        stack: Seq<Option<Check<u32>>>,
    }
    Timeline::deserialize(d).map(|t| t.probe_t_s.len)
}

/// Why a parsed record's timeline cannot be true, if it cannot: a number
/// that is not finite or is 1e12 or more (what [`check::F64`] refuses
/// from a record's text when it is read at a glance).
pub fn timeline_implausible(t: &crate::schema::measures::Timeline) -> Option<String> {
    let scalars =
        [("interval_s", t.interval_s), ("workload_start_s", t.workload_start_s), ("workload_end_s", t.workload_end_s)];
    let arrays = [
        ("t_s", &t.t_s),
        ("probe_t_s", &t.probe_t_s),
        ("probe_response_ms", &t.probe_response_ms),
        ("probe_read_ms", &t.probe_read_ms),
        ("probe_ls_ms", &t.probe_ls_ms),
        ("probe_late.t_s", &t.probe_late.t_s),
    ];
    let values =
        scalars.iter().map(|(n, v)| (*n, *v)).chain(arrays.iter().flat_map(|(n, a)| a.iter().map(|v| (*n, *v))));
    values
        .into_iter()
        .find(|(_, v)| !(v.is_finite() && v.abs() < 1e12))
        .map(|(name, v)| format!("implausible value {v:e} in timeline.{name}: a timeline's number is below 1e12"))
}

/// A number as an error shows it: 1e308, not its 309 digits.
fn shown(v: f64) -> String {
    if v.abs() >= 1e12 { format!("{v:e}") } else { format!("{v}") }
}

/// A workload's time, at most: a year.
const MAX_SECONDS: f64 = 365.0 * 86_400.0;
/// A throughput, at most: 1 TiB/s, past any device and any page cache.
const MAX_MIB_S: f64 = 1024.0 * 1024.0;

impl<'a> Glance<'a> {
    /// Why the record's figures cannot be true, naming the field: a
    /// negative time or count, a throughput from no time, a number that is
    /// not finite. None when they can.
    pub fn implausible(&self) -> Option<String> {
        let t = &self.times;
        let times = [("wall_s", Some(t.wall_s)), ("user_s", Some(t.user_s)), ("sys_s", Some(t.sys_s))];
        let optional =
            [("writes_returned_s", t.writes_returned_s), ("closed_s", t.closed_s), ("durable_s", t.durable_s)];
        for (name, value) in times.into_iter().chain(optional) {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Some(format!("times.{name} is {v}: a time cannot be negative"));
            }
            if let Some(v) = value
                && v > MAX_SECONDS
            {
                return Some(format!("times.{name} is {} s: more than a year for one workload", shown(v)));
            }
        }
        // Waits and latencies in ms: finite, not negative, under a year.
        let probe = self.responsiveness.as_ref();
        let waits = [
            ("responsiveness.p99_ms", probe.map(|p| p.p99_ms)),
            ("responsiveness.max_ms", probe.map(|p| p.max_ms)),
            ("latency.write.max_ms", Some(self.latency.write.max_ms)),
            ("latency.read.max_ms", Some(self.latency.read.max_ms)),
        ];
        for (name, value) in waits {
            if let Some(v) = value
                && !(v.is_finite() && (0.0..=MAX_SECONDS * 1e3).contains(&v))
            {
                return Some(format!("{name} is {}: not a wait of this world (0 to a year)", shown(v)));
            }
        }
        // A wall clock before 1970 or past 9999 was never set or never read.
        let started = self.started_unix_s;
        if !(started.is_finite() && (0.0..253_402_300_800.0).contains(&started)) {
            return Some(format!("started_unix_s is {started}: not a time between 1970 and 9999"));
        }
        let mib_s = self.throughput_mib_s;
        if !(mib_s.is_finite() && mib_s >= 0.0) {
            return Some(format!("throughput_mib_s is {mib_s}: not a throughput"));
        }
        if mib_s > MAX_MIB_S {
            return Some(format!("throughput_mib_s is {}: more than 1 TiB/s", shown(mib_s)));
        }
        if mib_s > 0.0 && t.wall_s == 0.0 {
            return Some(format!("throughput_mib_s is {mib_s} from a times.wall_s of 0"));
        }
        None
    }

    /// A result record's JSON, at a glance; an error says what does not fit.
    pub fn from_json(bytes: &'a [u8]) -> Result<Glance<'a>, String> {
        let mut g: Glance = serde_json::from_slice(bytes).map_err(|e| format!("not a valid {SCHEMA} record: {e}"))?;
        if g.schema != SCHEMA {
            return Err(format!("not a {SCHEMA} record (schema {})", g.schema));
        }
        g.whole = Whole::Json(bytes);
        Ok(g)
    }

    /// A parsed record, at a glance (its strings borrowed).
    pub fn of(r: &'a Record) -> Glance<'a> {
        let text = |s: &'a Option<String>| s.as_deref().map(Cow::Borrowed);
        let (host, storage) = (&r.host, &r.storage);
        Glance {
            schema: Cow::Borrowed(&r.schema),
            run_id: Cow::Borrowed(&r.run_id),
            seq: r.seq,
            repetition: Check::new(),
            status: r.status,
            error: text(&r.error),
            started_unix_s: r.started_unix_s,
            bootmark: ToolCheck::default(),
            plan: Named { name: Cow::Borrowed(&r.plan.name) },
            workload: Workload { name: Cow::Borrowed(&r.workload.name), params: r.workload.params.clone() },
            variant: r.variant.as_ref().map(|v| Variant { name: Cow::Borrowed(&v.name), ..Variant::default() }),
            kernel: Kernel {
                release: text(&r.kernel.release),
                version: text(&r.kernel.version),
                cmdline: text(&r.kernel.cmdline),
                ..Kernel::default()
            },
            host: Host {
                hostname: text(&host.hostname),
                cpu_model: text(&host.cpu_model),
                dmi_vendor: text(&host.dmi_vendor),
                dmi_product: text(&host.dmi_product),
                dmi_asset_tag: text(&host.dmi_asset_tag),
                firmware: host.firmware.as_ref().map(|f| Firmware {
                    boot_mode: text(&f.boot_mode),
                    secure_boot: f.secure_boot,
                    lockdown: text(&f.lockdown),
                }),
                ..Host::default()
            },
            storage: Storage {
                fs: text(&storage.fs),
                scheduler: text(&storage.scheduler),
                device: storage.device.as_ref().map(|d| Device {
                    name: Cow::Borrowed(&d.name),
                    disk: Cow::Borrowed(&d.disk),
                    model: text(&d.model),
                    ..Device::default()
                }),
                layers: storage.layers.clone(),
                queue: storage
                    .queue
                    .iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Cow::Borrowed(v.as_str())))
                    .collect(),
                ..Storage::default()
            },
            vm: r.vm.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), *v)).collect(),
            times: r.times.clone(),
            bytes_written: r.bytes_written,
            bytes_read: Check::new(),
            throughput_mib_s: r.throughput_mib_s,
            latency: Latency {
                write: LatencyMax { max_ms: r.latency.write.max_ms, ..LatencyMax::default() },
                read: LatencyMax { max_ms: r.latency.read.max_ms, ..LatencyMax::default() },
            },
            responsiveness: r.responsiveness.as_ref().map(|p| Probe {
                samples: p.samples,
                p99_ms: p.p99_ms,
                max_ms: p.max_ms,
                stalls_over_1s: p.stalls_over_1s,
                recovery_s: p.recovery_s,
                baseline: Max { p50_ms: p.baseline.p50_ms, max_ms: p.baseline.max_ms, ..Max::default() },
                ls: Max { p50_ms: p.ls.p50_ms, max_ms: p.ls.max_ms, ..Max::default() },
                read: Max { p50_ms: p.read.p50_ms, max_ms: p.read.max_ms, ..Max::default() },
                timer_late: Max { p50_ms: p.timer_late.p50_ms, max_ms: p.timer_late.max_ms, ..Max::default() },
                ..Probe::default()
            }),
            counters: Counters { disk_delta: r.counters.disk_delta.clone(), ..Counters::default() },
            probe_ticks: r.timeline.probe_t_s.len(),
            blocked_tasks: Seq::default(),
            kernel_events: r.kernel_events.as_ref().map(|k| KernelEvents {
                enabled: k.enabled.iter().map(|e| Cow::Borrowed(e.as_str())).collect(),
                dirty_pauses: k.dirty_pauses.clone(),
                requests: k.requests.iter().map(|(key, q)| (Cow::Borrowed(key.as_str()), q.clone())).collect(),
                ..KernelEvents::default()
            }),
            sources: Map::default(),
            details: Details::of(&r.details),
            notes: r.notes.iter().map(|n| Cow::Borrowed(n.as_str())).collect(),
            whole: Whole::Record(r),
            parsed: OnceCell::new(),
        }
    }

    /// The whole record, checked against the full schema.
    pub fn whole(&self) -> Result<&Record, String> {
        let bytes = match self.whole {
            Whole::Record(r) => return Ok(r),
            Whole::Json(bytes) => bytes,
            Whole::Unknown => return Err(format!("{}:{}: glanced at without its record", self.run_id, self.seq)),
        };
        if let Some(r) = self.parsed.get() {
            return Ok(r);
        }
        let r = serde_json::from_slice(bytes).map_err(|e| {
            format!("{}:{}: not a valid {SCHEMA} record beyond the table's figures: {e}", self.run_id, self.seq)
        })?;
        Ok(self.parsed.get_or_init(|| Box::new(r)))
    }

    /// The worst probe wait, 0 without a probe.
    pub fn max_stall_ms(&self) -> f64 {
        self.responsiveness.map_or(0.0, |p| p.max_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `details` is any JSON: only fio's jobs are kept, from a glance at
    /// the bytes as from a whole record.
    #[test]
    fn details_keep_fios_jobs_and_skip_anything_else() {
        let from_bytes = |text: &str| serde_json::from_str::<Details>(text).unwrap().fio;
        for other in ["null", "[1,{\"a\":2}]", "3", "\"x\"", "{\"files\":1000,\"instances\":[{\"index\":0}]}"] {
            assert!(from_bytes(other).is_empty(), "{other}");
        }
        let fio = json!({"exit": "exited with code 0", "fio": {"version": "fio-3.33", "jobs": [
            {"name": "reader", "error": 0, "read": {"io_bytes": 4096, "bw_bytes": 8192.0, "iops": 2.0, "clat": {"p99_ms": 77.0}}},
            {"name": "writer", "write": {"bw_bytes": 1048576.0, "iops": 64.0, "clat": {}}}]}});
        for jobs in [from_bytes(&fio.to_string()), Details::of(&fio).fio] {
            assert_eq!(jobs.len(), 2);
            assert_eq!((jobs[0].name.as_str(), jobs[0].read.as_ref().unwrap().clat.p99_ms), ("reader", Some(77.0)));
            assert!(jobs[0].write.is_none() && jobs[1].write.as_ref().unwrap().clat.p99_ms.is_none());
        }
    }

    /// Every leaf of real records, one at a time, made the wrong type: the
    /// glance refuses exactly what the whole schema refuses (so collect,
    /// report and export judge every record alike).
    #[test]
    fn the_glance_and_the_whole_schema_refuse_the_same_records() {
        fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            match v {
                Value::Object(m) => {
                    for (k, child) in m {
                        path.push(k.clone());
                        leaves(child, path, out);
                        path.pop();
                    }
                }
                Value::Array(a) => {
                    for (i, child) in a.iter().enumerate().take(2) {
                        path.push(i.to_string());
                        leaves(child, path, out);
                        path.pop();
                    }
                }
                _ => out.push(path.clone()),
            }
        }
        let (mut checked, mut refused) = (0, 0);
        for line in demo_records().iter().take(6) {
            let record: Value = serde_json::from_str(line).unwrap();
            let mut paths = Vec::new();
            leaves(&record, &mut Vec::new(), &mut paths);
            for path in paths {
                for wrong in [json!({"x": 1}), json!("x"), json!(-1)] {
                    let mut broken = record.clone();
                    let pointer = format!("/{}", path.join("/"));
                    *broken.pointer_mut(&pointer).unwrap() = wrong.clone();
                    let bytes = broken.to_string();
                    // What collect accepts: a document of the result schema that fits it.
                    let whole = crate::schema::record::Document::from_json(bytes.as_bytes())
                        .is_ok_and(|d| d.result().is_some());
                    let glance = Glance::from_json(bytes.as_bytes()).is_ok();
                    assert_eq!(glance, whole, "{pointer} = {wrong}: glance {glance}, whole {whole}");
                    checked += 1;
                    refused += usize::from(!whole);
                }
            }
        }
        assert!(checked > 1000 && refused > checked / 2, "{checked} mutations, {refused} refused");
    }

    fn demo_records() -> Vec<String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report/mixed-records.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let records: Vec<String> = text.lines().filter(|l| l.contains(SCHEMA)).map(str::to_string).collect();
        assert!(records.len() >= 6);
        records
    }

    #[test]
    fn a_glance_reads_what_the_parsed_record_holds() {
        for line in demo_records() {
            let record: Record = serde_json::from_str(&line).unwrap();
            let from_json = Glance::from_json(line.as_bytes()).unwrap();
            let from_record = Glance::of(&record);
            // Debug shows every field but `whole`, which differs by design.
            let shown = |g: &Glance| format!("{g:?}").split(", whole:").next().unwrap().to_string();
            assert!(shown(&from_json).contains("probe_ticks"), "whole and parsed come last");
            assert_eq!(shown(&from_json), shown(&from_record));
            assert_eq!(from_json.whole().unwrap(), &record);
        }
    }

    #[test]
    fn a_record_wrong_anywhere_is_refused_at_a_glance() {
        let line = demo_records().remove(0);
        let bad_figure = line.replacen("\"throughput_mib_s\":", "\"throughput_mib_s\":\"fast\",\"was\":", 1);
        let e = Glance::from_json(bad_figure.as_bytes()).unwrap_err();
        assert!(e.contains("not a valid bootmark.result/1 record"), "{e}");
        let bad_elsewhere = line.replacen("\"voluntary_switches\":", "\"voluntary_switches\":\"many\",\"was\":", 1);
        assert_ne!(bad_elsewhere, line);
        let e = Glance::from_json(bad_elsewhere.as_bytes()).unwrap_err();
        assert!(e.contains("expected u64"), "{e}");
        let run = line.replacen("bootmark.result/1", "bootmark.run/1", 1);
        assert!(Glance::from_json(run.as_bytes()).unwrap_err().contains("schema bootmark.run/1"));
    }
}
