//! PID 1: bootmark as `/init` on a bare kernel (2.6.9 to 6.x).
//!
//! One boot = bring-up → read `bootmark.*` from the kernel command line →
//! load modules → find the results stick and the target by label/UUID →
//! safety checks (and formatting only when confirmed) → run the plan →
//! records to the serial console and the stick → the run record (with
//! dmesg evidence) → power off. Every failure on the way, and any panic,
//! becomes a `bootmark.run/1` record with status "error", then power off.
//! This function never returns: PID 1 exiting panics the kernel.

pub mod bringup;
pub mod checked_sink;
pub mod cmdline;
pub mod devices;
pub mod format;
pub mod fsprobe;
pub mod klog;
pub mod modalias;
pub mod modules;
pub mod mount;
pub mod power;
pub mod safety;
pub mod sequence;
pub mod signatures;

use crate::measure::clock::{mono_ns, unix_s};
use crate::plan::Plan;
use crate::run::{self, Options};
use crate::sink::serial::Serial;
use crate::sink::stick::Stick;
use crate::sink::{BestEffort, Sink, Tee};
use cmdline::{After, Settings};
use devices::BlockDev;
use serde_json::json;
use std::path::Path;

const RESULTS_MOUNT: &str = "/results";
pub(crate) const TARGET_MOUNT: &str = "/mnt/target";
use crate::record::{RUN_SCHEMA, RunRecord, Status, Tool};

/// Should this process act as /init? Only as PID 1: an extracted `./init`
/// run by root on a workstation must not go looking for sticks to write.
pub fn is_init() -> bool {
    std::process::id() == 1
}

/// The facts of one boot, printed as the final `bootmark.run/1` record.
struct Boot {
    run_id: String,
    started_unix_s: f64,
    settings: Option<Settings>,
    facts: serde_json::Map<String, serde_json::Value>,
    records: u32,
    failed: u32,
    stick: Option<Stick>,
    /// Set by a sequence: reboot into the next step, or power off at the end.
    after: Option<After>,
}

pub fn main() -> ! {
    let mut boot = Boot {
        run_id: run::new_run_id(),
        started_unix_s: unix_s(),
        settings: None,
        facts: serde_json::Map::new(),
        records: 0,
        failed: 0,
        stick: None,
        after: None,
    };
    let mut serial: Option<Serial> = None;
    // Every phase is guarded: a panic anywhere becomes the error record, and
    // a panic while writing that record still ends in power-off.
    let outcome = guarded(|| start(&mut boot, &mut serial));
    let after = guarded(|| Ok(write_run_record(&mut boot, &mut serial, outcome))).unwrap_or(After::Poweroff);
    power::end_boot(after)
}

/// Run `phase`, turning a panic into an error.
fn guarded<T>(phase: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(phase))
        .unwrap_or_else(|panic| Err(format!("bootmark panicked: {}", panic_text(&panic))))
}

/// Bring-up, the command line and the plan (all checked before any disk is
/// touched), then the boot itself.
fn start(boot: &mut Boot, serial: &mut Option<Serial>) -> Result<(), String> {
    let bring = bringup::bring_up("ttyS0");
    boot.facts.insert("bringup".into(), json!(&bring));
    // BOOTMARK_CMDLINE stands in for /proc/cmdline in the fake boots (any bytes).
    let raw = match std::env::var_os("BOOTMARK_CMDLINE") {
        Some(line) => std::os::unix::ffi::OsStringExt::into_vec(line),
        None => crate::fsutil::read_capped("/proc/cmdline", 64 << 10).unwrap_or_default(),
    };
    let text = String::from_utf8_lossy(&raw).into_owned();
    boot.facts.insert("cmdline".into(), json!(text.trim()));
    let parsed = cmdline::from_bytes(&raw).and_then(|t| cmdline::parse(&t));
    let console_name = match &parsed {
        Ok(s) => s.console.clone(),
        Err(_) => cmdline::console_hint(&text).unwrap_or_else(|| "ttyS0".into()),
    };
    let mut report = bringup::Report::default();
    bringup::ensure_char_nodes(Path::new("/dev"), &console_name, &mut report);
    *serial = match Serial::open(Path::new("/dev"), &console_name) {
        Ok(s) => {
            if let Some(why) = &s.fallback {
                report.problems.push(format!("console not used ({why}); using /dev/console"));
            }
            boot.facts.insert("console".into(), json!({"asked": console_name, "fallback": s.fallback}));
            Some(s)
        }
        Err(e) => {
            report.problems.push(format!("no serial console: {e}"));
            None
        }
    };
    say(serial, &format!("bootmark {}: run {} starting as /init", env!("CARGO_PKG_VERSION"), boot.run_id));
    say(
        serial,
        &format!(
            "bootmark: bring-up: {}",
            bring.steps.iter().chain(&report.steps).cloned().collect::<Vec<_>>().join(", ")
        ),
    );
    for p in bring.problems.iter().chain(&report.problems) {
        say(serial, &format!("bootmark: bring-up problem: {p}"));
    }
    let settings = match parsed.and_then(|s| load_plan(&s).map(|plan| (s, plan))) {
        Ok(ok) => ok,
        Err(e) => {
            // The stick is the user's other place to look: try to record the
            // error there too, if the stick already holds a journal.
            load_modules(boot, serial);
            let spec = cmdline::results_hint(&text);
            if let Ok(d) = devices::wait_for(&spec, Path::new("/sys"), Path::new("/dev"), 10.0) {
                open_stick(&d, boot, serial, false);
            }
            return Err(format!("bad kernel command line: {e}"));
        }
    };
    boot.settings = Some(settings.0.clone());
    one_boot(&settings.0, settings.1, boot, serial)
}

