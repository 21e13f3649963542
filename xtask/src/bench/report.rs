//! `cargo xtask bench-report`: `bootmark report` on a fleet's worth of
//! records, next to `grep -c` on the same file: seconds, MB/s and peak
//! memory at two sizes (which must stay flat as the input grows tenfold).
//!
//! The records are a real quick-plan boot's six (tests/data/report),
//! spread over 200 hosts × 5 kernels × runs, each with its own run id and
//! slightly different figures: what a lab's LAVA fleet hands `report`.

use crate::bench::collect::{measure, warm};
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{cmd, shell, shell_in};
use crate::host::project::{Result, project_root};
use bootmark::record::Record;
use std::io::Write;
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// Records in the larger file (the smaller one has a tenth).
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    /// Keep the generated files in target/bench-report.
    #[arg(long)]
    keep: bool,
}

const HOSTS: u64 = 200;
const KERNELS: [&str; 5] = ["2.6.5-7.308-smp", "2.6.9-42.ELsmp", "2.6.16.1", "2.6.18-8.el5", "6.1.0-50-amd64"];

/// The six records of one real boot (one per workload of the quick plan).
fn base_records() -> Result<Vec<Record>> {
    let path = project_root().join("tests/data/report/mixed-records.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out: Vec<Record> = Vec::new();
    for line in text.lines() {
        let Ok(bootmark::record::Document::Result(r)) = bootmark::record::Document::from_json(line.as_bytes()) else {
            continue;
        };
        if r.status == bootmark::record::Status::Ok
            && r.variant.is_none()
            && r.kernel.release.as_deref() == Some("6.1.0-50-amd64")
            && !out.iter().any(|o| o.workload.name == r.workload.name)
        {
            out.push(*r);
        }
    }
    if out.len() != 6 {
        return Err(format!("{}: expected the quick plan's six workloads, found {}", path.display(), out.len()));
    }
    Ok(out)
}

/// Write `n` records: record i is workload i % 6 of run i / 6, on host
/// (run % 200) under kernel (run / 200 % 5); `fat`: with eight times the
/// timeline. Returns the bytes written.
pub fn generate(path: &Path, n: u64, fat: bool) -> Result<u64> {
    let mut base = base_records()?;
    if fat {
        // Records of a long workload: eight times the timeline.
        for r in &mut base {
            let tl = &mut r.timeline;
            tl.t_s = tl.t_s.repeat(8);
            tl.series.values_mut().for_each(|v| *v = v.repeat(8));
            tl.probe_t_s = tl.probe_t_s.repeat(8);
            tl.probe_response_ms = tl.probe_response_ms.repeat(8);
        }
    }
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut f = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut written = 0u64;
    let mut line = Vec::new();
    for i in 0..n {
        let run = i / 6;
        let mut r = base[(i % 6) as usize].clone();
        let (host, kernel) = (run % HOSTS, KERNELS[(run / HOSTS % 5) as usize]);
        r.run_id = format!("20261130-{run:08}-{host:03}");
        r.seq = (i % 6) as u32;
        r.kernel.release = Some(kernel.into());
        r.host.dmi_product = Some(format!("ProLiant DL140 #{host:03}"));
        // A few percent of spread, different in every record.
        let f_ = 1.0 + ((i * 7919) % 97) as f64 / 1000.0;
        r.times.wall_s *= f_;
        r.throughput_mib_s /= f_;
        if let Some(p) = r.responsiveness.as_mut() {
            p.max_ms *= f_;
            p.p99_ms *= f_;
        }
        line.clear();
        serde_json::to_writer(&mut line, &r).context("a generated record")?;
        line.push(b'\n');
        f.write_all(&line).with_context(|| format!("cannot write {}", path.display()))?;
        written += line.len() as u64;
    }
    f.flush().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(written)
}

/// One size: (records, MB, grep -c s, report s, report peak RSS KiB, rows).
struct Figures {
    records: u64,
    mb: f64,
    grep_s: f64,
    report_s: f64,
    rss_kib: i64,
    rows: usize,
}

fn one_size(bin: &Path, dir: &Path, records: u64, fat: bool, keep: bool) -> Result<Figures> {
    let file = dir.join(format!("records-{records}{}.jsonl", if fat { "-fat" } else { "" }));
    let bytes = generate(&file, records, fat)?;
    // Warm the page cache once so both tools read from memory.
    warm(&file)?;
    let sh = shell()?;
    let (grep_s, _) = measure(cmd!(sh, "grep -c bootmark.result/1 {file}"), dir)?;
    let (report_s, rss_kib) = measure(cmd!(sh, "{bin} report --by kernel,host {file}"), dir)?;
    // The table's lines (after its header and separator), not the verdict above it.
    let rows = fs::read_to_string(dir.join("stdout"))?.lines().filter(|l| l.starts_with('|')).count().saturating_sub(2);
    if !keep {
        let _ = std::fs::remove_file(&file);
    }
    Ok(Figures { records, mb: bytes as f64 / 1e6, grep_s, report_s, rss_kib, rows })
}

/// `bootmark` built with `profile` (`release` for figures; `dev` for the
/// memory check, which `cargo test` has built already: heap use is the
/// same, and a second, optimised build would cost CI over a minute).
fn binary(profile: &str) -> Result<std::path::PathBuf> {
    let root = project_root();
    let sh = shell_in(&root)?;
    crate::host::process::run_shown(cmd!(sh, "cargo build --profile {profile} --package bootmark --bin bootmark"))?;
    Ok(root.join("target").join(if profile == "dev" { "debug" } else { profile }).join("bootmark"))
}

/// What report's memory may grow by: per record (the figures its medians
/// need, the key that merges duplicates, the boot it came from), never with
/// the records' size.
const MAX_BYTES_PER_RECORD: f64 = 320.0;

/// Memory grows with the number of runs, by at most MAX_BYTES_PER_RECORD
/// each, and not with how big each record is (`fat`: the same count with
/// eight times the timeline must not need 1.25 times the memory).
fn flat(small: &Figures, large: &Figures, fat: &Figures) -> Result<f64> {
    let per_record = (large.rss_kib - small.rss_kib) as f64 * 1024.0 / (large.records - small.records) as f64;
    if per_record > MAX_BYTES_PER_RECORD {
        return Err(format!(
            "report's peak memory grew by {per_record:.0} bytes per record from {} to {} records (at most {MAX_BYTES_PER_RECORD})",
            small.records, large.records
        ));
    }
    if fat.rss_kib as f64 > 1.25 * small.rss_kib as f64 {
        return Err(format!(
            "report needed {:.1} MiB for {} records with 8× the timeline ({:.0} MB), {:.1} MiB for the same count ({:.0} MB): memory must not grow with the records' size",
            fat.rss_kib as f64 / 1024.0,
            fat.records,
            fat.mb,
            small.rss_kib as f64 / 1024.0,
            small.mb
        ));
    }
    Ok(per_record)
}

fn print_row(name: &str, f: &Figures) {
    println!(
        "{:>10} {:>9} {:>9.0} {:>11.2} {:>10.2} {:>12.0} {:>7.2}x {:>11.1} MiB {:>6}",
        name,
        f.records,
        f.mb,
        f.grep_s,
        f.report_s,
        f.mb / f.report_s,
        f.report_s / f.grep_s,
        f.rss_kib as f64 / 1024.0,
        f.rows
    );
}

pub fn run(args: &Args) -> Result<()> {
    let bin = binary("release")?;
    let dir = project_root().join("target/bench-report");
    fs::create_dir_all(&dir)?;
    println!(
        "{:>10} {:>9} {:>9} {:>11} {:>10} {:>12} {:>8} {:>15} {:>6}",
        "records", "count", "MB", "grep -c s", "report s", "report MB/s", "ratio", "report peak RSS", "rows"
    );
    let small = one_size(&bin, &dir, args.records / 10, false, args.keep)?;
    print_row("normal", &small);
    let fat = one_size(&bin, &dir, args.records / 10, true, args.keep)?;
    print_row("8× longer", &fat);
    let large = one_size(&bin, &dir, args.records, false, args.keep)?;
    print_row("normal", &large);
    let per_record = flat(&small, &large, &fat)?;
    println!("memory grows by {per_record:.0} bytes per record (at most {MAX_BYTES_PER_RECORD}), not with their size");
    Ok(())
}

/// The part `cargo xtask test` runs: 10,000 and 100,000 records (about 540 MB)
/// and 10,000 with 8× the timeline; memory as `flat` says, and the table
/// complete (200 hosts × 5 kernels × 6 workloads). Its speeds are a debug
/// build's: `cargo xtask bench-report` gives the figures.
pub fn check() -> Result<()> {
    let bin = binary("dev")?;
    let dir = project_root().join("target/bench-report");
    fs::create_dir_all(&dir)?;
    let small = one_size(&bin, &dir, 10_000, false, false)?;
    let fat = one_size(&bin, &dir, 10_000, true, false)?;
    let large = one_size(&bin, &dir, 100_000, false, false)?;
    let per_record = flat(&small, &large, &fat)?;
    // At these sizes the fixed part dominates: ten times the records, less than twice the memory.
    if large.rss_kib > 2 * small.rss_kib {
        return Err(format!(
            "report's peak memory went from {:.1} MiB to {:.1} MiB for ten times the records",
            small.rss_kib as f64 / 1024.0,
            large.rss_kib as f64 / 1024.0
        ));
    }
    if large.rows != (HOSTS * 5 * 6) as usize {
        return Err(format!("report made {} rows of 200 hosts × 5 kernels × 6 workloads", large.rows));
    }
    println!(
        "bench-report (a debug build: memory, not speed): {} records ({:.0} MB) in {:.1} s ({:.0} MB/s; grep -c {:.1} s), peak {:.1} MiB, {per_record:.0} bytes more per record; 8× longer records: {:.1} MiB vs {:.1} MiB",
        large.records,
        large.mb,
        large.report_s,
        large.mb / large.report_s,
        large.grep_s,
        large.rss_kib as f64 / 1024.0,
        fat.rss_kib as f64 / 1024.0,
        small.rss_kib as f64 / 1024.0
    );
    Ok(())
}
