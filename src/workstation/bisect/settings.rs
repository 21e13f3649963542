//! A settings bisect: the good end runs with none of the differences
//! between two sets of settings, the bad end with all of them; the smallest
//! subset that still makes it bad is found by delta debugging (Zeller and
//! Hildebrandt's ddmin), each subset a candidate measured and decided like
//! any step (`step`). An unsure or failed subset counts as "not bad", as
//! ddmin treats an unresolved test: the answer is then 1-minimal among the
//! subsets that could be decided, and the unsure ones are listed with it.
//!
//! Like the search it is replayed from what was measured (`next`), so a
//! session resumes from its saved boots.
//!
//! Each candidate boots one entry with every differing setting given on
//! its command line (`bootmark.set=`, applied by /init as the plan's one
//! variant and read back into every record): the good end with all the
//! good values, the bad end with all the bad ones, a subset with its
//! settings' bad values and the rest's good ones. Nothing is left to what
//! the kernel defaults to, so a candidate is the same boot on any kernel.

use super::search::Outcome;
use crate::schema::variant::{QUEUE_SETTINGS, VM_SETTINGS, Variant, not_in_force};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The good end's candidate name (every setting at its good value).
pub const GOOD: &str = "good-settings";
/// The bad end's (every setting at its bad value).
pub const BAD: &str = "bad-settings";

/// What a settings bisect boots: one entry, and the settings that differ
/// between the two sets, in a fixed order (a subset's indices point here).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Differences {
    pub entry: String,
    pub settings: Vec<Difference>,
}

/// One setting (`vm.NAME` or `queue.NAME`) whose two sets disagree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Difference {
    pub key: String,
    pub good: String,
    pub bad: String,
}

impl Differences {
    /// The settings that differ between `good` and `bad` (`bootmark capture`
    /// outputs, or what two boots' records found), those a variant may set;
    /// a setting only one side has is left as it is, and listed in the second value.
    pub fn between(entry: &str, good: &Variant, bad: &Variant) -> (Differences, Vec<String>) {
        let (g, b) = (values(good), values(bad));
        let mut settings = Vec::new();
        let mut one_sided = Vec::new();
        for key in g.keys().chain(b.keys().filter(|k| !g.contains_key(*k))) {
            match (g.get(key), b.get(key)) {
                (Some(gv), Some(bv)) if gv != bv => {
                    settings.push(Difference { key: key.clone(), good: gv.clone(), bad: bv.clone() })
                }
                (Some(_), Some(_)) => {}
                _ => one_sided.push(key.clone()),
            }
        }
        (Differences { entry: entry.to_string(), settings }, one_sided)
    }

    /// Every value is one word a sysctl or a sysfs queue file takes (a
    /// number, a scheduler's name): checked when the bisect starts, before
    /// any boot, since each goes onto a kernel command line in a menu file
    /// (`scheduler = "bfq init=/bin/sh"` would add a kernel argument).
    pub fn check(&self) -> Result<(), String> {
        for d in &self.settings {
            for (side, value) in [("good", &d.good), ("bad", &d.bad)] {
                if !one_word(value) {
                    return Err(format!(
                        "{}'s {side} value {value:?} is not one word of letters, digits, '.', '_' or '-' (what a sysctl or a queue setting takes): it is not put on a kernel command line",
                        d.key
                    ));
                }
            }
        }
        Ok(())
    }

    /// `bootmark.set=`'s value for a subset: its settings at their bad
    /// values, every other one at its good value.
    pub fn set_for(&self, subset: &[usize]) -> String {
        let one =
            |(i, d): (usize, &Difference)| format!("{}={}", d.key, if subset.contains(&i) { &d.bad } else { &d.good });
        self.settings.iter().enumerate().map(one).collect::<Vec<_>>().join(",")
    }

    /// The candidate's `bootmark.set=` value (`good-settings`, `bad-settings`,
    /// `d1+d3`): named after the candidate, the variant its records carry,
    /// so the report of a bisect's boots tells the candidates apart.
    pub fn set_of(&self, candidate: &str) -> Option<String> {
        let set = match candidate {
            GOOD => self.set_for(&[]),
            BAD => self.set_for(&(0..self.settings.len()).collect::<Vec<_>>()),
            name => self.set_for(&subset_of(name)?),
        };
        Some(format!("{candidate}:{set}"))
    }

