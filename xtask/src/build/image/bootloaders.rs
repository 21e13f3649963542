//! What boots the entries besides syslinux on the stick: GRUB as a
//! standalone EFI binary for UEFI sticks (or Debian's signed chain, with
//! --secure-boot), and the PXE/TFTP tree (pxelinux for BIOS, GRUB's
//! netboot core or the signed chain for UEFI) with its dnsmasq lines.

use super::{grub_platform, menu, secure_boot};
use crate::build::arch::Arch;
use crate::host::fs;
use crate::host::fs::write_creating_dirs as write;
use crate::host::process::{cmd, shell};
use crate::host::project::Result;
use std::path::Path;

/// GRUB as a standalone EFI binary for `platform`, with a tiny config that
/// finds the image (stick or ISO) by its id file. `iso9660` lets it read a
/// CD.
pub fn grub_efi(out: &Path, work: &Path, id: &str, platform: &grub_platform::Platform) -> Result<()> {
    fs::create_dir_all(out.parent().unwrap())?;
    let embedded = work.join("grub-embedded.cfg");
    write(&embedded, menu::grub_finder(id))?;
    // `test` for `[ "$grub_cpu" = … ]`, the blocks of a menu for two architectures.
    let modules = "part_msdos part_gpt fat iso9660 search search_fs_file serial terminal linux normal efi_gop echo \
                   configfile test";
    let (name, dir) = (platform.name, &platform.modules);
    let sh = shell()?;
    crate::host::process::run(cmd!(
        sh,
        "grub-mkstandalone -O {name} -d {dir} --locales= --themes= --fonts= --modules={modules} -o {out} boot/grub/grub.cfg={embedded}"
    ))?;
    Ok(())
}

/// Debian's signed chain of each architecture on the stick's ESP: shim as
/// the removable-media loader, the signed disk GRUB and MokManager beside
/// it, and the config where that GRUB looks first (its prefix,
/// EFI/debian, shared by both architectures), which finds the menu by the
/// id file.
pub fn signed_esp(stage: &Path, chains: &[secure_boot::Chain], id: &str) -> Result<()> {
    let copy = |from: &Path, to: &str| -> Result<()> {
        let to = stage.join("EFI/BOOT").join(to);
        std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
        std::fs::copy(from, &to).map(|_| ()).map_err(|e| format!("cannot copy {}: {e}", from.display()))
    };
    for chain in chains {
        copy(&chain.shim, chain.names.removable)?;
        copy(&chain.grub_disk, chain.names.grub)?;
        copy(&chain.mok_manager, chain.names.mok_manager)?;
    }
    write(stage.join(secure_boot::GRUB_DISK_PREFIX).join("grub.cfg"), menu::grub_finder(id))
}

/// The TFTP tree: pxelinux for BIOS, GRUB's netboot core for UEFI (or,
/// with `chain`, shim and Debian's signed netboot GRUB), the same entries.
pub fn pxe_tree(pxe: &Path, stage: &Path, m: &menu::Menu, chains: Option<&[secure_boot::Chain]>) -> Result<()> {
    let copy = |from: &Path, to: &Path| -> Result<()> {
        fs::create_dir_all(to.parent().unwrap())?;
        std::fs::copy(from, to).map(|_| ()).map_err(|e| format!("{}: {e}", from.display()))
    };
    copy(Path::new("/usr/lib/PXELINUX/pxelinux.0"), &pxe.join("pxelinux.0"))?;
    copy(Path::new("/usr/lib/syslinux/modules/bios/ldlinux.c32"), &pxe.join("ldlinux.c32"))?;
    for e in m.entries {
        for f in ["vmlinuz", "initrd.gz"] {
            copy(&stage.join("boot").join(&e.dir).join(f), &pxe.join("boot").join(&e.dir).join(f))?;
        }
    }
    write(pxe.join("pxelinux.cfg/default"), m.syslinux(""))?;
    let uefi_lines = match chains {
        Some(chains) => {
            // shim loads grubx64.efi (grubaa64.efi) from its own TFTP
            // directory; the signed netboot GRUB's prefix is (tftp)/grub.
            let mut lines = String::new();
            for chain in chains {
                let n = chain.names;
                copy(&chain.shim, &pxe.join(n.pxe_shim))?;
                copy(&chain.grub_net, &pxe.join(n.grub))?;
                lines += &dhcp_lines(n.dhcp_client_arch, n.pxe_shim);
            }
            write(pxe.join("grub/grub.cfg"), m.grub("(tftp)"))?;
            lines
        }
        None => grub_netboot(pxe, m)?,
    };
    write(
        pxe.join("README.txt"),
        format!(
            "Serve this directory over TFTP and point DHCP at it. With dnsmasq:\n\n  enable-tftp\n  tftp-root=/path/to/this/pxe\n  dhcp-boot=pxelinux.0\n{}\nOver PXE there is no results stick: results come from the serial console only.\nA LAVA lab boots these files with the jobs `cargo xtask lava` writes.\n",
            uefi_lines.lines().map(|l| format!("  {l}\n")).collect::<String>()
        ),
    )
}

/// GRUB's netboot core for each platform the menu needs, under grub/ with
/// the one grub.cfg they share (its blocks per architecture), and the
/// dnsmasq lines that send each UEFI client architecture (RFC 4578: 7 is
/// x86-64, 11 is ARM64) to its core. A platform GRUB cannot be made for is
/// said and left out.
fn grub_netboot(pxe: &Path, m: &menu::Menu) -> Result<String> {
    let sh = shell()?;
    let mut lines = String::new();
    for arch in m.grub_platforms() {
        let platform = grub_platform::for_arch(arch)?;
        let (name, dir) = (platform.name, &platform.modules);
        match crate::host::process::run(cmd!(sh, "grub-mknetdir --net-directory={pxe} --subdir=grub -d {dir}")) {
            Ok(_) => lines += &dhcp_lines(if arch == Arch::Aarch64 { 11 } else { 7 }, &format!("grub/{name}/core.efi")),
            Err(e) => eprintln!("image: no UEFI network boot for {name} in pxe/ ({e})"),
        }
    }
    if !lines.is_empty() {
        write(pxe.join("grub/grub.cfg"), m.grub("(tftp)"))?;
    }
    Ok(lines)
}

/// dnsmasq's lines that send UEFI clients of one architecture (RFC 4578's
/// client-arch: 7 x86-64, 11 ARM64) to `bootfile`.
fn dhcp_lines(client_arch: u32, bootfile: &str) -> String {
    let tag = if client_arch == 11 { "efiarm64" } else { "efi64" };
    format!("dhcp-match=set:{tag},option:client-arch,{client_arch}\ndhcp-boot=tag:{tag},{bootfile}\n")
}
