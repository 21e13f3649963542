//! The end-to-end boot test: a real Debian kernel (apt-get download), the
//! image builder, syslinux on an xHCI USB stick, an AHCI SATA scratch disk,
//! QEMU (TCG) — and the records read back from the serial log and the stick.

use crate::image::{self, usb};
use crate::qemu;
use crate::{Result, project_root};
use bootmark::collect::Document;
use bootmark::framing::{self, Assembler, Fed};
use bootmark::record::{Record, RunRecord, Status};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The exact package behind a Debian meta package (linux-image-amd64 → linux-image-6.1.0-57-amd64).
pub fn resolve_meta(meta: &str) -> Result<String> {
    let out = image::tools::run(Command::new("apt-cache").args(["depends", meta]))?;
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|d| d.starts_with("linux-image-"))
        .map(String::from)
        .ok_or_else(|| format!("apt-cache depends {meta} names no linux-image package: run apt-get update?"))
}

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
    if let Some(p) = collected.problems.iter().find(|p| !p.why.starts_with(bootmark::collect::NOT_RUN)) {
        return Err(format!("the stick's journal: {}: {}", p.file, p.why));
    }
    Ok(collected.documents)
}

/// A scratch SATA disk with a filesystem labelled SCRATCH.
pub fn scratch_disk(path: &Path, fs: &str, mib: u64) -> Result<()> {
    let f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    f.set_len(mib << 20).map_err(|e| e.to_string())?;
    drop(f);
    let mkfs = format!("mkfs.{fs}");
    let args: Vec<&str> = match fs {
        "xfs" => vec!["-q", "-f", "-L", "SCRATCH"],
        "reiserfs" => vec!["-q", "-f", "-f", "-l", "SCRATCH"],
        _ => vec!["-q", "-F", "-L", "SCRATCH"],
    };
    image::tools::run(Command::new(&mkfs).args(args).arg(path)).map(|_| ())
}

/// The image every boot test builds: the quick plan, target LABEL=SCRATCH.
pub fn test_image(kernel_debs: Vec<String>, out: std::path::PathBuf, sequence: Option<u32>) -> image::Args {
    image::Args {
        kernel_debs,
        out,
        plan: "quick".into(),
        target: Some("LABEL=SCRATCH".into()),
        serial: "ttyS0,115200".into(),
        sequence,
        install_deps: crate::deps::can_install(),
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
        install_deps: crate::deps::can_install(),
        ..qemu::Args::default()
    }
}

pub fn harness() -> Result<()> {
    let started = std::time::Instant::now();
    let package = resolve_meta("linux-image-amd64")?;
    let base = project_root().join("target/e2e");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).map_err(|e| e.to_string())?;
    let out = image::build(&test_image(vec![package.clone()], base.join("image"), None))?;
    check_module_closure(&out)?;
    check_config_found(&out)?;
    // Every boot runs even when one fails: a failure is reported by name at the end.
    let mut tally = Tally::default();
    for (name, uefi, pxe) in [("BIOS USB", false, false), ("UEFI USB", true, false), ("BIOS PXE", false, true)] {
        let boot = || -> Result<()> {
            let disk = base.join("scratch.img");
            scratch_disk(&disk, "ext3", 512)?;
            let log = base.join(format!("serial-{}.log", name.replace(' ', "-")));
            let boot_args = qemu::Args { uefi, pxe, ..test_boot(out.clone(), disk, log.clone()) };
            let seconds = boot_and_check(&boot_args, &package)?;
            let loaded = loaded_modules(&log);
            check_drivers(
                &loaded,
                &["ahci", "xhci_pci", "usb_storage"],
                &["sym53c8xx", "ehci_pci", "virtio_blk", "nvme"],
            )?;
            println!(
                "e2e: {name}: {package} booted in QEMU, 6 records + run record on serial and stick, identical ({seconds:.1} s)"
            );
            Ok(())
        };
        tally.add(name, boot());
    }
    tally.add("NVMe", crate::check::boots::nvme::test(&out, &base, &package));
    // Today's servers: Secure Boot on and off, the ISO as a virtual CD.
    match crate::check::boots::secure_boot::build_image(&package, &base) {
        Ok(sb) => {
            tally.add("Secure Boot", crate::check::boots::secure_boot::test(&sb, &out, &base, &package));
            tally.add("ISO", crate::check::boots::iso::test(&sb, &out, &base, &package));
        }
        Err(e) => tally.add("Secure Boot image", Err(e)),
    }
    tally.add("unsigned kernel refused", crate::check::boots::secure_boot::unsigned_kernel_refused(&package, &base));
    tally.add("old machine", old_machine_test(&out, &base, &package));
    tally.add("kernel RPM", crate::rpm_boot::test(&out, &package, &base));
    tally.add("sequence", sequence_test(&package, &base));
    tally.add("sweep", crate::sweep_boot::test(&package, &base));
    tally.add("i686", i686_test(&base));
    tally.add("failing disk", crate::failing_disk::test(&out, &base));
    tally.add("watch", crate::watch_boot::test(&out, &base));
    tally.add("LAVA", crate::lava_boot::test(&out, &package, &base));
    tally.add("stick write log", crate::write_log::test(&out, &base));
    // 14 kills: every record line once and 7 spread times. The write-log
    // replay above checks every write prefix, so more kills here add CI time
    // (19 s each), not coverage; `cargo xtask resets --kills 22` runs more.
    tally.add("reset campaign", crate::resets::campaign(&out, &base, crate::resets::CI_KILLS));
    println!("e2e: total {:.1} s", started.elapsed().as_secs_f64());
    tally.finish("e2e boot test")
}

