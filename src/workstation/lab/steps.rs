//! The steps of a lab: per server, its entries × the repetitions, in the
//! lab's order, each with its deadline. Interleaved, k0 k1 k0 k1 …: what
//! changes over a session (a room warming, a disk filling) falls on every
//! kernel alike. Random: each repetition's entries shuffled from a seed,
//! which the state keeps so that a resumed lab runs the same order.

use super::file::Order;

/// One boot of one server into one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub server: String,
    /// The image entry's label (`k0`, `k1-rt`…).
    pub entry: String,
    /// 0-based.
    pub repetition: u32,
}

impl Step {
    /// `dl140/k1#2`: the step's name in the state, the logs and progress lines.
    pub fn id(&self) -> String {
        format!("{}/{}#{}", self.server, self.entry, self.repetition + 1)
    }
}

/// One server's steps: every repetition boots each entry once.
pub fn for_server(server: &str, entries: &[String], repeat: u32, order: Order, seed: u64) -> Vec<Step> {
    let mut rng = SplitMix64(seed ^ fnv1a(server.as_bytes()));
    let mut steps = Vec::new();
    for repetition in 0..repeat {
        let mut round: Vec<&String> = entries.iter().collect();
        if order == Order::Random {
            // Fisher–Yates.
            for i in (1..round.len()).rev() {
                let j = (rng.next() % (i as u64 + 1)) as usize;
                round.swap(i, j);
            }
        }
        steps.extend(round.into_iter().map(|e| Step { server: server.into(), entry: e.clone(), repetition }));
    }
    steps
}

/// How long a step may take from power-on to its run record: the server's
/// own boot (`boot_s`: firmware, PXE, kernel), /init's wait for its disks,
/// the plan's time budget, and a minute for records and power-off.
pub fn deadline_s(boot_s: u64, device_wait_s: f64, plan_budget_s: f64) -> u64 {
    (boot_s as f64 + device_wait_s + plan_budget_s + 60.0).ceil() as u64
}

/// SplitMix64 (Steele, Lea, Flood 2014): a few lines, the same sequence
/// on every machine for a seed, which is all a step order needs.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Each server shuffled differently from one lab seed.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn interleaved_steps_alternate_the_kernels() {
        let steps = for_server("s", &entries(&["k0", "k1"]), 3, Order::Interleaved, 0);
        let ids: Vec<String> = steps.iter().map(Step::id).collect();
        assert_eq!(ids, ["s/k0#1", "s/k1#1", "s/k0#2", "s/k1#2", "s/k0#3", "s/k1#3"]);
    }

    #[test]
    fn random_order_is_a_permutation_per_repetition_and_the_seed_decides_it() {
        let names = entries(&["k0", "k1", "k2", "k3", "k4"]);
        let a = for_server("s", &names, 4, Order::Random, 7);
        assert_eq!(a, for_server("s", &names, 4, Order::Random, 7), "the same seed, the same order");
        for r in 0..4 {
            let mut round: Vec<&str> = a.iter().filter(|s| s.repetition == r).map(|s| s.entry.as_str()).collect();
            round.sort();
            assert_eq!(round, ["k0", "k1", "k2", "k3", "k4"], "repetition {r} boots each entry once");
        }
        let orders: std::collections::BTreeSet<Vec<String>> = (0..20)
            .map(|seed| for_server("s", &names, 1, Order::Random, seed).into_iter().map(|s| s.entry).collect())
            .collect();
        assert!(orders.len() > 10, "seeds give different orders: {}", orders.len());
        assert_ne!(
            for_server("a", &names, 2, Order::Random, 7).into_iter().map(|s| s.entry).collect::<Vec<_>>(),
            for_server("b", &names, 2, Order::Random, 7).into_iter().map(|s| s.entry).collect::<Vec<_>>(),
            "two servers of one lab are shuffled differently"
        );
    }

    #[test]
    fn the_deadline_adds_the_boot_the_disk_wait_and_the_plan() {
        assert_eq!(deadline_s(300, 30.0, 500.5), 891);
    }
}
