//! End-to-end tests of `bootmark run`: the real binary, a real filesystem
//! (under target/, not tmpfs), real records.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bootmark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bootmark"))
}

/// A fresh empty directory on the disk filesystem that holds target/.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_plan(dir: &Path, json: &str) -> PathBuf {
    let path = dir.with_extension("plan.json");
    std::fs::write(&path, json).unwrap();
    path
}

/// A path beside `dir` (not inside it), for files that must not count as left behind.
fn sibling(dir: &Path, name: &str) -> PathBuf {
    dir.with_file_name(format!("{}-{name}", dir.file_name().unwrap().to_string_lossy()))
}

fn run(plan: &Path, dir: &Path, extra: &[&str]) -> (Output, Vec<Value>) {
    let out = bootmark().arg("run").arg("--plan").arg(plan).arg("--dir").arg(dir).args(extra).output().unwrap();
    let records = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (out, records)
}

/// Start `bootmark run` in the background with its output captured.
fn spawn_run(plan: &Path, dir: &Path) -> std::process::Child {
    bootmark()
        .arg("run")
        .arg("--plan")
        .arg(plan)
        .arg("--dir")
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const SMALL: &str = r#"{"name":"small","probe":{"interval_ms":20,"baseline_s":0.2,"recovery_deadline_s":2},
 "sample_interval_ms":50,
 "workloads":[
  {"name":"manyfiles","params":{"files":10,"file_size":"100KiB","block":"16KiB","sync":"end"}},
  {"name":"seqwrite","params":{"size":"4MiB","block":"16KiB"}},
  {"name":"seqread","params":{"size":"4MiB","block":"16KiB"}},
  {"name":"sort","params":{"size":"1MiB","memory":"128KiB","block":"16KiB"}},
  {"name":"instances","params":{"count":3,"workload":{"name":"seqwrite","params":{"size":"1MiB","block":"64KiB"}}}}]}"#;

