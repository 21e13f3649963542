//! bootmark: run the same disk benchmark under many kernels and compare.
//!
//! Two sides, each a folder: [`image_side`] (what runs on the machine under
//! test: /init, the plan's workloads, the measurements, the sinks) and
//! [`workstation`] (collect, report, watch, lab; the `workstation`
//! feature). They meet in [`schema`] — the records and every type they
//! carry, the framing and the journal — and a few shared leaves
//! ([`bootmenu`], [`contract`], [`fsutil`], [`interrupt`],
//! [`partition_table`], [`size`], [`suggest`]); the workstation reads the plan
//! (`image_side::plan`) and nothing else of the image side. Tidy tests
//! hold these lines. See ARCHITECTURE.md for the data flow and the map.

/// `eprintln!` that never panics: PID 1 must outlive a console whose
/// writes fail (eprintln! panics on any error but EBADF). Image-side code
/// prints with this.
#[macro_export]
macro_rules! note {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

// The sides' modules and the schema's files under their short names, for
// the binary, xtask, the tests and the fuzzer.
pub use image_side::{init, layers, measure, plan, process, run, sink, sysfs_block, tunables, variant, workload};
pub use schema::{framing, journal, record};
#[cfg(feature = "workstation")]
pub use workstation::{bisect, collect, glance, kcidb, lab, output, report, watch};

pub mod bootmenu;
pub mod contract;
pub mod fsutil;
pub mod image_side;
pub mod interrupt;
pub mod partition_table;
pub mod schema;
pub mod size;
pub mod suggest;
#[cfg(feature = "workstation")]
pub mod workstation;
