//! Booting /init without a VM: the static binary as PID 1 of a new PID and
//! mount namespace, chrooted into a fake root, with loop devices as the
//! results stick (vfat) and the target (ext4), a regular file as the serial
//! port, and optionally the simulated old-kernel syscall surface.
//! Scenarios check the happy path and the refusals that protect user data.

use crate::oldkernel::{self, LINUX_2_6_9, OldKernel};
use crate::{Result, project_root, static_build};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `cargo xtask pid1 [--old-kernel V] ROOT`: the launcher run inside the new
/// namespaces — bind /dev onto itself (so /init keeps it), chroot, optionally
/// install the old-kernel filter, exec /init as PID 1.
pub fn pid1(root: &Path, old: Option<&str>) -> Result<()> {
    use std::ffi::CString;
    let kernel = match old {
        None => None,
        Some("2.6.9") => Some(oldkernel::LINUX_2_6_9),
        Some("2.6.16") => Some(oldkernel::LINUX_2_6_16),
        Some(v) => return Err(format!("unknown old kernel {v}: 2.6.9 or 2.6.16")),
    };
    let dev = CString::new(root.join("dev").to_string_lossy().as_bytes()).unwrap();
    let croot = CString::new(root.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: plain syscalls with valid C strings; exec replaces this process.
    unsafe {
        if libc::mount(dev.as_ptr(), dev.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) != 0
            || libc::chroot(croot.as_ptr()) != 0
            || libc::chdir(c"/".as_ptr()) != 0
        {
            return Err(format!("pid1 setup: {}", std::io::Error::last_os_error()));
        }
    }
    if let Some(k) = kernel {
        oldkernel::install(&oldkernel::filter(k)).map_err(|e| format!("seccomp: {e}"))?;
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
    serial_docs: Vec<Value>,
    stick_docs: Vec<Value>,
    target_root: Vec<String>,
}

struct Scenario {
    name: &'static str,
    extra_cmdline: &'static str,
    with_target: bool,
    old_kernel: Option<OldKernel>,
    precious_file: bool,
    /// Put the host's mkfs.ext3 (and its libraries) into the fake root.
    mkfs: bool,
    check: fn(&Boot) -> Result<()>,
}

fn cmd(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program).args(args).output().map_err(|e| format!("{program}: {e} (is it installed?)"))?;
    if !out.status.success() {
        return Err(format!("{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn make_image(path: &Path, mib: u64) -> Result<()> {
    let f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    f.set_len(mib << 20).map_err(|e| e.to_string())
}

pub fn harness() -> Result<()> {
    let binary = static_build::build("x86_64")?;
    let scenarios = [
        Scenario {
            name: "happy path",
            extra_cmdline: "",
            with_target: true,
            old_kernel: None,
            precious_file: false,
            mkfs: false,
            check: check_happy,
        },
        Scenario {
            name: "happy path on simulated 2.6.9",
            extra_cmdline: "",
            with_target: true,
            old_kernel: Some(LINUX_2_6_9),
            precious_file: false,
            mkfs: false,
            check: check_happy,
        },
        Scenario {
            name: "no target",
            extra_cmdline: "",
            with_target: false,
            old_kernel: None,
            precious_file: false,
            mkfs: false,
            check: check_no_target,
        },
        Scenario {
            name: "bad command line",
            extra_cmdline: "bootmark.tagret=/dev/sda",
            with_target: true,
            old_kernel: None,
            precious_file: false,
            mkfs: false,
            check: check_bad_cmdline,
        },
        Scenario {
            name: "format refused on a filesystem with data",
            extra_cmdline: "bootmark.format=ext3 bootmark.format-confirm=TARGET",
            with_target: true,
            old_kernel: None,
            precious_file: true,
            mkfs: false,
            check: check_format_refused,
        },
        Scenario {
            name: "target on the results disk refused",
            extra_cmdline: "bootmark.target=RESULTS",
            with_target: false,
            old_kernel: None,
            precious_file: false,
            mkfs: false,
            check: check_same_disk,
        },
        Scenario {
            name: "confirmed format of an empty target",
            extra_cmdline: "bootmark.format=ext3 bootmark.format-confirm=TARGET",
            with_target: true,
            old_kernel: None,
            precious_file: false,
            mkfs: true,
            check: check_formatted,
        },
        Scenario {
            name: "whole-run watchdog",
            extra_cmdline: "bootmark.timeout=0.8",
            with_target: true,
            old_kernel: None,
            precious_file: false,
            mkfs: false,
            check: check_watchdog,
        },
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
        std::fs::create_dir_all(root.join(d)).map_err(|e| e.to_string())?;
    }
    std::fs::copy(binary, root.join("init")).map_err(|e| e.to_string())?;
    std::fs::write(root.join("dev/ttyS9"), b"").map_err(|e| e.to_string())?;
    if s.mkfs {
        for (path, data, mode) in crate::image::mkfs::files(&["ext3".to_string()])? {
            let dest = root.join(&path);
            std::fs::create_dir_all(dest.parent().unwrap()).map_err(|e| e.to_string())?;
            std::fs::write(&dest, data).map_err(|e| e.to_string())?;
            std::fs::set_permissions(&dest, std::os::unix::fs::PermissionsExt::from_mode(mode))
                .map_err(|e| e.to_string())?;
        }
    }
    let (results_label, target_label) = (format!("BMR{id}").to_uppercase(), format!("BMT{id}").to_uppercase());
    let results_img = base.join("results.img");
    let target_img = base.join("target.img");
    make_image(&results_img, 64)?;
    make_image(&target_img, 256)?;
    // Real sticks are vfat; a host kernel without vfat (this one boots with
    // `nomodule`) gets an ext2 stick: the same code path with another fs type.
    let stick_fs =
        if std::fs::read_to_string("/proc/filesystems").unwrap_or_default().contains("vfat") { "vfat" } else { "ext2" };
    match stick_fs {
        "vfat" => cmd("mkfs.vfat", &["-n", &results_label, results_img.to_str().unwrap()])?,
        _ => cmd("mkfs.ext2", &["-q", "-F", "-L", &results_label, results_img.to_str().unwrap()])?,
    };
    cmd("mkfs.ext4", &["-q", "-F", "-L", &target_label, target_img.to_str().unwrap()])?;
    if s.precious_file {
        let precious = base.join("precious.txt");
        std::fs::write(&precious, b"user data").map_err(|e| e.to_string())?;
        cmd(
            "debugfs",
            &["-w", "-R", &format!("write {} precious.txt", precious.display()), target_img.to_str().unwrap()],
        )?;
    }
    let results_loop = cmd("losetup", &["--find", "--show", results_img.to_str().unwrap()])?.trim().to_string();
    let target_loop = cmd("losetup", &["--find", "--show", target_img.to_str().unwrap()]);
    let outcome = target_loop.and_then(|target_loop| {
        let r = boot(s, &root, &results_label, &target_label);
        let _ = cmd("losetup", &["-d", target_loop.trim()]);
        r
    });
    let _ = cmd("losetup", &["-d", &results_loop]);
    let serial = outcome?;
    let stick_docs = read_stick(&results_img, stick_fs)?;
    let target_root = cmd("debugfs", &["-R", "ls -p /", target_img.to_str().unwrap()])?
        .lines()
        .filter_map(|l| l.split('/').nth(5).filter(|n| !n.is_empty() && *n != "." && *n != "..").map(String::from))
        .collect();
    let result =
        (s.check)(&Boot { serial_docs: crate::e2e::serial_documents(&serial), serial, stick_docs, target_root });
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&base);
    }
    result
}

fn boot(s: &Scenario, root: &Path, results_label: &str, target_label: &str) -> Result<String> {
    let mut cmdline = format!(
        "console=ttyS0 bootmark.console=ttyS9 bootmark.results=LABEL={results_label} bootmark.device-wait=5 bootmark.plan=quick {}",
        s.extra_cmdline
            .replace("TARGET", &format!("LABEL={target_label}"))
            .replace("RESULTS", &format!("LABEL={results_label}"))
    );
    if s.with_target {
        cmdline += &format!(" bootmark.target=LABEL={target_label}");
    }
    let xtask = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--mount", "--"]).arg(xtask).arg("pid1");
    if let Some(k) = s.old_kernel {
        c.args(["--old-kernel", k.name]);
    }
    let mut child = c.arg(root).env("BOOTMARK_CMDLINE", &cmdline).spawn().map_err(|e| format!("unshare: {e}"))?;
    let started = Instant::now();
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the fake boot did not power off within 180 s; serial:\n{}", tail(root)));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::read_to_string(root.join("dev/ttyS9")).map_err(|e| e.to_string())
}

fn tail(root: &Path) -> String {
    let s = std::fs::read_to_string(root.join("dev/ttyS9")).unwrap_or_default();
    s.lines().filter(|l| !l.contains("@BM1")).collect::<Vec<_>>().join("\n")
}

fn read_stick(img: &Path, fs: &str) -> Result<Vec<Value>> {
    let i = img.to_str().unwrap();
    let files: Vec<String> = if fs == "vfat" {
        let listing =
            Command::new("mdir").args(["-b", "-i", i, "::bootmark/results"]).env("MTOOLS_SKIP_CHECK", "1").output();
        let listing = listing.map_err(|e| format!("mdir (mtools) is needed: {e}"))?;
        String::from_utf8_lossy(&listing.stdout).lines().filter(|f| f.ends_with(".jsonl")).map(String::from).collect()
    } else {
        cmd("debugfs", &["-R", "ls -p /bootmark/results", i])?
            .lines()
            .filter_map(|l| {
                l.split('/').nth(5).filter(|n| n.ends_with(".jsonl")).map(|n| format!("/bootmark/results/{n}"))
            })
            .collect()
    };
    let mut docs = Vec::new();
    for file in files {
        let text = if fs == "vfat" {
            let out = Command::new("mtype").args(["-i", i, &file]).env("MTOOLS_SKIP_CHECK", "1").output();
            String::from_utf8_lossy(&out.map_err(|e| e.to_string())?.stdout).into_owned()
        } else {
            cmd("debugfs", &["-R", &format!("cat {file}"), i])?
        };
        for l in text.lines() {
            docs.push(serde_json::from_str(l).map_err(|e| format!("stick line is not JSON: {e}"))?);
        }
    }
    Ok(docs)
}

fn run_record(docs: &[Value]) -> Option<&Value> {
    docs.iter().find(|d| d["schema"] == bootmark::init::RUN_SCHEMA)
}

fn check_happy(b: &Boot) -> Result<()> {
    check_happy_on(b, "ext4")
}

fn check_happy_on(b: &Boot, fs: &str) -> Result<()> {
    let workloads: Vec<&Value> = b.serial_docs.iter().filter(|d| d["schema"] == "bootmark.result/1").collect();
    let run = run_record(&b.serial_docs).ok_or_else(|| format!("no run record on serial:\n{}", b.serial))?;
    if run["status"] != "ok" {
        return Err(format!("run status {}: {}", run["status"], run["error"]));
    }
    if workloads.len() != 6 || workloads.iter().any(|r| r["status"] != "ok") {
        return Err(format!("expected 6 ok records on serial, got {}", workloads.len()));
    }
    if workloads
        .iter()
        .any(|r| r["storage"]["fs"] != fs || !r["storage"]["mount_options"].as_str().unwrap_or("").contains("noatime"))
    {
        return Err(format!("records do not show the {fs} target mounted noatime"));
    }
    if b.stick_docs.len() != 7 || b.stick_docs[..6] != workloads.iter().map(|v| (*v).clone()).collect::<Vec<_>>()[..] {
        return Err(format!(
            "the stick holds {} documents, not the same 6 records + run record as serial",
            b.stick_docs.len()
        ));
    }
    if !b.serial.contains("bootmark: manyfiles") {
        return Err("no human summary lines on serial".into());
    }
    if b.target_root.iter().any(|n| n != "lost+found" && n != bootmark::init::safety::SCRATCH_MARKER) {
        return Err(format!("the target was not left clean: {:?}", b.target_root));
    }
    Ok(())
}

fn check_error(b: &Boot, expect: &str, stick_expected: bool) -> Result<()> {
    let run = run_record(&b.serial_docs).ok_or_else(|| format!("no run record on serial:\n{}", b.serial))?;
    let error = run["error"].as_str().unwrap_or("");
    if run["status"] != "error" || !error.contains(expect) {
        return Err(format!("expected an error record containing '{expect}', got {run}"));
    }
    if b.serial_docs.iter().any(|d| d["schema"] == "bootmark.result/1") {
        return Err("workloads ran although the boot was refused".into());
    }
    if stick_expected != run_record(&b.stick_docs).is_some() {
        return Err(format!("run record on the stick: expected {stick_expected}"));
    }
    Ok(())
}

fn check_no_target(b: &Boot) -> Result<()> {
    check_error(b, "no target given", true)
}

fn check_bad_cmdline(b: &Boot) -> Result<()> {
    check_error(b, "unknown parameter bootmark.tagret", false)
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
    if run["status"] != "error" || !run["error"].as_str().unwrap_or("").contains("timeout") {
        return Err(format!("expected a timeout error, got {run}"));
    }
    let records: Vec<&Value> = b.serial_docs.iter().filter(|d| d["schema"] == "bootmark.result/1").collect();
    if records.len() >= 6 {
        return Err("the whole plan ran despite a 0.8 s timeout".into());
    }
    if b.target_root.iter().any(|n| n != "lost+found") {
        return Err(format!("the target was not left clean: {:?}", b.target_root));
    }
    Ok(())
}

/// Formatting happened (confirmed, empty target): the records show ext3 on a
/// target that was ext4, and the target carries the scratch marker.
fn check_formatted(b: &Boot) -> Result<()> {
    check_happy_on(b, "ext3")?;
    if !b.target_root.iter().any(|n| n == bootmark::init::safety::SCRATCH_MARKER) {
        return Err(format!("no scratch marker after formatting: {:?}", b.target_root));
    }
    Ok(())
}
