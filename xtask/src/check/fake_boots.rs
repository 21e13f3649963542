//! Booting /init without a VM: the static binary as PID 1 of a new PID and
//! mount namespace, chrooted into a fake root, with loop devices as the
//! results stick (vfat, or ext2 where the host has no vfat), the target
//! (ext4, or whatever a scenario puts there) and a bystander disk that must
//! stay byte-identical, a pseudo-terminal as the serial port, and optionally
//! the simulated old-kernel syscall surface. Scenarios check the happy path,
//! hostile command lines and the refusals that protect user data.

use crate::build::static_binary;
use crate::check::boots::support::{fact, results, run_record};
use crate::check::old_kernel::{self, LINUX_2_6_9, OldKernel};
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{Streams, shell};
use crate::host::project::{Result, project_root};
use bootmark::collect::Document;
use bootmark::record::Status;
use std::path::Path;
use std::time::{Duration, Instant};

/// `cargo xtask pid1 [--old-kernel V] ROOT`: the launcher run inside the new
/// namespaces — bind /dev onto itself (so /init keeps it), chroot, optionally
/// install the old-kernel filter, exec /init as PID 1.
pub fn pid1(root: &Path, old: Option<&str>) -> Result<()> {
    use std::ffi::CString;
    let kernel = match old {
        None => None,
        Some("2.6.9") => Some(old_kernel::LINUX_2_6_9),
        Some("2.6.16") => Some(old_kernel::LINUX_2_6_16),
        Some(v) => return Err(format!("unknown old kernel {v}: 2.6.9 or 2.6.16")),
    };
    let dev = CString::new(root.join("dev").to_string_lossy().as_bytes()).unwrap();
    let croot = CString::new(root.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: plain syscalls with valid C strings; exec replaces this process.
    unsafe {
        // Recursive: the pseudo-terminal bound onto dev/ttyS9 comes along.
        if libc::mount(dev.as_ptr(), dev.as_ptr(), std::ptr::null(), libc::MS_BIND | libc::MS_REC, std::ptr::null())
            != 0
            || libc::chroot(croot.as_ptr()) != 0
            || libc::chdir(c"/".as_ptr()) != 0
        {
            return Err(format!("pid1 setup: {}", std::io::Error::last_os_error()));
        }
    }
    if let Some(k) = kernel {
        old_kernel::install(&old_kernel::filter(k)).map_err(|e| format!("seccomp: {e}"))?;
    }
    let argv = [c"/init".as_ptr(), std::ptr::null()];
    // SAFETY: argv is NULL-terminated; environ is inherited.
    unsafe { libc::execv(c"/init".as_ptr(), argv.as_ptr()) };
    Err(format!("exec /init: {}", std::io::Error::last_os_error()))
}

/// What one fake boot left behind.
struct Boot {
    serial: String,
    /// Documents decoded from the serial log (checksums verified).
    serial_docs: Vec<Document>,
    /// Documents read back from the stick's journal (checksums verified).
    stick_docs: Vec<Document>,
    /// Names at the top of an ext4 target (empty for other targets).
    target_root: Vec<String>,
    /// The target's bytes did not change at all.
    target_untouched: bool,
}

struct Scenario {
    name: &'static str,
    /// Added to the command line; TARGET, TARGETDEV and RESULTS are replaced
    /// by the target's label, the target's loop device and the stick's label.
    extra_cmdline: &'static str,
    with_target: bool,
    old_kernel: Option<OldKernel>,
    precious_file: bool,
    /// Put the image's mkfs for ext3 (the static mke2fs) into the fake root.
    mkfs: bool,
    /// Something other than an empty ext4 on the target (a LUKS volume, swap…).
    target: Option<fn(&Path) -> Result<()>>,
    /// The stick starts without a journal (made by hand, or by an older bootmark).
    stick_without_journal: bool,
    /// The command line is the one `cargo xtask image` gives a 2.6 kernel
    /// (255 bytes: boot protocol 2.03), as syslinux hands it over and the
    /// kernel keeps it.
    as_imaged_for_2_6: bool,
    check: fn(&Boot) -> Result<()>,
}

impl Scenario {
    const fn new(name: &'static str, check: fn(&Boot) -> Result<()>) -> Scenario {
        Scenario {
            name,
            extra_cmdline: "",
            with_target: true,
            old_kernel: None,
            precious_file: false,
            mkfs: false,
            target: None,
            stick_without_journal: false,
            as_imaged_for_2_6: false,
            check,
        }
    }
}

fn cmd(program: &str, args: &[&str]) -> Result<String> {
    crate::host::process::run(shell()?.cmd(program).args(args))
}

fn make_image(path: &Path, mib: u64) -> Result<()> {
    let f = fs::create(path)?;
    f.set_len(mib << 20).with_context(|| format!("cannot size {}", path.display()))
}

pub fn harness() -> Result<()> {
    let binary = static_binary::build(crate::build::arch::Arch::X86_64)?;
    let hostile =
        |name, extra, check| Scenario { extra_cmdline: extra, precious_file: true, ..Scenario::new(name, check) };
    let refuse_format = |name, target: fn(&Path) -> Result<()>, check| Scenario {
        extra_cmdline: "bootmark.target=TARGETDEV bootmark.format=ext3 bootmark.format-confirm=TARGETDEV",
        with_target: false,
        mkfs: true,
        target: Some(target),
        ..Scenario::new(name, check)
    };
    let scenarios = [
        Scenario::new("happy path", check_happy),
        Scenario {
            old_kernel: Some(LINUX_2_6_9),
            as_imaged_for_2_6: true,
            ..Scenario::new("happy path on simulated 2.6.9, its command line as an image gives it", check_happy)
        },
        Scenario { stick_without_journal: true, ..Scenario::new("a stick without a journal gets one", check_happy) },
        Scenario { with_target: false, ..Scenario::new("no target", check_no_target) },
        Scenario { extra_cmdline: "bootmark.tagret=/dev/sda", ..Scenario::new("bad command line", check_bad_cmdline) },
        hostile("hostile: plan=/dev/zero", "bootmark.plan=/dev/zero", check_plan_path),
        hostile("hostile: plan=/dev/sda", "bootmark.plan=/dev/sda", check_plan_path),
        hostile("hostile: huge timeout", "bootmark.timeout=99999999999999999999", check_huge_number),
        hostile("hostile: timeout 1e300", "bootmark.timeout=1e300", check_huge_number),
        hostile("hostile: duplicate key", "bootmark.plan=quick bootmark.plan=seed", check_duplicate),
        hostile("hostile: non-UTF-8 byte", "bootmark.mount-options=noatime\u{fffd}", check_non_utf8),
        hostile("hostile: console is the target disk", "bootmark.console=TARGETDEVNAME", check_console_block),
        Scenario {
            extra_cmdline: "bootmark.format=ext3 bootmark.format-confirm=TARGET",
            precious_file: true,
            ..Scenario::new("format refused on a filesystem with data", check_format_refused)
        },
        refuse_format("format refused on LUKS", make_luks, |b| check_refused_untouched(b, "LUKS")),
        // A PV is refused before formatting is considered: it may be a target only as an LV on it.
        refuse_format("format refused on LVM2", make_lvm, |b| {
            check_refused(b, "is an LVM2 physical volume: name a logical volume on it")
        }),
        refuse_format("format refused on swap", make_swap, |b| check_refused_untouched(b, "swap")),
        refuse_format("format refused on btrfs", make_btrfs, |b| check_refused_untouched(b, "btrfs")),
        refuse_format("format refused on NTFS", make_ntfs, |b| check_refused_untouched(b, "NTFS")),
        refuse_format("format refused on random data", make_random, |b| check_refused_untouched(b, "non-zero")),
        Scenario {
            extra_cmdline: "bootmark.target=RESULTS",
            with_target: false,
            ..Scenario::new("target on the results disk refused", check_same_disk)
        },
        Scenario {
            extra_cmdline: "bootmark.format=ext3 bootmark.format-confirm=TARGET",
            mkfs: true,
            ..Scenario::new("confirmed format of an empty target", check_formatted)
        },
        Scenario {
            extra_cmdline: "bootmark.format=ext3 bootmark.format-confirm=TARGET",
            mkfs: true,
            old_kernel: Some(LINUX_2_6_9),
            ..Scenario::new("confirmed format on simulated 2.6.9", check_formatted)
        },
        Scenario { extra_cmdline: "bootmark.timeout=0.8", ..Scenario::new("whole-run watchdog", check_watchdog) },
    ];
    let (mut passed, mut failed) = (0, 0);
    for s in &scenarios {
        match run_scenario(&binary, s) {
            Ok(()) => {
                passed += 1;
                eprintln!("fake boot: ok   {}", s.name);
            }
            Err(e) => {
                failed += 1;
                eprintln!("fake boot: FAIL {}: {e}", s.name);
            }
        }
    }
    println!("fake boot harness: {passed} passed, {failed} failed");
    if failed > 0 { Err(format!("{failed} fake boots failed")) } else { Ok(()) }
}

fn run_scenario(binary: &Path, s: &Scenario) -> Result<()> {
    let id = format!("{:04x}", s.name.bytes().fold(std::process::id(), |h, b| h.wrapping_mul(31) ^ b as u32) & 0xffff);
    let base = project_root().join(format!("target/fakeboot-{id}"));
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("root");
    for d in ["dev", "proc", "sys", "etc/bootmark"] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::copy(binary, root.join("init"))?;
    if s.mkfs {
        for (path, data, mode) in crate::build::image::mkfs::files(
            &["ext3".to_string()],
            crate::build::arch::Arch::X86_64,
            crate::host::deps::can_install(),
        )? {
            let dest = root.join(&path);
            fs::create_dir_all(dest.parent().unwrap())?;
            fs::write(&dest, data)?;
            std::fs::set_permissions(&dest, std::os::unix::fs::PermissionsExt::from_mode(mode))
                .with_context(|| format!("cannot chmod {}", dest.display()))?;
        }
    }
    let (results_label, target_label) = (format!("BMR{id}").to_uppercase(), format!("BMT{id}").to_uppercase());
    let results_img = base.join("results.img");
    let target_img = base.join("target.img");
    let bystander_img = base.join("bystander.img");
    make_image(&results_img, 64)?;
    make_image(&target_img, 256)?;
    make_image(&bystander_img, 32)?;
    // Real sticks are vfat; a host kernel without vfat (this one boots with
    // `nomodule`) gets an ext2 stick: the same code path with another fs type.
    let stick_fs =
        if std::fs::read_to_string("/proc/filesystems").unwrap_or_default().contains("vfat") { "vfat" } else { "ext2" };
    match stick_fs {
        "vfat" => cmd("mkfs.vfat", &["-n", &results_label, results_img.to_str().unwrap()])?,
        _ => cmd("mkfs.ext2", &["-q", "-F", "-L", &results_label, results_img.to_str().unwrap()])?,
    };
    if !s.stick_without_journal {
        put_journal(&results_img, stick_fs, &base)?;
    }
    match s.target {
        Some(prepare) => prepare(&target_img)?,
        None => {
            cmd("mkfs.ext4", &["-q", "-F", "-L", &target_label, target_img.to_str().unwrap()])?;
        }
    }
    cmd("mkfs.ext4", &["-q", "-F", "-L", "BYSTANDER", bystander_img.to_str().unwrap()])?;
    if s.precious_file {
        let precious = base.join("precious.txt");
        fs::write(&precious, b"user data")?;
        for img in [&target_img, &bystander_img] {
            cmd(
                "debugfs",
                &["-w", "-R", &format!("write {} precious.txt", precious.display()), img.to_str().unwrap()],
            )?;
        }
    }
    let target_before = fs::read(&target_img)?;
    let stick_head_before = fs::read(&results_img)?[..1024].to_vec();
    let bystander_before = fs::read(&bystander_img)?;
    let mut loops = Vec::new();
    let outcome = (|| {
        for img in [&results_img, &target_img, &bystander_img] {
            loops.push(cmd("losetup", &["--find", "--show", img.to_str().unwrap()])?.trim().to_string());
        }
        boot(s, &root, &results_label, &target_label, &loops[1])
    })();
    for l in &loops {
        let _ = cmd("losetup", &["-d", l]);
    }
    let serial = outcome?;
    if fs::read(&bystander_img)? != bystander_before {
        return Err("the bystander disk, named nowhere on the command line, changed".into());
    }
    // The stick's boot block (outside its filesystem: ext2's first KiB, FAT's reserved
    // sectors before the boot sector's dirty flag) is never written.
    let stick_head_after = fs::read(&results_img)?[..1024].to_vec();
    if stick_fs == "ext2" && stick_head_after != stick_head_before {
        return Err("the stick's first KiB (outside its filesystem) changed".into());
    }
    let stick_docs = read_stick(&results_img, stick_fs, &base)?;
    let target_after = fs::read(&target_img)?;
    let target_root = if s.target.is_none() {
        cmd("debugfs", &["-R", "ls -p /", target_img.to_str().unwrap()])?
            .lines()
            .filter_map(|l| l.split('/').nth(5).filter(|n| !n.is_empty() && *n != "." && *n != "..").map(String::from))
            .collect()
    } else {
        Vec::new()
    };
    // Outside the filesystem's own metadata: the first KiB (boot block), which ext4 never writes.
    if target_after[..1024] != target_before[..1024] {
        return Err("the target's first KiB (outside its filesystem) changed".into());
    }
    let result = (s.check)(&Boot {
        serial_docs: crate::check::boots::support::serial_documents(&serial),
        serial,
        stick_docs,
        target_root,
        target_untouched: target_after == target_before,
    });
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&base);
    }
    result
}

