//! How the kernel's settings files read (which settings a sweep's variant
//! may change is `schema::variant`'s). A leaf under both `variant.rs`
//! (which sets them) and `measure/evidence.rs` (which records them), so
//! neither imports the other.

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
