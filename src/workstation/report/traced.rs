//! The kernel's own account of a mechanism, from the tracepoints a record
//! carries (`kernel_events`): what the findings quote beside the sampled
//! waits. The sampler says where the writer was at each tick; a tracepoint
//! says what the kernel did — every pause balance_dirty_pages made, every
//! step wbt took — including on kernels that hide their wchan (5.x before 5.16).

use crate::schema::events::KernelEvents;
use crate::schema::record::Record;

use crate::schema::events::BALANCE_DIRTY_PAGES as DIRTY_EVENT;
const WBT_EVENT: &str = "wbt:wbt_step";

/// The tracepoints of `r`, when they were read.
fn events(r: &Record) -> Option<&KernelEvents> {
    r.kernel_events.as_ref()
}

/// "; 3 events were lost before they were read: the counts are a floor".
fn lost(k: &KernelEvents) -> String {
    match k.lost {
        0 => String::new(),
        n => format!(" ({n} events were lost before they were read: the counts are a floor)"),
    }
}

/// Milliseconds the kernel paused writers at the dirty limit, when its tracepoint was on.
pub fn dirty_pause_ms(r: &Record) -> Option<f64> {
    let k = events(r).filter(|k| k.enabled.iter().any(|e| e == DIRTY_EVENT))?;
    Some(k.dirty_pauses.total().total_ms)
}

/// The dirty-throttling tracepoint in words, for the dirty-limit finding:
/// "the kernel's writeback:balance_dirty_pages tracepoint paused writers 41
/// times, 2310 ms in all (longest 200 ms): 41 while writing…".
pub fn dirty(r: &Record) -> Option<(String, String)> {
    let k = events(r).filter(|k| k.enabled.iter().any(|e| e == DIRTY_EVENT))?;
    let p = &k.dirty_pauses;
    let all = p.total();
    let limit = k
        .dirty_limit_pages
        .map(|pages| {
            format!("; the dirty limit it reported: {pages} pages ({:.0} MiB of 4 KiB pages)", pages as f64 / 256.0)
        })
        .unwrap_or_default();
    let said = match all.count {
        0 => format!(
            "the kernel's {DIRTY_EVENT} tracepoint made no pause: no writer was throttled at the dirty limit{}",
            lost(k)
        ),
        n => format!(
            "the kernel's {DIRTY_EVENT} tracepoint paused writers {n} times, {:.0} ms in all (longest {:.0} ms): {} while writing, {} while flushing, {} after{limit}{}",
            all.total_ms,
            all.max_ms,
            p.writing.count,
            p.flushing.count,
            p.after.count,
            lost(k)
        ),
    };
    let evidence = format!(
        "kernel_events.dirty_pauses: writing {} ({:.0} ms), flushing {} ({:.0} ms), after {} ({:.0} ms); dirty_limit_pages {}",
        p.writing.count,
        p.writing.total_ms,
        p.flushing.count,
        p.flushing.total_ms,
        p.after.count,
        p.after.total_ms,
        k.dirty_limit_pages.map_or("?".into(), |l| l.to_string())
    );
    Some((said, evidence))
}

/// The disks under the target: its own, or each disk under an LV or array.
fn target_disks(r: &Record) -> Vec<&str> {
    let mut disks: Vec<&str> = r.storage.device.iter().map(|d| d.disk.as_str()).collect();
    disks.extend(r.storage.layers.iter().filter(|l| l.kind == "disk").map(|l| l.name.as_str()));
    disks
}

