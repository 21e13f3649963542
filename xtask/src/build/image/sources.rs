//! Kernels in: `--kernel` files (a bzImage, with its modules and config
//! from the flags or from beside it in a /boot tree), `--kernel-deb`
//! packages and `--kernel-rpm` packages, each checked (a real bzImage, a
//! config that can run the image) and described for the manifest.

use super::args::Args;
use super::{arm64_vmlinuz, deb, rpm};
use crate::build::arch::Arch;
use crate::build::kernel::{self, config};
use crate::build::kernel_src;
use crate::host::apt_suite;
use crate::host::fs;
use crate::host::project::{Result, project_root};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A kernel ready to become a boot entry.
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    pub(crate) vmlinuz: PathBuf,
    pub(crate) release: String,
    pub(crate) version: String,
    pub(crate) arch: Arch,
    /// The longest command line it keeps (its header's; 255 for a 2.6 bzImage).
    pub(crate) cmdline_max: usize,
    pub(crate) modules: Option<PathBuf>,
    /// Its build config, when one was given or found beside it.
    pub(crate) config: Option<config::KernelConfig>,
    /// Where it came from (file, package, RPM) and its SHA-256, for the manifest.
    pub(crate) origin: Value,
}

/// Every kernel the flags name, in the order of the boot entries: --kernel
/// files (with their --modules and --kernel-config, or those beside them in
/// a /boot tree), then --kernel-src sources (built first, `cargo xtask
/// kernel`), then --kernel-deb packages, then --kernel-rpm packages.
pub(crate) fn resolve(args: &Args, work: &Path) -> Result<Vec<Kernel>> {
    let mut kernels = Vec::new();
    for (i, path) in args.kernels.iter().enumerate() {
        let (config, modules) = (args.kernel_configs.get(i).cloned(), args.modules.get(i).cloned());
        kernels.push(from_file(path, config, modules, args.arch, None, &work.join(format!("file{i}")))?);
    }
    for (i, src) in args.kernel_src.iter().enumerate() {
        let arch = args.arch.unwrap_or(Arch::X86_64);
        let build = kernel_src::Args {
            config: args.kernel_src_config.clone(),
            arch,
            install_deps: args.install_deps,
            allow_unknown: args.kernel_src_allow_unknown,
            ..kernel_src::Args::for_source(src)
        };
        let built = kernel_src::build(&build)?;
        let facts = json!({ "built_from_source": built.facts });
        kernels.push(from_file(&built.vmlinuz, None, None, Some(arch), Some(facts), &work.join(format!("src{i}")))?);
    }
    let cache = project_root().join("target/cache/debs");
    for (i, name) in args.kernel_debs.iter().enumerate() {
        // PACKAGE@SUITE from that Debian suite (apt state of its own), else the system's apt or a .deb.
        let (deb, suite) = match apt_suite::split(name) {
            Some((package, suite)) => {
                let apt_cache = project_root().join("target/cache/apt");
                // arm64 packages come from an apt state of their own.
                let (package, arm64) = deb_package(package, args.arch);
                check_flavour(name, package, suite, arm64)?;
                let state = match arm64 {
                    true => apt_suite::Suite::arm64(suite, apt_suite::Archive::debian(), &apt_cache)?,
                    false => apt_suite::Suite::new(suite, apt_suite::Archive::debian(), &apt_cache)?,
                };
                let got = state.download(package)?;
                eprintln!("image: {name} is {} {}", got.package, got.version);
                (got.deb, Some(suite))
            }
            None => {
                // The system's apt has this machine's architecture: an arm64 package needs a suite.
                let plain = name.split(':').next().unwrap_or(name);
                let arm64 = name.ends_with(":arm64") || plain.split('-').any(|t| t == "arm64");
                if !name.ends_with(".deb") && arm64 {
                    return Err(format!(
                        "--kernel-deb {name}: an arm64 package comes from a Debian suite's own lists: give {plain}:arm64@bookworm (or @trixie…)"
                    ));
                }
                (deb::fetch_deb(name, &cache)?, None)
            }
        };
        let k = deb::unpack_deb(&deb, &work.join(format!("deb{i}")))?;
        // Named by the package, not by the file unpacked in a directory of ours.
        let file = k.vmlinuz.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let shown = format!("{}'s {file}", k.package);
        let (vmlinuz, data, unwrapped) = startable(&k.vmlinuz, &shown, &work.join(format!("deb{i}-image")))?;
        let read = kernel::read(&data, &shown)?;
        if read.arch.is_some_and(|a| a != k.arch) {
            return Err(format!(
                "{} is a package for {}, but its {file} is for {}",
                k.package,
                k.arch,
                read.arch.unwrap_or(k.arch)
            ));
        }
        let config = config::find_beside(&k.vmlinuz, &k.release).map(|p| config::KernelConfig::read(&p)).transpose()?;
        check_config(config.as_ref(), name)?;
        kernels.push(Kernel {
            vmlinuz,
            release: k.release.clone(),
            version: read.version,
            arch: k.arch,
            cmdline_max: read.cmdline_max,
            modules: Some(k.modules.clone()),
            config,
            origin: with_unwrapped(json!({"package": k.package, "package_version": k.version, "deb": deb.file_name().map(|n| n.to_string_lossy().into_owned()), "deb_sha256": crate::host::fs::sha256_file(&deb)?, "modules_decompressed": k.modules_decompressed, "suite": suite}), unwrapped),
        });
    }
    for (i, path) in args.kernel_rpms.iter().enumerate() {
        let k = rpm::unpack(path, &work.join(format!("rpm{i}")))?;
        let name = k.vmlinuz.display().to_string();
        let (vmlinuz, data, unwrapped) = startable(&k.vmlinuz, &name, &work.join(format!("rpm{i}-image")))?;
        let read = kernel::read(&data, &name)?;
        let release = read.release;
        let config = config::find_beside(&k.vmlinuz, &release).map(|p| config::KernelConfig::read(&p)).transpose()?;
        check_config(config.as_ref(), &path.display().to_string())?;
        let arch = read
            .arch
            .or_else(|| config.as_ref().and_then(|c| c.arch()))
            .or(k.arch)
            .ok_or_else(|| format!("{}: cannot tell whether the kernel is 64-bit", path.display()))?;
        if k.modules_decompressed > 0 {
            eprintln!("image: {} compressed modules of {} decompressed", k.modules_decompressed, k.name);
        }
        kernels.push(Kernel {
            vmlinuz,
            release,
            version: read.version,
            arch,
            cmdline_max: read.cmdline_max,
            modules: k.modules.clone(),
            config,
            origin: with_unwrapped(
                json!({"rpm": path.file_name().map(|n| n.to_string_lossy().into_owned()), "package": k.name,
                       "package_version": k.version, "rpm_sha256": crate::host::fs::sha256_file(path)?}),
                unwrapped,
            ),
        });
    }
    refuse_other_arches(&kernels, args.arch)?;
    Ok(kernels)
}

