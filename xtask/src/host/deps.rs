//! What the tests need from the host, installed by `cargo xtask test` itself
//! so that the README's test command works on a fresh Debian/Ubuntu machine
//! (as root; otherwise it prints the one apt-get line to run).
//!
//! One table: the command or file a test uses → the Debian package that
//! provides it. `.ci/run` installs nothing of its own beyond what building
//! xtask needs: it calls `cargo xtask test`, which calls `ensure_test_tools`.

use crate::host::process::{cmd, shell};
use crate::host::project::Result;
use crate::host::tools;

/// Every host tool the tests use, with its Debian package. A leading '/'
/// means a file, anything else a command on PATH (or /sbin, /usr/sbin).
pub const TEST_TOOLS: &[(&str, &str)] = &[
    ("cc", "gcc"),              // the musl targets link through cc
    ("musl-gcc", "musl-tools"), // the image's static mke2fs
    // …and its i686 build (the 32-bit libgcc it also needs is named by
    // static_mkfs, from the host gcc's version).
    ("/usr/lib/i386-linux-musl/libc.a", "musl-dev:i386"),
    ("/usr/include/linux/major.h", "linux-libc-dev"), // the static mkreiserfs
    ("curl", "curl"),                                 // its pinned e2fsprogs source
    ("git", "git"), // tests/bisect.rs's histories; `bootmark bisect git` and check bisect-git
    ("fio", "fio"), // tests/fio.rs: Debian's fio under `bootmark run`; `cargo xtask bench`
    ("make", "make"),
    ("qemu-aarch64", "qemu-user"), // the aarch64 /init run in user mode
    ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"), // C programs for arm64 (with arm64's musl)
    ("strip", "binutils"),
    ("g++", "g++"),                     // libFuzzer (cargo fuzz) is C++
    ("setpriv", "util-linux"),          // a test runs as an unprivileged user
    ("unshare", "util-linux"),          // fake boots: PID + mount namespaces
    ("blkid", "util-linux"),            // label probing is checked against blkid
    ("losetup", "mount"),               // fake boots: loop devices as stick and target
    ("mkfs.ext4", "e2fsprogs"),         // label probing tests, fake-boot target
    ("debugfs", "e2fsprogs"),           // fake boots read the target and stick back
    ("mkfs.vfat", "dosfstools"),        // the stick's filesystem
    ("fsck.fat", "dosfstools"),         // stick consistency after resets
    ("mkfs.xfs", "xfsprogs"),           // label probing
    ("mkfs.reiserfs", "reiserfsprogs"), // label probing
    ("sfdisk", "fdisk"),                // MBR/GPT PARTUUID tests
    ("mdir", "mtools"),                 // reading a vfat stick image
    ("mcopy", "mtools"),
    ("mmd", "mtools"),        // the ISO's EFI boot image
    ("cpio", "cpio"),         // newc golden tests against GNU cpio
    ("dpkg-deb", "dpkg"),     // unpacking Debian kernel packages
    ("syslinux", "syslinux"), // the stick's BIOS bootloader
    ("/usr/lib/syslinux/mbr/mbr.bin", "syslinux-common"),
    ("/usr/lib/syslinux/modules/bios/ldlinux.c32", "syslinux-common"),
    ("/usr/lib/PXELINUX/pxelinux.0", "pxelinux"),
    ("grub-mkstandalone", "grub-common"),
    ("/usr/lib/grub/x86_64-efi/linux.mod", "grub-efi-amd64-bin"),
    ("/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf"),
    ("/usr/share/OVMF/OVMF_CODE_4M.secboot.fd", "ovmf"), // Secure Boot on, Microsoft's keys
    ("xorriso", "xorriso"),                              // bootmark.iso
    ("/usr/lib/ISOLINUX/isolinux.bin", "isolinux"),      // …its BIOS boot
    ("sbattach", "sbsigntool"),                          // a kernel with its signature removed
    ("qemu-system-x86_64", "qemu-system-x86"),           // the boot tests (also qemu-system-i386)
    ("qemu-system-aarch64", "qemu-system-arm"),          // the arm64 boots
    ("/usr/share/AAVMF/AAVMF_CODE.fd", "qemu-efi-aarch64"), // …under UEFI (and .ms.fd: Secure Boot on)
    ("cryptsetup", "cryptsetup-bin"),                    // formatting refusals: a LUKS partition
    ("pvcreate", "lvm2"),                                // formatting refusals: an LVM2 physical volume
    ("mdadm", "mdadm"),                                  // the LVM-on-RAID boot: its helper boot makes the array
    ("busybox", "busybox-static"), // …and runs its script (a dynamic busybox is copied with its libraries)
    ("ldd", "libc-bin"),           // …which ldd names
    ("mkswap", "util-linux"),      // formatting refusals: swap
    ("mkfs.btrfs", "btrfs-progs"), // formatting refusals: btrfs
    ("mkfs.ntfs", "ntfs-3g"),      // formatting refusals: NTFS
    ("lava-run", "lava-dispatcher"), // the LAVA jobs, run without a server
    ("chromium-headless-shell", "chromium-headless-shell"), // the report's pictures, screenshot
    ("ipmi_sim", "openipmi"),      // bootmark lab: a BMC on 127.0.0.1
    ("ipmitool", "ipmitool"),      // …driven as a lab drives a server's
    ("python3", "python3"),        // bootmark lab's Redfish test: sushy-tools in a venv
    ("openssl", "openssl"),        // …its BMC's self-signed certificate
    ("rpmbuild", "rpm"),           // the kernel-RPM boot test builds a 2005-shaped RPM
    ("xz", "xz-utils"),            // …of Debian's kernel, its modules as .ko.xz
    ("zstd", "zstd"),
    ("dpkg-scanpackages", "dpkg-dev"), // kernels from any Debian suite: a file archive made in a test…
    ("gpg", "gpg"), // …and signed with a throwaway key                                    // compressed modules: .ko.zst as packages ship them
    // A kernel built from source (kernel_src::BUILD_TOOLS is what building needs).
    ("/usr/src/linux-source-6.1.tar.xz", "linux-source-6.1"),
    ("/usr/share/lava-common/lava-schema.py", "lava-common"), // …and checked against LAVA's schema
];