    /// `d1+d3` → "queue.max_sectors_kb 128 → 1280, vm.dirty_ratio 20 → 40".
    pub fn describe(&self, subset: &[usize]) -> String {
        let one = |i: &usize| {
            self.settings.get(*i).map_or(format!("d{}?", i + 1), |d| format!("{} {} → {}", d.key, d.good, d.bad))
        };
        subset.iter().map(one).collect::<Vec<_>>().join(", ")
    }
}

/// One word a sysctl or a sysfs queue file takes (a number, a scheduler's
/// name): letters, digits, '.', '_' or '-', nothing a kernel command line
/// would split or a shell would read.
pub fn one_word(v: &str) -> bool {
    !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A variant's settings as `bootmark.set=` names them. Of a ratio and its
/// byte limit only the one in force counts (as `bootmark capture` keeps it).
fn values(v: &Variant) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, n) in &v.vm {
        if VM_SETTINGS.contains(&k.as_str()) && !not_in_force(&v.vm, k) {
            out.insert(format!("vm.{k}"), n.to_string());
        }
    }
    for (k, val) in &v.queue {
        if QUEUE_SETTINGS.contains(&k.as_str()) {
            out.insert(format!("queue.{k}"), val.clone());
        }
    }
    out
}

/// A subset's candidate name: its differences numbered from 1 (`d1+d3`).
pub fn candidate_name(subset: &[usize]) -> String {
    subset.iter().map(|i| format!("d{}", i + 1)).collect::<Vec<_>>().join("+")
}

/// The subset a candidate name stands for.
pub fn subset_of(name: &str) -> Option<Subset> {
    name.split('+').map(|d| d.strip_prefix('d')?.parse::<usize>().ok()?.checked_sub(1)).collect()
}

/// A subset of the differences: their indices, in order.
pub type Subset = Vec<usize>;

/// What ddmin wants next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// This subset's outcome (measure it as a step).
    Measure(Subset),
    /// The smallest subset found bad, and the subsets that were left unsure on the way.
    Done { minimal: Subset, unsure: Vec<Subset> },
}

/// ddmin over differences 0..n (the whole set known bad), replayed from
/// the `outcomes` of the subsets measured so far.
pub fn next(n: usize, outcomes: &BTreeMap<Subset, Outcome>) -> Next {
    let mut c: Subset = (0..n).collect();
    let mut parts = 2;
    let unsure = || {
        outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Unsure | Outcome::Skip)).map(|(s, _)| s.clone()).collect()
    };
    // Whether a subset is bad: Some(answer), or None when it is yet to be measured.
    let bad = |s: &Subset| -> Option<bool> { outcomes.get(s).map(|o| *o == Outcome::Bad) };
    while c.len() >= 2 {
        let chunks = split(&c, parts);
        let mut reduced = false;
        for d in &chunks {
            match bad(d) {
                None => return Next::Measure(d.clone()),
                Some(true) => {
                    (c, parts, reduced) = (d.clone(), 2, true);
                    break;
                }
                Some(false) => {}
            }
        }
        if reduced {
            continue;
        }
        // Complements are worth testing only with more than two parts (with
        // two, a complement is the other part, already measured).
        if parts > 2 {
            for d in &chunks {
                let rest: Subset = c.iter().copied().filter(|x| !d.contains(x)).collect();
                match bad(&rest) {
                    None => return Next::Measure(rest),
                    Some(true) => {
                        (c, parts, reduced) = (rest, (parts - 1).max(2), true);
                        break;
                    }
                    Some(false) => {}
                }
            }
        }
        if reduced {
            continue;
        }
        if parts >= c.len() {
            break;
        }
        parts = (2 * parts).min(c.len());
    }
    Next::Done { minimal: c, unsure: unsure() }
}

