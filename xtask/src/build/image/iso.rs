//! bootmark.iso: the image for a BMC's virtual media (iDRAC, iLO, XCC,
//! Redfish `VirtualMedia.InsertMedia`), which mounts ISOs, not disk images.
//!
//! A hybrid ISO, made by xorriso (the tool Debian's own installer images
//! are made with; no Rust crate writes El Torito for BIOS and UEFI plus the
//! MBR and GPT that let the same file be written to a stick):
//! - BIOS: El Torito boots ISOLINUX with the stick's menu;
//! - UEFI: a second El Torito entry, a small FAT image (efiboot.img) with
//!   the same EFI loaders as the stick's ESP (GRUB for each architecture,
//!   or shim + Debian's signed GRUB for CDs), whose config finds the ISO by
//!   its id file;
//! - MBR + GPT (isohybrid), so `dd` to a stick boots too.
//!
//! Its two menus are stored once each with blank lines at their end, and
//! the manifest records where (`iso_menus`): `bootmark lab` publishes a
//! copy per step with the step's entry as the default.
//!
//! An ISO is read-only: it carries no results journal and no sequence.
//! Results go to the serial console (SOL on a BMC), and also to a writable
//! results stick when one is attached.

use super::{menu, secure_boot};
use crate::host::fs::Context as _;
use crate::host::fs::write_creating_dirs as write;
use crate::host::process::{cmd, run, shell};
use crate::host::project::Result;
use bootmark::bootmenu::{self, IsoMenus, Span};
use std::path::Path;

/// The ISO's file name in the image directory.
pub const FILE: &str = "bootmark.iso";
/// ISO 9660 volume id: not the stick's label, so /init never takes the CD
/// for the results stick.
pub const VOLUME_ID: &str = "BOOTMARK_ISO";
const ISOLINUX_BIN: &str = "/usr/lib/ISOLINUX/isolinux.bin";
const ISOHYBRID_MBR: &str = "/usr/lib/ISOLINUX/isohdpfx.bin";
const LDLINUX_C32: &str = "/usr/lib/syslinux/modules/bios/ldlinux.c32";

/// Host tools the ISO needs, with their Debian packages.
pub const ISO_TOOLS: [(&str, &str); 3] =
    [("xorriso", "xorriso"), (ISOLINUX_BIN, "isolinux"), ("/usr/lib/ISOLINUX/isohdpfx.bin", "isolinux")];

/// What goes into the ISO besides the kernels: the menus and the EFI loaders.
pub struct Contents<'a> {
    /// The staged stick tree: boot/ (kernels, initrds, grub.cfg and the id file) is taken from it.
    pub stage: &'a Path,
    pub menu: &'a menu::Menu<'a>,
    /// The image's id (menu::image_id), for the id file GRUB searches.
    pub id: &'a str,
    /// Debian's signed chain of each architecture, for an image built with --secure-boot.
    pub chains: Option<&'a [secure_boot::Chain]>,
    /// The unsigned standalone GRUB of each platform otherwise (the stick's
    /// EFI/BOOT/BOOTX64.EFI, BOOTAA64.EFI): (file name, built file).
    pub efi_loaders: &'a [(&'static str, std::path::PathBuf)],
    /// SOURCE_DATE_EPOCH: the time stamped on every file and on the volume.
    pub mtime: u32,
}