/// Root on Debian/Ubuntu: then xtask may run apt-get itself.
pub fn can_install() -> bool {
    // SAFETY: geteuid has no side effects.
    let root = unsafe { libc::geteuid() } == 0;
    root && std::path::Path::new("/etc/debian_version").exists()
}

/// mkfs, losetup and friends live in /sbin and /usr/sbin, which a
/// non-login environment (CI, sudo) may leave out of PATH; the tests and
/// everything they start find them by name.
pub fn add_sbin_to_path() {
    let path = std::env::var("PATH").unwrap_or_default();
    let missing: Vec<&str> = ["/usr/sbin", "/sbin"].into_iter().filter(|d| !path.split(':').any(|p| p == *d)).collect();
    if !missing.is_empty() {
        // SAFETY: called first thing in xtask's single thread, before any thread exists.
        unsafe { std::env::set_var("PATH", format!("{path}:{}", missing.join(":"))) };
    }
}

/// Make sure every tool the tests use is there, and that apt knows the
/// i386 architecture (the 32-bit boot test downloads Debian's 686 kernel)
/// and has package lists (the boot tests `apt-get download` kernels).
pub fn ensure_test_tools() -> Result<()> {
    let install = can_install();
    if install {
        add_i386_architecture()?;
        // Package lists are needed for the kernels even when every tool is
        // there (apt::install updates them itself before installing).
        if !lists_present("i386_Packages") && tools::missing(TEST_TOOLS).is_empty() {
            crate::host::apt::update();
        }
    }
    tools::ensure(TEST_TOOLS, install, "sudo (as root `cargo xtask test` installs them itself)")
}

pub fn add_i386_architecture() -> Result<()> {
    let sh = shell()?;
    let known = crate::host::process::run(cmd!(sh, "dpkg --print-foreign-architectures"))?;
    if !known.lines().any(|l| l.trim() == "i386") {
        eprintln!("xtask: dpkg --add-architecture i386 (the 32-bit boot test uses Debian's 686 kernel)");
        crate::host::process::run(cmd!(sh, "dpkg --add-architecture i386"))?;
    }
    Ok(())
}

