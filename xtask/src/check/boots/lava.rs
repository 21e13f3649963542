//! LAVA, here: the jobs `cargo xtask lava` writes, run by Debian's
//! lava-dispatcher (`lava-run`, no server) on a `qemu` device rendered from
//! lava-server's own templates (downloaded and unpacked, not installed),
//! against images built with Debian's kernel.
//!
//! - A clean run: `lava-test-monitor` passed, every planned case is there,
//!   `pass`, with a measurement, and `bootmark collect` reads the same
//!   documents out of LAVA's log as out of QEMU's raw serial log.
//! - A run cut by /init's whole-run watchdog: the workload it cut is `fail`,
//!   the one that never ran `skip`, and the run's case `fail`.
//! - An arm64 entry (Debian's arm64 kernel) on the template's arm64 qemu
//!   device (virt, Cortex-A72, NVMe target): every case `pass`, and the
//!   records LAVA's log holds say aarch64.
//! - Every generated job, the physical server's too, passes
//!   `lava-schema.py job --strict`.
//!
//! A monitor that times out or matches nothing still leaves the job
//! "passed": hence the checks on the monitor's own case and on every id.

use crate::build::image::{self, deb};
use crate::build::lava::{self, Job};
use crate::host::fs;
use crate::host::process::{Streams, cmd, shell};
use crate::host::project::{Result, project_root};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Debian's python3 (with jinja2 and yaml from lava-dispatcher's
/// dependencies), not whatever python3 comes first on PATH.
const PYTHON: &str = "/usr/bin/python3";
const SCHEMA: &str = "/usr/share/lava-common/lava-schema.py";

/// lava-server's rendering of a device dictionary, with the job's context
/// as template variables (as lava-server does when it schedules a job).
const RENDER: &str = r#"
import sys, jinja2, yaml
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[1]), trim_blocks=True, autoescape=False)
context = yaml.safe_load(open(sys.argv[2])).get("context", {})
print(env.from_string("{% extends 'qemu.jinja2' %}").render(**context))
"#;

