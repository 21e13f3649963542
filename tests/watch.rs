//! `bootmark watch` on every kind of source: a pseudo-terminal (a serial
//! line), standard input, a growing file (truncated mid-run), and a TCP
//! console server on loopback; on consoles that go silent or panic; and
//! `watch::follow` reopening a console, as `bootmark lab` follows a step.
//! The console is a boot's: kernel noise, /init's lines, heartbeats and
//! framed records (real framing, real records).

use bootmark::framing::encode;
use bootmark::record::Record;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bootmark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bootmark"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("watch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const RUN: &str = "20261130-170000-abcd";

/// The console of one boot in two parts: up to the first record, and the
/// rest up to the run record. `run_status` is the run record's status.
fn console(run_status: &str) -> (String, String) {
    boot_console(RUN, run_status, "{}")
}

/// The same for run `run`, whose run record carries `facts` (JSON).
fn boot_console(run: &str, run_status: &str, facts: &str) -> (String, String) {
    let mut first = String::from(
        "SeaBIOS (version 1.16)\r\n[    0.000000] Linux version 2.6.9-42.ELsmp (gcc 3.4.6) #1 SMP\r\n\
         [    2.400000] Freeing unused kernel memory: 176k freed\r\n\
         bootmark 0.1.0: run RUN starting as /init\r\n\
         bootmark: 12 modules loaded in 400 ms\r\n\
           ... [1/2] seqwrite: 16.00 MiB moved, 10 s elapsed, 50% done, ETA 10 s\r\n",
    )
    .replace("RUN", run);
    let record = |seq: u32| {
        let mut r = Record::blank(run, seq);
        r.workload.name = "seqwrite".into();
        r.kernel.release = Some("2.6.9-42.ELsmp".into());
        r.times.wall_s = 20.0 + seq as f64;
        r.throughput_mib_s = 1.6;
        serde_json::to_string(&r).unwrap()
    };
    for l in encode(run, 0, record(0).as_bytes()) {
        first += &format!("{l}\r\n");
    }
    let mut rest = String::from("[   30.1] sd 0:0:0:0: [sda] Write cache: enabled\r\n");
    for l in encode(run, 1, record(1).as_bytes()) {
        rest += &format!("{l}\r\n");
    }
    let run_record = format!(
        r#"{{"schema":"bootmark.run/1","run_id":"{run}","seq":2,"status":"{run_status}","error":null,"started_unix_s":0,"finished_unix_s":1,"bootmark":{{"version":"t"}},"kernel":{{}},"host":{{"cpus":1}},"records":2,"failed_records":0,"facts":{facts},"kernel_log":{{"lines":0,"counts":{{}},"tail":[]}}}}"#
    );
    for l in encode(run, 2, run_record.as_bytes()) {
        rest += &format!("{l}\r\n");
    }
    rest += "bootmark: run done (2 records, 0 not ok); Poweroff\r\n[   31.0] reboot: Power down\r\n";
    (first, rest)
}

/// Read the watcher's output until a line contains `want` (or it ends).
fn wait_for(out: &mut impl BufRead, want: &str, seen: &mut String) -> bool {
    let mut line = String::new();
    while out.read_line(&mut line).unwrap_or(0) > 0 {
        seen.push_str(&line);
        if line.contains(want) {
            return true;
        }
        line.clear();
    }
    false
}

