//! The old machine: `--machine old`, the hardware a 2006 server has.

use super::support::*;
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::host::project::Result;
use std::path::Path;

/// `--machine old`: the stick on EHCI and the target on an LSI 53C895A SCSI
/// HBA (sym53c8xx), the hardware a 2.6-era kernel knows. Debian's current
/// kernel has no old IDE drivers (removed in 5.14), so the `--disk-bus ide`
/// path can only be exercised by a real old kernel, not here.
pub fn test(image: &Path, base: &Path, package: &str) -> Result<()> {
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let args =
        qemu::Args { machine: "old".into(), ..test_boot(image.to_path_buf(), disk, base.join("serial-old.log")) };
    let seconds = boot_and_check(&args, package).map_err(|e| format!("old machine boot: {e}"))?;
    let serial = qemu::console_text(&base.join("serial-old.log")).unwrap_or_default();
    if !serial.contains("sym0: ") || !serial.contains("EHCI Host Controller") {
        return Err("the old machine's boot does not show the sym53c8xx and EHCI drivers at work".into());
    }
    let loaded = loaded_modules(&base.join("serial-old.log"));
    check_drivers(&loaded, &["sym53c8xx", "ehci_pci", "sd_mod"], &["ahci", "xhci_pci", "virtio_blk"])
        .map_err(|e| format!("old machine boot: {e}"))?;
    println!(
        "e2e: old machine: {package} with the stick on EHCI and the target on SCSI (sym53c8xx): 6 records on serial and stick ({seconds:.1} s)"
    );
    Ok(())
}
