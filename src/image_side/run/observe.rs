//! Running one workload under observation: a worker process does the work,
//! the probe process measures responsiveness, and this process samples the
//! timeline, prints heartbeats and enforces the workload's deadline — all in
//! one poll() loop, so nothing waits on a lock or a thread.

use crate::image_side::measure::blocked::BlockedDumps;
use crate::image_side::measure::clock::{mono_ns, secs};
use crate::image_side::measure::probe::{self, SAMPLE_BYTES, Sample};
use crate::image_side::measure::progress::Progress;
use crate::image_side::measure::sampler::{Sampler, Snapshot};
use crate::image_side::measure::tracing;
use crate::image_side::process::{self, Child, Exit};
use crate::image_side::workload::{Context, Outcome, WorkloadSpec};
use crate::interrupt;
use crate::schema::events::KernelEvents;
use crate::schema::measures::{Responsiveness, Timeline};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

const HEARTBEAT_NS: u64 = 10_000_000_000;

/// What to run and how to watch it.
pub struct Setup<'a> {
    pub spec: &'a WorkloadSpec,
    pub label: String,
    pub context: Context<'a>,
    /// The probe's prepared directory; None when the plan turns the probe off.
    pub probe_dir: Option<PathBuf>,
    pub probe_interval_ns: u64,
    pub baseline_ns: u64,
    pub recovery_deadline_ns: u64,
    pub sample_interval_ns: u64,
    pub deadline_ns: u64,
    pub device: Option<String>,
    /// Take a blocked-task dump (SysRq-W) when the probe goes silent (the boot image only).
    pub dump_blocked: bool,
    /// Whether and how to read the kernel's tracepoints (machine-wide: where bootmark owns the machine).
    pub kernel_events: tracing::Events,
}

/// Everything observed about one workload run.
pub struct Observed {
    /// The worker's own report, or why there is none.
    pub outcome: Result<Outcome, String>,
    pub timed_out: bool,
    pub exit: Option<Exit>,
    /// Bytes the worker had moved (from the shared counters), for partial results.
    pub progress_written: u64,
    pub progress_read: u64,
    /// The runner's view of the workload's start and end.
    pub start_ns: u64,
    pub end_ns: u64,
    pub responsiveness: Option<Responsiveness>,
    pub timeline: Timeline,
    pub deltas: crate::image_side::measure::sampler::Deltas,
    pub notes: Vec<String>,
    /// The kernel's blocked-task dumps taken during stalls.
    pub blocked_tasks: Vec<String>,
    /// The kernel's tracepoints, summarised, when they were read.
    pub kernel_events: Option<KernelEvents>,
    /// Each source of evidence on waits: used, or why not.
    pub sources: BTreeMap<String, String>,
}

pub struct Interrupted;

/// The probe process and the samples read from it so far.
struct ProbeReader {
    child: Child,
    pending: Vec<u8>,
    samples: Vec<Sample>,
    alive: bool,
}

/// The worker process and its report as it arrives.
struct WorkerReader {
    child: Child,
    report: Vec<u8>,
    eof: bool,
}

enum Pumped {
    Until,
    WorkerDone,
    Interrupted,
}

struct Watch<'a> {
    probe: Option<ProbeReader>,
    sampler: Sampler,
    sample_interval_ns: u64,
    next_sample: u64,
    next_heartbeat: u64,
    label: &'a str,
    progress: &'a Progress,
    expected_bytes: u64,
    started: u64,
    blocked: BlockedDumps,
    tracing: Option<tracing::Session>,
    late: LateTick,
}

/// The probe's tick in progress, seen from this side: when it is due (from
/// the last tick that answered), when it counts as late, and when to sample
/// the probe next while it is. The probe cannot say where it waits while it
/// waits; this process can read its wchan and stack meanwhile.
#[derive(Default)]
struct LateTick {
    /// Slower than this (the baseline's recovery threshold) is late; None
    /// until the workload starts, and where there was no baseline.
    threshold_ns: Option<u64>,
    interval_ns: u64,
    /// When the tick in progress was due, as far as this side knows.
    due_ns: u64,
    /// The next late sample, while the tick has not answered.
    next_ns: Option<u64>,
}

/// The least time between two samples of one late tick; later into a tick
/// they thin out (a quarter of its lateness apart), so a stall of a minute
/// costs some fifty samples, not thousands.
const LATE_SAMPLE_MIN_NS: u64 = 5_000_000;