/// Block writeback throttling's own steps on the target's disks, for the
/// writeback-throttling finding (wbt on the results stick is not the target's).
pub fn wbt(r: &Record) -> Option<(String, String)> {
    let k = events(r).filter(|k| k.enabled.iter().any(|e| e == WBT_EVENT))?;
    let disks = target_disks(r);
    let on_target = k.wbt.iter().find(|(disk, _)| disks.is_empty() || disks.contains(&disk.as_str()));
    let Some((disk, w)) = on_target else {
        let said = match disks.as_slice() {
            [] => "wbt's own tracepoints fired nothing over the workload".to_string(),
            named => format!("wbt's own tracepoints fired nothing on {} over the workload", named.join(", ")),
        };
        return Some((format!("{said}{}", lost(k)), "kernel_events.wbt: nothing on the target".into()));
    };
    let depth = w.lowest_max_depth.map(|d| format!(", the lowest write depth they set {d}")).unwrap_or_default();
    let reads = w.max_latency_us.map(|us| format!("; reads over its target took up to {:.1} ms", us as f64 / 1000.0));
    let said = format!(
        "wbt's own tracepoints on {disk}: {} steps ({} down){depth}{}{}",
        w.steps,
        w.scaled_down,
        reads.unwrap_or_default(),
        lost(k)
    );
    let evidence = format!(
        "kernel_events.wbt.{disk}: steps {}, scaled_down {}, lowest_max_depth {}, max_latency_us {}",
        w.steps,
        w.scaled_down,
        w.lowest_max_depth.map_or("?".into(), |d| d.to_string()),
        w.max_latency_us.map_or("?".into(), |d| d.to_string())
    );
    Some((said, evidence))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::events::{Pauses, Phased, Wbt};

    fn traced(pauses: u64, wbt: Option<Wbt>) -> Record {
        let mut r = Record::blank("t", 0);
        r.storage.device = Some(crate::schema::machine::Device { disk: "sda".into(), ..Default::default() });
        // The results stick's wbt is no evidence about the target.
        let mut wbt: std::collections::BTreeMap<String, Wbt> = wbt.into_iter().map(|w| ("sda".into(), w)).collect();
        wbt.insert("sdb".into(), Wbt { steps: 9, scaled_down: 9, ..Wbt::default() });
        let pause = |n: u64| Pauses { count: n, total_ms: 20.0 * n as f64, max_ms: if n > 0 { 20.0 } else { 0.0 } };
        r.kernel_events = Some(KernelEvents {
            enabled: vec![DIRTY_EVENT.into(), WBT_EVENT.into()],
            dirty_pauses: Phased { writing: pause(pauses), flushing: pause(1), after: pause(0) },
            dirty_limit_pages: Some(25600),
            wbt,
            ..KernelEvents::default()
        });
        r
    }

    #[test]
    fn the_kernels_pauses_are_quoted_with_their_phases_and_limit() {
        let (said, evidence) = dirty(&traced(40, None)).unwrap();
        assert!(
            said.contains(
                "paused writers 41 times, 820 ms in all (longest 20 ms): 40 while writing, 1 while flushing, 0 after"
            ),
            "{said}"
        );
        assert!(said.contains("25600 pages (100 MiB of 4 KiB pages)"), "{said}");
        assert!(evidence.starts_with("kernel_events.dirty_pauses: writing 40 (800 ms)"), "{evidence}");
        assert_eq!(dirty_pause_ms(&traced(40, None)), Some(820.0));
        let mut none = traced(0, None);
        none.kernel_events.as_mut().unwrap().dirty_pauses.flushing = Pauses::default();
        none.kernel_events.as_mut().unwrap().lost = 7;
        let (said, _) = dirty(&none).unwrap();
        assert!(said.contains("made no pause") && said.contains("7 events were lost"), "{said}");
        // Not read, or read without that event: nothing is said either way.
        assert_eq!(dirty(&Record::blank("t", 0)), None);
        let mut off = traced(3, None);
        off.kernel_events.as_mut().unwrap().enabled.clear();
        assert_eq!((dirty(&off), wbt(&off), dirty_pause_ms(&off)), (None, None, None));
    }

    #[test]
    fn wbts_steps_are_quoted_or_their_silence_said() {
        let w = Wbt { steps: 5, scaled_down: 4, lowest_max_depth: Some(2), max_latency_us: Some(81234), windows: 9 };
        let (said, _) = wbt(&traced(0, Some(w))).unwrap();
        assert_eq!(
            said,
            "wbt's own tracepoints on sda: 5 steps (4 down), the lowest write depth they set 2; reads over its target took up to 81.2 ms"
        );
        let (said, evidence) = wbt(&traced(0, None)).unwrap();
        assert_eq!(
            (said.as_str(), evidence.as_str()),
            (
                "wbt's own tracepoints fired nothing on sda over the workload",
                "kernel_events.wbt: nothing on the target"
            )
        );
    }
}
