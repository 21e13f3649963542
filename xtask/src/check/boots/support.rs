//! What every QEMU scenario uses: the test image and boot, the records read
//! back from the serial log and the stick, the checks of one quick-plan boot,
//! and the tally of scenarios. A leaf: scenarios use it, it uses none of them.

use crate::boot::qemu;
use crate::build::image;
use crate::host::fs;
use crate::host::project::Result;
use bootmark::collect::Document;
use bootmark::framing::{self, Assembler, Fed};
use bootmark::record::{Firmware, Record, RunRecord, Status};
use serde_json::Value;
use std::path::Path;

/// Documents (records and run records) decoded from a serial log, checksums
/// verified, each read as its typed record (one that does not fit is left out).
pub fn serial_documents(serial: &str) -> Vec<Document> {
    let mut asm = Assembler::default();
    let mut docs = Vec::new();
    for line in serial.lines() {
        if let Some(Ok(l)) = framing::parse_line(line)
            && let Fed::Record(_, _, bytes) = asm.feed(l)
        {
            docs.extend(Document::from_json(&bytes).ok());
        }
    }
    docs
}

/// The result records among `docs`.
pub fn results(docs: &[Document]) -> Vec<&Record> {
    docs.iter().filter_map(Document::result).collect()
}

/// The (first) run record among `docs`.
pub fn run_record(docs: &[Document]) -> Option<&RunRecord> {
    docs.iter().find_map(Document::run)
}

/// A fact of a run record by its path (`target.mkfs`), null when absent.
pub fn fact<'a>(run: &'a RunRecord, path: &str) -> &'a Value {
    let mut parts = path.split('.');
    let first = run.facts.get(parts.next().unwrap_or("")).unwrap_or(&Value::Null);
    parts.fold(first, |v, p| v.get(p).unwrap_or(&Value::Null))
}

/// Every document in the journal of a stick image.
pub fn stick_documents(img: &Path) -> Result<Vec<Document>> {
    // The collector reads the journal straight from the image and checks every SHA-256.
    let collected = bootmark::collect::collect(&[img.to_path_buf()]);
    // The stick keeps every boot of the suite, refused ones among them:
    // their runs that never ran are those boots' news, not the journal's fault.
    if let Some(p) = collected.problems.iter().find(|p| !p.is_not_run()) {
        return Err(format!("the stick's journal: {}: {}", p.file, p.why));
    }
    Ok(collected.documents)
}

/// The image every boot test builds: the quick plan, target LABEL=SCRATCH.
pub fn test_image(kernel_debs: Vec<String>, out: std::path::PathBuf, sequence: Option<u32>) -> image::Args {
    image::Args {
        kernel_debs,
        out,
        target: Some("LABEL=SCRATCH".into()),
        sequence,
        install_deps: crate::host::deps::can_install(),
        ..image::Args::default()
    }
}

/// A BIOS boot of `image` with one SATA disk, serial to `log`.
pub fn test_boot(image: std::path::PathBuf, disk: std::path::PathBuf, log: std::path::PathBuf) -> qemu::Args {
    qemu::Args {
        image,
        disks: vec![disk],
        log: Some(log),
        timeout: 300,
        install_deps: crate::host::deps::can_install(),
        ..qemu::Args::default()
    }
}

/// Passed and failed test cases, by name.
#[derive(Default)]
pub struct Tally {
    passed: usize,
    /// Scenarios that passed on their second try after a boot stalled, starved or panicked before /init.
    retried: Vec<String>,
    /// Each failed scenario and the first line of why.
    failed: Vec<(String, String)>,
    /// How long each scenario took (with its retry): where the suite's time goes.
    took: Vec<(String, f64)>,
}

impl Tally {
    /// Count a scenario's outcome made elsewhere (its setup failed).
    pub fn add(&mut self, name: &str, outcome: Result<()>) {
        match outcome {
            Ok(()) => self.passed += 1,
            Err(e) => {
                println!("e2e: FAIL {name}: {e}");
                self.failed.push((name.to_string(), first_line(&e).to_string()));
            }
        }
    }

