//! What boots the entries besides syslinux on the stick: GRUB as a
//! standalone EFI binary for UEFI sticks, and the PXE/TFTP tree (pxelinux
//! for BIOS, GRUB's netboot core for UEFI) with its dnsmasq lines.

use super::{menu, tools, usb, write};
use crate::Result;
use std::path::Path;

/// GRUB as a standalone EFI binary with a tiny config that finds the stick by label.
pub fn grub_efi(out: &Path, work: &Path) -> Result<()> {
    std::fs::create_dir_all(out.parent().unwrap()).map_err(|e| e.to_string())?;
    let embedded = work.join("grub-embedded.cfg");
    write(&embedded, &menu::grub_embedded(usb::LABEL))?;
    tools::run(
        std::process::Command::new("grub-mkstandalone")
            .args(["-O", "x86_64-efi", "--locales=", "--themes=", "--fonts="])
            .arg("--modules=part_msdos fat search search_label serial terminal linux normal efi_gop echo configfile")
            .arg("-o")
            .arg(out)
            .arg(format!("boot/grub/grub.cfg={}", embedded.display())),
    )?;
    Ok(())
}

/// The TFTP tree: pxelinux for BIOS, GRUB's netboot core for UEFI, the same entries.
pub fn pxe_tree(pxe: &Path, stage: &Path, m: &menu::Menu) -> Result<()> {
    let copy = |from: &Path, to: &Path| -> Result<()> {
        std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::copy(from, to).map(|_| ()).map_err(|e| format!("{}: {e}", from.display()))
    };
    copy(Path::new("/usr/lib/PXELINUX/pxelinux.0"), &pxe.join("pxelinux.0"))?;
    copy(Path::new("/usr/lib/syslinux/modules/bios/ldlinux.c32"), &pxe.join("ldlinux.c32"))?;
    for e in m.entries {
        for f in ["vmlinuz", "initrd.gz"] {
            copy(&stage.join("boot").join(&e.dir).join(f), &pxe.join("boot").join(&e.dir).join(f))?;
        }
    }
    write(&pxe.join("pxelinux.cfg/default"), &m.syslinux(""))?;
    let uefi = tools::run(
        std::process::Command::new("grub-mknetdir").arg(format!("--net-directory={}", pxe.display())).args([
            "--subdir=grub",
            "-d",
            "/usr/lib/grub/x86_64-efi",
        ]),
    );
    let uefi_line = match uefi {
        Ok(_) => {
            write(&pxe.join("grub/grub.cfg"), &m.grub("(tftp)"))?;
            "dhcp-match=set:efi64,option:client-arch,7\ndhcp-boot=tag:efi64,grub/x86_64-efi/core.efi\n"
        }
        Err(e) => {
            eprintln!("image: no UEFI network boot in pxe/ ({e})");
            ""
        }
    };
    write(
        &pxe.join("README.txt"),
        &format!(
            "Serve this directory over TFTP and point DHCP at it. With dnsmasq:\n\n  enable-tftp\n  tftp-root=/path/to/this/pxe\n  dhcp-boot=pxelinux.0\n{}\nOver PXE there is no results stick: results come from the serial console only.\nA LAVA lab boots these files with the jobs `cargo xtask lava` writes.\n",
            uefi_line.lines().map(|l| format!("  {l}\n")).collect::<String>()
        ),
    )
}
