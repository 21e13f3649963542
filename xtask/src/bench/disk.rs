//! `cargo xtask bench`: bootmark against the tools users trust, on the same
//! filesystem, alternating run by run so drift hits both sides equally.
//!
//! - `seqwrite` with the probe on (as a boot runs it) vs `dd if=/dev/zero
//!   bs=16k conv=fdatasync` (dd's own seconds);
//! - `manyfiles` (sync=end) vs fio with the seed's job (psync, 16k, round-robin
//!   over 1000 files created on open, no fallocate, end_fsync) — fio's job_runtime;
//! - `seqwrite` with the probe on vs off (what the probe costs in throughput);
//! - one sample of the /proc sampler, timed alone over a thousand (the
//!   writer's and the probe's wchan, state and kernel stack, meminfo,
//!   vmstat, diskstats, PSI): its share of a CPU at the default 250 ms;
//! - `seqwrite` with the kernel's tracepoints read vs not (`--kernel-events`:
//!   what reading them costs; root and a kernel with tracefs, else said and skipped).
//!
//! Wall time is what each tool reports for its own work (bootmark's record,
//! dd's "copied, N s", fio's job_runtime). CPU is user+sys of the whole
//! process tree, from wait4, for every tool alike: bootmark's includes its
//! runner, worker, probe and sampler, so the probe on/off row shows what the
//! probe costs; dd's and fio's include removing what they wrote, as
//! bootmark's does. Prints medians and ratios.
//!
//! `--cpus N` pins every tool to the first N CPUs (taskset), as on the
//! seed's one- and two-CPU servers: there bootmark's own threads (the probe,
//! the /proc sampler) compete with the writer for the same CPU.

use crate::build::static_binary;
use crate::host::fs;
use crate::host::process::{Cmd, Shell, Streams, cmd, shell};
use crate::host::project::{Result, project_root};
use std::path::{Path, PathBuf};
use std::process::Stdio;

#[derive(clap::Args)]
pub struct Args {
    /// Directory on the filesystem to measure (default: target/bench).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Pairs of runs per comparison (medians are taken over them).
    #[arg(long, default_value_t = 5)]
    pairs: usize,
    /// Bytes written per run, in MiB (the seed's dd is 1024).
    #[arg(long, default_value_t = 1024)]
    mib: u64,
    /// Files for manyfiles / fio (the seed's program used 1000).
    #[arg(long, default_value_t = 1000)]
    files: u64,
    /// Pin bootmark, dd and fio alike to the first N CPUs (taskset), e.g. 1 as on the
    /// seed's one-CPU server (default: every CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    cpus: Option<u32>,
}

/// One timed run: wall seconds as the tool reports them, CPU seconds.
#[derive(Clone, Copy, Debug)]
struct Figures {
    wall: f64,
    cpu: f64,
}