    /// Count what `attempt` gave.
    pub fn record(&mut self, name: &str, attempted: Attempted) {
        if attempted.retried && attempted.outcome.is_ok() {
            self.retried.push(name.to_string());
        }
        self.add(name, attempted.outcome);
        self.took.push((name.to_string(), attempted.seconds));
    }

    pub fn finish(self, what: &str) -> Result<()> {
        let retried = match self.retried.len() {
            0 => String::new(),
            _ => format!(
                " ({} of them on a second try after a boot stalled, starved or panicked before /init: {})",
                self.retried.len(),
                self.retried.join(", ")
            ),
        };
        let mut took = self.took.clone();
        took.sort_by(|a, b| b.1.total_cmp(&a.1));
        let took: Vec<String> = took.iter().map(|(name, s)| format!("{name} {s:.0} s")).collect();
        if !took.is_empty() {
            println!("{what}: time by scenario, longest first: {}", took.join(", "));
        }
        println!("{what}: {} passed{retried}, {} failed", self.passed, self.failed.len());
        if self.failed.is_empty() {
            return Ok(());
        }
        // Each failure's reason again, so that the suite's last lines say why.
        let names: Vec<&str> = self.failed.iter().map(|(name, _)| name.as_str()).collect();
        let reasons: Vec<String> = self.failed.iter().map(|(name, why)| format!("\n  {name}: {why}")).collect();
        Err(format!("{what} failed: {}{}", names.join(", "), reasons.concat()))
    }
}

/// A scenario's outcome, whether it took a second try, and how long it took.
pub struct Attempted {
    pub outcome: Result<()>,
    pub retried: bool,
    pub seconds: f64,
}

/// Run a scenario; when one of its boots stalled before /init, its guest
/// was starved of CPU, or its kernel panicked before /init ran (the host
/// or TCG, not bootmark: see `qemu::STALLED`, `qemu::STARVED` and
/// `qemu::PANICKED_BEFORE_INIT`), run it once more, counted apart. Any
/// other failure counts at once.
pub fn attempt(name: &str, mut scenario: impl FnMut() -> Result<()>) -> Attempted {
    let started = std::time::Instant::now();
    let (outcome, retried) = match scenario() {
        Err(e) if [qemu::STALLED, qemu::STARVED, qemu::PANICKED_BEFORE_INIT].iter().any(|m| e.contains(m)) => {
            println!("e2e: RETRY {name}: a boot {}", first_line(&e));
            (scenario(), true)
        }
        outcome => (outcome, false),
    };
    Attempted { outcome, retried, seconds: started.elapsed().as_secs_f64() }
}