impl LateTick {
    /// A tick answered at `now`: the next one is due an interval after this
    /// one, or now if this one overran (as the probe reckons it).
    fn answered(&mut self, due_ns: u64, now: u64) {
        self.due_ns = (due_ns + self.interval_ns).max(now);
        self.next_ns = self.threshold_ns.map(|t| self.due_ns + t);
    }

    /// After a late sample at `now`: when the next is due.
    fn sampled(&mut self, now: u64) {
        let lateness = now.saturating_sub(self.due_ns);
        self.next_ns = Some(now + (lateness / 4).max(LATE_SAMPLE_MIN_NS));
    }
}

pub fn observe(mut setup: Setup) -> Result<Observed, Interrupted> {
    let now = mono_ns();
    let mut notes = Vec::new();
    let probe = match &setup.probe_dir {
        Some(dir) => match probe::start(dir, setup.probe_interval_ns) {
            Ok(child) => Some(ProbeReader { child, pending: Vec::new(), samples: Vec::new(), alive: true }),
            Err(e) => {
                notes.push(format!("probe could not start: {e}"));
                None
            }
        },
        None => None,
    };
    let mut watch = Watch {
        probe,
        sampler: Sampler::new(setup.device.clone(), secs(setup.sample_interval_ns), now),
        sample_interval_ns: setup.sample_interval_ns,
        next_sample: now,
        next_heartbeat: now + HEARTBEAT_NS,
        label: &setup.label,
        progress: setup.context.progress,
        expected_bytes: setup.spec.expected_bytes(setup.context.mem_total),
        started: now,
        blocked: BlockedDumps::new(setup.dump_blocked, now),
        tracing: None,
        late: LateTick { interval_ns: setup.probe_interval_ns, ..LateTick::default() },
    };
    setup.context.progress.reset();
    if watch.probe.is_some() && matches!(watch.pump(now + setup.baseline_ns, None), Pumped::Interrupted) {
        watch.stop_probe();
        return Err(Interrupted);
    }

    let before = Snapshot::take(setup.device.as_deref());
    let tracepoints = match setup.kernel_events {
        tracing::Events::Off => {
            Err("only where bootmark owns the machine: the boot image, or `bootmark run --kernel-events`".into())
        }
        how => tracing::Session::start(how, now).map(|session| watch.tracing = Some(session)),
    };
    let start_ns = mono_ns();
    watch.started = start_ns;
    let spec = setup.spec.clone();
    setup.context.deadline_ns = Some(start_ns.saturating_add(setup.deadline_ns));
    let context = &setup.context;
    let child = process::spawn("bootmark-work", move |out| {
        // Its own process group, so a watchdog kill reaches instance children too.
        // SAFETY: setpgid on ourselves.
        unsafe { libc::setpgid(0, 0) };
        crate::image_side::workload::send_outcome(out, spec.run(context))
    });
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            watch.stop_probe();
            if let Some(session) = watch.tracing.take() {
                session.finish(0.0, 0.0, &[]);
            }
            return Ok(Observed::failed(
                format!("cannot start the worker process: {e}"),
                start_ns,
                watch.sampler.timeline,
            ));
        }
    };
    // SAFETY: also from this side, so the group exists before any kill.
    unsafe { libc::setpgid(child.pid, child.pid) };
    let mut worker = WorkerReader { child, report: Vec::new(), eof: false };
    watch.sampler.writer = Some(worker.child.pid);
    watch.sampler.probe = watch.probe.as_ref().filter(|p| p.alive).map(|p| p.child.pid);
    watch.watch_late_ticks();
    let deadline = start_ns + setup.deadline_ns;
    let pumped = watch.pump(deadline, Some(&mut worker));
    (watch.sampler.writer, watch.sampler.probe) = (None, None);
    (watch.late.threshold_ns, watch.late.next_ns) = (None, None);
    let end_ns = mono_ns();
    let progress_written = setup.context.progress.written();
    let progress_read = setup.context.progress.read();
    let timed_out = matches!(pumped, Pumped::Until);
    if !matches!(pumped, Pumped::WorkerDone) {
        process::kill(-worker.child.pid, libc::SIGKILL);
    }
    let exit = reap(worker.child.pid, &mut notes);
    if matches!(pumped, Pumped::Interrupted) {
        watch.stop_probe();
        return Err(Interrupted);
    }
    let after = Snapshot::take(setup.device.as_deref());
    let outcome = if timed_out {
        Err(format!(
            "the workload ran past its deadline of {:.0} s and was killed; figures are partial",
            secs(setup.deadline_ns)
        ))
    } else {
        let how = exit.map(|e| e.describe()).unwrap_or_else(|| "did not end".into());
        crate::image_side::workload::receive_outcome(&worker.report, &how)
    };

    // The probe keeps watching until the machine is back to its baseline.
    let workload_end = outcome.as_ref().map(|o| o.end_ns).unwrap_or(end_ns);
    let workload_start = outcome.as_ref().map(|o| o.start_ns).unwrap_or(start_ns);
    let responsiveness = if watch.probe.is_some() {
        if watch.wait_for_recovery(workload_start, workload_end, setup.recovery_deadline_ns).is_err() {
            watch.stop_probe();
            return Err(Interrupted);
        }
        let (samples, cpu, probe_notes) = watch.stop_probe();
        notes.extend(probe_notes);
        let axis: Vec<f64> = samples.iter().map(|s| watch.sampler.at(s.due_ns)).collect();
        watch.sampler.timeline.probe_t_s = axis;
        let timeline = &mut watch.sampler.timeline;
        for s in &samples {
            timeline.probe_response_ms.push(s.response_ns() as f64 / 1e6);
            timeline.probe_read_ms.push(s.read_ns as f64 / 1e6);
            timeline.probe_ls_ms.push(s.ls_ns as f64 / 1e6);
        }
        Some(probe::summarize(&samples, workload_start, workload_end, setup.probe_interval_ns, cpu))
    } else {
        None
    };
    let (blocked_tasks, blocked_note) = watch.blocked.collect();
    notes.extend(blocked_note);
    watch.sampler.sample();
    watch.sampler.timeline.workload_start_s = watch.sampler.at(workload_start);
    watch.sampler.timeline.workload_end_s = watch.sampler.at(workload_end);
    let writes_returned_s = outcome.as_ref().ok().and_then(|o| o.times.writes_returned_s);
    let writes_end_s = watch.sampler.timeline.workload_start_s + writes_returned_s.unwrap_or(f64::INFINITY);
    let writes_end_s = writes_end_s.min(watch.sampler.timeline.workload_end_s);
    let timeline = &mut watch.sampler.timeline;
    let kernel_events = watch.tracing.take().map(|session| {
        let finished = session.finish(writes_end_s, timeline.workload_end_s, &timeline.t_s);
        timeline.series.extend(finished.per_tick);
        finished.summary
    });
    let sources = sources(&setup, &watch, tracepoints.as_ref().err());
    Ok(Observed {
        outcome,
        timed_out,
        exit,
        progress_written,
        progress_read,
        start_ns,
        end_ns,
        responsiveness,
        timeline: watch.sampler.timeline,
        deltas: before.delta(&after),
        notes,
        blocked_tasks,
        kernel_events,
        sources,
    })
}

