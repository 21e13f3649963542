//! What xtask builds for users: the static /init binary, kernels from
//! source, the boot image (stick, ISO, PXE tree), and LAVA jobs for it;
//! `kernel/` is what both the image and the kernel build read from a kernel.

pub mod arch;
pub mod image;
pub mod kernel;
pub mod kernel_src;
pub mod lava;
pub mod musl_arm64;
pub mod program;
pub mod static_binary;
