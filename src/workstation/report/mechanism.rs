//! Which kernel mechanism held a blocked task, from the evidence a record
//! has: the function it slept in (wchan), the kernel stack sampled with it,
//! the kernel's version and what the task was doing. One vocabulary for
//! every finding, so that block writeback throttling (`rq_qos_wait ←
//! wbt_wait`) is never called dirty throttling (`balance_dirty_pages`), nor
//! a wait for a buffer's I/O either of them.
//!
//! A mechanism is named only from a frame that proves it on that kernel. A
//! frame common to several mechanisms (`rq_qos_wait`, `folio_wait_bit_common`)
//! names the family it proves and no more; anything else is unknown, by name.
//! The same wchan means different things on different kernels: before 3.2
//! `balance_dirty_pages()` wrote back itself, so a writer asleep in
//! `get_request_wait` inside write() was doing dirty throttling's own
//! writeback (or reclaim's), not starved of requests by someone else.

use serde::Serialize;

/// A kernel release's (major, minor, patch): "2.6.9-42.ELsmp" is (2, 6, 9).
pub type Version = (u32, u32, u32);

/// (major, minor, patch) of a kernel release such as "2.6.9-42.ELsmp".
pub fn version(release: &str) -> Option<Version> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next().flatten().unwrap_or(0)))
}

/// What a wait is read against: the kernel it happened on and whether the
/// task was inside write() (the workload's writing phase) or flushing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Context {
    /// None when the record does not say its release: no version-bound reading is made.
    pub version: Option<Version>,
    pub writing: bool,
}

impl Context {
    /// Before 3.2 (IO-less balance_dirty_pages), a writer over the dirty
    /// limit wrote pages back itself from inside write().
    fn writes_back_itself(self) -> bool {
        self.writing && self.version.is_some_and(|v| v < (3, 2, 0))
    }
}

/// A mechanism of the kernel that makes a task wait, with the setting
/// that acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Mechanism {
    /// `balance_dirty_pages`: the writer held because dirty memory reached
    /// its limit (paused from 3.2, writing back itself before).
    DirtyThrottling,
    /// Before 3.2, inside write() and with no stack to tell: a request,
    /// page or buffer wait of writeback the writer did itself — dirty
    /// throttling's own (`balance_dirty_pages` → `writeback_inodes`) or reclaim's.
    WritebackInWrite,
    /// blk-wbt (`wbt_wait`, `__wbt_wait`; 4.10 on): writes (and from 4.18
    /// discards, never reads) held to wbt's depth for their kind.
    WritebackThrottling,
    /// `rq_qos_wait` with no policy frame in view: wbt, or an io cgroup controller.
    QosThrottling,
    /// No free request or tag on the queue (`blk_mq_get_tag`, 2.6's `get_request_wait`).
    RequestStarvation,
    /// Waiting for pages under writeback to reach the disk (`folio_wait_writeback`, `folio_wait_stable`).
    PageWriteback,
    /// Waiting for a page's or a buffer's I/O, or its lock held by another
    /// task (`folio_wait_bit_common`, `sync_buffer`, `__lock_page`).
    PageIo,
    /// The journal: a commit to finish, room for a handle, a buffer the
    /// commit holds (`jbd2_log_wait_commit`, `start_this_handle`, `do_get_write_access`).
    Journal,
    /// The disk's cache flush at fsync (`blkdev_issue_flush`).
    CacheFlush,
    /// Reclaim: freeing memory, or writeback throttled for it (`try_to_free_pages`, `throttle_vm_writeout`).
    Reclaim,
}

