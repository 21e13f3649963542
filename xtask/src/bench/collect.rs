//! `cargo xtask bench-collect`: the collector on generated console captures
//! of two sizes (boot noise, printk lines and framed records, like a console
//! server's log), next to `grep -c` on the same file: MB/s, and peak memory
//! (which must not grow with the log).

use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{Cmd, Streams, cmd, shell_in};
use crate::host::project::{Result, project_root};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Size of the larger log in MiB (the smaller one is a quarter of it).
    #[arg(long, default_value_t = 1024)]
    mib: u64,
    /// Keep the generated logs in target/bench-collect.
    #[arg(long)]
    keep: bool,
}

/// Write a log of about `mib` MiB: boots with kernel messages and 7 framed documents each.
fn generate(path: &Path, mib: u64) -> Result<u64> {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, fs::create(path)?);
    // Whole records (the collector rejects any that do not fit the schema),
    // with the timeline a 100 s workload carries.
    let record = |run: &str, seq: u32| {
        let mut r = bootmark::record::Record::blank(run, seq);
        r.workload.name = "seqwrite".into();
        r.workload.params = serde_json::json!({"size": 1u64 << 30});
        r.kernel.release = Some("2.6.9-42.ELsmp".into());
        r.times = bootmark::record::Times { wall_s: 315.2, user_s: 0.1, sys_s: 9.3, ..Default::default() };
        r.throughput_mib_s = 3.2;
        r.timeline.t_s = (0..400).map(|i| i as f64 * 0.25).collect();
        serde_json::to_string(&r).expect("a record serialises")
    };
    let mut written = 0u64;
    let mut boot = 0u32;
    while written < mib << 20 {
        let run = format!("20261130-{boot:06}-abcd");
        let mut chunk = String::new();
        chunk += &format!("[    0.000000] Linux version 2.6.9-42.ELsmp (bhcompile@example) #1 SMP boot {boot}\r\n");
        for i in 0..4000 {
            chunk += &format!(
                "[ {:>4}.{:06}] sd 0:0:0:0: [sda] {i} sectors written, queue depth 31, cfq scheduling\r\n",
                i / 100,
                i * 37 % 1_000_000
            );
        }
        for seq in 0..7 {
            for l in bootmark::framing::encode(&run, seq, record(&run, seq).as_bytes()) {
                chunk += &l;
                chunk += "\r\n";
            }
        }
        f.write_all(chunk.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
        written += chunk.len() as u64;
        boot += 1;
    }
    f.flush().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(written)
}

/// Read a file once, so that the tools compared read it from memory.
pub fn warm(path: &Path) -> Result<()> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::io::copy(&mut f, &mut std::io::sink()).map(|_| ()).with_context(|| format!("cannot read {}", path.display()))
}

/// Wall seconds and peak RSS (KiB) of a command. Output goes to a file, not
/// /dev/null: GNU grep stops at the first match when its output is /dev/null.
/// Its stdout goes to DIR/stdout.
pub fn measure(cmd: Cmd<'_>, dir: &Path) -> Result<(f64, i64)> {
    measure_exiting(cmd, dir, &[0])
}

/// `measure` of a program whose exit status may be any of `codes`.
pub fn measure_exiting(cmd: Cmd<'_>, dir: &Path, codes: &[i32]) -> Result<(f64, i64)> {
    let sink = fs::create(dir.join("stdout"))?;
    let line = cmd.to_string();
    let start = Instant::now();
    let child = crate::host::process::spawn(cmd, Streams::default().stdout(sink).stderr(Stdio::null()))?;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let exited = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    if pid != child.id() as i32 || !exited.is_some_and(|c| codes.contains(&c)) {
        return Err(format!("{line} failed (wait4 {pid}, status {status:#x})"));
    }
    Ok((start.elapsed().as_secs_f64(), usage.ru_maxrss))
}

pub fn run(args: &Args) -> Result<()> {
    let root = project_root();
    let sh = shell_in(&root)?;
    crate::host::process::run_shown(cmd!(sh, "cargo build --release --package bootmark --bin bootmark"))?;
    let bin = root.join("target/release/bootmark");
    let dir = root.join("target/bench-collect");
    fs::create_dir_all(&dir)?;
    println!(
        "{:>10} {:>14} {:>14} {:>8} {:>16} {:>10}",
        "log", "grep -c MB/s", "collect MB/s", "ratio", "collect peak RSS", "records"
    );
    for mib in [args.mib / 4, args.mib] {
        let log: PathBuf = dir.join(format!("console-{mib}.log"));
        let bytes = generate(&log, mib)?;
        // Warm the page cache once so both tools read from memory.
        warm(&log)?;
        let (grep_s, _) = measure(cmd!(sh, "grep -c @BM1 {log}"), &dir)?;
        let out = dir.join("records.jsonl");
        // The generated boots carry no run records, so collect names each as
        // a problem and exits 1 (what it must do); 2 would be a failure to read.
        let (collect_s, rss) = measure_exiting(cmd!(sh, "{bin} collect {log} --out {out}"), &dir, &[0, 1])?;
        let records = std::fs::read_to_string(&out).map(|t| t.lines().count()).unwrap_or(0);
        let mb = bytes as f64 / 1e6;
        println!(
            "{:>7} MiB {:>14.0} {:>14.0} {:>7.2}x {:>12.1} MiB {:>10}",
            mib,
            mb / grep_s,
            mb / collect_s,
            grep_s / collect_s,
            rss as f64 / 1024.0,
            records
        );
        if !args.keep {
            let _ = std::fs::remove_file(&log);
        }
    }
    Ok(())
}
