//! The search: candidates in order, the first known good and the last
//! known bad; each step boots the candidate nearest the middle of what is
//! left (with several servers, as many candidates spread over it) until its
//! test decides (`step::Model::judge`). The search keeps no state of its
//! own: it is replayed from the boots so far (`next`), so a session that
//! saves them after every boot resumes where it stopped. A candidate that
//! will not boot, or that the test cannot place by its cap, is set aside
//! (`skip`, `unsure`) and a neighbour is tried, as `git bisect skip` does;
//! when only such candidates are left between the last good and the first
//! bad, the answer is that range, with them named.

use super::step::{Apart, END_BOOTS_AT_LEAST, Ends, Model, Said, Worse};

/// The most boots an end gets while it cannot be told from the other.
pub const END_BOOTS_AT_MOST: usize = 16;
/// Boots of an end that may fail before the bisect gives up on it.
const END_FAILURES_AT_MOST: usize = 3;

/// Which end a boot is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum End {
    Good,
    Bad,
}

/// What measuring the ends wants next.
#[derive(Clone, Debug, PartialEq)]
pub enum EndsNext {
    Boot(End),
    Ready(Ends, Apart),
    /// Not distinct at the most boots, swapped, or an end that will not boot.
    Refused(String),
}

/// The ends, replayed from their boots so far (None: a boot that failed):
/// four boots each, then one more each while the rank test cannot tell them
/// apart, up to END_BOOTS_AT_MOST; or why they cannot be bisected. Boots
/// added until a test passes make a false "distinct" likelier than its p
/// says: a bisect of ends that are not distinct then ends in unsure steps,
/// which say so.
pub fn ends_next(worse: Worse, good: &[Option<f64>], bad: &[Option<f64>]) -> EndsNext {
    let failed = good.iter().chain(bad).filter(|v| v.is_none()).count();
    if failed > END_FAILURES_AT_MOST {
        return EndsNext::Refused(format!("the ends failed to boot {failed} times; see their boots' logs"));
    }
    let ok = |v: &[Option<f64>]| -> Vec<f64> { v.iter().flatten().copied().collect() };
    let (good, bad) = (ok(good), ok(bad));
    let have = good.len().min(bad.len());
    for n in END_BOOTS_AT_LEAST..=have.min(END_BOOTS_AT_MOST) {
        let ends = Ends { good: good[..n].to_vec(), bad: bad[..n].to_vec() };
        match ends.check(worse) {
            Ok(apart) => return EndsNext::Ready(ends, apart),
            Err(e) if e.contains("swapped") || n == END_BOOTS_AT_MOST => return EndsNext::Refused(e),
            Err(_) => {}
        }
    }
    EndsNext::Boot(if good.len() <= bad.len() { End::Good } else { End::Bad })
}

/// The ends measured with `boot` as the lab (the simulations' driver).
pub fn measure_ends(worse: Worse, boot: &mut dyn FnMut(End) -> Option<f64>) -> Result<(Ends, Apart), String> {
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    loop {
        match ends_next(worse, &good, &bad) {
            EndsNext::Ready(ends, apart) => return Ok((ends, apart)),
            EndsNext::Refused(why) => return Err(why),
            EndsNext::Boot(End::Good) => good.push(boot(End::Good)),
            EndsNext::Boot(End::Bad) => bad.push(boot(End::Bad)),
        }
    }
}

/// What a step ended as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Good,
    Bad,
    Unsure,
    /// It did not boot or hung (`None` from the lab), and hangs are not called bad.
    Skip,
}

/// One step: the candidate, its boots' values, the test's sum and what it ended as.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub candidate: usize,
    pub values: Vec<f64>,
    pub llr: f64,
    pub outcome: Outcome,
}

/// The answer: the last good and first bad candidates (adjacent, or with
/// only unsure or skipped ones between), every step, and the boots spent.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub last_good: usize,
    pub first_bad: usize,
    /// Candidates between them the steps could not place.
    pub between: Vec<usize>,
    pub steps: Vec<Step>,
    pub boots: usize,
}

impl Answer {
    /// The first bad candidate, when nothing unplaced sits before it.
    pub fn found(&self) -> Option<usize> {
        self.between.is_empty().then_some(self.first_bad)
    }
}

/// Every boot of every candidate so far, in the order each candidate's
/// came (a failed or hung boot is None): all the search needs to resume,
/// replayed by `next` — the order of boots across candidates, and across
/// servers, does not matter.
pub type Boots = std::collections::BTreeMap<usize, Vec<Option<f64>>>;

