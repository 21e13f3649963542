//! `cargo xtask check fuzz`: the serial log parser and the readers of md and
//! LVM2 metadata under libFuzzer (cargo fuzz, installed from crates.io if
//! missing), each for a bounded time. Runs on stable
//! Rust with `--sanitizer none`: the target asserts its own invariants.

use crate::host::fs;
use crate::host::process::{command, run_shown, succeeds};
use crate::host::project::{Result, project_root};

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
];

/// Each target for `seconds`.
pub fn run(seconds: u64) -> Result<()> {
    let dir = project_root().join("fuzz");
    if !succeeds(command("cargo").args(["fuzz", "--version"]).current_dir(&dir)) {
        eprintln!("xtask: installing cargo-fuzz");
        run_shown(command("cargo").args(["install", "cargo-fuzz", "--locked"]))?;
    }
    for target in TARGETS {
        fuzz_one(&dir, target, seconds)?;
    }
    Ok(())
}

fn fuzz_one(dir: &std::path::Path, target: &Target, seconds: u64) -> Result<()> {
    let name = target.name;
    // A private corpus directory seeded from fuzz/seeds, so runs do not dirty the tree.
    let corpus = project_root().join("target/fuzz-corpus").join(name);
    fs::create_dir_all(&corpus)?;
    let seeds =
        std::iter::once(dir.join("seeds").join(name)).chain(target.more_seeds.iter().map(|d| project_root().join(d)));
    let limits =
        [format!("-max_total_time={seconds}"), format!("-rss_limit_mb={}", target.rss_mib), "-timeout=10".to_string()];
    run_shown(
        command("cargo")
            .args(["fuzz", "run", "--fuzz-dir", ".", name, "--sanitizer", "none"])
            .arg(&corpus)
            .args(seeds)
            .arg("--")
            .args(&limits)
            .current_dir(dir),
    )
    .map_err(|e| format!("the fuzzer found a failure in {name} (see fuzz/artifacts/{name}): {e}"))?;
    println!("fuzz {name}: ok, no property failed in {seconds} s");
    Ok(())
}