/// The journal the image builder puts on every stick, put on a test stick.
fn put_journal(img: &Path, fs: &str, base: &Path) -> Result<()> {
    let journal = base.join("journal.bin");
    let mut data = bootmark::journal::header_block();
    data.resize(4 << 20, 0);
    fs::write(&journal, data)?;
    let (i, j) = (img.to_str().unwrap(), journal.to_str().unwrap());
    if fs == "vfat" {
        cmd("mmd", &["-i", i, "::bootmark"])?;
        cmd("mcopy", &["-i", i, j, "::bootmark/journal.bin"])?;
    } else {
        // Not debugfs `write`: it leaves zero blocks as holes, which /init
        // rightly refuses to write through (a hole has no place on the disk).
        let point = base.join("stick-mount");
        fs::create_dir_all(&point)?;
        cmd("mount", &["-o", "loop", i, point.to_str().unwrap()])?;
        let copied = std::fs::create_dir_all(point.join("bootmark"))
            .and_then(|()| std::fs::copy(&journal, point.join(bootmark::journal::PATH)))
            .with_context(|| format!("cannot copy {} into {}", journal.display(), point.display()));
        cmd("umount", &[point.to_str().unwrap()])?;
        copied?;
    }
    Ok(())
}

/// Start /init in its namespaces with a pseudo-terminal as /dev/ttyS9; wait
/// for it to power off; return what it printed.
fn boot(s: &Scenario, root: &Path, results_label: &str, target_label: &str, target_dev: &str) -> Result<String> {
    let console = if s.extra_cmdline.contains("bootmark.console=") { "" } else { "bootmark.console=ttyS9" };
    let mut cmdline = format!(
        "console=ttyS0 {console} bootmark.results=LABEL={results_label} bootmark.device-wait=5 {}",
        s.extra_cmdline
            .replace("TARGETDEVNAME", target_dev.trim_start_matches("/dev/"))
            .replace("TARGETDEV", target_dev)
            .replace("TARGET", &format!("LABEL={target_label}"))
            .replace("RESULTS", &format!("LABEL={results_label}"))
    );
    if s.with_target {
        cmdline += &format!(" bootmark.target=LABEL={target_label}");
    }
    if s.as_imaged_for_2_6 {
        cmdline = as_a_2_6_kernel_keeps_it(results_label, target_label)?;
    }
    // A raw byte that is not UTF-8 where the scenario put U+FFFD.
    let cmdline: Vec<u8> =
        cmdline.replace('\u{fffd}', "\u{1}").bytes().map(|b| if b == 1 { 0xff } else { b }).collect();
    let console = Console::attach(&root.join("dev/ttyS9"))?;
    // The target's node, so that a hostile bootmark.console= can name a real block device.
    let name = target_dev.trim_start_matches("/dev/");
    let rdev = std::os::unix::fs::MetadataExt::rdev(&fs::metadata(target_dev)?);
    let node = root.join("dev").join(name);
    let _ = std::fs::remove_file(&node);
    nix::sys::stat::mknod(&node, nix::sys::stat::SFlag::S_IFBLK, nix::sys::stat::Mode::from_bits_truncate(0o600), rdev)
        .map_err(|e| format!("mknod {}: {e}", node.display()))?;
    let xtask = std::env::current_exe().context("the path of xtask itself")?;
    let old_kernel = s.old_kernel.map(|k| ["--old-kernel", k.name]).into_iter().flatten();
    let cmdline = <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(cmdline);
    let sh = shell()?;
    let pid1 = sh
        .cmd("unshare")
        .args(["--pid", "--fork", "--mount", "--"])
        .arg(xtask)
        .arg("pid1")
        .args(old_kernel)
        .arg(root)
        .env("BOOTMARK_CMDLINE", &cmdline);
    let mut child = crate::host::process::spawn(pid1, Streams::default())?;
    let started = Instant::now();
    let mut out = Vec::new();
    loop {
        console.drain(&mut out);
        if child.try_wait().context("waiting for the fake boot")?.is_some() {
            console.drain(&mut out);
            break;
        }
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the fake boot did not power off within 180 s; serial:\n{}", tail(&out)));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The line an image made by `cargo xtask image` gives a 2.6.9 kernel
/// (boot protocol 2.03: 255 bytes) with this boot's target, stick and
/// console, as syslinux hands it over (`BOOT_IMAGE=` before, `initrd=`
/// after) and the kernel keeps it: its first 255 bytes. It must reach /init
/// whole, bootmark's words and all.
fn as_a_2_6_kernel_keeps_it(results_label: &str, target_label: &str) -> Result<String> {
    use crate::build::image::{cmdline, menu};
    let args = crate::build::image::args::Args {
        serial: "ttyS9,115200".into(),
        target: Some(format!("LABEL={target_label}")),
        ..Default::default()
    };
    let arch = crate::build::arch::Arch::X86_64;
    let base = cmdline::cmdline(&args, "quick", arch)?;
    let own =
        format!("{base} bootmark.entry=k0 bootmark.results=LABEL={results_label} bootmark.device-wait=5 panic=30");
    let limits = cmdline::Limits { release: "2.6.9-42.ELsmp", arch, cmdline_max: 255 };
    let fitted = cmdline::fit(&own, "k0", "k0", &limits)?;
    let (_, booted) = menu::as_booted("k0", arch, &fitted.line).into_iter().next().ok_or("no bootloader")?;
    let kept: String = booted.chars().take(255).collect();
    if kept != booted || fitted.line.contains("trace_event=") {
        return Err(format!("the image's line for a 2.6 kernel would be cut or carries tracepoints: {booted}"));
    }
    Ok(kept)
}

/// A pseudo-terminal standing in for the serial port: its slave is bound
/// onto the fake root's dev/ttyS9 (a terminal, as /init requires of a
/// console), its master read here without blocking.
struct Console {
    master: std::fs::File,
    /// Held open so reading the master never sees EIO between /init's opens.
    _slave: std::os::fd::OwnedFd,
    node: std::path::PathBuf,
}

impl Console {
    fn attach(node: &Path) -> Result<Console> {
        use nix::sys::termios;
        let pty = nix::pty::openpty(None, None).map_err(|e| format!("openpty: {e}"))?;
        let mut t = termios::tcgetattr(&pty.slave).context("tcgetattr of the console pty")?;
        termios::cfmakeraw(&mut t);
        termios::tcsetattr(&pty.slave, termios::SetArg::TCSANOW, &t).context("tcsetattr of the console pty")?;
        let name = nix::unistd::ttyname(&pty.slave).map_err(|e| format!("ttyname: {e}"))?;
        fs::write(node, b"")?;
        cmd("mount", &["--bind", name.to_str().unwrap(), node.to_str().unwrap()])?;
        let master = std::fs::File::from(pty.master);
        nix::fcntl::fcntl(&master, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK))
            .context("O_NONBLOCK on the console pty")?;
        Ok(Console { master, _slave: pty.slave, node: node.to_path_buf() })
    }

    fn drain(&self, out: &mut Vec<u8>) {
        use std::io::Read;
        let mut buf = [0u8; 65536];
        while let Ok(n) = (&self.master).read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = cmd("umount", &[self.node.to_str().unwrap()]);
    }
}

fn tail(serial: &[u8]) -> String {
    let s = String::from_utf8_lossy(serial);
    s.lines().filter(|l| !l.contains("@BM1")).collect::<Vec<_>>().join("\n")
}

/// The stick's journal, copied off the image and read by the collector:
/// every document in it must verify (no torn entries, no stray blocks).
fn read_stick(img: &Path, fs: &str, base: &Path) -> Result<Vec<Document>> {
    let copy = base.join("journal-after.bin");
    let (i, c) = (img.to_str().unwrap(), copy.to_str().unwrap());
    let _ = std::fs::remove_file(&copy);
    if fs == "vfat" {
        cmd("mcopy", &["-n", "-i", i, "::bootmark/journal.bin", c])?;
    } else {
        cmd("debugfs", &["-R", &format!("dump /bootmark/journal.bin {c}"), i])?;
    }
    if !copy.exists() {
        return Ok(Vec::new());
    }
    let collected = bootmark::collect::collect(&[copy]);
    // Runs a refused boot never ran are the boot's news, not the journal's fault.
    let problems: Vec<_> = collected.problems.iter().filter(|p| !p.is_not_run()).collect();
    if !problems.is_empty() {
        return Err(format!("the stick's journal has problems: {problems:?}"));
    }
    Ok(collected.documents)
}

fn check_happy(b: &Boot) -> Result<()> {
    check_happy_on(b, "ext4")
}

fn check_happy_on(b: &Boot, fs: &str) -> Result<()> {
    let workloads = results(&b.serial_docs);
    let run = run_record(&b.serial_docs).ok_or_else(|| format!("no run record on serial:\n{}", b.serial))?;
    if run.status != Status::Ok {
        return Err(format!("run status {}: {}", run.status.name(), run.error.as_deref().unwrap_or("")));
    }
    if workloads.len() != 6 || workloads.iter().any(|r| r.status != Status::Ok) {
        return Err(format!("expected 6 ok records on serial, got {}", workloads.len()));
    }
    if workloads.iter().any(|r| {
        r.storage.fs.as_deref() != Some(fs) || !r.storage.mount_options.as_deref().unwrap_or("").contains("noatime")
    }) {
        return Err(format!("records do not show the {fs} target mounted noatime"));
    }
    if b.stick_docs.len() != 7 || results(&b.stick_docs[..6]) != workloads {
        return Err(format!(
            "the stick holds {} documents, not the same 6 records + run record as serial",
            b.stick_docs.len()
        ));
    }
    let problems = collect_problems(b);
    if !problems.is_empty() {
        return Err(format!("collect finds problems in a clean boot's serial log: {problems:?}"));
    }
    if !b.serial.contains("bootmark: manyfiles") {
        return Err("no human summary lines on serial".into());
    }
    if b.target_root.iter().any(|n| n != "lost+found" && n != bootmark::contract::formatting::SCRATCH_MARKER) {
        return Err(format!("the target was not left clean: {:?}", b.target_root));
    }
    Ok(())
}

fn check_error(b: &Boot, expect: &str, stick_expected: bool) -> Result<()> {
    let run = run_record(&b.serial_docs).ok_or_else(|| format!("no run record on serial:\n{}", b.serial))?;
    let error = run.error.as_deref().unwrap_or("");
    if run.status != Status::Error || !error.contains(expect) {
        return Err(format!("expected an error record containing '{expect}', got {}: {error}", run.status.name()));
    }
    if !results(&b.serial_docs).is_empty() {
        return Err("workloads ran although the boot was refused".into());
    }
    if stick_expected != run_record(&b.stick_docs).is_some() {
        return Err(format!("run record on the stick: expected {stick_expected}"));
    }
    Ok(())
}

fn check_no_target(b: &Boot) -> Result<()> {
    check_error(b, "no target given", true)?;
    expect_not_run(b, 6)
}

/// What `bootmark collect` finds wrong in the boot's serial log, after its
/// completeness check.
fn collect_problems(b: &Boot) -> Vec<String> {
    let mut c = bootmark::collect::Collector::new(None);
    let _ = bootmark::collect::serial::collect_reader(b.serial.as_bytes(), "serial.log", &mut c);
    c.check_complete();
    c.collected.problems.iter().map(|p| p.why.clone()).collect()
}

/// A boot that stopped early: collect names the planned runs that never
/// ran (the boot's own count against its plan), so it is not "ok".
fn expect_not_run(b: &Boot, planned: u32) -> Result<()> {
    let never = planned - results(&b.serial_docs).len() as u32;
    let expect = format!("the boot's plan had {planned} workload runs");
    let problems = collect_problems(b);
    if !problems.iter().any(|p| p.contains(&expect) && p.contains(&format!("so {never} planned runs never ran"))) {
        return Err(format!("collect does not name the {never} runs that never ran: {problems:?}"));
    }
    Ok(())
}

fn check_bad_cmdline(b: &Boot) -> Result<()> {
    check_error(b, "unknown parameter bootmark.tagret", true)
}

/// A refused command line: the error on serial and the stick, nothing run,
/// the target's bytes unchanged (the bystander is checked for every scenario).
fn check_refused(b: &Boot, expect: &str) -> Result<()> {
    check_error(b, expect, true)?;
    if !b.target_untouched {
        return Err("the target changed although the boot was refused".into());
    }
    Ok(())
}

fn check_plan_path(b: &Boot) -> Result<()> {
    check_refused(b, "no paths")
}

fn check_huge_number(b: &Boot) -> Result<()> {
    check_refused(b, "seconds, from 0.1 to")
}

fn check_duplicate(b: &Boot) -> Result<()> {
    check_refused(b, "given twice")
}

fn check_non_utf8(b: &Boot) -> Result<()> {
    check_refused(b, "not UTF-8")
}

/// `bootmark.console=` naming the target's block device: refused as a
/// console (not a terminal), /dev/console used instead; the run itself goes
/// on and nothing is written to the device outside its filesystem.
fn check_console_block(b: &Boot) -> Result<()> {
    let run = run_record(&b.stick_docs).ok_or("no run record on the stick")?;
    let fallback = fact(run, "console.fallback").as_str().unwrap_or("");
    if !fallback.contains("not a character device") {
        return Err(format!("the block device was not refused as a console: {}", fact(run, "console")));
    }
    if run.status != Status::Ok || b.stick_docs.len() != 7 {
        let why = run.error.as_deref().unwrap_or("");
        return Err(format!("the run should go on with results on the stick: {} documents, {why}", b.stick_docs.len()));
    }
    Ok(())
}

/// Formatting refused on a partition holding something bootmark does not
/// know as an empty scratch filesystem: named, and not one byte changed.
fn check_refused_untouched(b: &Boot, what: &str) -> Result<()> {
    check_refused(b, "refusing to format")?;
    let error = run_record(&b.stick_docs).and_then(|r| r.error.clone()).unwrap_or_default();
    if !error.contains(what) {
        return Err(format!("the refusal does not name {what}: {error}"));
    }
    Ok(())
}

fn make_luks(img: &Path) -> Result<()> {
    let key = img.with_extension("key");
    fs::write(&key, b"not a real secret")?;
    let (k, i) = (key.to_str().unwrap(), img.to_str().unwrap());
    let fast = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
    cmd("cryptsetup", &[&["luksFormat", "--batch-mode", "--key-file", k][..], &fast, &[i]].concat()).map(|_| ())
}

fn make_lvm(img: &Path) -> Result<()> {
    // pvcreate needs a block device: a loop device for the time it runs.
    let dev = cmd("losetup", &["--find", "--show", img.to_str().unwrap()])?.trim().to_string();
    let r = cmd("pvcreate", &["-qq", "--config", "devices { obtain_device_list_from_udev=0 }", "-ff", "-y", &dev]);
    let _ = cmd("losetup", &["-d", &dev]);
    r.map(|_| ())
}

fn make_swap(img: &Path) -> Result<()> {
    cmd("mkswap", &[img.to_str().unwrap()]).map(|_| ())
}

fn make_btrfs(img: &Path) -> Result<()> {
    cmd("mkfs.btrfs", &["-q", "-f", img.to_str().unwrap()]).map(|_| ())
}

fn make_ntfs(img: &Path) -> Result<()> {
    cmd("mkfs.ntfs", &["-q", "-F", "-f", img.to_str().unwrap()]).map(|_| ())
}

/// Non-zero bytes with no known signature, at the start of the partition.
fn make_random(img: &Path) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let f =
        std::fs::OpenOptions::new().write(true).open(img).with_context(|| format!("cannot open {}", img.display()))?;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    f.write_all_at(&data, 0).with_context(|| format!("cannot write {}", img.display()))
}

