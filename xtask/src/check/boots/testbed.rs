//! What every QEMU scenario boots on, made once and shared: the directory
//! it works in, Debian's current kernel package and the images. A leaf
//! beside the scenarios (`scenarios.rs` names them, some take it whole).

use super::{lab_ipmi, secure_boot, support};
use crate::build::image;
use crate::host::apt::resolve_meta;
use crate::host::project::Result;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What every scenario boots on: the directory it works in, Debian's
/// current kernel package and the images, each made once when first asked
/// for (a failure to make one is every asking scenario's failure), by
/// whichever lane asks first.
pub struct Testbed {
    pub base: PathBuf,
    /// How many times `resets` kills QEMU.
    pub kills: usize,
    package: OnceLock<Result<String>>,
    image: OnceLock<Result<PathBuf>>,
    secure_boot_image: OnceLock<Result<PathBuf>>,
    lab_image: OnceLock<Result<PathBuf>>,
}

impl Testbed {
    pub fn new(base: PathBuf, kills: usize) -> Self {
        Testbed {
            base,
            kills,
            package: OnceLock::new(),
            image: OnceLock::new(),
            secure_boot_image: OnceLock::new(),
            lab_image: OnceLock::new(),
        }
    }

    /// Debian's current kernel package (`linux-image-amd64` resolved).
    pub fn package(&self) -> Result<&str> {
        self.package.get_or_init(|| resolve_meta("linux-image-amd64")).as_deref().map_err(Clone::clone)
    }

    /// The e2e image (the package's kernel, the quick plan) in `base/image`:
    /// the one there when it is whole, else built.
    pub fn image(&self) -> Result<&Path> {
        let made = self.image.get_or_init(|| {
            let dir = self.base.join("image");
            if dir.join("manifest.json").exists() {
                return Ok(dir);
            }
            image::build(&support::test_image(vec![self.package()?.to_string()], dir, None))
        });
        made.as_deref().map_err(Clone::clone)
    }

    /// The image built with --secure-boot.
    pub fn secure_boot_image(&self) -> Result<&Path> {
        let made = self.secure_boot_image.get_or_init(|| secure_boot::build_image(self.package()?, &self.base));
        made.as_deref().map_err(Clone::clone)
    }

    /// The lab's image: three entries of the package's kernel.
    pub fn lab_image(&self) -> Result<&Path> {
        let made = self.lab_image.get_or_init(|| lab_ipmi::image(self.package()?, &self.base));
        made.as_deref().map_err(Clone::clone)
    }
}
