//! `bootmark bisect` through `bootmark lab`'s own loop, on servers that are
//! programs (`[server.qemu]`): power on appends one boot's console — real
//! records of the six-boot demo (Debian 12's 6.1 and 13's 6.12 on dl140),
//! framed as /init frames them, each made the candidate's own (its entry,
//! a run id of its own) — to the server's console log. The ladder k0…k5
//! has 6.1's boots up to k2 and 6.12's from k3: the bisect must find k3
//! with two servers side by side, resume after Ctrl-C, refuse ends that
//! are alike or swapped and servers that differ, and refuse bad flags
//! before anything boots. The same servers show `bootmark lab run`
//! taking its servers side by side.

use bootmark::framing;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LADDER: [&str; 6] = ["k0", "k1", "k2", "k3", "k4", "k5"];
/// The first entry with 6.12's boots.
const FIRST_BAD: usize = 3;

fn bootmark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bootmark"))
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The six-boot demo's boots of one kernel: each boot's documents (result records, then its run record).
fn boots_of(kernel: &str) -> Vec<Vec<Value>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report/boots6-records.jsonl");
    let docs: Vec<Value> =
        std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut runs: Vec<String> = Vec::new();
    for d in &docs {
        let id = d["run_id"].as_str().unwrap().to_string();
        if d["kernel"]["release"].as_str().unwrap().starts_with(kernel) && !runs.contains(&id) {
            runs.push(id);
        }
    }
    runs.iter().map(|id| docs.iter().filter(|d| d["run_id"] == id.as_str()).cloned().collect()).collect()
}

/// One boot's console: its documents made `entry`'s (`bootmark.entry=`,
/// a run id of its own, the board named `board`), framed.
fn console(boot: &[Value], entry: &str, run_id: &str, board: &str) -> String {
    let mut out = format!("Linux version of {entry}\n");
    for d in boot {
        let mut d = d.clone();
        d["run_id"] = run_id.into();
        let cmdline =
            d["kernel"]["cmdline"].as_str().unwrap().replace("bootmark.entry=k0", &format!("bootmark.entry={entry}"));
        let cmdline = cmdline.replace("bootmark.entry=k1", &format!("bootmark.entry={entry}"));
        d["kernel"]["cmdline"] = cmdline.into();
        d["host"]["dmi_product"] = board.into();
        let bytes = serde_json::to_vec(&d).unwrap();
        for line in framing::encode(run_id, d["seq"].as_u64().unwrap() as u32, &bytes) {
            out += &line;
            out.push('\n');
        }
    }
    out
}

/// A lab of servers (name, board) whose power-on appends the next of its
/// entry's boots to the server's console log, and an image of k0…k5.
fn lab(name: &str, servers: &[(&str, &str)]) -> PathBuf {
    lab_holding(name, servers, 0.2)
}

/// `lab`, each power-on first marking its server on (`on-SERVER`), then
/// holding `hold_s` seconds and listing the markers there are (`seen-SERVER`).
fn lab_holding(name: &str, servers: &[(&str, &str)], hold_s: f64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bootmark-bisect-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("image")).unwrap();
    let plan = bootmark().args(["plans", "generations"]).output().unwrap();
    let plan: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let entries: Vec<Value> = LADDER
        .iter()
        .enumerate()
        .map(|(i, e)| {
            serde_json::json!({
                "label": e,
                "title": format!("Debian {} #{i}", if i < FIRST_BAD { "6.1" } else { "6.12" }),
                "cmdline": format!("console=ttyS0,115200 bootmark.plan=generations bootmark.target=LABEL=SCRATCH bootmark.entry={e}"),
            })
        })
        .collect();
    let manifest = serde_json::json!({"entries": entries, "plan_definition": plan});
    std::fs::write(dir.join("image/manifest.json"), manifest.to_string()).unwrap();
    let (old, new) = (boots_of("6.1."), boots_of("6.12."));
    let mut toml = "image = \"image\"\nstate = \"lab.state\"\n".to_string();
    for (j, (server, board)) in servers.iter().enumerate() {
        for (i, entry) in LADDER.iter().enumerate() {
            let pool = dir.join(format!("pool/{server}/{entry}"));
            std::fs::create_dir_all(&pool).unwrap();
            let boots = if i < FIRST_BAD { &old } else { &new };
            for (n, boot) in boots.iter().enumerate() {
                let run_id = format!("20261204-{i:02}{n:02}00-{server}");
                std::fs::write(pool.join(format!("{n}.log")), console(boot, entry, &run_id, board)).unwrap();
            }
        }
        std::fs::write(dir.join(format!("serial-{server}.log")), "").unwrap();
        // The next boot of the entry in turn (a counter per server and entry, each server
        // starting at another boot), appended as a console prints.
        let command = format!(
            "sh -c 'c=count-{server}-{{entry}}; n=$(cat $c 2>/dev/null || echo 0); echo $((n + 1)) > $c; \
             echo > on-{server}; sleep {hold_s}; ls >> seen-{server}; cat pool/{server}/{{entry}}/$(((n + {offset}) % 6)).log >> serial-{server}.log'",
            offset = 3 * j,
            hold_s = hold_s
        );
        toml += &format!(
            "[[server]]\nname = \"{server}\"\nconsole = \"file:serial-{server}.log\"\nboot_s = 20\nmax_step_s = 30\n\
             [server.qemu]\ncommand = \"{command}\"\n"
        );
    }
    std::fs::write(dir.join("lab.toml"), toml).unwrap();
    dir
}

