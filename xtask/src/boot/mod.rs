//! Booting what was built: QEMU as the test bench (`cargo xtask qemu`), its
//! scratch disks, and the demo that boots two kernels and prints the table.

pub mod demo;
pub mod disks;
pub mod qemu;