/// Write `out` (bootmark.iso); `work` is scratch space. Returns where the
/// ISO holds its two menus, for `bootmark lab` to change their default.
pub fn build(out: &Path, work: &Path, c: &Contents) -> Result<IsoMenus> {
    let root = work.join("iso");
    let _ = std::fs::remove_dir_all(&root);
    copy_dir(&c.stage.join("boot"), &root.join("boot"))?;
    copy(Path::new(ISOLINUX_BIN), &root.join("isolinux/isolinux.bin"))?;
    copy(Path::new(LDLINUX_C32), &root.join("isolinux/ldlinux.c32"))?;
    // Both menus with room to name a longer default entry later.
    let syslinux = bootmenu::with_room(&c.menu.syslinux("/"));
    let grub = bootmenu::with_room(&c.menu.grub(""));
    write(root.join("isolinux/isolinux.cfg"), &syslinux)?;
    write(root.join("boot/grub/grub.cfg"), &grub)?;
    // Debian's signed GRUB for CDs falls back to searching for this file.
    write(root.join(".disk/info"), format!("bootmark image {}\n", c.id))?;
    let efi = root.join("boot/efiboot.img");
    efi_image(&efi, work, c)?;
    let sh = shell()?;
    run(cmd!(
        sh,
        "xorriso -as mkisofs -quiet -o {out} -V {VOLUME_ID} -J -joliet-long -R -isohybrid-mbr {ISOHYBRID_MBR}
            -c isolinux/boot.cat -b isolinux/isolinux.bin -no-emul-boot
            -boot-load-size 4 -boot-info-table -eltorito-alt-boot
            -e boot/efiboot.img -no-emul-boot -isohybrid-gpt-basdat {root}"
    )
    .env("SOURCE_DATE_EPOCH", c.mtime.max(315_532_800).to_string()))?;
    std::fs::remove_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let iso = std::fs::read(out).with_context(|| format!("cannot read {}", out.display()))?;
    Ok(IsoMenus { syslinux: span_of(&iso, &syslinux, out)?, grub: span_of(&iso, &grub, out)? })
}

/// Where `file`'s bytes stand in the ISO: once, or the lab could not know
/// which copy the bootloader reads.
fn span_of(iso: &[u8], file: &str, out: &Path) -> Result<Span> {
    let mut found = memchr::memmem::find_iter(iso, file.as_bytes());
    match (found.next(), found.next()) {
        (Some(offset), None) => Ok(Span { offset: offset as u64, len: file.len() as u64 }),
        (None, _) => Err(format!("{}: a menu is not stored whole in it", out.display())),
        (Some(_), Some(_)) => Err(format!("{}: a menu is stored twice in it", out.display())),
    }
}

/// The UEFI El Torito image: a FAT filesystem with EFI/BOOT/…, sized to fit.
fn efi_image(img: &Path, work: &Path, c: &Contents) -> Result<()> {
    let tree = work.join("efiboot");
    let _ = std::fs::remove_dir_all(&tree);
    match c.chains {
        Some(chains) => {
            for chain in chains {
                let n = chain.names;
                copy(&chain.shim, &tree.join("EFI/BOOT").join(n.removable))?;
                copy(&chain.grub_cd, &tree.join("EFI/BOOT").join(n.grub))?;
                copy(&chain.mok_manager, &tree.join("EFI/BOOT").join(n.mok_manager))?;
            }
            // gcdx64's (gcdaa64's) prefix is /boot/grub on the device it came
            // from: if that is this FAT image rather than the ISO, find the ISO.
            write(tree.join("boot/grub/grub.cfg"), menu::grub_finder(c.id))?;
        }
        None => {
            for (name, built) in c.efi_loaders {
                copy(built, &tree.join("EFI/BOOT").join(name))?;
            }
        }
    }
    let bytes: u64 = walk_files(&tree)?.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum();
    let kib = (bytes / 1024) * 11 / 10 + 512; // FAT's own tables and slack
    let _ = std::fs::remove_file(img);
    if let Some(parent) = img.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let kib = kib.to_string();
    let sh = super::usb::mtools()?;
    run(cmd!(sh, "mkfs.fat -C -n BOOTMARKEFI {img} {kib}"))?;
    for dir in ["EFI", "EFI/BOOT", "boot", "boot/grub"] {
        if tree.join(dir).is_dir() {
            run(cmd!(sh, "mmd -i {img} ::{dir}"))?;
        }
    }
    for f in walk_files(&tree)? {
        let rel = f.strip_prefix(&tree).context("a walked file outside its tree")?;
        run(cmd!(sh, "mcopy -o -i {img} {f} ::{rel}"))?;
    }
    std::fs::remove_dir_all(&tree).map_err(|e| format!("{}: {e}", tree.display()))
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::copy(from, to).map(|_| ()).map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    for f in walk_files(from)? {
        copy(&f, &to.join(f.strip_prefix(from).context("a walked file outside its tree")?))?;
    }
    Ok(())
}

fn walk_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?.flatten() {
            let p = e.path();
            if p.is_dir() { stack.push(p) } else { out.push(p) }
        }
    }
    out.sort();
    Ok(out)
}
