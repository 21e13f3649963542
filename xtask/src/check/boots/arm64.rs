//! The aarch64 /init as PID 1 on Debian's arm64 kernel: `linux-image-arm64`
//! from bookworm (an apt state of its own for arm64), its modules resolved
//! from image/modules/*.list as for an x86 image, booted by
//! qemu-system-aarch64 (TCG, the `virt` machine, a Cortex-A72) straight
//! from the kernel file with an NVMe target and a USB stick on xHCI. The
//! records on serial and on the stick must agree, each ok and saying what
//! ran it: arm64's kernel, the CPU by its MIDR, a device tree and no UEFI.
//!
//! The boot without firmware, as U-Boot and QEMU's direct kernel boot
//! start arm64 kernels: the /init against an arm64 kernel's own answers
//! (which qemu-user, `check arm64-init`, cannot give) with a device tree.
//! The image's own boots, GRUB under AAVMF, are `check arm64-image` and
//! `check arm64-secure-boot`.

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::arch::Arch;
use crate::build::image::sources::Kernel;
use crate::build::image::{deb, initramfs};
use crate::build::kernel::{arm64_image, config};
use crate::build::static_binary;
use crate::check::boots::support::{results, run_record, serial_documents, stick_documents};
use crate::host::apt_suite::{Archive, Suite};
use crate::host::fs;
use crate::host::process::{cmd, run, shell};
use crate::host::project::{Result, project_root};
use crate::host::tools;
use bootmark::record::Status;
use std::path::Path;

/// Debian's arm64 kernel, from the suite the x86 e2e image's kernel comes from.
const PACKAGE: &str = "linux-image-arm64";
const SUITE: &str = "bookworm";

