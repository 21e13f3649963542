//! Boot menus: one entry per kernel, the x86 entries for syslinux (BIOS,
//! PXE) and every entry for GRUB (UEFI, UEFI PXE), in a block per GRUB
//! platform when the image holds two, so that each architecture's GRUB lists
//! only its own kernels. Plain files on the FAT partition, so the default
//! entry can be changed later without rebuilding anything.

use crate::build::arch::Arch;

/// One boot entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The syslinux label and GRUB id: k0, k1, … (k0-NAME for a sweep
    /// variant's own entry of kernel 0).
    pub label: String,
    /// The kernel's directory under boot/ (k0, k1, …), shared by its entries.
    pub dir: String,
    pub title: String,
    /// Kernel command line, complete.
    pub cmdline: String,
    /// The kernel's architecture: which bootloaders list the entry.
    pub arch: Arch,
}

pub struct Menu<'a> {
    pub entries: &'a [Entry],
    pub default: usize,
    /// e.g. "0 115200" → ttyS0 at 115200 baud.
    pub serial_unit: u32,
    pub serial_speed: u32,
    pub timeout_s: u32,
}

impl Menu<'_> {
    /// The entries syslinux boots: the x86 ones (arm64 boots UEFI only).
    fn bios_entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.arch != Arch::Aarch64)
    }

    /// syslinux.cfg / pxelinux.cfg/default; `root` is the path prefix of boot/
    /// ("/" on the stick, "" over TFTP). Its DEFAULT is the image's default
    /// entry, or its first x86 entry when the default is arm64's.
    pub fn syslinux(&self, root: &str) -> String {
        let default = Some(&self.entries[self.default])
            .filter(|e| e.arch != Arch::Aarch64)
            .or_else(|| self.bios_entries().next())
            .map_or("none", |e| e.label.as_str());
        let mut s = format!(
            "# bootmark boot menu (BIOS). DEFAULT names the entry that boots.\nSERIAL {} {}\nPROMPT 1\nTIMEOUT {}\nDEFAULT {default}\n",
            self.serial_unit,
            self.serial_speed,
            self.timeout_s * 10,
        );
        for e in self.bios_entries() {
            s += &format!(
                "\nLABEL {l}\n  MENU LABEL {t}\n  KERNEL {root}boot/{d}/vmlinuz\n  INITRD {root}boot/{d}/initrd.gz\n  APPEND {c}\n",
                l = e.label,
                d = e.dir,
                t = e.title,
                c = e.cmdline
            );
        }
        s
    }

    /// grub.cfg; `root` is "" on the stick (files relative to $root) or
    /// "(tftp)" for network boot. `set default` names an entry by its id:
    /// on the architecture that lacks it GRUB boots its own first entry.
    pub fn grub(&self, root: &str) -> String {
        let mut s = format!(
            "# bootmark boot menu (UEFI). `set default` names the entry that boots.\nset timeout={}\nset default={}\n",
            self.timeout_s, self.entries[self.default].label
        );
        let platforms = self.grub_platforms();
        for platform in &platforms {
            let blocks = platforms.len() > 1;
            if blocks {
                s += &format!("\nif [ \"$grub_cpu\" = \"{}\" ]; then\n", grub_cpu(*platform));
            }
            if *platform != Arch::Aarch64 {
                // x86 servers' consoles are 16550 UARTs GRUB drives itself;
                // arm64's UEFI console already is the serial port.
                s += &format!(
                    "serial --unit={} --speed={}\nterminal_input serial console\nterminal_output serial console\n",
                    self.serial_unit, self.serial_speed
                );
            }
            for e in self.entries.iter().filter(|e| grub_platform_of(e.arch) == *platform) {
                s += &format!(
                    "\nmenuentry '{t}' --id {l} {{\n  linux {root}/boot/{d}/vmlinuz {c}\n  initrd {root}/boot/{d}/initrd.gz\n}}\n",
                    l = e.label,
                    d = e.dir,
                    t = e.title.replace('\'', ""),
                    c = e.cmdline
                );
            }
            if blocks {
                s += "fi\n";
            }
        }
        s
    }

    /// The GRUB platforms the entries need, in the order they first appear:
    /// x86_64 (for x86_64 and i686 kernels) and arm64.
    pub fn grub_platforms(&self) -> Vec<Arch> {
        let mut out = Vec::new();
        for e in self.entries {
            let p = grub_platform_of(e.arch);
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}

/// The command line each bootloader that lists an `arch` entry hands its
/// kernel, for an entry whose files are in boot/`dir` and whose own line is
/// `cmdline`: syslinux (stick, ISO) and pxelinux put `BOOT_IMAGE=` and the
/// kernel's path before it and `initrd=` and the initramfs's path after it
/// (as a 2.6.10 record showed: `BOOT_IMAGE=/boot/k0/vmlinuz … initrd=/boot/k0/initrd.gz`);
/// GRUB puts `BOOT_IMAGE=` and the path as its `linux` line names it
/// (`(tftp)/boot/…` over the network) before it. The kernel keeps this
/// whole line, or cuts it at its limit.
pub fn as_booted(dir: &str, arch: Arch, cmdline: &str) -> Vec<(&'static str, String)> {
    let syslinux =
        |root: &str| format!("BOOT_IMAGE={root}boot/{dir}/vmlinuz {cmdline} initrd={root}boot/{dir}/initrd.gz");
    let grub = |root: &str| format!("BOOT_IMAGE={root}/boot/{dir}/vmlinuz {cmdline}");
    let mut lines = Vec::new();
    if arch != Arch::Aarch64 {
        lines.push(("syslinux (stick, ISO)", syslinux("/")));
        lines.push(("pxelinux", syslinux("")));
    }
    lines.push(("GRUB (stick, ISO)", grub("")));
    lines.push(("GRUB (network)", grub("(tftp)")));
    lines
}

/// The most any bootloader adds to an entry's own line of `arch` in boot/`dir`.
pub fn loader_words_len(dir: &str, arch: Arch) -> usize {
    as_booted(dir, arch, "").iter().map(|(_, line)| line.len()).max().unwrap_or(0)
}

/// The GRUB that boots `arch`'s kernels: x86_64's for i686 too (servers
/// that boot UEFI are 64-bit).
pub fn grub_platform_of(arch: Arch) -> Arch {
    if arch == Arch::Aarch64 { Arch::Aarch64 } else { Arch::X86_64 }
}

/// GRUB's `$grub_cpu` on that platform.
fn grub_cpu(platform: Arch) -> &'static str {
    if platform == Arch::Aarch64 { "arm64" } else { "x86_64" }
}