pub fn test(image: &Path, package: &str, base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let dir = base.join("lava");
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let templates = device_templates()?;

    // The clean run, on the image the boot tests share (quick plan).
    let raw = dir.join("raw-serial.log");
    let args = lava::Args {
        image: image.to_path_buf(),
        out: dir.join("clean"),
        tcg: true,
        // No stick over LAVA: do not wait 30 s for one.
        append: "bootmark.device-wait=5".into(),
        // QEMU's own capture of the same console, to compare with LAVA's log.
        qemu_options: vec![
            format!("-chardev stdio,id=console,logfile={}", raw.display()),
            "-serial chardev:console".into(),
        ],
        ..lava::Args::default()
    };
    let jobs = lava::write_jobs(&args)?;
    jobs.iter().try_for_each(|j| check_schema(&j.path))?;
    let job = jobs.iter().find(|j| j.device_type == "qemu").ok_or("no qemu job was written")?;
    let log = run_job(job, &templates, &dir, 1)?;
    let cases = results(&log)?;
    check_monitor(&cases, &log)?;
    check_all_pass(job, &cases, &log)?;
    let figures = cases.keys().filter(|k| k.ends_with("_probe_p99")).count();
    if figures != job.case_ids.len() {
        return Err(format!("{figures} probe p99 cases for {} workload runs", job.case_ids.len()));
    }
    let from_lava = bootmark::collect::collect(std::slice::from_ref(&log));
    let from_serial = bootmark::collect::collect(std::slice::from_ref(&raw));
    if !from_lava.problems.is_empty() || from_lava.documents.len() != job.case_ids.len() + 1 {
        return Err(format!(
            "collect on the LAVA log: {} documents, problems {:?}",
            from_lava.documents.len(),
            from_lava.problems.iter().map(|p| &p.why).collect::<Vec<_>>()
        ));
    }
    let cut_note = same_as_raw(&from_lava, &from_serial, &crate::boot::qemu::console_text(&raw)?)?;
    println!(
        "e2e: LAVA: lava-run ran the qemu job: monitor passed, {} cases (every planned run with MiB/s, probe, stall and durable figures), collect = raw serial ({} documents{cut_note}); {} jobs schema-valid",
        cases.values().filter(|c| c.definition.as_deref() == Some("bootmark")).count(),
        from_lava.documents.len(),
        jobs.len()
    );
    cut_run(package, &dir, &templates)?;
    println!("e2e: LAVA: both jobs in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// A plan whose second workload can only end by /init's whole-run watchdog.
fn cut_plan() -> serde_json::Value {
    serde_json::json!({
        "name": "lava-cut",
        "description": "a write, an idle that outlasts the whole-run watchdog, a write that never starts",
        "probe": { "enabled": true, "interval_ms": 50, "baseline_s": 0.3, "recovery_deadline_s": 1.0 },
        "workloads": [
            { "name": "seqwrite", "params": { "size": "8MiB", "block": "64KiB", "sync": "end" } },
            { "name": "idle", "params": { "seconds": 3600.0 } },
            { "name": "seqwrite", "params": { "size": "8MiB", "block": "64KiB", "sync": "end" } }
        ]
    })
}

/// An image of the `lava-cut` plan, booted with `bootmark.timeout=30`: the
/// idle is cut (fail), the last write never runs (skip), the boot is not clean.
fn cut_run(package: &str, dir: &Path, templates: &Path) -> Result<()> {
    let plan = dir.join("lava-cut.json");
    fs::write(&plan, serde_json::to_vec_pretty(&cut_plan()).unwrap())?;
    let out = image::build(&image::Args {
        plan: plan.to_string_lossy().into_owned(),
        ..crate::check::boots::support::test_image(vec![package.to_string()], dir.join("image-cut"), None)
    })?;
    let (_, log, cases) = run_qemu_job(out, "bootmark.device-wait=5 bootmark.timeout=30", templates, dir, 2)?;
    let want = [("seqwrite_1", "pass"), ("idle", "fail"), ("seqwrite_2", "skip"), ("bootmark_run", "fail")];
    for (id, result) in want {
        match cases.get(id) {
            Some(c) if c.result == result && c.measurement.is_some() => {}
            other => return Err(format!("case {id}: {other:?}, expected {result} ({})", log.display())),
        }
    }
    println!("e2e: LAVA: a run cut by the whole-run watchdog: the cut workload fail, the next skip, the run fail");
    Ok(())
}

/// An image of Debian's arm64 kernel, its qemu job run as LAVA's arm64
/// device: every planned case passes, and the records say aarch64. Beside
/// other boots: it compares nothing with QEMU's own copy of the console,
/// and its timeouts are LAVA's, minutes wide.
pub fn test_arm64(base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let dir = base.join("lava-arm64");
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let templates = device_templates()?;
    let kernel = crate::check::boots::arm64_image::ARM64_KERNEL;
    let support = crate::check::boots::support::test_image(vec![kernel.into()], dir.join("image-arm64"), None);
    let out = image::build(&support)?;
    let physical = arm64_physical_job(&out, &dir)?;
    let (job, log, cases) = run_qemu_job(out, "bootmark.device-wait=5", &templates, &dir, 1)?;
    check_all_pass(&job, &cases, &log)?;
    let collected = bootmark::collect::collect(std::slice::from_ref(&log));
    let records: Vec<_> = collected.documents.iter().filter_map(bootmark::collect::Document::result).collect();
    if records.len() != job.case_ids.len() || records.iter().any(|r| r.kernel.arch.as_deref() != Some("aarch64")) {
        return Err(format!(
            "arm64: LAVA's log holds {} records for {} runs, kernel.arch {:?} ({})",
            records.len(),
            job.case_ids.len(),
            records.first().map(|r| &r.kernel.arch),
            log.display()
        ));
    }
    println!(
        "e2e: LAVA: {kernel}'s entry as the arm64 qemu device (virt, Cortex-A72, NVMe): {} cases pass, {} aarch64 records in its log ({:.1} s with the image); {physical}",
        job.case_ids.len() + 1,
        records.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A physical arm64 server's job: refused without its device type, naming
/// the flag; with one (LAVA's synquacer, a GRUB-booting arm64 type) a
/// schema-valid job that boots `grub` from TFTP. No such server is here to run it.
fn arm64_physical_job(image: &Path, dir: &Path) -> Result<String> {
    let args = lava::Args {
        image: image.to_path_buf(),
        out: dir.join("physical"),
        devices: "x86".into(),
        ..lava::Args::default()
    };
    match lava::write_jobs(&args) {
        Err(e) if e.contains("--arm64-device-type") => {}
        other => return Err(format!("physical jobs for arm64 entries without their device type: {other:?}")),
    }
    let args = lava::Args { arm64_device_type: Some("synquacer".into()), ..args };
    let jobs = lava::write_jobs(&args)?;
    let [job] = &jobs[..] else { return Err(format!("{} physical jobs for one arm64 entry", jobs.len())) };
    check_schema(&job.path)?;
    let text = fs::read_to_string(&job.path)?;
    if job.device_type != "synquacer" || !text.contains("method: \"grub\"") || !text.contains("ttyAMA0") {
        return Err(format!("{}: not a synquacer job booting grub on ttyAMA0", job.path.display()));
    }
    Ok("a physical arm64 server's job (synquacer, boot grub) schema-valid, refused without --arm64-device-type".into())
}

/// The qemu job of `image`'s first entry, with `append` on its command
/// line, written under `dir/jobs-ID`, checked against LAVA's schema and
/// run: the job, its log and its cases, LAVA's monitor passed.
fn run_qemu_job(
    image: PathBuf,
    append: &str,
    templates: &Path,
    dir: &Path,
    id: u32,
) -> Result<(Job, PathBuf, BTreeMap<String, Case>)> {
    let out = dir.join(format!("jobs-{id}"));
    let args =
        lava::Args { image, out, devices: "qemu".into(), tcg: true, append: append.into(), ..lava::Args::default() };
    let job = lava::write_jobs(&args)?.into_iter().next().ok_or("no qemu job was written")?;
    check_schema(&job.path)?;
    let log = run_job(&job, templates, dir, id)?;
    let cases = results(&log)?;
    check_monitor(&cases, &log)?;
    Ok((job, log, cases))
}

/// Every planned case, and the run's, `pass` with a measurement.
fn check_all_pass(job: &Job, cases: &BTreeMap<String, Case>, log: &Path) -> Result<()> {
    for id in job.case_ids.iter().map(String::as_str).chain([bootmark::sink::lava::RUN_CASE]) {
        match cases.get(id) {
            Some(c) if c.result == "pass" && c.measurement.is_some() => {}
            other => return Err(format!("case {id}: {other:?}, not pass with a measurement ({})", log.display())),
        }
    }
    Ok(())
}

/// lava-server's device-type templates, unpacked from its Debian package
/// (cached under target/cache).
fn device_templates() -> Result<PathBuf> {
    let cache = project_root().join("target/cache");
    let unpacked = cache.join("lava-server");
    let templates = unpacked.join("usr/share/lava-server/device-types");
    if !templates.join("qemu.jinja2").exists() {
        let deb = deb::fetch_deb("lava-server", &cache.join("debs"))?;
        let _ = std::fs::remove_dir_all(&unpacked);
        let sh = shell()?;
        crate::host::process::run(cmd!(sh, "dpkg-deb -x {deb} {unpacked}"))?;
    }
    Ok(templates)
}

fn check_schema(job: &Path) -> Result<()> {
    let sh = shell()?;
    crate::host::process::run(cmd!(sh, "{PYTHON} {SCHEMA} job --strict {job}"))
        .map(|_| ())
        .map_err(|e| format!("{} is not a valid LAVA job: {e}", job.display()))
}

/// Render the qemu device for `job`, run it with lava-run, return its log.
fn run_job(job: &Job, templates: &Path, dir: &Path, id: u32) -> Result<PathBuf> {
    let device = dir.join(format!("device-{id}.yaml"));
    let (sh, job_file) = (shell()?, &job.path);
    let rendered = crate::host::process::run(cmd!(sh, "{PYTHON} -c {RENDER} {templates} {job_file}"))?;
    fs::write(&device, rendered)?;
    let dispatcher = dir.join("dispatcher.yaml");
    // Without it lava-run looks for a default route to find its own address.
    fs::write(&dispatcher, "dispatcher_ip: 127.0.0.1\n")?;
    let log = dir.join(format!("job-{id}.yaml"));
    let out = fs::create(&log)?;
    eprintln!("lava: lava-run {} (log: {})", job.path.display(), log.display());
    // The job's own timeouts allow a real plan; here ten minutes is plenty.
    let (job_id, output_dir) = (id.to_string(), dir.join(format!("out-{id}")));
    let lava_run = cmd!(
        sh,
        "timeout -k 10 600 lava-run --job-id {job_id} --output-dir {output_dir} --device {device} --dispatcher {dispatcher} {job_file}"
    );
    // lava-run writes its log on stderr.
    let ran = crate::host::process::run_with(lava_run, Streams::default().stderr(out));
    if let Err(status) = ran {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        return Err(format!(
            "{status}; the end of lava-run's log ({}):\n{}",
            log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    Ok(log)
}

/// One LAVA result as the job log has it.
#[derive(Debug)]
struct Case {
    /// `bootmark` for ours, `lava` for LAVA's own.
    definition: Option<String>,
    result: String,
    measurement: Option<String>,
}

/// Every `lvl: results` line of a job log, by case.
fn results(log: &Path) -> Result<BTreeMap<String, Case>> {
    let text = std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.contains("\"lvl\": \"results\"")) {
        let (Some(case), Some(result)) = (field(line, "case"), field(line, "result")) else { continue };
        out.insert(
            case,
            Case { definition: field(line, "definition"), result, measurement: field(line, "measurement") },
        );
    }
    Ok(out)
}

/// `"key": "value"` (or `"key": ! "value"`) in a LAVA log line.
fn field(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!("\"{key}\": "))? + key.len() + 4;
    let rest = line[at..].strip_prefix("! ").unwrap_or(&line[at..]);
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

/// The monitor must have seen the end line, and the job must have passed.
fn check_monitor(cases: &BTreeMap<String, Case>, log: &Path) -> Result<()> {
    for id in ["lava-test-monitor", "job"] {
        match cases.get(id) {
            Some(c) if c.result == "pass" => {}
            other => return Err(format!("LAVA's {id}: {other:?} ({})", log.display())),
        }
    }
    Ok(())
}

/// Does the raw log (QEMU's own copy of the console) hold LAVA's documents?
/// Under a busy host (the kernel build beside the boots, LAVA slow to read
/// the console) QEMU has written lines of its copy garbled: bytes altered,
/// or lost from the middle of a line that still looks whole. Every document
/// the raw log verifies must be one of LAVA's; one it lacks must be one a
/// damaged line of the raw log explains — any framed line that fails its
/// checks (shorter, longer or altered) and names that record, or one whose
/// record cannot be read from it — never a silent difference. What to add
/// to the summary line about such a loss.
fn same_as_raw(
    lava: &bootmark::collect::Collected,
    raw: &bootmark::collect::Collected,
    raw_text: &str,
) -> Result<String> {
    use bootmark::record::Document;
    let foreign = raw.documents.iter().filter(|d| !lava.documents.contains(d)).count();
    let lost: Vec<&Document> = lava.documents.iter().filter(|d| !raw.documents.contains(d)).collect();
    let damage = Damage::in_text(raw_text);
    let named = |d: &&&Document| damage.claimed.contains(&(d.run_id().to_string(), d.seq()));
    let unexplained = lost.iter().filter(|d| !named(d)).count().saturating_sub(damage.unclaimed);
    if foreign > 0 || unexplained > 0 {
        return Err(format!(
            "collect: {} documents from LAVA's log, {} from the raw serial log, not the same \
             ({foreign} only in the raw log, {unexplained} lost from it with no damaged line to say why)",
            lava.documents.len(),
            raw.documents.len()
        ));
    }
    Ok(match lost.len() {
        0 => String::new(),
        n => format!("; the raw log lost {n} to {} framed lines QEMU garbled, and said so", damage.lines),
    })
}

/// The framed lines of a console log that fail their checks.
struct Damage {
    lines: usize,
    /// The records (run id, seq) they name.
    claimed: std::collections::BTreeSet<(String, u32)>,
    /// Those whose record cannot be read from them.
    unclaimed: usize,
}

impl Damage {
    fn in_text(text: &str) -> Damage {
        let mut d = Damage { lines: 0, claimed: Default::default(), unclaimed: 0 };
        for line in text.lines() {
            if let Some(Err(_)) = bootmark::framing::parse_line(line) {
                d.lines += 1;
                match bootmark::framing::claimed_record(line) {
                    Some(key) => {
                        d.claimed.insert(key);
                    }
                    None => d.unclaimed += 1,
                }
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Console logs of two records (framed as /init frames them): one with
    /// a line that lost bytes from its middle (it still looks whole, and
    /// fails its CRC), one with a line altered, one with the second record's
    /// place taken by another, one cut short with no damage to say why.
    #[test]
    fn the_raw_log_may_lose_a_document_to_a_damaged_line_but_never_differ() {
        let record = |seq: u32, name: &str| {
            let mut r = bootmark::record::Record::blank("20261204-000000-abcd", seq);
            r.workload.name = name.into();
            let bytes = serde_json::to_vec(&r).unwrap();
            bootmark::framing::encode("20261204-000000-abcd", seq, &bytes).join("\n") + "\n"
        };
        let dir = std::env::temp_dir().join(format!("bootmark-lava-raw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let collected = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            bootmark::collect::collect(&[path])
        };
        let both = record(0, "seqwrite") + &record(1, "idle");
        let lava = collected("lava.log", &both);
        assert_eq!(lava.documents.len(), 2);
        assert_eq!(same_as_raw(&lava, &lava, &both).unwrap(), "");
        // Chunk 3 of record 1 lost 3 bytes from the middle of its base64, as QEMU's copy once did.
        let line = both.lines().find(|l| l.starts_with("@BM1 D 20261204-000000-abcd 1 3/")).unwrap();
        let shorter = format!("{}{}", &line[..60], &line[63..]);
        let lost_bytes = both.replacen(line, &shorter, 1);
        let note = same_as_raw(&lava, &collected("shorter.log", &lost_bytes), &lost_bytes).unwrap();
        assert!(note.contains("lost 1 to 1 framed lines"), "{note}");
        let garbled = both.replacen("@BM1 D 20261204-000000-abcd 1 0/", "@BM1 D 20261204-000000-abcd 1 0/x", 1);
        assert!(same_as_raw(&lava, &collected("garbled.log", &garbled), &garbled).unwrap().contains("lost 1"));
        let other = record(0, "seqwrite") + &record(1, "sort");
        let e = same_as_raw(&lava, &collected("other.log", &other), &other).unwrap_err();
        assert!(e.contains("1 only in the raw log"), "{e}");
        let short = record(0, "seqwrite");
        let e = same_as_raw(&lava, &collected("short.log", &short), &short).unwrap_err();
        assert!(e.contains("with no damaged line to say why"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_cut_plan_is_a_valid_plan() {
        let plan = bootmark::plan::Plan::from_json(&cut_plan().to_string()).unwrap();
        let ids: Vec<String> = bootmark::sink::lava::Cases::planned(&plan).ids().map(str::to_string).collect();
        assert_eq!(ids, ["seqwrite_1", "idle", "seqwrite_2"]);
    }

    #[test]
    fn results_are_read_from_lava_log_lines() {
        let line = r#"{"dt": "x", "lvl": "results", "msg": {"case": "seqwrite", "definition": "bootmark", "measurement": ! "57.0", "result": "pass", "units": "MiB/s"}}"#;
        assert_eq!(field(line, "case").as_deref(), Some("seqwrite"));
        assert_eq!(field(line, "measurement").as_deref(), Some("57.0"));
        assert_eq!(field(line, "result").as_deref(), Some("pass"));
        assert_eq!(field(line, "units").as_deref(), Some("MiB/s"));
        assert_eq!(field(line, "nothing"), None);
    }
}
