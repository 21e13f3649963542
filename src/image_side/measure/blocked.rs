//! Where tasks were blocked during a stall, from the kernel itself: when the
//! probe has been silent for over a second, one SysRq-W ("show blocked
//! state": tasks in uninterruptible sleep, with their stacks) is triggered,
//! once per stall and at most MAX_DUMPS times per workload, and its lines
//! are read back from the kernel log afterwards.
//!
//! Only the boot image does this (it owns the machine and has quieted the
//! console, so the dump goes to the log and not over the serial line); a
//! kernel without SysRq-W (2.6.9 prints its help instead) is said so.

use crate::image_side::measure::klog;

/// The probe silent this long is a stall worth a dump.
const SILENT_NS: u64 = 1_000_000_000;
/// Dumps per workload: each is kernel work during the stall it observes.
const MAX_DUMPS: u32 = 3;
/// Lines kept after each dump's header.
const LINES_PER_DUMP: usize = 80;
const HEADER: &str = "Show Blocked State";

pub struct BlockedDumps {
    enabled: bool,
    /// When the last probe sample arrived (or watching began).
    last_sample_ns: u64,
    dumped_this_stall: bool,
    dumps: u32,
    /// Kernel log lines before the workload: only later ones are read back.
    log_lines_before: usize,
}

impl BlockedDumps {
    pub fn new(enabled: bool, now: u64) -> BlockedDumps {
        // SysRq acts on the whole machine: never from a container or the
        // test harness's PID namespace, only as the real init.
        let enabled = enabled && initial_pid_namespace(std::fs::read_link("/proc/self/ns/pid").ok().as_deref());
        let log_lines_before = if enabled { klog::read().lines().count() } else { 0 };
        BlockedDumps { enabled, last_sample_ns: now, dumped_this_stall: false, dumps: 0, log_lines_before }
    }

    /// Whether dumps will be taken (asked for, and the real init).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A probe sample arrived: the machine answers; a stall, if any, is over.
    pub fn probe_answered(&mut self, now: u64) {
        self.last_sample_ns = now;
        self.dumped_this_stall = false;
    }

    /// Called from the watch loop while the workload runs.
    pub fn check(&mut self, now: u64) {
        if !self.enabled || self.dumped_this_stall || self.dumps >= MAX_DUMPS {
            return;
        }
        if now.saturating_sub(self.last_sample_ns) >= SILENT_NS {
            self.dumped_this_stall = true;
            self.dumps += 1;
            let _ = std::fs::write("/proc/sysrq-trigger", "w");
        }
    }

    /// The dumps' lines from the kernel log, and a note if there were none.
    pub fn collect(&self) -> (Vec<String>, Option<String>) {
        if self.dumps == 0 {
            return (Vec::new(), None);
        }
        let log = klog::read();
        let lines = dump_lines(log.lines().skip(self.log_lines_before));
        let note = lines.is_empty().then(|| {
            format!(
                "the probe went silent for over 1 s {} time(s) but the kernel printed no blocked-task dump (no SysRq-W before 2.6.23, or the log is too small)",
                self.dumps
            )
        });
        (lines, note)
    }
}

/// Is this the machine's own PID namespace? Its inode is fixed
/// (PROC_PID_INIT_INO, 3.8+); kernels without /proc/self/ns have no others.
fn initial_pid_namespace(link: Option<&std::path::Path>) -> bool {
    link.is_none_or(|l| l.as_os_str() == "pid:[4026531836]")
}

/// The lines of every dump: from each "Show Blocked State" header on, at
/// most LINES_PER_DUMP each.
fn dump_lines<'a>(log: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut left = 0;
    for line in log {
        if line.contains(HEADER) {
            left = LINES_PER_DUMP;
        }
        if left > 0 {
            out.push(line.to_string());
            left -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_is_taken_once_per_stall_and_read_back() {
        let mut d =
            BlockedDumps { enabled: true, last_sample_ns: 0, dumped_this_stall: false, dumps: 0, log_lines_before: 0 };
        d.enabled = false;
        d.check(5_000_000_000);
        assert_eq!(d.dumps, 0, "disabled: never");
        d.enabled = true;
        d.check(900_000_000);
        assert_eq!(d.dumps, 0, "silent under a second is no stall");
        // Not written for real here: the trigger file is the host's.
        d.dumped_this_stall = true;
        d.dumps = 1;
        d.check(3_000_000_000);
        assert_eq!(d.dumps, 1, "once per stall");
        d.probe_answered(3_100_000_000);
        assert!(!d.dumped_this_stall, "the next stall gets its own");
        let log = "[ 1.0] noise\n[ 9.1] sysrq: Show Blocked State\n[ 9.1] task:bootmark-work state:D stack:0 pid:88\n\
                   [ 9.1] Call Trace:\n[ 9.1]  balance_dirty_pages+0x2d1/0x8e0\n";
        let lines = dump_lines(log.lines());
        assert_eq!(lines.len(), 4);
        assert!(lines[1].contains("bootmark-work state:D"));
        assert!(dump_lines("SysRq : HELP : loglevel0-8 reBoot tErm".lines()).is_empty(), "2.6.9 prints help for w");
        let ns = |l: &str| initial_pid_namespace(Some(std::path::Path::new(l)));
        assert!(ns("pid:[4026531836]") && initial_pid_namespace(None), "the machine's own, or a 2.6 kernel");
        assert!(!ns("pid:[4026532301]"), "a container or the fake boots' namespace");
    }
}
