//! Running a plan: checks before anything is written, one run directory
//! for everything created, each workload observed (see `watch`), one record
//! per workload run handed to the sink, and the run directory removed at the end.

pub mod observe;

use crate::image_side::measure::clock::{mono_ns, secs, unix_s};
use crate::image_side::measure::evidence::{self, Evidence};
use crate::image_side::measure::histogram::Histogram;
use crate::image_side::measure::progress::Progress;
use crate::image_side::plan::Plan;
use crate::image_side::process;
use crate::image_side::sink::Sink;
use crate::image_side::variant::{self, Variant};
use crate::image_side::workload::{Context, WorkloadSpec};
use crate::schema::record::{self, Counters, Latency, PlanRef, Record, Status, Times, Tool, WorkloadRef};
use crate::schema::variant::Applied;
use crate::{fsutil, interrupt, size};
use std::path::{Path, PathBuf};

/// Unmount the target, flush its block device's buffers and mount it again
/// with the boot's options plus the given ones; returns the options used.
/// Only /init, which mounted the target itself, can do this.
pub type Remount = Box<dyn Fn(&str) -> Result<String, String>>;

pub struct Options {
    pub plan: Plan,
    pub dir: PathBuf,
    /// Keep the run directory and the workloads' files afterwards.
    pub keep: bool,
    /// Print a line per workload on stderr.
    pub verbose: bool,
    /// Whole-run watchdog (CLOCK_MONOTONIC ns): no workload runs past it.
    pub deadline_ns: Option<u64>,
    /// Use this run id instead of a new one (/init names the run at boot).
    pub run_id: Option<String>,
    /// Between a sweep's variants: the target remounted (a cold page cache on
    /// every kernel, and a variant's mount options). None: never remount.
    pub remount: Option<Remount>,
    /// Take a blocked-task dump (SysRq-W) when the probe goes silent over a
    /// second: only where bootmark owns the machine (the boot image).
    pub dump_blocked_tasks: bool,
    /// Read the kernel's tracepoints over each workload (machine-wide: the
    /// boot image, or `bootmark run --kernel-events`).
    pub kernel_events: crate::image_side::measure::tracing::Events,
    /// Run the plan's programs confined (confine.rs): only in the boot
    /// image, where the machine's other disks are not the plan's.
    pub confine_programs: bool,
    /// What the boot image cost the server (/init measures it before the
    /// plan), carried by every record; None elsewhere.
    pub footprint: Option<crate::schema::measures::Footprint>,
}

/// How a run ended, for the exit code.
#[derive(Debug, PartialEq)]
pub struct RunOutcome {
    pub run_id: String,
    pub records: u32,
    pub failed: u32,
    /// Variants of a sweep none of whose settings this kernel has: name → why.
    pub skipped_variants: Vec<(String, String)>,
}

#[derive(Debug)]
pub enum RunError {
    /// Nothing was run: the inputs are wrong. The text says what to do.
    Refused(String),
    /// Ctrl-C / SIGTERM: children stopped, files removed.
    Interrupted,
    /// The sink could not take a record.
    Sink(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Refused(s) => f.write_str(s),
            RunError::Interrupted => f.write_str("interrupted: stopped the workload and removed its files"),
            RunError::Sink(s) => write!(f, "cannot write the results: {s}"),
        }
    }
}

/// Check the target directory and free space (and, for a sweep, that the
/// settings can be changed); nothing is written.
pub fn preflight(plan: &Plan, dir: &Path, mem_total: u64) -> Result<(), RunError> {
    if !plan.variants.is_empty() && !nix::unistd::geteuid().is_root() {
        return Err(RunError::Refused(format!(
            "plan '{}' is a sweep: its variants change /proc/sys/vm and the disk's queue settings, which needs root; run it as root (the settings found are put back at the end)",
            plan.name
        )));
    }
    let meta = std::fs::metadata(dir).map_err(|e| {
        RunError::Refused(format!("--dir {}: {e}; give an existing directory on the filesystem to test", dir.display()))
    })?;
    if !meta.is_dir() {
        return Err(RunError::Refused(format!("--dir {} is not a directory", dir.display())));
    }
    if nix::sys::statvfs::statvfs(dir).is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY)) {
        return Err(RunError::Refused(format!(
            "--dir {} is on a read-only filesystem; it must be writable",
            dir.display()
        )));
    }
    let needed = plan.space_needed(mem_total);
    let free = fsutil::free_bytes(dir)
        .map_err(|e| RunError::Refused(format!("cannot read free space of {}: {e}", dir.display())))?;
    if free < needed {
        return Err(RunError::Refused(format!(
            "not enough free space in {}: plan '{}' needs {}, {} is available; free some space or choose a smaller plan (e.g. --plan quick)",
            dir.display(),
            plan.name,
            size::human(needed),
            size::human(free)
        )));
    }
    Ok(())
}

