//! How busy the host's cores were over a stretch of time, from /proc/stat:
//! the suite prints it beside each part's and each scenario's time, so that
//! a core left idle (CI time that a second lane or a lower plan could take)
//! shows in the CI log rather than being guessed.

/// The host's CPU time counters at one moment (clock ticks, all cores).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ticks {
    busy: u64,
    total: u64,
}

impl Ticks {
    /// Now; zero where /proc/stat cannot be read (then nothing is said).
    pub fn now() -> Ticks {
        std::fs::read_to_string("/proc/stat").ok().and_then(|s| parse(&s)).unwrap_or_default()
    }

    /// The share of all cores' time that was busy since `self`, in percent;
    /// None over too short a stretch or without /proc/stat.
    pub fn busy_percent_since(self) -> Option<f64> {
        let now = Ticks::now();
        let total = now.total.checked_sub(self.total).filter(|t| *t > 0 && self.total > 0)?;
        Some(100.0 * now.busy.saturating_sub(self.busy) as f64 / total as f64)
    }

    /// "cores busy 84 %", or what kept it from being said.
    pub fn said_since(self) -> String {
        self.busy_percent_since()
            .map_or("cores busy: unknown (no /proc/stat)".into(), |p| format!("cores busy {p:.0} %"))
    }
}

/// The first line of /proc/stat: `cpu user nice system idle iowait irq
/// softirq steal …`; idle and iowait are the idle time (guest time is
/// already inside user and nice).
fn parse(stat: &str) -> Option<Ticks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line.split_whitespace().skip(1).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    if fields.len() < 5 {
        return None;
    }
    let total: u64 = fields.iter().take(8).sum();
    Some(Ticks { busy: total - fields[3] - fields[4], total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_and_iowait_are_not_busy_and_guest_time_is_not_counted_twice() {
        let t = parse("cpu  100 20 30 800 50 0 0 0 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n").unwrap();
        assert_eq!((t.busy, t.total), (150, 1000));
        assert!(parse("cpu  1 2 3\n").is_none());
        assert!(parse("intr 1 2 3\n").is_none());
    }

    #[test]
    fn a_stretch_with_no_counters_says_nothing() {
        assert!(Ticks::default().busy_percent_since().is_none());
    }
}
