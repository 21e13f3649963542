//! `cargo xtask qemu` resolved once, as `image` resolves its flags into a
//! `Build`: the flags become a [`Machine`] — chipset and CPU, firmware, the
//! stick, the CD, the network boot, the disks — with every combination
//! checked here, and the QEMU command line is drawn from the `Machine`
//! alone, reading no flag.

use super::args::Args;
use crate::build::arch::Arch;
use crate::build::image::{iso, secure_boot};
use crate::host::project::Result;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// OVMF's firmware: plain, and with Secure Boot (the secboot code and
/// variables with Microsoft's keys enrolled and Secure Boot on, as
/// servers ship).
const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
const OVMF_SECBOOT_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd";
const OVMF_MS_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd";
/// AAVMF, OVMF built for arm64 (Debian's qemu-efi-aarch64): the UEFI of
/// QEMU's virt machine, as arm64 servers boot UEFI only.
const AAVMF_CODE: &str = "/usr/share/AAVMF/AAVMF_CODE.fd";
const AAVMF_VARS: &str = "/usr/share/AAVMF/AAVMF_VARS.fd";
/// AAVMF with Microsoft's keys enrolled and Secure Boot on (as OVMF's .ms).
const AAVMF_MS_CODE: &str = "/usr/share/AAVMF/AAVMF_CODE.ms.fd";
const AAVMF_MS_VARS: &str = "/usr/share/AAVMF/AAVMF_VARS.ms.fd";

/// One boot's machine, every flag resolved.
#[derive(Debug, PartialEq)]
pub struct Machine {
    /// `qemu-system-x86_64`, `qemu-system-i386` or `qemu-system-aarch64`, by the architecture.
    pub qemu: &'static str,
    pub arch: Arch,
    /// `pc` (i440FX, the 2006 machines), `q35`, q35 with SMM for Secure
    /// Boot, or `virt` (arm64).
    pub chipset: &'static str,
    pub cpu: &'static str,
    pub shape: Shape,
    pub kvm: bool,
    /// The console on a TCP port as well as in the log.
    pub serial_tcp: Option<u16>,
    /// The USB controller the stick is on: EHCI on the old machine, xHCI on the others.
    pub usb: &'static str,
    pub stick: Option<Stick>,
    pub cdrom: Option<Cdrom>,
    pub pxe: Option<Pxe>,
    pub disks: Vec<Disk>,
    pub firmware: Firmware,
}

#[derive(Debug, PartialEq)]
pub struct Stick {
    pub file: PathBuf,
    /// Every write recorded here (blklogwrites).
    pub write_log: Option<PathBuf>,
    /// Booted from (not when the boot is over the network or from the CD).
    pub boots: bool,
}

/// The CD's "bus" on arm64: a USB CD on the machine's xHCI.
const USB_CD: &str = "usb";

#[derive(Debug, PartialEq)]
pub struct Cdrom {
    pub iso: PathBuf,
    /// The chipset's own port, where a BMC's virtual CD appears.
    pub bus: &'static str,
}

#[derive(Debug, PartialEq)]
pub struct Pxe {
    pub tftp_root: PathBuf,
    pub bootfile: &'static str,
    /// The NIC model and its options.
    pub nic: &'static str,
    pub mac: Option<String>,
}

#[derive(Debug, PartialEq)]
pub struct Disk {
    /// QEMU's `file=`: the path, or blkdebug rules over it.
    pub file: String,
    pub bus: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Firmware {
    Bios,
    Uefi { secure_boot: bool },
}

/// The machine's size and disk speed: --machine's profile, each part
/// overridden by its own flag.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub cpus: u32,
    pub memory_mib: u32,
    /// 0: unthrottled.
    pub disk_mbps: u32,
    pub disk_iops: u32,
    pub disk_iops_kib: u32,
}

impl Shape {
    pub fn of(args: &Args) -> Shape {
        let dl140 = args.machine == "dl140";
        Shape {
            cpus: args.cpus.unwrap_or(if dl140 { 1 } else { 2 }),
            memory_mib: args.memory.unwrap_or(1024),
            disk_mbps: args.disk_mbps.unwrap_or(if dl140 { 30 } else { 0 }),
            disk_iops: args.disk_iops,
            disk_iops_kib: args.disk_iops_kib,
        }
    }

