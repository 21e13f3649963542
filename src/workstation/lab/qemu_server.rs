//! A server that is a program while it is on (`[server.qemu]`): power on
//! runs the lab file's command with the step's entry in it (`cargo xtask
//! qemu --entry-label {entry} …` starts a QEMU guest booting that entry),
//! the server is on while it runs, and power off ends it (its whole
//! process group). So `cargo xtask demo` and the tests run the very loop a
//! user runs on a server.
//!
//! The running program's process group id is kept in the state directory
//! (`SERVER.power.pid`) with its leader's start time and the workstation's
//! boot id: a lab killed while a guest ran and started again ends that
//! guest at its next power-off, never leaving two on one disk, and a pid
//! file left from before a reboot (its number since given to another
//! program) is ignored, never signalled.

use crate::workstation::template::{self, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The lines of the power-on program's output an error quotes.
const LAST_LINES_SAID: usize = 6;

pub struct QemuPower {
    command: String,
    /// What `{image}` stands for: the image's directory.
    image: Option<PathBuf>,
    /// The lab file's directory: the command runs there.
    dir: PathBuf,
    pid_file: PathBuf,
    /// What the command prints (QEMU's own errors), appended per power-on.
    output: PathBuf,
    /// The program this session started, reaped once it ends (a guest that
    /// powered itself off), so that its group no longer counts as running.
    child: Mutex<Option<Child>>,
    /// How that program ended, once it has (until the next power-on).
    exited: Mutex<Option<std::process::ExitStatus>>,
    /// Where its output starts in `output` (earlier power-ons' come before).
    output_from: Mutex<u64>,
    /// The process group known to be ours: started here, or found with
    /// the identity its pid file recorded. A group id is not given to
    /// another group while any of its processes lives, so it stays ours
    /// after its leader ends (a guest's children still ending).
    owned: Mutex<Option<i32>>,
}

impl QemuPower {
    pub fn new(command: &str, lab_dir: &Path, state_dir: &Path, server: &str) -> QemuPower {
        QemuPower {
            command: command.to_string(),
            image: None,
            dir: lab_dir.to_path_buf(),
            pid_file: state_dir.join(format!("{server}.power.pid")),
            output: state_dir.join(format!("{server}.power.out")),
            child: Mutex::new(None),
            exited: Mutex::new(None),
            output_from: Mutex::new(0),
            owned: Mutex::new(None),
        }
    }

    /// `{image}` in the command: this image directory.
    pub fn with_image(mut self, image: &Path) -> QemuPower {
        self.image = Some(image.to_path_buf());
        self
    }

    /// The command a step's entry runs, with `{set}` its settings for
    /// this boot (empty: the entry as built; `xtask qemu --set={set}`).
    /// The command goes to `sh -c`, so the entry is taken only as the
    /// image's labels are made (letters, digits, `.`, `_` and `-`) and the
    /// settings only as `bootmark.set=` takes them (those and `=`, `,`, `:`, `+`).
    pub fn command_for(&self, entry: &str, set: Option<&str>) -> Result<template::Filled, String> {
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if entry.is_empty() || !entry.chars().all(plain) {
            return Err(format!(
                "entry {entry:?} is not an image label (letters, digits, '.', '_', '-'): not put into `sh -c`"
            ));
        }
        if let Some(set) = set {
            crate::bootmenu::check_set(set).map_err(|e| format!("{e} or into `sh -c`"))?;
            if !self.command.contains("{set}") {
                return Err(format!(
                    "this step boots {entry} with settings ({set}), but the server's command has no {{set}} to \
                     pass them: add `--set={{set}}` to its `cargo xtask qemu` command"
                ));
            }
        }
        // One pass (template.rs): the image's path is never scanned again for `{entry}`.
        let mut values = vec![("entry", Value::Plain(entry)), ("set", Value::Plain(set.unwrap_or("")))];
        if let Some(image) = &self.image {
            values.push(("image", Value::Path(image)));
        }
        template::fill(&self.command, &values, "qemu.command")
    }

    /// The running program's process group, if one is running and is the
    /// one this lab started: owned already, or a group whose leader has
    /// the start time and boot id the pid file recorded.
    fn running(&self) -> Option<i32> {
        let text = std::fs::read_to_string(&self.pid_file).ok()?;
        let (pid, recorded) = text.trim().split_once(' ')?;
        let pid: i32 = pid.parse().ok()?;
        // SAFETY: kill(2) with signal 0 only checks that the group exists.
        if pid <= 1 || unsafe { libc::kill(-pid, 0) } != 0 {
            return None;
        }
        let mut owned = self.owned.lock().ok()?;
        if *owned != Some(pid) && identity(pid).as_deref() == Some(recorded) {
            *owned = Some(pid);
        }
        (*owned == Some(pid)).then_some(pid)
    }

    pub fn power_is_on(&self) -> bool {
        self.reap();
        self.running().is_some()
    }

    /// Why the program this session started is no longer running, once it
    /// has ended: its exit status and the last lines it printed (a QEMU that
    /// could not start says why there, and nothing reaches the console).
    /// A program that ended while others of its process group run on
    /// (`sh -c 'qemu … &'`) has not: the server is on while the group lives.
    pub fn ended(&self) -> Option<String> {
        self.reap();
        let status = (*self.exited.lock().ok()?)?;
        if self.running().is_some() {
            return None;
        }
        let printed = self.printed_since_power_on();
        let lines: Vec<&str> = printed.lines().filter(|l| !l.trim().is_empty()).collect();
        let last = lines[lines.len().saturating_sub(LAST_LINES_SAID)..].join(" | ");
        Some(format!(
            "the server's power-on command ended ({status}){}; all it printed is in {}",
            if last.is_empty() { String::new() } else { format!(", its last lines: {last}") },
            self.output.display()
        ))
    }

    /// The end of what the program of the last power-on printed (its own
    /// alone, not an earlier power-on's): at most its last 64 KiB.
    fn printed_since_power_on(&self) -> String {
        use std::io::{Read, Seek, SeekFrom};
        let from = self.output_from.lock().map_or(0, |f| *f);
        let mut text = Vec::new();
        if let Ok(mut f) = std::fs::File::open(&self.output) {
            let len = f.metadata().map_or(0, |m| m.len());
            let start = from.max(len.saturating_sub(64 << 10));
            let _ = f.seek(SeekFrom::Start(start)).and_then(|_| f.read_to_end(&mut text));
        }
        String::from_utf8_lossy(&text).into_owned()
    }

    fn reap(&self) {
        if let Ok(mut child) = self.child.lock()
            && let Some(status) = child.as_mut().and_then(|c| c.try_wait().ok().flatten())
        {
            *child = None;
            if let Ok(mut exited) = self.exited.lock() {
                *exited = Some(status);
            }
        }
    }

    /// End the program and everything it started (SIGTERM, then SIGKILL
    /// after 10 s), and wait until the group is gone.
    pub fn power_off(&self) -> Result<(), String> {
        if let Some(pid) = self.running() {
            let since = Instant::now();
            // SAFETY: signals to the process group this lab started.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
            while self.power_is_on() {
                if since.elapsed() > Duration::from_secs(10) {
                    // SAFETY: as above.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
                if since.elapsed() > Duration::from_secs(30) {
                    return Err(format!("`{}` (process group {pid}) did not end", self.command));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = std::fs::remove_file(&self.pid_file);
        Ok(())
    }

    /// Run the command for `entry` (with `set`), in a process group of its own.
    pub fn power_on(&self, entry: &str, set: Option<&str>) -> Result<(), String> {
        let line = self.command_for(entry, set)?;
        let out = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&self.output)
            .map_err(|e| format!("cannot open {}: {e}", self.output.display()))?;
        let err = out.try_clone().map_err(|e| format!("{}: {e}", self.output.display()))?;
        if let (Ok(mut from), Ok(meta)) = (self.output_from.lock(), out.metadata()) {
            *from = meta.len();
        }
        if let Ok(mut exited) = self.exited.lock() {
            *exited = None;
        }
        let child = Command::new("sh")
            .args(["-c", &format!("exec {}", line.text)])
            .envs(line.env.iter().cloned())
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("power on: cannot run `{}`: {e}", line.shown()))?;
        let pid = child.id();
        if let Ok(mut held) = self.child.lock() {
            *held = Some(child);
        }
        if let Ok(mut owned) = self.owned.lock() {
            *owned = Some(pid as i32);
        }
        let identity = identity(pid as i32).unwrap_or_default();
        std::fs::write(&self.pid_file, format!("{pid} {identity}\n"))
            .map_err(|e| format!("cannot write {}: {e}", self.pid_file.display()))
    }
}

impl Drop for QemuPower {
    /// Reap the guest when it ends, though this power is gone: a zombie
    /// left unreaped keeps its process group alive, and the next power of
    /// the same server (a git bisect's next image) would take it for a
    /// running guest that no signal ends.
    fn drop(&mut self) {
        let held = self.child.get_mut().ok().and_then(Option::take);
        if let Some(mut child) = held
            && !matches!(child.try_wait(), Ok(Some(_)))
        {
            std::thread::spawn(move || child.wait());
        }
    }
}

/// What tells a process from a later one given its number: its start time
/// (clock ticks after boot, /proc/PID/stat's 22nd field) and this boot's id.
fn identity(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: count fields after the last ')' (field 3 on).
    let start = stat[stat.rfind(')')? + 1..].split_whitespace().nth(19)?.to_string();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(format!("{start} {}", boot.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ended means the whole group is gone (a wrapper that backgrounds QEMU
    /// and exits is still a server that is on), and its words are this
    /// power-on's alone, never an earlier one's.
    #[test]
    fn a_program_has_ended_only_when_its_group_has_and_says_only_its_own_words() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-ended-words-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let wait_for = |power: &QemuPower| {
            let since = Instant::now();
            loop {
                if let Some(why) = power.ended() {
                    return why;
                }
                assert!(since.elapsed() < Duration::from_secs(10), "never ended");
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        // The leader exits at once; its background child holds the group for 1 s.
        let wrapper = QemuPower::new("sleep 1 & echo started {entry}", &dir, &dir, "wrapped");
        wrapper.power_on("k0", None).unwrap();
        let since = Instant::now();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(wrapper.ended(), None, "its child still runs: the server is on");
        let why = wait_for(&wrapper);
        assert!(since.elapsed() >= Duration::from_millis(900), "ended with its child, not before");
        assert!(why.contains("(exit status: 0), its last lines: started k0"), "{why}");
        // A second power-on whose program prints nothing quotes nothing of the first's.
        let silent = QemuPower::new("sh -c 'exit 4' # {entry}", &dir, &dir, "wrapped");
        silent.power_on("k0", None).unwrap();
        let why = wait_for(&silent);
        assert!(why.contains("(exit status: 4); all it printed"), "{why}");
        assert!(!why.contains("started k0"), "an earlier power-on's words: {why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn power_on_runs_the_entry_and_power_off_ends_its_whole_group() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-qemu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A "guest" that starts a child of its own, as cargo xtask qemu starts QEMU.
        let power = QemuPower::new("sh -c 'echo booting {entry}; sleep 60 & wait'", &dir, &dir, "vm");
        assert_eq!(power.command_for("k1", None).unwrap().text, "sh -c 'echo booting k1; sleep 60 & wait'");
        for hostile in ["k1; rm -rf ~", "$(reboot)", "", "a b"] {
            assert!(power.command_for(hostile, None).unwrap_err().contains("is not an image label"), "{hostile}");
        }
        let e = power.command_for("k1", Some("vm.swappiness=1")).unwrap_err();
        assert!(e.contains("has no {set}") && e.contains("--set={set}"), "{e}");
        let with_set = QemuPower::new("xtask qemu --entry-label {entry} --set={set}", &dir, &dir, "vm");
        assert_eq!(with_set.command_for("k1", None).unwrap().text, "xtask qemu --entry-label k1 --set=");
        assert_eq!(
            with_set.command_for("k1", Some("vm.swappiness=1,queue.max_sectors_kb=128")).unwrap().text,
            "xtask qemu --entry-label k1 --set=vm.swappiness=1,queue.max_sectors_kb=128"
        );
        assert!(with_set.command_for("k1", Some("a=1;reboot")).unwrap_err().contains("or into `sh -c`"));
        // An image path holding placeholders and $(…): filled once, and only as a variable's value.
        let image = QemuPower::new("xtask qemu --image {image} --entry-label {entry}", &dir, &dir, "vm")
            .with_image(Path::new("/l/{entry}$(touch X)"));
        let filled = image.command_for("k1", None).unwrap();
        assert_eq!(filled.text, "xtask qemu --image \"${BOOTMARK_IMAGE}\" --entry-label k1");
        assert_eq!(filled.env, [("BOOTMARK_IMAGE".to_string(), "/l/{entry}$(touch X)".into())]);
        let quoted = QemuPower::new("xtask qemu --image \"{image}\" {entry}", &dir, &dir, "vm").with_image(&dir);
        assert!(quoted.command_for("k1", None).unwrap_err().contains("inside quotes"));
        assert!(!power.power_is_on());
        power.power_on("k1", None).unwrap();
        assert!(power.power_is_on());
        let since = Instant::now();
        while !std::fs::read_to_string(dir.join("vm.power.out")).unwrap_or_default().contains("booting k1") {
            assert!(since.elapsed() < Duration::from_secs(10), "the command did not run with the step's entry");
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid_file = std::fs::read_to_string(dir.join("vm.power.pid")).unwrap();
        let pid: i32 = pid_file.split_whitespace().next().unwrap().parse().unwrap();
        power.power_off().unwrap();
        assert!(!power.power_is_on());
        // SAFETY: only checks that no process of the group is left.
        assert_ne!(unsafe { libc::kill(-pid, 0) }, 0, "a process of the group is still running");
        // A guest that ends by itself is off.
        let short = QemuPower::new("true {entry}", &dir, &dir, "short");
        short.power_on("k0", None).unwrap();
        let since = Instant::now();
        while short.power_is_on() {
            assert!(since.elapsed() < Duration::from_secs(10), "a program that ended still counts as on");
            std::thread::sleep(Duration::from_millis(50));
        }
        short.power_off().unwrap();
        crate::fsutil::remove_tree(&dir).unwrap();
    }

    #[test]
    fn a_stale_pid_file_is_never_signalled() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A process group this lab did not start (as a pid reused after a reboot would be).
        let mut bystander = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let pid = bystander.id();
        let power = QemuPower::new("true {entry}", &dir, &dir, "vm");
        for stale in [format!("{pid}\n"), format!("{pid} 1 00000000-0000-0000-0000-000000000000\n")] {
            std::fs::write(dir.join("vm.power.pid"), stale).unwrap();
            assert!(!power.power_is_on(), "a pid file that does not match its process counts as off");
            power.power_off().unwrap();
            assert_eq!(bystander.try_wait().unwrap(), None, "the unrelated process was signalled");
        }
        // The same group with its identity recorded, as a lab started again after a crash finds it: ended.
        std::fs::write(dir.join("vm.power.pid"), format!("{pid} {}\n", identity(pid as i32).unwrap())).unwrap();
        assert!(power.power_is_on());
        // Reaped as it ends, as a lab's own child would be.
        let reaper = std::thread::spawn(move || bystander.wait().unwrap());
        power.power_off().unwrap();
        assert!(!reaper.join().unwrap().success(), "ended by a signal");
        crate::fsutil::remove_tree(&dir).unwrap();
    }
}
