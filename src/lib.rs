//! bootmark: run the same disk benchmark under many kernels and compare.
//!
//! The image side (workloads, measurements, sinks, /init) and the
//! workstation side (collect, report) meet in [`schema`]: the records and
//! every type they carry, the framing and the journal. See ARCHITECTURE.md
//! for the data flow and the module map.

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

// The schema's files under their short names, for xtask, the tests and the fuzzer.
pub use schema::{framing, journal, record};

pub mod bootmenu;
#[cfg(feature = "workstation")]
pub mod collect;
pub mod contract;
pub mod fsutil;
#[cfg(feature = "workstation")]
pub mod glance;
pub mod init;
pub mod interrupt;
#[cfg(feature = "workstation")]
pub mod kcidb;
#[cfg(feature = "workstation")]
pub mod lab;
pub mod layers;
pub mod measure;
#[cfg(feature = "workstation")]
pub mod output;
pub mod partition_table;
pub mod plan;
pub mod process;
#[cfg(feature = "workstation")]
pub mod report;
pub mod run;
pub mod schema;
pub mod sink;
pub mod size;
pub mod sysfs_block;
pub mod tunables;
pub mod variant;
#[cfg(feature = "workstation")]
pub mod watch;
pub mod workload;
