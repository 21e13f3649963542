//! The kernel's build configuration (`/boot/config-<release>`, a build
//! tree's `.config`, a copy of `/proc/config.gz`): what is built in (`=y`),
//! what is a module (`=m`), and whether the kernel can run our image at all.
//!
//! Kernels before 2.6.33 have no `modules.builtin`, so the config is the only
//! way to know that a driver the image lists (sd_mod, vfat, …) is built in
//! rather than missing. Module names are mapped to the config symbols that
//! build them through `MODULE_SYMBOLS`, a small table covering
//! image/modules/*.list; a listed module not in the table is judged by the
//! modules tree alone.

use crate::build::arch::Arch;
use crate::host::project::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default)]
pub struct KernelConfig {
    /// CONFIG_ name without the prefix → value (`y`, `m`, a string or number).
    values: BTreeMap<String, String>,
    /// Options the file says are "not set".
    unset: std::collections::BTreeSet<String>,
    pub path: PathBuf,
}

/// Module name (as in image/modules) → the config symbols that build it
/// (any one of them =y means built in). Older names first where they changed.
pub const MODULE_SYMBOLS: &[(&str, &[&str])] = &[
    ("sd_mod", &["BLK_DEV_SD"]),
    ("usb_storage", &["USB_STORAGE"]),
    ("uas", &["USB_UAS"]),
    ("ahci", &["SATA_AHCI", "SCSI_SATA_AHCI"]),
    ("ata_piix", &["ATA_PIIX", "SCSI_ATA_PIIX"]),
    ("ata_generic", &["ATA_GENERIC"]),
    ("pata_acpi", &["PATA_ACPI"]),
    ("virtio_blk", &["VIRTIO_BLK"]),
    ("virtio_pci", &["VIRTIO_PCI"]),
    ("virtio_scsi", &["SCSI_VIRTIO"]),
    ("mptspi", &["FUSION_SPI"]),
    ("mptsas", &["FUSION_SAS"]),
    ("megaraid_sas", &["MEGARAID_SAS"]),
    ("cciss", &["BLK_CPQ_CISS_DA"]),
    ("hpsa", &["SCSI_HPSA"]),
    ("aacraid", &["SCSI_AACRAID"]),
    ("xhci_pci", &["USB_XHCI_PCI", "USB_XHCI_HCD"]),
    ("ehci_pci", &["USB_EHCI_PCI", "USB_EHCI_HCD"]),
    ("ohci_pci", &["USB_OHCI_HCD_PCI", "USB_OHCI_HCD"]),
    ("uhci_hcd", &["USB_UHCI_HCD"]),
    ("vfat", &["VFAT_FS"]),
    ("nls_cp437", &["NLS_CODEPAGE_437"]),
    ("nls_ascii", &["NLS_ASCII"]),
    ("nls_utf8", &["NLS_UTF8"]),
    ("ext2", &["EXT2_FS"]),
    ("ext3", &["EXT3_FS"]),
    ("ext4", &["EXT4_FS"]),
    ("xfs", &["XFS_FS"]),
    ("reiserfs", &["REISERFS_FS"]),
];

/// Something a kernel built from kernel-configs/ must build in, beyond
/// what any kernel needs to run the image (`check_can_run_image`).
pub struct Driver {
    pub what: &'static str,
    /// The first kernel that has it (older lines are not asked for it).
    pub since: (u32, u32, u32),
    /// The config symbols that build it across kernel lines: any one =y.
    pub symbols: &'static [&'static str],
    /// The architectures whose servers have it.
    pub on: &'static [Arch],
}

/// The 2006-era PC hardware of the seed's servers.
const PC: &[Arch] = &Arch::X86;
/// Every architecture's servers.
const ANY: &[Arch] = &Arch::ALL;
/// arm64 servers: SBSA UART.
const ARM64: &[Arch] = &[Arch::Aarch64];