impl Mechanism {
    /// What a sentence calls it.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::DirtyThrottling => "dirty throttling (balance_dirty_pages)",
            Mechanism::WritebackInWrite => {
                "a request or buffer wait inside write() before 3.2 (dirty throttling's own writeback, reclaim's, or ext3's ordered data for the journal: no stack to tell)"
            }
            Mechanism::WritebackThrottling => {
                "a wait in block writeback throttling (wbt_wait: held back for reads, or at wbt's normal ceiling)"
            }
            Mechanism::QosThrottling => "a wait in the block layer's QoS (rq_qos_wait: wbt or an io cgroup controller)",
            Mechanism::RequestStarvation => "waiting for a free request on the disk's queue",
            Mechanism::PageWriteback => "waiting for page writeback",
            Mechanism::PageIo => "waiting for a page's or buffer's I/O, or its lock",
            Mechanism::Journal => "the filesystem journal",
            Mechanism::CacheFlush => "the disk's cache flush",
            Mechanism::Reclaim => "memory reclaim",
        }
    }

    /// The kernels on which its frames mean what [`Mechanism::name`] says
    /// (docs/results.md's table; a test keeps the two the same).
    #[cfg(test)]
    pub fn kernels(self) -> &'static str {
        match self {
            Mechanism::DirtyThrottling => "every kernel (a pause from 3.2, the writer's own writeback before)",
            Mechanism::WritebackInWrite => "2.6 to 3.1",
            Mechanism::WritebackThrottling => "4.10 on (__wbt_wait's own loop to 4.20, rq_qos_wait under it from 5.0)",
            Mechanism::QosThrottling => "5.0 on",
            Mechanism::RequestStarvation => "every kernel (get_request_wait to 3.x, blk_mq_get_tag with blk-mq)",
            Mechanism::PageWriteback | Mechanism::PageIo | Mechanism::Journal => "every kernel",
            Mechanism::CacheFlush | Mechanism::Reclaim => "every kernel",
        }
    }

    /// The setting that acts on it on a kernel of `version`, as a finding
    /// advises it; None where no setting does (a page's I/O waits for the
    /// disk, and no queue setting makes that shorter).
    pub fn setting(self, version: Option<Version>) -> Option<&'static str> {
        let since = |v: Version| version.is_none_or(|k| k >= v);
        match self {
            Mechanism::DirtyThrottling if since((2, 6, 29)) => {
                Some("vm.dirty_ratio / dirty_bytes, and dirty_background_ratio / dirty_background_bytes")
            }
            Mechanism::DirtyThrottling => Some("vm.dirty_ratio and dirty_background_ratio"),
            // Three mechanisms the wchan cannot tell apart: none is advised.
            Mechanism::WritebackInWrite => None,
            Mechanism::WritebackThrottling | Mechanism::QosThrottling if since((4, 10, 0)) => {
                Some("the queue's wbt_lat_usec (0 turns wbt off)")
            }
            Mechanism::WritebackThrottling | Mechanism::QosThrottling => None,
            Mechanism::RequestStarvation => Some("the queue's nr_requests"),
            Mechanism::PageWriteback | Mechanism::PageIo => None,
            // commit= sets only the periodic commit; an fsync commits at once.
            Mechanism::Journal => Some("the filesystem's journal mode (data=)"),
            Mechanism::CacheFlush => Some("the disk's write cache"),
            Mechanism::Reclaim => Some("memory, and vm.dirty_* (dirty pages cannot be reclaimed)"),
        }
    }
}

/// Every mechanism, in the order the documentation's table lists them.
#[cfg(test)]
pub const ALL: [Mechanism; 10] = [
    Mechanism::DirtyThrottling,
    Mechanism::WritebackInWrite,
    Mechanism::WritebackThrottling,
    Mechanism::QosThrottling,
    Mechanism::RequestStarvation,
    Mechanism::PageWriteback,
    Mechanism::PageIo,
    Mechanism::Journal,
    Mechanism::CacheFlush,
    Mechanism::Reclaim,
];

/// What docs/results.md says of each mechanism beside what `classify`
/// reads; only its test needs them, to keep the page and the code one.
#[cfg(test)]
impl Mechanism {
    /// Why its setting acts on it, or why none does.
    pub fn why(self) -> &'static str {
        match self {
            Mechanism::DirtyThrottling => {
                "a lower limit throttles sooner: shorter pauses from 3.2, smaller rounds of the writer's own writeback before"
            }
            Mechanism::WritebackInWrite => {
                "without a stack, dirty throttling, reclaim and ext3's ordered-data writes (journal_dirty_data) wait alike: none is advised"
            }
            Mechanism::WritebackThrottling => {
                "wbt lowers the write depth when reads miss this target (its own `wbt_step` says when it scaled down); it never holds a read"
            }
            Mechanism::QosThrottling => "wbt or an io cgroup controller: only a stack with wbt's frame tells",
            Mechanism::RequestStarvation => {
                "more requests let more writes queue: the wait moves, the disk is no faster (before 3.2 inside write() it is the row above)"
            }
            Mechanism::PageWriteback | Mechanism::PageIo => {
                "no setting: the I/O lasts as long as the disk takes, and another task may hold the lock"
            }
            Mechanism::Journal => {
                "data=ordered writes a transaction's data before its commit; commit= sets only the periodic commit, and an fsync commits at once"
            }
            Mechanism::CacheFlush => "a volatile cache is flushed for fsync to be durable: compare like with like",
            Mechanism::Reclaim => "dirty pages must be written before they can be freed",
        }
    }

    /// The frames that show it, as the documentation lists them.
    fn frames(self) -> Vec<&'static str> {
        let named = |table: &[(&'static str, Mechanism)]| -> Vec<&'static str> {
            table.iter().filter(|(_, m)| *m == self).map(|(f, _)| *f).collect()
        };
        match self {
            Mechanism::WritebackInWrite => OWN_WRITEBACK.to_vec(),
            _ => [named(REASONS), named(PROVING), named(SHARED)].concat(),
        }
    }
}

