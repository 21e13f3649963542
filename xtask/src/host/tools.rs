//! Host tools the image build needs, with the Debian package of each, so a
//! missing one is one clear message (or, with --install-deps, one apt-get).

use crate::host::project::Result;
use std::path::Path;

/// (what must exist, Debian package). A leading '/' means a file, else a command.
pub const IMAGE_TOOLS: [(&str, &str); 11] = [
    ("sfdisk", "fdisk"),
    ("mkfs.fat", "dosfstools"),
    ("syslinux", "syslinux"),
    ("/usr/lib/syslinux/mbr/mbr.bin", "syslinux-common"),
    ("/usr/lib/syslinux/modules/bios/ldlinux.c32", "syslinux-common"),
    ("/usr/lib/PXELINUX/pxelinux.0", "pxelinux"),
    ("mcopy", "mtools"),
    ("grub-mkstandalone", "grub-common"),
    ("/usr/lib/grub/x86_64-efi/linux.mod", "grub-efi-amd64-bin"),
    ("dpkg-deb", "dpkg"),
    ("cpio", "cpio"),
];

pub fn have(what: &str) -> bool {
    if what.starts_with('/') {
        return Path::new(what).exists();
    }
    let path = std::env::var("PATH").unwrap_or_default() + ":/sbin:/usr/sbin";
    path.split(':').any(|d| Path::new(d).join(what).is_file())
}

/// Packages providing the missing tools of `list`.
pub fn missing(list: &[(&str, &'static str)]) -> Vec<&'static str> {
    let mut pkgs: Vec<&'static str> = list.iter().filter(|(w, _)| !have(w)).map(|(_, p)| *p).collect();
    pkgs.sort();
    pkgs.dedup();
    pkgs
}

/// Check, and with `install` (root on Debian/Ubuntu) install, the packages.
pub fn ensure(list: &[(&str, &'static str)], install: bool, flag: &str) -> Result<()> {
    let pkgs = missing(list);
    if pkgs.is_empty() {
        return Ok(());
    }
    let what: Vec<String> =
        list.iter().filter(|(w, _)| !have(w)).map(|(w, p)| format!("  {w:<45} (Debian package {p})")).collect();
    if !install {
        return Err(format!(
            "missing host tools:\n{}\ninstall them with:\n  sudo apt-get install --no-install-recommends {}\nor rerun with {flag}",
            what.join("\n"),
            pkgs.join(" ")
        ));
    }
    eprintln!("xtask: installing {}", pkgs.join(" "));
    let installed = crate::host::apt::install(&pkgs);
    let still: Vec<&str> = list.iter().filter(|(w, _)| !have(w)).map(|(w, _)| *w).collect();
    match (installed, still.is_empty()) {
        (Ok(()), true) => Ok(()),
        (Ok(()), false) => Err(format!("apt-get install {} left missing: {}", pkgs.join(" "), still.join(", "))),
        (Err(e), _) => Err(format!(
            "{e}{}",
            if still.is_empty() { String::new() } else { format!("; still missing: {}", still.join(", ")) }
        )),
    }
}