/// The plan named on the command line, from the built-ins or the image's
/// /etc/bootmark/plans (a name, never a path), validated.
fn load_plan(settings: &Settings) -> Result<Plan, String> {
    let mut plan = Plan::load(&settings.plan).or_else(|e| {
        let file = format!("/etc/bootmark/plans/{}.json", settings.plan);
        if Path::new(&file).exists() { Plan::load(&file) } else { Err(e) }
    })?;
    if let Some(r) = settings.repeat {
        plan.repeat = r;
    }
    Ok(plan)
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A line for the person watching: on the serial port if it is open, else
/// stderr (/dev/console). Not both: they are usually the same wire.
pub(crate) fn say(serial: &mut Option<Serial>, text: &str) {
    let written = serial.as_mut().is_some_and(|s| s.line(text).is_ok());
    if !written {
        crate::note!("{text}");
    }
}

/// Everything between bring-up and power-off; any Err becomes the error record.
fn one_boot(settings: &Settings, plan: Plan, boot: &mut Boot, serial: &mut Option<Serial>) -> Result<(), String> {
    load_modules(boot, serial);

    let sys = Path::new("/sys");
    let dev = Path::new("/dev");
    // The results stick: optional (results also go to serial), but looked for first
    // so the target can be checked against it.
    let results = match devices::wait_for(&settings.results, sys, dev, settings.device_wait_s) {
        Ok(d) => Some(d),
        Err(e) => {
            say(serial, &format!("bootmark: no results stick ({e}); results go to the serial console only"));
            boot.facts.insert("results_error".into(), json!(e));
            None
        }
    };
    say(serial, &devices::summary_line(&devices::scan(sys, dev)));
    if let Some(r) = &results {
        open_stick(r, boot, serial, true);
    }
    let step = match sequence_step(settings, boot, serial)? {
        SequenceStep::Stop => return Ok(()),
        SequenceStep::Normal => None,
        SequenceStep::Run(seq, index, fs) => Some((seq, index, fs)),
    };
    let step_settings;
    let settings = match &step {
        Some((_, _, Some(fs))) => {
            if settings.format.is_none() {
                return Err(format!(
                    "sequence step wants the target formatted as {fs}, but formatting is not confirmed on the kernel command line (bootmark.format + bootmark.format-confirm)"
                ));
            }
            step_settings = Settings { format: Some(fs.clone()), ..settings.clone() };
            &step_settings
        }
        _ => settings,
    };
    let result = boot_target(settings, plan, boot, serial, results.as_ref());
    if let Some((mut seq, index, _)) = step {
        let root = Path::new(RESULTS_MOUNT);
        let next = seq.complete(index, result.is_ok() && boot.failed == 0);
        sequence::save(root, &seq)?;
        let entry = next.clone().unwrap_or_else(|| seq.restore_default.clone());
        crate::bootmenu::set_default(root, &entry)?;
        boot.after = Some(if next.is_some() { After::Reboot } else { After::Poweroff });
        say(
            serial,
            &format!(
                "bootmark: sequence step {} of {} {}; next: {}",
                index + 1,
                seq.steps.len(),
                if result.is_ok() { "done" } else { "failed" },
                next.as_deref().unwrap_or("none, powering off")
            ),
        );
        boot.facts.insert("sequence".into(), json!({"step": index, "of": seq.steps.len(), "states": seq.states}));
    }
    result
}

fn load_modules(boot: &mut Boot, serial: &mut Option<Serial>) {
    if boot.facts.contains_key("modules") {
        return;
    }
    let report = modules::load_for_machine(Path::new(modules::SET), Path::new("/sys"));
    say(serial, &report.summary_line());
    boot.facts.insert("modules".into(), json!(report));
}

/// Load the modules of filesystem `fs` before it is mounted (once per
/// filesystem), recorded under the `modules` fact.
fn load_filesystem(boot: &mut Boot, serial: &mut Option<Serial>, fs: &str) {
    let Some(facts) = boot.facts.get_mut("modules").and_then(|m| m.as_object_mut()) else { return };
    let loads = facts.entry("filesystems").or_insert_with(|| json!({}));
    if loads.get(fs).is_some() {
        return;
    }
    let r = modules::load_filesystem(Path::new(modules::SET), fs);
    if !r.outcome.loaded.is_empty() || !r.outcome.failed.is_empty() {
        let failed: Vec<String> = r.outcome.failed.iter().map(|(m, e)| format!("{m} ({e})")).collect();
        let failed = if failed.is_empty() { String::new() } else { format!(", failed: {}", failed.join(", ")) };
        say(serial, &format!("bootmark: {fs}: {} modules loaded in {} ms{failed}", r.outcome.loaded.len(), r.ms));
    }
    loads[fs] = json!(r);
}

/// Where a sequence on the stick puts this boot.
enum SequenceStep {
    Normal,
    /// Nothing to run in this boot (wrong kernel, or a step given up on).
    Stop,
    Run(sequence::Sequence, usize, Option<String>),
}

fn sequence_step(settings: &Settings, boot: &mut Boot, serial: &mut Option<Serial>) -> Result<SequenceStep, String> {
    let root = Path::new(RESULTS_MOUNT);
    if boot.stick.is_none() {
        return Ok(SequenceStep::Normal);
    }
    let Some(mut seq) = sequence::load(root)? else { return Ok(SequenceStep::Normal) };
    let decision = seq.decide(settings.entry.as_deref());
    sequence::save(root, &seq)?;
    let facts = json!({"decision": format!("{decision:?}"), "states": seq.states});
    boot.facts.insert("sequence".into(), facts);
    match decision {
        sequence::Decision::Normal => Ok(SequenceStep::Normal),
        sequence::Decision::Run { index, fs } => {
            say(serial, &format!("bootmark: sequence step {} of {}", index + 1, seq.steps.len()));
            Ok(SequenceStep::Run(seq, index, fs))
        }
        sequence::Decision::Reboot { entry, failed } => {
            say_failed_step(serial, failed);
            say(serial, &format!("bootmark: sequence: rebooting into {entry}"));
            crate::bootmenu::set_default(root, &entry)?;
            boot.after = Some(After::Reboot);
            Ok(SequenceStep::Stop)
        }
        sequence::Decision::Finish { failed } => {
            say_failed_step(serial, failed);
            crate::bootmenu::set_default(root, &seq.restore_default)?;
            boot.after = Some(After::Poweroff);
            Ok(SequenceStep::Stop)
        }
    }
}

fn say_failed_step(serial: &mut Option<Serial>, failed: Option<usize>) {
    if let Some(f) = failed {
        say(
            serial,
            &format!("bootmark: sequence step {} did not finish in its boot (crash or hang): marked failed", f + 1),
        );
    }
}

/// The target part of a boot: find it, check it, maybe format it, run the plan.
fn boot_target(
    settings: &Settings,
    plan: Plan,
    boot: &mut Boot,
    serial: &mut Option<Serial>,
    results: Option<&BlockDev>,
) -> Result<(), String> {
    let sys = Path::new("/sys");
    let dev = Path::new("/dev");
    let all = devices::scan(sys, dev);
    boot.facts.insert("devices".into(), json!(all.iter().map(device_facts).collect::<Vec<_>>()));

    let Some(spec) = &settings.target else {
        return Err(format!(
            "no target given, so nothing was run. Add bootmark.target=LABEL=… (or UUID=, PARTUUID=, /dev/…) to the kernel command line, naming a partition bootmark may write to. Disks seen: {}",
            devices::inventory(&all)
        ));
    };
    let mut target = devices::wait_for(spec, sys, dev, settings.device_wait_s)?;
    safety::check_target(&target, results, &all)?;
    let mut mkfs = None;
    if let Some(fs) = &settings.format {
        // The format check mounts what is there now, then the new filesystem is mounted.
        if let Some(existing) = &target.fs {
            load_filesystem(boot, serial, &existing.fs);
        }
        load_filesystem(boot, serial, fs);
        mkfs = Some(format::format_target(&target, fs, serial)?);
        target = devices::wait_for(spec, sys, dev, settings.device_wait_s)?;
    }
    let fs = target.fs.as_ref().map(|f| f.fs.clone()).ok_or_else(|| {
        format!("the target {} has no filesystem bootmark recognises; format it (bootmark.format=ext3 with bootmark.format-confirm={spec})", target.name)
    })?;
    load_filesystem(boot, serial, &fs);
    mount::mount_dev(&target.node, Path::new(TARGET_MOUNT), &fs, &settings.mount_options)?;
    boot.facts.insert("target".into(), json!({"spec": spec.to_string(), "device": device_facts(&target), "mount_options": settings.mount_options, "formatted": settings.format.is_some(), "mkfs": mkfs}));
    let result = run_plan(settings, plan, boot, serial);
    let _ = mount::unmount(Path::new(TARGET_MOUNT));
    result
}

fn device_facts(d: &BlockDev) -> serde_json::Value {
    json!({"name": d.name, "disk": d.disk, "size_bytes": d.size_bytes, "removable": d.removable,
           "fs": d.fs.as_ref().map(|f| &f.fs), "label": d.fs.as_ref().and_then(|f| f.label.as_ref()),
           "uuid": d.fs.as_ref().and_then(|f| f.uuid.as_ref()), "partuuid": d.partuuid})
}

/// Mount the results stick and open its journal. `may_create`: make a
/// journal if the stick has none (never on the error path of a bad command
/// line, whose stick spec is only a guess).
fn open_stick(results: &BlockDev, boot: &mut Boot, serial: &mut Option<Serial>, may_create: bool) {
    let fs = results.fs.as_ref().map(|f| f.fs.clone()).unwrap_or_else(|| "vfat".into());
    let root = Path::new(RESULTS_MOUNT);
    load_filesystem(boot, serial, &fs);
    // noatime: reading the journal's header must not rewrite a directory entry.
    let opened = mount::mount_dev(&results.node, root, &fs, "noatime").and_then(|()| {
        if !may_create && !root.join(crate::journal::PATH).exists() {
            return Err(format!("no {} on it", crate::journal::PATH));
        }
        Stick::open(root, &results.node, results.size_bytes).map_err(|e| e.to_string())
    });
    match opened {
        Ok(stick) => {
            let (at, of) = stick.position();
            say(
                serial,
                &format!(
                    "bootmark: results stick {} → {} ({} earlier entries, appending at block {at} of {of}{})",
                    results.name,
                    crate::journal::PATH,
                    stick.found_entries,
                    if stick.created { "; journal created" } else { "" }
                ),
            );
            boot.facts.insert(
                "results".into(),
                json!({"device": results.name, "journal_block": at, "journal_blocks": of,
                       "earlier_entries": stick.found_entries, "stray_blocks": stick.found_stray_blocks,
                       "journal_created": stick.created}),
            );
            boot.stick = Some(stick);
        }
        Err(e) => {
            let _ = mount::unmount(root);
            say(
                serial,
                &format!(
                    "bootmark: results stick {} unusable ({e}); results go to the serial console only",
                    results.name
                ),
            );
            boot.facts.insert("results_error".into(), json!(e));
        }
    }
}

fn run_plan(settings: &Settings, plan: Plan, boot: &mut Boot, serial: &mut Option<Serial>) -> Result<(), String> {
    let dir = Path::new(TARGET_MOUNT);
    // Run directories left by a boot that was reset: removed only if they carry our marker.
    for left in run::remove_leftovers(dir) {
        say(serial, &format!("bootmark: removed {left}, left on the target by an earlier boot that did not finish"));
    }
    let opts = Options {
        plan,
        dir: dir.to_path_buf(),
        keep: false,
        // The serial sink prints each record's summary line; heartbeats still go to the console.
        verbose: false,
        deadline_ns: Some(mono_ns().saturating_add((settings.timeout_s * 1e9) as u64)),
        run_id: Some(boot.run_id.clone()),
    };
    let mut serial_sink = serial.take();
    let (result, stick_failed, written, not_ok) = {
        let mut sinks: Vec<&mut dyn Sink> = Vec::new();
        // The stick first: a record is on the stick, flushed, before it is
        // printed, so whatever serial shows survives a reset.
        // A full or read-only stick must not stop the run: serial still gets everything.
        let mut stick = boot.stick.as_mut().map(|s| BestEffort { inner: s, name: "results stick", failed: None });
        if let Some(s) = stick.as_mut() {
            sinks.push(s);
        }
        if let Some(s) = serial_sink.as_mut() {
            sinks.push(s);
        }
        let mut tee = Tee { sinks };
        let mut checked = checked_sink::CheckedSink::new(&mut tee);
        let r = run::run(&opts, &mut checked);
        let (written, not_ok) = (checked.written, checked.not_ok);
        (r, stick.and_then(|s| s.failed), written, not_ok)
    };
    *serial = serial_sink;
    if let Some(e) = stick_failed {
        boot.facts.insert("results_error".into(), json!(e));
    }
    boot.records = written;
    boot.failed = not_ok;
    result.map(|_| ()).map_err(|e| e.to_string())
}

/// PID 1 inherits every orphan: collect the ones that ended (workers killed
/// by a watchdog leave their children behind).
fn reap_orphans() -> usize {
    let mut n = 0;
    // SAFETY: waitpid with WNOHANG on any child; no memory is touched.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {
        n += 1;
    }
    n
}

