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

use super::arm64_image::{ARM64_KERNEL, boot, check_arch, check_grub_menu, check_serial_run};
use super::support::{boot_and_check, test_image};
use crate::boot::qemu;
use crate::build::arch::Arch;
use crate::build::image;
use crate::host::fs;
use crate::host::project::Result;
use std::path::Path;

/// The target of these boots.
const DISK: &str = "scratch-sb-two-arch.img";

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
        let args = qemu::Args { arch: Some(arch), secure_boot: true, ..boot(&out, base.join(DISK), &log)? };
        let seconds =
            boot_and_check(&args, package).map_err(|e| format!("the stick under {arch}'s Secure Boot: {e}"))?;
        let serial = String::from_utf8_lossy(&fs::read(&log)?).into_owned();
        check_grub_menu(&serial, arch)?;
        check_arch(&serial, arch, true)?;
        said.push(format!("{arch} {seconds:.1} s"));
    }
    let log = base.join("serial-sb-aarch64-pxe.log");
    let args =
        qemu::Args { arch: Some(Arch::Aarch64), secure_boot: true, pxe: true, ..boot(&out, base.join(DISK), &log)? };
    let booted = qemu::boot(&args).map_err(|e| format!("pxe/ under arm64's Secure Boot: {e}"))?;
    if !booted.serial.contains("NBP filename is shimaa64.efi") {
        return Err(format!("arm64's PXE did not fetch shimaa64.efi\n{}", qemu::tail(&booted.serial, 20)));
    }
    check_serial_run(&booted, "pxe/ under arm64's Secure Boot")?;
    check_arch(&booted.serial, Arch::Aarch64, true)?;
    println!(
        "e2e: Secure Boot on both architectures: {package} and {ARM64_KERNEL} with Debian's signed chain of each \
         (built in {built_s:.1} s): the stick under AAVMF and OVMF with Microsoft's keys, 6 ok records each saying \
         Secure Boot on and lockdown integrity ({}); arm64 over PXE through shimaa64.efi {:.1} s",
        said.join(", "),
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}