pub fn test(base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    // qemu-system-aarch64 is one of the tests' tools (host/deps.rs).
    tools::ensure(&[("qemu-system-aarch64", "qemu-system-arm")], crate::host::deps::can_install(), "sudo")?;
    let dir = base.join("arm64");
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let kernel = debian_kernel(&dir)?;
    let initrd = dir.join("initrd.gz");
    let (modules, sizes) = write_initramfs(&kernel, &initrd)?;
    let disk = dir.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let stick = dir.join("stick.img");
    blank_stick(&stick)?;
    let log = dir.join("serial.log");
    let booted = std::time::Instant::now();
    qemu::run_to_power_off("qemu-system-aarch64", argv(&kernel.vmlinuz, &initrd, &disk, &stick, &log), &log, 600)?;
    let boot_s = booted.elapsed().as_secs_f64();
    let serial = String::from_utf8_lossy(&fs::read(&log)?).into_owned();
    let checked = check_documents(&serial, &stick, &kernel.release)?;
    println!(
        "e2e: arm64: {} ({PACKAGE}@{SUITE}) under qemu-system-aarch64, kernel and initramfs given to QEMU ({sizes}, {modules} modules): {checked}; boot {boot_s:.1} s, in all {:.1} s",
        kernel.release,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The kernel package downloaded (or cached) and unpacked, its Image read.
fn debian_kernel(dir: &Path) -> Result<Kernel> {
    let cache = project_root().join("target/cache/apt");
    let got = Suite::arm64(SUITE, Archive::debian(), &cache)?.download(PACKAGE)?;
    let k = deb::unpack_deb(&got.deb, &dir.join("deb"))?;
    if k.arch != Arch::Aarch64 {
        return Err(format!("{} is for {}, not arm64", got.package, k.arch));
    }
    let image = arm64_image::parse_arm64_image(&fs::read(&k.vmlinuz)?, &k.vmlinuz.display().to_string())?;
    if image.release.as_deref() != Some(k.release.as_str()) || !image.efi_stub {
        return Err(format!("{}: {} (the package says {})", k.vmlinuz.display(), image.describe(), k.release));
    }
    let config = config::find_beside(&k.vmlinuz, &k.release).map(|p| config::KernelConfig::read(&p)).transpose()?;
    Ok(Kernel {
        vmlinuz: k.vmlinuz,
        release: k.release,
        version: got.version,
        arch: Arch::Aarch64,
        cmdline_max: crate::build::kernel::ARM64_CMDLINE_MAX,
        modules: Some(k.modules),
        config,
        origin: serde_json::json!({ "package": got.package }),
    })
}

/// The common archive with the aarch64 /init, then the kernel's modules
/// archive, as an x86 entry's initramfs is made. Returns the module count
/// and the sizes, said.
fn write_initramfs(kernel: &Kernel, out: &Path) -> Result<(usize, String)> {
    let init = static_binary::build(Arch::Aarch64)?;
    let common = initramfs::common_archive(&init, 0, &Vec::new())?;
    let (modules, count, _) = initramfs::modules_archive(kernel, 0, &[])?;
    let sizes = format!("initramfs {} + {} bytes gzip'd", common.len(), modules.len());
    fs::write(out, [common, modules].concat())?;
    Ok((count, sizes))
}

/// A stick as /init finds one: a FAT filesystem labelled BOOTMARK, whose
/// journal /init creates.
fn blank_stick(path: &Path) -> Result<()> {
    let f = fs::create(path)?;
    f.set_len(64 << 20).map_err(|e| format!("cannot size {}: {e}", path.display()))?;
    drop(f);
    let sh = shell()?;
    run(cmd!(sh, "mkfs.vfat -n BOOTMARK {path}")).map(|_| ())
}

/// qemu-system-aarch64's arguments: the virt machine with a Cortex-A72,
/// the kernel booted by QEMU itself (a device tree, no firmware), the
/// target on NVMe and the stick on xHCI, the PL011 serial port to `log`.
fn argv(vmlinuz: &Path, initrd: &Path, disk: &Path, stick: &Path, log: &Path) -> Vec<std::ffi::OsString> {
    let cmdline = "console=ttyAMA0 panic=30 bootmark.console=ttyAMA0 bootmark.plan=quick bootmark.target=LABEL=SCRATCH";
    let mut a: Vec<std::ffi::OsString> = Vec::new();
    let mut push = |parts: &[&str]| a.extend(parts.iter().map(std::ffi::OsString::from));
    push(&["-M", "virt", "-cpu", "cortex-a72", "-smp", "1", "-m", "1024", "-nographic", "-no-reboot"]);
    push(&["-monitor", "none", "-append", cmdline]);
    push(&["-kernel", &vmlinuz.display().to_string(), "-initrd", &initrd.display().to_string()]);
    push(&["-drive", &format!("file={},if=none,id=target,format=raw", disk.display())]);
    push(&["-device", "nvme,drive=target,serial=bootmark0"]);
    push(&["-device", "qemu-xhci", "-drive", &format!("file={},if=none,id=stick,format=raw", stick.display())]);
    push(&["-device", "usb-storage,drive=stick", "-serial", &format!("file:{}", log.display())]);
    a
}

/// The boot's documents: a run record and the quick plan's records, ok,
/// each saying it ran on `release` for aarch64 on a Cortex-A72 with a
/// device tree; the stick holding the same documents.
fn check_documents(serial: &str, stick: &Path, release: &str) -> Result<String> {
    let tail = || qemu::tail(serial, 30);
    let docs = serial_documents(serial);
    let run = run_record(&docs).ok_or_else(|| format!("no run record on serial\n{}", tail()))?;
    if run.status != Status::Ok {
        return Err(format!("the run record says {}: {:?}\n{}", run.status.name(), run.error, tail()));
    }
    let records = results(&docs);
    if records.len() != 6 || run.records != 6 {
        return Err(format!(
            "{} records on serial, the run record counts {}; the quick plan has 6",
            records.len(),
            run.records
        ));
    }
    for r in &records {
        let name = &r.workload.name;
        if r.status != Status::Ok {
            return Err(format!("{name}: {} ({})", r.status.name(), r.error.as_deref().unwrap_or("")));
        }
        let said = (r.kernel.arch.as_deref(), r.kernel.release.as_deref(), r.host.cpu_model.as_deref());
        if said.0 != Some("aarch64")
            || said.1 != Some(release)
            || !said.2.is_some_and(|m| m.starts_with("ARM Cortex-A72"))
        {
            return Err(format!("{name}: kernel.arch, kernel.release, host.cpu_model are {said:?}"));
        }
        let mode = r.host.firmware.as_ref().and_then(|f| f.boot_mode.as_deref());
        if mode != Some("devicetree") {
            return Err(format!("{name}: host.firmware.boot_mode {mode:?}, not devicetree"));
        }
    }
    let on_stick = stick_documents(stick)?;
    if on_stick != docs {
        return Err(format!("the stick holds {} documents, serial {}", on_stick.len(), docs.len()));
    }
    Ok(format!(
        "{} records ok on serial and the stick alike, each saying aarch64, {release}, {}",
        records.len(),
        records[0].host.cpu_model.as_deref().unwrap_or_default()
    ))
}