/// The last document of every boot, on the stick and then on serial.
/// Returns what to do next.
fn write_run_record(boot: &mut Boot, serial: &mut Option<Serial>, outcome: Result<(), String>) -> After {
    let reaped = reap_orphans();
    if reaped > 0 {
        boot.facts.insert("orphans_reaped".into(), json!(reaped));
    }
    if let Some(stick) = boot.stick.as_ref()
        && let Some(r) = boot.facts.get_mut("results").and_then(|r| r.as_object_mut())
    {
        // What writing the records to the stick cost (write + flush each).
        r.insert("appended".into(), json!(stick.appended));
        r.insert("append_s".into(), json!(stick.append_ns as f64 / 1e9));
    }
    let klog = klog::summarize(&klog::read(), 200);
    let after = boot.after.or(boot.settings.as_ref().map(|s| s.after)).unwrap_or(After::Poweroff);
    let doc = RunRecord {
        schema: RUN_SCHEMA.into(),
        run_id: boot.run_id.clone(),
        seq: boot.records,
        status: if outcome.is_ok() { Status::Ok } else { Status::Error },
        error: outcome.as_ref().err().cloned(),
        started_unix_s: boot.started_unix_s,
        finished_unix_s: unix_s(),
        bootmark: Tool { version: env!("CARGO_PKG_VERSION").into() },
        kernel: crate::measure::evidence::kernel(),
        host: crate::measure::evidence::host(),
        records: boot.records,
        failed_records: boot.failed,
        facts: std::mem::take(&mut boot.facts),
        kernel_log: klog,
    };
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    if let Err(e) = &outcome {
        say(serial, &format!("bootmark: ERROR: {e}"));
    }
    if let Some(stick) = boot.stick.as_mut()
        && let Err(e) = stick.append(&boot.run_id, boot.records, &bytes)
    {
        say(serial, &format!("bootmark: could not write the run record to the stick: {e}"));
    }
    if let Some(s) = serial.as_mut() {
        let _ = s.framed(&boot.run_id, boot.records, &bytes);
    }
    if boot.stick.take().is_some() {
        let _ = mount::unmount(Path::new(RESULTS_MOUNT));
    }
    say(
        serial,
        &format!("bootmark: run {} done ({} records, {} not ok); {after:?}", boot.run_id, boot.records, boot.failed),
    );
    after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pid_1_acts_as_init() {
        // A test process is never PID 1, whatever its name: an extracted
        // ./init run on a workstation must not go looking for sticks.
        assert!(!is_init());
    }

    #[test]
    fn a_panic_in_any_phase_becomes_an_error() {
        let r: Result<(), String> = guarded(|| panic!("boom at bring-up"));
        assert_eq!(r.unwrap_err(), "bootmark panicked: boom at bring-up");
        assert_eq!(guarded(|| Ok::<_, String>(7)), Ok(7));
    }
}
