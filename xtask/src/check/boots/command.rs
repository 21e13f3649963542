//! Your own program in QEMU: the seed's C program (image/programs/seedwrite.c,
//! built static by `cargo xtask program`) put into an image with `--include`
//! and run by a `command` workload beside its built-in twin, `manyfiles`,
//! under Debian's kernel. Its records must be ok with the program's own
//! output, its exact bytes and the SHA-256 of the program that ran, the
//! probe's waits beside them; a bad argument must give an error record
//! quoting the program's stderr; serial and stick must agree; the report
//! must show the program's row. Then the image's static fio (`--fio`) runs
//! the seed's question as a fio job — a big buffered writer and a small
//! random reader — to a record with fio's figures per job beside the probe's.

use super::support::{results, serial_documents, stick_documents, test_boot, test_image};
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::arch::Arch;
use crate::build::image;
use crate::host::fs;
use crate::host::project::Result;
use bootmark::record::{Record, Status};
use std::path::Path;

/// 64 files of 512 KiB: the seed's shape, small enough for a TCG boot.
pub(super) const PLAN: &str = r#"{
  "name": "command-check",
  "description": "cargo xtask check command: seedwrite as a command workload beside manyfiles",
  "probe": { "interval_ms": 100, "baseline_s": 1.0, "recovery_deadline_s": 10 },
  "workload_deadline_s": 240,
  "workloads": [
    { "name": "command", "params": { "program": "seedwrite", "args": ["64", "512"], "final_sync": true } },
    { "name": "manyfiles", "params": { "files": 64, "file_size": "512KiB", "sync": "end" } },
    { "name": "command", "params": { "program": "seedwrite", "args": ["3", "x"] } },
    { "name": "command", "params": { "program": "fio", "args": ["--name=careless", "--filename=/dev/sda:/dev/sdb:/dev/sdc:/dev/sdd", "--rw=write", "--size=1m"] } },
    { "name": "fio", "params": { "job": "[global]\nioengine=psync\n\n[writer]\nrw=write\nbs=16k\nsize=48m\nend_fsync=1\n\n[reader]\nrw=randread\nbs=4k\nsize=4m\nruntime=4\ntime_based=1\nrate_iops=25\nwrite_lat_log=reader\nlog_avg_msec=1000\n" } }
  ]
}"#;