/// A run id readable by people and unique per run: UTC date-time plus 4 hex digits.
pub fn new_run_id() -> String {
    let now = unix_s();
    let secs_total = now as i64;
    let (days, rem) = (secs_total.div_euclid(86_400), secs_total.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let salt = (mono_ns() ^ ((std::process::id() as u64) << 16)) & 0xffff;
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}-{salt:04x}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Days since 1970-01-01 to (year, month, day) — Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Let one process hold the plan's files open at once (manyfiles opens 1000).
fn raise_open_file_limit() {
    // SAFETY: plain get/set of our own limit.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The file inside every run directory that says it is bootmark's: only a
/// `bootmark-*` directory holding it is ever removed as a leftover.
pub const RUN_MARKER: &str = ".bootmark-run";

/// Remove run directories under `dir` that a run which never finished (a
/// reset, a crash) left behind; returns their names. Anything else named
/// `bootmark-*` is left alone.
pub fn remove_leftovers(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if name.starts_with("bootmark-") && path.join(RUN_MARKER).is_file() && fsutil::remove_tree(&path).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// Run the plan; each record goes to `sink` as soon as its workload ends.
pub fn run(opts: &Options, sink: &mut dyn Sink) -> Result<RunOutcome, RunError> {
    let mem_total = evidence::mem_total_bytes();
    preflight(&opts.plan, &opts.dir, mem_total)?;
    raise_open_file_limit();
    interrupt::install();
    let run_id = opts.run_id.clone().unwrap_or_else(new_run_id);
    let run_dir = opts.dir.join(format!("bootmark-{run_id}"));
    std::fs::create_dir(&run_dir).map_err(|e| {
        RunError::Refused(format!("cannot create {} ({e}); is --dir writable by you?", run_dir.display()))
    })?;
    if let Err(e) = std::fs::write(run_dir.join(RUN_MARKER), b"made by bootmark; removed at the end of the run\n") {
        let _ = fsutil::remove_tree(&run_dir);
        return Err(RunError::Refused(format!("cannot write in {} ({e})", run_dir.display())));
    }
    // A sweep changes kernel settings: remember them now, put them back
    // whatever happens to the run.
    let knobs = variant::Knobs::for_disk(evidence::storage(&opts.dir).device.as_ref().map(|d| d.disk.as_str()));
    let original = variant::remember(&knobs, &opts.plan.variants);
    let result = run_in(opts, sink, &run_id, &run_dir, mem_total, (&knobs, &original));
    for failed in variant::restore(&knobs, &original) {
        crate::note!("bootmark: could not restore {failed}");
    }
    if !opts.keep {
        if let Err(e) = fsutil::remove_tree(&run_dir) {
            crate::note!("bootmark: could not remove {}: {e}", run_dir.display());
        }
    } else if opts.verbose {
        crate::note!("bootmark: kept the run's files in {}", run_dir.display());
    }
    result
}

/// What every workload run of one plan run shares.
struct Runner<'a> {
    opts: &'a Options,
    run_id: &'a str,
    run_dir: &'a Path,
    /// Gathered once, read again when a variant changes the settings.
    evidence: Evidence,
    progress: Progress,
    probe_dir: Option<PathBuf>,
    mem_total: u64,
    /// Workload runs in the whole plan (for "[3/12]" labels).
    total: u32,
    outcome: RunOutcome,
}

fn run_in(
    opts: &Options,
    sink: &mut dyn Sink,
    run_id: &str,
    run_dir: &Path,
    mem_total: u64,
    (knobs, original): (&variant::Knobs, &variant::Original),
) -> Result<RunOutcome, RunError> {
    let plan = &opts.plan;
    let probe_dir = run_dir.join("probe");
    let probe_dir = if plan.probe.enabled {
        crate::image_side::measure::probe::prepare(&probe_dir).map_err(|e| {
            RunError::Refused(format!("cannot create the probe's files in {}: {e}", probe_dir.display()))
        })?;
        Some(probe_dir)
    } else {
        None
    };
    // No variants: one pass under the settings as found.
    let variants: Vec<Option<&Variant>> =
        if plan.variants.is_empty() { vec![None] } else { plan.variants.iter().map(Some).collect() };
    let mut runner = Runner {
        opts,
        run_id,
        run_dir,
        evidence: evidence::gather(&opts.dir),
        progress: Progress::new().map_err(|e| RunError::Refused(format!("cannot map shared memory: {e}")))?,
        probe_dir,
        mem_total,
        total: plan.repeat * (variants.len() * plan.workloads.len()) as u32,
        outcome: RunOutcome { run_id: run_id.to_string(), records: 0, failed: 0, skipped_variants: Vec::new() },
    };
    if opts.verbose {
        crate::note!(
            "bootmark: run {run_id}, plan '{}' ({} workload runs) in {} [{}]",
            plan.name,
            runner.total,
            opts.dir.display(),
            runner.evidence.storage.fs.as_deref().unwrap_or("unknown fs")
        );
    }
    let mut seq = 0u32;
    for repetition in 0..plan.repeat {
        // A same-boot comparison turns the order every other repetition (A B, B A…).
        let order: Vec<Option<&Variant>> = match plan.alternate && repetition % 2 == 1 {
            true => variants.iter().rev().copied().collect(),
            false => variants.clone(),
        };
        for variant in &order {
            let applied = variant.map(|v| runner.start_variant(knobs, original, v));
            if let Some(a) = applied.as_ref().filter(|a| a.not_applied.contains_key(variant::NOT_RESTORED)) {
                // Each of its runs an error record that names the setting: owed, not measured.
                for spec in &plan.workloads {
                    runner.refuse_one(sink, RunStep { seq, repetition, spec, variant: Some(a) })?;
                    seq += 1;
                }
                continue;
            }
            if let Some(a) = applied.as_ref().filter(|a| a.nothing_applied()) {
                runner.skip_variant(a, repetition);
                continue;
            }
            for spec in &plan.workloads {
                runner.run_one(sink, RunStep { seq, repetition, spec, variant: applied.as_ref() })?;
                seq += 1;
            }
        }
    }
    Ok(runner.outcome)
}

/// One workload run's place in the plan.
#[derive(Clone, Copy)]
struct RunStep<'a> {
    seq: u32,
    repetition: u32,
    spec: &'a WorkloadSpec,
    variant: Option<&'a Applied>,
}

impl Runner<'_> {
    /// Switch to `variant`: apply it, start cold (sync, drop caches where the
    /// kernel can), and read the evidence again (the vm sysctls and the
    /// scheduler are what the records must show).
    fn start_variant(&mut self, knobs: &variant::Knobs, original: &variant::Original, variant: &Variant) -> Applied {
        // Each variant is the settings as found plus its own changes, not
        // whatever the previous variant left.
        for failed in variant::restore(knobs, original) {
            crate::note!("bootmark: could not restore {failed} before variant {}", variant.name);
        }
        // Read back: what the kernel shows now must be what the run found.
        let wrong = variant::not_as_found(knobs, original);
        if !wrong.is_empty() {
            crate::note!("bootmark: variant {} not run: {}", variant.name, wrong.join("; "));
            self.evidence.vm = evidence::vm();
            self.evidence.storage = evidence::storage(&self.opts.dir);
            return variant::refused(variant, &wrong);
        }
        let mut applied = variant::apply(knobs, variant);
        nix::unistd::sync();
        self.remount_for(variant, &mut applied);
        // drop_caches came in 2.6.16; before it only the remount (in the boot
        // image) leaves the target's pages cold.
        if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", "3")
            && self.opts.remount.is_none()
        {
            let why = format!("cannot drop caches ({e}): this variant starts with warm caches");
            applied.not_applied.insert("cold start".into(), why);
        }
        self.evidence.vm = evidence::vm();
        self.evidence.storage = evidence::storage(&self.opts.dir);
        if self.opts.verbose {
            let missing =
                if applied.fully() { String::new() } else { format!(" (not applied: {:?})", applied.not_applied) };
            crate::note!("bootmark: variant {}: {:?}{missing}", variant.name, applied.asked);
        }
        applied
    }

    /// Remount the target for `variant` (its mount options, and cold pages),
    /// where the caller can; read the options back from /proc/mounts.
    fn remount_for(&self, variant: &Variant, applied: &mut Applied) {
        let key = "mount.options".to_string();
        let wanted = variant.mount_options.as_str();
        let Some(remount) = &self.opts.remount else {
            if !wanted.is_empty() {
                let why = "only the boot image, which mounts the target itself, changes mount options; bootmark run never remounts your filesystem";
                applied.asked.insert(key.clone(), wanted.into());
                applied.read_back.insert(key.clone(), evidence::storage(&self.opts.dir).mount_options);
                applied.not_applied.insert(key, why.into());
            }
            return;
        };
        let result = remount(wanted);
        let shown = evidence::storage(&self.opts.dir).mount_options;
        if let Err(e) = &result {
            applied.not_applied.insert("cold start".into(), format!("remounting the target failed: {e}"));
        }
        if wanted.is_empty() {
            return;
        }
        applied.asked.insert(key.clone(), wanted.into());
        applied.read_back.insert(key.clone(), shown.clone());
        let in_effect = |o: &str| shown.as_deref().is_some_and(|s| s.split(',').any(|x| x == o));
        match result {
            Err(e) => {
                applied.not_applied.insert(key, e);
            }
            Ok(_) if !wanted.split(',').all(in_effect) => {
                let why = format!("mounted, but /proc/mounts shows {}", shown.as_deref().unwrap_or("nothing"));
                applied.not_applied.insert(key, why);
            }
            Ok(_) => {}
        }
    }

    /// Say once why a variant is not run (its settings are not in this kernel).
    fn skip_variant(&mut self, applied: &Applied, repetition: u32) {
        if repetition == 0 {
            let why: Vec<String> = applied.not_applied.iter().map(|(k, w)| format!("{k}: {w}")).collect();
            crate::note!("bootmark: variant {} skipped: {}", applied.name, why.join("; "));
            self.outcome.skipped_variants.push((applied.name.clone(), why.join("; ")));
        }
    }

    /// The error record of a run not made: its variant's settings could not
    /// be set up (`step.variant`'s `not_applied` says why). It carries the
    /// settings in force, as read now, like every record.
    fn refuse_one(&mut self, sink: &mut dyn Sink, step: RunStep) -> Result<(), RunError> {
        let mut rec = Record::blank(self.run_id, step.seq);
        let why = step.variant.and_then(|a| a.not_applied.get(variant::NOT_RESTORED)).cloned();
        rec.repetition = step.repetition;
        rec.status = Status::Error;
        rec.error = why;
        rec.started_unix_s = unix_s();
        rec.plan.name = self.opts.plan.name.clone();
        rec.workload = WorkloadRef { name: step.spec.name().into(), params: step.spec.params_json() };
        rec.variant = step.variant.cloned();
        rec.kernel = self.evidence.kernel.clone();
        rec.host = self.evidence.host.clone();
        rec.storage = self.evidence.storage.clone();
        rec.vm = self.evidence.vm.clone();
        rec.footprint = self.opts.footprint.clone();
        self.outcome.records += 1;
        self.outcome.failed += 1;
        sink.write(&rec).map_err(|e| RunError::Sink(e.to_string()))
    }

    /// Run one workload under the watchdogs and hand its record to `sink`.
    fn run_one(&mut self, sink: &mut dyn Sink, step: RunStep) -> Result<(), RunError> {
        let (opts, plan, total) = (self.opts, &self.opts.plan, self.total);
        let (seq, spec) = (step.seq, step.spec);
        let work_dir = self.run_dir.join(format!("w{seq:03}-{}", spec.name()));
        std::fs::create_dir(&work_dir)
            .map_err(|e| RunError::Refused(format!("cannot create {}: {e}", work_dir.display())))?;
        let left = opts.deadline_ns.map(|d| d.saturating_sub(mono_ns()));
        if left == Some(0) {
            return Err(RunError::Refused(format!(
                "the whole-run timeout passed after {} of {total} workload runs",
                self.outcome.records
            )));
        }
        let setup = observe::Setup {
            spec,
            label: format!("[{}/{}] {}", seq + 1, total, spec.name()),
            context: Context {
                dir: work_dir.clone(),
                shared_dir: self.run_dir.to_path_buf(),
                progress: &self.progress,
                mem_total: self.mem_total,
                keep: opts.keep,
                deadline_ns: None, // set by observe when the worker starts
                confine_programs: opts.confine_programs,
            },
            probe_dir: self.probe_dir.clone(),
            probe_interval_ns: plan.probe.interval_ms * 1_000_000,
            baseline_ns: (plan.probe.baseline_s * 1e9) as u64,
            recovery_deadline_ns: (plan.probe.recovery_deadline_s * 1e9) as u64,
            sample_interval_ns: plan.sample_interval_ms * 1_000_000,
            deadline_ns: ((plan.workload_deadline_s * 1e9) as u64).min(left.unwrap_or(u64::MAX)),
            device: self.evidence.storage.device.as_ref().map(|d| d.name.clone()),
            dump_blocked: opts.dump_blocked_tasks,
            kernel_events: opts.kernel_events,
        };
        let started_unix_s = unix_s();
        let observed = observe::observe(setup).map_err(|_| RunError::Interrupted)?;
        if !opts.keep {
            let _ = fsutil::remove_tree(&work_dir);
        }
        let footprint = self.opts.footprint.as_ref();
        let rec = build_record(self.run_id, &step, started_unix_s, plan, &self.evidence, observed, footprint);
        if opts.verbose {
            crate::note!("[{}/{}] {}", seq + 1, total, rec.summary_line());
        }
        self.outcome.records += 1;
        if rec.status != Status::Ok {
            self.outcome.failed += 1;
        }
        sink.write(&rec).map_err(|e| RunError::Sink(e.to_string()))?;
        if interrupt::interrupted() {
            return Err(RunError::Interrupted);
        }
        Ok(())
    }
}