/// The table of mechanisms docs/results.md carries, from the tables
/// `classify` reads (a test keeps the two the same).
#[cfg(test)]
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| mechanism | frames that show it | kernels | setting that acts on it (newest kernels) | why |\n|---|---|---|---|---|\n",
    );
    for m in ALL {
        let frames: Vec<String> = m.frames().iter().map(|f| format!("`{f}`")).collect();
        out += &format!(
            "| {} | {} | {} | {} | {} |\n",
            m.name(),
            frames.join(", "),
            m.kernels(),
            m.setting(None).unwrap_or("none"),
            m.why()
        );
    }
    out
}

/// Frames that say why the task is waiting at all, whatever it waits on
/// inside them: a writer in `balance_dirty_pages` is throttled even where
/// (before 3.2) it sleeps in `get_request_wait` writing pages back itself,
/// and a task reclaiming memory is in reclaim whatever its pageout waits on.
const REASONS: &[(&str, Mechanism)] = &[
    ("balance_dirty_pages", Mechanism::DirtyThrottling),
    // Its callers, where a kernel inlines it.
    ("balance_dirty_pages_ratelimited", Mechanism::DirtyThrottling),
    ("balance_dirty_pages_ratelimited_flags", Mechanism::DirtyThrottling),
    ("try_to_free_pages", Mechanism::Reclaim),
    ("throttle_vm_writeout", Mechanism::Reclaim),
    ("shrink_inactive_list", Mechanism::Reclaim),
];

/// Frames that prove one mechanism, innermost first where one calls another.
const PROVING: &[(&str, Mechanism)] = &[
    ("wbt_wait", Mechanism::WritebackThrottling),
    ("__wbt_wait", Mechanism::WritebackThrottling),
    ("blk_mq_get_tag", Mechanism::RequestStarvation),
    ("get_request_wait", Mechanism::RequestStarvation),
    ("get_request", Mechanism::RequestStarvation),
    ("folio_wait_writeback", Mechanism::PageWriteback),
    ("wait_on_page_writeback", Mechanism::PageWriteback),
    // Stable pages: a page under writeback cannot change until it is written.
    ("folio_wait_stable", Mechanism::PageWriteback),
    ("wait_for_stable_page", Mechanism::PageWriteback),
    ("jbd2_log_wait_commit", Mechanism::Journal),
    ("jbd2_journal_commit_transaction", Mechanism::Journal),
    ("start_this_handle", Mechanism::Journal),
    ("wait_transaction_locked", Mechanism::Journal),
    ("__jbd2_log_wait_for_space", Mechanism::Journal),
    ("__log_wait_for_space", Mechanism::Journal),
    // A buffer the committing transaction holds (BH_Shadow), jbd and jbd2:
    // the wchan itself before 3.11, sleep_on_shadow_bh to 3.16, bit_wait_io under it after.
    ("do_get_write_access", Mechanism::Journal),
    ("sleep_on_shadow_bh", Mechanism::Journal),
    // ext3 data=ordered: a data buffer the commit is writing.
    ("journal_dirty_data", Mechanism::Journal),
    ("log_wait_commit", Mechanism::Journal),
    ("do_journal_begin_r", Mechanism::Journal),
    ("queue_log_writer", Mechanism::Journal),
    ("flush_commit_list", Mechanism::Journal),
    ("blkdev_issue_flush", Mechanism::CacheFlush),
];