/// `c` in `parts` contiguous chunks as equal as can be.
fn split(c: &[usize], parts: usize) -> Vec<Subset> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..parts {
        let end = start + (c.len() - start) / (parts - i);
        out.push(c[start..end].to_vec());
        start = end;
    }
    out.retain(|s| !s.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run ddmin against a rule that says which subsets are bad; how many subsets it measured.
    fn run(n: usize, is_bad: impl Fn(&Subset) -> Outcome) -> (Subset, Vec<Subset>, usize) {
        let mut outcomes = BTreeMap::new();
        loop {
            match next(n, &outcomes) {
                Next::Measure(s) => {
                    let o = is_bad(&s);
                    outcomes.insert(s, o);
                }
                Next::Done { minimal, unsure } => return (minimal, unsure, outcomes.len()),
            }
        }
    }

    fn bad_if(cond: bool) -> Outcome {
        if cond { Outcome::Bad } else { Outcome::Good }
    }

    /// The demo's case: of 8 differences between 5.10's and 6.12's queue
    /// and vm settings, one (max_sectors_kb, here 5) makes the reads wait.
    #[test]
    fn one_setting_is_found_among_eight() {
        let (minimal, unsure, measured) = run(8, |s| bad_if(s.contains(&5)));
        assert_eq!((minimal, unsure), (vec![5], vec![]));
        assert!(measured <= 8, "{measured} subsets");
    }

    /// Two settings that only together make it bad are found together.
    #[test]
    fn two_settings_that_act_together_are_found_together() {
        let (minimal, _, _) = run(10, |s| bad_if(s.contains(&2) && s.contains(&7)));
        assert_eq!(minimal, vec![2, 7]);
    }

    /// A subset that could not be decided counts as not bad and is listed.
    #[test]
    fn an_unsure_subset_is_listed_not_guessed() {
        let (minimal, unsure, _) = run(4, |s| if s == &vec![0, 1] { Outcome::Unsure } else { bad_if(s.contains(&3)) });
        assert_eq!(minimal, vec![3]);
        assert_eq!(unsure, vec![vec![0, 1]]);
    }

    /// The differences between two sets: only settings both have and a
    /// variant may set; each candidate's `bootmark.set=` names them all.
    #[test]
    fn a_candidate_sets_every_difference_one_way_or_the_other() {
        let variant = |vm: &[(&str, u64)], queue: &[(&str, &str)]| Variant {
            name: "x".into(),
            vm: vm.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            queue: queue.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Variant::default()
        };
        let good = variant(
            &[("dirty_ratio", 20), ("dirty_bytes", 0), ("swappiness", 60)],
            &[("max_sectors_kb", "128"), ("scheduler", "mq-deadline"), ("wbt_lat_usec", "2000")],
        );
        let bad = variant(
            &[("dirty_ratio", 20), ("dirty_bytes", 0), ("swappiness", 30)],
            &[("max_sectors_kb", "1280"), ("scheduler", "mq-deadline"), ("read_ahead_kb", "4096")],
        );
        let (d, one_sided) = Differences::between("k2", &good, &bad);
        let keys: Vec<&str> = d.settings.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["queue.max_sectors_kb", "vm.swappiness"]);
        assert_eq!(one_sided, ["queue.wbt_lat_usec", "queue.read_ahead_kb"]);
        assert_eq!(d.set_of(GOOD).unwrap(), "good-settings:queue.max_sectors_kb=128,vm.swappiness=60");
        assert_eq!(d.set_of(BAD).unwrap(), "bad-settings:queue.max_sectors_kb=1280,vm.swappiness=30");
        assert_eq!(d.set_of("d2").unwrap(), "d2:queue.max_sectors_kb=128,vm.swappiness=30");
        assert_eq!(d.describe(&[0]), "queue.max_sectors_kb 128 → 1280");
        assert_eq!((candidate_name(&[0, 2]), subset_of("d1+d3")), ("d1+d3".to_string(), Some(vec![0, 2])));
        assert_eq!(subset_of("k2"), None);
        assert_eq!(subset_of("d0"), None);
        // Every candidate's settings are what /init takes.
        for c in [GOOD, BAD, "d1"] {
            let line = format!("bootmark.set={}", d.set_of(c).unwrap());
            let variant = crate::image_side::init::cmdline::parse(&line).unwrap().set.unwrap();
            assert_eq!(variant.variant.name, c);
        }
    }

    #[test]
    fn chunks_are_as_equal_as_can_be() {
        assert_eq!(split(&[0, 1, 2, 3, 4], 2), vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(split(&[0, 1, 2], 3), vec![vec![0], vec![1], vec![2]]);
    }
}
