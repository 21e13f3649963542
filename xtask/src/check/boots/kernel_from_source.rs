//! A kernel built from source, proven end to end: Debian's
//! `linux-source-6.1` tarball with `kernel-configs/6.1` goes through `cargo
//! xtask image --kernel-src` (which builds it as `cargo xtask kernel` does,
//! incrementally in target/kernel/), the image boots in QEMU, and the
//! records must name our build: release `…-bootmark`, version string built
//! by `bootmark@kernel-configs`, and no module loaded (everything the image
//! needs is built in). For x86_64 a BIOS boot from the stick; for aarch64
//! (cross-built with Debian's gcc-aarch64-linux-gnu) a UEFI boot from the
//! stick on QEMU's virt machine, its target on NVMe.

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::arch::Arch;
use crate::build::{image, kernel_src};
use crate::check::boots::support::{
    fact, results, run_record, serial_documents, stick_documents, test_boot, test_image,
};
use crate::host::fs;
use crate::host::project::{Result, project_root};
use bootmark::record::Status;
use std::path::Path;

/// Debian's kernel source package, as the test tools install it.
pub const DEBIAN_SOURCE: &str = "/usr/src/linux-source-6.1.tar.xz";

/// The image with our kernel, built and checked, ready to boot.
pub struct Built {
    arch: Arch,
    dir: std::path::PathBuf,
    out: std::path::PathBuf,
    entry: image::manifest::Entry,
    build_s: f64,
}

/// Build the kernel for `arch` and the image in `base/kernel-src` (`kernel-src-aarch64`).
///
/// `cargo xtask test` runs this beside the QEMU boots, at the lowest CPU
/// priority: the boots leave most of the second core idle (TCG guests wait
/// for their disks and timers), and the build needs no more than that.
pub fn build(base: &Path, arch: Arch) -> Result<Built> {
    let started = std::time::Instant::now();
    let dir = base.join(match arch {
        Arch::X86_64 => "kernel-src".to_string(),
        other => format!("kernel-src-{other}"),
    });
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    // Whatever revision of linux-source-6.1 apt installed: taken as
    // Debian's by dpkg's check against the package, no hash to update.
    let line = kernel_src::line::Line::read(&project_root().join("kernel-configs/6.1"))?;
    let out = image::build(&image::Args {
        kernel_src: vec![DEBIAN_SOURCE.into()],
        kernel_src_config: Some(line.dir.clone()),
        arch: Some(arch),
        ..test_image(Vec::new(), dir.join("image"), None)
    })?;
    let manifest = image::manifest::Manifest::read(&out)?;
    let entry = manifest.entries.into_iter().next().ok_or("the image has no entry")?;
    let source = &entry.origin["built_from_source"];
    let verified = source["source"]["verified"].as_str().unwrap_or_default();
    if !verified.starts_with("Debian's linux-source-6.1 6.1.")
        && !verified.starts_with("the tarball kernel-configs/6.1")
    {
        return Err(format!("the manifest does not say how the source was verified: {}", source["source"]));
    }
    if source["source"]["sha256"].as_str().is_none_or(|h| h.len() != 64) || source["line"] != "6.1" {
        return Err(format!("the manifest does not record the source and line it was built from: {}", entry.origin));
    }
    if entry.kernel_config_sha256.is_none() || entry.modules != 0 {
        return Err(format!(
            "the manifest should name the built config and no modules: config {:?}, {} modules",
            entry.kernel_config, entry.modules
        ));
    }
    Ok(Built { arch, dir, out, entry, build_s: started.elapsed().as_secs_f64() })
}

