//! Checks of the test image itself, before any boot: Debian's kernel config
//! found and named, and the module set's order and load conditions.

use super::support::module_set;
use crate::build::image;
use crate::host::project::Result;
use std::path::Path;

/// Debian's own config was found in the package, passed the kernel check
/// and is named in the manifest.
pub fn config_found(out: &Path) -> Result<()> {
    let m = image::manifest::Manifest::read(out)?;
    let config = m.entries.first().and_then(|e| e.kernel_config.as_deref()).unwrap_or("");
    if !config.starts_with("config-6.") {
        return Err(format!("the manifest names no kernel config for Debian's kernel: {:?}", m.entries.first()));
    }
    Ok(())
}

/// The module set inside the initramfs has the soft dependencies before
/// their users, and says which drivers wait for their device.
pub fn module_closure(out: &Path) -> Result<()> {
    use bootmark::contract::modules::When;
    let set = module_set(out)?;
    let names: Vec<&str> = set.modules.iter().map(|m| m.name.as_str()).collect();
    let pos = |n: &str| names.iter().position(|x| *x == n).ok_or(format!("{n} missing from the module set: {names:?}"));
    // ext4 softdep: pre: crc32c (alias of crc32c_generic); crc-t10dif softdep: crct10dif.
    if pos("crc32c_generic")? > pos("ext4")? || pos("crct10dif_generic")? > pos("crc_t10dif")? {
        return Err("soft dependencies are not loaded before their users".into());
    }
    let when = |n: &str| pos(n).map(|i| set.modules[i].when);
    for (n, w) in [("ahci", When::Device), ("xhci_pci", When::Device), ("virtio_blk", When::Device)]
        .into_iter()
        .chain([("sd_mod", When::Always), ("uas", When::Always), ("nls_cp437", When::Always)])
        // uas needs usb_storage on current kernels; ext4 provides ext3 too.
        .chain([("usb_storage", When::Needed), ("libata", When::Needed), ("scsi_mod", When::Needed)])
        .chain([("vfat", When::Filesystem), ("ext4", When::Filesystem)])
        // Storage layers: only when the target is inside them.
        .chain([("dm_mod", When::Layer), ("md_mod", When::Layer), ("raid1", When::Layer), ("raid456", When::Layer)])
    {
        if when(n)? != w {
            return Err(format!("{n} is loaded {:?}, expected {w:?}", when(n)?));
        }
    }
    Ok(())
}