/// `--arch` names the image's architecture where a kernel file cannot
/// tell: a kernel that tells otherwise is refused by name, not put in an
/// image for the other architecture. Without `--arch` an image may hold
/// kernels of several architectures (x86 and arm64 on one stick).
fn refuse_other_arches(kernels: &[Kernel], asked: Option<Arch>) -> Result<()> {
    for k in kernels {
        if let Some(asked) = asked.filter(|a| *a != k.arch) {
            return Err(format!(
                "{} is a kernel for {}, but --arch {asked} was given: leave --arch out, or give a kernel for {asked}",
                k.named(),
                k.arch
            ));
        }
    }
    Ok(())
}

/// `--kernel-deb`'s PACKAGE (from PACKAGE@SUITE) and whether it comes
/// from the arm64 lists: `PACKAGE:arm64`, as apt names another
/// architecture's package, or any package with `--arch aarch64`.
fn deb_package(package: &str, asked: Option<Arch>) -> (&str, bool) {
    match package.strip_suffix(":arm64") {
        Some(name) => (name, true),
        None => (package, asked == Some(Arch::Aarch64)),
    }
}

/// Debian names each kernel package after its architecture's flavour
/// (`-amd64`, `-686`, `-arm64`, `-cloud-arm64`…): a package of the other
/// architecture than the lists it would be looked for in is refused here,
/// with the spelling that finds it, not answered with the other lists' names.
fn check_flavour(given: &str, package: &str, suite: &str, arm64_lists: bool) -> Result<()> {
    if let Some((name, other)) = package.split_once(':').filter(|(_, a)| !["i386", "amd64"].contains(a)) {
        return Err(format!(
            "--kernel-deb {given}: :{other} is not an architecture bootmark takes a package of: give {name}:arm64@{suite} for arm64, or {name}@{suite} for x86"
        ));
    }
    let says = |flavour: &[&str]| package.split('-').any(|t| flavour.contains(&t));
    let flavour = if says(&["arm64"]) {
        "arm64"
    } else if says(&["amd64", "686", "pae"]) {
        "x86"
    } else {
        ""
    };
    match (flavour, arm64_lists) {
        ("arm64", false) => Err(format!(
            "--kernel-deb {given}: {package} is an arm64 package, and this would look in {suite}'s x86 lists: \
             give --kernel-deb {package}:arm64@{suite} (the image may hold x86 and arm64 kernels), or add \
             --arch aarch64 when every kernel of the image is arm64"
        )),
        ("x86", true) => Err(format!(
            "--kernel-deb {given}: {package} is an x86 package, and this would look in {suite}'s arm64 lists \
             (:arm64 or --arch aarch64): give --kernel-deb {}@{suite} without them",
            package.trim_end_matches(":arm64")
        )),
        _ => Ok(()),
    }
}