fn build_record(
    run_id: &str,
    step: &RunStep,
    started_unix_s: f64,
    plan: &Plan,
    evidence: &Evidence,
    observed: observe::Observed,
    opts_footprint: Option<&crate::schema::measures::Footprint>,
) -> Record {
    let RunStep { seq, repetition, spec, variant } = *step;
    let (user_s, sys_s) = observed.exit.map(|e| process::cpu_seconds(&e.usage)).unwrap_or((0.0, 0.0));
    let usage = observed.exit.map(|e| e.usage);
    let mut notes = observed.notes;
    let (status, error, times, written, read, latency, details) = match observed.outcome {
        Ok(o) => {
            notes.extend(o.notes);
            let (status, error) = match o.failed {
                None => (Status::Ok, None),
                Some(f) if f.timed_out => (Status::Timeout, Some(f.message)),
                Some(f) => (Status::Error, Some(f.message)),
            };
            let times = Times {
                wall_s: o.times.wall_s,
                user_s,
                sys_s,
                writes_returned_s: o.times.writes_returned_s,
                closed_s: o.times.closed_s,
                durable_s: o.times.durable_s,
            };
            let latency = Latency {
                write: Histogram::from_sparse(&o.write_latency).summary(),
                read: Histogram::from_sparse(&o.read_latency).summary(),
            };
            (status, error, times, o.bytes_written, o.bytes_read, latency, o.details)
        }
        Err(e) => {
            let status = if observed.timed_out { Status::Timeout } else { Status::Error };
            let wall_s = secs(observed.end_ns.saturating_sub(observed.start_ns));
            let times = Times { wall_s, user_s, sys_s, ..Times::default() };
            (
                status,
                Some(e),
                times,
                observed.progress_written,
                observed.progress_read,
                Latency::default(),
                serde_json::Value::Null,
            )
        }
    };
    let counters = Counters {
        voluntary_switches: usage.map(|u| u.ru_nvcsw as u64).unwrap_or(0),
        involuntary_switches: usage.map(|u| u.ru_nivcsw as u64).unwrap_or(0),
        minor_faults: usage.map(|u| u.ru_minflt as u64).unwrap_or(0),
        major_faults: usage.map(|u| u.ru_majflt as u64).unwrap_or(0),
        vmstat_delta: observed.deltas.vmstat.clone(),
        disk_delta: observed.deltas.disk.clone(),
    };
    Record {
        schema: record::SCHEMA.into(),
        run_id: run_id.into(),
        seq,
        repetition,
        status,
        error,
        started_unix_s,
        bootmark: Tool { version: env!("CARGO_PKG_VERSION").into() },
        plan: PlanRef { name: plan.name.clone() },
        workload: WorkloadRef { name: spec.name().into(), params: spec.params_json() },
        variant: variant.cloned(),
        kernel: evidence.kernel.clone(),
        host: evidence.host.clone(),
        storage: evidence.storage.clone(),
        vm: evidence.vm.clone(),
        throughput_mib_s: record::mib_per_s(written + read, times.wall_s),
        times,
        bytes_written: written,
        bytes_read: read,
        latency,
        responsiveness: observed.responsiveness,
        counters,
        timeline: observed.timeline,
        blocked_tasks: observed.blocked_tasks,
        kernel_events: observed.kernel_events,
        sources: observed.sources,
        footprint: opts_footprint.cloned(),
        details,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
    }

    #[test]
    fn run_ids_look_like_dates() {
        let id = new_run_id();
        assert_eq!(id.len(), "20261130-000232-abcd".len(), "{id}");
        assert!(id.starts_with("20"));
    }
}
