//! The `command` workload through `bootmark run`: real programs (the host's
//! shell and coreutils), a real filesystem under target/, real records.
//! The same code runs as /init in an image; the QEMU boot with the seed's C
//! program is `cargo xtask check command`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("command-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run a plan of these workloads (JSON objects) in a fresh directory: the
/// records and bootmark's stderr.
fn run(name: &str, deadline_s: u32, workloads: &[&str]) -> (Vec<Value>, String) {
    run_with(name, &[], deadline_s, workloads)
}

/// [`run`] with more arguments to `bootmark run`.
fn run_with(name: &str, extra: &[&str], deadline_s: u32, workloads: &[&str]) -> (Vec<Value>, String) {
    run_inheriting(name, extra, None, deadline_s, workloads)
}

/// [`run_with`], bootmark started with `inherited` open as its fd 9 (as a
/// shell's `9<>FILE` leaves it).
fn run_inheriting(
    name: &str,
    extra: &[&str],
    inherited: Option<std::os::fd::RawFd>,
    deadline_s: u32,
    workloads: &[&str],
) -> (Vec<Value>, String) {
    use std::os::unix::process::CommandExt;
    let dir = scratch(name);
    let plan = dir.with_extension("plan.json");
    let json = format!(
        r#"{{"name":"{name}","probe":{{"interval_ms":20,"baseline_s":0.2,"recovery_deadline_s":2}},
            "sample_interval_ms":50,"workload_deadline_s":{deadline_s},"workloads":[{}]}}"#,
        workloads.join(",")
    );
    std::fs::write(&plan, json).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_bootmark"));
    command.args(["run", "--plan"]).arg(&plan).arg("--dir").arg(&dir).args(extra);
    if let Some(fd) = inherited {
        // SAFETY: dup2 between the child's own descriptors, before it execs.
        unsafe {
            command.pre_exec(move || match libc::dup2(fd, 9) {
                9 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            })
        };
    }
    let out = command.output().unwrap();
    let records: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(records.len(), workloads.len(), "{stderr}");
    (records, stderr)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn sh(script: &str) -> String {
    serde_json::json!({"name": "command", "params": {"program": "sh", "args": ["-c", script]}}).to_string()
}

