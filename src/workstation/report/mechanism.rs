//! Which kernel mechanism held a blocked task, from the evidence a record
//! has: the function it slept in (wchan) and the kernel stack sampled
//! under it. One vocabulary for every finding, so that block writeback
//! throttling (`rq_qos_wait ← wbt_wait`) is never called dirty throttling
//! (`balance_dirty_pages`), nor a wait for a buffer's I/O either of them.
//!
//! A mechanism is named only from a frame that proves it. A frame common
//! to several mechanisms (`rq_qos_wait`, `folio_wait_bit_common`) names
//! the family it proves and no more; anything else is unknown, by name.

use serde::Serialize;

/// A mechanism of the kernel that makes a task wait, with the setting
/// that acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Mechanism {
    /// `balance_dirty_pages`: the writer paused because dirty memory reached its limit.
    DirtyThrottling,
    /// blk-wbt (`wbt_wait`): the block layer holding writes back to keep reads fast.
    WritebackThrottling,
    /// `rq_qos_wait` with no policy frame in view: wbt, or an io cgroup controller.
    QosThrottling,
    /// No free request or tag on the queue (`blk_mq_get_tag`, 2.6's `get_request_wait`).
    RequestStarvation,
    /// Waiting for pages under writeback to reach the disk (`folio_wait_writeback`).
    PageWriteback,
    /// Waiting for a page's or a buffer's I/O, writeback or read (`folio_wait_bit_common`, `sync_buffer`).
    PageIo,
    /// The journal: a commit to finish or room for a handle (`jbd2_log_wait_commit`, `start_this_handle`).
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
            Mechanism::WritebackThrottling => "block writeback throttling (wbt)",
            Mechanism::QosThrottling => "block-layer QoS throttling (rq_qos_wait: wbt or an io cgroup controller)",
            Mechanism::RequestStarvation => "waiting for a free request on the disk's queue",
            Mechanism::PageWriteback => "waiting for page writeback",
            Mechanism::PageIo => "waiting for a page's or buffer's I/O",
            Mechanism::Journal => "the filesystem journal",
            Mechanism::CacheFlush => "the disk's cache flush",
            Mechanism::Reclaim => "memory reclaim",
        }
    }

    /// The setting that acts on it, as a finding advises it.
    pub fn setting(self) -> &'static str {
        match self {
            Mechanism::DirtyThrottling => "vm.dirty_ratio / dirty_bytes",
            Mechanism::WritebackThrottling | Mechanism::QosThrottling => "the queue's wbt_lat_usec (0 turns wbt off)",
            Mechanism::RequestStarvation => "the queue's nr_requests",
            Mechanism::PageWriteback | Mechanism::PageIo => "the disk's speed and the queue's max_sectors_kb",
            Mechanism::Journal => "the filesystem's journal mode and commit interval",
            Mechanism::CacheFlush => "the disk's write cache",
            Mechanism::Reclaim => "memory, and vm.dirty_* (dirty pages cannot be reclaimed)",
        }
    }
}

/// Frames that prove one mechanism, innermost first where one calls another.
const PROVING: &[(&str, Mechanism)] = &[
    ("wbt_wait", Mechanism::WritebackThrottling),
    ("balance_dirty_pages", Mechanism::DirtyThrottling),
    // Its callers, where a kernel inlines it.
    ("balance_dirty_pages_ratelimited", Mechanism::DirtyThrottling),
    ("balance_dirty_pages_ratelimited_flags", Mechanism::DirtyThrottling),
    ("blk_mq_get_tag", Mechanism::RequestStarvation),
    ("get_request_wait", Mechanism::RequestStarvation),
    ("get_request", Mechanism::RequestStarvation),
    ("folio_wait_writeback", Mechanism::PageWriteback),
    ("wait_on_page_writeback", Mechanism::PageWriteback),
    ("jbd2_log_wait_commit", Mechanism::Journal),
    ("jbd2_journal_commit_transaction", Mechanism::Journal),
    ("start_this_handle", Mechanism::Journal),
    ("log_wait_commit", Mechanism::Journal),
    ("do_journal_begin_r", Mechanism::Journal),
    ("queue_log_writer", Mechanism::Journal),
    ("flush_commit_list", Mechanism::Journal),
    ("blkdev_issue_flush", Mechanism::CacheFlush),
    ("try_to_free_pages", Mechanism::Reclaim),
    ("throttle_vm_writeout", Mechanism::Reclaim),
    ("shrink_inactive_list", Mechanism::Reclaim),
];

/// Frames several mechanisms share: they name the family, used only when
/// no proving frame is in view.
const SHARED: &[(&str, Mechanism)] = &[
    ("rq_qos_wait", Mechanism::QosThrottling),
    ("folio_wait_bit_common", Mechanism::PageIo),
    ("folio_wait_bit", Mechanism::PageIo),
    ("wait_on_page_bit", Mechanism::PageIo),
    ("wait_on_page_bit_common", Mechanism::PageIo),
    ("sync_page", Mechanism::PageIo),
    ("sync_buffer", Mechanism::PageIo),
    ("__wait_on_buffer", Mechanism::PageIo),
    ("bit_wait_io", Mechanism::PageIo),
];

