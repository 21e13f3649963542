//! Boot menus: one entry per kernel, the same entries for syslinux (BIOS,
//! PXE) and GRUB (UEFI, UEFI PXE). Plain files on the FAT partition, so the
//! default entry can be changed later without rebuilding anything.

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
    /// syslinux.cfg / pxelinux.cfg/default; `root` is the path prefix of boot/
    /// ("/" on the stick, "" over TFTP).
    pub fn syslinux(&self, root: &str) -> String {
        let mut s = format!(
            "# bootmark boot menu (BIOS). DEFAULT names the entry that boots.\nSERIAL {} {}\nPROMPT 1\nTIMEOUT {}\nDEFAULT {}\n",
            self.serial_unit,
            self.serial_speed,
            self.timeout_s * 10,
            self.entries[self.default].label
        );
        for e in self.entries {
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
    /// "(tftp)" for network boot.
    pub fn grub(&self, root: &str) -> String {
        let mut s = format!(
            "# bootmark boot menu (UEFI). `set default` names the entry that boots.\nserial --unit={} --speed={}\nterminal_input serial console\nterminal_output serial console\nset timeout={}\nset default={}\n",
            self.serial_unit, self.serial_speed, self.timeout_s, self.default
        );
        for e in self.entries {
            s += &format!(
                "\nmenuentry '{t}' --id {l} {{\n  linux {root}/boot/{d}/vmlinuz {c}\n  initrd {root}/boot/{d}/initrd.gz\n}}\n",
                l = e.label,
                d = e.dir,
                t = e.title.replace('\'', ""),
                c = e.cmdline
            );
        }
        s
    }
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
            },
            Entry {
                label: "k1".into(),
                dir: "k1".into(),
                title: "Linux 6.1 rt".into(),
                cmdline: "console=ttyS0,115200 bootmark.plan=seed".into(),
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
            grub.contains("set default=1")
                && grub.contains("linux /boot/k1/vmlinuz console=ttyS0,115200 bootmark.plan=seed")
        );
        assert!(m.grub("(tftp)").contains("initrd (tftp)/boot/k0/initrd.gz"));
        assert!(m.syslinux("").contains("KERNEL boot/k0/vmlinuz"));
    }
}
