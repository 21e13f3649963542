//! `fio`: a fio job file — a storage engineer's own, or the seed's question
//! as fio asks it (a big buffered writer while a small reader's latency is
//! measured) — run from a clean boot under bootmark's probe, sampler and
//! watchdog, with fio's figures in the record beside bootmark's evidence.
//!
//! fio runs as a `command` (same timing, limits and error records) with
//! `--output-format=json+ --status-interval=1`: its output file holds one
//! JSON document a second and the final one, so a run stopped at its limit
//! still has fio's figures up to its last second. From the last complete
//! document the record gets, per job and direction, bytes, bandwidth, IOPS
//! and completion-latency percentiles (`details.fio`), and in `latency.read`
//! and `latency.write` the completion latencies of all jobs merged from
//! fio's json+ bins (fio's buckets are ≤ 0.78 % wide, ours ≤ 0.4 %; fio
//! puts everything above 2^34 ns ≈ 17 s into its last bucket).

use super::{Context, Outcome, command, fio_log};
use crate::image_side::measure::histogram::Histogram;
use crate::size::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::io;
use std::path::{Path, PathBuf};

/// fio's output file, in the workload's directory.
const OUTPUT: &str = "fio-output.json";
/// Where an inline job is written, in the workload's directory.
const INLINE_JOB: &str = "job.fio";
/// The percentiles kept per job and direction (fio's own keys).
const PERCENTILES: [(&str, &str); 5] =
    [("p50", "50.000000"), ("p90", "90.000000"), ("p99", "99.000000"), ("p99_9", "99.900000"), ("p99_99", "99.990000")];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// The job file's text, inline in the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Or a job file's path (in an image, one `--include` put there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_file: Option<String>,
    /// The fio program: a name in PATH (`cargo xtask image --fio` puts a
    /// static fio in /usr/local/bin) or an absolute path.
    pub program: String,
    /// Stop fio after this many seconds: a timeout record with its figures so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit_s: Option<f64>,
    /// Bytes of fio's stdout and stderr kept in the record (its messages).
    pub output_limit: Bytes,
}

impl Default for Params {
    fn default() -> Self {
        Params { job: None, job_file: None, program: "fio".into(), time_limit_s: None, output_limit: Bytes(4 << 10) }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        match (&self.job, &self.job_file) {
            (Some(_), Some(_)) => return Err("give the job inline (job) or as a file (job_file), not both".into()),
            (None, None) => return Err("a job is required: job (the job file's text) or job_file (its path)".into()),
            (None, Some(f)) if !f.starts_with('/') => {
                return Err(format!("job_file '{f}' must be an absolute path"));
            }
            _ => {}
        }
        #[cfg(feature = "workstation")]
        if let Some(text) = &self.job {
            super::fio_job::allowed(text, "the inline fio job")?;
        }
        self.as_command(Path::new("/")).validate()
    }

    /// The `command` that runs fio on `job`.
    fn as_command(&self, job: &Path) -> command::Params {
        command::Params {
            program: self.program.clone(),
            args: vec![
                "--output-format=json+".into(),
                format!("--output={OUTPUT}"),
                "--status-interval=1".into(),
                job.display().to_string(),
            ],
            cwd: None,
            time_limit_s: self.time_limit_s,
            final_sync: false,
            output_limit: self.output_limit,
        }
    }
}

