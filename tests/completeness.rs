//! The workstation never loses a result and never says "ok" when one is
//! missing. Every case starts from a real serial log (tests/data/collect:
//! a QEMU boot of Debian's 6.1 kernel with Secure Boot on, 6 result records
//! and a run record) damaged the way a console line or a user can damage it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn real_log() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/collect/secure-boot-on.log");
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bootmark-complete-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `bootmark ARGS` with `stdin` piped in: (exit code, stdout, stderr).
fn bootmark(args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        let mut input = child.stdin.take().unwrap();
        input.write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The payloads the framing verified, as the boot emitted them.
fn emitted(log: &str) -> Vec<Vec<u8>> {
    use bootmark::framing::{Assembler, Fed, parse_line};
    let mut asm = Assembler::default();
    let mut out = Vec::new();
    for line in log.lines() {
        if let Some(Ok(l)) = parse_line(line)
            && let Fed::Record(_, _, bytes) = asm.feed(l)
        {
            out.push(bytes);
        }
    }
    out
}

#[test]
fn collect_writes_every_record_byte_for_byte_as_verified() {
    let dir = scratch("exact");
    let log = dir.join("serial.log");
    std::fs::write(&log, real_log()).unwrap();
    let (code, out, err) = bootmark(&["collect", log.to_str().unwrap()], None);
    assert_eq!(code, 0, "{err}");
    let want = emitted(&real_log());
    assert_eq!(want.len(), 7);
    let got: Vec<&[u8]> = out.lines().map(str::as_bytes).collect();
    assert_eq!(got, want.iter().map(Vec::as_slice).collect::<Vec<_>>());
    // And through `report --format json`'s re-serialised figures: the
    // first record's throughput comes back to the last digit.
    let first: serde_json::Value = serde_json::from_slice(&want[0]).unwrap();
    let text = serde_json::to_string(&first["throughput_mib_s"]).unwrap();
    assert!(String::from_utf8_lossy(&want[0]).contains(&format!("\"throughput_mib_s\":{text}")), "{text}");
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = scratch("clobber");
    let records = dir.join("records.jsonl");
    let (_, out, _) = bootmark(&["collect", "-"], Some(real_log().as_bytes()));
    std::fs::write(&records, &out).unwrap();
    let (code, _, err) = bootmark(&["collect", records.to_str().unwrap(), "--out", records.to_str().unwrap()], None);
    assert_eq!(code, 2, "the command could not do its job: {err}");
    assert!(err.contains("is the input"), "{err}");
    assert_eq!(std::fs::read_to_string(&records).unwrap(), out, "the input is unchanged");
    // A new output is written whole, with no temporary file left beside it.
    let copy = dir.join("copy.jsonl");
    let (code, _, err) = bootmark(&["collect", records.to_str().unwrap(), "--out", copy.to_str().unwrap()], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), out);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
}

#[test]
fn a_pipe_is_read_whole_its_first_bytes_included() {
    let log = real_log();
    let (code, piped, err) = bootmark(&["collect", "-"], Some(log.as_bytes()));
    assert_eq!(code, 0, "{err}");
    assert_eq!(piped.lines().count(), 7, "{err}");
    // Records piped on to a second collect are read as records.
    let (code, again, err) = bootmark(&["collect", "-"], Some(piped.as_bytes()));
    assert_eq!((code, again.as_str()), (0, piped.as_str()), "{err}");
}

#[test]
fn a_record_lost_on_the_line_is_named_by_collect_and_watch() {
    let log = real_log();
    // One data line of record 2 damaged: no other copy of it exists.
    let victim = log.lines().find(|l| l.contains("@BM1 D 20261201-211910-bb38 2 ")).unwrap();
    let damaged = log.replacen(victim, &victim.replacen("@BM1 D", "@BM1 D ", 1), 1);
    let (code, out, err) = bootmark(&["collect", "-"], Some(damaged.as_bytes()));
    assert_eq!(code, 1, "{err}");
    assert_eq!(out.lines().count(), 6);
    assert!(err.contains("seq 2") && err.contains("missing"), "{err}");
    let (code, out, _) = bootmark(&["watch", "-"], Some(damaged.as_bytes()));
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("record 2 missing"), "{out}");
}

