//! The QEMU boots: a real Debian kernel (apt-get download), the image
//! builder, syslinux on an xHCI USB stick, an AHCI SATA scratch disk, QEMU
//! (TCG) — and the records read back from the serial log and the stick. One
//! file per scenario, one row each in `scenarios.rs`; `support.rs` holds
//! what they share. [`run_group`] runs a group of them (`check e2e`, part
//! of `cargo xtask test`) on one lane or two, [`run_one`] one.

pub mod arm64;
pub mod arm64_image;
pub mod arm64_programs;
pub mod arm64_secure_boot;
pub mod bisect_git;
pub mod bisect_ladder;
pub mod boot_ways;
pub mod built_image;
pub mod command;
pub mod failing_disk;
pub mod generations;
pub mod hostile_disks;
pub mod i686;
pub mod iso;
pub mod kernel_from_source;
pub mod kernel_rpm;
pub mod lab_ipmi;
pub mod lab_qemu;
pub mod lab_redfish;
pub mod lava;
pub mod lvm_on_md;
pub mod md_layouts;
pub mod mechanisms;
pub mod nvme;
pub mod old_machine;
pub mod resets;
pub mod scenarios;
pub mod secure_boot;
pub mod sequence;
pub mod support;
pub mod sweep;
pub mod testbed;
pub mod watch;
pub mod write_log;

use crate::host::fs;
use crate::host::project::{Result, project_root};
use scenarios::{Group, Lane, SCENARIOS, Scenario};
use std::collections::VecDeque;
use std::sync::{Mutex, RwLock};
use support::Tally;
use testbed::Testbed;

/// Every scenario of `group`, in the table's order: each runs even when
/// one fails (a failure is named at the end), and one whose boot stalled
/// before /init is tried once more.
///
/// On two lanes when the host has a core to spare: once `second_lane()`
/// says so (the suite: when the kernels it builds beside the boots are done;
/// `check`: at once on a host with two cores or more), a second lane takes
/// the `Beside` ones that have not started, one after another. An `Alone`
/// scenario waits for the other lane's to end, and nothing starts beside
/// it. Which scenario the first lane takes next is [`first_lane_takes`]'s
/// choice: the `Alone` ones while the second lane is still to come.
pub fn run_group(group: Group, kills: usize, second_lane: &(dyn Fn() -> bool + Sync)) -> Result<()> {
    let started = std::time::Instant::now();
    let base = project_root().join(group.fresh_dir().unwrap_or("target/e2e"));
    if group.fresh_dir().is_some() {
        let _ = std::fs::remove_dir_all(&base);
    }
    fs::create_dir_all(&base)?;
    let testbed = Testbed::new(base, kills);
    let tally = Mutex::new(Tally::default());
    let queue: Mutex<VecDeque<&Scenario>> =
        Mutex::new(SCENARIOS.iter().filter(|s| s.groups.contains(&group)).collect());
    // Read: a scenario that may have one beside it; write: one that may not.
    let beside = RwLock::new(());
    let run = |scenario: &Scenario, lane: usize| {
        let _turn = match scenario.lane {
            Lane::Alone => (None, Some(beside.write().unwrap_or_else(|e| e.into_inner()))),
            _ => (Some(beside.read().unwrap_or_else(|e| e.into_inner())), None),
        };
        // When each began and how busy the cores were while it ran: the CI
        // log's timeline of the lanes, and where a core sat idle.
        println!("e2e: {} begins on lane {lane} at {:.0} s", scenario.title, started.elapsed().as_secs_f64());
        let ticks = crate::host::cpu::Ticks::now();
        let attempted = support::attempt(scenario.title, || (scenario.run)(&testbed));
        println!("e2e: {} ends after {:.0} s; {}", scenario.title, attempted.seconds, ticks.said_since());
        tally.lock().unwrap_or_else(|e| e.into_inner()).record(scenario.title, attempted);
    };
    let next = |lane: usize| take_next(&mut queue.lock().unwrap_or_else(|e| e.into_inner()), lane, second_lane());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Until the host has a core to spare, or nothing is left for this lane.
            while !second_lane() {
                if !queue.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|s| s.lane == Lane::Beside) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_secs(5));
            }
            while let Some(scenario) = next(2) {
                run(scenario, 2);
            }
        });
        while let Some(scenario) = next(1) {
            run(scenario, 1);
        }
    });
    println!("{}: total {:.1} s", group.name(), started.elapsed().as_secs_f64());
    tally.into_inner().unwrap_or_else(|e| e.into_inner()).finish(group.title())
}

