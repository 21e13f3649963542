//! The target part of a boot: find the partition the command line names,
//! check it may be written (and formatted), mount it, run the plan with
//! records going to the stick (first, flushed) and serial, unmount.

use super::cmdline::{DiskSpec, Settings};
use super::devices::{self, BlockDev};
use super::{Boot, TARGET_MOUNT, assembly, checked_sink, format, load_filesystem, load_layer, mount, safety, say};
use crate::image_side::measure::clock::mono_ns;
use crate::image_side::plan::Plan;
use crate::image_side::run::{self, Options};
use crate::image_side::sink::serial::Serial;
use crate::image_side::sink::{BestEffort, Sink, Tee};
use serde_json::json;
use std::path::Path;

/// The target part of a boot: find it, check it, maybe format it, run the plan.
pub(super) fn boot_target(
    settings: &Settings,
    plan: Plan,
    boot: &mut Boot,
    serial: &mut Option<Serial>,
    results: Option<&BlockDev>,
) -> Result<(), String> {
    let sys = Path::new("/sys");
    let dev = Path::new("/dev");
    // From here on every planned run is owed a LAVA case, skipped if it never runs.
    if let Some(s) = serial.as_mut() {
        s.expect_cases(crate::image_side::sink::lava::Cases::planned(&plan));
    }
    let all = devices::scan(sys, dev);
    boot.facts.insert("devices".into(), json!(all.iter().map(device_facts).collect::<Vec<_>>()));
    // Disks beside the target are untrusted: any whose layer metadata was passed over is named, with why.
    boot.facts.insert("layers_ignored".into(), json!(assembly::ignored(sys, dev)));

    let Some(spec) = &settings.target else {
        return Err(format!(
            "no target given, so nothing was run. Add bootmark.target=LABEL=… (or UUID=, PARTUUID=, /dev/…) to the kernel command line, naming a partition bootmark may write to. Disks seen: {}",
            devices::inventory(&all)
        ));
    };
    let mut activated = None;
    // A LABEL=/UUID= may name a filesystem inside an LV or array: reached through its LV=/MD=.
    let layered = match spec {
        DiskSpec::Lv { .. } | DiskSpec::Md(_) => Some(spec.clone()),
        DiskSpec::Label(_) | DiskSpec::Uuid(_) => inside_only(spec, sys, dev)?,
        _ => None,
    };
    let mut target = if let Some(layered) = &layered {
        let mut a =
            assembly::activate(layered, sys, dev, settings.device_wait_s, &mut |m| load_layer(boot, serial, m))?;
        if layered != spec
            && let Some(facts) = a.facts.as_object_mut()
        {
            facts.insert("found_as".into(), json!(layered.to_string()));
        }
        say(serial, &format!("bootmark: {spec} is {} ({})", a.target.node.display(), a.facts));
        if let Err(e) = a.members.iter().try_for_each(|m| safety::check_target(m, results, &all)) {
            // Refused: nothing was written; take down what was set up before saying so.
            for problem in a.tear_down() {
                say(serial, &format!("bootmark: taking down {layered}: {problem}"));
            }
            return Err(e);
        }
        let t = a.target.clone();
        activated = Some(a);
        t
    } else {
        let t =
            devices::wait_for(spec, sys, dev, settings.device_wait_s).map_err(|e| perhaps_inside(e, spec, sys, dev))?;
        if let Some(why) = assembly::plain_target_refusal(&t, &devices::scan(sys, dev)) {
            return Err(why);
        }
        t
    };
    let result =
        with_target(settings, plan, boot, serial, results, spec, &mut target, activated.as_ref().map(|a| &a.facts));
    if let Some(a) = activated {
        for problem in a.tear_down() {
            say(serial, &format!("bootmark: taking down {spec}: {problem}"));
        }
    }
    result
}