/// What the search wants next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// One more boot of each of these candidates (one per server at once).
    Boot(Vec<usize>),
    Done(Answer),
}

/// The search over `n` candidates (0 good and n − 1 bad, both measured as
/// the ends), replayed from `boots`, with `servers` candidates tried at
/// once: with one, the candidate nearest the middle (binary search); with
/// k, k candidates spread evenly over what is left (a k-ary search: fewer
/// rounds, the same decisions per candidate). `cap`: the most boots a step gets.
pub fn next(n: usize, model: &Model, cap: usize, servers: usize, boots: &Boots) -> Next {
    let (mut good, mut bad) = (0, n.saturating_sub(1));
    let mut set_aside: Vec<usize> = Vec::new();
    let mut steps = Vec::new();
    loop {
        let picks = spread(good, bad, &set_aside, servers.max(1));
        if picks.is_empty() {
            let between = (good + 1..bad).collect();
            let spent = boots.values().map(Vec::len).sum();
            return Next::Done(Answer { last_good: good, first_bad: bad, between, steps, boots: spent });
        }
        let mut need = Vec::new();
        let mut decided = Vec::new();
        for c in picks {
            match judged(model, cap, boots.get(&c).map(Vec::as_slice).unwrap_or_default()) {
                None => need.push(c),
                Some((outcome, values, llr)) => decided.push(Step { candidate: c, values, llr, outcome }),
            }
        }
        if !need.is_empty() {
            return Next::Boot(need);
        }
        // The lowest bad bounds the range; goods count only below it (a
        // good above a bad is noise the next steps will meet again).
        if let Some(b) = decided.iter().filter(|s| s.outcome == Outcome::Bad).map(|s| s.candidate).min() {
            bad = b;
        }
        if let Some(g) =
            decided.iter().filter(|s| s.outcome == Outcome::Good && s.candidate < bad).map(|s| s.candidate).max()
        {
            good = good.max(g);
        }
        set_aside.extend(
            decided.iter().filter(|s| matches!(s.outcome, Outcome::Unsure | Outcome::Skip)).map(|s| s.candidate),
        );
        steps.extend(decided);
    }
}

/// A candidate's boots so far, judged: its outcome, values and the test's
/// sum, or None while it needs another boot. A boot that failed makes it a skip.
pub(super) fn judged(model: &Model, cap: usize, boots: &[Option<f64>]) -> Option<(Outcome, Vec<f64>, f64)> {
    let mut values = Vec::new();
    for b in boots {
        let Some(v) = b else { return Some((Outcome::Skip, values, 0.0)) };
        values.push(*v);
        match model.judge(&values, cap) {
            (Said::More, _) => continue,
            (Said::Good, llr) => return Some((Outcome::Good, values, llr)),
            (Said::Bad, llr) => return Some((Outcome::Bad, values, llr)),
            (Said::Unsure, llr) => return Some((Outcome::Unsure, values, llr)),
        }
    }
    None
}

/// Up to `k` untried candidates strictly between `good` and `bad`, spread
/// evenly: the ones nearest the points that cut the range in k + 1 parts.
fn spread(good: usize, bad: usize, set_aside: &[usize], k: usize) -> Vec<usize> {
    let open: Vec<usize> = (good + 1..bad).filter(|c| !set_aside.contains(c)).collect();
    let mut picks: Vec<usize> = Vec::new();
    for i in 1..=k {
        let at = good as f64 + (bad - good) as f64 * i as f64 / (k + 1) as f64;
        let nearest = open
            .iter()
            .copied()
            .filter(|c| !picks.contains(c))
            .min_by(|a, b| (*a as f64 - at).abs().total_cmp(&(*b as f64 - at).abs()).then(a.cmp(b)));
        picks.extend(nearest);
    }
    picks.sort();
    picks
}