pub fn run(p: &Params, ctx: &Context) -> io::Result<Outcome> {
    let job = match (&p.job, &p.job_file) {
        (Some(text), _) => {
            let path = ctx.dir.join(INLINE_JOB);
            std::fs::write(&path, text)
                .map_err(|e| io::Error::other(format!("cannot write {}: {e}", path.display())))?;
            // fio runs in the workload's directory.
            INLINE_JOB.into()
        }
        (None, Some(file)) => {
            // The image builder checked the file it included; `bootmark run` checks the one that is here.
            #[cfg(feature = "workstation")]
            {
                let text =
                    std::fs::read_to_string(file).map_err(|e| io::Error::other(format!("job_file {file}: {e}")))?;
                super::fio_job::allowed(&text, &format!("job_file {file}")).map_err(io::Error::other)?;
            }
            PathBuf::from(file)
        }
        (None, None) => return Err(io::Error::other("no job")),
    };
    let mut outcome = command::run(&p.as_command(&job), ctx)?;
    let text = std::fs::read(ctx.dir.join(OUTPUT)).unwrap_or_default();
    match last_document(&text) {
        Some(doc) => take_figures(&doc, &mut outcome),
        None if outcome.failed.is_none() => {
            outcome.failed = Some(super::Failed {
                message: format!("fio exited 0 but left no JSON in {OUTPUT}: its figures are missing"),
                timed_out: false,
            });
        }
        None => {}
    }
    take_logs(&ctx.dir, &mut outcome);
    Ok(outcome)
}

/// The logs over time the job asked fio for, as `details.fio.logs` (fio
/// writes them when a job ends: a job stopped at its limit leaves none).
fn take_logs(dir: &Path, outcome: &mut Outcome) {
    let (logs, notes) = fio_log::read_dir(dir);
    outcome.notes.extend(notes);
    if logs.is_empty() {
        return;
    }
    let logs = serde_json::to_value(logs).unwrap_or_default();
    let Some(details) = outcome.details.as_object_mut() else { return };
    match details.get_mut("fio").and_then(Value::as_object_mut) {
        Some(fio) => drop(fio.insert("logs".into(), logs)),
        None => drop(details.insert("fio".into(), json!({ "logs": logs }))),
    }
}

