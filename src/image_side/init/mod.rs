//! PID 1: bootmark as `/init` on a bare kernel (2.6.9 to 6.x).
//!
//! One boot = bring-up → read `bootmark.*` from the kernel command line →
//! load modules → find the results stick and the target by label/UUID →
//! safety checks (and formatting only when confirmed) → run the plan →
//! records to the serial console and the stick → the run record (with
//! dmesg evidence) → power off. Every failure on the way, and any panic,
//! becomes a `bootmark.run/1` record with status "error", then power off.
//! This function never returns: PID 1 exiting panics the kernel.

pub mod assembly;
pub mod bringup;
pub mod checked_sink;
pub mod cmdline;
pub mod devices;
pub mod format;
pub mod fsprobe;
pub mod modalias;
pub mod modules;
pub mod mount;
pub mod power;
mod results_stick;
mod run_record;
pub mod safety;
pub mod sequence;
pub mod signatures;
mod target;

use crate::image_side::measure::clock::unix_s;
use crate::image_side::plan::Plan;
use crate::image_side::run;
use crate::image_side::sink::serial::Serial;
use crate::image_side::sink::stick::Stick;
use cmdline::{After, Settings};
use serde_json::json;
use std::path::Path;

/// Where the results stick is mounted (hidden from the plan's programs: confine.rs).
const RESULTS_MOUNT: &str = crate::image_side::confine::STICK_MOUNT;
pub(crate) const TARGET_MOUNT: &str = "/mnt/target";

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
    let after =
        guarded(|| Ok(run_record::write_run_record(&mut boot, &mut serial, outcome))).unwrap_or(After::Poweroff);
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
    // A line an old kernel cut may still parse, with a value cut short.
    let parsed = cmdline::from_bytes(&raw).and_then(|t| match cmdline::cut_by_the_kernel(&t) {
        Some(why) => Err(why),
        None => cmdline::parse(&t),
    });
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
                results_stick::open_stick(&d, boot, serial, false);
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
    settings.apply_to(&mut plan)?;
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
    firmware_views(boot, serial);

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
        results_stick::open_stick(r, boot, serial, true);
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
    // What the boot means to run, so a collector can tell runs that never
    // came (the boot stopped early) from a boot that had nothing to do.
    boot.facts.insert("plan".into(), json!({"name": plan.name, "runs": plan.runs()}));
    let result = target::boot_target(settings, plan, boot, serial, results.as_ref());
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
    let report = modules::load_for_machine(Path::new(crate::schema::modules::SET), Path::new("/sys"));
    say(serial, &report.summary_line());
    boot.facts.insert("modules".into(), json!(report));
}

/// Load the modules of filesystem `fs` before it is mounted (once per
/// filesystem), recorded under the `modules` fact.
fn load_filesystem(boot: &mut Boot, serial: &mut Option<Serial>, fs: &str) {
    load_on_demand(boot, serial, "filesystems", fs)
}

/// Load a storage layer's module (dm_mod, md_mod, raid1…) by name, once,
/// recorded under `modules.layers`.
fn load_layer(boot: &mut Boot, serial: &mut Option<Serial>, module: &str) {
    load_on_demand(boot, serial, "layers", module)
}

fn load_on_demand(boot: &mut Boot, serial: &mut Option<Serial>, kind: &str, fs: &str) {
    let Some(facts) = boot.facts.get_mut("modules").and_then(|m| m.as_object_mut()) else { return };
    let loads = facts.entry(kind).or_insert_with(|| json!({}));
    if loads.get(fs).is_some() {
        return;
    }
    let r = modules::load_filesystem(Path::new(crate::schema::modules::SET), fs);
    if !r.outcome.loaded.is_empty() || !r.outcome.failed.is_empty() {
        let failed: Vec<String> = r.outcome.failed.iter().map(|(m, e)| format!("{m} ({e})")).collect();
        let failed = if failed.is_empty() { String::new() } else { format!(", failed: {}", failed.join(", ")) };
        say(serial, &format!("bootmark: {fs}: {} modules loaded in {} ms{failed}", r.outcome.loaded.len(), r.ms));
    }
    loads[fs] = json!(r);
}

/// Mount what the records read the firmware's state from (efivarfs, a
/// module on Debian's kernels, and securityfs), then say what it was.
fn firmware_views(boot: &mut Boot, serial: &mut Option<Serial>) {
    let sys = Path::new("/sys");
    if sys.join("firmware/efi").is_dir() {
        load_filesystem(boot, serial, "efivarfs");
    }
    let report = bringup::mount_firmware_views(sys);
    for p in &report.problems {
        say(serial, &format!("bootmark: bring-up problem: {p}"));
    }
    let fw = crate::image_side::measure::evidence::firmware(sys);
    say(serial, &format!("bootmark: firmware: {}", fw.summary()));
    boot.facts.insert("firmware_views".into(), json!(report.steps));
}

/// Where a sequence on the stick puts this boot.
enum SequenceStep {
    Normal,
    /// Nothing to run in this boot (wrong kernel, or a step given up on).
    Stop,
    Run(crate::schema::sequence::Sequence, usize, Option<String>),
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