/// The scenario `lane` takes next, out of the queue: the second lane only
/// `Beside` ones; the first lane the first kind it has left of those
/// [`first_lane_takes`] lists. `Alone` ones in the table's order; of the
/// `Main` and `Beside` ones the longest (`typical_s`) first, so that what
/// is left at the end, when one lane may have nothing to take, is short.
fn take_next<'a>(queue: &mut VecDeque<&'a Scenario>, lane: usize, second_lane_open: bool) -> Option<&'a Scenario> {
    let kinds: &[Lane] = match lane {
        1 => first_lane_takes(second_lane_open),
        _ => &[Lane::Beside],
    };
    let kind = *kinds.iter().find(|kind| queue.iter().any(|s| s.lane == **kind))?;
    let of_kind = queue.iter().enumerate().filter(|(_, s)| s.lane == kind);
    let at = match kind {
        Lane::Alone => of_kind.map(|(at, _)| at).next(),
        // The first of the longest: max_by_key would take the last.
        _ => of_kind.rev().max_by_key(|(_, s)| s.typical_s).map(|(at, _)| at),
    }?;
    queue.remove(at)
}

/// The kinds of scenario the first lane takes, in preference. While the
/// second lane is still to come, the `Alone` ones: what runs beside them
/// then is the suite's kernel build at nice 19, which yields its core to a
/// boot. What is left for two lanes is then `Main` ones on this lane beside
/// `Beside` ones on the other; `Alone` ones left go last, as nothing can
/// run beside them. (In the table's order, the suite ran the `Beside` ones
/// while the kernel built and then every `Alone` one with a core idle.)
fn first_lane_takes(second_lane_open: bool) -> &'static [Lane] {
    match second_lane_open {
        false => &[Lane::Alone, Lane::Main, Lane::Beside],
        true => &[Lane::Main, Lane::Beside, Lane::Alone],
    }
}

/// One scenario alone, in target/e2e (the e2e image there is reused, or built).
pub fn run_one(scenario: &Scenario, kills: usize) -> Result<()> {
    let base = project_root().join("target/e2e");
    fs::create_dir_all(&base)?;
    (scenario.run)(&Testbed::new(base, kills))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(title: &'static str, lane: Lane) -> Scenario {
        timed(title, lane, 10)
    }

    fn timed(title: &'static str, lane: Lane, typical_s: u32) -> Scenario {
        Scenario { name: title, title, about: "", groups: &[], lane, typical_s, run: |_| Ok(()) }
    }

    /// The order two lanes take a table in, `open` after `opens_after` takes.
    fn schedule(table: &[Scenario], opens_after: usize) -> Vec<(usize, &str)> {
        let mut queue: VecDeque<&Scenario> = table.iter().collect();
        let mut taken = Vec::new();
        while !queue.is_empty() {
            let open = taken.len() >= opens_after;
            for lane in if open { vec![1, 2] } else { vec![1] } {
                if let Some(s) = take_next(&mut queue, lane, open) {
                    taken.push((lane, s.title));
                }
            }
        }
        taken
    }

    #[test]
    fn alone_ones_go_first_while_the_second_lane_is_to_come_then_main_pairs_with_beside() {
        use Lane::{Alone, Beside, Main};
        let table = [
            scenario("m1", Main),
            scenario("b1", Beside),
            scenario("a1", Alone),
            scenario("m2", Main),
            scenario("b2", Beside),
            scenario("a2", Alone),
            scenario("a3", Alone),
        ];
        let taken = schedule(&table, 2);
        let expected = [(1, "a1"), (1, "a2"), (1, "m1"), (2, "b1"), (1, "m2"), (2, "b2"), (1, "a3")];
        assert_eq!(taken, expected);
        // A second lane from the start (`check` on two cores): pairs first, `Alone` ones last.
        let taken = schedule(&table, 0);
        let expected = [(1, "m1"), (2, "b1"), (1, "m2"), (2, "b2"), (1, "a1"), (1, "a2"), (1, "a3")];
        assert_eq!(taken, expected);
        // One core: the second lane never opens, and every scenario still runs once.
        let taken = schedule(&table, usize::MAX);
        assert_eq!(taken.len(), table.len());
        assert!(taken.iter().all(|(lane, _)| *lane == 1));
    }

    #[test]
    fn of_main_and_beside_ones_the_longest_go_first_alone_ones_keep_the_tables_order() {
        use Lane::{Alone, Beside, Main};
        let table = [
            timed("b-short", Beside, 40),
            timed("a-long", Alone, 600),
            timed("b-long", Beside, 280),
            timed("m-short", Main, 35),
            timed("a-short", Alone, 30),
            timed("m-long", Main, 210),
            timed("b-tie-1", Beside, 90),
            timed("b-tie-2", Beside, 90),
        ];
        let taken = schedule(&table, 0);
        let expected = [
            (1, "m-long"),
            (2, "b-long"),
            (1, "m-short"),
            (2, "b-tie-1"),
            (1, "b-tie-2"),
            (2, "b-short"),
            (1, "a-long"),
            (1, "a-short"),
        ];
        assert_eq!(taken, expected);
    }
}