/// A LABEL=/UUID= found nowhere may lie inside an array bootmark cannot
/// read before assembling: say which, and the way on.
fn perhaps_inside(e: String, spec: &DiskSpec, sys: &Path, dev: &Path) -> String {
    let unreadable = assembly::unreadable_arrays(sys, dev);
    if unreadable.is_empty() || !matches!(spec, DiskSpec::Label(_) | DiskSpec::Uuid(_)) {
        return e;
    }
    format!(
        "{e}; {spec} may lie inside {}, which bootmark cannot read before assembling: name it bootmark.target=LV=vg/lv or MD=uuid",
        unreadable.join(", ")
    )
}

/// The LV or array `spec` (a LABEL= or UUID=) is inside, if a layer holds
/// it and no plain disk does (a disk that is an md member or a PV does not count).
fn inside_only(spec: &DiskSpec, sys: &Path, dev: &Path) -> Result<Option<DiskSpec>, String> {
    let Some(layered) = assembly::inside(spec, sys, dev)? else { return Ok(None) };
    let all = devices::scan(sys, dev);
    let plain: Vec<&BlockDev> = all
        .iter()
        .filter(|d| devices::find(spec, std::slice::from_ref(*d)).is_ok())
        .filter(|d| assembly::plain_target_refusal(d, &all).is_none())
        .collect();
    if let Some(d) = plain.first() {
        return Err(format!(
            "{spec} is both on {} and inside {layered}: refusing to guess; name one with PARTUUID=, /dev/… or {layered}",
            d.name
        ));
    }
    Ok(Some(layered))
}

/// The target found (and activated): check, maybe format, mount, run, unmount.
#[allow(clippy::too_many_arguments)]
fn with_target(
    settings: &Settings,
    plan: Plan,
    boot: &mut Boot,
    serial: &mut Option<Serial>,
    results: Option<&BlockDev>,
    spec: &DiskSpec,
    target: &mut BlockDev,
    layers: Option<&serde_json::Value>,
) -> Result<(), String> {
    let (sys, dev) = (Path::new("/sys"), Path::new("/dev"));
    let all = devices::scan(sys, dev);
    safety::check_target(target, results, &all)?;
    let mut mkfs = None;
    if let Some(fs) = &settings.format {
        // The format check mounts what is there now, then the new filesystem is mounted.
        if let Some(existing) = &target.fs {
            load_filesystem(boot, serial, &existing.fs);
        }
        load_filesystem(boot, serial, fs);
        mkfs = Some(format::format_target(target, fs, serial)?);
        *target = if layers.is_some() {
            // An activated layer keeps its device: probe it again for the new filesystem.
            devices::scan(sys, dev)
                .into_iter()
                .find(|d| d.name == target.name)
                .ok_or("the target vanished after mkfs")?
        } else {
            devices::wait_for(spec, sys, dev, settings.device_wait_s)?
        };
    }
    let fs = target.fs.as_ref().map(|f| f.fs.clone()).ok_or_else(|| {
        format!("the target {} has no filesystem bootmark recognises; format it (bootmark.format=ext3 with bootmark.format-confirm={spec})", target.name)
    })?;
    load_filesystem(boot, serial, &fs);
    mount::mount_dev(&target.node, Path::new(TARGET_MOUNT), &fs, &settings.mount_options)?;
    boot.facts.insert("target".into(), json!({"spec": spec.to_string(), "device": device_facts(target), "layers": layers, "mount_options": settings.mount_options, "formatted": settings.format.is_some(), "mkfs": mkfs}));
    let remount = remounter(&target.node, &fs, &settings.mount_options);
    let result = run_plan(settings, plan, boot, serial, remount);
    let _ = mount::unmount(Path::new(TARGET_MOUNT));
    result
}

/// A block device as the run record's facts describe it.
pub(super) fn device_facts(d: &BlockDev) -> serde_json::Value {
    json!({"name": d.name, "disk": d.disk, "size_bytes": d.size_bytes, "removable": d.removable,
           "fs": d.fs.as_ref().map(|f| &f.fs), "label": d.fs.as_ref().and_then(|f| f.label.as_ref()),
           "uuid": d.fs.as_ref().and_then(|f| f.uuid.as_ref()), "partuuid": d.partuuid})
}

