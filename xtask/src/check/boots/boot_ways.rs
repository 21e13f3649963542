//! The e2e image booted the three ways a server boots it: from the USB
//! stick under BIOS and under UEFI, and over PXE. Each boot must write the
//! six records and the run record to the serial console and the stick,
//! identical, and load the drivers of the disks it has and none other.

use super::support::{boot_and_check, check_drivers, loaded_modules, test_boot};
use super::testbed::Testbed;
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::host::project::Result;

/// One boot of the e2e image: from the stick (BIOS or `uefi`) or over `pxe`.
pub fn test(testbed: &Testbed, uefi: bool, pxe: bool) -> Result<()> {
    let name = match (uefi, pxe) {
        (_, true) => "BIOS PXE",
        (true, false) => "UEFI USB",
        (false, false) => "BIOS USB",
    };
    let (image, package) = (testbed.image()?, testbed.package()?);
    let disk = testbed.base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let log = testbed.base.join(format!("serial-{}.log", name.replace(' ', "-")));
    let boot_args = qemu::Args { uefi, pxe, ..test_boot(image.to_path_buf(), disk, log.clone()) };
    let seconds = boot_and_check(&boot_args, package)?;
    check_drivers(
        &loaded_modules(&log),
        &["ahci", "xhci_pci", "usb_storage"],
        &["sym53c8xx", "ehci_pci", "virtio_blk", "nvme"],
    )?;
    println!(
        "e2e: {name}: {package} booted in QEMU, 6 records + run record on serial and stick, identical ({seconds:.1} s)"
    );
    Ok(())
}
