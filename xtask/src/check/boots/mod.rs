//! The QEMU boots: a real Debian kernel (apt-get download), the image
//! builder, syslinux on an xHCI USB stick, an AHCI SATA scratch disk, QEMU
//! (TCG) — and the records read back from the serial log and the stick. One
//! file per scenario; `support.rs` holds what they share. `harness` runs
//! them all (`cargo xtask check e2e`, part of `cargo xtask test`).

pub mod built_image;
pub mod failing_disk;
pub mod generations;
pub mod hostile_disks;
pub mod i686;
pub mod iso;
pub mod kernel_from_source;
pub mod kernel_rpm;
pub mod lab;
pub mod lab_qemu;
pub mod lab_redfish;
pub mod lava;
pub mod layers;
pub mod live_console;
pub mod md_layouts;
pub mod nvme;
pub mod old_machine;
pub mod resets;
pub mod secure_boot;
pub mod sequence;
pub mod support;
pub mod sweep;
pub mod write_log;

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image;
use crate::host::apt::resolve_meta;
use crate::host::fs;
use crate::host::project::{Result, project_root};
use support::{Tally, boot_and_check, check_drivers, loaded_modules, test_boot, test_image};

pub fn harness() -> Result<()> {
    let started = std::time::Instant::now();
    let package = resolve_meta("linux-image-amd64")?;
    let base = project_root().join("target/e2e");
    let _ = std::fs::remove_dir_all(&base);
    fs::create_dir_all(&base)?;
    let out = image::build(&test_image(vec![package.clone()], base.join("image"), None))?;
    built_image::module_closure(&out)?;
    built_image::config_found(&out)?;
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
        tally.run(name, boot);
    }
    tally.run("NVMe", || crate::check::boots::nvme::test(&out, &base, &package));
    tally.run("LVM on md RAID 1", || layers::test(&package, &base));
    tally.run("hostile disks", || hostile_disks::test(&out, &base, &package));
    tally.run("md layouts", || md_layouts::test(&package, &base));
    // Today's servers: Secure Boot on and off, the ISO as a virtual CD.
    match crate::check::boots::secure_boot::build_image(&package, &base) {
        Ok(sb) => {
            tally.run("Secure Boot", || crate::check::boots::secure_boot::test(&sb, &out, &base, &package));
            tally.run("ISO", || crate::check::boots::iso::test(&sb, &out, &base, &package));
        }
        Err(e) => tally.add("Secure Boot image", Err(e)),
    }
    tally.run("unsigned kernel refused", || crate::check::boots::secure_boot::unsigned_kernel_refused(&package, &base));
    tally.run("old machine", || old_machine::test(&out, &base, &package));
    tally.run("kernel RPM", || crate::check::boots::kernel_rpm::test(&out, &package, &base));
    tally.run("sequence", || sequence::test(&package, &base));
    tally.run("sweep", || crate::check::boots::sweep::test(&package, &base));
    tally.run("i686", || i686::test(&base));
    // Kernels from other Debian releases: a real download from trixie, and the demo's sibling.
    tally.run("trixie on NVMe", || generations::trixie_on_nvme(&base));
    tally.run("two generations", || generations::two_generations(&base));
    tally.run("failing disk", || crate::check::boots::failing_disk::test(&out, &base));
    tally.run("watch", || crate::check::boots::live_console::test(&out, &base));
    tally.run("LAVA", || crate::check::boots::lava::test(&out, &package, &base));
    match lab::image(&package, &base) {
        Ok(lab_image) => {
            tally.run("lab", || lab::test(&lab_image, &base));
            tally.run("lab Redfish", || lab_redfish::test(&lab_image, &base));
            tally.run("lab qemu", || lab_qemu::test(&lab_image, &base));
        }
        Err(e) => tally.add("lab image", Err(e)),
    }
    tally.run("stick write log", || crate::check::boots::write_log::test(&out, &base));
    // 14 kills: every record line once and 7 spread times. The write-log
    // replay above checks every write prefix, so more kills here add CI time
    // (19 s each), not coverage; `cargo xtask check resets --kills 22` runs more.
    tally.run("reset campaign", || {
        crate::check::boots::resets::campaign(&out, &base, crate::check::boots::resets::CI_KILLS)
    });
    println!("e2e: total {:.1} s", started.elapsed().as_secs_f64());
    tally.finish("e2e boot test")
}

/// `cargo xtask check todays-servers`: these boots alone, on images of their own
/// (target/todays-servers), for working on them without the whole e2e run.
pub fn alone() -> Result<()> {
    let package = crate::host::apt::resolve_meta("linux-image-amd64")?;
    let base = crate::host::project::project_root().join("target/todays-servers");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let image = crate::build::image::build(&crate::check::boots::support::test_image(
        vec![package.clone()],
        base.join("image"),
        None,
    ))?;
    let mut tally = crate::check::boots::support::Tally::default();
    tally.run("NVMe", || nvme::test(&image, &base, &package));
    let sb = secure_boot::build_image(&package, &base)?;
    tally.run("Secure Boot", || secure_boot::test(&sb, &image, &base, &package));
    tally.run("ISO", || iso::test(&sb, &image, &base, &package));
    tally.run("unsigned kernel refused", || secure_boot::unsigned_kernel_refused(&package, &base));
    tally.finish("today's servers")
}
