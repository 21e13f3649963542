//! `cargo xtask qemu`: boot a built image in QEMU the way a test server
//! boots it — USB stick on xHCI (or PXE over QEMU's TFTP, or UEFI with
//! OVMF), scratch disks on AHCI (SATA, like the seed's servers), the serial
//! console captured to a log — and wait for the guest to power off.
//!
//! TCG only by default: on the machines this project is developed on, KVM
//! hangs stock kernels early in boot. `--kvm` tries it when asked.

mod args;
pub mod machine;

use crate::build::arch::Arch;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{Streams, shell};
use crate::host::project::Result;
use crate::host::tools;
pub use args::Args;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

pub const QEMU_TOOLS: [(&str, &str); 3] =
    [("qemu-system-x86_64", "qemu-system-x86"), ("/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf"), ("mcopy", "mtools")];
/// What an arm64 machine needs besides: its emulator and AAVMF.
pub const QEMU_ARM64_TOOLS: [(&str, &str); 2] =
    [("qemu-system-aarch64", "qemu-system-arm"), ("/usr/share/AAVMF/AAVMF_CODE.fd", "qemu-efi-aarch64")];

/// The host tools a boot with these flags needs, installed when asked.
fn ensure_tools(args: &Args) -> Result<()> {
    tools::ensure(&QEMU_TOOLS, args.install_deps, "--install-deps")?;
    if machine_arch(args)? == Arch::Aarch64 {
        tools::ensure(&QEMU_ARM64_TOOLS, args.install_deps, "--install-deps")?;
    }
    Ok(())
}

/// A boot whose console has not grown for this long before /init spoke
/// is cut as stalled: the kernel prints from its first second, and under
/// TCG on a loaded host a boot that stops there does not resume (a CI run
/// saw a kernel's timestamps freeze 1.4 s in).
pub const STALL_BEFORE_INIT: Duration = Duration::from_secs(120);
/// How a stalled boot's error begins, so that a scenario runner can tell it
/// from a bootmark failure and try it once more.
pub const STALLED: &str = "stalled before /init";
/// How an error begins when the guest's own kernel said it was kept off
/// its CPU for many seconds (a soft lockup, an RCU stall): under TCG that
/// is the host's load, not the kernel under test, and a runner may try once more.
pub const STARVED: &str = "the guest was starved of CPU";
/// How a diagnosis begins when the guest's kernel panicked before /init ran
/// (its initramfs found): nothing of bootmark's had run in the guest yet.
/// Under TCG a kernel patching its own text while another CPU runs can die
/// so (a CI run: trixie's 6.12, "Fatal exception in interrupt" at a jump
/// label's NOP in `sched_clock_cpu`, 1.5 s in), and a runner may try once
/// more; a kernel that panics there for real panics again.
pub const PANICKED_BEFORE_INIT: &str = "the kernel panicked before /init ran";

/// The line where a guest's kernel says it was kept off its CPU, if any.
pub fn starved(serial: &str) -> Option<&str> {
    serial.lines().find(|l| {
        l.contains("soft lockup - CPU#") || l.contains("self-detected stall") || l.contains("detected stalls on CPUs")
    })
}

