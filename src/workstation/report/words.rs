//! Counts in words, as the findings' sentences say them.

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

#[cfg(test)]
mod tests {
    #[test]
    fn counts_say_one_and_many() {
        assert_eq!(super::times(1), "once");
        assert_eq!(super::times(0), "0 times");
        assert_eq!(super::count(1, "step", "steps"), "1 step");
        assert_eq!(super::count(0, "step", "steps"), "0 steps");
    }
}
