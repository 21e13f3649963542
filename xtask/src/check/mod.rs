//! The checks of the product: `suite` is `cargo xtask test` (every part in
//! order, timed); the others are its parts — `boots/` (QEMU scenarios, one
//! file each), the fake boots of /init, the old-kernel harness, the arm64
//! /init under qemu-user, fuzzing,
//! the KCIDB schema check, the report's pictures in Chromium and the tidy rules.

pub mod arm64_init;
pub mod boots;
pub mod command;
pub mod fake_boots;
pub mod fuzz;
pub mod kcidb;
pub mod old_kernel;
pub mod pictures;
pub mod suite;
pub mod tidy;
