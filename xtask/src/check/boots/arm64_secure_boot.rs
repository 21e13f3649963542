//! Secure Boot on both architectures from one image: `cargo xtask image
//! --secure-boot` with Debian 12's x86_64 and arm64 kernels puts Debian's
//! signed chain of each (shim signed by Microsoft's UEFI CA, GRUB by
//! Debian) on the stick and in pxe/. Booted with Microsoft's keys enrolled
//! and Secure Boot on:
//! - the stick under AAVMF (`AAVMF_CODE.ms.fd`) and under OVMF (its
//!   secboot build), each GRUB listing its own kernel only;
//! - pxe/ over the arm64 machine's network: AAVMF's PXE fetches
//!   `shimaa64.efi`, which loads Debian's signed netboot GRUB.
//!
//! Every boot's records must say UEFI with Secure Boot on and the kernel
//! locked down (`integrity`), as Debian's kernels lock themselves under
//! Secure Boot.

use super::arm64_image::{ARM64_KERNEL, check_grub_menu};
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

pub fn test(package: &str, base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let out = image::build(&image::Args {
        secure_boot: true,
        ..test_image(vec![package.into(), ARM64_KERNEL.into()], base.join("sb-two-arch"), None)
    })?;
    let built_s = started.elapsed().as_secs_f64();
    let mut said = Vec::new();
    for arch in [Arch::Aarch64, Arch::X86_64] {
        let log = base.join(format!("serial-sb-{arch}.log"));
        let args = qemu::Args { arch: Some(arch), secure_boot: true, ..boot(&out, base, &log)? };
        let seconds =
            boot_and_check(&args, package).map_err(|e| format!("the stick under {arch}'s Secure Boot: {e}"))?;
        let serial = String::from_utf8_lossy(&fs::read(&log)?).into_owned();
        check_grub_menu(&serial, arch)?;
        check_secure_boot(&serial, arch)?;
        said.push(format!("{arch} {seconds:.1} s"));
    }
    let log = base.join("serial-sb-aarch64-pxe.log");
    let args = qemu::Args { arch: Some(Arch::Aarch64), secure_boot: true, pxe: true, ..boot(&out, base, &log)? };
    let booted = qemu::boot(&args).map_err(|e| format!("pxe/ under arm64's Secure Boot: {e}"))?;
    if !booted.serial.contains("NBP filename is shimaa64.efi") {
        return Err(format!("arm64's PXE did not fetch shimaa64.efi\n{}", qemu::tail(&booted.serial, 20)));
    }
    let docs = serial_documents(&booted.serial);
    if !run_record(&docs).is_some_and(|r| r.status == Status::Ok) || results(&docs).len() != 6 {
        return Err(format!(
            "pxe/ under arm64's Secure Boot: no ok run of 6 records\n{}",
            qemu::tail(&booted.serial, 25)
        ));
    }
    check_secure_boot(&booted.serial, Arch::Aarch64)?;
    println!(
        "e2e: Secure Boot on both architectures: {package} and {ARM64_KERNEL} with Debian's signed chain of each \
         (built in {built_s:.1} s): the stick under AAVMF and OVMF with Microsoft's keys, 6 ok records each saying \
         Secure Boot on and lockdown integrity ({}); arm64 over PXE through shimaa64.efi {:.1} s",
        said.join(", "),
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}

/// A boot of `image` from a fresh ext3 target, serial to `log`.
fn boot(image: &Path, base: &Path, log: &Path) -> Result<qemu::Args> {
    let disk = base.join("scratch-sb-two-arch.img");
    scratch_disk(&disk, "ext3", 512)?;
    Ok(test_boot(image.to_path_buf(), disk, log.to_path_buf()))
}

/// Every record says `arch`, UEFI, Secure Boot on and an integrity lockdown.
fn check_secure_boot(serial: &str, arch: Arch) -> Result<()> {
    let docs = serial_documents(serial);
    if let Some(r) = results(&docs).into_iter().find(|r| r.kernel.arch.as_deref() != Some(arch.name())) {
        return Err(format!("{}: kernel.arch {:?}, not {arch}", r.workload.name, r.kernel.arch));
    }
    let fw = firmware_in_records(serial)?;
    let said = (fw.boot_mode.as_deref(), fw.secure_boot, fw.lockdown.as_deref());
    if said != (Some("uefi"), Some(true), Some("integrity")) {
        return Err(format!("{arch}: the records say {fw:?}, not UEFI with Secure Boot on and lockdown integrity"));
    }
    Ok(())
}