/// Boot the image [`build`] made; its records must name our build.
pub fn boot(built: Built) -> Result<()> {
    let Built { arch, dir, out, entry, build_s } = built;
    let source = &entry.origin["built_from_source"];
    let disk = dir.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    // arm64 boots UEFI only; its machine's disks are NVMe, and so is the
    // x86 target here: today's x86 servers have NVMe, and the config builds it in.
    let args = qemu::Args {
        arch: Some(arch),
        uefi: arch == Arch::Aarch64,
        disk_buses: vec!["nvme".into()],
        ..test_boot(out.clone(), disk, dir.join("serial.log"))
    };
    let booted = qemu::boot(&args)?;
    let serial = serial_documents(&booted.serial);
    let tail = || qemu::tail(&booted.serial, 25);
    let run =
        run_record(&serial).ok_or_else(|| format!("no run record ({})\n{}", qemu::diagnose(&booted.serial), tail()))?;
    if run.status != Status::Ok {
        return Err(format!("the run failed: {}\n{}", run.error.as_deref().unwrap_or_default(), tail()));
    }
    let loaded = fact(run, "modules.loaded").as_array().map_or(0, Vec::len);
    let records = results(&serial);
    if records.len() != 6 || records.iter().any(|r| r.status != Status::Ok) {
        return Err(format!("expected 6 ok records, got {}\n{}", records.len(), tail()));
    }
    let ours = |r: &&bootmark::record::Record| {
        r.kernel.release.as_deref() == Some(entry.kernel_release.as_str())
            && entry.kernel_release.ends_with("-bootmark")
            && r.kernel.version.as_deref().is_some_and(|v| v.contains("bootmark@kernel-configs"))
    };
    let disk = |r: &&bootmark::record::Record| r.storage.device.as_ref().map(|d| d.disk.clone());
    if let Some(r) = records.iter().find(|r| disk(r).as_deref() != Some("nvme0n1")) {
        return Err(format!("a record's target is on {:?}, not the NVMe disk nvme0n1", disk(r)));
    }
    if let Some(r) = records.iter().find(|r| r.kernel.arch.as_deref() != Some(arch.name())) {
        return Err(format!("a record says kernel.arch {:?}, not {arch}", r.kernel.arch));
    }
    if !records.iter().all(ours) {
        return Err(format!(
            "the records do not show our build ({}, built by bootmark@kernel-configs): {:?} {:?}",
            entry.kernel_release, records[0].kernel.release, records[0].kernel.version
        ));
    }
    if loaded != 0 {
        return Err(format!("{loaded} modules were loaded: everything should be built in"));
    }
    let stick: Vec<_> = stick_documents(&out.join("usb.img"))?;
    if stick != serial {
        return Err(format!("the stick holds {} documents, the serial log {}", stick.len(), serial.len()));
    }
    println!(
        "e2e: kernel from source ({arch}): {} ({} from {DEBIAN_SOURCE} with kernel-configs/6.1) → image → booted, 6 records by our build on serial and stick, its target on NVMe ({build_s:.0} s to build beside the other boots, {:.1} s boot)",
        entry.kernel_release,
        source["toolchain"]["gcc"].as_str().map(|v| format!("gcc {v}")).unwrap_or_default(),
        booted.elapsed.as_secs_f64()
    );
    refused_under_secure_boot(&dir, &entry)
}

/// Our kernel is not signed: an image of it with `--secure-boot` is
/// refused before anything is built, naming the file (for arm64 as for x86:
/// shim checks the PE signature of both).
fn refused_under_secure_boot(dir: &Path, entry: &image::manifest::Entry) -> Result<()> {
    let arch = Arch::parse(&entry.arch)?;
    let built = entry.origin["file"].as_str().ok_or("the manifest does not name the kernel's file")?;
    let vmlinuz = std::path::PathBuf::from(built);
    let args = image::Args {
        kernels: vec![vmlinuz.clone()],
        secure_boot: true,
        ..test_image(Vec::new(), dir.join("image-secure-boot"), None)
    };
    match image::build(&args) {
        Err(e) if e.contains(&format!("{} is not signed", vmlinuz.display())) => {
            println!("e2e: kernel from source ({arch}): refused by image --secure-boot, as it is not signed");
            Ok(())
        }
        Err(e) => Err(format!("image --secure-boot of our unsigned kernel: refused for another reason: {e}")),
        Ok(_) => Err(format!("image --secure-boot took our unsigned kernel {}", vmlinuz.display())),
    }
}

/// Build, then boot (`cargo xtask check kernel-from-source[-arm64]`).
pub fn test(base: &Path, arch: Arch) -> Result<()> {
    boot(build(base, arch)?)
}

/// Lower the calling thread's CPU priority to the lowest (nice 19); the
/// programs it starts inherit it. On Linux the nice value is per thread.
pub fn lowest_priority() {
    // SAFETY: setpriority on the calling thread (who = 0); no memory is touched.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
}