/// The storage, USB and filesystems of 2006-era and current servers, and a
/// serial console, all built in: an image of a kernel built from source
/// needs no modules.
pub const BUILT_IN_FOR_SERVERS: &[Driver] = &[
    Driver { what: "serial console on ttyS0", since: (2, 6, 0), symbols: &["SERIAL_8250_CONSOLE"], on: PC },
    Driver { what: "devtmpfs", since: (2, 6, 32), symbols: &["DEVTMPFS"], on: ANY },
    Driver { what: "SCSI disks", since: (2, 6, 0), symbols: &["BLK_DEV_SD"], on: ANY },
    Driver {
        what: "Intel PIIX/ICH SATA (ata_piix)",
        since: (2, 6, 0),
        symbols: &["ATA_PIIX", "SCSI_ATA_PIIX"],
        on: PC,
    },
    // 2.6.9's SATA drivers have no AHCI (kernel-configs/2.6.9/kconfig-evidence.txt).
    Driver { what: "AHCI SATA", since: (2, 6, 10), symbols: &["SATA_AHCI", "SCSI_SATA_AHCI"], on: ANY },
    Driver { what: "IDE/PATA on Intel PIIX", since: (2, 6, 0), symbols: &["BLK_DEV_PIIX", "ATA_PIIX"], on: PC },
    Driver { what: "Symbios/LSI 53c8xx SCSI (sym53c8xx)", since: (2, 6, 0), symbols: &["SCSI_SYM53C8XX_2"], on: PC },
    Driver { what: "Adaptec aic7xxx SCSI", since: (2, 6, 0), symbols: &["SCSI_AIC7XXX"], on: PC },
    Driver { what: "LSI Fusion MPT SCSI (mptspi)", since: (2, 6, 0), symbols: &["FUSION_SPI", "FUSION"], on: PC },
    Driver { what: "LSI Fusion MPT SAS (mptsas)", since: (2, 6, 16), symbols: &["FUSION_SAS"], on: PC },
    Driver {
        what: "LSI MegaRAID",
        since: (2, 6, 0),
        symbols: &["MEGARAID_LEGACY", "MEGARAID_MAILBOX", "MEGARAID_SAS"],
        on: PC,
    },
    Driver {
        what: "HP Smart Array (cciss, hpsa)",
        since: (2, 6, 0),
        symbols: &["BLK_CPQ_CISS_DA", "SCSI_HPSA"],
        on: PC,
    },
    Driver { what: "USB UHCI", since: (2, 6, 0), symbols: &["USB_UHCI_HCD"], on: PC },
    Driver { what: "USB OHCI", since: (2, 6, 0), symbols: &["USB_OHCI_HCD"], on: PC },
    Driver { what: "USB EHCI", since: (2, 6, 0), symbols: &["USB_EHCI_HCD"], on: ANY },
    Driver { what: "USB xHCI", since: (2, 6, 31), symbols: &["USB_XHCI_HCD"], on: ANY },
    Driver { what: "USB mass storage", since: (2, 6, 0), symbols: &["USB_STORAGE"], on: ANY },
    Driver { what: "ext2", since: (2, 6, 0), symbols: &["EXT2_FS"], on: ANY },
    Driver { what: "ext3", since: (2, 6, 0), symbols: &["EXT3_FS"], on: ANY },
    Driver { what: "reiserfs", since: (2, 6, 0), symbols: &["REISERFS_FS"], on: ANY },
    Driver { what: "xfs", since: (2, 6, 0), symbols: &["XFS_FS"], on: ANY },
    Driver { what: "vfat (the stick)", since: (2, 6, 0), symbols: &["VFAT_FS"], on: ANY },
    Driver { what: "codepage 437 (vfat's default)", since: (2, 6, 0), symbols: &["NLS_CODEPAGE_437"], on: ANY },
    Driver {
        what: "serial console on ttyAMA0 (PL011, SBSA UART)",
        since: (3, 7, 0),
        symbols: &["SERIAL_AMBA_PL011_CONSOLE"],
        on: ARM64,
    },
    // NVMe came in 3.3; arm64 kernels begin at 3.7.
    Driver { what: "NVMe disks", since: (3, 3, 0), symbols: &["BLK_DEV_NVME"], on: ANY },
];