/// Frames several mechanisms share: they name the family, used only when
/// no proving frame is in view.
const SHARED: &[(&str, Mechanism)] = &[
    ("rq_qos_wait", Mechanism::QosThrottling),
    ("folio_wait_bit_common", Mechanism::PageIo),
    ("folio_wait_bit", Mechanism::PageIo),
    ("wait_on_page_bit", Mechanism::PageIo),
    ("wait_on_page_bit_common", Mechanism::PageIo),
    // A page's or buffer's wait: sync_page/sync_buffer to 2.6.38 (2.6.10 on
    // also the buffer's lock held by another task, not only its I/O),
    // sleep_on_page/sleep_on_buffer to 3.16, bit_wait_io and folios after.
    ("sync_page", Mechanism::PageIo),
    ("sync_buffer", Mechanism::PageIo),
    ("sleep_on_page", Mechanism::PageIo),
    ("sleep_on_page_killable", Mechanism::PageIo),
    ("sleep_on_buffer", Mechanism::PageIo),
    ("__wait_on_buffer", Mechanism::PageIo),
    ("bit_wait_io", Mechanism::PageIo),
    ("__lock_page", Mechanism::PageIo),
    ("__folio_lock", Mechanism::PageIo),
    ("__lock_buffer", Mechanism::PageIo),
];

/// Waits that, before 3.2 and inside write(), are writeback the writer
/// does itself: what `balance_dirty_pages()` (or reclaim) sleeps on while
/// writing pages back, when no stack says which.
const OWN_WRITEBACK: &[&str] = &[
    "get_request_wait",
    "get_request",
    "sync_buffer",
    "sync_page",
    "sleep_on_buffer",
    "sleep_on_page",
    "wait_on_page_writeback",
    "blk_congestion_wait",
    "congestion_wait",
];

/// Where a task was seen blocked: a mechanism, or none that its evidence proves.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Wait {
    /// A mechanism, and the frame that shows it.
    In { mechanism: Mechanism, frame: String },
    /// Blocked in a function that names no mechanism here.
    Unknown { wchan: String },
    /// wchan read `0`: running, or a kernel that hides it ([`zero_wchan`]).
    NotShown,
}

/// What a wchan of `0` means on a kernel of `version` and architecture
/// `arch`. Every kernel reads 0 for a running task; x86_64 kernels with the
/// ORC unwinder (Debian's from 4.14) also read 0 for most sleeping ones,
/// until 5.16 fixed get_wchan().
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroWchan {
    Running,
    RunningOrHidden,
}

pub fn zero_wchan(version: Option<Version>, arch: Option<&str>) -> ZeroWchan {
    let x86_64 = arch.is_none_or(|a| a == "x86_64");
    match version {
        Some(v) if x86_64 && ((4, 14, 0)..(5, 16, 0)).contains(&v) => ZeroWchan::RunningOrHidden,
        Some(_) => ZeroWchan::Running,
        None => ZeroWchan::RunningOrHidden,
    }
}

/// The function of a stack frame or a wchan, without its address prefix,
/// its offset, its module or a compiler's clone suffix: "[<0>] balance_dirty_pages.isra.0+0x2f1/0x900"
/// is balance_dirty_pages, and so is "jbd2_log_wait_commit [jbd2]" (a wchan
/// of 5.12 to 5.14, which printed it with its module) jbd2_log_wait_commit.
pub fn function(frame: &str) -> &str {
    let frame = frame.trim();
    let frame = frame.rsplit("] ").next().unwrap_or(frame);
    let frame = frame.split_whitespace().next().unwrap_or(frame);
    let frame = frame.split('+').next().unwrap_or(frame);
    frame.split('.').next().unwrap_or(frame)
}

/// The stack sampled with `wchan`, if it is of the same moment: the two are
/// read one after the other, and a task woken between the reads leaves a
/// stack of somewhere else (a 6.1 writer sampled in balance_dirty_pages,
/// its stack then at a preemption on the way back to user space). A stack
/// holds its wchan's function whenever both are of one sleep; a wchan of 0
/// says nothing to compare, and its stack stands alone.
pub fn stack_of_the_moment<'a>(wchan: &str, stack: Option<&'a [String]>) -> Option<&'a [String]> {
    let stack = stack?;
    let shown = !(wchan.is_empty() || wchan == "0");
    let wanted = function(wchan);
    (!shown || stack.iter().any(|f| function(f) == wanted)).then_some(stack)
}

/// The mechanism behind one wait: `wchan`, the kernel stack sampled with
/// it when there is one (innermost frame first; read only if it is of the
/// same moment, `stack_of_the_moment`), read on `context`'s kernel.
pub fn classify(wchan: &str, stack: Option<&[String]>, context: Context) -> Wait {
    if wchan.is_empty() || wchan == "0" {
        return Wait::NotShown;
    }
    let stack = stack_of_the_moment(wchan, stack);
    let frames: Vec<&str> =
        std::iter::once(function(wchan)).chain(stack.unwrap_or_default().iter().map(|f| function(f))).collect();
    if let Some(wait) = named_by(&frames, stack.is_some(), context) {
        return wait;
    }
    if stack.is_none() && context.writes_back_itself() && OWN_WRITEBACK.contains(&function(wchan)) {
        return Wait::In { mechanism: Mechanism::WritebackInWrite, frame: function(wchan).to_string() };
    }
    Wait::Unknown { wchan: wchan.to_string() }
}