pub fn run(args: &Args) -> Result<()> {
    let sh = shell()?;
    for tool in ["dd", "fio"] {
        if !crate::host::process::succeeds(cmd!(sh, "{tool} --version")) {
            return Err(format!(
                "{tool} is not installed: apt-get install {}",
                if tool == "dd" { "coreutils" } else { "fio" }
            ));
        }
    }
    if args.pairs == 0 || args.mib == 0 || args.files == 0 {
        return Err("--pairs, --mib and --files must be at least 1".into());
    }
    if args.cpus.is_some() && !crate::host::process::succeeds(cmd!(sh, "taskset --version")) {
        return Err("--cpus needs taskset: apt-get install util-linux".into());
    }
    let binary = static_binary::build(crate::build::arch::Arch::X86_64)?;
    let cpus = args.cpus;
    let dir = args.dir.clone().unwrap_or_else(|| project_root().join("target/bench"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let bytes = args.mib << 20;
    let per_file = bytes / args.files / 16384 * 16384;
    let pinned = cpus.map(|n| format!(", pinned to {n} CPU(s)")).unwrap_or_default();
    eprintln!(
        "bench: {} pairs, {} MiB per run, {} files of {} KiB, in {}{pinned}",
        args.pairs,
        args.mib,
        args.files,
        per_file >> 10,
        dir.display()
    );

    let seqwrite = plan_json("seqwrite", &format!(r#"{{"size":{bytes},"block":16384,"sync":"end"}}"#), false);
    let seqwrite_probed = plan_json("seqwrite", &format!(r#"{{"size":{bytes},"block":16384,"sync":"end"}}"#), true);
    let manyfiles = plan_json(
        "manyfiles",
        &format!(r#"{{"files":{},"file_size":{per_file},"block":16384,"sync":"end"}}"#, args.files),
        false,
    );
    let mut rows = Vec::new();
    let (a, b) = pairs(
        args.pairs,
        "seqwrite vs dd",
        || bootmark(&binary, &dir, &seqwrite_probed, cpus, false),
        || dd(&dir, bytes, cpus),
    )?;
    rows.push(("seqwrite+probe vs dd fdatasync", a, b));
    let (a, b) = pairs(
        args.pairs,
        "manyfiles vs fio",
        || bootmark(&binary, &dir, &manyfiles, cpus, false),
        || fio(&dir, args.files, per_file, cpus),
    )?;
    rows.push(("manyfiles vs fio (1000 files)", a, b));
    let (a, b) = pairs(
        args.pairs,
        "probe on vs off",
        || bootmark(&binary, &dir, &seqwrite_probed, cpus, false),
        || bootmark(&binary, &dir, &seqwrite, cpus, false),
    )?;
    rows.push(("seqwrite probe on vs off", a, b));

    // The tracepoints as the boot image reads them (here switched on by
    // `--kernel-events`: root, and this kernel's tracefs), with the probe on both sides.
    match bootmark(&binary, &dir, &seqwrite_probed, cpus, true) {
        Ok(_) => {
            let (a, b) = pairs(
                args.pairs,
                "kernel events on vs off",
                || bootmark(&binary, &dir, &seqwrite_probed, cpus, true),
                || bootmark(&binary, &dir, &seqwrite_probed, cpus, false),
            )?;
            rows.push(("seqwrite kernel events on vs off", a, b));
        }
        Err(e) => eprintln!("bench: kernel events on vs off: not measured: {e}"),
    }

    let (per_sample_us, stacks) = sampler_cost(&dir)?;

    println!("\nmedians over {} pairs, {} MiB per run, {}{pinned}", args.pairs, args.mib, describe_fs(&dir));
    println!(
        "{:<32} {:>10} {:>10} {:>7}   {:>9} {:>9} {:>7}",
        "comparison", "wall A", "wall B", "A/B", "cpu A", "cpu B", "A/B"
    );
    for (name, a, b) in rows {
        let (wa, wb) = (median(a.iter().map(|f| f.wall)), median(b.iter().map(|f| f.wall)));
        let (ca, cb) = (median(a.iter().map(|f| f.cpu)), median(b.iter().map(|f| f.cpu)));
        println!("{name:<32} {wa:>9.3}s {wb:>9.3}s {:>6.3}x   {ca:>8.3}s {cb:>8.3}s {:>6.3}x", wa / wb, ca / cb);
    }
    println!(
        "one /proc sample (writer and probe, {stacks}): {per_sample_us:.0} µs of CPU; every 250 ms that is {:.3} % of one CPU",
        per_sample_us / 250_000.0 * 100.0
    );
    Ok(())
}

/// Samples timed for [`sampler_cost`].
const SAMPLES_TIMED: u32 = 1000;

/// What one sample of the /proc sampler costs its process, in µs of CPU
/// (user + sys, from getrusage), with two sleeping processes standing in
/// for the writer and the probe; and whether their stacks could be read.
fn sampler_cost(dir: &Path) -> Result<(f64, &'static str)> {
    use bootmark::measure::sampler::Sampler;
    let sh = shell()?;
    let sleeper = || crate::host::process::spawn(cmd!(sh, "sleep 60"), Streams::null());
    let (mut writer, mut probe) = (sleeper()?, sleeper()?);
    let device = bootmark::measure::evidence::storage(dir).device.map(|d| d.disk);
    let mut sampler = Sampler::new(device, 0.25, bootmark::measure::clock::mono_ns());
    (sampler.writer, sampler.probe) = (Some(writer.id() as i32), Some(probe.id() as i32));
    let before = cpu_seconds();
    for _ in 0..SAMPLES_TIMED {
        sampler.sample();
    }
    let spent = cpu_seconds() - before;
    let stacks = match sampler.timeline.stacks.is_empty() {
        true => "stacks unreadable here (not root?)",
        false => "stacks read",
    };
    for child in [&mut writer, &mut probe] {
        let _ = child.kill();
        let _ = child.wait();
    }
    Ok((spent / SAMPLES_TIMED as f64 * 1e6, stacks))
}

/// This process's user + system CPU seconds so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let (user, sys) = bootmark::process::cpu_seconds(&u);
    user + sys
}

fn plan_json(workload: &str, params: &str, probe: bool) -> String {
    format!(
        r#"{{"name":"bench","probe":{{"enabled":{probe},"baseline_s":0.5,"recovery_deadline_s":5}},"workloads":[{{"name":"{workload}","params":{params}}}]}}"#
    )
}

/// Run A and B alternately, `n` times each, flushing dirty data before each run.
fn pairs(
    n: usize,
    label: &str,
    mut a: impl FnMut() -> Result<Figures>,
    mut b: impl FnMut() -> Result<Figures>,
) -> Result<(Vec<Figures>, Vec<Figures>)> {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..n {
        for first in [i % 2 == 0, i % 2 != 0] {
            // SAFETY: sync(2) cannot fail.
            unsafe { libc::sync() };
            if first { xs.push(a()?) } else { ys.push(b()?) }
        }
        eprintln!("bench: {label}: pair {}/{n}: A {:.3} s, B {:.3} s", i + 1, xs[i].wall, ys[i].wall);
    }
    Ok((xs, ys))
}

fn median(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Run a command, returning its stdout, stderr and CPU seconds (wait4).
fn timed(cmd: Cmd<'_>) -> Result<(String, String, f64)> {
    let line = cmd.to_string();
    let child = crate::host::process::spawn(cmd, Streams::default().stdout(Stdio::piped()).stderr(Stdio::piped()))?;
    let pid = child.id() as i32;
    // Read the pipes before reaping, so a chatty child cannot block on a full pipe.
    let mut stdout = String::new();
    let mut stderr = String::new();
    use std::io::Read;
    let (mut out, mut err) = (child.stdout.unwrap(), child.stderr.unwrap());
    out.read_to_string(&mut stdout).ok();
    err.read_to_string(&mut stderr).ok();
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if status != 0 {
        return Err(format!("{line} failed ({status:#x}): {stderr}"));
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok((stdout, stderr, s(usage.ru_utime) + s(usage.ru_stime)))
}

/// A command for `program`, pinned to the first `cpus` CPUs when given.
fn tool<'sh>(sh: &'sh Shell, program: impl AsRef<std::ffi::OsStr>, cpus: Option<u32>) -> Cmd<'sh> {
    let program = program.as_ref();
    match cpus {
        None => cmd!(sh, "{program}"),
        Some(n) => {
            let range = format!("0-{}", n - 1);
            cmd!(sh, "taskset -c {range} {program}")
        }
    }
}

/// One bootmark run; with `kernel_events`, an error unless the tracepoints were read.
fn bootmark(binary: &Path, dir: &Path, plan: &str, cpus: Option<u32>, kernel_events: bool) -> Result<Figures> {
    let plan_file = dir.join("bench-plan.json");
    fs::write(&plan_file, plan)?;
    let sh = shell()?;
    let traced = kernel_events.then_some("--kernel-events");
    let (stdout, _, cpu) = timed(
        tool(&sh, binary, cpus).args(["run", "--quiet", "--plan"]).arg(&plan_file).arg("--dir").arg(dir).args(traced),
    )?;
    let _ = std::fs::remove_file(&plan_file);
    let r: bootmark::record::Record =
        serde_json::from_str(stdout.trim()).map_err(|e| format!("bootmark record: {e}"))?;
    if kernel_events && r.kernel_events.is_none() {
        return Err(format!("the tracepoints were not read: {:?}", r.sources.get("tracepoints")));
    }
    Ok(Figures { wall: r.times.wall_s, cpu })
}

fn dd(dir: &Path, bytes: u64, cpus: Option<u32>) -> Result<Figures> {
    let file = dir.join("dd.dat");
    let count = (bytes / 16384).to_string();
    // dd's file is removed inside the measured process tree, as bootmark
    // removes its own: unlinking 1 GiB of page cache is about a sixth of
    // bootmark's CPU on one CPU (perf), and counting it on one side only
    // made bootmark look 1.19× dearer than dd.
    let sh = shell()?;
    let (_, stderr, cpu) = timed(
        tool(&sh, "sh", cpus)
            .args(["-c", "dd if=/dev/zero of=\"$1\" bs=16k conv=fdatasync count=\"$2\" && rm -f \"$1\"", "sh"])
            .arg(&file)
            .arg(&count),
    )?;
    let _ = std::fs::remove_file(&file);
    // "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2.34 s, 459 MB/s"
    let wall = stderr
        .lines()
        .find_map(|l| l.split(" copied, ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|s| s.replace(',', ".").parse().ok())
        .ok_or_else(|| format!("cannot read dd's time from: {stderr}"))?;
    Ok(Figures { wall, cpu })
}

fn fio(dir: &Path, files: u64, per_file: u64, cpus: Option<u32>) -> Result<Figures> {
    let work = dir.join("fio");
    fs::create_dir_all(&work)?;
    // As for dd: fio's files removed inside the measured tree, as bootmark removes its own.
    let sh = shell()?;
    let (stdout, _, cpu) = timed(
        tool(&sh, "sh", cpus)
            .args(["-c", "fio \"$@\" && rm -rf \"$0\"/*"])
            .arg(&work)
            .args(["--name=manyfiles", "--rw=write", "--bs=16k", "--ioengine=psync", "--file_service_type=roundrobin"])
            .args(["--fallocate=none", "--create_on_open=1", "--end_fsync=1", "--output-format=json"])
            .arg(format!("--nrfiles={files}"))
            .arg(format!("--filesize={per_file}"))
            .arg(format!("--directory={}", work.display())),
    )?;
    let _ = std::fs::remove_dir_all(&work);
    let v: serde_json::Value = serde_json::from_str(&stdout).map_err(|e| format!("fio JSON: {e}"))?;
    let ms = v["jobs"][0]["job_runtime"].as_f64().ok_or("fio JSON has no job_runtime")?;
    Ok(Figures { wall: ms / 1000.0, cpu })
}

fn describe_fs(dir: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let best = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() > 3 && canonical.starts_with(f[1]))
                .then(|| (f[1].len(), format!("{} on {} ({})", f[2], f[0], f[1])))
        })
        .max_by_key(|(n, _)| *n);
    best.map(|(_, s)| s).unwrap_or_else(|| "unknown filesystem".into())
}