/// Passed and failed test cases, by name.
#[derive(Default)]
pub struct Tally {
    passed: usize,
    failed: Vec<String>,
}

impl Tally {
    pub fn add(&mut self, name: &str, outcome: Result<()>) {
        match outcome {
            Ok(()) => self.passed += 1,
            Err(e) => {
                println!("e2e: FAIL {name}: {e}");
                self.failed.push(name.to_string());
            }
        }
    }

    pub fn finish(self, what: &str) -> Result<()> {
        println!("{what}: {} passed, {} failed", self.passed, self.failed.len());
        if self.failed.is_empty() { Ok(()) } else { Err(format!("{what} failed: {}", self.failed.join(", "))) }
    }
}

/// Boot, then check the serial log and the stick hold the same six ok records
/// and an ok run record. Returns the boot's duration.
pub fn boot_and_check(args: &qemu::Args, package: &str) -> Result<f64> {
    boot_and_check_on(args, package, "ext3")
}

/// As `boot_and_check`, with the target's filesystem `fs` when the records are made.
pub fn boot_and_check_on(args: &qemu::Args, package: &str, fs: &str) -> Result<f64> {
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
    if records.len() != 6 || records.iter().any(|r| r.status != Status::Ok) {
        return Err(format!("expected 6 ok records, got {}\n{}", records.len(), tail()));
    }
    if records
        .iter()
        .any(|r| r.storage.fs.as_deref() != Some(fs) || !r.kernel.release.as_deref().unwrap_or("").starts_with("6."))
    {
        return Err(format!("records do not show {package} and the {fs} scratch disk"));
    }
    if stick != serial {
        return Err(format!(
            "the stick got {} new documents that differ from the {} on serial",
            stick.len(),
            serial.len()
        ));
    }
    Ok(booted.elapsed.as_secs_f64())
}