impl Kernel {
    /// How the user gave it: its package, else its file; with its release.
    pub(crate) fn named(&self) -> String {
        match self.origin.get("package").and_then(Value::as_str) {
            Some(package) => format!("{package} ({})", self.release),
            None => format!("{} ({})", self.vmlinuz.display(), self.release),
        }
    }
}

/// The kernel file as the bootloader will start it, its bytes, and what
/// was done to it: the file itself, or (a compressed arm64 Image, EFI
/// zboot: `arm64_vmlinuz.rs`) the Image inside it, written into `work`.
fn startable(path: &Path, name: &str, work: &Path) -> Result<(PathBuf, Vec<u8>, Option<Value>)> {
    let data = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    let Some(inner) = arm64_vmlinuz::unwrap(&data, name)? else { return Ok((path.to_path_buf(), data, None)) };
    fs::create_dir_all(work)?;
    let image = work.join("Image");
    fs::write(&image, &inner.image)?;
    eprintln!(
        "image: {name} is an arm64 Image in {}: decompressed ({} → {} bytes), as GRUB for arm64 starts only the Image",
        inner.from,
        data.len(),
        inner.image.len()
    );
    let facts = json!({"from": inner.from, "image_sha256": crate::host::fs::sha256_file(&image)?});
    Ok((image, inner.image, Some(facts)))
}

/// The manifest's origin of a kernel, with what [`startable`] did to its file when it did anything.
fn with_unwrapped(mut origin: Value, unwrapped: Option<Value>) -> Value {
    if let (Some(facts), Some(o)) = (unwrapped, origin.as_object_mut()) {
        o.insert("unwrapped".into(), facts);
    }
    origin
}

/// A kernel file (a bzImage, an arm64 Image) with its config and modules:
/// given, or beside it in a /boot tree. `origin`: where it came from,
/// beyond the file itself. `work`: where an Image taken out of a compressed
/// file goes.
fn from_file(
    path: &Path,
    config_path: Option<PathBuf>,
    modules: Option<PathBuf>,
    arch: Option<Arch>,
    origin: Option<Value>,
    work: &Path,
) -> Result<Kernel> {
    let name = path.display().to_string();
    let (vmlinuz, data, unwrapped) = startable(path, &format!("--kernel {name}"), work)?;
    let read = kernel::read(&data, &name)?;
    let release = read.release.clone();
    let config_path = config_path.or_else(|| config::find_beside(path, &release));
    let config = config_path.as_deref().map(config::KernelConfig::read).transpose()?;
    check_config(config.as_ref(), &path.display().to_string())?;
    let (major, minor) = read.protocol.unwrap_or_default();
    let arch = read.arch.or_else(|| config.as_ref().and_then(|c| c.arch())).or(arch).ok_or_else(|| {
        format!(
            "{}: boot protocol {major}.{minor:02} does not say whether it is 64-bit and no kernel config was found: add --kernel-config FILE or --arch x86_64|i686",
            path.display()
        )
    })?;
    let modules = modules.or_else(|| config::modules_beside(path, &release));
    if let Some(m) = &modules
        && !m.join("kernel").is_dir()
    {
        return Err(format!("--modules {}: not a lib/modules/<release> tree (no kernel/ inside)", m.display()));
    }
    eprintln!(
        "image: kernel {release} ({arch}) from {}{}{}",
        path.display(),
        config.as_ref().map(|c| format!(", config {}", c.path.display())).unwrap_or_default(),
        modules.as_ref().map(|m| format!(", modules {}", m.display())).unwrap_or_default()
    );
    let mut file = json!({"file": path.display().to_string(), "sha256": crate::host::fs::sha256_file(path)?});
    if let (Some(Value::Object(more)), Some(o)) = (origin, file.as_object_mut()) {
        o.extend(more);
    }
    Ok(Kernel {
        vmlinuz,
        release,
        version: read.version,
        arch,
        cmdline_max: read.cmdline_max,
        modules,
        config,
        origin: with_unwrapped(file, unwrapped),
    })
}

