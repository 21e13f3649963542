//! Checks of the product, grouped by kind. `boots/`: QEMU scenarios, one
//! file each. (The older checks still sit flat in xtask/src until the
//! house is rebuilt around this layout.)

pub mod boots;
