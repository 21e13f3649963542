//! `cargo xtask qemu`: boot a built image in QEMU the way a test server
//! boots it — USB stick on xHCI (or PXE over QEMU's TFTP, or UEFI with
//! OVMF), scratch disks on AHCI (SATA, like the seed's servers), the serial
//! console captured to a log — and wait for the guest to power off.
//!
//! TCG only by default: on the machines this project is developed on, KVM
//! hangs stock kernels early in boot. `--kvm` tries it when asked.

use crate::build::arch::Arch;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::command;
use crate::host::project::Result;
use crate::host::tools;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const QEMU_TOOLS: [(&str, &str); 3] =
    [("qemu-system-x86_64", "qemu-system-x86"), ("/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf"), ("mcopy", "mtools")];

/// OVMF's firmware: plain, and with Secure Boot (the secboot code and
/// variables with Microsoft's keys enrolled and Secure Boot on, as
/// servers ship).
/// A boot whose console has not grown for this long before /init spoke
/// is cut as stalled: the kernel prints from its first second, and under
/// TCG on a loaded host a boot that stops there does not resume (a CI run
/// saw a kernel's timestamps freeze 1.4 s in).
pub const STALL_BEFORE_INIT: Duration = Duration::from_secs(120);
/// How a stalled boot's error begins, so that a scenario runner can tell it
/// from a bootmark failure and try it once more.
pub const STALLED: &str = "stalled before /init";

