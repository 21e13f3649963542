//! Kernels in: `--kernel` files (a bzImage, with its modules and config
//! from the flags or from beside it in a /boot tree), `--kernel-deb`
//! packages and `--kernel-rpm` packages, each checked (a real bzImage, a
//! config that can run the image) and described for the manifest.

use super::args::Args;
use super::{deb, rpm};
use crate::build::arch::Arch;
use crate::build::kernel::{self, bzimage, config};
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
        kernels.push(from_file(path, config, modules, args.arch, None)?);
    }
    for src in &args.kernel_src {
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
        kernels.push(from_file(&built.vmlinuz, None, None, Some(arch), Some(facts))?);
    }
    let cache = project_root().join("target/cache/debs");
    for (i, name) in args.kernel_debs.iter().enumerate() {
        // PACKAGE@SUITE from that Debian suite (apt state of its own), else the system's apt or a .deb.
        let (deb, suite) = match apt_suite::split(name) {
            Some((package, suite)) => {
                let apt_cache = project_root().join("target/cache/apt");
                let got = apt_suite::Suite::new(suite, apt_suite::Archive::debian(), &apt_cache)?.download(package)?;
                eprintln!("image: {name} is {} {}", got.package, got.version);
                (got.deb, Some(suite))
            }
            None => (deb::fetch_deb(name, &cache)?, None),
        };
        let k = deb::unpack_deb(&deb, &work.join(format!("deb{i}")))?;
        let data = fs::read(&k.vmlinuz)?;
        // Named by the package, not by the file unpacked in a directory of ours.
        let file = k.vmlinuz.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let bz = kernel::read_x86(&data, &format!("{}'s {file}", k.package))?;
        let config = config::find_beside(&k.vmlinuz, &k.release).map(|p| config::KernelConfig::read(&p)).transpose()?;
        check_config(config.as_ref(), name)?;
        kernels.push(Kernel {
            vmlinuz: k.vmlinuz.clone(),
            release: k.release.clone(),
            version: bz.version,
            arch: k.arch,
            modules: Some(k.modules.clone()),
            config,
            origin: json!({"package": k.package, "package_version": k.version, "deb": deb.file_name().map(|n| n.to_string_lossy().into_owned()), "deb_sha256": crate::host::fs::sha256_file(&deb)?, "modules_decompressed": k.modules_decompressed, "suite": suite}),
        });
    }
    for (i, path) in args.kernel_rpms.iter().enumerate() {
        let k = rpm::unpack(path, &work.join(format!("rpm{i}")))?;
        let data = fs::read(&k.vmlinuz)?;
        let bz = kernel::read_x86(&data, &k.vmlinuz.display().to_string())?;
        let release = bzimage::release_of(&bz.version);
        let config = config::find_beside(&k.vmlinuz, &release).map(|p| config::KernelConfig::read(&p)).transpose()?;
        check_config(config.as_ref(), &path.display().to_string())?;
        let arch = bz
            .arch
            .or_else(|| config.as_ref().and_then(|c| c.arch()))
            .or(k.arch)
            .ok_or_else(|| format!("{}: cannot tell whether the kernel is 64-bit", path.display()))?;
        if k.modules_decompressed > 0 {
            eprintln!("image: {} compressed modules of {} decompressed", k.modules_decompressed, k.name);
        }
        kernels.push(Kernel {
            vmlinuz: k.vmlinuz.clone(),
            release,
            version: bz.version,
            arch,
            modules: k.modules.clone(),
            config,
            origin: json!({"rpm": path.file_name().map(|n| n.to_string_lossy().into_owned()), "package": k.name,
                           "package_version": k.version, "rpm_sha256": crate::host::fs::sha256_file(path)?}),
        });
    }
    Ok(kernels)
}

/// A kernel file (a bzImage) with its config and modules: given, or beside
/// it in a /boot tree. `origin`: where it came from, beyond the file itself.
fn from_file(
    path: &Path,
    config_path: Option<PathBuf>,
    modules: Option<PathBuf>,
    arch: Option<Arch>,
    origin: Option<Value>,
) -> Result<Kernel> {
    let data = std::fs::read(path).map_err(|e| format!("--kernel {}: {e}", path.display()))?;
    let bz = kernel::read_x86(&data, &path.display().to_string())?;
    let release = bzimage::release_of(&bz.version);
    let config_path = config_path.or_else(|| config::find_beside(path, &release));
    let config = config_path.as_deref().map(config::KernelConfig::read).transpose()?;
    check_config(config.as_ref(), &path.display().to_string())?;
    let arch = bz
        .arch
        .or_else(|| config.as_ref().and_then(|c| c.arch()))
        .or(arch)
        .ok_or_else(|| {
            format!(
                "{}: boot protocol {}.{:02} does not say whether it is 64-bit and no kernel config was found: add --kernel-config FILE or --arch x86_64|i686",
                path.display(),
                bz.protocol.0,
                bz.protocol.1
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
    Ok(Kernel { vmlinuz: path.to_path_buf(), release, version: bz.version, arch, modules, config, origin: file })
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