/// One sample of a task: `classify`, and where its wchan read 0 while its
/// state said it slept (`D` or `S`: x86_64 4.14 to 5.15 hide most sleeps
/// from wchan), its kernel stack read alone: the innermost frame that
/// names a mechanism. A stack naming none leaves the sleep hidden (it may
/// be of a moment after the task woke: then it names where it was
/// preempted, no wait). A running task's stack is never read as a wait.
pub fn classify_sample(wchan: &str, state: Option<&str>, stack: Option<&[String]>, context: Context) -> Wait {
    let asleep = state.is_some_and(|s| s.starts_with('D') || s.starts_with('S'));
    match classify(wchan, stack, context) {
        Wait::NotShown if asleep => {
            let frames: Vec<&str> = stack.unwrap_or_default().iter().map(|f| function(f)).collect();
            named_by(&frames, true, context).unwrap_or(Wait::NotShown)
        }
        wait => wait,
    }
}

/// The mechanism the innermost frame naming one shows (the reasons' table
/// first, then those that prove one, then the shared ones), if any.
fn named_by(frames: &[&str], with_stack: bool, context: Context) -> Option<Wait> {
    for table in [REASONS, PROVING, SHARED] {
        // The innermost frame that names a mechanism is the one the task sleeps for.
        for f in frames {
            if let Some((_, m)) = table.iter().find(|(name, _)| f == name) {
                // Without a stack, an old kernel's request or page wait
                // inside write() is the writer's own writeback: whose, the
                // wchan alone cannot say.
                let own = !with_stack && context.writes_back_itself() && OWN_WRITEBACK.contains(f);
                return Some(match own {
                    true => Wait::In { mechanism: Mechanism::WritebackInWrite, frame: f.to_string() },
                    false => Wait::In { mechanism: *m, frame: f.to_string() },
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 6.1 writer inside write(): no version-bound reading applies.
    const NEW: Context = Context { version: Some((6, 1, 0)), writing: true };
    /// 2.6.9 (SLES 9's base) inside write(), and flushing.
    const OLD: Context = Context { version: Some((2, 6, 9)), writing: true };
    const OLD_FLUSHING: Context = Context { version: Some((2, 6, 9)), writing: false };

    fn held(mechanism: Mechanism, frame: &str) -> Wait {
        Wait::In { mechanism, frame: frame.into() }
    }

    fn stack(frames: &[&str]) -> Vec<String> {
        frames.iter().map(|f| f.to_string()).collect()
    }

    /// Two samples of 6.1's writer (the mechanisms check's tinydirty boot,
    /// 2026-12-06), wchan read first, then the stack: one of the same sleep,
    /// one read after the writer woke and was preempted on its way back to
    /// user space, which is no evidence about balance_dirty_pages.
    #[test]
    fn a_stack_is_read_with_its_wchan_only_when_it_holds_it() {
        let same = stack(&[
            "balance_dirty_pages+0x3bc/0xd60",
            "balance_dirty_pages_ratelimited_flags+0x2a0/0x380",
            "generic_perform_write+0x15a/0x240",
            "ext4_buffered_write_iter+0x8c/0x140 [ext4]",
            "vfs_write+0x235/0x3f0",
        ]);
        let later = stack(&[
            "exit_to_user_mode_prepare+0x17c/0x240",
            "irqentry_exit_to_user_mode+0x5/0x30",
            "asm_sysvec_apic_timer_interrupt+0x16/0x20",
        ]);
        assert_eq!(stack_of_the_moment("balance_dirty_pages", Some(&same)), Some(&same[..]));
        assert_eq!(stack_of_the_moment("balance_dirty_pages", Some(&later)), None);
        // A wchan of 0 has nothing to compare: its stack stands alone.
        assert_eq!(stack_of_the_moment("0", Some(&later)), Some(&later[..]));
        assert_eq!(stack_of_the_moment("balance_dirty_pages", None), None);
        // 5.12–5.14 printed a module's wchan with its module: the same function.
        let journal = stack(&["jbd2_log_wait_commit+0xac/0x120 [jbd2]", "jbd2_complete_transaction+0x63/0x90 [jbd2]"]);
        assert_eq!(function("jbd2_log_wait_commit [jbd2]"), "jbd2_log_wait_commit");
        assert_eq!(stack_of_the_moment("jbd2_log_wait_commit [jbd2]", Some(&journal)), Some(&journal[..]));
    }

    /// 5.10 hides most sleeps from wchan (read 0), and its /proc/PID/stack
    /// still says where: the demo's 5.10 writer, state D, wchan 0, asleep
    /// in balance_dirty_pages (its records of 2026-12-07). Its stack is read
    /// only while its state says it slept; a stack naming no mechanism (one
    /// read after it woke) leaves the sleep hidden.
    #[test]
    fn a_sleep_the_wchan_hides_is_read_from_its_stack() {
        const V510: Context = Context { version: Some((5, 10, 0)), writing: true };
        let dirty = stack(&[
            "balance_dirty_pages+0x2de/0xcc0",
            "balance_dirty_pages_ratelimited+0x2f5/0x3c0",
            "generic_perform_write+0x13a/0x1d0",
            "ext4_buffered_write_iter+0x9f/0x160 [ext4]",
        ]);
        let throttled = held(Mechanism::DirtyThrottling, "balance_dirty_pages");
        assert_eq!(classify_sample("0", Some("D"), Some(&dirty), V510), throttled);
        assert_eq!(classify_sample("0", Some("R"), Some(&dirty), V510), Wait::NotShown, "running: no wait");
        assert_eq!(classify_sample("0", None, Some(&dirty), V510), Wait::NotShown, "no state: not known asleep");
        assert_eq!(classify_sample("0", Some("D"), None, V510), Wait::NotShown);
        let woken = stack(&["exit_to_user_mode_prepare+0x17c/0x240", "irqentry_exit_to_user_mode+0x5/0x30"]);
        assert_eq!(classify_sample("0", Some("D"), Some(&woken), V510), Wait::NotShown);
        // A shown wchan is read as before, whatever the state.
        assert_eq!(classify_sample("balance_dirty_pages", Some("R"), None, V510), throttled);
        // The probe's read on 5.10, asleep (S) on a page: named by its stack.
        let page = stack(&[
            "wait_on_page_bit_common+0x116/0x3b0",
            "generic_file_buffered_read+0x5a8/0xa90",
            "new_sync_read+0x119/0x1b0",
        ]);
        assert!(matches!(classify_sample("0", Some("S"), Some(&page), V510), Wait::In { .. }));
    }

    /// The 6.1 writer of the demo, in fdatasync: the block layer's
    /// writeback throttling, not dirty throttling.
    #[test]
    fn rq_qos_wait_under_wbt_wait_is_writeback_throttling() {
        let s = stack(&[
            "[<0>] rq_qos_wait+0xbe/0x130",
            "[<0>] wbt_wait+0x9c/0x100",
            "[<0>] __rq_qos_throttle+0x20/0x40",
            "[<0>] blk_mq_submit_bio+0x1d4/0x5b0",
            "[<0>] submit_bio_noacct_nocheck+0x11e/0x3b0",
            "[<0>] ext4_io_submit+0x24/0x40 [ext4]",
            "[<0>] ext4_writepages+0x5c5/0xdd0 [ext4]",
            "[<0>] do_writepages+0xcd/0x1e0",
            "[<0>] file_write_and_wait_range+0x6e/0xc0",
            "[<0>] ext4_sync_file+0xa6/0x3a0 [ext4]",
            "[<0>] __x64_sys_fdatasync+0x48/0x80",
        ]);
        assert_eq!(classify("rq_qos_wait", Some(&s), NEW), held(Mechanism::WritebackThrottling, "wbt_wait"));
        // Without the stack, the family and no more.
        assert_eq!(classify("rq_qos_wait", None, NEW), held(Mechanism::QosThrottling, "rq_qos_wait"));
    }

    #[test]
    fn balance_dirty_pages_is_dirty_throttling_on_every_kernel() {
        let s = stack(&[
            "balance_dirty_pages+0x2f1/0x900",
            "balance_dirty_pages_ratelimited_flags+0x2ce/0x380",
            "generic_perform_write+0x149/0x1f0",
            "ext4_buffered_write_iter+0x6b/0x120 [ext4]",
        ]);
        let dirty = held(Mechanism::DirtyThrottling, "balance_dirty_pages");
        assert_eq!(classify("balance_dirty_pages", Some(&s), NEW), dirty);
        // 2.6 without /proc/PID/stack: the wchan alone proves it, a compiler's clone too.
        assert_eq!(classify("balance_dirty_pages", None, NEW), dirty);
        assert_eq!(classify("balance_dirty_pages.isra.0", None, NEW), dirty);
        // 2.6.9's writer sleeps in blk_congestion_wait, called from balance_dirty_pages.
        let old = stack(&["blk_congestion_wait+0x77/0x90", "balance_dirty_pages+0x11b/0x1a0"]);
        assert_eq!(
            classify("blk_congestion_wait", Some(&old), OLD),
            held(Mechanism::DirtyThrottling, "balance_dirty_pages")
        );
    }

    /// Before 3.2 balance_dirty_pages() wrote back itself: its request and
    /// page waits inside write() are its own writeback, not starvation.
    #[test]
    fn before_3_2_a_request_wait_inside_write_is_the_writers_own_writeback() {
        // With a stack (2.6.29–3.1): the stack says whose writeback.
        let s = stack(&[
            "get_request_wait+0xdd/0x1a0",
            "__make_request+0x8a/0x4d0",
            "submit_bio+0x6d/0x110",
            "ext3_ordered_writepage+0x1c4/0x220",
            "generic_writepages+0x1e2/0x330",
            "writeback_inodes_wb+0x2c5/0x440",
            "balance_dirty_pages+0x21e/0x2c0",
            "generic_file_buffered_write+0x1e8/0x2b0",
        ]);
        let throttled = held(Mechanism::DirtyThrottling, "balance_dirty_pages");
        assert_eq!(classify("get_request_wait", Some(&s), OLD), throttled);
        // On any kernel a stack through balance_dirty_pages is dirty throttling.
        assert_eq!(classify("get_request_wait", Some(&s), NEW), throttled);
        // Without one (2.6 before .29 has no /proc/PID/stack): the family, never starvation.
        for wchan in ["get_request_wait", "sync_buffer", "sync_page", "wait_on_page_writeback", "blk_congestion_wait"] {
            assert_eq!(classify(wchan, None, OLD), held(Mechanism::WritebackInWrite, wchan), "{wchan}");
        }
        // Flushing (fsync), the writer submits its own I/O: a full queue is a full queue.
        assert_eq!(
            classify("get_request_wait", None, OLD_FLUSHING),
            held(Mechanism::RequestStarvation, "get_request_wait")
        );
        // 3.2 on, inside write(), a request wait is the queue's.
        assert_eq!(classify("get_request_wait", None, NEW), held(Mechanism::RequestStarvation, "get_request_wait"));
        // Reclaim's pageout is reclaim, whatever it waits on inside.
        let reclaim = stack(&["get_request_wait+0xdd/0x1a0", "pageout+0x11f/0x170", "try_to_free_pages+0x1f0/0x2c0"]);
        assert_eq!(classify("get_request_wait", Some(&reclaim), OLD), held(Mechanism::Reclaim, "try_to_free_pages"));
    }

    /// A buffer wait the stack places in the journal is the journal.
    #[test]
    fn a_buffer_wait_under_the_journal_is_the_journal() {
        // jbd2 waiting for a buffer the commit is writing (BH_Shadow).
        let shadow = stack(&[
            "bit_wait_io+0x11/0x60",
            "__wait_on_bit+0x42/0x110",
            "out_of_line_wait_on_bit+0x8c/0xb0",
            "do_get_write_access+0x2a4/0x3e0 [jbd2]",
            "jbd2_journal_get_write_access+0x6a/0x90 [jbd2]",
            "__ext4_journal_get_write_access+0x8e/0x1c0 [ext4]",
        ]);
        assert_eq!(classify("bit_wait_io", Some(&shadow), NEW), held(Mechanism::Journal, "do_get_write_access"));
        // ext3 data=ordered on 2.6: a data buffer of the committing transaction.
        let ordered = stack(&["sync_buffer+0x3b/0x50", "__wait_on_buffer+0x8b/0xb0", "journal_dirty_data+0x1c6/0x230"]);
        assert_eq!(classify("sync_buffer", Some(&ordered), OLD), held(Mechanism::Journal, "journal_dirty_data"));
        // Without the stack a buffer wait on 6.x is the family, and the lock is in its name.
        assert_eq!(classify("bit_wait_io", None, NEW), held(Mechanism::PageIo, "bit_wait_io"));
        assert!(Mechanism::PageIo.name().contains("lock"));
        // 4.10–4.18's wbt sleeps in __wbt_wait; a page wait on stable pages is writeback.
        assert_eq!(classify("__wbt_wait", None, NEW), held(Mechanism::WritebackThrottling, "__wbt_wait"));
        assert_eq!(classify("folio_wait_stable", None, NEW), held(Mechanism::PageWriteback, "folio_wait_stable"));
    }

    #[test]
    fn wchan_zero_is_running_except_where_the_kernel_hides_sleeps() {
        assert_eq!(zero_wchan(Some((5, 10, 0)), Some("x86_64")), ZeroWchan::RunningOrHidden);
        assert_eq!(zero_wchan(Some((5, 16, 0)), Some("x86_64")), ZeroWchan::Running);
        assert_eq!(zero_wchan(Some((6, 12, 0)), None), ZeroWchan::Running);
        assert_eq!(zero_wchan(Some((2, 6, 9)), Some("x86_64")), ZeroWchan::Running);
        assert_eq!(zero_wchan(Some((5, 10, 0)), Some("aarch64")), ZeroWchan::Running);
        assert_eq!(zero_wchan(None, None), ZeroWchan::RunningOrHidden);
    }

    /// docs/results.md lists the mechanisms as the code reads them.
    #[test]
    fn the_documentations_table_is_the_codes() {
        let docs = include_str!("../../../docs/results.md");
        let table = markdown_table();
        assert!(docs.contains(&table), "docs/results.md should carry, verbatim:\n{table}");
        // Each mechanism's frames, for WritebackInWrite its wchans alone.
        assert!(table.contains("| `get_request_wait`, `get_request`, `sync_buffer`"), "{table}");
    }

    /// Advice only where the setting exists and acts on the mechanism.
    #[test]
    fn a_setting_is_advised_only_where_it_exists_and_acts() {
        assert_eq!(Mechanism::WritebackThrottling.setting(Some((2, 6, 9))), None);
        assert!(Mechanism::WritebackThrottling.setting(Some((6, 1, 0))).unwrap().contains("wbt_lat_usec"));
        assert!(!Mechanism::DirtyThrottling.setting(Some((2, 6, 9))).unwrap().contains("dirty_bytes"));
        assert_eq!(Mechanism::WritebackInWrite.setting(Some((2, 6, 9))), None, "three mechanisms, none advised");
        assert!(Mechanism::DirtyThrottling.setting(Some((2, 6, 29))).unwrap().contains("dirty_bytes"));
        assert_eq!(Mechanism::PageIo.setting(Some((6, 1, 0))), None);
        assert_eq!(Mechanism::PageWriteback.setting(None), None);
        assert_eq!(version("2.6.16.1"), Some((2, 6, 16)));
        assert_eq!(version("6.1.0-50-amd64"), Some((6, 1, 0)));
    }

    /// What the old finding called "dirty throttling": a buffer's I/O, and
    /// 2.6's request-queue waits, are mechanisms of their own.
    #[test]
    fn a_buffer_wait_and_a_request_wait_are_not_dirty_throttling() {
        assert_eq!(classify("sync_buffer", None, NEW), held(Mechanism::PageIo, "sync_buffer"));
        assert_eq!(classify("get_request_wait", None, NEW), held(Mechanism::RequestStarvation, "get_request_wait"));
        assert_eq!(classify("throttle_vm_writeout", None, NEW), held(Mechanism::Reclaim, "throttle_vm_writeout"));
    }

    #[test]
    fn a_page_wait_with_its_stack_names_writeback_and_without_it_the_family() {
        let s = stack(&[
            "folio_wait_bit_common+0x13d/0x350",
            "folio_wait_writeback+0x28/0x80",
            "__filemap_fdatawait_range+0x8c/0x100",
            "file_write_and_wait_range+0x8e/0xc0",
        ]);
        assert_eq!(
            classify("folio_wait_bit_common", Some(&s), NEW),
            held(Mechanism::PageWriteback, "folio_wait_writeback")
        );
        assert_eq!(classify("folio_wait_bit_common", None, NEW), held(Mechanism::PageIo, "folio_wait_bit_common"));
    }

    #[test]
    fn the_journal_and_an_unknown_wait_and_a_hidden_one() {
        assert_eq!(classify("jbd2_log_wait_commit", None, NEW), held(Mechanism::Journal, "jbd2_log_wait_commit"));
        assert_eq!(classify("do_nanosleep", None, NEW), Wait::Unknown { wchan: "do_nanosleep".into() });
        assert_eq!(classify("0", None, NEW), Wait::NotShown);
        assert_eq!(classify("", None, NEW), Wait::NotShown);
    }
}