    /// The throttle in words, for the guest's chassis asset tag (SMBIOS type
    /// 3): /init records it, and the report says the disk's speed was QEMU's.
    fn throttle_said(&self) -> Option<String> {
        (self.disk_mbps > 0).then(|| {
            format!(
                "qemu: disk throttled to {} MB/s and {} requests/s of {} KiB",
                self.disk_mbps, self.disk_iops, self.disk_iops_kib
            )
        })
    }

    /// QEMU's -drive throttling options. QEMU throttles requests after the
    /// guest's scheduler dispatched them, like a slow drive behind a fast
    /// controller.
    fn throttle(&self) -> String {
        if self.disk_mbps == 0 {
            return String::new();
        }
        format!(
            ",throttling.bps-total={},throttling.iops-total={},throttling.iops-size={}",
            u64::from(self.disk_mbps) * 1_000_000,
            self.disk_iops,
            u64::from(self.disk_iops_kib) * 1024
        )
    }
}

/// The flags as a machine, or the first combination that cannot be.
pub fn resolve(args: &Args, arch: Arch) -> Result<Machine> {
    let image = &args.image;
    let old = args.machine == "old";
    if old && args.secure_boot {
        return Err("--secure-boot needs --machine modern (Secure Boot needs the q35 chipset's SMM)".into());
    }
    let stick = image.join("usb.img");
    if !args.no_stick && !stick.exists() {
        return Err(format!("{} has no usb.img: build one with `cargo xtask image`", image.display()));
    }
    let iso = args.iso.clone().unwrap_or_else(|| image.join(iso::FILE));
    if args.cdrom && !iso.exists() {
        return Err(format!("{}: no such ISO (build the image again)", iso.display()));
    }
    let arm64 = arch == Arch::Aarch64;
    if arm64 {
        refuse_for_arm64(args)?;
    }
    // arm64 servers boot UEFI only.
    let uefi = args.uefi || args.secure_boot || arm64;
    // A 32-bit image runs on a 32-bit machine (the i686 /init needs SSE2: a Core Duo).
    let (qemu, cpu) = arch.qemu();
    // q35 for today's servers (PCIe, the NVMe disks, SMM that Secure Boot
    // needs); i440FX for the 2006 machines (PIIX IDE); virt for arm64's.
    let chipset = match (arm64, old, args.secure_boot) {
        (true, _, _) => "virt",
        (false, true, _) => "pc",
        (false, false, false) => "q35",
        (false, false, true) => "q35,smm=on",
    };
    Ok(Machine {
        qemu,
        arch,
        chipset,
        cpu,
        shape: Shape::of(args),
        kvm: args.kvm,
        serial_tcp: args.serial_tcp,
        usb: if old { "usb-ehci" } else { "qemu-xhci" },
        stick: (!args.no_stick).then(|| Stick {
            file: stick,
            write_log: args.stick_write_log.clone(),
            boots: !(args.pxe || args.cdrom),
        }),
        // The chipset's own IDE/SATA port, as a BMC's virtual CD appears on
        // a bus the firmware boots from (q35: the ICH9 AHCI's ports ide.0-5);
        // on arm64 (virt has no IDE) a USB CD, as arm64 BMCs present theirs.
        cdrom: args.cdrom.then_some(Cdrom {
            iso,
            bus: match (arm64, old) {
                (true, _) => USB_CD,
                (false, true) => "ide.1,unit=1",
                (false, false) => "ide.5",
            },
        }),
        pxe: args.pxe.then(|| pxe(args, uefi, arch)),
        disks: disks(args, old, arm64)?,
        firmware: if uefi { Firmware::Uefi { secure_boot: args.secure_boot } } else { Firmware::Bios },
    })
}

