//! Workloads: what a plan asks the machine to do, one module each.
//!
//! Every workload runs inside a worker process (see `run::watch`), writes only
//! below the directory it is given, and returns an [`Outcome`]: the bytes it
//! moved, its phase times and the latency of every read()/write() it made.
//! Resource usage (user/sys, faults, switches) is measured by `run::watch`
//! from outside, with wait4, so workloads do not measure themselves.

pub mod cache;
pub mod command;
pub mod fio;
// The image builder's check of a fio job; /init's binary goes without it
// (the common initramfs's 1 MiB budget) and relies on the build's check and
// on the confinement of the program (confine.rs).
#[cfg(feature = "workstation")]
pub mod fio_job;
pub mod fio_log;
pub mod idle;
pub mod instances;
pub mod io;
pub mod manyfiles;
pub mod seqread;
pub mod seqwrite;
pub mod sort;

use crate::image_side::measure::histogram::{Histogram, SparseHistogram};
use crate::image_side::measure::progress::Progress;
use crate::size::Bytes;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One workload with its parameters, as written in a plan:
/// `{"name": "seqwrite", "params": {"size": "1GiB"}}`.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSpec {
    Manyfiles(manyfiles::Params),
    Seqwrite(seqwrite::Params),
    Seqread(seqread::Params),
    Sort(sort::Params),
    Instances(instances::Params),
    Idle(idle::Params),
    Command(command::Params),
    Fio(fio::Params),
}

pub const NAMES: [&str; 8] = ["manyfiles", "seqwrite", "seqread", "sort", "instances", "idle", "command", "fio"];

/// Where a workload may write and how it reports progress.
pub struct Context<'a> {
    /// The workload's own directory (created by the caller, removed after).
    pub dir: PathBuf,
    /// Files kept between workloads of one run (seqwrite's output for seqread).
    pub shared_dir: PathBuf,
    pub progress: &'a Progress,
    /// Total RAM in bytes, for workloads sized as a fraction of it.
    pub mem_total: u64,
    /// Leave the files in place after the run (`--keep`), for inspection.
    pub keep: bool,
    /// CLOCK_MONOTONIC ns when the run's watchdog kills the worker, if it
    /// will: a workload that can stop early (`command`) stops before it.
    pub deadline_ns: Option<u64>,
    /// Run the user's programs confined (confine.rs): in a boot, where
    /// bootmark owns the machine and its disks are not the user's to name.
    pub confine_programs: bool,
}

/// What a workload reports about itself.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Outcome {
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub times: PhaseTimes,
    pub write_latency: SparseHistogram,
    pub read_latency: SparseHistogram,
    /// CLOCK_MONOTONIC when the timed part started and ended.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Workload-specific facts (cache state, sort check, per-instance figures).
    pub details: serde_json::Value,
    pub notes: Vec<String>,
    /// The workload ran and failed (a program's non-zero exit, its time
    /// limit): the record is not ok, and keeps these figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<Failed>,
}

/// Why a workload that ran to an end failed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Failed {
    pub message: String,
    /// Stopped at a time limit (status "timeout"), not failed by itself ("error").
    pub timed_out: bool,
}

/// Seconds from the start of the timed part to each milestone.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseTimes {
    /// The workload's own end, as its sync mode defines it (what `time` would show).
    pub wall_s: f64,
    /// The last write() returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_returned_s: Option<f64>,
    /// Every file was closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_s: Option<f64>,
    /// The data was on stable storage (fsync/fdatasync/sync returned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durable_s: Option<f64>,
}

/// Disk space a workload needs: `transient` while it runs, `kept` until the
/// run ends (named, so a later workload reusing the file does not count twice).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Footprint {
    pub transient: u64,
    pub kept: Vec<(String, u64)>,
}

/// Latency recorders a workload fills while it runs.
#[derive(Default)]
pub struct Latencies {
    pub write: Histogram,
    pub read: Histogram,
}