/// Where a task was seen blocked: a mechanism, or none that its evidence proves.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Wait {
    /// A mechanism, and the frame that shows it.
    In { mechanism: Mechanism, frame: String },
    /// Blocked in a function that names no mechanism here.
    Unknown { wchan: String },
    /// wchan read `0`: running, or a kernel that does not say (5.x before
    /// 5.16 reads 0 for most sleeps).
    NotShown,
}

/// The function of a stack frame or a wchan, without its address prefix,
/// its offset or a compiler's clone suffix: "[<0>] balance_dirty_pages.isra.0+0x2f1/0x900"
/// is balance_dirty_pages.
pub fn function(frame: &str) -> &str {
    let frame = frame.trim();
    let frame = frame.rsplit("] ").next().unwrap_or(frame);
    let frame = frame.split('+').next().unwrap_or(frame);
    frame.split('.').next().unwrap_or(frame)
}

/// The mechanism behind one wait: `wchan`, and the kernel stack sampled
/// under it when there is one (innermost frame first).
pub fn classify(wchan: &str, stack: Option<&[String]>) -> Wait {
    if wchan.is_empty() || wchan == "0" {
        return Wait::NotShown;
    }
    let frames: Vec<&str> =
        std::iter::once(function(wchan)).chain(stack.unwrap_or_default().iter().map(|f| function(f))).collect();
    for table in [PROVING, SHARED] {
        // The innermost frame that names a mechanism is the one the task sleeps for.
        for f in &frames {
            if let Some((_, m)) = table.iter().find(|(name, _)| f == name) {
                return Wait::In { mechanism: *m, frame: f.to_string() };
            }
        }
    }
    Wait::Unknown { wchan: wchan.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(mechanism: Mechanism, frame: &str) -> Wait {
        Wait::In { mechanism, frame: frame.into() }
    }

    fn stack(frames: &[&str]) -> Vec<String> {
        frames.iter().map(|f| f.to_string()).collect()
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
        assert_eq!(classify("rq_qos_wait", Some(&s)), held(Mechanism::WritebackThrottling, "wbt_wait"));
        // Without the stack, the family and no more.
        assert_eq!(classify("rq_qos_wait", None), held(Mechanism::QosThrottling, "rq_qos_wait"));
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
        assert_eq!(classify("balance_dirty_pages", Some(&s)), dirty);
        // 2.6 without /proc/PID/stack: the wchan alone proves it, a compiler's clone too.
        assert_eq!(classify("balance_dirty_pages", None), dirty);
        assert_eq!(classify("balance_dirty_pages.isra.0", None), dirty);
        // 2.6.9's writer sleeps in blk_congestion_wait, called from balance_dirty_pages.
        let old = stack(&["blk_congestion_wait+0x77/0x90", "balance_dirty_pages+0x11b/0x1a0"]);
        assert_eq!(
            classify("blk_congestion_wait", Some(&old)),
            held(Mechanism::DirtyThrottling, "balance_dirty_pages")
        );
    }

    /// What the old finding called "dirty throttling": a buffer's I/O, and
    /// 2.6's request-queue waits, are mechanisms of their own.
    #[test]
    fn a_buffer_wait_and_a_request_wait_are_not_dirty_throttling() {
        assert_eq!(classify("sync_buffer", None), held(Mechanism::PageIo, "sync_buffer"));
        assert_eq!(classify("get_request_wait", None), held(Mechanism::RequestStarvation, "get_request_wait"));
        assert_eq!(classify("throttle_vm_writeout", None), held(Mechanism::Reclaim, "throttle_vm_writeout"));
    }

    #[test]
    fn a_page_wait_with_its_stack_names_writeback_and_without_it_the_family() {
        let s = stack(&[
            "folio_wait_bit_common+0x13d/0x350",
            "folio_wait_writeback+0x28/0x80",
            "__filemap_fdatawait_range+0x8c/0x100",
            "file_write_and_wait_range+0x8e/0xc0",
        ]);
        assert_eq!(classify("folio_wait_bit_common", Some(&s)), held(Mechanism::PageWriteback, "folio_wait_writeback"));
        assert_eq!(classify("folio_wait_bit_common", None), held(Mechanism::PageIo, "folio_wait_bit_common"));
    }

    #[test]
    fn the_journal_and_an_unknown_wait_and_a_hidden_one() {
        assert_eq!(classify("jbd2_log_wait_commit", None), held(Mechanism::Journal, "jbd2_log_wait_commit"));
        assert_eq!(classify("do_nanosleep", None), Wait::Unknown { wchan: "do_nanosleep".into() });
        assert_eq!(classify("0", None), Wait::NotShown);
        assert_eq!(classify("", None), Wait::NotShown);
    }
}
