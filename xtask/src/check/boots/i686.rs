//! A 32-bit machine: Debian's 686 kernel and the i686 /init, running the
//! quick plan, then the seed's program (`--include`, built static for
//! i686) as a `command` workload and the image's static i686 fio (`--fio`)
//! — the programs a user puts into an image, booted on i686 as on x86_64
//! and arm64.

use super::command::{check_fio_record, check_program_record};
use super::support::*;
use crate::boot::disks::scratch_disk;
use crate::build::arch::Arch;
use crate::build::image;
use crate::host::apt::resolve_meta;
use crate::host::fs;
use crate::host::project::Result;
use std::path::Path;

/// The quick plan's workloads, then `check command`'s seedwrite and fio job.
fn plan() -> Result<String> {
    let quick = bootmark::plan::builtin().find(|(n, _)| *n == "quick").ok_or("no quick plan")?.1;
    let quick: serde_json::Value = serde_json::from_str(quick).map_err(|e| format!("the quick plan: {e}"))?;
    let command: serde_json::Value = serde_json::from_str(super::command::PLAN).map_err(|e| e.to_string())?;
    let mut plan = quick.clone();
    plan["name"] = "i686-check".into();
    plan["description"] = "cargo xtask check i686: the quick plan, seedwrite as a command workload, a fio job".into();
    let workloads = plan["workloads"].as_array_mut().ok_or("the quick plan has no workloads")?;
    workloads.push(command["workloads"][0].clone());
    workloads.push(command["workloads"][4].clone());
    Ok(plan.to_string())
}

/// A 32-bit machine: Debian's i386 686 kernel, the i686 static /init,
/// qemu-system-i386. Needs the i386 architecture in dpkg (.ci/run adds it).
pub fn test(base: &Path) -> Result<()> {
    let package = resolve_meta("linux-image-686:i386").or_else(|_| resolve_meta("linux-image-686")).map_err(|e| {
        format!("{e}\nthe i686 test needs Debian's i386 packages: dpkg --add-architecture i386 && apt-get update")
    })?;
    let package = if package.contains(':') { package } else { format!("{package}:i386") };
    // The target is formatted in this boot as reiserfs (SLES 9's filesystem),
    // by the image's static i686 mkreiserfs, and mounted with the module
    // loaded for it.
    let program = crate::build::program::build("seedwrite", Arch::I686, crate::host::deps::can_install())?;
    let plan_file = base.join("i686-check.json");
    fs::write(&plan_file, plan()?)?;
    let image_args = image::Args {
        mkfs: vec!["reiserfs".into()],
        append: "bootmark.format=reiserfs bootmark.format-confirm=LABEL=SCRATCH".into(),
        plan: plan_file.display().to_string(),
        includes: vec![program.display().to_string()],
        fio: true,
        ..test_image(vec![package.clone()], base.join("image686"), None)
    };
    let out = image::build(&image_args)?;
    let disk = base.join("scratch-i686.img");
    scratch_disk(&disk, "ext3", 512)?;
    let log = base.join("serial-i686.log");
    let args = test_boot(out, disk, log.clone());
    let (seconds, records) = boot_and_check_on(&args, &package, "reiserfs", QUICK_RECORDS + 2)?;
    let said = check_program_record(&records[QUICK_RECORDS], &fs::sha256_file(&program)?)?;
    let (reader_p99, _) = check_fio_record(&records[QUICK_RECORDS + 1])?;
    if let Some(r) = records.iter().find(|r| r.kernel.arch.as_deref() != Some("i686")) {
        return Err(format!("{}'s record says kernel.arch {:?}, not i686", r.workload.name, r.kernel.arch));
    }
    let serial = serial_documents(&crate::boot::qemu::console_text(&log).unwrap_or_default());
    let run = run_record(&serial).ok_or("no run record")?;
    let mkfs = fact(run, "target.mkfs");
    // It names itself after argv[0]: "mkfs.reiserfs 3.6.27".
    let pinned = format!("mkfs.reiserfs {}", image::static_mkfs::REISERFSPROGS.version);
    if mkfs["program"] != "/sbin/mkfs.reiserfs" || mkfs["version"] != pinned.as_str() {
        return Err(format!("i686 boot: the target was not formatted by the static mkreiserfs: {mkfs}"));
    }
    println!(
        "e2e: i686: {package} on qemu-system-i386 with the i686 /init, target formatted as reiserfs by the static i686 mkreiserfs: the quick plan, seedwrite (\"{said}\") and fio (reader p99 {reader_p99:.1} ms), static for i686, 8 records on serial and stick ({seconds:.1} s)"
    );
    Ok(())
}