/// The modules /init loaded in a boot, from the run record on its serial log.
pub fn loaded_modules(serial_log: &Path) -> Vec<String> {
    let serial = serial_documents(&std::fs::read_to_string(serial_log).unwrap_or_default());
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

/// `--machine old`: the stick on EHCI and the target on an LSI 53C895A SCSI
/// HBA (sym53c8xx), the hardware a 2.6-era kernel knows. Debian's current
/// kernel has no old IDE drivers (removed in 5.14), so the `--disk-bus ide`
/// path can only be exercised by a real old kernel, not here.
fn old_machine_test(image: &Path, base: &Path, package: &str) -> Result<()> {
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let args =
        qemu::Args { machine: "old".into(), ..test_boot(image.to_path_buf(), disk, base.join("serial-old.log")) };
    let seconds = boot_and_check(&args, package).map_err(|e| format!("old machine boot: {e}"))?;
    let serial = std::fs::read_to_string(base.join("serial-old.log")).unwrap_or_default();
    if !serial.contains("sym0: ") || !serial.contains("EHCI Host Controller") {
        return Err("the old machine's boot does not show the sym53c8xx and EHCI drivers at work".into());
    }
    let loaded = loaded_modules(&base.join("serial-old.log"));
    check_drivers(&loaded, &["sym53c8xx", "ehci_pci", "sd_mod"], &["ahci", "xhci_pci", "virtio_blk"])
        .map_err(|e| format!("old machine boot: {e}"))?;
    println!(
        "e2e: old machine: {package} with the stick on EHCI and the target on SCSI (sym53c8xx): 6 records on serial and stick ({seconds:.1} s)"
    );
    Ok(())
}

/// Debian's own config was found in the package, passed the kernel check
/// and is named in the manifest.
fn check_config_found(out: &Path) -> Result<()> {
    let m = image::manifest::Manifest::read(out)?;
    let config = m.entries.first().and_then(|e| e.kernel_config.as_deref()).unwrap_or("");
    if !config.starts_with("config-6.") {
        return Err(format!("the manifest names no kernel config for Debian's kernel: {:?}", m.entries.first()));
    }
    Ok(())
}

/// The modules.json of an image's first entry (the image builder's output directory).
pub fn module_set(out: &Path) -> Result<bootmark::contract::modules::ModuleSet> {
    let initrd = std::fs::read(out.join("pxe/boot/k0/initrd.gz")).map_err(|e| e.to_string())?;
    let json = file_in_initramfs(&initrd, "etc/bootmark/modules.json")?;
    serde_json::from_slice(&json).map_err(|e| format!("etc/bootmark/modules.json: {e}"))
}

/// The module set inside the initramfs has the soft dependencies before
/// their users, and says which drivers wait for their device.
fn check_module_closure(out: &Path) -> Result<()> {
    use bootmark::contract::modules::When;
    let set = module_set(out)?;
    let names: Vec<&str> = set.modules.iter().map(|m| m.name.as_str()).collect();
    let pos = |n: &str| names.iter().position(|x| *x == n).ok_or(format!("{n} missing from the module set: {names:?}"));
    // ext4 softdep: pre: crc32c (alias of crc32c_generic); crc-t10dif softdep: crct10dif.
    if pos("crc32c_generic")? > pos("ext4")? || pos("crct10dif_generic")? > pos("crc_t10dif")? {
        return Err("soft dependencies are not loaded before their users".into());
    }
    let when = |n: &str| pos(n).map(|i| set.modules[i].when);
    for (n, w) in [("ahci", When::Device), ("xhci_pci", When::Device), ("virtio_blk", When::Device)]
        .into_iter()
        .chain([("sd_mod", When::Always), ("uas", When::Always), ("nls_cp437", When::Always)])
        // uas needs usb_storage on current kernels; ext4 provides ext3 too.
        .chain([("usb_storage", When::Needed), ("libata", When::Needed), ("scsi_mod", When::Needed)])
        .chain([("vfat", When::Filesystem), ("ext4", When::Filesystem)])
    {
        if when(n)? != w {
            return Err(format!("{n} is loaded {:?}, expected {w:?}", when(n)?));
        }
    }
    Ok(())
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

/// An unattended sequence: two entries, twice, with the first step marked as
/// attempted as if its boot had hung. One QEMU run with reboots allowed must
/// give up on that step, run the other three (rebooting between them into
/// the right entry), restore the menu and power off.
fn sequence_test(package: &str, base: &Path) -> Result<()> {
    let out =
        image::build(&test_image(vec![package.to_string(), package.to_string()], base.join("seq-image"), Some(2)))?;
    let img = out.join("usb.img");
    let seq_on_stick = |img: &Path| -> Result<bootmark::contract::sequence::Sequence> {
        let text = image::tools::run(Command::new("mtype").env("MTOOLS_SKIP_CHECK", "1").args([
            "-i",
            &usb::image_arg(img),
            "::bootmark/sequence.json",
        ]))?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    };
    let mut seq = seq_on_stick(&img)?;
    if seq.steps.iter().map(|s| s.entry.as_str()).collect::<Vec<_>>() != ["k0", "k1", "k0", "k1"] {
        return Err(format!("unexpected steps {:?}", seq.steps));
    }
    seq.states[0] = bootmark::contract::sequence::State::Attempted;
    let edited = base.join("sequence.json");
    std::fs::write(&edited, serde_json::to_string(&seq).unwrap()).map_err(|e| e.to_string())?;
    image::tools::run(
        Command::new("mcopy")
            .env("MTOOLS_SKIP_CHECK", "1")
            .args(["-o", "-i", &usb::image_arg(&img)])
            .arg(&edited)
            .arg("::bootmark/sequence.json"),
    )?;
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let booted = qemu::boot(&qemu::Args {
        timeout: 180,
        sequence: true,
        install_deps: false,
        ..test_boot(out.clone(), disk, base.join("serial-sequence.log"))
    })?;
    let docs = serial_documents(&booted.serial);
    let runs: Vec<&RunRecord> = docs.iter().filter_map(Document::run).collect();
    let records = results(&docs).len();
    let seq = seq_on_stick(&img)?;
    use bootmark::contract::sequence::State::{Done, Failed};
    if seq.states != [Failed, Done, Done, Done] || !seq.finished() {
        return Err(format!("sequence states on the stick: {:?}\n{}", seq.states, qemu::tail(&booted.serial, 30)));
    }
    if runs.len() != 4 || records != 18 {
        return Err(format!("expected 4 boots and 18 records, got {} boots and {records} records", runs.len()));
    }
    let syslinux = image::tools::run(Command::new("mtype").env("MTOOLS_SKIP_CHECK", "1").args([
        "-i",
        &usb::image_arg(&img),
        "::syslinux.cfg",
    ]))?;
    if !syslinux.contains("DEFAULT k0") {
        return Err("the boot menu default was not restored".into());
    }
    println!(
        "e2e: sequence: 4 boots by one `qemu --sequence` ({:.1} s): hung step 1 marked failed, steps 2–4 done with 18 records, menu restored",
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}

/// A 32-bit machine: Debian's i386 686 kernel, the i686 static /init,
/// qemu-system-i386. Needs the i386 architecture in dpkg (.ci/run adds it).
pub fn i686_test(base: &Path) -> Result<()> {
    let package = resolve_meta("linux-image-686:i386").or_else(|_| resolve_meta("linux-image-686")).map_err(|e| {
        format!("{e}\nthe i686 test needs Debian's i386 packages: dpkg --add-architecture i386 && apt-get update")
    })?;
    let package = if package.contains(':') { package } else { format!("{package}:i386") };
    // The target is formatted in this boot as reiserfs (SLES 9's filesystem),
    // by the image's static i686 mkreiserfs, and mounted with the module
    // loaded for it.
    let image_args = image::Args {
        mkfs: vec!["reiserfs".into()],
        append: "bootmark.format=reiserfs bootmark.format-confirm=LABEL=SCRATCH".into(),
        ..test_image(vec![package.clone()], base.join("image686"), None)
    };
    let out = image::build(&image_args)?;
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let log = base.join("serial-i686.log");
    let args = test_boot(out, disk, log.clone());
    let seconds = boot_and_check_on(&args, &package, "reiserfs")?;
    let serial = serial_documents(&std::fs::read_to_string(&log).unwrap_or_default());
    let run = run_record(&serial).ok_or("no run record")?;
    let mkfs = fact(run, "target.mkfs");
    // It names itself after argv[0]: "mkfs.reiserfs 3.6.27".
    let pinned = format!("mkfs.reiserfs {}", image::static_mkfs::REISERFSPROGS.version);
    if mkfs["program"] != "/sbin/mkfs.reiserfs" || mkfs["version"] != pinned.as_str() {
        return Err(format!("i686 boot: the target was not formatted by the static mkreiserfs: {mkfs}"));
    }
    println!(
        "e2e: i686: {package} on qemu-system-i386 with the i686 /init, target formatted as reiserfs by the static i686 mkreiserfs: 6 records on serial and stick ({seconds:.1} s)"
    );
    Ok(())
}
