//! The writer's sampled waits during one workload, each attributed to a
//! kernel mechanism (`mechanism.rs`) and to the phase it fell in: writing
//! (until the last write() returned) or flushing (after it, until the data
//! was durable). The evidence is the sampler's: the writer's wchan at each
//! tick and the kernel stack kept for each wchan.

use super::mechanism::{self, Mechanism, Wait, ZeroWchan};
use crate::schema::record::Record;

/// The samples one mechanism holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Share {
    pub mechanism: Mechanism,
    pub samples: usize,
    /// Of them, while the workload was writing and while it was flushing.
    pub writing: usize,
    pub flushing: usize,
    /// The frame that shows the mechanism, and the wchan the writer slept in (the most frequent).
    pub frame: String,
    pub wchan: String,
    /// Whether a kernel stack backs it, or the wchan alone.
    pub from_stack: bool,
    /// Seconds into the workload of its first and last sample.
    pub first_s: f64,
    pub last_s: f64,
}

/// Where the writer was, sample by sample, over one workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attribution {
    /// Samples taken while the workload ran.
    pub samples: usize,
    /// Samples whose wchan read `0`: running, or a kernel that does not say.
    pub not_shown: usize,
    /// Of them, those known to be running: the task's state read `R`, or a
    /// kernel on which `0` means running ([`mechanism::zero_wchan`]).
    pub running: usize,
    /// Mechanisms, most samples first.
    pub shares: Vec<Share>,
    /// Blocked in functions that name no mechanism: (wchan, samples), most first.
    pub unknown: Vec<(String, usize)>,
}

impl Attribution {
    /// The samples in which the writer was seen blocked somewhere.
    pub fn blocked(&self) -> usize {
        self.samples - self.not_shown
    }

    pub fn share(&self, m: Mechanism) -> Option<&Share> {
        self.shares.iter().find(|s| s.mechanism == m)
    }

    /// Samples whose wchan read `0` that may have been a hidden sleep (x86_64
    /// 4.14–5.15 read wchan as 0 for most sleeps).
    pub fn hidden(&self) -> usize {
        self.not_shown - self.running
    }

    /// Whether the kernel hid where the writer slept in most samples.
    pub fn mostly_hidden(&self) -> bool {
        self.samples > 0 && self.hidden() * 5 >= self.samples * 4
    }

    /// Whether the writer was running, not blocked, in most samples.
    pub fn mostly_running(&self) -> bool {
        self.samples > 0 && self.running * 5 >= self.samples * 4
    }

    /// The samples whose wchan read 0, in words for this kernel: "running in
    /// 12 of 41 samples", or "its wchan read 0 in 41 of 41 samples (x86_64
    /// kernels 4.14 to 5.15 read 0 for most sleeps: running or hidden)".
    pub fn zero_said(&self) -> String {
        match (self.running, self.hidden()) {
            (r, 0) => format!("it was running (on the CPU, not blocked) in {r} of {} samples", self.samples),
            (0, h) => format!(
                "its wchan read 0 in {h} of {} samples, and this kernel reads 0 for a sleeping task too (x86_64 4.14 to 5.15): running or a hidden sleep",
                self.samples
            ),
            (r, h) => format!(
                "it was running in {r} of {} samples, and its wchan read 0 while not running in {h} (a sleep this kernel hides)",
                self.samples
            ),
        }
    }
}

/// The writer's waits in `r` while its workload ran; None when nothing was sampled.
pub fn writer(r: &Record) -> Option<Attribution> {
    writer_between(r, f64::NEG_INFINITY, f64::INFINITY)
}

/// The writer's waits in `r` between two times on the timeline's axis (a
/// stall's span), within the workload; None when nothing was sampled there.
pub fn writer_between(r: &Record, from_s: f64, to_s: f64) -> Option<Attribution> {
    between(r, Task::Writer, from_s, to_s)
}

/// The probe's own waits between two times (a late tick's span): where
/// the probe itself was while the machine did not answer. None when the
/// record did not sample it (records from before) or nothing fell there.
pub fn probe_between(r: &Record, from_s: f64, to_s: f64) -> Option<Attribution> {
    between(r, Task::Probe, from_s, to_s)
}

/// The probe's own waits between two times from only the samples taken
/// because one of its ticks was late (`Timeline::probe_late`): each read
/// at the moment its time says. A timeline sample's time is when the
/// sample began; in records before 2026-12-07 the probe's wchan was read
/// after the /proc counters, milliseconds after that time, which is as
/// long as a slow read lasts. None when no such sample fell there.
pub fn probe_late_between(r: &Record, from_s: f64, to_s: f64) -> Option<Attribution> {
    between(r, Task::LateProbe, from_s, to_s)
}