/// Where the evidence on waits came from, and why a source was not used.
fn sources(setup: &Setup, watch: &Watch, tracepoints_not: Option<&String>) -> BTreeMap<String, String> {
    let ms = setup.sample_interval_ns / 1_000_000;
    let mut s = BTreeMap::new();
    s.insert(
        "wchan".to_string(),
        format!("used: /proc/PID/wchan and stat (state) of the worker and the probe every {ms} ms"),
    );
    let stack = match std::fs::File::open("/proc/self/stack") {
        Ok(_) => "used: /proc/PID/stack of the worker and the probe at each sample".to_string(),
        Err(e) => format!("not used: /proc/self/stack: {e} (2.6.29+, root only)"),
    };
    s.insert("stack".to_string(), stack);
    let psi = match std::fs::File::open(crate::image_side::measure::sampler::PSI[0].0) {
        Ok(_) => format!("used: /proc/pressure/io and memory every {ms} ms"),
        Err(e) => format!("not used: /proc/pressure/io: {e} (4.20+ with CONFIG_PSI, not psi=0)"),
    };
    s.insert("psi".to_string(), psi);
    let sysrq = match watch.blocked.enabled() {
        true => "used: SysRq-W when the probe is silent over 1 s".to_string(),
        false if setup.dump_blocked => "not used: not the initial PID namespace".to_string(),
        false => "not used: only the boot image triggers SysRq-W".to_string(),
    };
    s.insert("sysrq_w".to_string(), sysrq);
    let tracepoints = match tracepoints_not {
        None => "used: see kernel_events".to_string(),
        Some(why) => format!("not used: {why}"),
    };
    s.insert("tracepoints".to_string(), tracepoints);
    s
}

impl Observed {
    fn failed(error: String, at: u64, timeline: Timeline) -> Observed {
        Observed {
            outcome: Err(error),
            timed_out: false,
            exit: None,
            progress_written: 0,
            progress_read: 0,
            start_ns: at,
            end_ns: at,
            responsiveness: None,
            timeline,
            deltas: crate::image_side::measure::sampler::Deltas::default(),
            notes: Vec::new(),
            blocked_tasks: Vec::new(),
            kernel_events: None,
            sources: BTreeMap::new(),
        }
    }
}

