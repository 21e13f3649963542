//! Secure Boot left on, as most servers ship: OVMF's secboot firmware with
//! Microsoft's keys enrolled. An image built with --secure-boot boots
//! through shim and Debian's signed GRUB to records that say Secure Boot
//! was on and the kernel locked down, from the stick and over PXE; the same
//! image with Secure Boot off says so too. The firmware really enforces it: the unsigned image stops
//! before any kernel. And the builder refuses, before writing anything, a
//! kernel whose signature was removed.

use super::support::firmware_in_records;
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image::{self, manifest::Manifest};
use crate::check::boots::support::{boot_and_check, test_boot, test_image};
use crate::host::process::{cmd, shell};
use crate::host::project::Result;
use bootmark::record::Firmware;
use std::path::{Path, PathBuf};

/// The image every Secure Boot and ISO boot uses: Debian's kernel,
/// --secure-boot. /init waits 10 s instead of 30 for its disks: the ISO
/// boots without a stick wait that long for it, and QEMU's disks are there
/// within a second or two of their drivers.
pub fn build_image(package: &str, base: &Path) -> Result<PathBuf> {
    image::build(&image::Args {
        secure_boot: true,
        append: "bootmark.device-wait=10".into(),
        ..test_image(vec![package.to_string()], base.join("sb-image"), None)
    })
}

pub fn test(sb_image: &Path, unsigned_image: &Path, base: &Path, package: &str) -> Result<()> {
    let signers = Manifest::read(sb_image)?.secure_boot.map(|s| s.kernel_signers).unwrap_or_default();
    if !signers.get("k0").is_some_and(|s| s.iter().any(|n| n == "Debian Secure Boot CA")) {
        return Err(format!("the manifest does not name Debian's CA among the kernel's signers: {signers:?}"));
    }
    let on = Firmware { boot_mode: Some("uefi".into()), secure_boot: Some(true), lockdown: Some("integrity".into()) };
    let off = Firmware { boot_mode: Some("uefi".into()), secure_boot: Some(false), lockdown: Some("none".into()) };
    let mut seconds = Vec::new();
    for (name, secure_boot, pxe, want) in
        [("on", true, false, &on), ("off", false, false, &off), ("on over PXE", true, true, &on)]
    {
        let disk = base.join("scratch.img");
        scratch_disk(&disk, "ext3", 512)?;
        let log = base.join(format!("serial-secure-boot-{}.log", name.replace(' ', "-")));
        let args = qemu::Args { uefi: true, secure_boot, pxe, ..test_boot(sb_image.to_path_buf(), disk, log.clone()) };
        seconds.push(boot_and_check(&args, package).map_err(|e| format!("Secure Boot {name}: {e}"))?);
        let serial = qemu::console_text(&log)?;
        let fw = firmware_in_records(&serial)?;
        if &fw != want {
            return Err(format!("Secure Boot {name}: the records say {fw:?}, expected {want:?}"));
        }
        if secure_boot && !serial.contains("Kernel is locked down from EFI Secure Boot") {
            return Err("Secure Boot on: the kernel did not say it was locked down".into());
        }
    }
    let refused = refused_by_firmware(unsigned_image, base)?;
    println!(
        "e2e: Secure Boot: shim + Debian's signed GRUB + {package}: on ({:.1} s) records say secure_boot true, lockdown integrity; off ({:.1} s) false, none; on over PXE, shim and the signed netboot GRUB from TFTP ({:.1} s); the unsigned image stops in the firmware, which says its loader was denied ({refused:.1} s)",
        seconds[0], seconds[1], seconds[2]
    );
    Ok(())
}

/// The image without --secure-boot under Secure Boot: the firmware refuses
/// our unsigned GRUB, so no kernel ever starts (what makes the boot above
/// a proof, not a formality). The firmware must say so itself (OVMF's boot
/// manager: "Access Denied" for the stick's loader, then no bootable
/// option left); the machine is stopped then, not after a timeout, and a
/// machine that says nothing within 45 s is a failure, not a refusal.
fn refused_by_firmware(unsigned_image: &Path, base: &Path) -> Result<f64> {
    const DENIED: &str = "Access Denied";
    const NOTHING_LEFT: &str = "No bootable option or device was found";
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 64)?;
    let log = base.join("serial-secure-boot-unsigned.log");
    let args =
        qemu::Args { uefi: true, secure_boot: true, ..test_boot(unsigned_image.to_path_buf(), disk, log.clone()) };
    let work = base.join("secure-boot-unsigned");
    crate::host::fs::create_dir_all(&work)?;
    let mut machine = qemu::spawn(&args, &log, &work)?;
    let started = std::time::Instant::now();
    let serial = loop {
        let serial = qemu::console_text(&log).unwrap_or_default();
        let exited = machine.try_wait().map_err(|e| format!("waiting for QEMU: {e}"))?.is_some();
        if (serial.contains(DENIED) && serial.contains(NOTHING_LEFT))
            || serial.contains("Linux version")
            || exited
            || started.elapsed() > std::time::Duration::from_secs(45)
        {
            break serial;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    let _ = machine.kill();
    let _ = machine.wait();
    if serial.contains("Linux version") {
        return Err("a kernel started from the unsigned image under Secure Boot".into());
    }
    if !serial.contains(DENIED) {
        return Err(format!(
            "the unsigned image under Secure Boot: the firmware did not say it denied the loader (\"{DENIED}\") within {:.0} s:\n{}",
            started.elapsed().as_secs_f64(),
            qemu::tail(&serial, 10)
        ));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Debian's kernel with its signature removed (`sbattach --remove`), in a
/// /boot tree, given to `image --secure-boot`: refused before anything is
/// built, naming the file and how to sign it; no output left behind.
pub fn unsigned_kernel_refused(package: &str, base: &Path) -> Result<()> {
    let deb = image::deb::fetch_deb(package, &crate::host::project::project_root().join("target/cache/debs"))?;
    let k = image::deb::unpack_deb(&deb, &base.join("unsigned-kernel"))?;
    let (sh, vmlinuz) = (shell()?, &k.vmlinuz);
    crate::host::process::run(cmd!(sh, "sbattach --remove {vmlinuz}"))?;
    let out = base.join("unsigned-sb-image");
    let args = image::Args {
        kernels: vec![k.vmlinuz.clone()],
        secure_boot: true,
        ..test_image(Vec::new(), out.clone(), None)
    };
    let err = match image::build(&args) {
        Ok(_) => return Err("an image with an unsigned kernel was built with --secure-boot".into()),
        Err(e) => e,
    };
    for want in [format!("{} is not signed", k.vmlinuz.display()), "sbsign --key".into(), "mokutil --import".into()] {
        if !err.contains(&want) {
            return Err(format!("the refusal does not say {want:?}: {err}"));
        }
    }
    if out.exists() || out.with_extension("tmp").exists() {
        return Err(format!("the refused build left {} behind", out.display()));
    }
    println!(
        "e2e: Secure Boot: a kernel without its signature is refused before anything is written, with how to sign it"
    );
    Ok(())
}