/// Does apt have a package list whose file name ends with `suffix`?
fn lists_present(suffix: &str) -> bool {
    std::path::Path::new("/var/lib/apt/lists")
        .read_dir()
        .is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(suffix))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Programs xtask starts by a literal name that are not in `TEST_TOOLS`
    /// under that name: each with why it needs no entry there.
    const NOT_IN_TEST_TOOLS: &[(&str, &str)] = &[
        ("apt-get", "Debian's own (apt, priority required)"),
        ("cargo", "the toolchain that runs xtask itself"),
        ("rustup", "the toolchain that runs xtask itself (static_binary says what to do without it)"),
        ("true", "coreutils, essential (the runner's own tests)"),
        ("false", "coreutils, essential (the runner's own tests)"),
        ("apt-cache", "Debian's own (apt)"),
        ("dpkg", "Debian's own (dpkg, essential)"),
        ("dpkg-query", "Debian's own (dpkg, essential)"),
        ("cp", "coreutils, essential"),
        ("dd", "coreutils, essential"),
        ("taskset", "util-linux, essential (`bench --cpus`)"),
        ("sleep", "coreutils, essential"),
        ("timeout", "coreutils, essential"),
        ("chroot", "coreutils, essential"),
        ("grep", "grep, essential"),
        ("tar", "tar, essential"),
        ("ldd", "libc-bin, essential"),
        ("sh", "dash, essential (the process runner's own test)"),
        ("/nonexistent/tool", "the process runner's own test of a missing program"),
        ("gcc", "the gcc package, listed as cc"),
        ("mtype", "mtools, listed as mdir and mcopy"),
        ("mkfs.fat", "dosfstools, listed as mkfs.vfat"),
        ("mkfs.ext3", "e2fsprogs, listed as mkfs.ext4"),
        ("dumpe2fs", "e2fsprogs, listed as mkfs.ext4"),
        ("reiserfsck", "reiserfsprogs, listed as mkfs.reiserfs"),
        ("debugreiserfs", "reiserfsprogs, listed as mkfs.reiserfs"),
        ("grub-mknetdir", "grub-common, listed as grub-mkstandalone"),
    ];

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The programs a source file starts by name: the first word of each
    /// `cmd!(sh, "…")` and each `sh.cmd("…")` (an interpolated `{program}`
    /// or a path such as ./configure is not a package's tool).
    fn programs_started_by_name(text: &str) -> Vec<&str> {
        let mut found = Vec::new();
        for (i, _) in text.match_indices("cmd!(") {
            let Some(quote) = text[i..].find('"') else { continue };
            let rest = &text[i + quote + 1..];
            found.push(rest.split(|c: char| c.is_whitespace() || c == '"').next().unwrap_or(""));
        }
        for (i, m) in text.match_indices(".cmd(\"") {
            found.push(text[i + m.len()..].split('"').next().unwrap_or(""));
        }
        let a_name = |p: &&str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
        found.retain(a_name);
        found
    }

    #[test]
    fn the_programs_started_by_name_are_found_in_both_forms() {
        let text = "let sh = shell()?;\nrun(cmd!(sh, \"mkfs.fat -C {img}\"))?;\nrun(cmd!(\n    sh,\n    \"xorriso -as mkisofs\"\n))?;\n\
                    spawn(sh.cmd(\"unshare\").args(a))?;\nrun(cmd!(sh, \"{program} -k\"))?;\nrun(cmd!(sh, \"./configure\"))?;";
        assert_eq!(programs_started_by_name(text), ["mkfs.fat", "xorriso", "unshare"]);
    }

    /// A fresh machine has only what `TEST_TOOLS` installs: a program the
    /// tests start that is in neither table works here and fails in CI.
    #[test]
    fn every_program_xtask_starts_by_name_is_installed_or_accounted_for() {
        let mut files = Vec::new();
        rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
        let listed = |prog: &str| {
            TEST_TOOLS.iter().any(|(w, _)| *w == prog) || NOT_IN_TEST_TOOLS.iter().any(|(w, _)| *w == prog)
        };
        let mut unlisted = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            // Comments name programs without starting them.
            let code: String =
                text.lines().filter(|l| !l.trim_start().starts_with("//")).map(|l| format!("{l}\n")).collect();
            for prog in programs_started_by_name(&code) {
                if !listed(prog) {
                    unlisted.push(format!("{prog} ({})", f.display()));
                }
            }
        }
        assert!(
            unlisted.is_empty(),
            "programs started by name but not in TEST_TOOLS (or NOT_IN_TEST_TOOLS with a reason): {unlisted:?}"
        );
    }
}