fn spawn(args: &[&str], stdin: Stdio) -> Child {
    bootmark().arg("watch").args(args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn finish(child: Child, seen: &mut String) -> (i32, String) {
    let out = child.wait_with_output().unwrap();
    seen.push_str(&String::from_utf8_lossy(&out.stdout));
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The records written to --out equal what `bootmark collect` makes of the whole log.
fn same_as_collect(out: &Path, log: &Path) {
    let collected = bootmark().arg("collect").arg(log).output().unwrap();
    assert!(collected.status.success(), "{}", String::from_utf8_lossy(&collected.stderr));
    assert_eq!(std::fs::read_to_string(out).unwrap(), String::from_utf8_lossy(&collected.stdout));
}

/// A serial line: the first record shows before the writer has sent the
/// rest; the log is byte for byte what came; exit 0 at the run record.
#[test]
fn a_pseudo_terminal_is_watched_live() {
    let dir = scratch("pty");
    let pty = nix::pty::openpty(None, None).unwrap();
    let name = nix::unistd::ttyname(&pty.slave).unwrap();
    let (log, out) = (dir.join("console.log"), dir.join("records.jsonl"));
    let mut child =
        spawn(&[name.to_str().unwrap(), "--log", log.to_str().unwrap(), "--out", out.to_str().unwrap()], Stdio::null());
    let mut master = std::fs::File::from(pty.master);
    let (first, rest) = console("ok");
    // Only once the watcher has set the line to raw mode (it says so by
    // starting): before that the line discipline would turn \r into \n.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    assert!(wait_for(&mut stdout, "watching", &mut seen), "{seen}");
    // Paced like a 115200-baud line: 11.5 bytes per millisecond.
    for chunk in first.as_bytes().chunks(1152) {
        master.write_all(chunk).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(wait_for(&mut stdout, "record 0 verified (seqwrite, ok)", &mut seen), "{seen}");
    assert!(seen.contains("== boot 1: Linux 2.6.9-42.ELsmp") && seen.contains("starting as /init"), "{seen}");
    assert!(seen.contains("... [1/2] seqwrite: 16.00 MiB moved"), "the heartbeat: {seen}");
    master.write_all(rest.as_bytes()).unwrap();
    child.stdout = Some(stdout.into_inner());
    let (code, err) = finish(child, &mut seen);
    assert_eq!(code, 0, "{err}\n{seen}");
    assert!(seen.contains("== run 20261130-170000-abcd ok: 2 records, 0 not ok"), "{seen}");
    assert!(seen.contains("| seqwrite |"), "the table at the end: {seen}");
    let sent = format!("{first}{rest}");
    assert!(sent.as_bytes().starts_with(&std::fs::read(&log).unwrap()), "the log is what came, in order");
    same_as_collect(&out, &log);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Standard input (`ipmitool … sol activate | bootmark watch -`); a run
/// that reports an error exits 1.
#[test]
fn standard_input_and_a_failed_run() {
    let dir = scratch("stdin");
    let out = dir.join("records.jsonl");
    let mut child = spawn(&["-", "--out", out.to_str().unwrap()], Stdio::piped());
    let (first, rest) = console("error");
    child.stdin.take().unwrap().write_all(format!("{first}{rest}").as_bytes()).unwrap();
    let mut seen = String::new();
    let (code, err) = finish(child, &mut seen);
    assert_eq!(code, 1, "{err}\n{seen}");
    assert!(err.contains("reported failures"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Follow a log file that `between` changes after the first record: the
/// watcher must reach the run record written to the path afterwards.
fn follow_across(name: &str, between: fn(&Path)) {
    let dir = scratch(name);
    let (file, out) = (dir.join("console.log"), dir.join("records.jsonl"));
    let (first, rest) = console("ok");
    std::fs::write(&file, &first).unwrap();
    let mut child = spawn(&[file.to_str().unwrap(), "--out", out.to_str().unwrap()], Stdio::null());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    assert!(wait_for(&mut stdout, "record 0 verified", &mut seen), "{seen}");
    between(&file);
    std::thread::sleep(Duration::from_millis(700));
    std::fs::write(&file, &rest).unwrap();
    child.stdout = Some(stdout.into_inner());
    let (code, err) = finish(child, &mut seen);
    assert_eq!(code, 0, "{name}: {err}\n{seen}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3, "{name}: {seen}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A log file another tool appends to, truncated (copytruncate) mid-run,
/// or rotated (renamed away, a new file at the path): followed either way.
#[test]
fn a_growing_file_is_followed_across_truncation_and_rotation() {
    follow_across("truncate", |f| drop(std::fs::File::create(f).unwrap()));
    follow_across("rotate", |f| std::fs::rename(f, f.with_extension("log.1")).unwrap());
}

/// What made the demo fail: the writer of the followed file truncates it
/// and writes the whole boot again (as `xtask qemu` once did at power-off),
/// while the watcher is behind or done. The raw log holds the boot once,
/// byte for byte; the records come once; exit 0.
#[test]
fn a_boot_written_again_in_place_is_logged_once() {
    let dir = scratch("again");
    let (file, log, out) = (dir.join("console.log"), dir.join("raw.log"), dir.join("records.jsonl"));
    let (first, rest) = console("ok");
    let whole = format!("{first}{rest}");
    std::fs::write(&file, &first).unwrap();
    let args = [file.to_str().unwrap(), "--log", log.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let mut child = spawn(&args, Stdio::null());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    assert!(wait_for(&mut stdout, "record 0 verified", &mut seen), "{seen}");
    // Truncated, a pause, then the whole boot (the part read, and the rest) at once.
    std::fs::File::create(&file).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&file, &whole).unwrap();
    child.stdout = Some(stdout.into_inner());
    let (code, err) = finish(child, &mut seen);
    assert_eq!(code, 0, "{err}\n{seen}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged == whole, "the raw log is not the boot once: {} bytes, the boot {}", logged.len(), whole.len());
    assert_eq!(seen.matches("== boot ").count(), 1, "{seen}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);
    same_as_collect(&out, &log);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// copytruncate in the middle of a framed line: the rest of the line comes
/// in the truncated file, and the record is whole (a line begun before a
/// new stream is kept, not dropped).
#[test]
fn a_rotation_in_the_middle_of_a_line_loses_no_record() {
    let dir = scratch("midline");
    let (file, out) = (dir.join("console.log"), dir.join("records.jsonl"));
    let (first, rest) = console("ok");
    let whole = format!("{first}{rest}");
    let cut = whole.find("@BM1 D 20261130-170000-abcd 1 5/").unwrap() + 40;
    std::fs::write(&file, &whole[..cut]).unwrap();
    let mut child = spawn(&[file.to_str().unwrap(), "--out", out.to_str().unwrap()], Stdio::null());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    assert!(wait_for(&mut stdout, "record 0 verified", &mut seen), "{seen}");
    std::thread::sleep(Duration::from_millis(500));
    std::fs::copy(&file, file.with_extension("log.1")).unwrap();
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(0).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    f.write_all(&whole.as_bytes()[cut..]).unwrap();
    child.stdout = Some(stdout.into_inner());
    let (code, err) = finish(child, &mut seen);
    assert_eq!(code, 0, "{err}\n{seen}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3, "{seen}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A console server on loopback (ser2net, QEMU's -serial tcp:).
#[test]
fn a_tcp_console_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (first, rest) = console("ok");
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.write_all(first.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        conn.write_all(rest.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    });
    let child = spawn(&[&format!("tcp:127.0.0.1:{port}")], Stdio::null());
    let mut seen = String::new();
    let (code, err) = finish(child, &mut seen);
    server.join().unwrap();
    assert_eq!(code, 0, "{err}\n{seen}");
    assert!(seen.contains("== run 20261130-170000-abcd ok"), "{seen}");
}

/// A console that stops mid-workload: the silence is reported, then it gives
/// up with exit 2 and a guess; a panic is named as the likely cause.
#[test]
fn silence_and_panics_end_in_exit_2_with_a_guess() {
    let dir = scratch("silent");
    let file = dir.join("stalled.log");
    let (first, _) = console("ok");
    std::fs::write(&file, &first).unwrap();
    let started = Instant::now();
    let child = spawn(&[file.to_str().unwrap(), "--silence", "1", "--give-up", "3"], Stdio::null());
    let mut seen = String::new();
    let (code, err) = finish(child, &mut seen);
    assert_eq!(code, 2, "{err}\n{seen}");
    assert!(seen.contains("!! no output for 1 s: the machine may be stalled"), "{seen}");
    assert!(err.contains("no output for 3 s") && err.contains("run record never came"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));

    let mut child = spawn(&["-"], Stdio::piped());
    let panic =
        "[    0.0] Linux version 6.1.0\r\n[    3.1] Kernel panic - not syncing: VFS: Unable to mount root fs\r\n";
    child.stdin.take().unwrap().write_all(panic.as_bytes()).unwrap();
    let mut seen = String::new();
    let (code, err) = finish(child, &mut seen);
    assert_eq!(code, 2, "{err}");
    assert!(seen.contains("!! [    3.1] Kernel panic") && err.contains("the kernel panicked"), "{seen}\n{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A console across the reboots of a sequence: `--until sequence` waits for
/// the run record whose sequence has no step left; `--until run` stops at
/// the first boot's.
#[test]
fn until_sequence_follows_the_reboots_to_the_last_step() {
    let (a1, a2) =
        boot_console("20261130-170000-aaaa", "ok", r#"{"sequence":{"step":0,"of":2,"states":["done","pending"]}}"#);
    let (b1, b2) =
        boot_console("20261130-170500-bbbb", "ok", r#"{"sequence":{"step":1,"of":2,"states":["done","done"]}}"#);
    let both = format!("{a1}{a2}{b1}{b2}");
    for (until, runs) in [("sequence", 2), ("run", 1), ("2", 2)] {
        let mut child = spawn(&["-", "--until", until], Stdio::piped());
        child.stdin.take().unwrap().write_all(both.as_bytes()).unwrap();
        let mut seen = String::new();
        let (code, err) = finish(child, &mut seen);
        assert_eq!(code, 0, "--until {until}: {err}\n{seen}");
        assert_eq!(seen.matches("== run ").count(), runs, "--until {until}: {seen}");
        assert_eq!(seen.matches("== boot ").count(), runs, "--until {until}: a section per boot: {seen}");
    }
}

/// `bootmark lab`'s way of following a step: a console that ends (a BMC
/// dropping its serial-over-LAN session at a power cycle) or goes quiet
/// is opened again and followed to the run record, the records of both
/// sessions verified; without a way to reopen it, its end is the end.
#[test]
fn a_console_that_ends_or_goes_quiet_is_opened_again_when_the_caller_can() {
    use bootmark::watch::{Ending, Follow, Until, follow, source::Source};
    for quiet_first in [false, true] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let spec = format!("tcp:127.0.0.1:{}", listener.local_addr().unwrap().port());
        let (first, rest) = console("ok");
        let server = std::thread::spawn(move || {
            let (mut one, _) = listener.accept().unwrap();
            one.write_all(first.as_bytes()).unwrap();
            // Quiet: left open and silent until the watcher opens another; else closed now.
            let one = quiet_first.then_some(one);
            let (mut two, _) = listener.accept().unwrap();
            drop(one);
            two.write_all(rest.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
        });
        let dir = scratch(&format!("reopen-{quiet_first}"));
        let how = Follow {
            log: Some(dir.join("console.log")),
            out: Some(dir.join("records.jsonl")),
            until: Until::Runs(1),
            silence: Duration::from_secs(30),
            give_up: Duration::from_secs(30),
            deadline: Some(Duration::from_secs(30)),
            prefix: "[t] ".into(),
            reopen_after: Some(Duration::from_secs(1)),
            server_ended: None,
        };
        let mut opened = 1;
        let mut again = || {
            opened += 1;
            Source::open(&spec, 115200)
        };
        let (ending, docs) = follow(Source::open(&spec, 115200).unwrap(), &how, Some(&mut again)).unwrap();
        server.join().unwrap();
        assert_eq!((ending, docs.len(), opened), (Ending::AllOk, 3, 2), "quiet first: {quiet_first}");
        let records = std::fs::read_to_string(dir.join("records.jsonl")).unwrap();
        assert_eq!(records.lines().count(), 3, "{records}");
    }
    // Without a way to reopen, a console that ends before the run record is lost.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let spec = format!("tcp:127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (first, _) = console("ok");
    let server = std::thread::spawn(move || {
        let (mut one, _) = listener.accept().unwrap();
        one.write_all(first.as_bytes()).unwrap();
    });
    let how = Follow {
        log: None,
        out: None,
        until: Until::Runs(1),
        silence: Duration::from_secs(30),
        give_up: Duration::from_secs(30),
        deadline: None,
        prefix: String::new(),
        reopen_after: None,
        server_ended: None,
    };
    let (ending, _) = follow(Source::open(&spec, 115200).unwrap(), &how, None).unwrap();
    server.join().unwrap();
    assert!(matches!(&ending, Ending::Lost(why) if why.contains("the console ended")), "{ending:?}");
}
