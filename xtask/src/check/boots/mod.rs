//! The QEMU boots: a real Debian kernel (apt-get download), the image
//! builder, syslinux on an xHCI USB stick, an AHCI SATA scratch disk, QEMU
//! (TCG) — and the records read back from the serial log and the stick. One
//! file per scenario, one row each in `scenarios.rs`; `support.rs` holds
//! what they share. [`run_group`] runs a group of them (`check e2e`, part
//! of `cargo xtask test`), [`run_one`] one.

pub mod bisect_ladder;
pub mod boot_ways;
pub mod built_image;
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
use scenarios::{Group, SCENARIOS, Scenario};
use support::Tally;
use testbed::Testbed;

/// Every scenario of `group`, in the table's order: each runs even when
/// one fails (a failure is named at the end), and one whose boot stalled
/// before /init is tried once more.
pub fn run_group(group: Group, kills: usize) -> Result<()> {
    let started = std::time::Instant::now();
    let base = project_root().join(group.fresh_dir().unwrap_or("target/e2e"));
    if group.fresh_dir().is_some() {
        let _ = std::fs::remove_dir_all(&base);
    }
    fs::create_dir_all(&base)?;
    let testbed = Testbed::new(base, kills);
    let mut tally = Tally::default();
    for scenario in SCENARIOS.iter().filter(|s| s.groups.contains(&group)) {
        tally.run(scenario.title, || (scenario.run)(&testbed));
    }
    println!("{}: total {:.1} s", group.name(), started.elapsed().as_secs_f64());
    tally.finish(group.title())
}

/// One scenario alone, in target/e2e (the e2e image there is reused, or built).
pub fn run_one(scenario: &Scenario, kills: usize) -> Result<()> {
    let base = project_root().join("target/e2e");
    fs::create_dir_all(&base)?;
    (scenario.run)(&Testbed::new(base, kills))
}