fn bisect(dir: &Path, args: &[&str]) -> Output {
    bootmark().arg("bisect").arg("run").arg(dir.join("lab.toml")).args(args).output().unwrap()
}

fn state(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("lab.state/bisect/bisect.json")).unwrap()).unwrap()
}

const ENDS: [&str; 6] = ["--metric", "seqwrite.read_p50_ms", "--good", "k0", "--bad", "k5"];

#[test]
fn two_alike_servers_find_the_first_bad_entry_and_a_resumed_bisect_finds_the_same() {
    let dir = lab("found", &[("a", "dl140"), ("b", "dl140")]);
    let child = bootmark()
        .args(["bisect", "run"])
        .arg(dir.join("lab.toml"))
        .args(ENDS)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once a few boots are in.
    let since = std::time::Instant::now();
    while std::fs::read_to_string(dir.join("lab.state/bisect/bisect.json")).map_or(0, |t| t.matches("\"id\"").count())
        < 3
    {
        assert!(since.elapsed().as_secs() < 60, "no boots after 60 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: kill(2) sends SIGINT to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let stopped = child.wait_with_output().unwrap();
    let out = text(&stopped);
    assert_eq!(stopped.status.code(), Some(2), "{out}");
    assert!(out.contains("interrupted; the same command again resumes"), "{out}");
    let kept = state(&dir)["boots"].as_array().unwrap().len();
    assert!(kept >= 3, "{kept}");

    // Resumed with another --cap: applied from now on, and said.
    let resumed = bisect(&dir, &[&ENDS[..], &["--cap", "16"]].concat());
    let out = text(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{out}");
    assert!(out.contains(&format!("bisect: resuming in {}", dir.join("lab.state/bisect").display())), "{out}");
    assert!(out.contains("bisect: --cap 16 from now on (it was 12)"), "{out}");
    assert_eq!(state(&dir)["cap"], 16);
    assert!(out.contains("first bad: k3 (Debian 6.12 #3)\nlast good: k2 (Debian 6.1 #2)"), "{out}");
    assert!(out.contains("Mann–Whitney p = "), "{out}");
    assert!(out.contains("each step decided by Wald's sequential probability ratio test"), "{out}");
    let s = state(&dir);
    let boots = s["boots"].as_array().unwrap();
    let mut ids: Vec<&str> = boots.iter().map(|b| b["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), boots.len(), "no boot counted twice");
    for end in [0, 5] {
        let servers: Vec<u64> =
            boots.iter().filter(|b| b["candidate"] == end).map(|b| b["server"].as_u64().unwrap()).collect();
        assert!(servers.contains(&0) && servers.contains(&1), "end {end} on both servers: {servers:?}");
    }
    // Every boot's console and records are kept under its server's name.
    for b in boots {
        let (server, file) = (["a", "b"][b["server"].as_u64().unwrap() as usize], b["id"].as_str().unwrap());
        let records = dir.join(format!("lab.state/bisect/{server}/{}.jsonl", file.replace('#', "-")));
        assert!(std::fs::metadata(&records).unwrap().len() > 0, "{}", records.display());
    }

    let report = std::fs::read_to_string(dir.join("lab.state/bisect/report.html")).unwrap();
    assert!(report.contains("6.12.118+deb13-amd64") && report.contains("6.1.0-57-amd64"), "a row per kernel");
    assert!(out.contains("report of every boot's records: "), "{out}");
    // Beside the page, its JSON: what `bootmark confirm --from` reads a cause's test from.
    let json = dir.join("lab.state/bisect/report.json");
    // The first bad (6.12) against the last good (6.1): the request-size cause and its test, 6.12
    // capped at 6.1's 128 KiB, the probe's read toward 6.1's: the bisect's next step.
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let tests: Vec<&Value> = report["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["candidate"].as_str().is_some_and(|k| k.starts_with("6.12.")))
        .flat_map(|c| c["causes"].as_array().unwrap())
        .filter_map(|c| c.get("test"))
        .collect();
    let [test] = tests.as_slice() else { panic!("{tests:?}") };
    assert_eq!(
        (test["set"].as_str(), test["metric"].as_str()),
        (Some("queue.max_sectors_kb=128"), Some("seqwrite.read_p50_ms"))
    );
    assert!(test["toward"].as_f64().is_some_and(|t| t > 0.0), "{test}");
    assert!(out.contains("next, its candidate cause (queue.max_sectors_kb=128): bootmark confirm "), "{out}");

    let status = bootmark().args(["bisect", "status"]).arg(dir.join("lab.toml")).output().unwrap();
    let said = text(&status);
    assert_eq!(status.status.code(), Some(0), "{said}");
    assert!(said.contains("| k3 (Debian 6.12 #3) |") && said.contains("first bad: k3"), "{said}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ends_that_are_alike_or_swapped_and_servers_that_differ_are_refused_with_their_numbers() {
    let dir = lab("refused", &[("a", "dl140"), ("c", "dl380 g9")]);
    let one = ["--server", "a"];
    let alike =
        bisect(&dir, &[&["--metric", "seqwrite.read_p50_ms", "--good", "k0", "--bad", "k2"][..], &one].concat());
    let out = text(&alike);
    assert_eq!(alike.status.code(), Some(1), "{out}");
    assert!(out.contains("no bisect:") && out.contains("not distinct"), "{out}");
    assert!(out.contains("| k0 (Debian 6.1 #0) | 16 |"), "16 boots of each end before giving up: {out}");

    std::fs::remove_dir_all(dir.join("lab.state")).unwrap();
    let swapped =
        bisect(&dir, &[&["--metric", "seqwrite.read_p50_ms", "--good", "k5", "--bad", "k0"][..], &one].concat());
    let out = text(&swapped);
    assert_eq!(swapped.status.code(), Some(1), "{out}");
    assert!(out.contains("swapped"), "{out}");

    std::fs::remove_dir_all(dir.join("lab.state")).unwrap();
    let differ = bisect(&dir, &ENDS);
    let out = text(&differ);
    assert_eq!(differ.status.code(), Some(1), "{out}");
    assert!(out.contains("the servers are not alike") && out.contains("dl140") && out.contains("dl380 g9"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A server that boots another entry than the step's (a BMC that ignored
/// where the lab pointed it): the step fails, and its records — true of
/// the kernel that booted — are never counted for the candidate.
#[test]
fn a_boot_of_another_entry_is_not_counted_for_the_step() {
    let dir = lab("wrong-entry", &[("a", "dl140")]);
    let toml = std::fs::read_to_string(dir.join("lab.toml")).unwrap();
    // Whatever it is asked for, it boots k0.
    std::fs::write(dir.join("lab.toml"), toml.replace("cat pool/a/{entry}/", "cat pool/a/k0/")).unwrap();
    let out = bisect(&dir, &ENDS);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("booted entry k0") && said.contains("not k5"), "{said}");
    let bad_end = state(&dir)["boots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["candidate"] == 5)
        .map(|b| b["value"].clone())
        .collect::<Vec<_>>();
    assert!(!bad_end.is_empty() && bad_end.iter().all(Value::is_null), "k5's boots counted values: {bad_end:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bootmark lab run` on the same servers: each takes its own steps while
/// the other takes its (each saw the other's marker during a step), and
/// every step is done.
#[test]
fn a_labs_servers_run_side_by_side() {
    let dir = lab_holding("side", &[("a", "dl140"), ("b", "dl140")], 1.5);
    let toml = std::fs::read_to_string(dir.join("lab.toml")).unwrap();
    std::fs::write(dir.join("lab.toml"), toml.replace("[[server]]\n", "[[server]]\nentries = [\"k0\", \"k3\"]\n"))
        .unwrap();
    let ran = bootmark().args(["lab", "run"]).arg(dir.join("lab.toml")).output().unwrap();
    let out = text(&ran);
    assert!(ran.status.code().is_some_and(|c| c < 2), "{out}");
    for (me, other) in [("a", "b"), ("b", "a")] {
        let seen = std::fs::read_to_string(dir.join(format!("seen-{me}"))).unwrap();
        assert!(seen.contains(&format!("on-{other}")), "{me} never saw {other} on: one after the other\n{out}");
    }
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("lab.state/state.json")).unwrap()).unwrap();
    let steps = state["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    assert!(steps.iter().all(|s| s["outcome"]["status"] == "ok"), "{state}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad flags exit 2 naming the choices, and nothing boots.
#[test]
fn bad_flags_are_refused_before_anything_boots() {
    let dir = lab("flags", &[("a", "dl140")]);
    let cases: &[(&[&str], &str)] = &[
        (&["--metric", "seqwrite.read_p5_ms", "--good", "k0", "--bad", "k5"], "(did you mean 'read_p50_ms'?)"),
        (&["--metric", "seqwrit.real_s", "--good", "k0", "--bad", "k5"], "runs no seqwrit (did you mean 'seqwrite'?)"),
        (&["--metric", "seqwrite.real_s", "--good", "k9", "--bad", "k5"], "k9 is not an entry of the image"),
        (&["--metric", "seqwrite.real_s", "--good", "k1", "--bad", "k1"], "a bisect needs two ends"),
        (&["--metric", "seqwrite.real_s", "--good", "k1", "--bad", "k2"], "nothing between them to bisect"),
        (
            &["--metric", "seqwrite.real_s", "--good", "k0", "--bad", "k5", "--ladder", "k1,k3,k5"],
            "must run from the good end (k0)",
        ),
        (
            &["--metric", "seqwrite.real_s", "--good", "k0", "--bad", "k5", "--server", "z"],
            "--server z: not a server of the lab",
        ),
        (&["--metric", "seqwrite.real_s", "--good", "k0", "--bad", "k5", "--cap", "1"], "--cap 1"),
    ];
    for (args, said) in cases {
        let o = bisect(&dir, args);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}");
        assert!(out.contains(said), "{args:?}: {out}");
        assert!(!dir.join("count-a-k0").exists(), "{args:?} booted");
    }
    let status = bootmark().args(["bisect", "status"]).arg(dir.join("lab.toml")).output().unwrap();
    assert_eq!(status.status.code(), Some(2));
    assert!(text(&status).contains("no bisect has run in"), "{}", text(&status));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The three settings two captures differ in, in the order the bisect
/// lists them (sorted by name): (key, good, bad).
const DIFFERENCES: [(&str, &str, &str); 3] =
    [("queue.max_sectors_kb", "128", "1280"), ("queue.read_ahead_kb", "128", "512"), ("vm.swappiness", "60", "30")];

/// A lab of one-entry servers for a settings bisect: power on runs
/// `{entry}` with `{set}` and appends a boot whose records carry that
/// `bootmark.set=` on their command line — 6.12's boots (the long read
/// wait) when the set holds the large requests, 6.1's otherwise. Every
/// subset's console is made beforehand, in a pool named by its settings.
fn settings_lab(name: &str, servers: &[&str]) -> PathBuf {
    let dir = lab(name, &servers.iter().map(|s| (*s, "dl140")).collect::<Vec<_>>());
    let (old, new) = (boots_of("6.1."), boots_of("6.12."));
    for subset in 0..8u32 {
        let set: Vec<String> = DIFFERENCES
            .iter()
            .enumerate()
            .map(|(i, (k, g, b))| format!("{k}={}", if subset & (1 << i) != 0 { b } else { g }))
            .collect();
        // Named as the bisect names its candidates: the ends, or the differences from d1.
        let name = match subset {
            0 => "good-settings".to_string(),
            7 => "bad-settings".to_string(),
            _ => (0..3).filter(|i| subset & (1 << i) != 0).map(|i| format!("d{}", i + 1)).collect::<Vec<_>>().join("+"),
        };
        let set = format!("{name}:{}", set.join(","));
        let boots = if subset & 1 != 0 { &new } else { &old };
        for server in servers {
            let pool = dir.join(format!("sets/{server}/{set}"));
            std::fs::create_dir_all(&pool).unwrap();
            for (n, boot) in boots.iter().enumerate() {
                let run_id = format!("20261204-{subset:02}{n:02}00-{server}");
                let boot: Vec<Value> = boot
                    .iter()
                    .map(|d| {
                        let mut d = d.clone();
                        let line = format!("{} bootmark.set={set}", d["kernel"]["cmdline"].as_str().unwrap());
                        d["kernel"]["cmdline"] = line.into();
                        d
                    })
                    .collect();
                std::fs::write(pool.join(format!("{n}.log")), console(&boot, "k3", &run_id, "dl140")).unwrap();
            }
        }
    }
    let toml = std::fs::read_to_string(dir.join("lab.toml")).unwrap();
    let mut out = String::new();
    for line in toml.lines() {
        if let Some(server) = servers.iter().find(|s| line.contains(&format!("count-{s}-"))) {
            out += &format!(
                "command = \"sh -c 'c=count-{server}; n=$(cat $c 2>/dev/null || echo 0); echo $((n + 1)) > $c; \
                 test {{entry}} = k3 && cat \\\"sets/{server}/{{set}}/$((n % 6)).log\\\" >> serial-{server}.log'\"\n"
            );
        } else {
            out += &format!("{line}\n");
        }
    }
    std::fs::write(dir.join("lab.toml"), out).unwrap();
    let capture = |side: usize| {
        let queue: serde_json::Map<String, Value> = DIFFERENCES[..2]
            .iter()
            .map(|(k, g, b)| (k.trim_start_matches("queue.").to_string(), [g, b][side].to_string().into()))
            .chain([("scheduler".to_string(), "mq-deadline".into())])
            .collect();
        let swappiness: u64 = [DIFFERENCES[2].1, DIFFERENCES[2].2][side].parse().unwrap();
        serde_json::json!({"name": "as-installed", "vm": {"swappiness": swappiness, "dirty_ratio": 20}, "queue": queue})
    };
    std::fs::write(dir.join("good.json"), capture(0).to_string()).unwrap();
    std::fs::write(dir.join("bad.json"), capture(1).to_string()).unwrap();
    dir
}

fn bisect_settings(dir: &Path, args: &[&str]) -> Output {
    bootmark().args(["bisect", "settings"]).arg(dir.join("lab.toml")).args(args).current_dir(dir).output().unwrap()
}

/// Two captures that differ in three settings: the large requests alone
/// are found, on two servers side by side, every boot given all three.
#[test]
fn a_settings_bisect_finds_the_setting_that_makes_the_reads_wait() {
    let dir = settings_lab("settings", &["a", "b"]);
    let args = ["--metric", "seqwrite.read_p50_ms", "--entry", "k3", "--good", "good.json", "--bad", "bad.json"];
    let o = bisect_settings(&dir, &args);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("d1: queue.max_sectors_kb 128 (good) → 1280 (bad)"), "{out}");
    assert!(
        out.contains("smallest set of differences that is still bad: d1 (queue.max_sectors_kb 128 → 1280)"),
        "{out}"
    );
    let s = state(&dir);
    let boots = s["boots"].as_array().unwrap();
    assert!(boots.iter().all(|b| b["value"].is_number()), "every boot booted its settings: {s}");
    let servers: std::collections::BTreeSet<u64> = boots.iter().map(|b| b["server"].as_u64().unwrap()).collect();
    assert_eq!(servers.len(), 2, "both servers booted");
    // `bisect status` tells the same from the state alone.
    let status = bootmark().args(["bisect", "status"]).arg(dir.join("lab.toml")).output().unwrap();
    assert!(text(&status).contains("still bad: d1"), "{}", text(&status));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_settings_bisect_refuses_bad_flags_before_anything_boots() {
    let dir = settings_lab("settings-flags", &["a"]);
    std::fs::write(dir.join("notes.txt"), "dirty_ratio went up, I think\n").unwrap();
    let metric = ["--metric", "seqwrite.read_p50_ms"];
    let cases: &[(&[&str], &str)] = &[
        (&["--entry", "k9", "--good", "good.json", "--bad", "bad.json"], "--entry k9: not an entry of the image"),
        (&["--entry", "k3", "--good", "good.json", "--bad", "good.json"], "a bisect needs two sets of settings"),
        (
            &["--entry", "k3", "--good", "notes.txt", "--bad", "bad.json"],
            "neither a `bootmark capture` output nor records",
        ),
        (&["--entry", "k3", "--good", "missing.json", "--bad", "bad.json"], "cannot read"),
    ];
    for (args, said) in cases {
        let o = bisect_settings(&dir, &[&metric[..], args].concat());
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}");
        assert!(out.contains(said), "{args:?}: {out}");
        assert!(!dir.join("count-a").exists(), "{args:?} booted");
    }
    // A value that would add a kernel argument and a menu line: refused before any boot.
    let mut hostile: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("bad.json")).unwrap()).unwrap();
    hostile["queue"]["scheduler"] = "bfq init=/bin/sh\n  KERNEL http://x/vmlinuz".into();
    std::fs::write(dir.join("hostile.json"), hostile.to_string()).unwrap();
    let o = bisect_settings(
        &dir,
        &[&metric[..], &["--entry", "k3", "--good", "good.json", "--bad", "hostile.json"]].concat(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("queue.scheduler's bad value \"bfq init=/bin/sh"), "{}", text(&o));
    assert!(!dir.join("count-a").exists() && !dir.join("lab.state/bisect").exists(), "it booted");
    std::fs::copy(dir.join("good.json"), dir.join("same.json")).unwrap();
    let o =
        bisect_settings(&dir, &[&metric[..], &["--entry", "k3", "--good", "good.json", "--bad", "same.json"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("do not differ"), "{}", text(&o));
    // A [server.qemu] command with no {set} cannot give a boot its settings: the lab says how.
    let toml = std::fs::read_to_string(dir.join("lab.toml")).unwrap();
    std::fs::write(dir.join("lab.toml"), toml.replace("{set}", "x")).unwrap();
    let o =
        bisect_settings(&dir, &[&metric[..], &["--entry", "k3", "--good", "good.json", "--bad", "bad.json"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--set={set}"), "{}", text(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A kernel tree's history for a git bisect: seven commits, whose tree's
/// `kernel` file says which demo kernel's boots its build makes — 6.1's
/// (`old`) up to the fourth, 6.12's (`new`) from the fifth, the planted
/// regression — and whose third does not build (`BROKEN`). Returns the
/// commits, oldest first.
fn kernel_tree(repo: &Path) -> Vec<String> {
    let git = |args: &[&str]| {
        let o = Command::new("git").arg("-C").arg(repo).args(args).output().unwrap();
        assert!(o.status.success(), "git {args:?}: {}", text(&o));
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    std::fs::create_dir_all(repo).unwrap();
    git(&["init", "--quiet", "-b", "master"]);
    git(&["config", "user.email", "dev@example.org"]);
    git(&["config", "user.name", "dev"]);
    let steps: [(&str, &str, bool); 7] = [
        ("old", "Linux 6.1", false),
        ("old", "docs: a typo", false),
        ("old", "block: a change that breaks the build", true),
        ("old", "block: fix the build", false),
        ("new", "block: raise the default max_sectors_kb", false),
        ("new", "mm: a comment", false),
        ("new", "Linux 6.2", false),
    ];
    let mut commits = Vec::new();
    for (i, (kernel, subject, broken)) in steps.iter().enumerate() {
        std::fs::write(repo.join("kernel"), kernel).unwrap();
        std::fs::write(repo.join("history"), format!("{i}\n")).unwrap();
        if *broken {
            std::fs::write(repo.join("BROKEN"), "").unwrap();
        } else {
            let _ = std::fs::remove_file(repo.join("BROKEN"));
        }
        git(&["add", "-A"]);
        git(&["commit", "--quiet", "-m", subject]);
        commits.push(git(&["rev-parse", "HEAD"]));
    }
    commits
}

/// A lab for a git bisect: `lab`'s servers, each power-on appending the
/// next boot of the kernel the step's image was built from (`{image}/kernel`),
/// every boot its entry k0's; the build command copies the tree's `kernel`
/// into a one-entry image, fails on a tree with `BROKEN`, and notes each
/// build in `built`.
fn git_lab(name: &str, servers: &[&str]) -> (PathBuf, Vec<String>, String) {
    let dir = lab(name, &servers.iter().map(|s| (*s, "dl140")).collect::<Vec<_>>());
    let commits = kernel_tree(&dir.join("linux"));
    let (old, new) = (boots_of("6.1."), boots_of("6.12."));
    let mut toml = "image = \"image\"\nstate = \"lab.state\"\n".to_string();
    for (j, server) in servers.iter().enumerate() {
        for (kernel, boots) in [("old", &old), ("new", &new)] {
            let pool = dir.join(format!("gitpool/{server}/{kernel}"));
            std::fs::create_dir_all(&pool).unwrap();
            for (n, boot) in boots.iter().enumerate() {
                let run_id = format!("20261205-{kernel}{n:02}00-{server}");
                std::fs::write(pool.join(format!("{n}.log")), console(boot, "k0", &run_id, "dl140")).unwrap();
            }
        }
        // The image's path as sh's $1: the lab quotes it, as one word.
        let command = format!(
            "sh -c 'test {{entry}} = k0 || exit 1; k=$(cat $1/kernel); c=count-{server}-$k; \
             n=$(cat $c 2>/dev/null || echo 0); echo $((n + 1)) > $c; \
             cat gitpool/{server}/$k/$(((n + {offset}) % 6)).log >> serial-{server}.log' sh {{image}}",
            offset = 3 * j
        );
        toml += &format!(
            "[[server]]\nname = \"{server}\"\nconsole = \"file:serial-{server}.log\"\nboot_s = 20\nmax_step_s = 30\n\
             [server.qemu]\ncommand = \"{command}\"\n"
        );
    }
    std::fs::write(dir.join("lab.toml"), toml).unwrap();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("image/manifest.json")).unwrap()).unwrap();
    let mut one = manifest.clone();
    one["entries"] = serde_json::json!([manifest["entries"][0]]);
    std::fs::write(dir.join("one-entry.json"), one.to_string()).unwrap();
    // The image directory is the lab's to create; the build makes it.
    let build = format!(
        "test ! -e {{tree}}/BROKEN || {{ echo 'block/blk-settings.c:12: error: planted' >&2; exit 1; }}; \
         mkdir -p {{image}} && cp {}/one-entry.json {{image}}/manifest.json && cp {{tree}}/kernel {{image}}/kernel \
         && echo {{commit}} >> {}/built",
        dir.display(),
        dir.display()
    );
    (dir, commits, build)
}

fn bisect_git(dir: &Path, args: &[&str]) -> Output {
    bootmark().args(["bisect", "git"]).arg(dir.join("lab.toml")).args(args).output().unwrap()
}

#[test]
fn a_git_bisect_builds_only_the_commits_it_boots_finds_the_regression_and_its_log_replays() {
    let (dir, commits, build) = git_lab("git", &["a", "b"]);
    let tree = dir.join("linux");
    let tree_arg = tree.to_str().unwrap();
    let args = ["--metric", "seqwrite.read_p50_ms", "--tree", tree_arg, "--good", "HEAD~6", "--bad", "master"];
    let found = bisect_git(&dir, &[&args[..], &["--build", &build]].concat());
    let out = text(&found);
    if std::env::var_os("BISECT_SHOW").is_some() {
        eprintln!("{out}");
    }
    assert_eq!(found.status.code(), Some(0), "{out}");
    let short = |i: usize| commits[i][..7].to_string();
    assert!(out.contains(&format!("first bad: {} block: raise the default max_sectors_kb", short(4))), "{out}");
    assert!(out.contains(&format!("last good: {} block: fix the build", short(3))), "{out}");

    // Built once each, and only what a step booted.
    let built = std::fs::read_to_string(dir.join("built")).unwrap_or_default();
    let mut lines: Vec<&str> = built.lines().collect();
    let n = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), n, "a commit built twice: {built}");
    let s = state(&dir);
    let boots = s["boots"].as_array().unwrap();
    for b in boots {
        let c = b["candidate"].as_u64().unwrap() as usize;
        if c == 2 {
            assert!(b["why"].as_str().unwrap().contains("planted"), "the broken commit is a skip: {b}");
        } else {
            assert!(lines.contains(&commits[c].as_str()), "{c} booted but not built");
        }
    }

    // The user's tree is as it was.
    let head = Command::new("git").arg("-C").arg(&tree).args(["status", "--porcelain", "--branch"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&head.stdout).trim(), "## master");

    // `git bisect replay` reaches the same commit.
    let log = dir.join("lab.state/bisect/git-bisect.log");
    assert!(out.contains(&log.display().to_string()), "{out}");
    let git = |args: &[&str]| Command::new("git").arg("-C").arg(&tree).args(args).output().unwrap();
    assert!(git(&["bisect", "start"]).status.success());
    let replay = git(&["bisect", "replay", log.to_str().unwrap()]);
    let said = text(&replay);
    assert!(said.contains(&format!("{} is the first bad commit", commits[4])), "{said}");
    assert!(git(&["bisect", "reset"]).status.success());

    // Resumed, nothing is built or booted again; status needs no image.
    let again = bisect_git(&dir, &[&args[..], &["--build", &build]].concat());
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(dir.join("built")).unwrap_or_default(), built);
    assert_eq!(state(&dir)["boots"].as_array().unwrap().len(), boots.len());
    let status = bootmark().args(["bisect", "status"]).arg(dir.join("lab.toml")).output().unwrap();
    let said = text(&status);
    assert_eq!(status.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("| {} block: raise the default max_sectors_kb |", short(4))), "{said}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_git_bisect_refuses_a_range_that_is_not_one_and_ends_that_do_not_build() {
    let (dir, commits, build) = git_lab("gitflags", &["a"]);
    let tree = dir.join("linux");
    let t = tree.to_str().unwrap();
    let metric = ["--metric", "seqwrite.read_p50_ms"];
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["--tree", t, "--good", "master", "--bad", "master", "--build", &build], "holds no commits".into()),
        (vec!["--tree", t, "--good", "master", "--bad", "HEAD~6", "--build", &build], "is not an ancestor".into()),
        (vec!["--tree", t, "--good", "v9", "--bad", "master", "--build", &build], "--good v9: no such commit".into()),
        (
            vec!["--tree", dir.to_str().unwrap(), "--good", "a", "--bad", "b", "--build", &build],
            "not a git repository".into(),
        ),
        (vec!["--tree", t, "--good", "HEAD~6", "--bad", "master", "--build", "make"], "needs {tree}".into()),
        (
            vec!["--tree", t, "--good", "HEAD~3", "--bad", "master", "--build", "false {tree} {image}"],
            format!("the good end, {} block: fix the build, does not build", &commits[3][..7]),
        ),
    ];
    for (args, said) in &cases {
        let o = bisect_git(&dir, &[&metric[..], args].concat());
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}");
        assert!(out.contains(said.as_str()), "{args:?}: {out}");
        assert!(!dir.join("count-a-old").exists() && !dir.join("count-a-new").exists(), "{args:?} booted");
        let _ = std::fs::remove_dir_all(dir.join("lab.state"));
    }
    // A path placeholder inside quotes is refused before anything is cloned or built.
    let quoted = ["--tree", t, "--good", "HEAD~3", "--bad", "master", "--build", "cp \"{image}\" x # {tree}"];
    let o = bisect_git(&dir, &[&metric[..], &quoted[..]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("{image} stands inside quotes or backticks"), "{}", text(&o));
    assert!(!dir.join("lab.state/bisect").exists() && !dir.join("X").exists());
    // A --dir holding {image} and $(…): each placeholder filled once, quoted once; nothing runs.
    let hostile = dir.join("d{image}$(touch X)");
    let d = hostile.to_str().unwrap();
    let failing = ["--tree", t, "--good", "HEAD~3", "--bad", "master", "--dir", d, "--build", "false {tree} {image}"];
    let o = bisect_git(&dir, &[&metric[..], &failing[..]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let log = std::fs::read_dir(hostile.join("images")).unwrap().find_map(|e| {
        let p = e.unwrap().path();
        p.to_str().unwrap().ends_with(".build.log").then(|| std::fs::read_to_string(p).unwrap())
    });
    let log = log.expect("a build log");
    let expected = "$ false \"${BOOTMARK_TREE}\" \"${BOOTMARK_IMAGE}\"  # with BOOTMARK_TREE=";
    assert!(log.starts_with(&format!("{expected}{d}/tree, BOOTMARK_IMAGE={d}/images/")), "{log}");
    assert!(!dir.join("X").exists() && !Path::new("X").exists(), "$(touch X) ran");
    // The user's tree as DIR/tree, with a change of theirs; another repository there; DIR inside the tree.
    let user = dir.join("u");
    std::fs::create_dir_all(&user).unwrap();
    let status = |repo: &Path| {
        let o = Command::new("git").arg("-C").arg(repo).args(["status", "--porcelain", "--branch"]).output().unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    assert!(Command::new("git").args(["clone", "-q"]).arg(&tree).arg(user.join("tree")).status().unwrap().success());
    std::fs::write(user.join("tree/kernel"), "the user's own change\n").unwrap();
    let before = status(&user.join("tree"));
    let u = user.join("tree");
    for (tree_arg, dir_arg, said) in [
        (u.to_str().unwrap(), user.to_str().unwrap(), "is your --tree"),
        (t, user.to_str().unwrap(), "is not the bisect's own clone"),
        (t, &*format!("{t}/bisect"), "is inside --tree"),
    ] {
        let args = ["--tree", tree_arg, "--good", "HEAD~3", "--bad", "master", "--dir", dir_arg, "--build", &build];
        let o = bisect_git(&dir, &[&metric[..], &args[..]].concat());
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(said), "{said}: {}", text(&o));
        assert_eq!(status(&user.join("tree")), before, "the user's tree changed");
        assert!(!tree.join("bisect").exists() && !user.join("images").exists());
    }
    assert_eq!(std::fs::read_to_string(user.join("tree/kernel")).unwrap(), "the user's own change\n");
    // A server whose command cannot take the step's image.
    let toml = std::fs::read_to_string(dir.join("lab.toml")).unwrap();
    std::fs::write(dir.join("lab.toml"), toml.replace("sh {image}", "sh image")).unwrap();
    let o = bisect_git(
        &dir,
        &[&metric[..], &["--tree", t, "--good", "HEAD~6", "--bad", "master", "--build", &build]].concat(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("its qemu.command has no {image}"), "{}", text(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C during a build ends the build (its whole process group) at
/// once, and the build is no failure: nothing marks the commit failed.
#[test]
fn ctrl_c_during_a_build_stops_it_and_marks_nothing_failed() {
    let (dir, _, _) = git_lab("gitstop", &["a"]);
    let tree = dir.join("linux");
    let child = bootmark()
        .args(["bisect", "git"])
        .arg(dir.join("lab.toml"))
        .args(["--metric", "seqwrite.read_p50_ms", "--good", "HEAD~6", "--bad", "master", "--tree"])
        .arg(&tree)
        .args(["--build", "echo started > {image}.started; sleep 60 & wait # {tree}"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let images = dir.join("lab.state/bisect/images");
    let since = std::time::Instant::now();
    while std::fs::read_dir(&images)
        .map_or(true, |d| !d.flatten().any(|e| e.path().to_string_lossy().ends_with(".started")))
    {
        assert!(since.elapsed().as_secs() < 30, "the build never started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: kill(2) sends SIGINT to the child we started, as a terminal's Ctrl-C would to bootmark.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let stopped = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert!(stopped.elapsed().as_secs() < 10, "bootmark waited for the build: {said}");
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("its build stopped by Ctrl-C"), "{said}");
    let failed: Vec<_> = std::fs::read_dir(&images)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "failed"))
        .collect();
    assert!(
        failed.is_empty(),
        "an interrupted build was marked failed: {:?}",
        failed.iter().map(|e| e.path()).collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
