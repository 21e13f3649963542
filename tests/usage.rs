//! The exit contract for mistakes: a flag's value, a plan, a dimension or a
//! path the command cannot work with exits 2 — as clap exits for a flag it
//! does not know — names what was wrong and the valid choices, and guesses
//! the one meant when a choice is near. Nothing runs, nothing is written.

use std::path::PathBuf;
use std::process::Command;

fn records() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/report/demo-records.jsonl").display().to_string()
}

/// (arguments, what stderr must contain, each).
fn mistakes() -> Vec<(Vec<String>, Vec<&'static str>)> {
    let r = records();
    let case = |args: &[&str], said: &[&'static str]| (args.iter().map(|a| a.to_string()).collect(), said.to_vec());
    vec![
        case(
            &["report", &r, "--by", "kernal"],
            &["--by kernal: not a dimension (did you mean 'kernel'?); the dimensions: kernel, fs, host", "dotted path"],
        ),
        case(&["report", &r, "--by", "vm.dirty_ratoi"], &["--by vm.dirty_ratoi: no record has this field"]),
        case(&["report", &r, "--timeline", "x:0"], &["--timeline", "add --format html"]),
        case(&["report", &r, "--timeline", "nope:0", "--format", "html"], &["--timeline nope:0: no such record"]),
        case(&["report", &r, "--svg", &r], &["is an input; give a directory for the pictures"]),
        case(&["report", &r, "--svg", "/etc/hostname"], &["--svg /etc/hostname: not a directory"]),
        case(&["report", &r, "--format", "htm"], &["invalid value 'htm'", "md, text, csv, json, html"]),
        case(
            &["run", "--plan", "quik", "--dir", "/tmp"],
            &["unknown plan 'quik'", "(did you mean 'quick'?)", "seed, quick"],
        ),
        case(&["plans", "nosuch"], &["no built-in plan 'nosuch'", "generations, requests"]),
        case(
            &["plans", "generatons"],
            &["no built-in plan 'generatons' (did you mean 'generations'?); built-in plans:"],
        ),
        case(&["capture", "--dir", "/nonexistent"], &["--dir /nonexistent: not on a block device"]),
        case(&["collect", &r, "--out", "/nonexistent/x.jsonl"], &["cannot write /nonexistent/x.jsonl"]),
    ]
}

#[test]
fn every_mistake_exits_2_naming_the_choices() {
    for (args, said) in mistakes() {
        let out = Command::new(env!("CARGO_BIN_EXE_bootmark")).args(&args).output().expect("bootmark runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for s in said {
            assert!(stderr.contains(s), "{args:?}: {s:?} not in {stderr}");
        }
        assert!(!stderr.contains(".tmp-"), "{args:?}: our temporary file named: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: printed {}", String::from_utf8_lossy(&out.stdout));
    }
}

/// `--by workload` labels its rows with the workload's name and parameters, not JSON.
#[test]
fn the_workload_dimension_reads_as_words() {
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .args(["report", &records(), "--by", "workload", "--format", "csv"])
        .output()
        .expect("bootmark runs");
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.contains("seqwrite block=16384 file=seqwrite.dat size=201326592 sync=end"), "{csv}");
    assert!(!csv.contains("{\""), "JSON in a label: {csv}");
}