impl KernelConfig {
    /// Read a config file (plain or gzip, as /proc/config.gz is).
    pub fn read(path: &Path) -> Result<KernelConfig> {
        let raw = std::fs::read(path).map_err(|e| format!("kernel config {}: {e}", path.display()))?;
        let text = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut s)
                .map_err(|e| format!("kernel config {}: not gzip text: {e}", path.display()))?;
            s
        } else {
            String::from_utf8_lossy(&raw).into_owned()
        };
        let config = KernelConfig::parse(&text, path);
        if config.values.is_empty() {
            return Err(format!("{} is not a kernel config (no CONFIG_ lines)", path.display()));
        }
        Ok(config)
    }

    pub fn parse(text: &str, path: &Path) -> KernelConfig {
        let mut c = KernelConfig { path: path.to_path_buf(), ..KernelConfig::default() };
        for line in text.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("# CONFIG_").and_then(|r| r.strip_suffix(" is not set")) {
                c.unset.insert(rest.to_string());
            } else if let Some((k, v)) = line.strip_prefix("CONFIG_").and_then(|l| l.split_once('=')) {
                c.values.insert(k.to_string(), v.trim_matches('"').to_string());
            }
        }
        c
    }

    /// Every option set (`=y`, `=m`, a value; string values without quotes).
    pub fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }

    /// Every option the file says is "not set".
    pub fn unset(&self) -> &std::collections::BTreeSet<String> {
        &self.unset
    }

    pub fn get(&self, symbol: &str) -> Option<&str> {
        self.values.get(symbol).map(String::as_str)
    }

    pub fn is_y(&self, symbol: &str) -> bool {
        self.get(symbol) == Some("y")
    }

    /// x86_64, i686 or aarch64, when the config says.
    pub fn arch(&self) -> Option<Arch> {
        if self.is_y("ARM64") {
            Some(Arch::Aarch64)
        } else if self.is_y("X86_64") || self.is_y("64BIT") && self.is_y("X86") {
            Some(Arch::X86_64)
        } else if self.is_y("X86_32") || self.is_y("X86") {
            Some(Arch::I686)
        } else {
            None
        }
    }

    /// Is the module built into the kernel? None when the table does not
    /// know the module.
    pub fn built_in(&self, module: &str) -> Option<bool> {
        let (_, symbols) = MODULE_SYMBOLS.iter().find(|(m, _)| *m == module)?;
        Some(symbols.iter().any(|s| self.is_y(s)))
    }

    /// Every table module the config builds in.
    pub fn built_in_modules(&self) -> Vec<String> {
        MODULE_SYMBOLS.iter().filter(|(m, _)| self.built_in(m) == Some(true)).map(|(m, _)| m.to_string()).collect()
    }

    /// What of `BUILT_IN_FOR_SERVERS` a kernel of `version` for this
    /// config's architecture (x86 when it does not say) should have and
    /// does not build in, one line each.
    pub fn missing_for_servers(&self, version: (u32, u32, u32)) -> Vec<String> {
        let arch = self.arch().unwrap_or(Arch::X86_64);
        BUILT_IN_FOR_SERVERS
            .iter()
            .filter(|d| d.on.contains(&arch) && version >= d.since && !d.symbols.iter().any(|s| self.is_y(s)))
            .map(|d| format!("{}: none of CONFIG_{} is =y", d.what, d.symbols.join(", CONFIG_")))
            .collect()
    }

    /// Refuse, before anything is written, a kernel that cannot run the
    /// image: each refusal names the option and what to do. Warnings are
    /// returned for what only limits it.
    pub fn check_can_run_image(&self) -> Result<Vec<String>> {
        let name = self.path.display();
        let mut problems = Vec::new();
        if !self.is_y("BLK_DEV_INITRD") {
            problems.push(format!(
                "CONFIG_BLK_DEV_INITRD is not =y in {name}: this kernel cannot load an initramfs, so it can never start bootmark (it would stop at \"VFS: Unable to mount root fs\"). Rebuild it with CONFIG_BLK_DEV_INITRD=y"
            ));
        }
        // RD_GZIP appeared in 2.6.28; before it, initramfs support always included gzip.
        if self.unset.contains("RD_GZIP") {
            problems.push(format!(
                "CONFIG_RD_GZIP is not set in {name}: the kernel cannot unpack bootmark's gzip initramfs. Rebuild it with CONFIG_RD_GZIP=y"
            ));
        }
        if !self.is_y("SYSFS") && !self.is_y("DEVTMPFS") {
            problems.push(format!(
                "neither CONFIG_SYSFS nor CONFIG_DEVTMPFS is =y in {name}: bootmark finds disks through sysfs (and /dev through devtmpfs or sysfs). Rebuild it with CONFIG_SYSFS=y"
            ));
        }
        if !self.is_y("PROC_FS") {
            problems.push(format!("CONFIG_PROC_FS is not =y in {name}: bootmark reads /proc for its measurements"));
        }
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        let mut warnings = Vec::new();
        // arm64 servers' consoles are PL011/SBSA UARTs, or 8250s on some SoCs.
        let consoles: &[&str] = match self.arch() {
            Some(Arch::Aarch64) => &["SERIAL_AMBA_PL011_CONSOLE", "SERIAL_8250_CONSOLE"],
            _ => &["SERIAL_8250_CONSOLE"],
        };
        if !consoles.iter().any(|c| self.is_y(c)) {
            warnings.push(format!(
                "CONFIG_{} is not =y in {name}: no records on a serial console; results only on the stick (none over PXE)",
                consoles.join(" (or CONFIG_") + &")".repeat(consoles.len() - 1)
            ));
        }
        Ok(warnings)
    }
}