fn running(pattern: &str) -> bool {
    Command::new("pgrep").args(["-f", pattern]).output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn a_program_is_timed_counted_and_its_output_kept() {
    // 4 MiB written to a file in a subdirectory named by cwd, read back,
    // some CPU burnt, then a final sync: every figure has something to show.
    let script = "head -c 4194304 /dev/zero > data; cat data > /dev/null; \
                  i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo done in $(pwd); echo careful >&2";
    let w = serde_json::json!({"name": "command", "params": {
        "program": "sh", "args": ["-c", script], "cwd": "work/here", "final_sync": true}});
    let (recs, stderr) = run("ok", 600, &[&w.to_string()]);
    let r = &recs[0];
    assert_eq!(r["status"], "ok", "{stderr}");
    let d = &r["details"];
    assert_eq!(d["exit_code"], 0);
    let stdout = d["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("done in /") && stdout.trim_end().ends_with("w000-command/work/here"), "{stdout}");
    assert_eq!(d["stdout_bytes"].as_u64().unwrap() as usize, stdout.len());
    assert_eq!(d["stderr"], "careful\n");
    // head's 4 MiB to the file and cat's to /dev/null; the output to the record is not counted.
    let written = r["bytes_written"].as_u64().unwrap();
    assert!((8 << 20..(8 << 20) + 4096).contains(&written), "{written}");
    assert!(r["bytes_read"].as_u64().unwrap() >= 8 << 20, "{}", r["bytes_read"]);
    assert!(f(&d["io"]["syscw"]) > 0.0);
    // The shell's CPU, from the worker's wait4 after it reaped the program.
    assert!(f(&r["times"]["user_s"]) + f(&r["times"]["sys_s"]) > 0.02, "{}", r["times"]);
    let (wall, durable) = (f(&r["times"]["wall_s"]), f(&r["times"]["durable_s"]));
    assert!(wall > 0.0 && durable >= wall, "{}", r["times"]);
    assert_eq!(r["workload"]["params"]["cwd"], "work/here");
    assert!(r["responsiveness"]["samples"].as_u64().unwrap() > 0, "the probe watched it");
}

#[test]
fn a_failing_program_is_an_error_record_quoting_its_stderr_and_the_run_goes_on() {
    let (recs, stderr) =
        run("fails", 600, &[&sh("echo starting; echo first >&2; echo 'no such table: t1' >&2; exit 3"), &sh("true")]);
    let r = &recs[0];
    assert_eq!(r["status"], "error", "{stderr}");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("exited with code 3") && error.contains("first | no such table: t1"), "{error}");
    assert_eq!(r["details"]["exit_code"], 3);
    assert_eq!(r["details"]["stdout"], "starting\n");
    assert_eq!(recs[1]["status"], "ok");
    assert!(stderr.contains("1 of 2 workload runs did not finish"), "{stderr}");
}

#[test]
fn a_missing_program_is_an_error_record_saying_how_to_provide_it() {
    let w = r#"{"name":"command","params":{"program":"no-such-program-bootmark"}}"#;
    let abs = r#"{"name":"command","params":{"program":"/nonexistent/prog"}}"#;
    let (recs, _) = run("missing", 600, &[w, abs]);
    let e = recs[0]["error"].as_str().unwrap();
    assert!(e.contains("'no-such-program-bootmark' is not in") && e.contains("--include"), "{e}");
    assert!(recs[1]["error"].as_str().unwrap().contains("/nonexistent/prog"), "{}", recs[1]["error"]);
}

#[test]
fn a_hung_program_is_stopped_at_its_limit_with_its_output_so_far_and_nothing_left_running() {
    // The shell starts a child (sleep) that would outlive a kill of the shell alone.
    let w = serde_json::json!({"name": "command", "params": {
        "program": "sh", "args": ["-c", "echo before the hang; sleep 4321; echo never"], "time_limit_s": 1.5}});
    let (recs, stderr) = run("limit", 600, &[&w.to_string()]);
    let r = &recs[0];
    assert_eq!(r["status"], "timeout", "{stderr}");
    assert!(r["error"].as_str().unwrap().contains("time limit of 1.5 s"), "{}", r["error"]);
    assert_eq!(r["details"]["stdout"], "before the hang\n");
    assert_eq!(r["details"]["exit"], "killed by signal 9");
    let wall = f(&r["times"]["wall_s"]);
    assert!((1.5..3.0).contains(&wall), "{wall}");
    assert!(!running("sleep 4321"), "the program's child was left running");
}

#[test]
fn without_a_limit_the_worker_stops_the_program_before_the_watchdog_and_keeps_its_output() {
    let (recs, stderr) = run("watchdog", 4, &[&sh("echo partial; sleep 5432")]);
    let r = &recs[0];
    assert_eq!(r["status"], "timeout", "{stderr}");
    assert!(r["error"].as_str().unwrap().contains("the run's watchdog"), "{}", r["error"]);
    assert_eq!(r["details"]["stdout"], "partial\n");
    assert!(!running("sleep 5432"));
}

#[test]
fn only_the_last_output_limit_bytes_are_kept_and_all_are_counted() {
    let w = serde_json::json!({"name": "command", "params": {
        "program": "sh", "args": ["-c", "seq 1 30000"], "output_limit": "1KiB"}});
    let (recs, _) = run("limit-output", 600, &[&w.to_string()]);
    let d = &recs[0]["details"];
    let kept = d["stdout"].as_str().unwrap();
    assert_eq!(kept.len(), 1024);
    assert!(kept.ends_with("29999\n30000\n"), "{kept}");
    // seq 1 30000: 9 one-digit, 90 two-digit, 900, 9000, 20001 five-digit lines.
    assert_eq!(d["stdout_bytes"], 9 * 2 + 90 * 3 + 900 * 4 + 9000 * 5 + 20001 * 6);
    assert_eq!(recs[0]["bytes_written"], 0, "output to the record is not the program's writing");
}

#[test]
fn instances_of_a_program_run_together_and_one_failing_fails_the_whole() {
    let ok = r#"{"name":"instances","params":{"count":3,"workload":{"name":"command","params":{"program":"sh","args":["-c","head -c 1048576 /dev/zero > f"]}}}}"#;
    let bad = r#"{"name":"instances","params":{"count":2,"workload":{"name":"command","params":{"program":"sh","args":["-c","exit 7"]}}}}"#;
    let (recs, _) = run("instances", 600, &[ok, bad]);
    assert_eq!(recs[0]["status"], "ok");
    assert!(recs[0]["bytes_written"].as_u64().unwrap() >= 3 << 20);
    assert_eq!(recs[1]["status"], "error");
    assert!(recs[1]["error"].as_str().unwrap().contains("exited with code 7"), "{}", recs[1]["error"]);
}

/// A disk a careless program could name: a loop device over a file of
/// known bytes (detached when dropped).
struct LoopDisk {
    node: String,
    file: PathBuf,
}

impl LoopDisk {
    fn new(name: &str) -> LoopDisk {
        let file = scratch(name).join("other-disk.img");
        std::fs::write(&file, vec![0x5a; 1 << 20]).unwrap();
        let out = Command::new("losetup").args(["-f", "--show"]).arg(&file).output().expect("losetup");
        assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
        LoopDisk { node: String::from_utf8(out.stdout).unwrap().trim().to_string(), file }
    }

    fn untouched(&self) -> bool {
        std::fs::read(&self.file).unwrap().iter().all(|&b| b == 0x5a)
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.node).status();
    }
}