#[test]
fn records_are_consistent_with_the_work_done() {
    let dir = scratch("consistent");
    let plan = write_plan(&dir, SMALL);
    let (out, recs) = run(&plan, &dir, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(recs.len(), 5);
    assert!(entries(&dir).is_empty(), "the run directory is removed: {:?}", entries(&dir));
    let run_id = recs[0]["run_id"].as_str().unwrap();
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r["schema"], "bootmark.result/1");
        assert_eq!(r["run_id"], run_id);
        assert_eq!(r["seq"], i as u64);
        assert_eq!(r["status"], "ok", "{r}");
        // Bytes as the plan asks for them (not as the record says), over the wall time.
        let planned: Option<u64> = match r["workload"]["name"].as_str().unwrap() {
            "manyfiles" => Some(10 * 100 * 1024),
            "seqwrite" | "seqread" => Some(4 << 20),
            _ => None,
        };
        if let Some(bytes) = planned {
            let expect = bytes as f64 / 1048576.0 / f(&r["times"]["wall_s"]);
            assert!((f(&r["throughput_mib_s"]) - expect).abs() < 1e-6 * expect, "{r}");
        }
        assert!(r["kernel"]["release"].is_string());
        assert!(r["storage"]["fs"].is_string());
        assert!(r["vm"]["dirty_ratio"].is_i64());
        assert!(f(&r["responsiveness"]["max_ms"]) >= f(&r["responsiveness"]["p50_ms"]));
        let t = r["timeline"]["t_s"].as_array().unwrap();
        assert!(!t.is_empty());
        for (k, col) in r["timeline"]["series"].as_object().unwrap() {
            assert_eq!(col.as_array().unwrap().len(), t.len(), "{k}");
        }
    }
    // manyfiles: 10 files × 100 KiB in 16 KiB blocks = 7 writes per file (6 full + one 4 KiB).
    assert_eq!(recs[0]["bytes_written"], 10 * 100 * 1024);
    assert_eq!(recs[0]["latency"]["write"]["count"], 10 * 7);
    let t = &recs[0]["times"];
    assert!(f(&t["writes_returned_s"]) <= f(&t["closed_s"]) && f(&t["closed_s"]) <= f(&t["durable_s"]) + 1e-9);
    // seqwrite: 256 writes of 16 KiB.
    assert_eq!(recs[1]["bytes_written"], 4 << 20);
    assert_eq!(recs[1]["latency"]["write"]["count"], 256);
    assert_eq!(f(&recs[1]["times"]["wall_s"]), f(&recs[1]["times"]["durable_s"]));
    // seqread: 256 full reads and one at EOF; the file was seqwrite's, read cold.
    assert_eq!(recs[2]["bytes_read"], 4 << 20);
    assert_eq!(recs[2]["latency"]["read"]["count"], 257);
    assert_eq!(recs[2]["details"]["prepared"], false);
    assert_eq!(recs[2]["details"]["cache"]["cold"], true, "{}", recs[2]["details"]);
    // sort: 1 MiB in 128 KiB runs = 8 runs, verified.
    assert_eq!(recs[3]["details"]["runs"], 8);
    assert_eq!(recs[3]["details"]["verified"], true);
    assert!(recs[3]["bytes_written"].as_u64().unwrap() >= 3 << 20, "input + runs + output");
    // instances: 3 × 1 MiB, per-instance figures, merged histogram of 3 × 16 writes.
    assert_eq!(recs[4]["bytes_written"], 3 << 20);
    assert_eq!(recs[4]["latency"]["write"]["count"], 48);
    let inst = recs[4]["details"]["instances"].as_array().unwrap();
    assert_eq!(inst.len(), 3);
    assert!(inst.iter().all(|i| i["bytes_written"] == 1 << 20 && i["status"] == "ok"));
    let slowest = inst.iter().map(|i| f(&i["wall_s"])).fold(0.0, f64::max);
    assert!(f(&recs[4]["times"]["wall_s"]) >= slowest * 0.999);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn keep_leaves_the_bytes_on_disk() {
    let dir = scratch("keep");
    let plan = write_plan(
        &dir,
        r#"{"name":"k","probe":{"enabled":false},"workloads":[
        {"name":"manyfiles","params":{"files":5,"file_size":"40000","block":"4096"}},
        {"name":"seqwrite","params":{"size":"300000","block":"65536","file":"big.dat"}}]}"#,
    );
    let (out, recs) = run(&plan, &dir, &["--keep"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(recs[0]["responsiveness"].is_null(), "the probe was off");
    let run_dir = dir.join(format!("bootmark-{}", recs[0]["run_id"].as_str().unwrap()));
    for i in 0..5 {
        let data = std::fs::read(run_dir.join(format!("w000-manyfiles/f{i:06}"))).unwrap();
        assert_eq!(data.len(), 40000);
        assert!(data.iter().all(|b| *b == 0x5a));
    }
    let big = std::fs::read(run_dir.join("big.dat")).unwrap();
    assert_eq!(big.len(), 300000);
    assert!(big.iter().all(|b| *b == 0));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_probe_sees_an_injected_stall_and_its_recovery() {
    let dir = scratch("stall");
    let plan = write_plan(
        &dir,
        r#"{"name":"stall","probe":{"interval_ms":20,"baseline_s":0.5,"recovery_deadline_s":5},
        "workloads":[{"name":"idle","params":{"seconds":3}}]}"#,
    );
    let child = spawn_run(&plan, &dir);
    // Freeze the probe for 1.5 s in the middle of the idle workload: to the
    // probe this is exactly what a machine that stops responding looks like.
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let probe = find_child_named(child.id(), "bootmark-probe").expect("probe process");
    unsafe { libc::kill(probe, libc::SIGSTOP) };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    unsafe { libc::kill(probe, libc::SIGCONT) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let resp = &r["responsiveness"];
    assert!(f(&resp["max_ms"]) >= 1400.0, "{resp}");
    assert_eq!(resp["stalls_over_1s"], 1, "{resp}");
    assert!(f(&resp["baseline"]["max_ms"]) < 100.0, "{resp}");
    // SIGSTOP lands between ticks (a late timer) or, under load, inside
    // one (a slow ls or read): the stall must show in exactly one part.
    let parts = ["timer_late", "ls", "read"].map(|p| f(&resp[p]["max_ms"]));
    assert_eq!(parts.iter().filter(|&&ms| ms >= 1400.0).count(), 1, "the stall shows in one part of the tick: {resp}");
    assert!(f(&resp["recovery_s"]) < 1.0, "the workload ended after the stall: {resp}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The pid of a direct child of `parent` whose comm is `name`.
fn find_child_named(parent: u32, name: &str) -> Option<i32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let ppid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1)).and_then(|p| p.parse().ok());
        if comm.trim() == name && ppid == Some(parent) {
            return Some(pid);
        }
    }
    None
}

