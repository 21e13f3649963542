//! What a kernel is, read from its files: the bzImage's boot header
//! (`bzimage.rs`) and its build configuration (`config.rs`). A leaf under
//! both the image builder (kernels in) and `kernel_src` (kernels built).

pub mod arm64_image;
pub mod bzimage;
pub mod config;
