//! What the workstation side (xtask, the tests, the fuzzer) may use of the
//! image side, in one place: the formats /init reads from the image and the
//! stick, and the rules it applies to them, so that the image builder and
//! the checks agree with /init by construction. Everything else under
//! `init::` is /init's own; a tidy test keeps other crates off it.
//!
//! The data of these formats lives in [`crate::schema`] (the module set,
//! the sequence, the records, the framing, the journal); what is here
//! beside it is /init's rules, re-exported so that no one else reaches
//! into `init::`. The command line's `Settings` still live in
//! `init::cmdline`, whose parser checks them against md's and the plan's.

/// The module set the image builder writes to /etc/bootmark/modules.json
/// and /init loads from, and the loader itself (finit_module, then
/// init_module).
pub mod modules {
    pub use crate::image_side::init::modules::load;
    pub use crate::schema::modules::{Module, ModuleSet, When};
}

/// The unattended sequence on the stick (bootmark/sequence.json).
pub mod sequence {
    pub use crate::schema::sequence::{FILE, Sequence, State, Step};
}

/// The `bootmark.*` kernel command line: parsing it as /init will, and the
/// reference `bootmark boot-params` prints.
pub mod cmdline {
    pub use crate::image_side::init::cmdline::{DiskSpec, Settings, parse, reference};
}

/// Formatting: the arguments /init gives mkfs, and the marker that lets a
/// later boot format the target again.
pub mod formatting {
    pub use crate::image_side::init::safety::{SCRATCH_MARKER, mkfs_args};
}

/// The disks beside a target as /init judges them: which are plain, which
/// a layer (LV, md array) claims a label for, which it passes over and why.
/// The fuzzer feeds these crafted disks on a fake machine.
pub mod layers {
    pub use crate::image_side::init::assembly::{ignored, inside, plain_target_refusal};
    pub use crate::image_side::init::devices::{BlockDev, scan};
}

/// Identifying a filesystem and partitions as /init does, from what is on
/// the disk.
pub mod fsprobe {
    pub use crate::image_side::init::fsprobe::{FsInfo, partition_uuids, probe};
}