fn pxe(args: &Args, uefi: bool, arch: Arch) -> Pxe {
    let tftp_root = args.tftp_root.clone().unwrap_or_else(|| args.image.join("pxe"));
    let arm64 = arch == Arch::Aarch64;
    let bootfile = match (uefi, arm64, secure_boot::in_pxe(&tftp_root, arch)) {
        (false, _, _) => "pxelinux.0",
        (true, false, false) => "grub/x86_64-efi/core.efi",
        (true, true, false) => "grub/arm64-efi/core.efi",
        (true, false, true) => secure_boot::PXE_SHIM,
        (true, true, true) => secure_boot::PXE_SHIM_AA64,
    };
    // Under Secure Boot the firmware refuses QEMU's unsigned iPXE option
    // ROM: a virtio NIC without one is driven by OVMF's own signed driver.
    // arm64: QEMU's iPXE ROMs are x86 code; AAVMF drives virtio itself.
    let nic = if args.secure_boot || arm64 { "virtio-net-pci,romfile=" } else { "e1000" };
    Pxe { tftp_root, bootfile, nic, mac: args.mac.clone() }
}

/// What an arm64 machine cannot be: the 2006 PCs, a BIOS, KVM on this x86
/// host; and what is not built for arm64 yet.
fn refuse_for_arm64(args: &Args) -> Result<()> {
    let refused = [
        (args.machine != "modern", "--machine old and dl140 are 2006 x86 PCs: an arm64 machine is QEMU's virt"),
        (args.kvm, "--kvm needs a host of the guest's architecture: an arm64 guest here runs under TCG"),
    ];
    match refused.iter().find(|(refuse, _)| *refuse) {
        Some((_, why)) => Err((*why).into()),
        None => Ok(()),
    }
}

fn disks(args: &Args, old: bool, arm64: bool) -> Result<Vec<Disk>> {
    // arm64 servers' disks are NVMe.
    let default_bus = match (old, arm64) {
        (_, true) => "nvme",
        (true, false) => "scsi",
        (false, false) => "sata",
    };
    let mut out = Vec::new();
    for (i, d) in args.disks.iter().enumerate() {
        let bus = args.disk_buses.get(i).map_or(default_bus, String::as_str);
        if bus == "ide" && !old {
            return Err("--disk-bus ide needs --machine old (the q35 chipset has no PIIX IDE)".into());
        }
        if !d.exists() {
            return Err(format!("--disk {}: no such file", d.display()));
        }
        let file = match (&args.disk_fault, i) {
            (Some(rules), 0) => format!("blkdebug:{}:{}", rules.display(), d.display()),
            _ => d.display().to_string(),
        };
        out.push(Disk { file, bus: bus.to_string() });
    }
    Ok(out)
}

impl Machine {
    /// QEMU's arguments (after [`Machine::qemu`]), the console to `log`;
    /// `work` holds this boot's own files (the UEFI variables). Creates the
    /// stick's write log.
    pub fn argv(&self, log: &Path, work: &Path) -> Result<Vec<OsString>> {
        let mut c = Argv::default();
        let shape = &self.shape;
        c.args(["-M", self.chipset, "-cpu", self.cpu, "-smp", &shape.cpus.to_string()]);
        c.args(["-m", &shape.memory_mib.to_string()]);
        c.args(["-accel", if self.kvm { "kvm" } else { "tcg" }]);
        if let Some(said) = self.shape.throttle_said() {
            c.args(["-smbios", &format!("type=3,asset={said}")]);
        }
        c.args(["-nographic", "-monitor", "none"]);
        match self.serial_tcp {
            // The socket, and the same bytes in the log file.
            Some(port) => c.args([
                "-chardev",
                &format!("socket,id=console,host=127.0.0.1,port={port},server=on,wait=on,logfile={}", log.display()),
                "-serial",
                "chardev:console",
            ]),
            None => c.arg("-serial").arg(format!("file:{}", log.display())),
        };
        // A guest reboot ends QEMU; sequences start it again (a cold boot, as on real iron).
        c.arg("-no-reboot");
        c.args(["-device", &format!("{},id=usbhc", self.usb)]);
        if let Some(stick) = &self.stick {
            stick.add_to(&mut c)?;
        }
        if let Some(cd) = &self.cdrom {
            c.arg("-drive").arg(format!("if=none,id=cd,media=cdrom,format=raw,readonly=on,file={}", cd.iso.display()));
            match cd.bus {
                // usb-storage presents a CD-ROM drive as a USB CD.
                USB_CD => c.args(["-device", "usb-storage,bus=usbhc.0,drive=cd,bootindex=0"]),
                bus => c.args(["-device", &format!("ide-cd,drive=cd,bus={bus},bootindex=0")]),
            };
        }
        match &self.pxe {
            Some(p) => {
                c.args(["-netdev", &format!("user,id=n0,tftp={},bootfile={}", p.tftp_root.display(), p.bootfile)]);
                let mac = p.mac.as_deref().map(|m| format!(",mac={m}")).unwrap_or_default();
                c.args(["-device", &format!("{},netdev=n0,bootindex=0{mac}", p.nic)]);
            }
            None => {
                c.args(["-nic", "none"]);
            }
        }
        self.add_disks(&mut c);
        match (self.firmware, self.arch) {
            (Firmware::Uefi { secure_boot }, Arch::Aarch64) => add_aavmf(&mut c, secure_boot, work)?,
            (Firmware::Uefi { secure_boot }, _) => add_ovmf(&mut c, secure_boot, work)?,
            (Firmware::Bios, _) => {}
        }
        Ok(c.0)
    }