/// A `[server.qemu]` guest that stalled before /init, as its `xtask qemu`
/// said in the lab's `SERVER.power.out` files in `state_dir`: the line, to
/// add to a lab scenario's error so that the tally tries it once more, as
/// it does a boot of its own that stalled.
pub fn guest_stalled(state_dir: &Path) -> Option<String> {
    let files = std::fs::read_dir(state_dir).ok()?.flatten().map(|e| e.path());
    files
        .filter(|p| p.to_string_lossy().ends_with(".power.out"))
        .find_map(|p| std::fs::read_to_string(p).ok()?.lines().find(|l| l.contains(qemu::STALLED)).map(str::to_string))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Boot, then check the serial log and the stick hold the same six ok records
/// and an ok run record. Returns the boot's duration.
pub fn boot_and_check(args: &qemu::Args, package: &str) -> Result<f64> {
    boot_and_check_on(args, package, "ext3", QUICK_RECORDS).map(|(s, _)| s)
}

/// The records of the quick plan: one per workload.
pub const QUICK_RECORDS: usize = 6;

/// As `boot_and_check`, with the target's filesystem `fs` when the records
/// are made and `count` ok records; returns them too.
pub fn boot_and_check_on(args: &qemu::Args, package: &str, fs: &str, count: usize) -> Result<(f64, Vec<Record>)> {
    let stick_before = stick_documents(&args.image.join("usb.img"))?;
    let booted = qemu::boot(args)?;
    let serial = serial_documents(&booted.serial);
    let stick: Vec<Document> =
        stick_documents(&args.image.join("usb.img"))?.into_iter().filter(|d| !stick_before.contains(d)).collect();
    let records = results(&serial);
    let tail = || qemu::tail(&booted.serial, 25);
    // Documents that do not fit their typed record were left out: no run record then.
    let Some(run) = run_record(&serial) else {
        return Err(format!("no run record on the serial log ({})\n{}", qemu::diagnose(&booted.serial), tail()));
    };
    if run.status != Status::Ok {
        return Err(format!("the run failed: {}\n{}", run.error.as_deref().unwrap_or_default(), tail()));
    }
    let modules = fact(run, "modules");
    let filesystems = modules["filesystems"].as_object().cloned().unwrap_or_default();
    let no_failures = |m: &Value| m["failed"].as_object().is_some_and(|f| f.is_empty());
    if !no_failures(modules) || modules["ms"].as_u64().is_none() || !filesystems.values().all(no_failures) {
        return Err(format!("module loading failed or was not reported: {modules}"));
    }
    if !filesystems.contains_key(fs) {
        return Err(format!("the target's filesystem modules were not loaded before mounting it: {modules}"));
    }
    if records.len() != count || records.iter().any(|r| r.status != Status::Ok) {
        return Err(format!("expected {count} ok records, got {}\n{}", records.len(), tail()));
    }
    if records
        .iter()
        .any(|r| r.storage.fs.as_deref() != Some(fs) || !r.kernel.release.as_deref().unwrap_or("").starts_with("6."))
    {
        return Err(format!("records do not show {package} and the {fs} scratch disk"));
    }
    for r in &records {
        queue_settings_recorded(r)?;
    }
    if stick != serial {
        return Err(format!(
            "the stick got {} new documents that differ from the {} on serial",
            stick.len(),
            serial.len()
        ));
    }
    Ok((booted.elapsed.as_secs_f64(), records.into_iter().cloned().collect()))
}

/// The queue settings behind the causes findings name, as every kernel the
/// boots use has them: on a plain disk all of them; under an LV or array the
/// request size on the device (bio-based dm and md queues have no writeback
/// throttling of their own), and all of them on each member disk.
fn queue_settings_recorded(r: &Record) -> Result<()> {
    const DISK: [&str; 4] =
        ["queue/max_sectors_kb", "queue/max_hw_sectors_kb", "queue/wbt_lat_usec", "queue/nr_requests"];
    let layers = &r.storage.layers;
    let on_device: &[&str] = if layers.is_empty() { &DISK } else { &DISK[..2] };
    let lacks = |queue: &std::collections::BTreeMap<String, String>, wanted: &[&str]| {
        wanted.iter().find(|k| !queue.contains_key(**k)).map(|k| k.to_string())
    };
    if let Some(k) = lacks(&r.storage.queue, on_device) {
        return Err(format!("a record lacks its device's {k}: storage.queue {:?}", r.storage.queue));
    }
    for disk in bootmark::schema::layer::disks(layers) {
        if let Some(k) = lacks(&disk.queue, &DISK) {
            return Err(format!("a record lacks member disk {}'s {k}: {:?}", disk.name, disk.queue));
        }
    }
    Ok(())
}

/// The modules /init loaded in a boot, from the run record on its serial log.
pub fn loaded_modules(serial_log: &Path) -> Vec<String> {
    let serial = serial_documents(&qemu::console_text(serial_log).unwrap_or_default());
    let loaded = run_record(&serial).and_then(|r| fact(r, "modules.loaded").as_array().cloned()).unwrap_or_default();
    loaded.iter().filter_map(|m| m.as_str().map(String::from)).collect()
}

/// Drivers `loaded` must have and must not have (those of absent devices).
pub fn check_drivers(loaded: &[String], present: &[&str], absent: &[&str]) -> Result<()> {
    let has = |n: &&str| loaded.iter().any(|l| l == n);
    if let Some(n) = present.iter().find(|n| !has(n)) {
        return Err(format!("driver {n} was not loaded: {loaded:?}"));
    }
    if let Some(n) = absent.iter().find(|n| has(n)) {
        return Err(format!("driver {n} was loaded with no device for it: {loaded:?}"));
    }
    Ok(())
}

/// The modules.json of an image's first entry (the image builder's output directory).
pub fn module_set(out: &Path) -> Result<bootmark::contract::modules::ModuleSet> {
    let initrd = fs::read(out.join("pxe/boot/k0/initrd.gz"))?;
    let json = file_in_initramfs(&initrd, "etc/bootmark/modules.json")?;
    serde_json::from_slice(&json).map_err(|e| format!("etc/bootmark/modules.json: {e}"))
}

/// A file's bytes from an initramfs (concatenated gzip'ed newc archives).
pub fn file_in_initramfs(initrd: &[u8], name: &str) -> Result<Vec<u8>> {
    find_in_cpio(&gunzip_all(initrd)?, name).ok_or_else(|| format!("no {name} in the initramfs"))
}

fn gunzip_all(data: &[u8]) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data).read_to_end(&mut out).map_err(|e| format!("initramfs is not gzip: {e}"))?;
    Ok(out)
}