pub fn test(package: &str, base: &Path) -> Result<()> {
    let program = crate::build::program::build("seedwrite", Arch::X86_64, crate::host::deps::can_install())?;
    let plan = base.join("command-check.json");
    fs::write(&plan, PLAN)?;
    let image_args = image::Args {
        plan: plan.display().to_string(),
        includes: vec![program.display().to_string()],
        fio: true,
        ..test_image(vec![package.into()], base.join("image-command"), None)
    };
    let out = image::build(&image_args)?;
    let disk = base.join("scratch-command.img");
    scratch_disk(&disk, "ext3", 512)?;
    // Another disk of the server: the installed OS a careless program names.
    let other = base.join("other-command.img");
    fs::write(&other, vec![0x5a; 16 << 20])?;
    let stick_before = stick_documents(&out.join("usb.img"))?;
    let mut boot = test_boot(out.clone(), disk, base.join("serial-command.log"));
    boot.disks.push(other.clone());
    let booted = qemu::boot(&boot)?;
    let serial = serial_documents(&booted.serial);
    let stick: Vec<_> =
        stick_documents(&out.join("usb.img"))?.into_iter().filter(|d| !stick_before.contains(d)).collect();
    let records = results(&serial);
    let tail = || qemu::tail(&booted.serial, 25);
    let [ours, twin, bad, careless, fio] = records.as_slice() else {
        return Err(format!("expected five records, got {}\n{}", records.len(), tail()));
    };
    check_careless_record(careless, Some(&other))?;
    let (reader_p99, per_second) = check_fio_record(fio)?;
    let said = check_program_record(ours, &fs::sha256_file(&program)?)?;
    if twin.status != Status::Ok {
        return Err(format!("manyfiles: {:?}", twin.error));
    }
    let error = bad.error.as_deref().unwrap_or_default();
    if bad.status != Status::Error
        || !error.contains("exited with code 1")
        || !error.contains("SIZE_KIB must be a positive number, not 'x'")
    {
        return Err(format!("a bad argument should be an error record quoting seedwrite's stderr: {error:?}"));
    }
    if stick != serial {
        return Err(format!(
            "the stick got {} new documents that differ from the {} on serial",
            stick.len(),
            serial.len()
        ));
    }
    let report = bootmark::report::report(records.iter().copied(), bootmark::report::Options::default())?;
    for workload in ["command", "fio"] {
        if !report.rows.iter().any(|r| r.workload == workload) {
            let rows: Vec<&str> = report.rows.iter().map(|r| r.workload.as_str()).collect();
            return Err(format!("the report has no {workload} row: {rows:?}"));
        }
    }
    let p99 = |r: &Record| r.responsiveness.as_ref().map_or(f64::NAN, |x| x.p99_ms);
    println!(
        "e2e: command: {package}, seedwrite (static, --include) as a command workload: \"{said}\", {:.2} s to durable, probe p99 {:.1} ms; manyfiles on the same files {:.2} s, probe p99 {:.1} ms; a bad argument an error record quoting its stderr; the image's static fio: a 48 MiB writer beside a reader at 25 IOPS, the reader's completion p99 {reader_p99:.1} ms (a second's mean from its write_lat_log: {per_second}), probe p99 {:.1} ms; fio as a command naming /dev/sda–sdd: an error record, confined, the other disk byte-identical; serial and stick agree ({:.1} s)",
        ours.times.durable_s.unwrap_or(f64::NAN),
        p99(ours),
        twin.times.durable_s.unwrap_or(twin.times.wall_s),
        p99(twin),
        p99(fio),
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}

/// fio run as a command naming every disk by /dev name (a job file naming
/// one is refused when the image is built): an error record, the program
/// confined, the other disk byte-identical.
pub(super) fn check_careless_record(r: &Record, other: Option<&Path>) -> Result<()> {
    let error = r.error.as_deref().unwrap_or_default();
    if r.status != Status::Error || !error.contains("exited with code") {
        return Err(format!("fio writing /dev/sd* should fail inside its own /dev: {:?} {error:?}", r.status));
    }
    if r.details["confined"]["capabilities_dropped"].as_array().is_none_or(|c| c.len() != 4) {
        return Err(format!("the record does not say the program ran confined: {}", r.details));
    }
    if let Some(other) = other
        && std::fs::read(other).map_err(|e| format!("{}: {e}", other.display()))?.iter().any(|&b| b != 0x5a)
    {
        return Err(format!("{} changed: a program reached a disk that is not the target", other.display()));
    }
    Ok(())
}

/// The program's record: ok, its output, its bytes, its SHA-256, the probe
/// and its CPU. Returns what it printed.
pub(super) fn check_program_record(r: &Record, sha256: &str) -> Result<String> {
    let d = &r.details;
    let said = d["stdout"].as_str().unwrap_or_default().trim().to_string();
    if r.status != Status::Ok || !said.starts_with("seedwrite: 64 files x 512 KiB in ") {
        return Err(format!("seedwrite: {:?} {:?}, stdout {said:?}, stderr {:?}", r.status, r.error, d["stderr"]));
    }
    if d["program"] != "/usr/local/bin/seedwrite" || d["program_sha256"] != sha256 {
        return Err(format!("the record names another program: {} {}", d["program"], d["program_sha256"]));
    }
    // What it passed to write(), from the kernel's task I/O counters.
    if r.bytes_written != 64 * 512 * 1024 {
        return Err(format!("seedwrite wrote 32 MiB, the record says {} ({})", r.bytes_written, d["io"]));
    }
    let durable = r.times.durable_s.unwrap_or(0.0);
    if durable < r.times.wall_s || r.times.user_s + r.times.sys_s <= 0.0 {
        return Err(format!("times: {:?}", r.times));
    }
    if r.responsiveness.as_ref().is_none_or(|x| x.samples == 0) {
        return Err("no probe samples beside the program".into());
    }
    Ok(said)
}

/// The fio record: ok, both jobs with fio's figures, the reader's
/// completion latencies as the record's read latencies, its latency over
/// time. Returns the reader's p99 in ms, and its seconds' means.
pub(super) fn check_fio_record(r: &Record) -> Result<(f64, String)> {
    if r.status != Status::Ok {
        return Err(format!("fio: {:?} {:?}, stderr {}", r.status, r.error, r.details["stderr"]));
    }
    let jobs = &r.details["fio"]["jobs"];
    let (writer, reader) = (&jobs[0]["write"], &jobs[1]["read"]);
    if jobs[0]["name"] != "writer" || writer["io_bytes"] != 48 << 20 || jobs[1]["name"] != "reader" {
        return Err(format!("fio's jobs: {jobs}"));
    }
    let p99 = reader["clat"]["p99_ms"].as_f64().ok_or_else(|| format!("no reader p99: {reader}"))?;
    if reader["clat"]["count"].as_u64() != Some(r.latency.read.count) || r.latency.read.count < 20 {
        return Err(format!("the record's read latencies are not the reader's: {:?} against {reader}", r.latency.read));
    }
    if r.details["fio"]["version"] != "fio-3.33" || r.responsiveness.as_ref().is_none_or(|x| x.samples == 0) {
        return Err(format!("fio {} without the probe beside it", r.details["fio"]["version"]));
    }
    let per_second = check_latency_log(&r.details["fio"]["logs"], reader)?;
    Ok((p99, per_second))
}

/// The reader's `write_lat_log` over time: a point a second of its 4 s
/// (log_avg_msec=1000), each a second's mean, none above fio's own largest
/// completion latency. Returns the means: "6.0, 3.4, 1.3, 1.8 ms".
fn check_latency_log(logs: &serde_json::Value, reader: &serde_json::Value) -> Result<String> {
    let logs = logs.as_array().ok_or("the reader's write_lat_log is not in the record's details.fio.logs")?;
    // fio numbers a log by its job's place in the job file: the reader is the second.
    let clat = logs.iter().find(|l| l["file"] == "reader_clat.2.log" && l["direction"] == "read");
    let clat = clat.ok_or_else(|| format!("no reader_clat.2.log read series in {logs:?}"))?;
    let numbers =
        |key: &str| -> Vec<f64> { clat[key].as_array().into_iter().flatten().filter_map(|v| v.as_f64()).collect() };
    let (t, max) = (numbers("t_s"), numbers("max"));
    let fio_max = reader["clat"]["max_ms"].as_f64().unwrap_or(0.0);
    if t.len() < 3 || t.len() > 5 || max.len() != t.len() || max.iter().any(|m| *m <= 0.0 || *m > fio_max * 1.001) {
        return Err(format!(
            "the reader's latency over time is not a second's mean each (fio's max {fio_max} ms): {clat}"
        ));
    }
    let means: Vec<String> = numbers("mean").iter().map(|m| format!("{m:.1}")).collect();
    Ok(format!("{} ms", means.join(", ")))
}
