//! `instances`: run one workload as K concurrent processes (the seed's "run 5
//! instances"). Each instance gets its own directory and starts at the same
//! moment (they all wait on one pipe that the parent closes). Reports each
//! instance's figures and the aggregate: bytes summed, wall time from the
//! common start to the last instance's end, latencies merged.

use super::{Context, Footprint, Outcome, PhaseTimes, WorkloadSpec};
use crate::image_side::measure::clock::{mono_ns, secs};
use crate::image_side::measure::histogram::Histogram;
use crate::image_side::process;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::fd::AsRawFd;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_count")]
    pub count: u32,
    pub workload: Box<WorkloadSpec>,
}

fn default_count() -> u32 {
    5
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        if self.count == 0 || self.count > 256 {
            return Err(format!("count must be between 1 and 256, not {}", self.count));
        }
        if matches!(*self.workload, WorkloadSpec::Instances(_)) {
            return Err("instances cannot contain instances".into());
        }
        self.workload.validate()
    }

    pub fn footprint(&self, mem_total: u64) -> Footprint {
        let inner = self.workload.footprint(mem_total);
        let per_instance = inner.kept.iter().fold(inner.transient, |a, (_, n)| a.saturating_add(*n));
        Footprint { transient: (self.count as u64).saturating_mul(per_instance), kept: vec![] }
    }
}

/// One instance's figures, as they appear in `details.instances`.
#[derive(Serialize)]
struct InstanceFigures {
    index: u32,
    status: String,
    wall_s: f64,
    bytes_written: u64,
    bytes_read: u64,
    throughput_mib_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    durable_s: Option<f64>,
}

pub fn run(p: &Params, ctx: &Context) -> std::io::Result<Outcome> {
    let (start_rx, start_tx) = process::pipe()?;
    let start_tx_fd = start_tx.as_raw_fd();
    let mut children = Vec::new();
    for i in 0..p.count {
        let dir = ctx.dir.join(format!("instance{i:03}"));
        std::fs::create_dir(&dir)?;
        let shared = dir.clone();
        let mut start_rx = start_rx.try_clone()?;
        let spec = (*p.workload).clone();
        let child_ctx = Context {
            dir,
            shared_dir: shared,
            progress: ctx.progress,
            mem_total: ctx.mem_total,
            keep: ctx.keep,
            deadline_ns: ctx.deadline_ns,
            confine_programs: ctx.confine_programs,
        };
        children.push(process::spawn(&format!("bootmark-i{i}"), move |out| {
            // Close our copy of the write end, or the pipe never reaches EOF.
            // SAFETY: the fd is this process's inherited copy, used nowhere else here.
            unsafe { libc::close(start_tx_fd) };
            let mut byte = [0u8; 1];
            let _ = start_rx.read(&mut byte); // returns when the parent closes the pipe
            super::send_outcome(out, spec.run(&child_ctx))
        })?);
    }
    drop(start_rx);
    let start = mono_ns();
    drop(start_tx); // go

    let mut write = Histogram::new();
    let mut read = Histogram::new();
    let mut figures = Vec::new();
    let mut total = Outcome { start_ns: start, ..Outcome::default() };
    let mut failures = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let (bytes, exit) = process::collect_report(child)?;
        // An instance that ran and failed (a program's exit status) fails the whole.
        let outcome = super::receive_outcome(&bytes, &exit.describe())
            .and_then(|o| o.failed.as_ref().map_or(Ok(()), |f| Err(f.message.clone())).map(|()| o));
        match outcome {
            Ok(o) => {
                write.merge(&Histogram::from_sparse(&o.write_latency));
                read.merge(&Histogram::from_sparse(&o.read_latency));
                total.bytes_written += o.bytes_written;
                total.bytes_read += o.bytes_read;
                total.end_ns = total.end_ns.max(o.end_ns);
                let moved = (o.bytes_written + o.bytes_read) as f64 / (1 << 20) as f64;
                figures.push(InstanceFigures {
                    index: i as u32,
                    status: "ok".into(),
                    wall_s: o.times.wall_s,
                    bytes_written: o.bytes_written,
                    bytes_read: o.bytes_read,
                    throughput_mib_s: if o.times.wall_s > 0.0 { moved / o.times.wall_s } else { 0.0 },
                    durable_s: o.times.durable_s,
                });
            }
            Err(e) => {
                failures.push(format!("instance {i}: {e}"));
                figures.push(InstanceFigures {
                    index: i as u32,
                    status: "error".into(),
                    wall_s: 0.0,
                    bytes_written: 0,
                    bytes_read: 0,
                    throughput_mib_s: 0.0,
                    durable_s: None,
                });
            }
        }
        if !ctx.keep {
            let _ = crate::fsutil::remove_tree(&ctx.dir.join(format!("instance{i:03}")));
        }
    }
    if !failures.is_empty() {
        return Err(std::io::Error::other(failures.join("; ")));
    }
    // Wall time: common start to the end of the slowest instance.
    total.times = PhaseTimes { wall_s: secs(total.end_ns.saturating_sub(start)), ..PhaseTimes::default() };
    total.write_latency = write.to_sparse();
    total.read_latency = read.to_sparse();
    total.details = serde_json::json!({ "count": p.count, "instances": figures });
    Ok(total)
}