/// The whole search with `boot` as the lab, `servers` candidates a round
/// (each booted once a round): what the simulations and a session run.
pub fn bisect(
    n: usize,
    model: &Model,
    cap: usize,
    servers: usize,
    boot: &mut dyn FnMut(usize) -> Option<f64>,
) -> (Answer, usize) {
    let mut boots = Boots::new();
    let mut rounds = 0;
    loop {
        match next(n, model, cap, servers, &boots) {
            Next::Done(answer) => return (answer, rounds),
            Next::Boot(candidates) => {
                rounds += 1;
                for c in candidates {
                    let value = boot(c);
                    boots.entry(c).or_default().push(value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded generator: xorshift64 and Box–Muller.
    struct Noise(u64);

    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform().max(1e-12), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    /// How a boot's value is drawn from a candidate that is good or bad.
    #[derive(Clone, Copy)]
    enum Oracle {
        /// The demo's boot-to-boot spread: seqwrite's real time, median
        /// 13.6 s, 3.8 % (the standard deviation of the six-boot demo's
        /// 6.1 boots, relative); a bad candidate is `effect` times slower.
        Spread { effect: f64 },
        /// A stall now and then: the worst wait is 0.1 s, or 2 s in a
        /// boot that stalls; good candidates stall in a share `good` of
        /// their boots, bad ones in a share `bad`.
        Stalls { good: f64, bad: f64 },
    }

    impl Oracle {
        fn draw(self, bad: bool, noise: &mut Noise) -> f64 {
            match self {
                Oracle::Spread { effect } => 13.6 * (if bad { effect } else { 1.0 }) * (1.0 + 0.038 * noise.normal()),
                Oracle::Stalls { good, bad: worse } => {
                    let stalls = noise.uniform() < if bad { worse } else { good };
                    (if stalls { 2000.0 } else { 100.0 }) * (1.0 + 0.1 * noise.normal())
                }
            }
        }
    }

    /// Many seeded bisects of 16 candidates with the first bad one placed
    /// at random: how often the answer is right, wrong, or unsure, and the
    /// boots a bisect took (the ends' six boots each included).
    fn trials(oracle: Oracle, n: usize, cap: usize) -> (usize, usize, usize, f64) {
        let (mut right, mut wrong, mut unsure, mut boots) = (0, 0, 0, 0);
        for seed in 1..=n as u64 {
            let mut noise = Noise(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let first_bad = 1 + (noise.uniform() * 15.0) as usize;
            let measured = measure_ends(Worse::Larger, &mut |end| Some(oracle.draw(end == End::Bad, &mut noise)));
            let ends = match measured {
                Ok((ends, _)) => ends,
                Err(e) => {
                    if std::env::var("BISECT_DEBUG").is_ok() {
                        eprintln!("ends refused: {e}");
                    }
                    unsure += 1;
                    boots += 2 * END_BOOTS_AT_MOST;
                    continue;
                }
            };
            let model = Model::new(&ends);
            let (answer, _) = bisect(16, &model, cap, 1, &mut |c| Some(oracle.draw(c >= first_bad, &mut noise)));
            boots += answer.boots + ends.good.len() + ends.bad.len();
            match answer.found() {
                Some(c) if c == first_bad => right += 1,
                Some(c) => {
                    wrong += 1;
                    if std::env::var("BISECT_DEBUG").is_ok() {
                        let stalls = |v: &[f64]| v.iter().filter(|x| **x > 1000.0).count();
                        eprintln!(
                            "wrong: found {c}, truly {first_bad}; ends stall {} / {}; steps {:?}",
                            stalls(&ends.good),
                            stalls(&ends.bad),
                            answer
                                .steps
                                .iter()
                                .map(|s| (s.candidate, s.outcome, s.values.len(), (s.llr * 10.0).round() / 10.0))
                                .collect::<Vec<_>>()
                        );
                    }
                }
                None => unsure += 1,
            }
        }
        (right, wrong, unsure, boots as f64 / n as f64)
    }

    /// A regression of 15 % over the demo's 3.8 % boot-to-boot spread:
    /// found in at least 95 % of 400 seeded bisects, wrong in under 2 %.
    #[test]
    fn a_regression_four_times_the_spread_is_found() {
        let (right, wrong, unsure, boots) = trials(Oracle::Spread { effect: 1.15 }, 400, 12);
        eprintln!("15 % regression: {right} right, {wrong} wrong, {unsure} unsure of 400; {boots:.1} boots a bisect");
        assert!(right >= 380 && wrong <= 8, "{right} right, {wrong} wrong, {unsure} unsure");
    }

    /// Stalls in one boot of ten against nine of ten: bimodal, found as well.
    #[test]
    fn a_stall_that_comes_far_more_often_is_found() {
        let (right, wrong, unsure, boots) = trials(Oracle::Stalls { good: 0.1, bad: 0.9 }, 400, 16);
        eprintln!(
            "stalls 1 in 10 → 9 in 10: {right} right, {wrong} wrong, {unsure} unsure of 400; {boots:.1} boots a bisect"
        );
        assert!(right >= 380 && wrong <= 8, "{right} right, {wrong} wrong, {unsure} unsure");
    }

    /// One boot in five against four in five: often not told apart in 16
    /// boots an end, or a step unsure — said, and rarely wrong.
    #[test]
    fn a_stall_that_comes_somewhat_more_often_is_found_or_said_unsure() {
        let (right, wrong, unsure, boots) = trials(Oracle::Stalls { good: 0.2, bad: 0.8 }, 400, 16);
        eprintln!(
            "stalls 1 in 5 → 4 in 5: {right} right, {wrong} wrong, {unsure} unsure of 400; {boots:.1} boots a bisect"
        );
        assert!(right >= 280 && wrong <= 8, "{right} right, {wrong} wrong, {unsure} unsure");
    }

    /// An effect smaller than the spread: the ends are refused, or a step
    /// says unsure; it is rarely guessed wrong.
    #[test]
    fn a_too_small_effect_is_refused_or_unsure_not_guessed() {
        let (right, wrong, unsure, _) = trials(Oracle::Spread { effect: 1.02 }, 400, 12);
        eprintln!("2 % regression: {right} right, {wrong} wrong, {unsure} unsure of 400");
        assert!(unsure >= 300 && wrong <= 8, "{right} right, {wrong} wrong, {unsure} unsure");
    }

    /// A candidate that will not boot is skipped and its neighbour tried;
    /// if it is the only one between, the answer is the range.
    #[test]
    fn candidates_that_do_not_boot_are_skipped() {
        let ends = Ends { good: vec![10.0, 10.3, 9.8, 10.1], bad: vec![13.0, 12.7, 13.2, 13.1] };
        let model = Model::new(&ends);
        let value = |c: usize| if c >= 5 { 13.0 } else { 10.0 };
        let (a, _) = bisect(8, &model, 6, 1, &mut |c| (c != 4).then(|| value(c)));
        assert_eq!((a.last_good, a.first_bad, a.between.clone()), (3, 5, vec![4]), "{a:?}");
        assert_eq!(a.found(), None);
        assert!(a.steps.iter().any(|s| s.candidate == 4 && s.outcome == Outcome::Skip));
        let (a, _) = bisect(8, &model, 6, 1, &mut |c| (c != 2).then(|| value(c)));
        assert_eq!(a.found(), Some(5), "{a:?}");
    }

    /// Three servers try three candidates a round: the same answer in
    /// fewer rounds, with about as many boots.
    #[test]
    fn several_servers_search_in_fewer_rounds() {
        let ends = Ends { good: vec![10.0, 10.3, 9.8, 10.1], bad: vec![13.0, 12.7, 13.2, 13.1] };
        let model = Model::new(&ends);
        let value = |c: usize| if c >= 21 { 13.0 } else { 10.0 };
        let (one, one_rounds) = bisect(64, &model, 8, 1, &mut |c| Some(value(c)));
        let (three, three_rounds) = bisect(64, &model, 8, 3, &mut |c| Some(value(c)));
        assert_eq!((one.found(), three.found()), (Some(21), Some(21)));
        assert!(three_rounds * 3 <= one_rounds * 2, "{three_rounds} rounds against {one_rounds}");
        assert!(three.boots <= 2 * one.boots, "{} boots against {}", three.boots, one.boots);
        eprintln!(
            "64 candidates: one server {one_rounds} rounds, {} boots; three {three_rounds} rounds, {} boots",
            one.boots, three.boots
        );
    }

    /// Resuming is replaying: the boots so far, in any order across
    /// candidates, give the same next action.
    #[test]
    fn the_search_resumes_from_its_boots() {
        let ends = Ends { good: vec![10.0, 10.3, 9.8, 10.1], bad: vec![13.0, 12.7, 13.2, 13.1] };
        let model = Model::new(&ends);
        let mut boots = Boots::new();
        assert_eq!(next(16, &model, 8, 1, &boots), Next::Boot(vec![7]));
        boots.insert(7, vec![Some(13.0); 4]);
        assert_eq!(next(16, &model, 8, 1, &boots), Next::Boot(vec![3]), "7 bad: the lower half");
        boots.insert(3, vec![Some(10.0), Some(10.1)]);
        assert_eq!(next(16, &model, 8, 1, &boots), Next::Boot(vec![3]), "two boots do not decide");
        boots.insert(3, vec![None]);
        assert_eq!(next(16, &model, 8, 1, &boots), Next::Boot(vec![4]), "3 skipped: its neighbour");
    }
}