/// Between a sweep's variants: unmount the target, flush its block device's
/// buffer cache (BLKFLSBUF) and mount it again with the boot's options plus
/// the variant's. Every kernel starts the variant cold this way (2.6.9 has no
/// drop_caches, and a remount keeps the page cache), and ext3's `data=`,
/// which a remount cannot change, can differ per variant.
fn remounter(node: &Path, fs: &str, base: &str) -> run::Remount {
    let (node, fs, base) = (node.to_path_buf(), fs.to_string(), base.to_string());
    Box::new(move |extra: &str| {
        let point = Path::new(TARGET_MOUNT);
        mount::unmount(point)?;
        flush_buffers(&node);
        let options = if extra.is_empty() { base.clone() } else { format!("{base},{extra}") };
        match mount::mount_dev(&node, point, &fs, &options) {
            Ok(()) => Ok(options),
            Err(e) => {
                // The run goes on under the boot's own options rather than unmounted.
                mount::mount_dev(&node, point, &fs, &base)?;
                Err(e)
            }
        }
    })
}

/// BLKFLSBUF: drop the block device's buffer cache (what unmounting leaves).
fn flush_buffers(node: &Path) {
    const BLKFLSBUF: libc::c_ulong = 0x1261;
    if let Ok(f) = std::fs::File::open(node) {
        use std::os::fd::AsRawFd;
        // SAFETY: an ioctl without arguments on a descriptor we own.
        unsafe { libc::ioctl(f.as_raw_fd(), BLKFLSBUF as _, 0) };
    }
}

fn run_plan(
    settings: &Settings,
    plan: Plan,
    boot: &mut Boot,
    serial: &mut Option<Serial>,
    remount: run::Remount,
) -> Result<(), String> {
    let dir = Path::new(TARGET_MOUNT);
    // Run directories left by a boot that was reset: removed only if they carry our marker.
    for left in run::remove_leftovers(dir) {
        say(serial, &format!("bootmark: removed {left}, left on the target by an earlier boot that did not finish"));
    }
    // Every mount is made: no module is loaded again in this boot, and in
    // the initramfs their files hold memory the server would not get back.
    let (files, bytes) = super::modules::release_files(Path::new(crate::schema::modules::SET));
    if files > 0 {
        say(serial, &format!("bootmark: {files} module files freed ({} KiB of memory)", bytes >> 10));
    }
    let runs_per_variant = plan.repeat.saturating_mul(plan.workloads.len() as u32);
    let opts = Options {
        plan,
        dir: dir.to_path_buf(),
        keep: false,
        // The serial sink prints each record's summary line; heartbeats still go to the console.
        verbose: false,
        deadline_ns: Some(mono_ns().saturating_add((settings.timeout_s * 1e9) as u64)),
        run_id: Some(boot.run_id.clone()),
        remount: Some(remount),
        // The console is quieted: the dump goes to the kernel log, read back per record.
        dump_blocked_tasks: true,
        // Switched on by the image's command line, never at run time (tracing.rs says why).
        kernel_events: crate::image_side::measure::tracing::Events::AsBooted,
        // Only the target is written: a program's other disks are out of its reach.
        confine_programs: true,
        // What this image costs the server, as the plan starts.
        footprint: Some(crate::image_side::measure::footprint::measure()),
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
    if let Ok(o) = &result
        && !o.skipped_variants.is_empty()
    {
        let skipped: serde_json::Map<String, serde_json::Value> =
            o.skipped_variants.iter().map(|(name, why)| (name.clone(), json!(why))).collect();
        boot.facts.insert("variants_skipped".into(), json!(skipped));
        // A variant the kernel cannot apply is not run: its runs are not owed.
        if let Some(plan) = boot.facts.get_mut("plan").and_then(|p| p.as_object_mut()) {
            plan.insert("runs_skipped".into(), json!(runs_per_variant * o.skipped_variants.len() as u32));
        }
    }
    result.map(|_| ()).map_err(|e| e.to_string())
}
