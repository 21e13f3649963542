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

use super::search::Outcome;
use std::collections::BTreeMap;

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

    #[test]
    fn chunks_are_as_equal_as_can_be() {
        assert_eq!(split(&[0, 1, 2, 3, 4], 2), vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(split(&[0, 1, 2], 3), vec![vec![0], vec![1], vec![2]]);
    }
}