const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
const OVMF_SECBOOT_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd";
const OVMF_MS_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd";

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Image directory made by `cargo xtask image`.
    #[arg(long, default_value = "target/image")]
    pub image: PathBuf,
    /// Boot this menu entry (0-based); it becomes the stick's default.
    #[arg(long)]
    pub entry: Option<usize>,
    /// Boot the entry with this label (k0, k1, k0-rt…: what a `[server.qemu]` lab
    /// command gets as {entry}); it becomes the stick's default.
    #[arg(long, value_name = "LABEL", conflicts_with = "entry")]
    pub entry_label: Option<String>,
    /// Before booting, make the first --disk a fresh filesystem of this type (ext2, ext3,
    /// ext4, xfs, reiserfs) labelled SCRATCH, keeping its size (1 GiB if it does not
    /// exist): every boot on a clean disk, as the demo and a `[server.qemu]` lab want.
    #[arg(long, value_name = "FS", value_parser = ["ext2", "ext3", "ext4", "xfs", "reiserfs"])]
    pub fresh_disk: Option<String>,
    /// Scratch disk images attached to the machine (repeatable; SATA unless --disk-bus says).
    #[arg(long = "disk", value_name = "FILE")]
    pub disks: Vec<PathBuf>,
    /// The bus of the N-th --disk (repeatable, in order): sata (AHCI), nvme, scsi (LSI
    /// 53C895A, sym53c8xx), ide (PIIX, --machine old) or virtio. Default: sata, or scsi with
    /// --machine old.
    #[arg(long = "disk-bus", value_name = "BUS", value_parser = ["sata", "nvme", "scsi", "ide", "virtio"])]
    pub disk_buses: Vec<String>,
    /// modern: a current PC (q35 chipset), the stick on xHCI, disks on AHCI or NVMe. old: a
    /// 2006-era PC that a 2.6 kernel knows (i440FX): the stick on EHCI (USB 2.0), disks on an
    /// LSI SCSI HBA or PIIX IDE. dl140: the seed's server (an HP DL140: one CPU, 1 GiB, one
    /// SATA disk) as today's kernels drive it: the modern machine with 1 CPU, 1 GiB and the
    /// disks throttled like a 2006 SATA disk (30 MB/s, 240 requests/s, a request counted
    /// once per 128 KiB), each unless --cpus, --memory or --disk-* say otherwise: every
    /// kernel compared on it gets the same AHCI controller. All have an Intel CPU model
    /// (Linux before about 2.6.2x panics on QEMU's AMD-vendor default).
    #[arg(long, default_value = "modern", value_parser = ["modern", "old", "dl140"])]
    pub machine: String,
    /// Boot firmware UEFI (OVMF) instead of BIOS.
    #[arg(long)]
    pub uefi: bool,
    /// UEFI with Secure Boot on: OVMF's secboot firmware with Microsoft's keys enrolled,
    /// as servers ship (implies --uefi; the image must carry the signed chain:
    /// `cargo xtask image --secure-boot`).
    #[arg(long)]
    pub secure_boot: bool,
    /// Boot the image's bootmark.iso as a CD-ROM (a BMC's virtual media), with the stick
    /// attached but not bootable (--no-stick: without it; results then on serial only).
    #[arg(long)]
    pub cdrom: bool,
    /// With --cdrom: this ISO instead of the image's bootmark.iso (a copy that
    /// `bootmark lab` published with another default entry).
    #[arg(long, value_name = "FILE", requires = "cdrom")]
    pub iso: Option<PathBuf>,
    /// Attach no USB stick.
    #[arg(long)]
    pub no_stick: bool,
    /// Boot over the network from the image's pxe/ tree (the stick stays attached, not bootable).
    #[arg(long)]
    pub pxe: bool,
    /// With --pxe: serve this directory over TFTP instead of the image's pxe/ (a lab's
    /// TFTP root, where `bootmark lab` writes per-MAC configs).
    #[arg(long, value_name = "DIR")]
    pub tftp_root: Option<PathBuf>,
    /// The network card's MAC address (default: QEMU's 52:54:00:12:34:56).
    #[arg(long, value_name = "MAC")]
    pub mac: Option<String>,
    /// Print the QEMU command line instead of booting (for a BMC simulator's power script).
    #[arg(long)]
    pub print_command: bool,
    /// Serial log file (default: IMAGE/serial.log).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Guest memory in MiB [default: 1024].
    #[arg(long)]
    pub memory: Option<u32>,
    /// Virtual CPUs [default: 2; 1 with --machine dl140].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: Option<u32>,
    /// Run an unattended sequence: after each reboot start the machine again
    /// (a cold boot each time), and reset a boot that hangs, like a hardware
    /// watchdog would, until the guest powers off.
    #[arg(long)]
    pub sequence: bool,
    /// Try KVM (falls back to TCG only if QEMU refuses to start).
    #[arg(long)]
    pub kvm: bool,
    /// Install missing host tools with apt-get (root, Debian/Ubuntu).
    #[arg(long)]
    pub install_deps: bool,
    /// Record every write the guest makes to the stick in this file (QEMU's
    /// blklogwrites, the dm-log-writes format), to replay them later.
    #[arg(long, value_name = "FILE")]
    pub stick_write_log: Option<PathBuf>,
    /// Make the first --disk fail: QEMU blkdebug rules from this file (a
    /// disk that dies mid-run, to see what the records say).
    #[arg(long, value_name = "BLKDEBUG_CONFIG")]
    pub disk_fault: Option<PathBuf>,
    /// Make the --disks as slow as an old disk: at most this many MB/s, reads
    /// and writes together (QEMU's I/O throttling; 30 is a 2006 SATA disk).
    /// 0: unthrottled [default: 0; 30 with --machine dl140].
    #[arg(long, value_name = "MB_S")]
    pub disk_mbps: Option<u32>,
    /// With --disk-mbps: at most this many requests per second (a 2006 disk's
    /// seeks and command overhead) [default: 240: 240 × 128 KiB is just over
    /// 30 MB/s, so a sequential stream is limited by its bytes, not by the size
    /// of its requests].
    #[arg(long, value_name = "N", default_value_t = 240)]
    pub disk_iops: u32,
    /// With --disk-mbps: a request counts as one per this many KiB, so a
    /// kernel that merges writes into large requests is not favoured over one
    /// that sends 128 KiB ones (QEMU's iops-size) [default: 128].
    #[arg(long, value_name = "KIB", default_value_t = 128)]
    pub disk_iops_kib: u32,
    /// Also serve the serial console on 127.0.0.1:PORT, like a console
    /// server (`bootmark watch tcp:127.0.0.1:PORT`); the guest starts only
    /// once a client is connected, so it sees the whole boot.
    #[arg(long, value_name = "PORT")]
    pub serial_tcp: Option<u16>,
}

