//! The target on NVMe, as on today's servers: Debian's kernel on the
//! modern machine (q35) with the scratch disk on QEMU's NVMe controller.
//! `nvme` must load because a device of its PCI class (01 08 02: mass
//! storage, non-volatile memory, NVM Express) is present — the image's
//! module set marks it as waiting for its device, and the SATA boots,
//! which have no NVMe controller, do not load it.

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::check::boots::support::{
    boot_and_check, check_drivers, loaded_modules, module_set, results, serial_documents, test_boot,
};
use crate::host::project::Result;
use bootmark::contract::modules::When;
use std::path::Path;

pub fn test(image: &Path, base: &Path, package: &str) -> Result<()> {
    let set = module_set(image)?;
    let nvme = set.modules.iter().find(|m| m.name == "nvme").ok_or("the image carries no nvme module")?;
    if nvme.when != When::Device || !nvme.aliases.iter().any(|a| a.contains("bc01sc08i02")) {
        return Err(format!("nvme is not loaded by its PCI class: {:?} {:?}", nvme.when, nvme.aliases));
    }
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let log = base.join("serial-nvme.log");
    let args = qemu::Args { disk_buses: vec!["nvme".into()], ..test_boot(image.to_path_buf(), disk, log.clone()) };
    let seconds = boot_and_check(&args, package)?;
    let serial = qemu::console_text(&log)?;
    let docs = serial_documents(&serial);
    let disks: Vec<&str> =
        results(&docs).iter().filter_map(|r| r.storage.device.as_ref().map(|d| d.disk.as_str())).collect();
    if disks.is_empty() || disks.iter().any(|d| *d != "nvme0n1") {
        return Err(format!("the records' storage is not /dev/nvme0n1: {disks:?}"));
    }
    check_drivers(&loaded_modules(&log), &["nvme", "nvme_core", "xhci_pci"], &["sym53c8xx", "virtio_blk", "mpt3sas"])?;
    println!(
        "e2e: NVMe: the target on /dev/nvme0n1, nvme loaded for its PCI class, 6 records on serial and stick ({seconds:.1} s)"
    );
    Ok(())
}
