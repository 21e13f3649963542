//! Kernels from other Debian releases, as a user takes them: `--kernel-deb
//! linux-image-amd64@trixie` through an apt state of its own (a real
//! download from Debian's archive), and the demo's smaller sibling — two
//! generations (Debian 12's 6.1 and 13's 6.12) on the demo's `dl140`
//! machine, one repetition, booted through the lab's console follower beside
//! the other lane's boots — asserting each step's log holds its boot once,
//! two kernel lines in the table and a verdict that compares them. Then
//! Debian 13's kernel alone in a test image, booted with its target on
//! NVMe: its modules (`.ko.xz` under `/usr/lib/modules`, decompressed on
//! the host) must load by modalias as 6.1's do — nvme for its PCI class,
//! ahci, xhci and usb-storage for the stick, the filesystem's modules
//! before mounting.

use crate::boot::{demo, qemu};
use crate::build::image;
use crate::check::boots::support::{boot_and_check, check_drivers, loaded_modules, test_boot, test_image};
use crate::host::project::Result;
use std::path::Path;

/// Debian 12 and 13's kernels, each from its own suite.
const BOOKWORM: &str = "linux-image-amd64@bookworm";
const TRIXIE: &str = "linux-image-amd64@trixie";

/// The demo's sibling: two generations, one repetition each.
pub fn two_generations(base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let out = base.join("generations");
    let compared = demo::compare(&demo::Args {
        kernels: vec![BOOKWORM.into(), TRIXIE.into()],
        repeat: Some(1),
        out: out.clone(),
        // One server, beside the other lane's boots; the confirmation is the bisect ladder's and the demo's.
        servers: 1,
        no_confirm: true,
        ..crate::host::project::flags_given::<demo::Args>(&[])
    })?;
    if !compared.problems.is_empty() {
        return Err(compared.problems.join("\n"));
    }
    one_boot_each(&compared.logs)?;
    let r = &compared.report;
    let mut kernels: Vec<&str> = r.rows.iter().filter_map(|row| row.key.first().map(String::as_str)).collect();
    kernels.dedup();
    if r.by.first().map(String::as_str) != Some("kernel") || kernels.len() != 2 {
        return Err(format!("expected the table's rows under two kernels, got {:?} by {:?}", kernels, r.by));
    }
    if !kernels[0].starts_with("6.1.") || !kernels[1].starts_with("6.12.") {
        return Err(format!("expected 6.1 then 6.12, got {kernels:?}"));
    }
    let verdict = r.verdict.join("\n");
    if r.verdict.len() != 1 || !verdict.starts_with(&format!("{} against {}", kernels[1], kernels[0])) {
        return Err(format!("the verdict does not compare 6.12 with 6.1:\n{verdict}"));
    }
    // One repetition: no claim of significance can be made, and none may be.
    if !verdict.contains("one run each: not tested") || verdict.contains("(significant") {
        return Err(format!("the verdict claims more than one run each shows:\n{verdict}"));
    }
    check_request_size_cause(r, &verdict)?;
    if r.constant.iter().all(|(d, _)| d != "fs") {
        return Err(format!("the filesystem, the same in every row, is not said once: {:?}", r.constant));
    }
    // Debian 13's kernel drove the stick and the SATA target with its own decompressed modules.
    let trixie_log = compared.logs.get(1).ok_or("no second boot log")?;
    check_drivers(&loaded_modules(trixie_log), &["ahci", "xhci_pci", "usb_storage"], &["nvme", "sym53c8xx"])?;
    println!(
        "e2e: two generations: {} and {} from their own suites on --machine dl140, one run each; verdict: {verdict} ({:.0} s)",
        kernels[0],
        kernels[1],
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Each lab step's console log holds its one boot, once: one kernel
/// banner, one run record, no record twice (the demo once logged a boot
/// twice when its console file was rewritten under the follower).
fn one_boot_each(logs: &[std::path::PathBuf]) -> Result<()> {
    for log in logs {
        let c = bootmark::collect::collect(std::slice::from_ref(log));
        let runs = c.runs().count();
        if c.boots.len() != 1 || runs != 1 || c.duplicates != 0 {
            return Err(format!(
                "{}: {} kernel banners, {runs} run records, {} records seen twice: a step's log must hold its boot once",
                log.display(),
                c.boots.len(),
                c.duplicates
            ));
        }
    }
    Ok(())
}

/// Debian 13's kernel in a test image, its target on NVMe.
/// The demo's 6.12 case, from the records: the queue's max_sectors_kb is
/// 1280 on 6.12 and 128 on 6.1 (an AHCI disk), and the block tracepoints
/// time the reads in the disk: 6.12's disk holds them far longer, behind its
/// larger writes (18.8 ms against 1.9 at the median in the demo). A verdict
/// that names the request size cites both limits.
fn check_request_size_cause(r: &bootmark::report::Report, verdict: &str) -> Result<()> {
    let seqwrite = |kernel: &str| {
        r.rows
            .iter()
            .find(|row| row.workload == "seqwrite" && row.key.first().is_some_and(|k| k.starts_with(kernel)))
            .ok_or_else(|| format!("no seqwrite row for {kernel}"))
    };
    let (old, new) = (seqwrite("6.1.")?, seqwrite("6.12.")?);
    if old.max_sectors_kb != ["128"] || new.max_sectors_kb != ["1280"] {
        return Err(format!(
            "max_sectors_kb: 6.1 {:?}, 6.12 {:?} (expected 128 and 1280 on the dl140's AHCI disk)",
            old.max_sectors_kb, new.max_sectors_kb
        ));
    }
    let device = |row: &bootmark::report::Row| row.device_read_p50_ms.as_ref().map(|s| s.median);
    match (device(old), device(new)) {
        (Some(o), Some(n)) if n >= 2.0 * o => {}
        other => return Err(format!("the disk's read times (6.1, 6.12) from the block tracepoints: {other:?}")),
    }
    if verdict.contains("write requests were") && !verdict.contains("max_sectors_kb: 1280 against 128") {
        return Err(format!("the request-size cause does not cite the queues' limits:\n{verdict}"));
    }
    Ok(())
}

pub fn trixie_on_nvme(base: &Path) -> Result<()> {
    let dir = base.join("trixie");
    let out = image::build(&test_image(vec![TRIXIE.into()], dir.join("image"), None))?;
    let manifest = crate::host::fs::read_to_string(out.join("manifest.json"))?;
    if !manifest.contains("\"suite\": \"trixie\"") || !manifest.contains("\"deb_sha256\"") {
        return Err(format!("{}: the manifest does not record the suite and the .deb's SHA-256", out.display()));
    }
    let disk = dir.join("scratch.img");
    crate::boot::disks::scratch_disk(&disk, "ext3", 512)?;
    let log = dir.join("serial-nvme.log");
    let args = qemu::Args { disk_buses: vec!["nvme".into()], ..test_boot(out, disk, log.clone()) };
    let seconds = boot_and_check(&args, TRIXIE)?;
    check_drivers(
        &loaded_modules(&log),
        &["nvme", "nvme_core", "xhci_pci", "usb_storage"],
        &["sym53c8xx", "virtio_blk"],
    )?;
    println!(
        "e2e: trixie on NVMe: {TRIXIE}'s 6.12 loaded nvme, xhci and usb-storage by modalias; 6 records ({seconds:.1} s)"
    );
    Ok(())
}
