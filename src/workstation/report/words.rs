//! Counts and figures in words, as the findings' and verdicts' sentences say them.

/// How often: "once", "3 times".
pub fn times(n: u64) -> String {
    match n {
        1 => "once".into(),
        n => format!("{n} times"),
    }
}

/// A count and its noun: "1 step", "2 steps" (`plural` where not just an added s).
pub fn count(n: u64, one: &str, plural: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {plural}"),
    }
}

/// A time in ms as a sentence quotes it: one decimal under 10 ms (a
/// 0.4 ms wait is not "0 ms"), whole milliseconds above.
pub fn ms(value: f64) -> String {
    if value.abs() < 10.0 { format!("{value:.1}") } else { format!("{value:.0}") }
}

/// A metric's value as the bisect's tables and the confirmations' verdicts
/// print it: three significant figures.
pub fn figure(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_say_one_and_many() {
        assert_eq!(super::times(1), "once");
        assert_eq!(super::times(0), "0 times");
        assert_eq!(super::count(1, "step", "steps"), "1 step");
        assert_eq!(super::count(0, "step", "steps"), "0 steps");
    }

    #[test]
    fn a_short_time_keeps_its_decimal() {
        use super::ms;
        assert_eq!((ms(0.44), ms(9.96), ms(48.4)), ("0.4".to_string(), "10.0".to_string(), "48".to_string()));
    }
}