/// The tasks the sampler follows, and the probe's late samples alone.
#[derive(Clone, Copy, PartialEq)]
enum Task {
    Writer,
    Probe,
    LateProbe,
}

/// One sample of a task: when, its wchan, state and kernel stack.
struct Moment<'a> {
    t_s: f64,
    wchan: &'a str,
    state: Option<&'a str>,
    stack: Option<&'a [String]>,
}

/// A task's samples in time order: the timeline's, and for the probe also
/// those taken while one of its ticks was late (`Timeline::probe_late`).
fn moments(r: &Record, task: Task) -> Vec<Moment<'_>> {
    let tl = &r.timeline;
    let (wchans, states): (&[Option<String>], &[Option<String>]) = match task {
        Task::Writer => (&tl.writer_wchan, &tl.writer_state),
        Task::Probe => (&tl.probe_wchan, &tl.probe_state),
        Task::LateProbe => (&[], &[]),
    };
    let mut out: Vec<Moment> = (tl.t_s.iter().zip(wchans).enumerate())
        .filter_map(|(i, (t, w))| {
            let stack = match task {
                Task::Writer => tl.writer_stack_at(i),
                Task::Probe | Task::LateProbe => tl.probe_stack_at(i),
            };
            let state = states.get(i).and_then(|s| s.as_deref());
            Some(Moment { t_s: *t, wchan: w.as_deref()?, state, stack })
        })
        .collect();
    if task != Task::Writer {
        let late = &tl.probe_late;
        out.extend(late.t_s.iter().zip(&late.wchan).enumerate().filter_map(|(i, (t, w))| {
            let state = late.state.get(i).and_then(|s| s.as_deref());
            Some(Moment { t_s: *t, wchan: w.as_deref()?, state, stack: tl.probe_late_stack_at(i) })
        }));
        out.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    }
    out
}

fn between(r: &Record, task: Task, from_s: f64, to_s: f64) -> Option<Attribution> {
    let tl = &r.timeline;
    // After this many seconds into the workload, the writes had returned:
    // flushing. The probe never writes: each of its waits is read as such.
    let writes_end = match task {
        Task::Writer => r.times.writes_returned_s.unwrap_or(f64::INFINITY),
        Task::Probe | Task::LateProbe => f64::NEG_INFINITY,
    };
    let mut a = Attribution::default();
    let mut frames: Vec<(Mechanism, String, usize)> = Vec::new();
    let mut wchans: Vec<(Mechanism, String, usize)> = Vec::new();
    let version = r.kernel.release.as_deref().and_then(mechanism::version);
    let zero_is_running = mechanism::zero_wchan(version, r.kernel.arch.as_deref()) == ZeroWchan::Running;
    for Moment { t_s: t, wchan: w, state, stack } in moments(r, task) {
        if t < tl.workload_start_s || t > tl.workload_end_s || t < from_s || t > to_s {
            continue;
        }
        a.samples += 1;
        let at = t - tl.workload_start_s;
        // Filtered here as classify does, so that `from_stack` says what it read.
        let stack = mechanism::stack_of_the_moment(w, stack);
        let context = mechanism::Context { version, writing: at <= writes_end };
        match mechanism::classify_sample(w, state, stack, context) {
            Wait::NotShown => {
                a.not_shown += 1;
                a.running += match state {
                    Some(s) => s.starts_with('R') as usize,
                    None => zero_is_running as usize,
                };
            }
            Wait::Unknown { wchan } => count(&mut a.unknown, wchan),
            Wait::In { mechanism, frame } => {
                tally(&mut frames, mechanism, frame);
                // A sleep the wchan hid (read 0) is where its stack's innermost frame is.
                let slept_in = match w {
                    "" | "0" => stack.and_then(|s| s.first()).map_or(w, |f| mechanism::function(f)),
                    w => w,
                };
                tally(&mut wchans, mechanism, slept_in.to_string());
                let share = match a.shares.iter_mut().position(|s| s.mechanism == mechanism) {
                    Some(i) => &mut a.shares[i],
                    None => {
                        a.shares.push(Share {
                            mechanism,
                            samples: 0,
                            writing: 0,
                            flushing: 0,
                            frame: String::new(),
                            wchan: String::new(),
                            from_stack: stack.is_some(),
                            first_s: at,
                            last_s: at,
                        });
                        a.shares.last_mut().unwrap()
                    }
                };
                share.samples += 1;
                if at <= writes_end {
                    share.writing += 1
                } else {
                    share.flushing += 1
                }
                share.last_s = at;
                share.from_stack |= stack.is_some();
            }
        }
    }
    if a.samples == 0 {
        return None;
    }
    for s in &mut a.shares {
        s.frame = most(&frames, s.mechanism);
        s.wchan = most(&wchans, s.mechanism);
    }
    a.shares.sort_by(|x, y| y.samples.cmp(&x.samples).then(x.mechanism.cmp(&y.mechanism)));
    a.unknown.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    Some(a)
}

