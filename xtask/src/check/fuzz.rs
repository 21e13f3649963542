//! `cargo xtask check fuzz`: the serial log parser under libFuzzer (cargo fuzz,
//! installed from crates.io if missing) for a bounded time. Runs on stable
//! Rust with `--sanitizer none`: the target asserts its own invariants.

use crate::{Result, project_root};
use xshell::{Shell, cmd};

pub fn run(seconds: u64) -> Result<()> {
    let sh = Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(project_root().join("fuzz"));
    if cmd!(sh, "cargo fuzz --version").quiet().ignore_stdout().ignore_stderr().run().is_err() {
        eprintln!("xtask: installing cargo-fuzz");
        cmd!(sh, "cargo install cargo-fuzz --locked").run().map_err(|e| format!("cargo install cargo-fuzz: {e}"))?;
    }
    // A private corpus directory seeded from fuzz/seeds, so runs do not dirty the tree.
    let corpus = project_root().join("target/fuzz-corpus/serial_log");
    std::fs::create_dir_all(&corpus).map_err(|e| e.to_string())?;
    let seeds = project_root().join("fuzz/seeds/serial_log");
    let time = format!("-max_total_time={seconds}");
    cmd!(sh, "cargo fuzz run --fuzz-dir . serial_log --sanitizer none {corpus} {seeds} -- {time}")
        .run()
        .map_err(|e| format!("the fuzzer found a failure (see fuzz/artifacts): {e}"))?;
    println!("fuzz serial_log: ok, no property failed in {seconds} s");
    Ok(())
}
