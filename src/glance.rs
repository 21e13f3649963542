//! A result record at a glance: the fields the report groups and sums,
//! read from the record's JSON with its strings borrowed, while the rest
//! (timeline samples, latency, counters, details…) is only checked to be
//! JSON, not built. That is 2.4× faster than building the whole `Record`
//! (0.78 s against 1.85 s per 100,000 records, less than twice what
//! serde_json needs merely to tokenize them), and it is what lets `report`
//! read a fleet's million records in seconds.
//!
//! The whole record is still one call away (`Glance::whole`): from the same
//! bytes, parsed against the full schema, for the few records a finding or
//! the HTML timeline keeps. A record whose glanced fields are wrong is
//! refused like a record that does not fit the schema; one whose other
//! fields are wrong is caught when it is parsed whole (`report` says so).

use crate::record::{Record, SCHEMA, Status, Times};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::borrow::Cow;
use std::cell::OnceCell;

type Text<'a> = Cow<'a, str>;

#[derive(Debug, Deserialize)]
pub struct Glance<'a> {
    #[serde(borrow)]
    pub schema: Text<'a>,
    #[serde(borrow)]
    pub run_id: Text<'a>,
    pub seq: u32,
    pub status: Status,
    #[serde(borrow, default)]
    pub error: Option<Text<'a>>,
    pub started_unix_s: f64,
    #[serde(borrow)]
    pub plan: Named<'a>,
    #[serde(borrow)]
    pub workload: Workload<'a>,
    #[serde(borrow, default)]
    pub variant: Option<Named<'a>>,
    #[serde(borrow)]
    pub kernel: Kernel<'a>,
    #[serde(borrow)]
    pub host: Host<'a>,
    #[serde(borrow)]
    pub storage: Storage<'a>,
    pub times: Times,
    pub throughput_mib_s: f64,
    pub bytes_written: u64,
    pub latency: Latency,
    pub responsiveness: Option<Probe>,
    /// How many probe ticks the timeline holds (the HTML page draws only a record with some).
    #[serde(rename = "timeline", deserialize_with = "probe_ticks")]
    pub probe_ticks: usize,
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

#[derive(Debug, Deserialize)]
pub struct Named<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
}

#[derive(Debug, Deserialize)]
pub struct Workload<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    pub params: Value,
}

#[derive(Debug, Deserialize)]
pub struct Kernel<'a> {
    #[serde(borrow, default)]
    pub release: Option<Text<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct Host<'a> {
    #[serde(borrow, default)]
    pub hostname: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub cpu_model: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub dmi_product: Option<Text<'a>>,
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

#[derive(Debug, Deserialize)]
pub struct Storage<'a> {
    #[serde(borrow, default)]
    pub fs: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub scheduler: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub device: Option<Device<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct Device<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    #[serde(borrow, default)]
    pub model: Option<Text<'a>>,
}

/// The probe's summary figures (`measure::probe::Responsiveness`).
#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Probe {
    pub p99_ms: f64,
    pub max_ms: f64,
    pub stalls_over_1s: u64,
    pub recovery_s: Option<f64>,
    pub read: Max,
    pub timer_late: Max,
}

/// The slowest write() (`record::Latency`).
#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Latency {
    pub write: Max,
}

/// The worst of a spread of times.
#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Max {
    pub max_ms: f64,
}

#[derive(Debug, Default)]
enum Whole<'a> {
    #[default]
    Unknown,
    Json(&'a [u8]),
    Record(&'a Record),
}

/// `timeline.probe_t_s`'s length, its samples skipped (a Vec of a
/// zero-sized type holds no memory).
fn probe_ticks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    #[derive(Deserialize)]
    struct Ticks {
        #[serde(default)]
        probe_t_s: Vec<IgnoredAny>,
    }
    Ticks::deserialize(d).map(|t| t.probe_t_s.len())
}

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
            status: r.status,
            error: text(&r.error),
            started_unix_s: r.started_unix_s,
            plan: Named { name: Cow::Borrowed(&r.plan.name) },
            workload: Workload { name: Cow::Borrowed(&r.workload.name), params: r.workload.params.clone() },
            variant: r.variant.as_ref().map(|v| Named { name: Cow::Borrowed(&v.name) }),
            kernel: Kernel { release: text(&r.kernel.release) },
            host: Host {
                hostname: text(&host.hostname),
                cpu_model: text(&host.cpu_model),
                dmi_product: text(&host.dmi_product),
                firmware: host.firmware.as_ref().map(|f| Firmware {
                    boot_mode: text(&f.boot_mode),
                    secure_boot: f.secure_boot,
                    lockdown: text(&f.lockdown),
                }),
            },
            storage: Storage {
                fs: text(&storage.fs),
                scheduler: text(&storage.scheduler),
                device: storage.device.as_ref().map(|d| Device { name: Cow::Borrowed(&d.name), model: text(&d.model) }),
            },
            times: r.times.clone(),
            throughput_mib_s: r.throughput_mib_s,
            bytes_written: r.bytes_written,
            latency: Latency { write: Max { max_ms: r.latency.write.max_ms } },
            responsiveness: r.responsiveness.as_ref().map(|p| Probe {
                p99_ms: p.p99_ms,
                max_ms: p.max_ms,
                stalls_over_1s: p.stalls_over_1s,
                recovery_s: p.recovery_s,
                read: Max { max_ms: p.read.max_ms },
                timer_late: Max { max_ms: p.timer_late.max_ms },
            }),
            probe_ticks: r.timeline.probe_t_s.len(),
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
    fn a_record_wrong_where_the_report_reads_is_refused_and_elsewhere_caught_whole() {
        let line = demo_records().remove(0);
        let bad_figure = line.replacen("\"throughput_mib_s\":", "\"throughput_mib_s\":\"fast\",\"was\":", 1);
        let e = Glance::from_json(bad_figure.as_bytes()).unwrap_err();
        assert!(e.contains("not a valid bootmark.result/1 record"), "{e}");
        let bad_elsewhere = line.replacen("\"voluntary_switches\":", "\"voluntary_switches\":\"many\",\"was\":", 1);
        assert_ne!(bad_elsewhere, line);
        let g = Glance::from_json(bad_elsewhere.as_bytes()).unwrap();
        let e = g.whole().unwrap_err();
        assert!(e.contains("beyond the table's figures"), "{e}");
        let run = line.replacen("bootmark.result/1", "bootmark.run/1", 1);
        assert!(Glance::from_json(run.as_bytes()).unwrap_err().contains("schema bootmark.run/1"));
    }
}
