//! `cargo xtask check fuzz`: the serial log parser under libFuzzer (cargo fuzz,
//! installed from crates.io if missing) for a bounded time. Runs on stable
//! Rust with `--sanitizer none`: the target asserts its own invariants.

use crate::host::fs;
use crate::host::process::{command, run_shown, succeeds};
use crate::{Result, project_root};

pub fn run(seconds: u64) -> Result<()> {
    let dir = project_root().join("fuzz");
    if !succeeds(command("cargo").args(["fuzz", "--version"]).current_dir(&dir)) {
        eprintln!("xtask: installing cargo-fuzz");
        run_shown(command("cargo").args(["install", "cargo-fuzz", "--locked"]))?;
    }
    // A private corpus directory seeded from fuzz/seeds, so runs do not dirty the tree.
    let corpus = project_root().join("target/fuzz-corpus/serial_log");
    fs::create_dir_all(&corpus)?;
    let seeds = project_root().join("fuzz/seeds/serial_log");
    let time = format!("-max_total_time={seconds}");
    run_shown(
        command("cargo")
            .args(["fuzz", "run", "--fuzz-dir", ".", "serial_log", "--sanitizer", "none"])
            .arg(&corpus)
            .arg(&seeds)
            .args(["--", &time])
            .current_dir(&dir),
    )
    .map_err(|e| format!("the fuzzer found a failure (see fuzz/artifacts): {e}"))?;
    println!("fuzz serial_log: ok, no property failed in {seconds} s");
    Ok(())
}