/// The image's id: the same menus give the same id. GRUB finds the
/// stick or the ISO by the file `boot/grub/bootmark-ID`, so that an ISO
/// booted beside a results stick of another image boots its own kernels.
pub fn image_id(syslinux: &str, grub: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{syslinux}\0{grub}").as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// The id file's path on the stick and the ISO.
pub fn id_file(id: &str) -> String {
    format!("boot/grub/bootmark-{id}")
}

/// The config that finds the image's own device by its id file and loads
/// its grub.cfg: built into the unsigned BOOTX64.EFI, and where Debian's
/// signed GRUB looks first (EFI/debian/grub.cfg on the stick).
pub fn grub_finder(id: &str) -> String {
    format!(
        "search --no-floppy --set=root --file /{}\nset prefix=($root)/boot/grub\nconfigfile ($root)/boot/grub/grub.cfg\n",
        id_file(id)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_menus_list_every_entry_with_the_same_command_line() {
        let entries = [
            Entry {
                label: "k0".into(),
                dir: "k0".into(),
                title: "Linux 6.1".into(),
                cmdline: "console=ttyS0,115200 bootmark.plan=quick".into(),
                arch: Arch::X86_64,
            },
            Entry {
                label: "k1".into(),
                dir: "k1".into(),
                title: "Linux 6.1 rt".into(),
                cmdline: "console=ttyS0,115200 bootmark.plan=seed".into(),
                arch: Arch::X86_64,
            },
        ];
        let m = Menu { entries: &entries, default: 1, serial_unit: 0, serial_speed: 115200, timeout_s: 3 };
        let sys = m.syslinux("/");
        assert!(sys.contains("SERIAL 0 115200") && sys.contains("DEFAULT k1") && sys.contains("TIMEOUT 30"));
        assert!(
            sys.contains("KERNEL /boot/k0/vmlinuz") && sys.contains("APPEND console=ttyS0,115200 bootmark.plan=seed")
        );
        let grub = m.grub("");
        assert!(
            grub.contains("set default=k1\n")
                && grub.contains("linux /boot/k1/vmlinuz console=ttyS0,115200 bootmark.plan=seed")
        );
        assert!(m.grub("(tftp)").contains("initrd (tftp)/boot/k0/initrd.gz"));
        assert!(m.syslinux("").contains("KERNEL boot/k0/vmlinuz"));
    }

    /// A stick for both architectures: syslinux lists the x86 kernels, and
    /// each GRUB sees a block of its own kernels only, the default by id.
    #[test]
    fn each_architecture_lists_only_its_own_kernels() {
        let entry = |n: usize, arch: Arch, console: &str| Entry {
            label: format!("k{n}"),
            dir: format!("k{n}"),
            title: format!("Linux ({arch})"),
            cmdline: format!("console={console},115200 bootmark.entry=k{n}"),
            arch,
        };
        let entries =
            [entry(0, Arch::Aarch64, "ttyAMA0"), entry(1, Arch::X86_64, "ttyS0"), entry(2, Arch::I686, "ttyS0")];
        let m = Menu { entries: &entries, default: 0, serial_unit: 0, serial_speed: 115200, timeout_s: 3 };
        assert_eq!(m.grub_platforms(), [Arch::Aarch64, Arch::X86_64]);
        let sys = m.syslinux("/");
        assert_eq!(bootmark::bootmenu::labels(&sys), ["k1", "k2"]);
        assert!(sys.contains("DEFAULT k1\n") && !sys.contains("ttyAMA0"), "{sys}");
        let grub = m.grub("");
        assert_eq!(bootmark::bootmenu::grub_ids(&grub), ["k0", "k1", "k2"]);
        let arm = grub.split("if [ \"$grub_cpu\" = \"arm64\" ]; then\n").nth(1).unwrap().split("fi\n").next().unwrap();
        let x86 = grub.split("if [ \"$grub_cpu\" = \"x86_64\" ]; then\n").nth(1).unwrap().split("fi\n").next().unwrap();
        assert_eq!(
            (bootmark::bootmenu::grub_ids(arm), bootmark::bootmenu::grub_ids(x86)),
            (vec!["k0".to_string()], vec!["k1".to_string(), "k2".to_string()])
        );
        assert!(x86.starts_with("serial --unit=0 --speed=115200\n") && !arm.contains("serial"), "{grub}");
        assert!(grub.contains("set default=k0\n"), "{grub}");
        // One architecture: no blocks, the menu as it always was.
        let one = Menu { entries: &entries[1..], ..m };
        assert!(!one.grub("").contains("grub_cpu") && one.grub("").contains("serial --unit=0"));
    }
}