#[test]
fn a_capture_cut_before_the_run_record_is_not_ok() {
    let log = real_log();
    let cut = &log[..log.find("@BM1 H 20261201-211910-bb38 6 ").unwrap()];
    let (code, out, err) = bootmark(&["collect", "-"], Some(cut.as_bytes()));
    assert_eq!(code, 1, "{err}");
    assert_eq!(out.lines().count(), 6, "the records there are are kept");
    assert!(err.contains("no run record for this boot (6 result records seen)"), "{err}");
}

#[test]
fn a_line_run_into_by_a_fragment_of_another_is_still_read() {
    let log = real_log();
    let mut lines: Vec<String> = log.lines().map(String::from).collect();
    let at = lines.iter().position(|l| l.contains("@BM1 D 20261201-211910-bb38 3 5/")).unwrap();
    // Half of a framed line ahead of a whole one on the same console line
    // (an overrun that ate a line end): the whole one must still count.
    let fragment = lines[at - 1][..lines[at - 1].len() / 2].to_string();
    lines[at] = format!("{fragment}{}", lines[at]);
    let (code, out, err) = bootmark(&["collect", "-"], Some(lines.join("\n").as_bytes()));
    assert_eq!((code, out.lines().count()), (0, 7), "{err}");
}

#[test]
fn inputs_without_results_are_not_a_quiet_success() {
    let dir = scratch("nothing");
    let text = dir.join("passwd");
    std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let (code, _, err) = bootmark(&["collect", text.to_str().unwrap()], None);
    assert_eq!(code, 1);
    assert!(err.contains("no bootmark output in it"), "{err}");
    let started = std::time::Instant::now();
    let (code, _, err) = bootmark(&["collect", "/dev/zero"], None);
    assert_eq!(code, 1);
    assert!(err.contains("character device") && err.contains("bootmark watch"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

/// A verified record whose figures cannot be true is a problem for every
/// command alike: not collected, not a row in the report, not exported.
#[test]
fn implausible_figures_are_refused_by_collect_report_and_export() {
    let dir = scratch("implausible");
    let (_, records, _) = bootmark(&["collect", "-"], Some(real_log().as_bytes()));
    let mut lines: Vec<serde_json::Value> = records.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seqwrite = lines.iter().position(|r| r["workload"]["name"] == "seqwrite").unwrap();
    lines[seqwrite]["times"]["wall_s"] = serde_json::json!(-1.5);
    let path = dir.join("records.jsonl");
    let text: String = lines.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap();
    let (code, out, err) = bootmark(&["collect", file], None);
    assert_eq!((code, out.lines().count()), (1, 6), "{err}");
    assert!(err.contains("implausible record: times.wall_s is -1.5"), "{err}");
    let (code, out, err) = bootmark(&["report", file, "--format", "json"], None);
    assert_eq!(code, 1, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let workloads: Vec<&str> =
        report["rows"].as_array().unwrap().iter().map(|r| r["workload"].as_str().unwrap()).collect();
    assert!(!workloads.contains(&"seqwrite"), "the implausible record made a row: {workloads:?}");
    let (code, out, err) = bootmark(&["export", file], None);
    assert_eq!(code, 1, "{err}");
    assert!(!out.contains("bootmark.seqwrite"), "the implausible record was exported");
}

#[test]
fn watch_refuses_to_log_into_the_file_it_follows() {
    let dir = scratch("watch-self");
    let log = dir.join("console.log");
    std::fs::write(&log, real_log()).unwrap();
    let (code, _, err) = bootmark(&["watch", log.to_str().unwrap(), "--log", log.to_str().unwrap()], None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--log") && err.contains("is the input"), "{err}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), real_log(), "the followed file is unchanged");
}

/// The next boot's log written over the one being followed, between two
/// polls and past the old offset: watch starts it from its beginning.
#[test]
fn watch_follows_a_file_rewritten_from_the_start() {
    let dir = scratch("watch-rewrite");
    let log = dir.join("console.log");
    // Longer than the new log up to its first record: resumed at the old
    // offset, the first records would be lost.
    let noise: String = (0..1500).map(|i| format!("[{i:5}.000000] an earlier boot's kernel line {i}\n")).collect();
    assert!(noise.len() > real_log().find("@BM1 H").unwrap());
    std::fs::write(&log, &noise).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .args(["watch", log.to_str().unwrap(), "--give-up", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::fs::write(&log, real_log()).unwrap(); // truncate, then write more than there was
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("✓ record").count(), 6, "{stdout}");
}

#[test]
fn watch_drops_an_endless_line_and_goes_on() {
    let mut input = vec![b'x'; 2 << 20]; // 2 MiB without a line end
    input.push(b'\n');
    input.extend_from_slice(real_log().as_bytes());
    let (code, out, err) = bootmark(&["watch", "-"], Some(&input));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("without a line end: dropped"), "{out}");
    assert_eq!(out.matches("✓ record").count(), 6, "{out}");
}

/// `watch - < /dev/zero`: bounded memory, and an end with the reason.
#[test]
fn watch_gives_up_on_a_source_that_is_not_a_console() {
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark")).args(["watch", "-"]).stdin(zero).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("without a single line end: this is not a console"), "{err}");
    let peak = children_peak_mib();
    assert!(peak < 64.0, "peak RSS {peak:.1} MiB");
}

/// Peak resident memory of the largest child this test process has waited
/// for, in MiB (getrusage RUSAGE_CHILDREN).
fn children_peak_mib() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

/// 10 MB of bare `@BM1 x` lines (1.4 million damaged framed lines) before
/// a real boot: the first thousand are listed, the rest counted, memory
/// stays small, and the boot's records still come out. They cost nothing
/// (the run record's count is met), so they are notes and the exit 0.
#[test]
fn a_flood_of_damaged_lines_is_counted_not_kept() {
    let mut input = "@BM1 x\n".repeat(10_000_000 / 7).into_bytes();
    input.extend_from_slice(real_log().as_bytes());
    let (code, out, err) = bootmark(&["collect", "-"], Some(&input));
    assert_eq!((code, out.lines().count()), (0, 7), "{}", &err[err.len().saturating_sub(500)..]);
    assert!(err.contains("bootmark: note: standard input:1: framed line is malformed"), "{}", &err[..300]);
    assert!(err.contains("more damaged framed lines, not listed (the first 1000 are)"), "{}", &err[err.len() - 300..]);
    assert!(err.lines().count() < 1100, "{} lines on stderr", err.lines().count());
    let peak = children_peak_mib();
    assert!(peak < 64.0, "peak RSS {peak:.1} MiB");
}

/// Big files of nothing: a sparse .jsonl (one 256 MiB "line"), a file that
/// starts like a journal then holds nothing, a log of zeros. Each ends with
/// its verdict in bounded memory: never read whole.
#[test]
fn big_empty_inputs_are_walked_not_loaded() {
    let dir = scratch("sparse");
    let sized = |name: &str, head: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, head).unwrap();
        std::fs::File::options().write(true).open(&p).unwrap().set_len(256 << 20).unwrap();
        p
    };
    let jsonl = sized("sparse.jsonl", b"");
    let (code, _, err) = bootmark(&["collect", jsonl.to_str().unwrap()], None);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("line over 16 MiB (268435456 bytes): not a record, skipped"), "{err}");
    let journal = sized("journal.bin", b"BOOTMARK-JOURNAL 1\n");
    let (code, _, err) = bootmark(&["collect", journal.to_str().unwrap()], None);
    assert_eq!(code, 0, "an empty journal is a fresh stick's: {err}");
    let zeros = sized("zeros.log", b"");
    let (code, _, err) = bootmark(&["collect", zeros.to_str().unwrap()], None);
    assert_eq!(code, 1);
    assert!(err.contains("no bootmark output in it"), "{err}");
    let peak = children_peak_mib();
    assert!(peak < 64.0, "peak RSS {peak:.1} MiB");
}

/// A record whose start lies outside its own boot's clock (the run record's
/// start and end) was not measured in that boot: a problem.
#[test]
fn a_record_outside_its_boots_clock_is_implausible() {
    let dir = scratch("clock");
    let (_, records, _) = bootmark(&["collect", "-"], Some(real_log().as_bytes()));
    let mut lines: Vec<serde_json::Value> = records.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (code, _, err) = bootmark(&["collect", "-"], Some(records.as_bytes()));
    assert_eq!(code, 0, "the boot as it was is consistent: {err}");
    let start = lines[2]["started_unix_s"].as_f64().unwrap();
    lines[2]["started_unix_s"] = serde_json::json!(start + 86_400.0);
    let path = dir.join("records.jsonl");
    std::fs::write(&path, lines.iter().map(|r| format!("{r}\n")).collect::<String>()).unwrap();
    let (code, _, err) = bootmark(&["collect", path.to_str().unwrap()], None);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("seq 2: implausible record: it started at") && err.contains("outside its boot's own clock"),
        "{err}"
    );
}