/// The defaults `cargo xtask qemu` has, for the boots other tasks make:
/// one truth, the flags' own.
impl Default for Args {
    fn default() -> Args {
        crate::host::project::flags_given(&[])
    }
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

/// A boot that ended with the guest powering off.
#[derive(Debug)]
pub struct Booted {
    pub log: PathBuf,
    pub serial: String,
    pub elapsed: Duration,
}

pub fn run(args: &Args) -> Result<()> {
    if args.print_command {
        println!("{}", command_line(args)?);
        return Ok(());
    }
    let b = boot(args)?;
    eprintln!("qemu: guest powered off after {:.1} s; serial log: {}", b.elapsed.as_secs_f64(), b.log.display());
    Ok(())
}

/// The QEMU command line of one boot, as a shell reads it: for a script
/// that starts the machine itself (a BMC simulator's power control). The
/// serial log goes where --log says (default IMAGE/serial.log).
pub fn command_line(args: &Args) -> Result<String> {
    let log = args.log.clone().unwrap_or_else(|| args.image.join("serial.log"));
    let work = args.image.join(".qemu");
    fs::create_dir_all(&work)?;
    let c = qemu_command(args, &log, &work)?;
    let quote = |s: &std::ffi::OsStr| {
        let s = s.to_string_lossy();
        if s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c)) {
            s.into_owned()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    Ok(std::iter::once(c.get_program()).chain(c.get_args()).map(quote).collect::<Vec<_>>().join(" "))
}

fn qemu_command(args: &Args, log: &Path, work: &Path) -> Result<Command> {
    let image = &args.image;
    let stick = image.join("usb.img");
    if !args.no_stick && !stick.exists() {
        return Err(format!("{} has no usb.img: build one with `cargo xtask image`", image.display()));
    }
    let iso = args.iso.clone().unwrap_or_else(|| image.join(crate::build::image::iso::FILE));
    if args.cdrom && !iso.exists() {
        return Err(format!("{}: no such ISO (build the image again)", iso.display()));
    }
    let old = args.machine == "old";
    let shape = Shape::of(args);
    if old && args.secure_boot {
        return Err("--secure-boot needs --machine modern (Secure Boot needs the q35 chipset's SMM)".into());
    }
    let uefi = args.uefi || args.secure_boot;
    // A 32-bit image runs on a 32-bit machine (the i686 /init needs SSE2: a Core Duo).
    let (qemu, cpu) = image_arch(image)?.qemu();
    let mut c = command(qemu);
    // q35 for today's servers (PCIe, the NVMe disks, SMM that Secure Boot
    // needs); i440FX for the 2006 machines (PIIX IDE).
    let chipset = match (old, args.secure_boot) {
        (true, _) => "pc",
        (false, false) => "q35",
        (false, true) => "q35,smm=on",
    };
    c.args(["-M", chipset, "-cpu", cpu, "-smp", &shape.cpus.to_string(), "-m", &shape.memory_mib.to_string()]);
    c.args(["-accel", if args.kvm { "kvm" } else { "tcg" }]);
    c.args(["-nographic", "-monitor", "none"]);
    match args.serial_tcp {
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
    let usb = if old { "usb-ehci" } else { "qemu-xhci" };
    c.args(["-device", &format!("{usb},id=usbhc")]);
    if !args.no_stick {
        match &args.stick_write_log {
            None => c.arg("-drive").arg(format!("if=none,id=stick,format=raw,file={}", stick.display())),
            Some(log) => {
                std::fs::write(log, b"").map_err(|e| format!("{}: {e}", log.display()))?;
                c.arg("-drive").arg(format!(
                    "if=none,id=stick,driver=blklogwrites,file.driver=file,file.filename={},log.driver=file,log.filename={},log-sector-size=512",
                    stick.display(),
                    log.display()
                ))
            }
        };
        let stick_boot = if args.pxe || args.cdrom { "" } else { ",bootindex=0" };
        c.args(["-device", &format!("usb-storage,bus=usbhc.0,drive=stick{stick_boot}")]);
    }
    if args.cdrom {
        // The chipset's own IDE/SATA port, as a BMC's virtual CD appears on
        // a bus the firmware boots from (q35: the ICH9 AHCI's ports ide.0-5).
        let bus = if old { "ide.1,unit=1" } else { "ide.5" };
        c.arg("-drive").arg(format!("if=none,id=cd,media=cdrom,format=raw,readonly=on,file={}", iso.display()));
        c.args(["-device", &format!("ide-cd,drive=cd,bus={bus},bootindex=0")]);
    }
    if args.pxe {
        let tftp = args.tftp_root.clone().unwrap_or_else(|| image.join("pxe"));
        let bootfile = match (uefi, crate::build::image::secure_boot::in_pxe(&tftp)) {
            (false, _) => "pxelinux.0",
            (true, false) => "grub/x86_64-efi/core.efi",
            (true, true) => crate::build::image::secure_boot::PXE_SHIM,
        };
        c.args(["-netdev", &format!("user,id=n0,tftp={},bootfile={bootfile}", tftp.display())]);
        // Under Secure Boot the firmware refuses QEMU's unsigned iPXE option
        // ROM: a virtio NIC without one is driven by OVMF's own signed driver.
        let nic = if args.secure_boot { "virtio-net-pci,romfile=" } else { "e1000" };
        let mac = args.mac.as_deref().map(|m| format!(",mac={m}")).unwrap_or_default();
        c.args(["-device", &format!("{nic},netdev=n0,bootindex=0{mac}")]);
    } else {
        c.args(["-nic", "none"]);
    }
    let default_bus = if args.machine == "old" { "scsi" } else { "sata" };
    let buses: Vec<&str> =
        (0..args.disks.len()).map(|i| args.disk_buses.get(i).map_or(default_bus, String::as_str)).collect();
    if buses.contains(&"sata") {
        c.args(["-device", "ahci,id=ahci"]);
    }
    if buses.contains(&"scsi") {
        c.args(["-device", "lsi53c895a,id=scsi0"]);
    }
    if buses.contains(&"ide") && !old {
        return Err("--disk-bus ide needs --machine old (the q35 chipset has no PIIX IDE)".into());
    }
    for (i, d) in args.disks.iter().enumerate() {
        if !d.exists() {
            return Err(format!("--disk {}: no such file", d.display()));
        }
        let file = match (&args.disk_fault, i) {
            (Some(rules), 0) => format!("blkdebug:{}:{}", rules.display(), d.display()),
            _ => d.display().to_string(),
        };
        let throttle = shape.throttle();
        c.arg("-drive").arg(format!("if=none,id=d{i},format=raw,file={file}{throttle}"));
        let device = match buses[i] {
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
    if uefi {
        let (code, vars_template) =
            if args.secure_boot { (OVMF_SECBOOT_CODE, OVMF_MS_VARS) } else { (OVMF_CODE, OVMF_VARS) };
        let vars = work.join("OVMF_VARS.fd");
        std::fs::copy(vars_template, &vars).map_err(|e| format!("{vars_template}: {e} (apt-get install ovmf)"))?;
        if args.secure_boot {
            // Only SMM code may write the variables: what makes Secure Boot hold.
            c.args(["-global", "driver=cfi.pflash01,property=secure,value=on"]);
        }
        c.arg("-drive").arg(format!("if=pflash,format=raw,readonly=on,file={code}"));
        c.arg("-drive").arg(format!("if=pflash,format=raw,file={}", vars.display()));
    }
    Ok(c)
}

/// The entry to boot, by --entry or --entry-label (None: the stick's default).
fn entry_index(args: &Args) -> Result<Option<usize>> {
    let Some(label) = &args.entry_label else { return Ok(args.entry) };
    let manifest = crate::build::image::manifest::Manifest::read(&args.image)?;
    let labels: Vec<&str> = manifest.entries.iter().map(|e| e.label.as_str()).collect();
    labels
        .iter()
        .position(|l| l == label)
        .map(Some)
        .ok_or_else(|| format!("--entry-label {label}: the image has {}", labels.join(", ")))
}

/// The default entry's architecture, from the image's manifest.json.
fn image_arch(image: &Path) -> Result<Arch> {
    let manifest = crate::build::image::manifest::Manifest::read(image).ok();
    manifest.as_ref().and_then(|m| m.default_entry()).map_or(Ok(Arch::X86_64), |e| Arch::parse(&e.arch))
}

/// Boot and wait for power-off; a timeout or a crash is an error with the
/// serial tail and a guess at the cause. With `sequence`, boots again after
/// every reboot (and after a hang) into one combined serial log.
pub fn boot(args: &Args) -> Result<Booted> {
    tools::ensure(&QEMU_TOOLS, args.install_deps, "--install-deps")?;
    if let Some(n) = entry_index(args)? {
        crate::build::image::usb::set_default_entry(&args.image.join("usb.img"), n)?;
    }
    if let (Some(fs), Some(disk)) = (&args.fresh_disk, args.disks.first()) {
        let mib = std::fs::metadata(disk).map_or(1024, |m| (m.len() >> 20).max(64));
        crate::boot::disks::scratch_disk(disk, fs, mib)?;
    }
    let log = args.log.clone().unwrap_or_else(|| args.image.join("serial.log"));
    // A new file for every boot: whoever follows the log (a `[server.qemu]`
    // lab, `bootmark watch`) sees the next boot's from its start.
    let _ = std::fs::remove_file(&log);
    let started = Instant::now();
    let mut serial = String::new();
    let mut hangs_in_a_row = 0;
    for boot_no in 1..=64 {
        // One boot writes the log as it goes; a sequence's boots are joined into it.
        let one = if args.sequence { log.with_extension(format!("boot{boot_no}")) } else { log.clone() };
        let ended = boot_once(args, &one);
        let text = String::from_utf8_lossy(&std::fs::read(&one).unwrap_or_default()).into_owned();
        serial += &text;
        if args.sequence {
            let _ = std::fs::remove_file(&one);
        }
        // As text (firmware writes bytes that are not UTF-8): what the tests and users read.
        std::fs::write(&log, &serial).map_err(|e| format!("{}: {e}", log.display()))?;
        let last = text.lines().rev().find(|l| l.contains("bootmark: run ") && l.contains(" done ("));
        match ended {
            Ok(()) if !args.sequence => return Ok(Booted { log, serial, elapsed: started.elapsed() }),
            Ok(()) if last.is_some_and(|l| l.trim_end().ends_with("Reboot")) => {
                hangs_in_a_row = 0;
                eprintln!("qemu: boot {boot_no} ended with a reboot: starting the next boot");
            }
            Ok(()) => return Ok(Booted { log, serial, elapsed: started.elapsed() }),
            Err(e) if args.sequence && e.contains("did not power off") && hangs_in_a_row < 2 => {
                hangs_in_a_row += 1;
                eprintln!("qemu: boot {boot_no} hung ({}): resetting it, as a watchdog would", diagnose(&text));
            }
            Err(e) => return Err(e),
        }
    }
    Err("the sequence did not end after 64 boots".into())
}

/// Start QEMU for one boot with serial to `log`, and leave it running (the
/// reset campaign kills it). `work` holds per-boot files (UEFI variables).
pub fn spawn(args: &Args, log: &Path, work: &Path) -> Result<std::process::Child> {
    tools::ensure(&QEMU_TOOLS, args.install_deps, "--install-deps")?;
    let _ = std::fs::remove_file(log);
    crate::host::process::spawn(
        qemu_command(args, log, work)?.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()),
    )
}

/// One QEMU run until the guest powers off or reboots (both end QEMU).
fn boot_once(args: &Args, log: &Path) -> Result<()> {
    let work = std::env::temp_dir().join(format!("bootmark-qemu-{}", std::process::id()));
    fs::create_dir_all(&work)?;
    let _ = std::fs::remove_file(log);
    let mut cmd = qemu_command(args, log, &work)?;
    let started = Instant::now();
    let mut child = crate::host::process::spawn(cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()))?;
    let limit = Duration::from_secs(args.timeout);
    let mut console = Growth::default();
    let status = loop {
        if let Some(st) = child.try_wait().context("waiting for QEMU")? {
            break Ended::Exited(st);
        }
        let stalled = console.stalled(log, Instant::now(), STALL_BEFORE_INIT);
        if started.elapsed() > limit || stalled {
            let _ = child.kill();
            let _ = child.wait();
            break if stalled { Ended::Stalled } else { Ended::TimedOut };
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = std::fs::remove_dir_all(&work);
    let serial = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
    match status {
        Ended::Stalled => {
            // Kept: a retry of the boot writes the log again.
            let kept = log.with_extension("stalled.log");
            let _ = std::fs::copy(log, &kept);
            Err(format!(
                "{STALLED}: the guest did not power off — its console has not grown for {} s and /init never spoke \
                 (log kept: {}).\n--- serial tail ---\n{}",
                STALL_BEFORE_INIT.as_secs(),
                kept.display(),
                tail(&serial, 30)
            ))
        }
        Ended::TimedOut => Err(format!(
            "the guest did not power off within {} s ({}).\n--- serial tail ---\n{}",
            args.timeout,
            diagnose(&serial),
            tail(&serial, 30)
        )),
        Ended::Exited(st) if !st.success() => {
            let mut err = String::new();
            use std::io::Read;
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            Err(format!("qemu failed ({st}): {}\n--- serial tail ---\n{}", err.trim(), tail(&serial, 30)))
        }
        Ended::Exited(_) => Ok(()),
    }
}

/// How one QEMU run ended.
enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
    Stalled,
}

/// The serial log's size over time, to tell a boot that stopped before
/// /init (no new output for [`STALL_BEFORE_INIT`], no `bootmark` line)
/// from one that is slow.
#[derive(Default)]
struct Growth {
    len: u64,
    since: Option<Instant>,
}

impl Growth {
    /// Whether, at `now`, the log has not grown for `quiet` and /init has not spoken.
    fn stalled(&mut self, log: &Path, now: Instant, quiet: Duration) -> bool {
        let len = std::fs::metadata(log).map_or(0, |m| m.len());
        if len != self.len || self.since.is_none() {
            (self.len, self.since) = (len, Some(now));
            return false;
        }
        if now.duration_since(self.since.unwrap_or(now)) < quiet {
            return false;
        }
        // Read the log only once it has been quiet that long.
        len > 0 && !init_spoke(&String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()))
    }
}

/// Whether /init printed a line: its lines begin with `bootmark`, the
/// kernel's with a timestamp (its command line names `bootmark.` too).
fn init_spoke(serial: &str) -> bool {
    serial.lines().any(|l| l.trim_start_matches('\r').starts_with("bootmark"))
}

pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.contains("@BM1 ")).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A best guess at why a boot never finished, from what the console shows.
pub fn diagnose(serial: &str) -> String {
    if serial.trim().is_empty() {
        return "nothing on the serial console: the bootloader did not start (boot order? BIOS vs UEFI?) or serial output is not on ttyS0".into();
    }
    if serial.contains("Access Denied") || serial.contains("Security Violation") {
        return "the UEFI firmware refused the bootloader (Secure Boot is on and the image's GRUB is unsigned): build the image with --secure-boot".into();
    }
    if serial.contains("bad shim signature") {
        return "shim refused the kernel (Secure Boot is on and the kernel is not signed by a key shim trusts)".into();
    }
    if serial.contains("Kernel panic") {
        if serial.contains("VFS: Unable to mount root") || serial.contains("No working init found") {
            return "kernel panic: the initramfs was not found or not unpacked (bad initrd path, or compression the kernel lacks)".into();
        }
        return "kernel panic (see the tail)".into();
    }
    if !serial.contains("Linux version") {
        return "the kernel never printed its banner: the bootloader could not load it".into();
    }
    if !init_spoke(serial) {
        return "the kernel booted but /init never spoke: initramfs missing /init, or an incompatible binary".into();
    }
    if serial.contains("no disk matches") {
        return "bootmark could not find a disk: missing storage driver module, or wrong LABEL/UUID".into();
    }
    "bootmark started but did not finish: a hung workload (the watchdog should cut it) or a hung kernel".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_console_quiet_before_init_is_a_stall_and_after_init_is_not() {
        let log = std::env::temp_dir().join(format!("bootmark-growth-{}.log", std::process::id()));
        let kernel =
            "[    0.0] Kernel command line: console=ttyS0 bootmark.plan=quick\n[    1.4] ahci 0000:00:1f.2: AHCI\n";
        std::fs::write(&log, kernel).unwrap();
        let (t0, quiet) = (Instant::now(), Duration::from_secs(120));
        let mut console = Growth::default();
        assert!(!console.stalled(&log, t0, quiet), "the first look only starts the clock");
        assert!(!console.stalled(&log, t0 + Duration::from_secs(119), quiet));
        assert!(
            console.stalled(&log, t0 + quiet, quiet),
            "120 s without a byte, and the command line's bootmark. is not /init"
        );
        std::fs::write(&log, format!("{kernel}[    9.9] more\n")).unwrap();
        assert!(!console.stalled(&log, t0 + Duration::from_secs(200), quiet), "growth restarts the clock");
        std::fs::write(&log, format!("{kernel}bootmark 0.1.0: run x starting as /init\n")).unwrap();
        assert!(!console.stalled(&log, t0 + Duration::from_secs(300), quiet));
        assert!(
            !console.stalled(&log, t0 + Duration::from_secs(900), quiet),
            "a slow workload is the watchdog's, not a stall"
        );
        std::fs::remove_file(&log).unwrap();
        assert!(diagnose(kernel).starts_with("the kernel never printed its banner"));
        assert!(diagnose(&format!("Linux version 6.1\n{kernel}")).contains("/init never spoke"));
    }
}