/// What a boot does with the user's programs, asked for by hand: a program
/// naming this machine's disk reaches none, cannot make a node or mount,
/// and the record says it ran confined. Needs root (CI runs as root);
/// without it the flag is refused up front.
#[test]
fn a_confined_program_reaches_no_disk_and_the_record_says_so() {
    // SAFETY: geteuid has no arguments.
    if unsafe { libc::geteuid() } != 0 {
        let dir = scratch("confined-not-root");
        let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
            .args(["run", "--plan", "quick", "--confine-programs", "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--confine-programs needs root"), "{stderr}");
        return;
    }
    let disk = LoopDisk::new("confined-disk");
    let script = format!(
        "ls /dev | tr '\\n' ' '; echo; \
         echo overwritten > {disk} 2>/dev/null && echo REACHED; \
         echo x > /dev/sdb 2>/dev/null && echo CREATED; \
         mknod node b 7 0 2>/dev/null && echo MKNOD; \
         mount -t tmpfs none . 2>/dev/null && echo MOUNTED; \
         echo overwritten >&9 2>/dev/null && echo INHERITED; \
         grep CapBnd /proc/self/status; stat -c %a /dev/null; true",
        disk = disk.node
    );
    // The disk also open as bootmark's fd 9, as a careless shell line leaves it.
    let held = std::fs::File::options().read(true).write(true).open(&disk.node).unwrap();
    let (recs, stderr) = run_inheriting(
        "confined",
        &["--confine-programs"],
        Some(std::os::fd::AsRawFd::as_raw_fd(&held)),
        600,
        &[&sh(&script)],
    );
    let r = &recs[0];
    assert_eq!(r["status"], "ok", "{stderr} {}", r["error"]);
    let stdout = r["details"]["stdout"].as_str().unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("fd full null random shm stderr stdin stdout urandom zero "), "{stdout}");
    for word in ["REACHED", "CREATED", "MKNOD", "MOUNTED", "INHERITED"] {
        assert!(!stdout.contains(word), "{word}: {stdout}");
    }
    let bounding = lines.next().and_then(|l| l.strip_prefix("CapBnd:")).unwrap_or_else(|| panic!("{stdout}"));
    let bounding = u64::from_str_radix(bounding.trim(), 16).unwrap();
    assert_eq!(lines.next(), Some("666"), "/dev/null is everyone's: {stdout}");
    for cap in [16, 17, 21, 27] {
        assert_eq!(bounding & 1 << cap, 0, "capability {cap} in {bounding:x}");
    }
    assert!(bounding & 1 << 1 != 0, "CAP_DAC_OVERRIDE is kept: {bounding:x}");
    let confined = &r["details"]["confined"];
    assert_eq!(confined["capabilities_dropped"][3], "CAP_MKNOD", "{confined}");
    assert_eq!(confined["bounding_set"], "the program's own");
    assert!(disk.untouched(), "{} was written", disk.node);
    // Closed, so that the write below reaches the file behind the loop device when it ends.
    drop(held);
    // Unconfined, the same program reaches it: the test can tell.
    let (recs, _) = run("unconfined", 600, &[&sh(&format!("echo overwritten > {} && echo REACHED", disk.node))]);
    assert_eq!(recs[0]["details"]["stdout"], "REACHED\n");
    assert!(!disk.untouched());
    assert_eq!(recs[0]["details"]["confined"], Value::Null);
}