/// The last complete JSON document of fio's output: one a second with
/// --status-interval, the final one last; a cut one at the end is skipped.
fn last_document(text: &[u8]) -> Option<Value> {
    let start = text.iter().position(|&b| b == b'{')?;
    let mut last = None;
    for doc in serde_json::Deserializer::from_slice(&text[start..]).into_iter::<Value>() {
        match doc {
            Ok(v) if v.get("jobs").is_some() => last = Some(v),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    last
}

/// fio's figures into the outcome: bytes moved, the merged latencies, and
/// per job and direction the summary `details.fio` carries.
fn take_figures(doc: &Value, outcome: &mut Outcome) {
    let mut latency = [Histogram::new(), Histogram::new()];
    let (mut read, mut written) = (0u64, 0u64);
    let mut jobs = Vec::new();
    for job in doc["jobs"].as_array().into_iter().flatten() {
        let mut summary = Map::new();
        summary.insert("name".into(), job["jobname"].clone());
        summary.insert("error".into(), job["error"].clone());
        for (i, dir) in ["read", "write"].into_iter().enumerate() {
            let d = &job[dir];
            let bytes = d["io_bytes"].as_u64().unwrap_or(0);
            if bytes == 0 {
                continue;
            }
            if dir == "read" {
                read += bytes
            } else {
                written += bytes
            }
            for (value, count) in d["clat_ns"]["bins"].as_object().into_iter().flatten() {
                if let (Ok(ns), Some(n)) = (value.parse::<u64>(), count.as_u64()) {
                    latency[i].record_n(ns, n);
                }
            }
            summary.insert(dir.into(), direction(d));
        }
        jobs.push(Value::Object(summary));
    }
    outcome.bytes_read = read;
    outcome.bytes_written = written;
    outcome.read_latency = latency[0].to_sparse();
    outcome.write_latency = latency[1].to_sparse();
    let fio = json!({
        "version": doc["fio version"],
        "jobs": jobs,
        "disk_util": doc["disk_util"],
    });
    if let Some(details) = outcome.details.as_object_mut() {
        details.insert("fio".into(), fio);
    }
}

/// One direction of one job: what fio measured, latencies in ms.
fn direction(d: &Value) -> Value {
    let ms = |v: &Value| v.as_f64().map(|ns| ns / 1e6);
    let clat = &d["clat_ns"];
    let mut c = Map::new();
    c.insert("count".into(), clat["N"].clone());
    c.insert("mean_ms".into(), json!(ms(&clat["mean"])));
    c.insert("max_ms".into(), json!(ms(&clat["max"])));
    for (name, key) in PERCENTILES {
        c.insert(format!("{name}_ms"), json!(ms(&clat["percentile"][key])));
    }
    json!({
        "io_bytes": d["io_bytes"],
        "bw_bytes": d["bw_bytes"],
        "iops": d["iops"],
        "runtime_ms": d["runtime"],
        "clat": c,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_complete_document_is_taken_and_a_cut_one_skipped() {
        let text = br#"fio: a warning
{"jobs":[{"jobname":"a"}],"n":1}
{"jobs":[{"jobname":"a"}],"n":2}
{"jobs":[{"jobname":"#;
        assert_eq!(last_document(text).unwrap()["n"], 2);
        assert!(last_document(b"").is_none() && last_document(b"{\"jobs\":").is_none());
    }

    #[test]
    fn params_need_one_job() {
        let p = |json: &str| serde_json::from_str::<Params>(json).unwrap().validate();
        assert!(p(r#"{}"#).unwrap_err().contains("a job is required"));
        assert!(p(r#"{"job":"[x]","job_file":"/j.fio"}"#).unwrap_err().contains("not both"));
        assert!(p(r#"{"job_file":"j.fio"}"#).unwrap_err().contains("absolute"));
        assert!(p(r#"{"job":"[x]\nrw=read","time_limit_s":0}"#).unwrap_err().contains("time_limit_s"));
        assert!(p(r#"{"job":"[x]\nrw=read"}"#).is_ok() && p(r#"{"job_file":"/etc/j.fio"}"#).is_ok());
    }

    /// A job's json+ document as fio 3.33 writes it, cut to what is read.
    #[test]
    fn figures_come_from_the_jobs_and_latencies_from_their_bins() {
        let doc = json!({"fio version": "fio-3.33", "disk_util": [], "jobs": [
            {"jobname": "writer", "error": 0,
             "read": {"io_bytes": 0},
             "write": {"io_bytes": 1048576, "bw_bytes": 2097152, "iops": 128.0, "runtime": 500,
                       "clat_ns": {"N": 64, "mean": 2.0e6, "max": 9.0e6,
                                   "percentile": {"50.000000": 1990656, "99.000000": 8978432},
                                   "bins": {"1990656": 60, "8978432": 4}}}},
            {"jobname": "reader", "error": 0,
             "read": {"io_bytes": 4096, "bw_bytes": 8192, "iops": 2.0, "runtime": 500,
                      "clat_ns": {"N": 1, "mean": 7.7e7, "max": 7.7e7, "percentile": {"99.000000": 77070336},
                                  "bins": {"77070336": 1}}},
             "write": {"io_bytes": 0}}]});
        let mut o = Outcome { details: json!({"exit": "exited with code 0"}), ..Outcome::default() };
        take_figures(&doc, &mut o);
        assert_eq!((o.bytes_written, o.bytes_read), (1048576, 4096));
        let w = Histogram::from_sparse(&o.write_latency).summary();
        assert_eq!(w.count, 64);
        assert!((w.p50_ms - 1.99).abs() < 0.01 && (w.p99_ms - 8.98).abs() < 0.04, "{w:?}");
        assert!((Histogram::from_sparse(&o.read_latency).summary().max_ms - 77.07).abs() < 0.01);
        let jobs = &o.details["fio"]["jobs"];
        assert_eq!(jobs[0]["write"]["clat"]["p99_ms"], 8.978432);
        assert!(jobs[0].get("read").is_none(), "a direction without I/O is left out");
        assert_eq!(jobs[1]["read"]["iops"], 2.0);
        assert_eq!(o.details["exit"], "exited with code 0", "the command's details are kept");
    }
}