fn check_format_refused(b: &Boot) -> Result<()> {
    check_error(b, "holds a filesystem with data", true)?;
    if !b.target_root.iter().any(|n| n == "precious.txt") {
        return Err(format!("the user's file is gone: {:?}", b.target_root));
    }
    Ok(())
}

fn check_same_disk(b: &Boot) -> Result<()> {
    check_error(b, "same disk", true)
}

/// The run is cut when the whole-run timeout passes: what finished is kept,
/// the run record says why it stopped, the target is cleaned up.
fn check_watchdog(b: &Boot) -> Result<()> {
    let run = run_record(&b.serial_docs).ok_or_else(|| format!("no run record on serial:\n{}", b.serial))?;
    if run.status != Status::Error || !run.error.as_deref().unwrap_or("").contains("timeout") {
        return Err(format!("expected a timeout error, got {}: {:?}", run.status.name(), run.error));
    }
    let records = results(&b.serial_docs);
    if records.len() >= 6 {
        return Err("the whole plan ran despite a 0.8 s timeout".into());
    }
    expect_not_run(b, 6)?;
    if b.target_root.iter().any(|n| n != "lost+found") {
        return Err(format!("the target was not left clean: {:?}", b.target_root));
    }
    Ok(())
}

/// Formatting happened (confirmed, empty target): the records show ext3 on a
/// target that was ext4, and the target carries the scratch marker.
fn check_formatted(b: &Boot) -> Result<()> {
    check_happy_on(b, "ext3")?;
    if !b.target_root.iter().any(|n| n == bootmark::contract::formatting::SCRATCH_MARKER) {
        return Err(format!("no scratch marker after formatting: {:?}", b.target_root));
    }
    // The run record says how the target was made: the image's static mke2fs.
    let run = run_record(&b.serial_docs).ok_or("no run record")?;
    let mkfs = fact(run, "target.mkfs");
    let version = mkfs["version"].as_str().unwrap_or("");
    let pinned = format!("mke2fs {}", crate::build::image::static_mkfs::E2FSPROGS.version);
    if mkfs["program"] != "/sbin/mke2fs" || !version.starts_with(&pinned) || mkfs["args"][1] != "ext3" {
        return Err(format!("the run record does not show the static mke2fs making ext3: {mkfs}"));
    }
    Ok(())
}