/// A file's bytes from a stream of newc archives.
fn find_in_cpio(data: &[u8], name: &str) -> Option<Vec<u8>> {
    let mut off = 0;
    while off + 110 <= data.len() {
        if &data[off..off + 6] != b"070701" {
            off += 4; // padding between concatenated archives
            continue;
        }
        let field = |i: usize| {
            usize::from_str_radix(std::str::from_utf8(&data[off + 6 + 8 * i..off + 14 + 8 * i]).ok()?, 16).ok()
        };
        let (size, namesize) = (field(6)?, field(11)?);
        let name_start = off + 110;
        let entry = std::str::from_utf8(&data[name_start..name_start + namesize - 1]).ok()?;
        let data_start = (name_start + namesize).div_ceil(4) * 4;
        if entry == name {
            return Some(data[data_start..data_start + size].to_vec());
        }
        off = (data_start + size).div_ceil(4) * 4;
    }
    None
}

/// What the firmware enforced, as every result record of a serial log says
/// it; an error when the records disagree or do not say.
pub fn firmware_in_records(serial: &str) -> Result<Firmware> {
    let docs = serial_documents(serial);
    let records = results(&docs);
    let first = records.first().ok_or("no result records on serial")?;
    let fw = first.host.firmware.clone().ok_or("the records carry no host.firmware")?;
    if records.iter().any(|r| r.host.firmware.as_ref() != Some(&fw) || r.status != Status::Ok) {
        return Err(format!("the records disagree on host.firmware or are not all ok: {fw:?}"));
    }
    Ok(fw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_stalled_before_init_is_tried_once_more_and_counted_apart() {
        let mut tally = Tally::default();
        let mut calls = 0;
        let attempted = attempt("stalls once", || {
            calls += 1;
            if calls == 1 { Err(format!("{}: the guest did not power off", qemu::STALLED)) } else { Ok(()) }
        });
        tally.record("stalls once", attempted);
        assert_eq!((calls, tally.passed, tally.retried.len()), (2, 1, 1));
        let mut calls = 0;
        let attempted = attempt("panics once", || {
            calls += 1;
            let e = format!("no run record on the serial log ({} (see the tail))", qemu::PANICKED_BEFORE_INIT);
            if calls == 1 { Err(e) } else { Ok(()) }
        });
        tally.record("panics once", attempted);
        assert_eq!((calls, tally.passed, tally.retried.len()), (2, 2, 2), "a kernel's panic before /init: once more");
        let mut calls = 0;
        let attempted = attempt("bootmark fails", || {
            calls += 1;
            Err("no run record on the serial log".into())
        });
        tally.record("bootmark fails", attempted);
        assert_eq!(calls, 1, "a bootmark failure is not retried");
        let mut calls = 0;
        let attempted = attempt("stalls twice", || {
            calls += 1;
            Err(format!("{}: again", qemu::STALLED))
        });
        tally.record("stalls twice", attempted);
        assert_eq!((calls, tally.failed.len()), (2, 2));
        assert_eq!(
            tally.finish("t").unwrap_err(),
            format!(
                "t failed: bootmark fails, stalls twice\n  bootmark fails: no run record on the serial log\n  stalls twice: {}: again",
                qemu::STALLED
            )
        );
    }
}