    /// The disks' controllers, then each disk on its bus, throttled as the machine's shape says.
    fn add_disks(&self, c: &mut Argv) {
        let on = |bus: &str| self.disks.iter().any(|d| d.bus == bus);
        if on("sata") {
            c.args(["-device", "ahci,id=ahci"]);
        }
        if on("scsi") {
            c.args(["-device", "lsi53c895a,id=scsi0"]);
        }
        let throttle = self.shape.throttle();
        for (i, d) in self.disks.iter().enumerate() {
            c.arg("-drive").arg(format!("if=none,id=d{i},format=raw,file={}{throttle}", d.file));
            let device = match d.bus.as_str() {
                "scsi" => format!("scsi-hd,drive=d{i},bus=scsi0.0,scsi-id={i}"),
                // The pc machine's PIIX IDE: two channels, master and slave each.
                "ide" => format!("ide-hd,drive=d{i},bus=ide.{},unit={}", i / 2, i % 2),
                "virtio" => format!("virtio-blk-pci,drive=d{i}"),
                // An NVMe controller per disk, as on servers: /dev/nvme{i}n1.
                "nvme" => format!("nvme,serial=bootmark{i},drive=d{i}"),
                _ => format!("ide-hd,drive=d{i},bus=ahci.{i}"),
            };
            c.args(["-device", &device]);
        }
    }
}

impl Stick {
    fn add_to(&self, c: &mut Argv) -> Result<()> {
        match &self.write_log {
            None => c.arg("-drive").arg(format!("if=none,id=stick,format=raw,file={}", self.file.display())),
            Some(log) => {
                std::fs::write(log, b"").map_err(|e| format!("{}: {e}", log.display()))?;
                c.arg("-drive").arg(format!(
                    "if=none,id=stick,driver=blklogwrites,file.driver=file,file.filename={},log.driver=file,log.filename={},log-sector-size=512",
                    self.file.display(),
                    log.display()
                ))
            }
        };
        let boots = if self.boots { ",bootindex=0" } else { "" };
        c.args(["-device", &format!("usb-storage,bus=usbhc.0,drive=stick{boots}")]);
        Ok(())
    }
}

/// QEMU's arguments as they are drawn, one flag and its value at a time.
#[derive(Default)]
struct Argv(Vec<OsString>);

impl Argv {
    fn arg(&mut self, a: impl Into<OsString>) -> &mut Argv {
        self.0.push(a.into());
        self
    }

    fn args<A: Into<OsString>>(&mut self, args: impl IntoIterator<Item = A>) -> &mut Argv {
        self.0.extend(args.into_iter().map(Into::into));
        self
    }
}