impl WorkloadSpec {
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadSpec::Manyfiles(_) => "manyfiles",
            WorkloadSpec::Seqwrite(_) => "seqwrite",
            WorkloadSpec::Seqread(_) => "seqread",
            WorkloadSpec::Sort(_) => "sort",
            WorkloadSpec::Instances(_) => "instances",
            WorkloadSpec::Idle(_) => "idle",
            WorkloadSpec::Command(_) => "command",
            WorkloadSpec::Fio(_) => "fio",
        }
    }

    pub fn params_json(&self) -> serde_json::Value {
        let v = match self {
            WorkloadSpec::Manyfiles(p) => serde_json::to_value(p),
            WorkloadSpec::Seqwrite(p) => serde_json::to_value(p),
            WorkloadSpec::Seqread(p) => serde_json::to_value(p),
            WorkloadSpec::Sort(p) => serde_json::to_value(p),
            WorkloadSpec::Instances(p) => serde_json::to_value(p),
            WorkloadSpec::Idle(p) => serde_json::to_value(p),
            WorkloadSpec::Command(p) => serde_json::to_value(p),
            WorkloadSpec::Fio(p) => serde_json::to_value(p),
        };
        v.expect("params always serialize")
    }

    /// Build from a workload name and its params object (absent = defaults).
    pub fn from_parts(name: &str, params: serde_json::Value) -> Result<Self, String> {
        fn parse<T: serde::de::DeserializeOwned>(name: &str, v: serde_json::Value) -> Result<T, String> {
            serde_json::from_value(v).map_err(|e| format!("workload '{name}': {e}"))
        }
        let params = if params.is_null() { serde_json::json!({}) } else { params };
        Ok(match name {
            "manyfiles" => WorkloadSpec::Manyfiles(parse(name, params)?),
            "seqwrite" => WorkloadSpec::Seqwrite(parse(name, params)?),
            "seqread" => WorkloadSpec::Seqread(parse(name, params)?),
            "sort" => WorkloadSpec::Sort(parse(name, params)?),
            "instances" => WorkloadSpec::Instances(parse(name, params)?),
            "idle" => WorkloadSpec::Idle(parse(name, params)?),
            "command" => WorkloadSpec::Command(parse(name, params)?),
            "fio" => WorkloadSpec::Fio(parse(name, params)?),
            other => {
                return Err(format!("unknown workload '{other}': known workloads are {}", NAMES.join(", ")));
            }
        })
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            WorkloadSpec::Manyfiles(p) => p.validate(),
            WorkloadSpec::Seqwrite(p) => p.validate(),
            WorkloadSpec::Seqread(p) => p.validate(),
            WorkloadSpec::Sort(p) => p.validate(),
            WorkloadSpec::Instances(p) => p.validate(),
            WorkloadSpec::Idle(p) => p.validate(),
            WorkloadSpec::Command(p) => p.validate(),
            WorkloadSpec::Fio(p) => p.validate(),
        }
        .map_err(|e| format!("workload '{}': {e}", self.name()))
    }

    pub fn footprint(&self, mem_total: u64) -> Footprint {
        match self {
            WorkloadSpec::Manyfiles(p) => p.footprint(),
            WorkloadSpec::Seqwrite(p) => p.footprint(),
            WorkloadSpec::Seqread(p) => p.footprint(),
            WorkloadSpec::Sort(p) => p.footprint(mem_total),
            WorkloadSpec::Instances(p) => p.footprint(mem_total),
            WorkloadSpec::Idle(_) | WorkloadSpec::Command(_) | WorkloadSpec::Fio(_) => Footprint::default(),
        }
    }

    /// Bytes the workload will move, for progress and ETA.
    pub fn expected_bytes(&self, mem_total: u64) -> u64 {
        match self {
            WorkloadSpec::Manyfiles(p) => (p.files as u64).saturating_mul(p.file_size.0),
            WorkloadSpec::Seqwrite(p) => p.size.0,
            WorkloadSpec::Seqread(p) => p.size.0,
            WorkloadSpec::Sort(p) => p.input_size(mem_total).saturating_mul(4),
            WorkloadSpec::Instances(p) => (p.count as u64).saturating_mul(p.workload.expected_bytes(mem_total)),
            WorkloadSpec::Idle(_) | WorkloadSpec::Command(_) | WorkloadSpec::Fio(_) => 0,
        }
    }

    /// Run the workload in this process. Called inside a worker.
    pub fn run(&self, ctx: &Context) -> std::io::Result<Outcome> {
        match self {
            WorkloadSpec::Manyfiles(p) => manyfiles::run(p, ctx),
            WorkloadSpec::Seqwrite(p) => seqwrite::run(p, ctx),
            WorkloadSpec::Seqread(p) => seqread::run(p, ctx),
            WorkloadSpec::Sort(p) => sort::run(p, ctx),
            WorkloadSpec::Instances(p) => instances::run(p, ctx),
            WorkloadSpec::Idle(p) => idle::run(p, ctx),
            WorkloadSpec::Command(p) => command::run(p, ctx),
            WorkloadSpec::Fio(p) => fio::run(p, ctx),
        }
    }
}

impl Serialize for WorkloadSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("name", self.name())?;
        m.serialize_entry("params", &self.params_json())?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for WorkloadSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            name: String,
            #[serde(default)]
            params: serde_json::Value,
        }
        let raw = Raw::deserialize(d)?;
        WorkloadSpec::from_parts(&raw.name, raw.params).map_err(serde::de::Error::custom)
    }
}

/// Check a block size: non-zero and small enough to allocate.
pub fn check_block(block: Bytes) -> Result<(), String> {
    if block.0 == 0 || block.0 > 64 << 20 {
        return Err(format!("block must be between 1 byte and 64 MiB, not {}", block.0));
    }
    Ok(())
}

/// Seconds since `start_ns` on the monotonic clock.
pub fn since(start_ns: u64) -> f64 {
    crate::image_side::measure::clock::secs(crate::image_side::measure::clock::mono_ns().saturating_sub(start_ns))
}

/// Remove a file, ignoring "already gone".
pub fn remove_quietly(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Send a worker's result (or its error text) on its pipe; returns the exit code.
pub fn send_outcome(out: &mut std::fs::File, result: std::io::Result<Outcome>) -> i32 {
    use std::io::Write;
    let code = if result.is_ok() { 0 } else { 1 };
    let msg: Result<Outcome, String> = result.map_err(|e| e.to_string());
    let _ = out.write_all(&serde_json::to_vec(&msg).unwrap_or_default());
    code
}

/// Read what [`send_outcome`] sent; a missing or garbled report becomes an error.
pub fn receive_outcome(bytes: &[u8], how_it_ended: &str) -> Result<Outcome, String> {
    serde_json::from_slice::<Result<Outcome, String>>(bytes)
        .unwrap_or_else(|_| Err(format!("the worker {how_it_ended} without a report")))
}
