//! The kernel settings bootmark knows by name: what a sweep's variant may
//! change and how their files read. A leaf under both `variant.rs` (which
//! sets them) and `measure/evidence.rs` (which records them), so neither
//! imports the other.

/// The vm sysctls a variant may set (/proc/sys/vm/NAME).
pub const VM_SETTINGS: [&str; 7] = [
    "dirty_ratio",
    "dirty_background_ratio",
    "dirty_bytes",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
    "swappiness",
];

/// The target disk's queue settings a variant may set (/sys/block/DISK/queue/NAME).
/// `max_sectors_kb`: the largest request the kernel sends the disk (Debian 13's 6.12
/// sends 1.1 MiB writes to an AHCI disk where 6.1 sent 128 KiB ones).
pub const QUEUE_SETTINGS: [&str; 5] = ["scheduler", "nr_requests", "read_ahead_kb", "wbt_lat_usec", "max_sectors_kb"];

/// "noop deadline [cfq]" → "cfq"; "none" or a bare name is kept.
pub fn active_scheduler(line: &str) -> String {
    bracketed(line).unwrap_or(line.trim()).to_string()
}

/// The choice a kernel file marks in brackets ("[local] global mono" → "local",
/// lockdown's "none [integrity] confidentiality" → "integrity"); None without one.
pub fn bracketed(line: &str) -> Option<&str> {
    line.split_whitespace().find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_active_scheduler_is_the_bracketed_one() {
        assert_eq!(super::active_scheduler("noop anticipatory deadline [cfq]\n"), "cfq");
        assert_eq!(super::active_scheduler("[mq-deadline] kyber none"), "mq-deadline");
        assert_eq!(super::active_scheduler("none"), "none");
    }
}
