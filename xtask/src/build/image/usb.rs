//! The USB stick image: MBR, one FAT32 partition labelled BOOTMARK at
//! sector 2048, syslinux for BIOS and GRUB (standalone EFI) for UEFI, the
//! kernels and initrds, and an empty bootmark/results/ — built without root
//! (sfdisk, mkfs.fat --offset, syslinux --offset, mtools).

use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::command;
use crate::host::process::run;
use crate::host::project::Result;
use std::path::Path;
use std::process::Command;

pub const LABEL: &str = "BOOTMARK";
pub const PART_START: u64 = 2048;
const SECTOR: u64 = 512;
pub const MBR_BIN: &str = "/usr/lib/syslinux/mbr/mbr.bin";

fn mtools(cmd: &str) -> Command {
    let mut c = command(cmd);
    c.env("MTOOLS_SKIP_CHECK", "1");
    c
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
    run(command("mkfs.fat")
        .args(["-F", "32", "-n", LABEL, "-i", &format!("{volume_id:08X}"), "-h", &PART_START.to_string()])
        .args(["--offset", &PART_START.to_string()])
        .arg(img)
        .arg(part_kib.to_string()))?;
    run(command("syslinux").args(["--install", "--offset", &(PART_START * SECTOR).to_string()]).arg(img))?;
    install_mbr(img)?;
    copy_tree(img, stage)
}

fn partition(img: &Path, volume_id: u32) -> Result<()> {
    use std::io::Write;
    let mut child = crate::host::process::spawn(
        command("sfdisk")
            .arg("-q")
            .arg(img)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped()),
    )?;
    let script = format!("label: dos\nlabel-id: 0x{volume_id:08x}\nstart={PART_START}, type=c, bootable\n");
    child.stdin.take().unwrap().write_all(script.as_bytes()).context("cannot feed sfdisk its script")?;
    let out = child.wait_with_output().context("waiting for sfdisk")?;
    if !out.status.success() {
        return Err(format!("sfdisk failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
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
    for d in &dirs {
        run(mtools("mmd").args(["-D", "s", "-i", &target]).arg(format!("::{d}")))?;
    }
    for f in &files {
        run(mtools("mcopy").args(["-o", "-m", "-i", &target]).arg(stage.join(f)).arg(format!("::{f}")))?;
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

/// Names in a FAT directory of the image (for the image tests).
#[cfg(test)]
pub fn list(img: &Path, dir: &str) -> Result<Vec<String>> {
    let out = run(mtools("mdir").args(["-a", "-b", "-i", &image_arg(img)]).arg(format!("::{dir}")))?;
    Ok(out
        .lines()
        .map(|l| l.trim_start_matches("::").trim_start_matches(&format!("/{dir}")).trim_matches('/').to_string())
        .collect())
}

/// Make entry `n` (0-based) the default of both menus on the stick image:
/// `DEFAULT kN` in syslinux.cfg and `set default=N` in boot/grub/grub.cfg.
/// Plain text edits of files on the FAT partition (what /init does too).
pub fn set_default_entry(img: &Path, n: usize) -> Result<()> {
    let target = image_arg(img);
    let read = |f: &str| run(mtools("mtype").args(["-i", &target]).arg(format!("::{f}")));
    let syslinux = read("syslinux.cfg")?;
    let label = bootmark::bootmenu::labels(&syslinux)
        .into_iter()
        .nth(n)
        .ok_or_else(|| format!("the image has no entry {n} (entries are numbered from 0)"))?;
    let syslinux = bootmark::bootmenu::syslinux_set_default(&syslinux, &label);
    let grub = bootmark::bootmenu::grub_set_default(&read("boot/grub/grub.cfg")?, n);
    let tmp = std::env::temp_dir().join(format!("bootmark-menu-{}", std::process::id()));
    fs::create_dir_all(&tmp)?;
    for (name, text, dest) in
        [("syslinux.cfg", &syslinux, "::syslinux.cfg"), ("grub.cfg", &grub, "::boot/grub/grub.cfg")]
    {
        fs::write(tmp.join(name), text)?;
        run(mtools("mcopy").args(["-o", "-i", &target]).arg(tmp.join(name)).arg(dest))?;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
