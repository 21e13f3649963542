//! The `fio` workload through `bootmark run`, with Debian's fio (a test
//! tool `cargo xtask test` installs): the seed's question as fio asks it —
//! a big buffered writer while a small reader's latency is measured — fio's
//! figures in the record, a job fio rejects, a run stopped at its limit.
//! The image's static fio runs the same workload in `cargo xtask check command`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fio-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run one fio workload with these params; its record.
fn run(name: &str, params: Value) -> Value {
    let found = Command::new("fio").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "fio is not installed: apt-get install fio (cargo xtask test does)"
    );
    let dir = scratch(name);
    let plan = dir.with_extension("plan.json");
    let json = serde_json::json!({"name": name, "probe": {"interval_ms": 50, "baseline_s": 0.2, "recovery_deadline_s": 5},
        "sample_interval_ms": 100, "workloads": [{"name": "fio", "params": params}]});
    std::fs::write(&plan, json.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().next().unwrap_or_else(|| panic!("no record: {}", String::from_utf8_lossy(&out.stderr)));
    serde_json::from_str(line).unwrap()
}

const WRITER_AND_READER: &str = "[global]
ioengine=psync

[writer]
rw=write
bs=16k
size=64m
end_fsync=1

[reader]
rw=randread
bs=4k
size=4m
runtime=2
time_based=1
rate_iops=50
";

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_writer_and_a_reader_give_fios_figures_beside_the_probes() {
    let r = run("seed", serde_json::json!({"job": WRITER_AND_READER}));
    assert_eq!(r["status"], "ok", "{}", r["error"]);
    let jobs = r["details"]["fio"]["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["writer", "reader"]);
    assert_eq!(jobs[0]["write"]["io_bytes"], 64 << 20);
    let reader = &jobs[1]["read"];
    assert!(f(&reader["iops"]) > 20.0 && f(&reader["iops"]) < 60.0, "rate_iops=50: {reader}");
    // The record's totals and merged latencies are fio's.
    let read_bytes = reader["io_bytes"].as_u64().unwrap();
    assert_eq!(r["bytes_written"], 64 << 20);
    assert_eq!(r["bytes_read"], read_bytes);
    assert_eq!(r["latency"]["read"]["count"], reader["clat"]["count"]);
    let (ours, fios) = (f(&r["latency"]["read"]["p99_ms"]), f(&reader["clat"]["p99_ms"]));
    assert!((ours - fios).abs() <= fios * 0.01 + 0.001, "p99 from the bins {ours} against fio's {fios}");
    assert!(r["responsiveness"]["samples"].as_u64().unwrap() > 0, "the probe watched it");
    assert!(r["details"]["program_sha256"].as_str().is_some_and(|s| s.len() == 64));

    // The report carries fio's figures per job and direction beside its own.
    let records = scratch("seed-report").join("records.jsonl");
    std::fs::write(&records, format!("{r}\n")).unwrap();
    let report = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
            .args(["report", "--format", format])
            .arg(&records)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = report("text");
    assert!(text.contains("fio writer write: ") && text.contains("fio reader read: "), "{text}");
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let fio = &json["rows"][0]["fio"];
    assert_eq!(fio[1]["stream"], "reader read");
    assert_eq!(f(&fio[1]["clat_p99_ms"]["median"]), f(&reader["clat"]["p99_ms"]));
}

#[test]
fn a_job_fio_rejects_is_an_error_record_quoting_fio() {
    let r = run("rejected", serde_json::json!({"job": "[bad]\nrw=sideways\n"}));
    assert_eq!(r["status"], "error");
    let e = r["error"].as_str().unwrap();
    assert!(e.contains("fio exited with code 1") && e.contains("rw=sideways"), "{e}");
}

#[test]
fn fio_stopped_at_its_limit_keeps_its_figures_so_far() {
    let job = "[slow]\nrw=randread\nbs=4k\nsize=4m\nruntime=60\ntime_based=1\nrate_iops=20\n";
    let r = run("limit", serde_json::json!({"job": job, "time_limit_s": 3.0}));
    assert_eq!(r["status"], "timeout");
    assert!(r["error"].as_str().unwrap().contains("time limit of 3 s"), "{}", r["error"]);
    let slow = &r["details"]["fio"]["jobs"][0]["read"];
    assert!(f(&slow["runtime_ms"]) >= 1000.0 && f(&slow["runtime_ms"]) < 3500.0, "{slow}");
    assert!(r["bytes_read"].as_u64().unwrap() > 0);
}

#[test]
fn a_job_that_logs_its_latency_has_it_over_time_in_the_record() {
    let job = "[reader]\nrw=randread\nbs=4k\nsize=4m\nruntime=3\ntime_based=1\nrate_iops=50\nwrite_lat_log=reader\nlog_avg_msec=1000\n";
    let r = run("logged", serde_json::json!({"job": job}));
    assert_eq!(r["status"], "ok", "{}", r["error"]);
    let logs = r["details"]["fio"]["logs"].as_array().unwrap_or_else(|| panic!("no logs: {}", r["details"]));
    let files: Vec<&str> = logs.iter().map(|l| l["file"].as_str().unwrap()).collect();
    // A sync engine has no submission latency: fio's slat log is empty, and gives no series.
    assert_eq!(files, ["reader_clat.1.log", "reader_lat.1.log"]);
    let clat = &logs[0];
    assert_eq!((clat["log"].as_str(), clat["direction"].as_str()), (Some("clat"), Some("read")));
    assert_eq!((clat["unit"].as_str(), clat["bucket_s"].as_u64()), (Some("ms"), Some(1)));
    // log_avg_msec=1000: a line a second of a 3 s job, at its 1st, 2nd and 3rd second.
    let t: Vec<u64> = clat["t_s"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
    assert!(t.len() >= 2 && t.windows(2).all(|w| w[0] < w[1]) && *t.last().unwrap() <= 3, "{t:?}");
    // The seconds' means are fio's own completion latencies: about its mean over the job.
    let means: Vec<f64> = clat["mean"].as_array().unwrap().iter().map(f).collect();
    let whole = f(&r["details"]["fio"]["jobs"][0]["read"]["clat"]["mean_ms"]);
    let average = means.iter().sum::<f64>() / means.len() as f64;
    assert!(average > whole * 0.5 && average < whole * 2.0, "per-second means {means:?} against fio's mean {whole}");
    let maxima = clat["max"].as_array().unwrap().iter().map(f);
    assert!(maxima.zip(&means).all(|(max, mean)| max >= *mean), "{clat}");
}