/// Refuse a kernel whose config says it cannot run the image; print what
/// only limits it.
fn check_config(config: Option<&config::KernelConfig>, kernel: &str) -> Result<()> {
    match config {
        Some(c) => {
            let warnings =
                c.check_can_run_image().map_err(|e| format!("{kernel} cannot run a bootmark image:\n{e}"))?;
            for w in warnings {
                eprintln!("image: warning: {w}");
            }
        }
        None => eprintln!(
            "image: warning: no kernel config for {kernel} (give --kernel-config FILE): built-in drivers cannot be told from missing ones, and the kernel cannot be checked"
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::image::rpm::tests as rpm_fixture;

    fn kernel(arch: Arch, origin: Value) -> Kernel {
        Kernel {
            vmlinuz: PathBuf::from("/boot/vmlinuz"),
            release: "6.1.0-57".into(),
            version: "6.1.0-57 #1".into(),
            arch,
            cmdline_max: 2047,
            modules: None,
            config: None,
            origin,
        }
    }

    #[test]
    fn a_kernel_of_another_arch_than_asked_is_refused_by_name() {
        let x86 = kernel(Arch::X86_64, json!({"package": "linux-image-6.1.0-57-amd64"}));
        assert!(refuse_other_arches(std::slice::from_ref(&x86), None).is_ok());
        assert!(refuse_other_arches(std::slice::from_ref(&x86), Some(Arch::X86_64)).is_ok());
        let e = refuse_other_arches(std::slice::from_ref(&x86), Some(Arch::I686)).unwrap_err();
        assert!(e.starts_with("linux-image-6.1.0-57-amd64 (6.1.0-57) is a kernel for x86_64, but --arch i686"), "{e}");
        let arm64 = kernel(Arch::Aarch64, json!({"file": "/boot/vmlinuz"}));
        assert!(refuse_other_arches(&[x86.clone(), arm64.clone()], None).is_ok(), "two architectures, one stick");
        let e = refuse_other_arches(&[x86, arm64], Some(Arch::X86_64)).unwrap_err();
        assert!(e.starts_with("/boot/vmlinuz (6.1.0-57) is a kernel for aarch64, but --arch x86_64"), "{e}");
        assert_eq!(deb_package("linux-image-arm64:arm64", None), ("linux-image-arm64", true));
        assert_eq!(deb_package("linux-image-arm64", Some(Arch::Aarch64)), ("linux-image-arm64", true));
        assert_eq!(deb_package("linux-image-amd64", None), ("linux-image-amd64", false));
    }

    /// An arm64 package named as an x86 one (the papercut: forty x86 names
    /// in answer), and the reverse: refused with the spelling that works.
    #[test]
    fn a_package_of_the_other_architecture_is_named_with_the_spelling_that_works() {
        let e = check_flavour("linux-image-arm64@bookworm", "linux-image-arm64", "bookworm", false).unwrap_err();
        assert!(
            e.contains("is an arm64 package") && e.contains("--kernel-deb linux-image-arm64:arm64@bookworm"),
            "{e}"
        );
        assert!(e.contains("--arch aarch64"), "{e}");
        let cloud = check_flavour("linux-image-cloud-arm64@trixie", "linux-image-cloud-arm64", "trixie", false);
        assert!(cloud.unwrap_err().contains("linux-image-cloud-arm64:arm64@trixie"));
        let e = check_flavour("linux-image-amd64:arm64@bookworm", "linux-image-amd64", "bookworm", true).unwrap_err();
        assert!(e.contains("is an x86 package") && e.contains("--kernel-deb linux-image-amd64@bookworm"), "{e}");
        assert!(check_flavour("linux-image-arm64:arm64@bookworm", "linux-image-arm64", "bookworm", true).is_ok());
        assert!(check_flavour("linux-image-686-pae@bookworm", "linux-image-686-pae", "bookworm", false).is_ok());
        assert!(
            check_flavour("linux-image-6.1.0-50-amd64@bookworm", "linux-image-6.1.0-50-amd64", "bookworm", false)
                .is_ok()
        );
        let e = check_flavour("linux-image-arm64-16k@trixie", "linux-image-arm64-16k", "trixie", false).unwrap_err();
        assert!(e.contains("linux-image-arm64-16k:arm64@trixie"), "{e}");
        let e = check_flavour("linux-image-arm64:aarch64@bookworm", "linux-image-arm64:aarch64", "bookworm", false);
        assert!(e.unwrap_err().contains("give linux-image-arm64:arm64@bookworm"));
        assert!(check_flavour("linux-image-686:i386@bookworm", "linux-image-686:i386", "bookworm", false).is_ok());
    }

    /// An x86_64 bzImage header with a version string (protocol 2.15, 64-bit).
    fn bzimage(release: &str) -> Vec<u8> {
        kernel::bzimage::tests::header((2, 15), 1, &format!("{release} (builder) #1 SMP"))
    }

    /// An arm64 Image with the EFI stub, gzip'd as RPM distributions ship `vmlinuz`.
    fn arm64_image_gz(release: &str) -> Vec<u8> {
        let banner = format!("Linux version {release} (mockbuild@) #1 SMP\n");
        rpm_fixture::gzip(&kernel::arm64_image::tests::image(0b1010, 0x2c0_0000, &banner))
    }

    #[test]
    fn rpms_of_either_architecture_are_taken_for_their_own_and_refused_for_the_other() {
        let dir = std::env::temp_dir().join(format!("bootmark-rpm-arch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let rpm = |name: &str, arch: &str, release: &str, vmlinuz: Vec<u8>| {
            let path = dir.join(format!("{name}.{arch}.rpm"));
            let files = [(format!("./boot/vmlinuz-{release}"), vmlinuz)];
            let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(p, d)| (p.as_str(), d.clone())).collect();
            std::fs::write(&path, rpm_fixture::package(name, arch, &files, rpm_fixture::gzip)).unwrap();
            path
        };
        let arm64 = rpm("kernel-core", "aarch64", "6.1.0-1.el9.aarch64", arm64_image_gz("6.1.0-1.el9.aarch64"));
        let x86 = rpm("kernel-core", "x86_64", "6.1.0-1.el9.x86_64", bzimage("6.1.0-1.el9.x86_64"));
        let resolved = |rpms: Vec<PathBuf>, arch: Option<Arch>| {
            let args = Args { kernel_rpms: rpms, arch, ..Args::default() };
            resolve(&args, &dir.join("work"))
        };
        let k = resolved(vec![arm64.clone()], None).unwrap();
        assert_eq!((k[0].arch, k[0].release.as_str()), (Arch::Aarch64, "6.1.0-1.el9.aarch64"));
        assert_eq!(k[0].origin["unwrapped"]["from"], "gzip", "the gzip'd Image is staged as the Image");
        assert!(crate::build::kernel::read(&fs::read(&k[0].vmlinuz).unwrap(), "staged").is_ok());
        let e = resolved(vec![x86.clone()], Some(Arch::Aarch64)).err().unwrap();
        assert!(e.contains("is a kernel for x86_64, but --arch aarch64"), "an x86 RPM for an arm64 image: {e}");
        let e = resolved(vec![arm64.clone()], Some(Arch::X86_64)).err().unwrap();
        assert!(e.contains("is a kernel for aarch64, but --arch x86_64"), "{e}");
        assert_eq!(resolved(vec![x86, arm64], None).unwrap().len(), 2, "one stick for both");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
