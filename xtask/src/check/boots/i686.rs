//! A 32-bit machine: Debian's 686 kernel and the i686 /init.

use super::support::*;
use crate::boot::disks::scratch_disk;
use crate::build::image;
use crate::host::apt::resolve_meta;
use crate::host::project::Result;
use std::path::Path;

/// A 32-bit machine: Debian's i386 686 kernel, the i686 static /init,
/// qemu-system-i386. Needs the i386 architecture in dpkg (.ci/run adds it).
pub fn test(base: &Path) -> Result<()> {
    let package = resolve_meta("linux-image-686:i386").or_else(|_| resolve_meta("linux-image-686")).map_err(|e| {
        format!("{e}\nthe i686 test needs Debian's i386 packages: dpkg --add-architecture i386 && apt-get update")
    })?;
    let package = if package.contains(':') { package } else { format!("{package}:i386") };
    // The target is formatted in this boot as reiserfs (SLES 9's filesystem),
    // by the image's static i686 mkreiserfs, and mounted with the module
    // loaded for it.
    let image_args = image::Args {
        mkfs: vec!["reiserfs".into()],
        append: "bootmark.format=reiserfs bootmark.format-confirm=LABEL=SCRATCH".into(),
        ..test_image(vec![package.clone()], base.join("image686"), None)
    };
    let out = image::build(&image_args)?;
    let disk = base.join("scratch-i686.img");
    scratch_disk(&disk, "ext3", 512)?;
    let log = base.join("serial-i686.log");
    let args = test_boot(out, disk, log.clone());
    let seconds = boot_and_check_on(&args, &package, "reiserfs")?;
    let serial = serial_documents(&crate::boot::qemu::console_text(&log).unwrap_or_default());
    let run = run_record(&serial).ok_or("no run record")?;
    let mkfs = fact(run, "target.mkfs");
    // It names itself after argv[0]: "mkfs.reiserfs 3.6.27".
    let pinned = format!("mkfs.reiserfs {}", image::static_mkfs::REISERFSPROGS.version);
    if mkfs["program"] != "/sbin/mkfs.reiserfs" || mkfs["version"] != pinned.as_str() {
        return Err(format!("i686 boot: the target was not formatted by the static mkreiserfs: {mkfs}"));
    }
    println!(
        "e2e: i686: {package} on qemu-system-i386 with the i686 /init, target formatted as reiserfs by the static i686 mkreiserfs: 6 records on serial and stick ({seconds:.1} s)"
    );
    Ok(())
}
