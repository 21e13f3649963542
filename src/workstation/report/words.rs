//! Counts in words, as the findings' sentences say them.

/// How often: "once", "3 times".
pub fn times(n: u64) -> String {
    match n {
        1 => "once".into(),
        n => format!("{n} times"),
    }
}
