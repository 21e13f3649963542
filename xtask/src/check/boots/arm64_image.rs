//! One image for x86 and arm64 servers, as `cargo xtask image` makes it:
//! Debian's x86_64 kernel (the e2e package) and its arm64 kernel
//! (`linux-image-arm64:arm64@bookworm`) on one stick, with GRUB for each
//! under EFI/BOOT. Booted three ways:
//! - the stick under AAVMF on QEMU's virt machine (Cortex-A72, NVMe
//!   target): GRUB for arm64 lists the arm64 kernel only, and its records
//!   say aarch64 and UEFI;
//! - the same stick under OVMF on the q35 PC: GRUB for x86_64 lists the
//!   x86 kernel only, its records say x86_64;
//! - the image's ISO as the arm64 machine's USB CD with no stick, as a
//!   BMC's virtual media: its records come from serial alone;
//! - its arm64 entry as a step of `bootmark lab` with a `[server.qemu]`
//!   server, which `xtask qemu --entry-label` boots on the virt machine.
//!
//! Each boot's records are checked as every e2e boot's are (ok, the
//! target's filesystem, the queue settings, serial and stick agreeing).

use super::support::{
    boot_and_check, firmware_in_records, results, run_record, serial_documents, test_boot, test_image,
};
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::arch::Arch;
use crate::build::image;
use crate::host::fs;
use crate::host::project::Result;
use bootmark::record::Status;
use std::path::Path;

/// Debian's arm64 kernel, by apt's name for another architecture's package.
pub const ARM64_KERNEL: &str = "linux-image-arm64:arm64@bookworm";
/// The target of these boots.
const DISK: &str = "scratch-two-arch.img";

pub fn test(package: &str, base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let out = image::build(&test_image(vec![package.into(), ARM64_KERNEL.into()], base.join("image-two-arch"), None))?;
    let built_s = started.elapsed().as_secs_f64();
    let mut said = Vec::new();
    for arch in [Arch::Aarch64, Arch::X86_64] {
        let log = base.join(format!("serial-two-arch-{arch}.log"));
        let args = qemu::Args { arch: Some(arch), uefi: true, ..boot(&out, base.join(DISK), &log)? };
        let seconds = boot_and_check(&args, package).map_err(|e| format!("the stick under {arch}'s UEFI: {e}"))?;
        let serial = String::from_utf8_lossy(&fs::read(&log)?).into_owned();
        check_grub_menu(&serial, arch)?;
        check_arch(&serial, arch, false)?;
        said.push(format!("{arch} {seconds:.1} s"));
    }
    let log = base.join("serial-two-arch-cd.log");
    let args =
        qemu::Args { arch: Some(Arch::Aarch64), cdrom: true, no_stick: true, ..boot(&out, base.join(DISK), &log)? };
    let booted = qemu::boot(&args).map_err(|e| format!("the ISO as arm64's CD: {e}"))?;
    check_serial_run(&booted, "the ISO as arm64's CD")?;
    check_arch(&booted.serial, Arch::Aarch64, false)?;
    let lab_started = std::time::Instant::now();
    let manifest = image::manifest::Manifest::read(&out)?;
    let arm64 = manifest.entries.iter().find(|e| e.arch == Arch::Aarch64.name()).ok_or("no arm64 entry")?;
    super::lab_qemu::run(&out, &base.join("lab-qemu-arm64"), &[arm64.label.as_str()])
        .map_err(|e| format!("the arm64 entry in a [server.qemu] lab: {e}"))?;
    let lab_s = lab_started.elapsed().as_secs_f64();
    println!(
        "e2e: arm64 image: {package} and {ARM64_KERNEL} on one stick (built in {built_s:.1} s), each GRUB listing its own: \
         6 ok records under AAVMF and OVMF alike, serial and stick agreeing ({}); the ISO as arm64's USB CD with no stick \
         {:.1} s; its arm64 entry ({}) as a [server.qemu] lab step, ok ({lab_s:.0} s)",
        said.join(", "),
        booted.elapsed.as_secs_f64(),
        arm64.label
    );
    Ok(())
}

/// GRUB's menu, drawn on the console before it says which entry it boots,
/// lists `arch`'s kernels and no other's (the entries' titles end in the
/// kernel's architecture).
pub fn check_grub_menu(serial: &str, arch: Arch) -> Result<()> {
    let (menu, _) = serial.split_once("Booting `").ok_or_else(|| format!("{arch}: GRUB booted no entry"))?;
    let other = if arch == Arch::Aarch64 { Arch::X86_64 } else { Arch::Aarch64 };
    if !menu.contains(&format!("({arch})")) || menu.contains(&format!("({other})")) {
        return Err(format!("{arch}'s GRUB should list {arch} kernels only:\n{}", qemu::tail(menu, 12)));
    }
    Ok(())
}

/// A boot of `image` from a fresh ext3 target `disk`, serial to `log`.
pub fn boot(image: &Path, disk: std::path::PathBuf, log: &Path) -> Result<qemu::Args> {
    scratch_disk(&disk, "ext3", 512)?;
    Ok(test_boot(image.to_path_buf(), disk, log.to_path_buf()))
}

/// A boot whose records come from serial alone (no stick): an ok run of
/// the quick plan's six records.
pub fn check_serial_run(booted: &qemu::Booted, what: &str) -> Result<()> {
    let docs = serial_documents(&booted.serial);
    if !run_record(&docs).is_some_and(|r| r.status == Status::Ok) || results(&docs).len() != 6 {
        return Err(format!("{what}: no ok run of 6 records\n{}", qemu::tail(&booted.serial, 25)));
    }
    Ok(())
}

/// Every record of the boot says `arch` (arm64's the Cortex-A72 too) and
/// UEFI, with Secure Boot on and the kernel locked down (`integrity`, as
/// Debian's kernels lock themselves) or off as `secure_boot` says.
pub fn check_arch(serial: &str, arch: Arch, secure_boot: bool) -> Result<()> {
    let docs = serial_documents(serial);
    for r in results(&docs) {
        let cpu = r.host.cpu_model.as_deref().unwrap_or_default();
        if r.kernel.arch.as_deref() != Some(arch.name())
            || (arch == Arch::Aarch64 && !cpu.starts_with("ARM Cortex-A72"))
        {
            return Err(format!("{}: kernel.arch {:?}, cpu {cpu:?}: not {arch}'s", r.workload.name, r.kernel.arch));
        }
    }
    let fw = firmware_in_records(serial)?;
    let locked = secure_boot.then_some("integrity");
    if fw.boot_mode.as_deref() != Some("uefi")
        || fw.secure_boot != Some(secure_boot)
        || (secure_boot && fw.lockdown.as_deref() != locked)
    {
        return Err(format!(
            "{arch}: the records say {fw:?}, not UEFI with Secure Boot {}",
            if secure_boot { "on and lockdown integrity" } else { "off" }
        ));
    }
    Ok(())
}
