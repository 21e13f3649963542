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
    /// the one there when it is whole and made of the same inputs (a `check
    /// NAME` after /init or the image builder changed boots what they make
    /// now), else built.
    /// A pristine copy of its stick is taken before it is returned, for
    /// [`Testbed::pristine_stick`].
    pub fn image(&self) -> Result<&Path> {
        let made = self.image.get_or_init(|| {
            let built = self.build_image()?;
            image::usb::own_copy(&built, &self.base.join("image-pristine"))?;
            Ok(built)
        });
        made.as_deref().map_err(Clone::clone)
    }

    fn build_image(&self) -> Result<PathBuf> {
        let package = self.package()?;
        let dir = self.base.join("image");
        built_once(&dir, package, || image::build(&support::test_image(vec![package.to_string()], dir.clone(), None)))
    }

    /// A copy of the e2e image's stick (and manifest), taken by [`Testbed::image`]
    /// before any scenario of this testbed boots it, for scenarios that boot
    /// copies of their own beside others: the e2e stick itself may be
    /// mid-boot on the other lane, its FAT half-written, when they copy it.
    pub fn pristine_stick(&self) -> Result<PathBuf> {
        self.image()?;
        Ok(self.base.join("image-pristine"))
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

/// The image in `dir`, when it is whole and made of the same inputs as
/// now — `what` (its kernels, its plan), the /init it carries (built now, as
/// the image build would) and the xtask that builds it (the image builder's
/// code), recorded beside it in `DIR.inputs` —, else made by `build`: a
/// `check NAME` after /init or the image builder changed boots what they
/// make now, never an image left by an older run.
pub fn built_once(dir: &Path, what: &str, build: impl FnOnce() -> Result<PathBuf>) -> Result<PathBuf> {
    let init = crate::build::static_binary::build(crate::build::arch::Arch::X86_64)?;
    let xtask = std::env::current_exe().map_err(|e| format!("cannot find xtask's own binary: {e}"))?;
    let sha = crate::host::fs::sha256_file;
    let inputs = format!("{what}\n/init {}\nxtask {}\n", sha(&init)?, sha(&xtask)?);
    let stamp = dir.with_extension("inputs");
    if dir.join("manifest.json").exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(inputs.as_str()) {
        eprintln!("xtask: reusing {} (made of the same inputs)", dir.display());
        return Ok(dir.to_path_buf());
    }
    let _ = std::fs::remove_file(&stamp);
    let built = build()?;
    crate::host::fs::write(&stamp, &inputs)?;
    Ok(built)
}