/// The defaults `cargo xtask qemu` has, for the boots other tasks make:
/// one truth, the flags' own.
impl Default for Args {
    fn default() -> Args {
        crate::host::project::flags_given(&[])
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
    let (program, argv) = qemu_argv(args, &log, &work)?;
    let quote = |s: &std::ffi::OsStr| {
        let s = s.to_string_lossy();
        if s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c)) {
            s.into_owned()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    let program = std::ffi::OsStr::new(program);
    Ok(std::iter::once(program).chain(argv.iter().map(|a| a.as_os_str())).map(quote).collect::<Vec<_>>().join(" "))
}

/// The flags resolved into a machine (`machine.rs`), then its program and arguments.
fn qemu_argv(args: &Args, log: &Path, work: &Path) -> Result<(&'static str, Vec<std::ffi::OsString>)> {
    let machine = machine::resolve(args, machine_arch(args)?)?;
    Ok((machine.qemu, machine.argv(log, work)?))
}

/// The label of the entry to boot, by --entry (its number in the image's
/// manifest) or --entry-label; None: the stick's default.
fn entry_label(args: &Args) -> Result<Option<String>> {
    if args.entry.is_none() && args.entry_label.is_none() {
        return Ok(None);
    }
    let manifest = crate::build::image::manifest::Manifest::read(&args.image)?;
    let labels: Vec<&str> = manifest.entries.iter().map(|e| e.label.as_str()).collect();
    match (&args.entry_label, args.entry) {
        (Some(label), _) if labels.contains(&label.as_str()) => Ok(Some(label.clone())),
        (Some(label), _) => Err(format!("--entry-label {label}: the image has {}", labels.join(", "))),
        (None, Some(n)) => labels.get(n).map(|l| Some(l.to_string())).ok_or_else(|| {
            format!("--entry {n}: the image has {} entries, numbered from 0 ({})", labels.len(), labels.join(", "))
        }),
        (None, None) => Ok(None),
    }
}

/// The machine's architecture: --arch, else the booted entry's, else the
/// default entry's (from the image's manifest.json), else x86_64.
fn machine_arch(args: &Args) -> Result<Arch> {
    if let Some(arch) = args.arch {
        return Ok(arch);
    }
    let Ok(manifest) = crate::build::image::manifest::Manifest::read(&args.image) else { return Ok(Arch::X86_64) };
    let chosen = entry_label(args)?;
    let entry = match &chosen {
        Some(label) => manifest.entries.iter().find(|e| &e.label == label),
        None => manifest.default_entry(),
    };
    entry.map_or(Ok(Arch::X86_64), |e| Arch::parse(&e.arch))
}

/// Boot and wait for power-off; a timeout or a crash is an error with the
/// serial tail and a guess at the cause. With `sequence`, boots again after
/// every reboot (and after a hang) into one combined serial log.
pub fn boot(args: &Args) -> Result<Booted> {
    ensure_tools(args)?;
    let set = args.set.as_deref().filter(|s| !s.is_empty());
    if let Some(set) = set {
        // Refused here, before the stick's menu is touched, not by /init after a whole boot.
        bootmark::contract::cmdline::parse(&format!("bootmark.set={set}")).map_err(|e| format!("--set: {e}"))?;
        check_set_fits(args, set)?;
    }
    if let Some(label) = entry_label(args)? {
        crate::build::image::usb::set_default_entry(&args.image.join("usb.img"), &label, set)?;
    } else if set.is_some() {
        return Err("--set needs the entry it is for: --entry-label LABEL or --entry N".into());
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
        // One boot writes the log as it goes, the console's bytes as they
        // come, and nothing rewrites it after (someone may be following it);
        // a sequence's boots each write a file of their own, appended to the
        // log as it is when each ends.
        let one = if args.sequence { log.with_extension(format!("boot{boot_no}")) } else { log.clone() };
        let ended = boot_once(args, &one);
        let bytes = std::fs::read(&one).unwrap_or_default();
        if args.sequence {
            append(&log, &bytes)?;
            let _ = std::fs::remove_file(&one);
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        serial += &text;
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

/// `bytes` added at the end of `log` (made when missing), never rewriting what is there.
fn append(log: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("appending a boot's console to {}: {e}", log.display()))
}

/// A console log as text: its bytes as the console sent them (firmware
/// writes some that are not UTF-8), each such byte shown as U+FFFD. The
/// file itself is never rewritten: someone may be following it.
pub fn console_text(log: &Path) -> Result<String> {
    let bytes = std::fs::read(log).map_err(|e| format!("{}: {e}", log.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `--set` on an entry whose kernel would cut the line it makes (the
/// manifest's `cmdline_room`): refused before the boot.
fn check_set_fits(args: &Args, set: &str) -> Result<()> {
    let (Ok(manifest), Some(label)) = (crate::build::image::manifest::Manifest::read(&args.image), entry_label(args)?)
    else {
        return Ok(());
    };
    match manifest.entries.iter().find(|e| e.label == label) {
        Some(e) => bootmark::lab::ImageEntry {
            label: e.label.clone(),
            title: e.title.clone(),
            cmdline: e.cmdline.clone(),
            cmdline_room: e.cmdline_room,
            kernel_release: Some(e.kernel_release.clone()),
        }
        .check_set_fits(set)
        .map_err(|e| format!("--set: {e}")),
        None => Ok(()),
    }
}

/// Start QEMU for one boot with serial to `log`, and leave it running (the
/// reset campaign kills it). `work` holds per-boot files (UEFI variables).
pub fn spawn(args: &Args, log: &Path, work: &Path) -> Result<std::process::Child> {
    ensure_tools(args)?;
    let _ = std::fs::remove_file(log);
    let (program, argv) = qemu_argv(args, log, work)?;
    crate::host::process::spawn(shell()?.cmd(program).args(argv), Streams::null())
}

/// One QEMU run until the guest powers off or reboots (both end QEMU).
fn boot_once(args: &Args, log: &Path) -> Result<()> {
    // A directory of this boot's own: two lanes of the suite boot at once in one process.
    static BOOTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BOOTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = std::env::temp_dir().join(format!("bootmark-qemu-{}-{n}", std::process::id()));
    fs::create_dir_all(&work)?;
    let _ = std::fs::remove_file(log);
    let (program, argv) = qemu_argv(args, log, &work)?;
    let ended = run_to_power_off(program, argv, log, args.timeout);
    let _ = std::fs::remove_dir_all(&work);
    ended
}

/// Run QEMU (`program` with `argv`, its serial console going to `log`)
/// until the guest powers off; an error, with the console's tail, when it
/// does not within `timeout` seconds, when it stalls before /init speaks, or
/// when QEMU fails.
pub fn run_to_power_off(program: &str, argv: Vec<std::ffi::OsString>, log: &Path, timeout: u64) -> Result<()> {
    let started = Instant::now();
    let streams = Streams::null().stderr(Stdio::piped());
    let mut child = crate::host::process::spawn(shell()?.cmd(program).args(argv), streams)?;
    let limit = Duration::from_secs(timeout);
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
            timeout,
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
    /// /init has spoken: from then on a quiet console is the watchdog's to judge.
    init_spoke: bool,
}

impl Growth {
    /// Whether, at `now`, the log has not grown for `quiet` and /init has not spoken.
    fn stalled(&mut self, log: &Path, now: Instant, quiet: Duration) -> bool {
        if self.init_spoke {
            return false;
        }
        let len = std::fs::metadata(log).map_or(0, |m| m.len());
        if len != self.len || self.since.is_none() {
            (self.len, self.since) = (len, Some(now));
            return false;
        }
        if len == 0 || now.duration_since(self.since.unwrap_or(now)) < quiet {
            return false;
        }
        // Read the log once it has been quiet that long, and never again once /init spoke.
        self.init_spoke = init_spoke(&String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()));
        !self.init_spoke
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
        if !init_spoke(serial) {
            return format!("{PANICKED_BEFORE_INIT} (see the tail)");
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
        let panic = "Linux version 6.12\nRIP: 0010:sched_clock_cpu+0x9/0x1d0\nKernel panic - not syncing: Fatal exception in interrupt\n";
        assert!(diagnose(panic).starts_with(PANICKED_BEFORE_INIT), "{}", diagnose(panic));
        let after_init = format!("Linux version 6.12\nbootmark: bring-up: mounted proc\n{}", &panic[19..]);
        assert_eq!(diagnose(&after_init), "kernel panic (see the tail)", "after /init ran, a panic is the run's");
    }

    #[test]
    fn a_guest_kept_off_its_cpu_says_so_in_its_log() {
        // As a CI run's lab step logged it while a kernel build ran beside the boots.
        let log = "bootmark: vfat: 2 modules loaded in 77 ms\n\
                   [   40.526303] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [usb-storage:136]\n";
        assert_eq!(
            starved(log),
            Some("[   40.526303] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [usb-storage:136]")
        );
        assert!(starved("[   61.1] rcu: INFO: rcu_preempt self-detected stall on CPU\n").is_some());
        assert_eq!(
            starved("bootmark: manyfiles 16 MiB in 0.4 s; 0 stalls >1s\n"),
            None,
            "bootmark's own stall figures are not the guest's"
        );
    }
}
