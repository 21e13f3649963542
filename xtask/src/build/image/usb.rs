//! The USB stick image: MBR, one FAT32 partition labelled BOOTMARK at
//! sector 2048, syslinux for BIOS and GRUB (standalone EFI) for UEFI, the
//! kernels and initrds, and an empty bootmark/results/ — built without root
//! (sfdisk, mkfs.fat --offset, syslinux --offset, mtools).

use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{Shell, cmd, run, shell};
use crate::host::project::Result;
use std::path::Path;

pub const LABEL: &str = "BOOTMARK";
pub const PART_START: u64 = 2048;
const SECTOR: u64 = 512;
pub const MBR_BIN: &str = "/usr/lib/syslinux/mbr/mbr.bin";

/// A shell for mtools on an image file: its sanity check of the "drive"
/// (a file, not a floppy) is off.
pub fn mtools() -> Result<Shell> {
    let sh = shell()?;
    sh.set_var("MTOOLS_SKIP_CHECK", "1");
    Ok(sh)
}

pub fn image_arg(img: &Path) -> String {
    format!("{}@@{}", img.display(), PART_START * SECTOR)
}

/// Build `img` of `size_mib` from the staged tree `stage` (its files go to the
/// FAT partition's root with the same relative paths). `volume_id` makes the
/// FAT serial and MBR disk id deterministic.
pub fn build(img: &Path, stage: &Path, size_mib: u64, volume_id: u32) -> Result<()> {
    let f = std::fs::File::create(img).map_err(|e| format!("{}: {e}", img.display()))?;
    f.set_len(size_mib << 20).map_err(|e| format!("{}: {e}", img.display()))?;
    drop(f);
    partition(img, volume_id)?;
    let part_kib = ((size_mib << 20) / SECTOR - PART_START) * SECTOR / 1024;
    let sh = shell()?;
    let (volume_id, start, part_kib) = (format!("{volume_id:08X}"), PART_START.to_string(), part_kib.to_string());
    run(cmd!(sh, "mkfs.fat -F 32 -n {LABEL} -i {volume_id} -h {start} --offset {start} {img} {part_kib}"))?;
    let offset = (PART_START * SECTOR).to_string();
    run(cmd!(sh, "syslinux --install --offset {offset} {img}"))?;
    install_mbr(img)?;
    copy_tree(img, stage)
}

fn partition(img: &Path, volume_id: u32) -> Result<()> {
    let script = format!("label: dos\nlabel-id: 0x{volume_id:08x}\nstart={PART_START}, type=c, bootable\n");
    let sh = shell()?;
    run(cmd!(sh, "sfdisk -q {img}").stdin(script)).map(|_| ())
}

/// syslinux's boot code in bytes 0..440 (the partition table after it stays).
fn install_mbr(img: &Path) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let mbr = std::fs::read(MBR_BIN).map_err(|e| format!("{MBR_BIN}: {e} (apt-get install syslinux-common)"))?;
    let code = &mbr[..mbr.len().min(440)];
    let f =
        std::fs::OpenOptions::new().write(true).open(img).with_context(|| format!("cannot open {}", img.display()))?;
    f.write_all_at(code, 0).with_context(|| format!("cannot write the MBR of {}", img.display()))
}

/// Copy every directory and file under `stage` into the FAT partition.
fn copy_tree(img: &Path, stage: &Path) -> Result<()> {
    let target = image_arg(img);
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    walk(stage, stage, &mut dirs, &mut files)?;
    dirs.sort();
    let sh = mtools()?;
    for d in &dirs {
        run(cmd!(sh, "mmd -D s -i {target} ::{d}"))?;
    }
    for f in &files {
        let from = stage.join(f);
        run(cmd!(sh, "mcopy -o -m -i {target} {from} ::{f}"))?;
    }
    Ok(())
}

fn walk(root: &Path, dir: &Path, dirs: &mut Vec<String>, files: &mut Vec<String>) -> Result<()> {
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            dirs.push(rel);
            walk(root, &p, dirs, files)?;
        } else {
            files.push(rel);
        }
    }
    Ok(())
}

/// A server's own copy of an image's stick (`usb.img` and the manifest
/// beside it) in `stick`, made afresh: as on iron, each server writes its
/// results and default entry to its own stick, so two boots side by side
/// never share one.
pub fn own_copy(image_dir: &Path, stick: &Path) -> Result<std::path::PathBuf> {
    let _ = std::fs::remove_dir_all(stick);
    crate::host::fs::create_dir_all(stick)?;
    for file in ["usb.img", "manifest.json"] {
        std::fs::copy(image_dir.join(file), stick.join(file))
            .map_err(|e| format!("cannot copy {} to {}: {e}", image_dir.join(file).display(), stick.display()))?;
    }
    Ok(stick.join("usb.img"))
}

/// Names in a FAT directory of the image (for the image tests).
#[cfg(test)]
pub fn list(img: &Path, dir: &str) -> Result<Vec<String>> {
    let (sh, target) = (mtools()?, image_arg(img));
    let out = run(cmd!(sh, "mdir -a -b -i {target} ::{dir}"))?;
    Ok(out
        .lines()
        .map(|l| l.trim_start_matches("::").trim_start_matches(&format!("/{dir}")).trim_matches('/').to_string())
        .collect())
}

/// Make the entry `label` the default of the menus that list it on the
/// stick image: `DEFAULT LABEL` in syslinux.cfg (x86 entries) and `set
/// default=LABEL` in boot/grub/grub.cfg (every entry), with `set` its
/// settings (`bootmark.set=`; None: none, an earlier boot's removed).
/// Plain text edits of files on the FAT partition (what /init does too).
pub fn set_default_entry(img: &Path, label: &str, set: Option<&str>) -> Result<()> {
    let target = image_arg(img);
    let sh = mtools()?;
    let read = |f: &str| run(cmd!(sh, "mtype -i {target} ::{f}"));
    let (syslinux, grub) = (read("syslinux.cfg")?, read("boot/grub/grub.cfg")?);
    let in_grub = bootmark::bootmenu::grub_ids(&grub).iter().any(|l| l == label);
    if !in_grub {
        return Err(format!("{}: the boot menu has no entry {label}", img.display()));
    }
    let syslinux = if bootmark::bootmenu::labels(&syslinux).iter().any(|l| l == label) {
        bootmark::bootmenu::syslinux_with_set(&bootmark::bootmenu::syslinux_set_default(&syslinux, label), label, set)
    } else {
        syslinux
    };
    let grub = bootmark::bootmenu::grub_set_default(&grub, label);
    let grub = bootmark::bootmenu::grub_with_set(&grub, label, set);
    // A directory of this call's own: two lanes of the suite change menus at once in one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = std::env::temp_dir().join(format!("bootmark-menu-{}-{n}", std::process::id()));
    fs::create_dir_all(&tmp)?;
    for (name, text, dest) in
        [("syslinux.cfg", &syslinux, "::syslinux.cfg"), ("grub.cfg", &grub, "::boot/grub/grub.cfg")]
    {
        fs::write(tmp.join(name), text)?;
        let from = tmp.join(name);
        run(cmd!(sh, "mcopy -o -i {target} {from} {dest}"))?;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