fn count(counts: &mut Vec<(String, usize)>, key: String) {
    match counts.iter_mut().find(|(k, _)| *k == key) {
        Some(c) => c.1 += 1,
        None => counts.push((key, 1)),
    }
}

fn tally(counts: &mut Vec<(Mechanism, String, usize)>, m: Mechanism, key: String) {
    match counts.iter_mut().find(|(cm, k, _)| *cm == m && *k == key) {
        Some(c) => c.2 += 1,
        None => counts.push((m, key, 1)),
    }
}

/// The most frequent key of mechanism `m` (the first seen of equals).
fn most(counts: &[(Mechanism, String, usize)], m: Mechanism) -> String {
    let mut best: Option<&(Mechanism, String, usize)> = None;
    for c in counts.iter().filter(|c| c.0 == m) {
        if best.is_none_or(|b| c.2 > b.2) {
            best = Some(c);
        }
    }
    best.map(|b| b.1.clone()).unwrap_or_default()
}

/// A share in words: "21 of 49 samples, all while flushing (8.2–13.2 s into the workload)".
pub fn describe(s: &Share, samples: usize) -> String {
    let phase = match (s.writing, s.flushing) {
        (_, 0) => "all while writing".to_string(),
        (0, _) => "all while flushing".to_string(),
        (w, f) => format!("{w} while writing, {f} while flushing"),
    };
    format!("{} of {samples} samples, {phase} ({:.1}–{:.1} s into the workload)", s.samples, s.first_s, s.last_s)
}

/// Where the evidence comes from, for a finding's evidence line.
pub fn source(s: &Share) -> &'static str {
    if s.from_stack { "timeline.writer_wchan and writer_stacks" } else { "timeline.writer_wchan (no stack)" }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seqwrite whose writer throttles at the dirty limit while writing,
    /// then waits in wbt during its fdatasync, as the demo's 6.1 run did.
    fn demo_like() -> Record {
        let mut r = Record::blank("a1", 0);
        let tl = &mut r.timeline;
        tl.workload_start_s = 1.0;
        tl.workload_end_s = 16.0;
        r.times.writes_returned_s = Some(7.0);
        for i in 0..64 {
            let t = 0.25 * i as f64;
            tl.t_s.push(t);
            let at = t - 1.0;
            tl.writer_wchan.push(match at {
                _ if at < 0.0 => None,
                _ if at < 2.5 => Some("0".into()),
                _ if at < 4.75 => Some("balance_dirty_pages".into()),
                _ if at <= 7.0 => Some("0".into()),
                _ => Some("rq_qos_wait".into()),
            });
        }
        tl.writer_stacks.insert(
            "rq_qos_wait".into(),
            [
                "rq_qos_wait+0xbe/0x130",
                "wbt_wait+0x9c/0x100",
                "__rq_qos_throttle+0x20/0x40",
                "ext4_sync_file+0xa6/0x3a0",
            ]
            .map(String::from)
            .to_vec(),
        );
        r
    }

    #[test]
    fn each_wait_goes_to_its_mechanism_and_its_phase() {
        let a = writer(&demo_like()).unwrap();
        assert_eq!((a.samples, a.not_shown, a.blocked()), (60, 20, 40));
        let wbt = a.share(Mechanism::WritebackThrottling).unwrap();
        assert_eq!((wbt.samples, wbt.writing, wbt.flushing), (31, 0, 31));
        assert_eq!((wbt.frame.as_str(), wbt.wchan.as_str(), wbt.from_stack), ("wbt_wait", "rq_qos_wait", true));
        let dirty = a.share(Mechanism::DirtyThrottling).unwrap();
        assert_eq!((dirty.samples, dirty.writing, dirty.flushing, dirty.from_stack), (9, 9, 0, false));
        assert_eq!((dirty.first_s, dirty.last_s), (2.5, 4.5));
        // Most samples first: the larger part is not dirty throttling.
        assert_eq!(a.shares[0].mechanism, Mechanism::WritebackThrottling);
        assert_eq!(describe(dirty, a.samples), "9 of 60 samples, all while writing (2.5–4.5 s into the workload)");
        assert!(!a.mostly_hidden());
    }

    #[test]
    fn a_kernel_that_hides_wchan_says_so_and_nothing_is_named() {
        let mut r = demo_like();
        for w in r.timeline.writer_wchan.iter_mut().flatten() {
            *w = "0".into();
        }
        let a = writer(&r).unwrap();
        assert!(a.mostly_hidden() && a.shares.is_empty() && a.unknown.is_empty());
        r.timeline.writer_wchan.clear();
        assert_eq!(writer(&r), None, "nothing sampled: no attribution");
    }
}