/// OVMF as two flash chips: its code read-only, its variables a copy for this boot.
fn add_ovmf(c: &mut Argv, secure_boot: bool, work: &Path) -> Result<()> {
    let (code, vars_template) = if secure_boot { (OVMF_SECBOOT_CODE, OVMF_MS_VARS) } else { (OVMF_CODE, OVMF_VARS) };
    let vars = work.join("OVMF_VARS.fd");
    std::fs::copy(vars_template, &vars).map_err(|e| format!("{vars_template}: {e} (apt-get install ovmf)"))?;
    if secure_boot {
        // Only SMM code may write the variables: what makes Secure Boot hold.
        c.args(["-global", "driver=cfi.pflash01,property=secure,value=on"]);
    }
    c.arg("-drive").arg(format!("if=pflash,format=raw,readonly=on,file={code}"));
    c.arg("-drive").arg(format!("if=pflash,format=raw,file={}", vars.display()));
    Ok(())
}

/// AAVMF as two flash chips, as OVMF: its code read-only, its variables a
/// copy for this boot. Secure Boot needs no SMM here: virt has no x86
/// system management mode, and QEMU's arm64 flash is not guarded.
fn add_aavmf(c: &mut Argv, secure_boot: bool, work: &Path) -> Result<()> {
    let (code, template) = if secure_boot { (AAVMF_MS_CODE, AAVMF_MS_VARS) } else { (AAVMF_CODE, AAVMF_VARS) };
    let vars = work.join("AAVMF_VARS.fd");
    std::fs::copy(template, &vars).map_err(|e| format!("{template}: {e} (apt-get install qemu-efi-aarch64)"))?;
    c.arg("-drive").arg(format!("if=pflash,format=raw,readonly=on,file={code}"));
    c.arg("-drive").arg(format!("if=pflash,format=raw,file={}", vars.display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// The machine for these flags, on an image directory with a stick, an ISO and two disks.
    fn resolved(flags: &[&str]) -> (Result<Machine>, PathBuf) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("bootmark-machine-{}-{n}", std::process::id()));
        std::fs::create_dir_all(dir.join("pxe")).unwrap();
        for f in ["usb.img", "bootmark.iso", "d0.img", "d1.img"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let mut argv = vec!["qemu".to_string(), "--image".into(), dir.display().to_string()];
        argv.extend(flags.iter().map(|f| f.replace("DIR", &dir.display().to_string())));
        let args = Cli::try_parse_from(&argv).unwrap().args;
        (resolve(&args, args.arch.unwrap_or(Arch::X86_64)), dir)
    }

    fn command_line(m: &Machine, dir: &Path) -> String {
        let sh = crate::host::process::shell().unwrap();
        crate::host::process::shown(sh.cmd(m.qemu).args(m.argv(&dir.join("serial.log"), dir).unwrap()))
    }

    #[test]
    fn an_arm64_machine_is_virt_under_aavmf_with_nvme_and_refuses_what_it_lacks() {
        let (m, dir) = resolved(&["--arch", "aarch64", "--disk", "DIR/d0.img"]);
        let m = m.unwrap();
        assert_eq!((m.qemu, m.chipset, m.cpu), ("qemu-system-aarch64", "virt", "cortex-a72"));
        assert_eq!((m.firmware, m.usb), (Firmware::Uefi { secure_boot: false }, "qemu-xhci"));
        let line = command_line(&m, &dir);
        assert!(line.contains("nvme,serial=bootmark0,drive=d0") && line.contains("AAVMF_CODE.fd"), "{line}");
        assert!(!line.contains("OVMF") && !line.contains("ahci"), "{line}");
        let (m, dir2) = resolved(&["--arch", "aarch64", "--secure-boot", "--pxe"]);
        let m = m.unwrap();
        let pxe = m.pxe.as_ref().unwrap();
        assert_eq!((pxe.bootfile, pxe.nic), ("grub/arm64-efi/core.efi", "virtio-net-pci,romfile="));
        let line = command_line(&m, &dir2);
        assert!(
            line.contains("AAVMF_CODE.ms.fd") && !line.contains("smm") && !line.contains("secure,value=on"),
            "{line}"
        );
        std::fs::write(dir2.join("pxe").join(secure_boot::PXE_SHIM_AA64), b"shim").unwrap();
        let tftp = format!("{}/pxe", dir2.display());
        let (m, _) = resolved(&["--arch", "aarch64", "--secure-boot", "--pxe", "--tftp-root", &tftp]);
        assert_eq!(m.unwrap().pxe.unwrap().bootfile, "shimaa64.efi");
        std::fs::remove_dir_all(dir2).unwrap();
        for (flag, said) in [("--machine=dl140", "2006 x86 PCs"), ("--kvm", "an arm64 guest here runs under TCG")] {
            let e = resolved(&["--arch", "aarch64", flag]).0.unwrap_err();
            assert!(e.contains(said), "{flag}: {e}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_old_machine_is_a_2006_pc_and_refuses_what_it_lacks() {
        let (m, dir) =
            resolved(&["--machine", "old", "--disk", "DIR/d0.img", "--disk", "DIR/d1.img", "--disk-bus", "ide"]);
        let m = m.unwrap();
        assert_eq!((m.chipset, m.usb, m.firmware == Firmware::Bios), ("pc", "usb-ehci", true));
        assert_eq!(m.disks.iter().map(|d| d.bus.as_str()).collect::<Vec<_>>(), ["ide", "scsi"], "SCSI unless told");
        let line = command_line(&m, &dir);
        assert!(line.contains("ide-hd,drive=d0,bus=ide.0,unit=0") && line.contains("lsi53c895a"), "{line}");
        assert!(!line.contains("ahci,id=ahci"), "{line}");
        let (m, _) = resolved(&["--machine", "old", "--secure-boot"]);
        assert!(m.unwrap_err().contains("--secure-boot needs --machine modern"));
        let (m, _) = resolved(&["--disk", "DIR/d0.img", "--disk-bus", "ide"]);
        assert!(m.unwrap_err().contains("--disk-bus ide needs --machine old"));
        let (m, _) = resolved(&["--disk", "DIR/missing.img"]);
        assert!(m.unwrap_err().ends_with("missing.img: no such file"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn secure_boot_over_the_network_boots_shim_on_a_nic_without_option_rom_and_not_the_stick() {
        let (m, dir) = resolved(&["--pxe", "--secure-boot", "--mac", "52:54:00:be:e7:01", "--disk", "DIR/d0.img"]);
        let m = m.unwrap();
        assert_eq!((m.chipset, &m.firmware), ("q35,smm=on", &Firmware::Uefi { secure_boot: true }));
        let pxe = m.pxe.as_ref().unwrap();
        assert_eq!((pxe.bootfile, pxe.nic), ("grub/x86_64-efi/core.efi", "virtio-net-pci,romfile="));
        assert!(!m.stick.as_ref().unwrap().boots, "the stick stays attached, not bootable");
        let line = command_line(&m, &dir);
        assert!(line.contains("virtio-net-pci,romfile=,netdev=n0,bootindex=0,mac=52:54:00:be:e7:01"), "{line}");
        assert!(line.contains("property=secure,value=on") && line.contains("OVMF_CODE_4M.secboot.fd"), "{line}");
        assert!(line.contains("usb-storage,bus=usbhc.0,drive=stick ") || line.ends_with("drive=stick"), "{line}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_dl140_is_one_cpu_with_disks_throttled_like_2006_sata() {
        let (m, dir) = resolved(&["--machine", "dl140", "--disk", "DIR/d0.img"]);
        let m = m.unwrap();
        assert_eq!((m.shape.cpus, m.shape.disk_mbps), (1, 30));
        let line = command_line(&m, &dir);
        assert!(line.contains("-smp 1 ") && line.contains("throttling.bps-total=30000000"), "{line}");
        let said = "-smbios 'type=3,asset=qemu: disk throttled to 30 MB/s and 240 requests/s of 128 KiB'";
        assert!(line.contains(said), "the guest can say its disk was throttled: {line}");
        assert!(line.contains("ide-hd,drive=d0,bus=ahci.0") && line.contains("-nic none"), "{line}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