/// Wait for a killed or finished worker; give up after 30 s (a process stuck
/// in uninterruptible I/O cannot be killed, and PID 1 must not hang on it).
fn reap(pid: libc::pid_t, notes: &mut Vec<String>) -> Option<Exit> {
    let give_up = mono_ns() + 30_000_000_000;
    loop {
        match process::try_wait(pid) {
            Ok(Some(exit)) => return Some(exit),
            Ok(None) if mono_ns() < give_up => crate::image_side::measure::clock::sleep_until(mono_ns() + 20_000_000),
            _ => {
                notes.push("the worker did not end 30 s after being killed (stuck in I/O?)".into());
                return None;
            }
        }
    }
}

impl Watch<'_> {
    /// Sample, print heartbeats and read the probe and worker pipes until
    /// `until`, the worker's report is complete, or an interrupt.
    fn pump(&mut self, until: u64, mut worker: Option<&mut WorkerReader>) -> Pumped {
        loop {
            if interrupt::interrupted() {
                return Pumped::Interrupted;
            }
            if worker.as_ref().is_some_and(|w| w.eof) {
                return Pumped::WorkerDone;
            }
            let now = mono_ns();
            if now >= until {
                return Pumped::Until;
            }
            if now >= self.next_sample {
                self.sampler.sample();
                if let Some(t) = self.tracing.as_mut() {
                    t.drain();
                }
                self.next_sample = (self.next_sample + self.sample_interval_ns).max(now);
            }
            if worker.is_some() {
                self.blocked.check(now);
            }
            if self.late.next_ns.is_some_and(|at| now >= at) {
                match self.sampler.sample_late_probe() {
                    // From after the read: reading a stack can take longer than the least gap.
                    true => self.late.sampled(mono_ns()),
                    // The table is full: no more, and no wake-up for them either.
                    false => (self.late.threshold_ns, self.late.next_ns) = (None, None),
                }
            }
            if now >= self.next_heartbeat {
                self.heartbeat(now);
                self.next_heartbeat = now + HEARTBEAT_NS;
            }
            let wake = until.min(self.next_sample).min(self.next_heartbeat).min(self.late.next_ns.unwrap_or(u64::MAX));
            let timeout_ms = (wake.saturating_sub(now) / 1_000_000 + 1).min(1000) as libc::c_int;
            self.wait_for_input(worker.as_deref_mut(), timeout_ms);
        }
    }

    fn wait_for_input(&mut self, worker: Option<&mut WorkerReader>, timeout_ms: libc::c_int) {
        let mut fds = Vec::with_capacity(2);
        let probe_fd = self.probe.as_ref().filter(|p| p.alive).map(|p| p.child.output.as_raw_fd());
        let worker_fd = worker.as_ref().map(|w| w.child.output.as_raw_fd());
        for fd in [probe_fd, worker_fd].into_iter().flatten() {
            fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        }
        // SAFETY: fds is a valid array of pollfd; EINTR just returns early.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n <= 0 {
            return;
        }
        for pfd in fds.iter().filter(|p| p.revents != 0) {
            if Some(pfd.fd) == probe_fd {
                self.read_probe();
            }
        }
        if let Some(w) = worker
            && fds.iter().any(|p| Some(p.fd) == worker_fd && p.revents != 0)
        {
            let mut buf = [0u8; 65536];
            match w.child.output.read(&mut buf) {
                Ok(0) => w.eof = true,
                Ok(n) => w.report.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => w.eof = true,
            }
        }
    }

    fn read_probe(&mut self) {
        let Some(p) = self.probe.as_mut() else { return };
        let mut buf = [0u8; 4096];
        match p.child.output.read(&mut buf) {
            Ok(0) | Err(_) => {
                // Gone: nothing of it is sampled any more (a zombie's wchan says nothing).
                p.alive = false;
                (self.late.threshold_ns, self.late.next_ns) = (None, None);
                self.sampler.probe = None;
            }
            Ok(n) => {
                p.pending.extend_from_slice(&buf[..n]);
                let whole = p.pending.len() / SAMPLE_BYTES * SAMPLE_BYTES;
                p.samples.extend(p.pending[..whole].chunks_exact(SAMPLE_BYTES).map(Sample::decode));
                p.pending.drain(..whole);
                if whole > 0 {
                    let now = mono_ns();
                    self.blocked.probe_answered(now);
                    if let Some(last) = p.samples.last() {
                        self.late.answered(last.due_ns, now);
                    }
                }
            }
        }
    }

    fn heartbeat(&self, now: u64) {
        let done = self.progress.written() + self.progress.read();
        let elapsed = secs(now.saturating_sub(self.started));
        let mut line = format!("  ... {}: {} moved, {:.0} s elapsed", self.label, crate::size::human(done), elapsed);
        if self.expected_bytes > 0 && done > 0 {
            let fraction = (done as f64 / self.expected_bytes as f64).min(1.0);
            let eta = elapsed / fraction - elapsed;
            line += &format!(", {:.0}% done, ETA {:.0} s", fraction * 100.0, eta.max(0.0));
        }
        crate::note!("{line}");
    }

    /// From the workload's start, sample the probe whenever its tick runs
    /// later than the baseline's recovery threshold (none without a baseline).
    fn watch_late_ticks(&mut self) {
        let Some(p) = self.probe.as_ref().filter(|p| p.alive) else { return };
        if p.samples.is_empty() {
            return;
        }
        self.late.threshold_ns = Some(probe::recovery_threshold_ns(&p.samples));
        let last = p.samples[p.samples.len() - 1];
        self.late.answered(last.due_ns, mono_ns());
    }

    /// Keep the probe running after the workload until it is back to its
    /// baseline or the recovery deadline passes.
    fn wait_for_recovery(&mut self, start_ns: u64, end_ns: u64, deadline_ns: u64) -> Result<(), Interrupted> {
        let give_up = end_ns + deadline_ns;
        loop {
            let Some(p) = self.probe.as_ref() else { return Ok(()) };
            let baseline: Vec<Sample> = p.samples.iter().filter(|s| s.due_ns < start_ns).copied().collect();
            let threshold = probe::recovery_threshold_ns(&baseline);
            if !p.alive || probe::recovered_at(&p.samples, end_ns, threshold).is_some() {
                return Ok(());
            }
            let now = mono_ns();
            if now >= give_up {
                return Ok(());
            }
            if let Pumped::Interrupted = self.pump(give_up.min(now + 50_000_000), None) {
                return Err(Interrupted);
            }
        }
    }

    /// Kill the probe, collect its last samples and its CPU use.
    fn stop_probe(&mut self) -> (Vec<Sample>, f64, Vec<String>) {
        let Some(p) = self.probe.take() else { return (Vec::new(), 0.0, Vec::new()) };
        let mut notes = Vec::new();
        if !p.alive {
            notes.push("the probe stopped early; its figures cover only the time it ran".into());
        }
        process::kill(p.child.pid, libc::SIGKILL);
        self.probe = Some(p);
        let give_up = mono_ns() + 5_000_000_000;
        while self.probe.as_ref().is_some_and(|p| p.alive) && mono_ns() < give_up {
            let mut fds = [libc::pollfd {
                fd: self.probe.as_ref().unwrap().child.output.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(fds.as_mut_ptr(), 1, 100) } > 0 {
                self.read_probe();
            }
        }
        let p = self.probe.take().unwrap();
        let cpu = match reap(p.child.pid, &mut notes) {
            Some(exit) => {
                let (user, sys) = process::cpu_seconds(&exit.usage);
                user + sys
            }
            None => 0.0,
        };
        (p.samples, cpu, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tick counts as late from its due time plus the threshold; its
    /// samples thin out as it gets later; a tick that overran makes the next
    /// one due when it answered, as the probe reckons it.
    #[test]
    fn a_late_tick_is_sampled_from_its_threshold_and_ever_more_sparsely() {
        let ms = 1_000_000;
        let mut late = LateTick { threshold_ns: Some(11 * ms), interval_ns: 100 * ms, ..LateTick::default() };
        late.answered(1_000 * ms, 1_002 * ms);
        assert_eq!((late.due_ns, late.next_ns), (1_100 * ms, Some(1_111 * ms)));
        late.sampled(1_111 * ms);
        assert_eq!(late.next_ns, Some(1_116 * ms), "at least 5 ms apart");
        late.sampled(1_500 * ms);
        assert_eq!(late.next_ns, Some(1_600 * ms), "a quarter of its lateness apart");
        // That tick answered 1.7 s after its due time: the next is due then.
        late.answered(1_100 * ms, 2_800 * ms);
        assert_eq!((late.due_ns, late.next_ns), (2_800 * ms, Some(2_811 * ms)));
        // Without a threshold (no baseline, or the workload over) nothing is sampled.
        late.threshold_ns = None;
        late.answered(2_800 * ms, 2_801 * ms);
        assert_eq!(late.next_ns, None);
    }
}
