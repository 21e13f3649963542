//! `cargo xtask check fuzz`: the serial log parser, the readers of md and
//! LVM2 metadata, the lab file reader and the bisect's state under libFuzzer (cargo fuzz, installed from crates.io if
//! missing), each for a bounded time; `prepare` installs and builds ahead. Runs on stable
//! Rust with `--sanitizer none`: the target asserts its own invariants.

use crate::host::fs;
use crate::host::process::{Streams, cmd, run as run_quiet, run_shown, run_with, shell, shell_in, succeeds};
use crate::host::project::{Result, project_root};
use std::path::Path;

/// Lines of libFuzzer's output shown when it failed (the crash and its input).
const LOG_TAIL_LINES: usize = 40;

/// A fuzz target, the memory it may use (a reader that allocates what a
/// disk claims shows up as going past it) and where its seeds are besides
/// `fuzz/seeds/NAME`.
struct Target {
    name: &'static str,
    rss_mib: u32,
    more_seeds: &'static [&'static str],
}

const TARGETS: &[Target] = &[
    Target { name: "serial_log", rss_mib: 2048, more_seeds: &[] },
    // The real lvm2 PV and the real mdadm superblocks the unit tests read.
    Target { name: "layers", rss_mib: 512, more_seeds: &["tests/data/layers"] },
    // Hand-written and damaged lab files and bisect states (issue: hostile input).
    Target { name: "lab_file", rss_mib: 512, more_seeds: &[] },
    Target { name: "bisect_state", rss_mib: 512, more_seeds: &[] },
];

/// cargo-fuzz installed (from crates.io, if missing) and every target
/// built as `run` builds it, its output kept quiet: `cargo xtask test`
/// does this beside the QEMU boots, so that afterwards the fuzzing only
/// fuzzes. `run` does whatever of it is left.
pub fn prepare() -> Result<()> {
    install_cargo_fuzz(false)?;
    let dir = project_root().join("fuzz");
    let sh = shell_in(&dir)?;
    for target in TARGETS {
        let name = target.name;
        run_quiet(cmd!(sh, "cargo fuzz build --fuzz-dir . {name} --sanitizer none"))?;
    }
    Ok(())
}

fn install_cargo_fuzz(shown: bool) -> Result<()> {
    let sh = shell()?;
    if succeeds(cmd!(sh, "cargo fuzz --version")) {
        return Ok(());
    }
    eprintln!("xtask: installing cargo-fuzz");
    match shown {
        true => run_shown(cmd!(sh, "cargo install cargo-fuzz --locked")),
        false => run_quiet(cmd!(sh, "cargo install cargo-fuzz --locked")).map(|_| ()),
    }
}

/// Each target for `seconds`.
pub fn run(seconds: u64) -> Result<()> {
    let dir = project_root().join("fuzz");
    install_cargo_fuzz(true)?;
    // Two at a time on the suite's two cores: each fuzzer is one process on
    // one core, and the targets are built already (`prepare`).
    let at_once = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 2);
    let mut failed = Vec::new();
    for pair in TARGETS.chunks(at_once) {
        std::thread::scope(|scope| {
            let running: Vec<_> = pair.iter().map(|t| scope.spawn(|| fuzz_one(&dir, t, seconds))).collect();
            for done in running {
                if let Err(e) = done.join().unwrap_or_else(|_| Err("a fuzzing thread panicked".into())) {
                    failed.push(e);
                }
            }
        });
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(failed.join("\n")),
    }
}

fn fuzz_one(dir: &Path, target: &Target, seconds: u64) -> Result<()> {
    let name = target.name;
    // A private corpus directory seeded from fuzz/seeds, so runs do not dirty the tree.
    let corpus = project_root().join("target/fuzz-corpus").join(name);
    fs::create_dir_all(&corpus)?;
    let seeds =
        std::iter::once(dir.join("seeds").join(name)).chain(target.more_seeds.iter().map(|d| project_root().join(d)));
    let limits =
        [format!("-max_total_time={seconds}"), format!("-rss_limit_mb={}", target.rss_mib), "-timeout=10".to_string()];
    // libFuzzer prints a line per new input: thousands of them would bury
    // the suite's summary (a CI log is read from its tail), so they go to a
    // file, and its tail comes back only when the fuzzer failed.
    let log = project_root().join("target/fuzz-corpus").join(format!("{name}.log"));
    let opened = |f: std::io::Result<std::fs::File>| f.map_err(|e| format!("{}: {e}", log.display()));
    // One file, one offset: stdout and stderr interleave as a terminal shows them.
    let stdout = opened(std::fs::File::create(&log))?;
    let stderr = opened(stdout.try_clone())?;
    println!("fuzz {name}: {seconds} s (libFuzzer's output: {})", log.display());
    let sh = shell_in(dir)?;
    run_with(
        cmd!(sh, "cargo fuzz run --fuzz-dir . {name} --sanitizer none {corpus} {seeds...} -- {limits...}"),
        Streams::default().stdout(stdout).stderr(stderr),
    )
    .map_err(|e| {
        let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
        format!("the fuzzer found a failure in {name} (see fuzz/artifacts/{name}): {e}\n{tail}")
    })?;
    println!("fuzz {name}: ok, no property failed in {seconds} s");
    Ok(())
}