#[test]
fn a_hung_workload_is_cut_by_the_watchdog_with_partial_figures() {
    let dir = scratch("watchdog");
    let plan = write_plan(
        &dir,
        r#"{"name":"w","workload_deadline_s":0.5,"probe":{"enabled":false},
        "workloads":[{"name":"idle","params":{"seconds":60}},{"name":"seqwrite","params":{"size":"64KiB"}}]}"#,
    );
    let started = std::time::Instant::now();
    let (out, recs) = run(&plan, &dir, &[]);
    assert!(started.elapsed().as_secs() < 20);
    assert!(!out.status.success(), "a timeout makes the exit code non-zero");
    assert_eq!(recs.len(), 2, "the plan goes on after a timeout");
    assert_eq!(recs[0]["status"], "timeout");
    assert!(recs[0]["error"].as_str().unwrap().contains("deadline"));
    assert!((0.5..5.0).contains(&f(&recs[0]["times"]["wall_s"])));
    assert_eq!(recs[1]["status"], "ok");
    assert!(entries(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_stops_and_removes_everything() {
    let dir = scratch("ctrlc");
    let plan = write_plan(&dir, r#"{"name":"c","workloads":[{"name":"idle","params":{"seconds":60}}]}"#);
    let child = spawn_run(&plan, &dir);
    std::thread::sleep(std::time::Duration::from_millis(3000));
    assert!(!entries(&dir).is_empty(), "the run directory exists while it runs");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    assert!(entries(&dir).is_empty(), "left behind: {:?}", entries(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Run with bad input; expect failure, one clear error line, nothing in DIR.
fn refused(args: &[&str], dir: &Path, expect: &str) {
    let out = bootmark().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(expect), "{args:?}: expected '{expect}' in: {err}");
    assert!(out.stdout.is_empty(), "no records on bad input");
    if dir.exists() {
        assert!(entries(dir).is_empty(), "{args:?} left {:?}", entries(dir));
    }
}

#[test]
fn bad_input_gets_one_clear_error_and_writes_nothing() {
    let dir = scratch("bad");
    let d = dir.to_str().unwrap();
    refused(&["run", "--plan", "nonsense", "--dir", d], &dir, "unknown plan 'nonsense'");
    refused(&["run", "--plan", "quick", "--dir", "/no/such/dir"], &dir, "/no/such/dir");
    // A real filesystem (the test's own) that cannot hold the plan.
    let too_big = write_plan(
        &sibling(&dir, "big"),
        r#"{"name":"big","workloads":[{"name":"seqwrite","params":{"size":"512TiB","block":"16KiB"}}]}"#,
    );
    refused(&["run", "--plan", too_big.to_str().unwrap(), "--dir", d], &dir, "not enough free space");
    let not_json = write_plan(&sibling(&dir, "a"), "{ this is not json");
    refused(&["run", "--plan", not_json.to_str().unwrap(), "--dir", d], &dir, "not a valid plan");
    let unknown_param =
        write_plan(&sibling(&dir, "b"), r#"{"name":"x","workloads":[{"name":"seqwrite","params":{"bs":"16k"}}]}"#);
    refused(&["run", "--plan", unknown_param.to_str().unwrap(), "--dir", d], &dir, "unknown field `bs`");
    let unknown_workload = write_plan(&sibling(&dir, "c"), r#"{"name":"x","workloads":[{"name":"iozone"}]}"#);
    refused(&["run", "--plan", unknown_workload.to_str().unwrap(), "--dir", d], &dir, "unknown workload 'iozone'");
    let huge = write_plan(
        &sibling(&dir, "d"),
        r#"{"name":"huge","workloads":[{"name":"seqwrite","params":{"size":"900TiB"}}]}"#,
    );
    refused(&["run", "--plan", huge.to_str().unwrap(), "--dir", d], &dir, "not enough free space");
    refused(&["run", "--plan", "quick"], &dir, "--dir");
    refused(&["run", "--plan", "quick", "--dir", d, "--frobnicate"], &dir, "--frobnicate");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_the_user_cannot_write_is_refused() {
    let dir = scratch("ro");
    // Root may write anywhere, so run as nobody (setpriv, util-linux) when we are root.
    let mut cmd = if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_bootmark")]);
        c
    } else {
        bootmark()
    };
    let mut perms = std::fs::metadata(&dir).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
    std::fs::set_permissions(&dir, perms).unwrap();
    let out = cmd.args(["run", "--plan", "quick", "--dir"]).arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("writable"), "{err}");
    assert!(entries(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plans_lists_builtins_and_prints_json() {
    let out = bootmark().arg("plans").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["seed", "quick", "dd", "sort"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{text}");
    }
    let out = bootmark().args(["plans", "seed"]).output().unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["name"], "seed");
}

/// `--out /dev/null` and `--out -` are ordinary destinations, not errors
/// after the plan ran (a character device or a pipe cannot be fsync'ed).
#[test]
fn out_to_dev_null_or_stdout_works() {
    let dir = scratch("out-devnull");
    let plan = write_plan(
        &dir,
        r#"{"name":"idle","probe":{"enabled":false},"workloads":[{"name":"idle","params":{"seconds":0.1}}]}"#,
    );
    let (out, records) = run(&plan, &dir, &["--out", "/dev/null"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(records.is_empty(), "nothing on stdout with --out /dev/null");
    let (out, records) = run(&plan, &dir, &["--out", "-"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["workload"]["name"], "idle");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The dotted field paths docs/record-format.md's result table documents
/// (`kernel.release`, `.version` → `kernel.version`).
fn documented_fields() -> std::collections::BTreeSet<String> {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/record-format.md")).unwrap();
    let table = docs.split("## Wall time per workload").next().unwrap();
    let mut out = std::collections::BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap();
        let mut parent = String::new();
        for name in first.split('`').skip(1).step_by(2) {
            let full = match name.strip_prefix('.') {
                Some(rel) => format!("{parent}.{rel}"),
                None => name.to_string(),
            };
            parent = full.rsplit_once('.').map(|(p, _)| p.to_string()).unwrap_or_default();
            out.insert(full);
        }
    }
    out
}

/// Every field of a real record is documented (itself or an enclosing
/// object), and every documented field is in the record.
#[test]
fn the_record_docs_and_real_records_agree() {
    let documented = documented_fields();
    assert!(documented.len() > 40, "{documented:?}");
    let dir = scratch("docs");
    let plan = write_plan(&dir, SMALL);
    let (out, recs) = run(&plan, &dir, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    fn walk(v: &Value, path: &str, documented: &std::collections::BTreeSet<String>, missing: &mut Vec<String>) {
        if documented.contains(path) {
            return;
        }
        match v.as_object() {
            Some(o) if !path.is_empty() || !o.is_empty() => {
                for (k, child) in o {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    walk(child, &p, documented, missing);
                }
            }
            _ => missing.push(path.to_string()),
        }
    }
    for r in &recs {
        let mut undocumented = Vec::new();
        walk(r, "", &documented, &mut undocumented);
        assert!(undocumented.is_empty(), "fields docs/record-format.md does not describe: {undocumented:?}");
        for d in &documented {
            let pointer = format!("/{}", d.replace('.', "/"));
            // `error` is present only when a workload failed, `kernel_events`
            // only where tracepoints were read (the QEMU boots check it).
            // `timeline.stacks` only where /proc/PID/stack could be read (root, 2.6.29+).
            // `footprint` only in the boot image's records (the QEMU boots check it).
            // `timeline.probe_late` only where a probe tick was late (the bisect-ladder boots check it).
            let sometimes = d == "error"
                || d == "kernel_events"
                || d == "timeline.stacks"
                || d == "timeline.probe_late"
                || d.starts_with("footprint.");
            assert!(r.pointer(&pointer).is_some() || sometimes, "documented but not in a record: {d}");
        }
    }
}

/// A sweep on this machine: each variant's settings are applied before its
/// workloads, read back into the records (which also show them under `vm`),
/// what cannot be applied is named, and what was there before is restored.
/// Changes this machine's dirty_ratio for a second: root only.
#[test]
fn a_sweep_applies_each_variant_records_it_and_restores_the_settings() {
    if !is_root() {
        eprintln!("skipped: a sweep changes /proc/sys/vm and needs root (CI runs as root)");
        return;
    }
    let before = std::fs::read_to_string("/proc/sys/vm/dirty_ratio").unwrap();
    let dir = scratch("sweep");
    let plan = write_plan(
        &dir,
        r#"{"name":"sweep","probe":{"interval_ms":20,"baseline_s":0.1,"recovery_deadline_s":1},
        "variants":[{"name":"r17","vm":{"dirty_ratio":17}},
                    {"name":"r23","vm":{"dirty_ratio":23},"queue":{"scheduler":"no-such-scheduler"},
                     "mount_options":"data=writeback"}],
        "repeat":2, "workloads":[{"name":"idle","params":{"seconds":0.2}}]}"#,
    );
    let (out, recs) = run(&plan, &dir, &["--quiet"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<&str> = recs.iter().map(|r| r["variant"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["r17", "r23", "r17", "r23"], "repetitions outside, variants inside");
    for r in &recs {
        let v = &r["variant"];
        let want = if v["name"] == "r17" { "17" } else { "23" };
        assert_eq!(v["asked"]["vm.dirty_ratio"], want);
        assert_eq!(v["read_back"]["vm.dirty_ratio"], want, "{v}");
        assert_eq!(r["vm"]["dirty_ratio"].to_string(), want, "the record's vm evidence is read after applying");
    }
    let why = recs[1]["variant"]["not_applied"]["queue.scheduler"].as_str().unwrap();
    assert!(why.contains("not available") || why.contains("no block device") || why.contains("has no"), "{why}");
    assert!(recs[0]["variant"]["not_applied"].get("queue.scheduler").is_none());
    let why = recs[1]["variant"]["not_applied"]["mount.options"].as_str().unwrap();
    assert!(why.contains("never remounts your filesystem"), "{why}");
    assert_eq!(std::fs::read_to_string("/proc/sys/vm/dirty_ratio").unwrap(), before, "restored");

    // --variants picks by name; a name the plan lacks is refused before anything runs.
    let (out, recs) = run(&plan, &dir, &["--quiet", "--variants", "r23", "--repeat", "1"]);
    assert!(out.status.success());
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["variant"]["name"], "r23");
    let (out, recs) = run(&plan, &dir, &["--variants", "r99"]);
    assert!(!out.status.success() && recs.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no variant 'r99'; it has: r17, r23"));
    assert_eq!(std::fs::read_to_string("/proc/sys/vm/dirty_ratio").unwrap(), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn is_root() -> bool {
    // SAFETY: geteuid has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

/// `bootmark capture` prints this system's settings as a variant a plan
/// can carry (it validates, and says where it came from), or says why not.
#[test]
fn capture_prints_the_settings_as_installed_as_a_variant() {
    let dir = scratch("capture");
    let out = bootmark().args(["capture", "--dir"]).arg(&dir).output().unwrap();
    if out.status.success() {
        let v: bootmark::variant::Variant = serde_json::from_slice(&out.stdout).expect("a variant");
        v.validate().unwrap();
        assert_eq!(v.name, "as-installed");
        assert!(v.vm.contains_key("dirty_ratio") || v.vm.contains_key("dirty_bytes"), "{v:?}");
        assert!(v.note.contains("as installed on") && v.note.contains("kernel command line"), "{}", v.note);
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not on a block device"), "{err}");
    }
    let out = bootmark().args(["capture", "--dir", "/proc"]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not on a block device"));
    std::fs::remove_dir_all(&dir).unwrap();
}
