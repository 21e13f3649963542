//! The kernel's own account of a mechanism, from the tracepoints a record
//! carries (`kernel_events`): what the findings quote beside the sampled
//! waits. The sampler says where the writer was at each tick; a tracepoint
//! says what the kernel did — every pause balance_dirty_pages made, every
//! step wbt took — including on kernels that hide their wchan (5.x before 5.16).

use crate::schema::events::{KernelEvents, Requests, Wbt};
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
            "the kernel's {DIRTY_EVENT} tracepoint paused writers {}, {:.0} ms in all (longest {:.0} ms): {} while writing, {} while flushing, {} after{limit}{}",
            super::words::times(n),
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
pub fn target_disks(r: &Record) -> Vec<&str> {
    let mut disks: Vec<&str> = r.storage.device.iter().map(|d| d.disk.as_str()).collect();
    disks.extend(r.storage.layers.iter().filter(|l| l.kind == "disk").map(|l| l.name.as_str()));
    disks
}

/// Block writeback throttling's own steps on the target's disks, for the
/// writeback-throttling finding (wbt on the results stick is not the target's).
pub fn wbt(r: &Record) -> Option<(String, String)> {
    let k = events(r).filter(|k| k.enabled.iter().any(|e| e == WBT_EVENT))?;
    let disks = target_disks(r);
    let Some((disk, w)) = wbt_steps(r)? else {
        let said = match disks.as_slice() {
            [] => "wbt's own tracepoints fired nothing over the workload".to_string(),
            named => format!("wbt's own tracepoints fired nothing on {} over the workload", named.join(", ")),
        };
        return Some((format!("{said}{}", lost(k)), "kernel_events.wbt: nothing on the target".into()));
    };
    let depth = w.lowest_max_depth.map(|d| format!(", the lowest write depth they set {d}")).unwrap_or_default();
    // wbt_lat reports a window's quickest read (or one sync read still in
    // flight) over the target: reads took at least that long, not at most.
    let reads = w.max_latency_us.map(|us| {
        format!("; a window's quickest read over its target took up to {:.1} ms (wbt_lat)", us as f64 / 1000.0)
    });
    let said = format!(
        "wbt's own tracepoints on {disk}: {} ({} down){depth}{}{}",
        super::words::count(w.steps, "step", "steps"),
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

/// wbt's own steps on the target's disks: None when its tracepoint was not
/// read, `Some(None)` when it fired nothing there (wbt never left its
/// default depth).
pub fn wbt_steps(r: &Record) -> Option<Option<(&str, &Wbt)>> {
    let k = events(r).filter(|k| k.enabled.iter().any(|e| e == WBT_EVENT))?;
    let disks = target_disks(r);
    let on_target = k.wbt.iter().find(|(disk, _)| disks.is_empty() || disks.contains(&disk.as_str()));
    Some(on_target.map(|(disk, w)| (disk.as_str(), w)))
}

/// The per-tick series `Reader::per_tick` left on the timeline.
const PAUSE_SERIES: &str = "traced_dirty_pause_ms";
const READ_SERIES: &str = "traced_read_ms.";
const RECLAIM_SERIES: &str = "traced_reclaim_ms";

/// What the kernel's own events show between `from_s` and `to_s` on the
/// timeline's axis (over the ticks whose intervals overlap it), for the
/// stall finding: the pauses balance_dirty_pages made, and the longest a
/// read was held by a target disk. What the kernel did meanwhile, not what
/// made the probe wait; None when the record has no such series.
pub fn during(r: &Record, from_s: f64, to_s: f64) -> Option<(String, String)> {
    let tl = &r.timeline;
    let pauses = tl.series.get(PAUSE_SERIES)?;
    // Tick i covers (t[i-1], t[i]].
    let overlaps = |i: usize| tl.t_s[i] >= from_s && (i == 0 || tl.t_s[i - 1] < to_s);
    let ticks: Vec<usize> = (0..tl.t_s.len()).filter(|&i| overlaps(i)).collect();
    let (first, last) = (*ticks.first()?, *ticks.last()?);
    let paused: u64 = ticks.iter().filter_map(|&i| pauses.get(i).copied().flatten()).sum();
    let disks = target_disks(r);
    let longest_read = tl
        .series
        .iter()
        .filter_map(|(key, series)| Some((key.strip_prefix(READ_SERIES)?, series)))
        .filter(|(disk, _)| disks.is_empty() || disks.contains(disk))
        .filter_map(|(disk, series)| {
            let ms = ticks.iter().filter_map(|&i| series.get(i).copied().flatten()).max()?;
            Some((ms, disk))
        })
        .max();
    let from = if first == 0 { tl.t_s[0] } else { tl.t_s[first - 1] } - tl.workload_start_s;
    let to = tl.t_s[last] - tl.workload_start_s;
    let mut said = format!("the kernel's own events over those ticks ({from:.2}–{to:.2} s): ");
    said += &match paused {
        0 => "balance_dirty_pages made no pause".to_string(),
        ms => format!("balance_dirty_pages paused writers {ms} ms in all"),
    };
    let mut evidence = format!("timeline.series.{PAUSE_SERIES} over {from:.2}–{to:.2} s: {paused}");
    // Every task's direct reclaim, by its end: a stack through reclaim is said with this.
    if let Some(reclaims) = tl.series.get(RECLAIM_SERIES) {
        let reclaimed: u64 = ticks.iter().filter_map(|&i| reclaims.get(i).copied().flatten()).sum();
        said += &match reclaimed {
            0 => ", no task's direct reclaim ended then".to_string(),
            ms => format!(", tasks spent {ms} ms in direct reclaim (mm_vmscan_direct_reclaim_begin → end)"),
        };
        evidence += &format!("; {RECLAIM_SERIES}: {reclaimed}");
    }
    if let Some((ms, disk)) = longest_read {
        said += &format!(
            ", and {disk} held no read completing then longer than {ms} ms (block_rq_issue → block_rq_complete)"
        );
        evidence += &format!("; {READ_SERIES}{disk}: max {ms}");
    }
    Some((said, evidence))
}

/// The reads the target's disks served while traced: the disk that served
/// most, and how long the device held them (issue to completion). None when
/// the block tracepoints were not both on.
pub fn device_reads(r: &Record) -> Option<(&str, &Requests)> {
    let k = events(r)?;
    crate::schema::events::reads_on(&k.enabled, &k.requests, &target_disks(r))
}

/// Where a read that waited `waited_ms` spent it, as the block tracepoints
/// bound it: the device held no read longer than its reads' slowest issue to
/// completion, so a wait longer than twice that passed mostly outside the
/// device (the I/O scheduler's queue, a wait for a tag, or above the block
/// layer — which of these, the events do not say; never wbt, which holds
/// only writes and discards). Where block_rq_insert was read, the scheduler's
/// queue is bounded the same way: queue and device together under half the
/// wait put it before the queue; a queue wait long enough is a candidate
/// (the run's longest, not tied to this read). `Device` and `Outside`
/// carry the sentence and the evidence; `Unknown` why it cannot be said.
pub enum ReadWait {
    Device(String, String),
    Outside(String, String),
    /// Outside the device and, by block_rq_insert, before the scheduler's queue too.
    BeforeQueue(String, String),
    Unknown(String),
}

pub fn read_wait(r: &Record, waited_ms: f64) -> ReadWait {
    let Some((disk, reads)) = device_reads(r) else {
        let why = match r.sources.get("tracepoints") {
            Some(said) if said.starts_with("not used") => format!("the kernel's block tracepoints were {said}"),
            _ => "this record has no block tracepoints (block_rq_issue/complete) to time its reads in the device"
                .to_string(),
        };
        return ReadWait::Unknown(format!("whether it waited in the device or before reaching it is unknown: {why}"));
    };
    let d = &reads.device_ms;
    let evidence = format!(
        "kernel_events.requests.\"{disk} R\": {} reads, device_ms p50 {:.1}, max {:.1}",
        reads.count, d.p50_ms, d.max_ms
    );
    if reads.count == 0 {
        return ReadWait::Unknown(format!(
            "the block tracepoints saw no read reach {disk}: where it waited is unknown"
        ));
    }
    if d.max_ms >= waited_ms / 2.0 {
        let behind = events(r)
            .and_then(|k| k.requests.get(&format!("{disk} W")))
            .filter(|w| w.count > 0)
            .map(|w| format!(", behind writes of {} KiB (median) it held {:.0} ms each", w.kib_p50, w.device_ms.p50_ms))
            .unwrap_or_default();
        // A drive that queues requests itself (NCQ) counts its own queue as device time.
        let depth = r.storage.queue.get("device/queue_depth").and_then(|q| q.parse::<u32>().ok()).filter(|q| *q > 1);
        let queued = depth
            .map(|q| format!("; that includes waiting in the drive's own queue of up to {q} requests (device/queue_depth), not only the medium"))
            .unwrap_or_default();
        let said = format!(
            "most of it in the device: {disk} held reads up to {:.0} ms from issue to completion (median {:.1} ms over {} reads; block_rq_issue → block_rq_complete){behind}{queued}",
            d.max_ms, d.p50_ms, reads.count
        );
        return ReadWait::Device(said, evidence);
    }
    let head = format!(
        "not in the device: {disk} held no read over {:.0} ms from issue to completion ({} reads; block_rq_issue → block_rq_complete)",
        d.max_ms, reads.count
    );
    let inserted =
        events(r).is_some_and(|k| crate::schema::events::queue_timed(&k.enabled, r.storage.scheduler.as_deref()));
    let said = match reads.queued_ms.as_ref().filter(|_| inserted) {
        // Queue and device together bound what this read spent in them.
        Some(q) if q.max_ms + d.max_ms < waited_ms / 2.0 => {
            return ReadWait::BeforeQueue(
                format!(
                    "{head}, nor in the I/O scheduler's queue: no read waited there over {} ms (block_rq_insert → block_rq_issue), so at least {:.0} ms passed outside both: before it was queued (a free request, cgroup I/O limits, the submitter's plug), above the block layer (the page cache, the filesystem, reclaim), or after completion before the reader ran (not wbt: it never holds reads); which, these events do not say: unknown",
                    super::words::ms(q.max_ms),
                    waited_ms - d.max_ms - q.max_ms
                ),
                evidence,
            );
        }
        Some(q) => format!(
            "{head}; reads waited up to {:.0} ms in the I/O scheduler's queue (block_rq_insert → block_rq_issue, median {:.1} ms), enough to hold most of it there: a candidate, as these events do not tie that wait to this read",
            q.max_ms, q.p50_ms
        ),
        None => format!(
            "{head}, so about {:.0} ms passed before the read reached it — in the I/O scheduler's queue, a wait for a tag, or above the block layer (not wbt: it holds writes only); which of these, the events do not say: unknown",
            waited_ms - d.max_ms
        ),
    };
    ReadWait::Outside(said, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::events::{Pauses, Phased};

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

    /// A record whose target sda served reads the device held `read_ms`
    /// (median, max) behind 1280 KiB writes; the stick sdb's slow reads are not the target's.
    fn reads_traced(read_ms: (f64, f64)) -> Record {
        use crate::schema::measures::LatencySummary;
        let mut r = traced(0, None);
        let k = r.kernel_events.as_mut().unwrap();
        k.enabled.extend(["block:block_rq_issue".into(), "block:block_rq_complete".into()]);
        let held = |p50_ms, max_ms| LatencySummary { count: 9, p50_ms, max_ms, ..LatencySummary::default() };
        k.requests.insert(
            "sda R".into(),
            Requests { count: 130, kib_p50: 4, kib_max: 4, device_ms: held(read_ms.0, read_ms.1), queued_ms: None },
        );
        k.requests.insert(
            "sda W".into(),
            Requests { count: 290, kib_p50: 1280, kib_max: 1280, device_ms: held(460.0, 1048.0), queued_ms: None },
        );
        k.requests.insert(
            "sdb R".into(),
            Requests { count: 2, kib_p50: 4, kib_max: 4, device_ms: held(900.0, 900.0), queued_ms: None },
        );
        r
    }

    #[test]
    fn a_reads_wait_is_placed_in_the_device_or_before_it_by_the_block_tracepoints() {
        // The demo's 6.12: the device held reads 18 ms at the median, 49 at most.
        let r = reads_traced((17.6, 49.0));
        let ReadWait::Device(said, evidence) = read_wait(&r, 60.0) else { panic!("in the device") };
        assert_eq!(
            said,
            "most of it in the device: sda held reads up to 49 ms from issue to completion (median 17.6 ms over 130 reads; block_rq_issue → block_rq_complete), behind writes of 1280 KiB (median) it held 460 ms each"
        );
        assert_eq!(evidence, "kernel_events.requests.\"sda R\": 130 reads, device_ms p50 17.6, max 49.0");
        // A drive with its own queue: its queue is device time too, and the sentence says so.
        let mut ncq = reads_traced((17.6, 49.0));
        ncq.storage.queue.insert("device/queue_depth".into(), "32".into());
        let ReadWait::Device(said, _) = read_wait(&ncq, 60.0) else { panic!("in the device") };
        assert!(
            said.ends_with(
                "waiting in the drive's own queue of up to 32 requests (device/queue_depth), not only the medium"
            ),
            "{said}"
        );
        // Its 913 ms read: at most 49 of it in the device.
        let ReadWait::Outside(said, _) = read_wait(&r, 913.0) else { panic!("outside the device") };
        assert!(said.starts_with("not in the device: sda held no read over 49 ms"), "{said}");
        assert!(
            said.contains("about 864 ms passed before the read reached it") && said.ends_with(": unknown"),
            "{said}"
        );
        // With block_rq_insert read: the scheduler's queue bounded too.
        let queued = |max_ms: f64| {
            let mut r = reads_traced((17.6, 49.0));
            r.storage.scheduler = Some("mq-deadline".into());
            let k = r.kernel_events.as_mut().unwrap();
            k.enabled.push(crate::schema::events::INSERT_EVENT.into());
            let q = crate::schema::measures::LatencySummary { count: 130, p50_ms: 2.0, max_ms, ..Default::default() };
            k.requests.get_mut("sda R").unwrap().queued_ms = Some(q);
            r
        };
        let ReadWait::BeforeQueue(said, _) = read_wait(&queued(30.0), 913.0) else { panic!("before the queue") };
        let above = "nor in the I/O scheduler's queue: no read waited there over 30 ms (block_rq_insert → block_rq_issue), so at least 834 ms passed outside both: before it was queued";
        assert!(said.contains(above) && said.ends_with(": unknown"), "{said}");
        // Under `none` only some requests pass the queue: its times are not used.
        let mut unscheduled = queued(30.0);
        unscheduled.storage.scheduler = Some("none".into());
        let ReadWait::Outside(said, _) = read_wait(&unscheduled, 913.0) else { panic!("outside the device") };
        assert!(said.contains("which of these, the events do not say"), "{said}");
        let ReadWait::Outside(said, _) = read_wait(&queued(850.0), 913.0) else { panic!("outside the device") };
        let queue = "; reads waited up to 850 ms in the I/O scheduler's queue (block_rq_insert → block_rq_issue, median 2.0 ms), enough to hold most of it there: a candidate";
        assert!(said.contains(queue), "{said}");
        // Without both ends of a request nothing is timed, and the record's reason is quoted.
        let mut half = reads_traced((17.6, 49.0));
        half.kernel_events.as_mut().unwrap().enabled.retain(|e| e != "block:block_rq_complete");
        assert!(matches!(read_wait(&half, 60.0), ReadWait::Unknown(_)));
        let mut old = Record::blank("t", 0);
        old.sources.insert("tracepoints".into(), "not used: the kernel predates 2.6.27 (no pipe2)".into());
        let ReadWait::Unknown(said) = read_wait(&old, 900.0) else { panic!("unknown") };
        assert!(
            said.ends_with("the kernel's block tracepoints were not used: the kernel predates 2.6.27 (no pipe2)"),
            "{said}"
        );
    }

    #[test]
    fn a_stall_gets_what_the_kernel_did_over_its_ticks() {
        let mut r = traced(0, None);
        let tl = &mut r.timeline;
        (tl.workload_start_s, tl.t_s) = (1.0, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        tl.series.insert(PAUSE_SERIES.into(), vec![Some(0), Some(200), Some(400), Some(30), Some(900)]);
        tl.series.insert("traced_read_ms.sda".into(), vec![Some(1), Some(2), Some(700), Some(3), Some(5)]);
        // The stick's read is not the target's.
        tl.series.insert("traced_read_ms.sdb".into(), vec![Some(0), Some(0), Some(990), Some(0), Some(0)]);
        // A stall from 2.2 s to 3.5 s: ticks 3.0 and 4.0 (intervals (2,3] and (3,4]).
        let (said, evidence) = during(&r, 2.2, 3.5).unwrap();
        assert_eq!(
            said,
            "the kernel's own events over those ticks (1.00–3.00 s): balance_dirty_pages paused writers 430 ms in all, and sda held no read completing then longer than 700 ms (block_rq_issue → block_rq_complete)"
        );
        assert_eq!(
            evidence,
            "timeline.series.traced_dirty_pause_ms over 1.00–3.00 s: 430; traced_read_ms.sda: max 700"
        );
        r.timeline.series.get_mut(PAUSE_SERIES).unwrap()[2..4].fill(Some(0));
        assert!(during(&r, 2.2, 3.5).unwrap().0.contains("balance_dirty_pages made no pause"));
        // Direct reclaim where its events were on: its spans over the ticks, none said as none.
        r.timeline.series.insert(RECLAIM_SERIES.into(), vec![Some(0), Some(0), Some(120), Some(7), Some(50)]);
        let (said, evidence) = during(&r, 2.2, 3.5).unwrap();
        assert!(
            said.contains(", tasks spent 127 ms in direct reclaim (mm_vmscan_direct_reclaim_begin → end)"),
            "{said}"
        );
        assert!(evidence.ends_with("; traced_reclaim_ms: 127; traced_read_ms.sda: max 700"), "{evidence}");
        r.timeline.series.insert(RECLAIM_SERIES.into(), vec![Some(0); 5]);
        assert!(during(&r, 2.2, 3.5).unwrap().0.contains(", no task's direct reclaim ended then"));
        // Untraced records (and those of before the series): nothing said.
        assert_eq!(during(&Record::blank("t", 0), 2.2, 3.5), None);
    }

    #[test]
    fn wbts_steps_are_quoted_or_their_silence_said() {
        let w = Wbt { steps: 5, scaled_down: 4, lowest_max_depth: Some(2), max_latency_us: Some(81234), windows: 9 };
        let (said, _) = wbt(&traced(0, Some(w))).unwrap();
        assert_eq!(
            said,
            "wbt's own tracepoints on sda: 5 steps (4 down), the lowest write depth they set 2; a window's quickest read over its target took up to 81.2 ms (wbt_lat)"
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
