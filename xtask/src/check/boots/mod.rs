//! The QEMU boots: a real Debian kernel (apt-get download), the image
//! builder, syslinux on an xHCI USB stick, an AHCI SATA scratch disk, QEMU
//! (TCG) — and the records read back from the serial log and the stick. One
//! file per scenario, one row each in `scenarios.rs`; `support.rs` holds
//! what they share. [`run_group`] runs a group of them (`check e2e`, part
//! of `cargo xtask test`) on one lane or two, [`run_one`] one.

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
/// On two lanes when the host has a core to spare: the first lane takes
/// the scenarios in order; once `second_lane()` says so (the suite: when
/// the kernel it builds beside the boots is done; `check`: at once on a
/// host with two cores or more), a second lane takes the `Beside` ones that
/// have not started, one after another. An `Alone` scenario waits for the
/// other lane's to end, and nothing starts beside it.
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
        if lane == 2 {
            println!("e2e: {} on the second lane", scenario.title);
        }
        let attempted = support::attempt(scenario.title, || (scenario.run)(&testbed));
        tally.lock().unwrap_or_else(|e| e.into_inner()).record(scenario.title, attempted);
    };
    // The first lane takes the scenarios in order; the second only `Beside` ones.
    let next = |lane: usize| {
        let mut queue = queue.lock().unwrap_or_else(|e| e.into_inner());
        let at = queue.iter().position(|s| lane == 1 || s.lane == Lane::Beside)?;
        queue.remove(at)
    };
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

/// One scenario alone, in target/e2e (the e2e image there is reused, or built).
pub fn run_one(scenario: &Scenario, kills: usize) -> Result<()> {
    let base = project_root().join("target/e2e");
    fs::create_dir_all(&base)?;
    (scenario.run)(&Testbed::new(base, kills))
}