/// The config of a kernel in a /boot tree: `config-R` beside `vmlinuz-R`
/// (or the release read from its header).
pub fn find_beside(vmlinuz: &Path, release: &str) -> Option<PathBuf> {
    let dir = vmlinuz.parent()?;
    let from_name = vmlinuz.file_name()?.to_string_lossy().strip_prefix("vmlinuz-").map(String::from);
    [Some(release.to_string()), from_name]
        .into_iter()
        .flatten()
        .map(|r| dir.join(format!("config-{r}")))
        .chain([dir.join(".config"), dir.join("config.gz")])
        .find(|p| p.is_file())
}

/// The modules tree of a kernel in a /boot tree: `../lib/modules/R`.
pub fn modules_beside(vmlinuz: &Path, release: &str) -> Option<PathBuf> {
    let tree = vmlinuz.parent()?.join("../lib/modules").join(release);
    tree.join("kernel").is_dir().then_some(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Like a 2.6.9 distro config: SCSI disk and vfat built in, USB storage a module.
    const OLD: &str = "#\n# Automatically generated make config: don't edit\n# Linux kernel version: 2.6.9\n#\n\
        CONFIG_X86=y\nCONFIG_MMU=y\nCONFIG_BLK_DEV_INITRD=y\nCONFIG_PROC_FS=y\nCONFIG_SYSFS=y\n\
        CONFIG_SCSI=y\nCONFIG_BLK_DEV_SD=y\nCONFIG_SCSI_ATA_PIIX=y\nCONFIG_USB_STORAGE=m\n\
        CONFIG_FAT_FS=m\nCONFIG_VFAT_FS=m\nCONFIG_NLS_CODEPAGE_437=y\nCONFIG_SERIAL_8250_CONSOLE=y\n\
        # CONFIG_DEVTMPFS is not set\nCONFIG_LOCALVERSION=\"-smp\"\n";

    fn cfg(text: &str) -> KernelConfig {
        KernelConfig::parse(text, Path::new("config-test"))
    }

    #[test]
    fn a_2_6_9_style_config_says_what_is_built_in() {
        let c = cfg(OLD);
        assert_eq!(c.arch(), Some(Arch::I686));
        assert_eq!(c.built_in("sd_mod"), Some(true));
        assert_eq!(c.built_in("ata_piix"), Some(true), "the SCSI-layer SATA symbol of 2.6.9");
        assert_eq!(c.built_in("nls_cp437"), Some(true));
        assert_eq!(c.built_in("vfat"), Some(false), "=m is a module, not built in");
        assert_eq!(c.built_in("usb_storage"), Some(false));
        assert_eq!(c.built_in("no_such_driver"), None);
        assert_eq!(c.get("LOCALVERSION"), Some("-smp"));
        assert_eq!(c.check_can_run_image(), Ok(vec![]));
        let x64 = cfg(&OLD.replace("CONFIG_X86=y", "CONFIG_X86_64=y\nCONFIG_X86=y"));
        assert_eq!(x64.arch(), Some(Arch::X86_64));
    }

    #[test]
    fn an_arm64_config_is_asked_for_arm64_servers_hardware_not_pcs() {
        let arm64 = "CONFIG_ARM64=y\nCONFIG_64BIT=y\nCONFIG_BLK_DEV_INITRD=y\nCONFIG_PROC_FS=y\nCONFIG_SYSFS=y\n";
        let c = cfg(arm64);
        assert_eq!(c.arch(), Some(Arch::Aarch64));
        let warned = c.check_can_run_image().unwrap();
        assert!(warned[0].contains("SERIAL_AMBA_PL011_CONSOLE (or CONFIG_SERIAL_8250_CONSOLE)"), "{warned:?}");
        let pl011 = cfg(&format!("{arm64}CONFIG_SERIAL_AMBA_PL011_CONSOLE=y\n"));
        assert_eq!(pl011.check_can_run_image(), Ok(vec![]));
        let missing = c.missing_for_servers((6, 1, 0)).join("\n");
        assert!(missing.contains("NVMe") && missing.contains("ttyAMA0") && missing.contains("xHCI"), "{missing}");
        assert!(!missing.contains("sym53c8xx") && !missing.contains("ttyS0"), "{missing}");
        // And a PC is not asked for arm64's console.
        let pc = cfg(OLD).missing_for_servers((2, 6, 9)).join("\n");
        assert!(!pc.contains("ttyAMA0") && !pc.contains("NVMe") && pc.contains("sym53c8xx"), "{pc}");
    }

    #[test]
    fn kernels_that_cannot_run_the_image_are_refused_by_option() {
        let e =
            cfg(&OLD.replace("CONFIG_BLK_DEV_INITRD=y", "# CONFIG_BLK_DEV_INITRD is not set")).check_can_run_image();
        assert!(e.unwrap_err().contains("CONFIG_BLK_DEV_INITRD"));
        let e = cfg(&format!("{OLD}# CONFIG_RD_GZIP is not set\n")).check_can_run_image();
        assert!(e.unwrap_err().contains("CONFIG_RD_GZIP"));
        let e = cfg(&OLD.replace("CONFIG_SYSFS=y", "")).check_can_run_image();
        assert!(e.unwrap_err().contains("CONFIG_SYSFS"));
        let w = cfg(&OLD.replace("CONFIG_SERIAL_8250_CONSOLE=y", "")).check_can_run_image().unwrap();
        assert!(w[0].contains("SERIAL_8250_CONSOLE"), "no serial console is a warning: the stick still gets results");
    }

    #[test]
    fn a_boot_tree_gives_config_and_modules() {
        let root = std::env::temp_dir().join(format!("bootmark-boot-tree-{}", std::process::id()));
        let boot = root.join("boot");
        std::fs::create_dir_all(root.join("lib/modules/2.6.9-42.ELsmp/kernel")).unwrap();
        std::fs::create_dir_all(&boot).unwrap();
        std::fs::write(boot.join("vmlinuz-2.6.9-42.ELsmp"), b"").unwrap();
        std::fs::write(boot.join("config-2.6.9-42.ELsmp"), OLD).unwrap();
        let k = boot.join("vmlinuz-2.6.9-42.ELsmp");
        assert_eq!(find_beside(&k, "2.6.9-42.ELsmp"), Some(boot.join("config-2.6.9-42.ELsmp")));
        assert!(modules_beside(&k, "2.6.9-42.ELsmp").unwrap().ends_with("lib/modules/2.6.9-42.ELsmp"));
        assert_eq!(modules_beside(&k, "2.6.10"), None);
        let gz = root.join("config.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut enc, OLD.as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        assert_eq!(KernelConfig::read(&gz).unwrap().built_in("sd_mod"), Some(true));
        std::fs::write(root.join("junk"), b"hello").unwrap();
        assert!(KernelConfig::read(&root.join("junk")).unwrap_err().contains("not a kernel config"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
