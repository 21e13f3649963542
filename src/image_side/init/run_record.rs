//! The last document of every boot: the `bootmark.run/1` record with the
//! boot's facts and the kernel log, on the stick and then on serial.

use super::cmdline::After;
use super::{Boot, RESULTS_MOUNT, mount, say};
use crate::image_side::measure::clock::unix_s;
use crate::image_side::measure::klog;
use crate::image_side::sink::serial::Serial;
use crate::schema::record::{RUN_SCHEMA, RunRecord, Status, Tool};
use serde_json::json;
use std::path::Path;

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
pub(super) fn write_run_record(boot: &mut Boot, serial: &mut Option<Serial>, outcome: Result<(), String>) -> After {
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
        kernel: crate::image_side::measure::evidence::kernel(),
        host: crate::image_side::measure::evidence::host(),
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
        // LAVA's cases after the run record: the runs that never came, and the boot's own.
        let _ = s.finish_cases(outcome.is_ok(), boot.records, boot.failed);
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
