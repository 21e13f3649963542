//! `cargo xtask kernel`: a kernel built from source with a config from
//! `kernel-configs/`. The tarball is checked against the line's recorded
//! SHA-256 and unpacked once into target/kernel/src/; the build runs out of
//! tree in target/kernel/build/LINE-ARCH/ (so a second build is
//! incremental); the result is laid out as a /boot tree (vmlinuz-R,
//! config-R, System.map-R, build-R.json, lib/modules/R when the config has
//! modules), which `cargo xtask image --kernel` takes as it is.
//!
//! Before make runs: the toolchain against the line's known-good ranges,
//! every option of the config against the tree's Kconfig files, and after
//! the config step, every option still set as asked.

pub mod debian_package;
pub mod kconfig;
pub mod line;
pub mod toolchain;

use crate::build::arch::Arch;
use crate::build::kernel::config::KernelConfig;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{Cmd, Shell, Streams, cmd, shell, shell_in};
use crate::host::project::{Result, project_root};
use line::Line;
use serde_json::{Value, json};
use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Host tools a kernel build needs beyond the compiler, make and binutils
/// (which the toolchain check names by version).
pub const BUILD_TOOLS: [(&str, &str); 6] = [
    ("flex", "flex"), // kconfig's parser (generated at build time since 4.16)
    ("bison", "bison"),
    ("bc", "bc"),                            // kernel/timeconst
    ("/usr/include/libelf.h", "libelf-dev"), // objtool (x86_64 since 4.6)
    ("xz", "xz-utils"),                      // .tar.xz sources
    ("bzip2", "bzip2"),                      // 2.6-era .tar.bz2 sources
];

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The kernel source: a release tarball (.tar.xz, .tar.bz2, .tar.gz), e.g.
    /// /usr/src/linux-source-6.1.tar.xz or linux-2.6.16.1.tar.bz2, or an unpacked tree.
    #[arg(long, value_name = "TARBALL|DIR")]
    pub src: PathBuf,
    /// The kernel-configs/ line to build with (default: the line whose recorded
    /// tarball hash, or version, matches the source).
    #[arg(long, value_name = "kernel-configs/LINE")]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Arch::X86_64)]
    pub arch: Arch,
    /// The C compiler (default: PREFIXgcc).
    #[arg(long, value_name = "CC")]
    pub cc: Option<String>,
    /// Prefix of the compiler and binutils (e.g. a toolchain of the kernel's era:
    /// /opt/etch/usr/bin/). Default: none for x86; for aarch64 on an x86 host,
    /// aarch64-linux-gnu- (Debian's gcc-aarch64-linux-gnu).
    #[arg(long, value_name = "PREFIX")]
    pub cross_compile: Option<String>,
    /// GNU make to run (kernels before 2.6.36 need make 3.81 or older).
    #[arg(long, value_name = "PATH", default_value = "make")]
    pub make: String,
    /// Parallel make jobs (default: the CPUs).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Where the /boot tree goes (default: target/kernel/LINE-ARCH).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Build from a tarball whose SHA-256 no kernel-configs line records.
    #[arg(long)]
    pub allow_unknown: bool,
    /// Build even with a compiler, make or binutils outside the line's known-good ranges.
    #[arg(long)]
    pub any_toolchain: bool,
    /// Run the toolchain check and make inside this root: a tree of the kernel's era
    /// (e.g. Debian etch made with debootstrap) whose gcc, make and binutils build it.
    /// Source and build directories go under ROOT/var/tmp/bootmark-kernel/.
    #[arg(long, value_name = "ROOT")]
    pub chroot: Option<PathBuf>,
    /// Install missing host tools (flex, bison, bc, libelf-dev, …) with apt-get (root, Debian/Ubuntu).
    #[arg(long)]
    pub install_deps: bool,
}

impl Args {
    /// `cargo xtask kernel --src SRC` with every other flag at its default.
    pub fn for_source(src: &Path) -> Args {
        crate::host::project::flags_given(&["--src", &src.to_string_lossy()])
    }

    /// The prefix given, or the one this host needs for the architecture.
    fn cross(&self) -> &str {
        self.cross_compile.as_deref().unwrap_or_else(|| self.arch.kernel_cross_compile())
    }
}

/// Debian's cross compilers, by the prefix they install: what
/// `--install-deps` installs when a cross build's compiler is missing.
const CROSS_PACKAGES: [(&str, &str); 1] = [("aarch64-linux-gnu-", "gcc-aarch64-linux-gnu")];

/// A kernel built: where its files are, and what it was built from.
#[derive(Clone, Debug)]
pub struct Built {
    pub vmlinuz: PathBuf,
    pub release: String,
    /// Source, config and toolchain, for the image manifest (also build-R.json).
    pub facts: Value,
}

pub fn run(args: &Args) -> Result<()> {
    let built = build(args)?;
    let boot = built.vmlinuz.parent().unwrap_or(Path::new("."));
    println!("{}", boot.join(format!("config-{}", built.release)).display());
    println!("{}", boot.join(format!("build-{}.json", built.release)).display());
    println!("{}", built.vmlinuz.display());
    Ok(())
}

pub fn build(args: &Args) -> Result<Built> {
    let started = Instant::now();
    crate::host::tools::ensure(&BUILD_TOOLS, args.install_deps, "--install-deps")?;
    ensure_cross_compiler(args)?;
    let (source, line) = resolve_source(args)?;
    // Where sources are unpacked and built: under the chroot when there is one.
    let work = match &args.chroot {
        Some(root) => root.join("var/tmp/bootmark-kernel"),
        None => project_root().join("target/kernel"),
    };
    let tree = match &source {
        Source::Tarball { path, sha256, .. } => unpack(path, sha256, &work)?,
        Source::Dir(dir) => dir.clone(),
    };
    if let Some(root) = &args.chroot {
        inside(root, &tree)?;
    }
    let tree_version = tree_version(&tree)?;
    if !line.is_for(&tree_version) {
        return Err(format!(
            "{} is Linux {tree_version}, but {} is for {}: give --config for the line of this version",
            tree.display(),
            line.dir.display(),
            line.source.version
        ));
    }
    let cc = args.cc.clone().unwrap_or_else(|| format!("{}gcc", args.cross()));
    let tools = checked_toolchain(args, &line, &cc, &tree_version)?;
    let config = line.config(args.arch.name())?;
    let unknown = kconfig::unknown_options(&config, &kconfig::tree_symbols(&tree)?);
    if !unknown.is_empty() {
        return Err(format!(
            "{} names options that Linux {tree_version}'s Kconfig files do not define: CONFIG_{}",
            config.path.display(),
            unknown.join(", CONFIG_")
        ));
    }
    let build_dir = work.join(format!("build/{}-{}", line.name, args.arch));
    std::fs::create_dir_all(&build_dir).map_err(|e| format!("{}: {e}", build_dir.display()))?;
    let make = Make { args, tree: &tree, build_dir: &build_dir, cc: &cc };
    configure(&make, &line, &config, &line.wanted(args.arch.name())?)?;
    let got = KernelConfig::read(&build_dir.join(".config"))?;
    check_configured(&got, &line)?;
    let modules = got.values().values().any(|v| v == "m");
    let mut targets = vec![args.arch.kernel_image().0];
    if modules {
        targets.push("modules");
    }
    make.run(&targets, &build_dir.join("build.log"), "building", false)?;
    let out =
        args.out.clone().unwrap_or_else(|| project_root().join(format!("target/kernel/{}-{}", line.name, args.arch)));
    let built = install(&make, &out, modules)?;
    let facts = json!({
        "line": line.name,
        "arch": args.arch.name(),
        "source": source.facts(),
        "config": {
            "file": config.path.strip_prefix(project_root()).unwrap_or(&config.path).display().to_string(),
            "sha256": crate::host::fs::sha256_file(&config.path)?,
            "built_sha256": crate::host::fs::sha256_file(&build_dir.join(".config"))?,
        },
        "toolchain": tools,
        "build_seconds": started.elapsed().as_secs(),
    });
    let info = out.join(format!("boot/build-{}.json", built.1));
    std::fs::write(&info, serde_json::to_string_pretty(&facts).unwrap())
        .map_err(|e| format!("{}: {e}", info.display()))?;
    eprintln!("kernel: Linux {} built in {}", built.1, minutes(started.elapsed()));
    Ok(Built { vmlinuz: built.0, release: built.1, facts })
}

/// A cross build's compiler, when it is Debian's and missing here:
/// installed with --install-deps, else named with its package. A prefix
/// of the user's own (a toolchain of the kernel's era, a chroot) is left to
/// the toolchain check, which says what it cannot run.
fn ensure_cross_compiler(args: &Args) -> Result<()> {
    let Some((prefix, package)) = CROSS_PACKAGES.iter().find(|(p, _)| *p == args.cross()) else { return Ok(()) };
    if args.chroot.is_some() || args.cc.is_some() {
        return Ok(());
    }
    let gcc = format!("{prefix}gcc");
    crate::host::tools::ensure(&[(gcc.as_str(), package)], args.install_deps, "--install-deps")
}

/// The compiler, make and binutils the build will use, refused (unless
/// --any-toolchain) outside the line's known-good ranges.
fn checked_toolchain(args: &Args, line: &Line, cc: &str, version: &str) -> Result<toolchain::Found> {
    let tools = toolchain::find(cc, &args.make, args.cross(), args.chroot.as_deref())?;
    eprintln!(
        "kernel: Linux {version} ({}) with gcc {}, make {}, binutils {}",
        args.arch, tools.gcc, tools.make, tools.binutils
    );
    if let Err(e) = toolchain::check(&tools, &line.source.toolchain, &line.name) {
        if !args.any_toolchain {
            return Err(format!("{e}\n(--any-toolchain builds anyway)"));
        }
        eprintln!("kernel: warning (--any-toolchain): {e}");
    }
    Ok(tools)
}

/// The configured kernel must be able to run the image; what a server
/// kernel should build in and does not is a warning.
fn check_configured(got: &KernelConfig, line: &Line) -> Result<()> {
    for w in got.check_can_run_image().map_err(|e| format!("this kernel could not run a bootmark image:\n{e}"))? {
        eprintln!("kernel: warning: {w}");
    }
    for m in got.missing_for_servers(line.version()) {
        eprintln!("kernel: warning: not built in, so the image would need it as a module: {m}");
    }
    Ok(())
}

/// Where the source comes from.
enum Source {
    /// `verified`: how the tarball is known to be what it says.
    Tarball {
        path: PathBuf,
        sha256: String,
        verified: String,
    },
    Dir(PathBuf),
}

impl Source {
    fn facts(&self) -> Value {
        match self {
            Source::Tarball { path, sha256, verified } => json!({
                "tarball": path.file_name().map(|n| n.to_string_lossy().into_owned()),
                "sha256": sha256,
                "verified": verified,
            }),
            Source::Dir(dir) => json!({"dir": dir.display().to_string(), "sha256": null}),
        }
    }
}

/// The source and the line to build it with: a tarball must be the one the
/// line records (or --allow-unknown); a tree is taken as it is.
fn resolve_source(args: &Args) -> Result<(Source, Line)> {
    let src = &args.src;
    let named = args.config.as_deref().map(Line::read).transpose()?;
    if src.is_dir() {
        let version = tree_version(src)?;
        let line = match named {
            Some(l) => l,
            None => Line::all()?.into_iter().find(|l| l.is_for(&version)).ok_or_else(|| {
                format!("no kernel-configs line is for Linux {version}: give --config kernel-configs/LINE")
            })?,
        };
        eprintln!("kernel: building the tree {} as it is (no tarball hash to check)", src.display());
        return Ok((Source::Dir(src.clone()), line));
    }
    if !src.is_file() {
        return Err(format!(
            "--src {}: no such file or directory (give a kernel tarball or an unpacked tree)",
            src.display()
        ));
    }
    eprintln!("kernel: checking {}", src.display());
    let sha256 = crate::host::fs::sha256_file(src)?;
    let recorded = Line::all()?.into_iter().find(|l| l.source.sha256.as_deref() == Some(sha256.as_str()));
    let verified = |line: Line, how: String| {
        eprintln!("kernel: {} is {how}", src.display());
        Ok((Source::Tarball { path: src.clone(), sha256: sha256.clone(), verified: how }, line))
    };
    if let Some(line) = recorded.as_ref().filter(|r| named.as_ref().is_none_or(|n| n.name == r.name)) {
        let how = format!("the tarball kernel-configs/{} records ({})", line.name, line.source.sha256_from);
        return verified(line.clone(), how);
    }
    let candidates = match &named {
        Some(n) => vec![n.clone()],
        None => Line::all()?,
    };
    for line in candidates {
        if let Some(how) = debian_package::verified(src, &line)? {
            return verified(line, how);
        }
    }
    let line = match named {
        Some(n) if args.allow_unknown => n,
        Some(n) => {
            let recorded = match &n.source.sha256 {
                Some(h) => format!("the line's {} has {h} ({})", n.source.tarball, n.source.sha256_from),
                None => format!("the line records no hash for {}: {}", n.source.tarball, n.source.sha256_from),
            };
            return Err(format!(
                "{} is not a tarball {} knows: its SHA-256 is {sha256}; {recorded}\nCheck where it came from; --allow-unknown builds it anyway",
                src.display(),
                n.dir.display(),
            ));
        }
        None => {
            return Err(format!(
                "{}: no kernel-configs line records this tarball (SHA-256 {sha256}): give --config kernel-configs/LINE, and --allow-unknown once you trust it",
                src.display()
            ));
        }
    };
    let how = format!("SHA-256 {sha256}, no line's (--allow-unknown)");
    Ok((Source::Tarball { path: src.clone(), sha256, verified: how }, line))
}

/// Unpack a tarball once into WORK/src/HASH/; returns the tree.
fn unpack(tarball: &Path, sha256: &str, work: &Path) -> Result<PathBuf> {
    let dir = work.join("src").join(&sha256[..16]);
    let stamp = dir.join(".unpacked");
    if !stamp.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        eprintln!("kernel: unpacking {} into {}", tarball.display(), dir.display());
        let sh = shell()?;
        let unpacked = crate::host::process::run_shown(cmd!(sh, "tar -xf {tarball} -C {dir}"));
        if let Err(e) = unpacked {
            return Err(format!(
                "{e}: is {} a kernel tarball? (xz and bzip2 must be installed for .xz/.bz2)",
                tarball.display()
            ));
        }
        fs::write(&stamp, sha256)?;
    }
    let mut tops: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    match (tops.pop(), tops.is_empty()) {
        (Some(top), true) => Ok(top),
        _ => Err(format!("{}: expected one top directory in the tarball", tarball.display())),
    }
}

/// The tree's version from its Makefile: VERSION.PATCHLEVEL.SUBLEVEL plus
/// an EXTRAVERSION that is a stable release number (`.1` of 2.6.16.1).
pub fn tree_version(tree: &Path) -> Result<String> {
    let makefile = tree.join("Makefile");
    let text = std::fs::read_to_string(&makefile)
        .map_err(|e| format!("{}: {e} (not a kernel source tree)", makefile.display()))?;
    let var = |name: &str| {
        text.lines()
            .take(20)
            .find_map(|l| l.strip_prefix(name).map(str::trim_start).and_then(|r| r.strip_prefix('=')).map(str::trim))
    };
    let (v, p, s) = match (var("VERSION"), var("PATCHLEVEL"), var("SUBLEVEL")) {
        (Some(v), Some(p), Some(s)) if !v.is_empty() => (v, p, s),
        _ => return Err(format!("{}: no VERSION/PATCHLEVEL/SUBLEVEL: not a kernel Makefile", makefile.display())),
    };
    let extra = var("EXTRAVERSION").unwrap_or("");
    let stable = extra.strip_prefix('.').filter(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()));
    Ok(match stable {
        Some(e) => format!("{v}.{p}.{s}.{e}"),
        None => format!("{v}.{p}.{s}"),
    })
}

/// make in the source tree, building out of tree.
struct Make<'a> {
    args: &'a Args,
    tree: &'a Path,
    build_dir: &'a Path,
    cc: &'a str,
}

impl Make<'_> {
    /// The shell make runs in: the tree, or (chrooted) where we stand.
    fn shell(&self) -> Result<Shell> {
        match &self.args.chroot {
            Some(_) => shell(),
            None => shell_in(self.tree),
        }
    }

    /// `make` in the tree, or in the chroot (`cd TREE && exec make …`, paths as seen inside it).
    fn command<'sh>(&self, sh: &'sh Shell, targets: &[&str]) -> Cmd<'sh> {
        let path = |p: &Path| match &self.args.chroot {
            Some(root) => inside(root, p).unwrap_or_else(|_| p.to_path_buf()),
            None => p.to_path_buf(),
        };
        let make = &self.args.make;
        let c = match &self.args.chroot {
            Some(root) => {
                let tree = path(self.tree);
                cmd!(sh, "chroot {root} /bin/sh -c 'cd \"$0\" && exec \"$@\"' {tree} {make}")
            }
            None => cmd!(sh, "{make}"),
        };
        let arch = self.args.arch.kernel_arch();
        let jobs = self.args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let (jobs, arch) = (format!("-j{jobs}"), format!("ARCH={arch}"));
        let (out, cc) = (format!("O={}", path(self.build_dir).display()), format!("CC={}", self.cc));
        let cross = Some(self.args.cross()).filter(|c| !c.is_empty()).map(|c| format!("CROSS_COMPILE={c}"));
        // The kernel's version string names its builder: ours, not the host's.
        c.args([jobs, arch, out, cc])
            .args(cross)
            .env("KBUILD_BUILD_USER", "bootmark")
            .env("KBUILD_BUILD_HOST", "kernel-configs")
            .args(targets)
    }

    /// Run make, its output into `log`; show the elapsed time and make's
    /// last line while it runs, and the log's tail if it fails.
    /// `answer_defaults`: feed empty lines (`yes "" | make oldconfig`).
    fn run(&self, targets: &[&str], log: &Path, what: &str, answer_defaults: bool) -> Result<()> {
        let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let sh = self.shell()?;
        let streams = Streams::default()
            .stdout(file.try_clone().with_context(|| format!("{}", log.display()))?)
            .stderr(file)
            .stdin(if answer_defaults { Stdio::piped() } else { Stdio::null() });
        let mut child = crate::host::process::spawn(self.command(&sh, targets), streams)?;
        if let Some(mut stdin) = child.stdin.take() {
            std::thread::spawn(move || {
                let lines = vec![b'\n'; 4096];
                while stdin.write_all(&lines).is_ok() {}
            });
        }
        let started = Instant::now();
        let tty = std::io::stderr().is_terminal();
        let mut shown = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().context("waiting for make")? {
                break status;
            }
            std::thread::sleep(Duration::from_millis(500));
            if tty || shown.elapsed() >= Duration::from_secs(30) {
                let last = last_line(log);
                let text = format!("kernel: {what} {} · {last}", minutes(started.elapsed()));
                match tty {
                    true => eprint!("\r\x1b[K{}", text.chars().take(120).collect::<String>()),
                    false => eprintln!("{text}"),
                }
                shown = Instant::now();
            }
        };
        if tty {
            eprintln!();
        }
        if !status.success() {
            return Err(format!(
                "make {} failed ({status}) after {}; the last lines of {}:\n{}",
                targets.join(" "),
                minutes(started.elapsed()),
                log.display(),
                tail(log, 30)
            ));
        }
        Ok(())
    }
}

/// Put the line's config in place and run the line's config step; refuse
/// the result if any option the line asks for was dropped or changed.
fn configure(make: &Make, line: &Line, config: &KernelConfig, wanted: &KernelConfig) -> Result<()> {
    let dot_config = make.build_dir.join(".config");
    std::fs::copy(&config.path, &dot_config).map_err(|e| format!("{}: {e}", dot_config.display()))?;
    let log = make.build_dir.join("config.log");
    match line.source.config_step.as_str() {
        "olddefconfig" => make.run(&["olddefconfig"], &log, "configuring", false)?,
        _ => make.run(&["oldconfig"], &log, "configuring", true)?,
    }
    let got = KernelConfig::read(&dot_config)?;
    let dropped = kconfig::dropped(wanted, &got);
    if !dropped.is_empty() {
        return Err(format!(
            "the config step ({}) did not keep what {} asks for — a dependency is missing, or the option means something else in this version:\n  {}",
            line.source.config_step,
            line.dir.display(),
            dropped.join("\n  ")
        ));
    }
    Ok(())
}

/// Copy the results into OUT as a /boot tree; returns (vmlinuz, release).
fn install(make: &Make, out: &Path, modules: bool) -> Result<(PathBuf, String)> {
    // 2.6 kernels before the x86 merge (2.6.24) leave it under their own arch.
    let (target, path) = make.args.arch.kernel_image();
    let candidates = [path, "arch/i386/boot/bzImage", "arch/x86_64/boot/bzImage"];
    let image = candidates
        .iter()
        .map(|c| make.build_dir.join(c))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("make finished but no {target} is in {}", make.build_dir.display()))?;
    let data = fs::read(&image)?;
    let kernel = crate::build::kernel::read(&data, &image.display().to_string())?;
    if kernel.arch.is_some_and(|a| a != make.args.arch) {
        return Err(format!("{} is a kernel for {:?}, not {}", image.display(), kernel.arch, make.args.arch));
    }
    let release = kernel.release;
    let boot = out.join("boot");
    std::fs::create_dir_all(&boot).map_err(|e| format!("{}: {e}", boot.display()))?;
    let copy = |from: PathBuf, name: String| {
        std::fs::copy(&from, boot.join(&name)).map_err(|e| format!("{} → {}: {e}", from.display(), boot.display()))
    };
    copy(image, format!("vmlinuz-{release}"))?;
    copy(make.build_dir.join(".config"), format!("config-{release}"))?;
    copy(make.build_dir.join("System.map"), format!("System.map-{release}"))?;
    if modules {
        // Installed beside the build (inside the chroot, if any), then copied out.
        let staged = make.build_dir.join("modules-install");
        let seen = match &make.args.chroot {
            Some(root) => inside(root, &staged)?,
            None => staged.clone(),
        };
        let target = format!("INSTALL_MOD_PATH={}", seen.display());
        make.run(
            &["modules_install", &target],
            &make.build_dir.join("modules_install.log"),
            "installing modules",
            false,
        )?;
        let (sh, lib) = (shell()?, staged.join("lib"));
        crate::host::process::run(cmd!(sh, "cp -a {lib} {out}"))?;
    }
    Ok((boot.join(format!("vmlinuz-{release}")), release))
}

/// A path under the chroot ROOT as seen inside it.
fn inside(root: &Path, p: &Path) -> Result<PathBuf> {
    let rest = p.strip_prefix(root).map_err(|_| {
        format!("{} is not inside the chroot {}: with --chroot, the tree must be under it", p.display(), root.display())
    })?;
    Ok(Path::new("/").join(rest))
}

fn minutes(d: Duration) -> String {
    format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
}

/// The last non-empty line of a log (its last 4 KiB), trimmed.
fn last_line(log: &Path) -> String {
    tail(log, 1)
}

/// The last `n` lines of a log (read from its last 64 KiB).
fn tail(log: &Path, n: usize) -> String {
    let Ok(mut f) = std::fs::File::open(log) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_says_its_version_with_a_stable_release_number() {
        let dir = std::env::temp_dir().join(format!("bootmark-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("Makefile"),
            "VERSION = 2\nPATCHLEVEL = 6\nSUBLEVEL = 16\nEXTRAVERSION = .1\nNAME=Sliding Snow Leopard\n",
        )
        .unwrap();
        assert_eq!(tree_version(&dir).unwrap(), "2.6.16.1");
        std::fs::write(dir.join("Makefile"), "VERSION = 2\nPATCHLEVEL = 6\nSUBLEVEL = 9\nEXTRAVERSION =\n").unwrap();
        assert_eq!(tree_version(&dir).unwrap(), "2.6.9");
        std::fs::write(dir.join("Makefile"), "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 176\nEXTRAVERSION = -rc1\n")
            .unwrap();
        assert_eq!(tree_version(&dir).unwrap(), "6.1.176");
        std::fs::write(dir.join("Makefile"), "all:\n").unwrap();
        assert!(tree_version(&dir).unwrap_err().contains("not a kernel Makefile"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn make_runs_in_the_tree_or_inside_the_chroot_with_its_paths() {
        let args = Args { arch: Arch::I686, jobs: Some(3), ..Args::for_source(Path::new("linux")) };
        let (tree, build) = (Path::new("/srv/etch/var/tmp/t"), Path::new("/srv/etch/var/tmp/b"));
        let make = Make { args: &args, tree, build_dir: build, cc: "gcc-4.1" };
        let shown = |make: &Make| crate::host::process::shown(make.command(&make.shell().unwrap(), &["bzImage"]));
        assert_eq!(
            shown(&make),
            "(cd /srv/etch/var/tmp/t && make -j3 ARCH=i386 O=/srv/etch/var/tmp/b CC=gcc-4.1 bzImage)"
        );
        let chrooted = Args { chroot: Some("/srv/etch".into()), ..args.clone() };
        let make = Make { args: &chrooted, tree, build_dir: build, cc: "gcc-4.1" };
        assert_eq!(
            shown(&make),
            "chroot /srv/etch /bin/sh -c 'cd \"$0\" && exec \"$@\"' /var/tmp/t make -j3 ARCH=i386 O=/var/tmp/b CC=gcc-4.1 bzImage"
        );
        assert!(
            inside(Path::new("/srv/etch"), Path::new("/work/linux")).unwrap_err().contains("not inside the chroot")
        );
    }

    #[test]
    fn an_arm64_kernel_is_cross_built_as_an_image_unless_told_otherwise() {
        let args = Args { arch: Arch::Aarch64, jobs: Some(2), ..Args::for_source(Path::new("linux")) };
        let (tree, build) = (Path::new("/t"), Path::new("/b"));
        let make = Make { args: &args, tree, build_dir: build, cc: "aarch64-linux-gnu-gcc" };
        let shown =
            crate::host::process::shown(make.command(&make.shell().unwrap(), &[Arch::Aarch64.kernel_image().0]));
        let cross = if std::env::consts::ARCH == "aarch64" { "" } else { " CROSS_COMPILE=aarch64-linux-gnu-" };
        assert_eq!(shown, format!("(cd /t && make -j2 ARCH=arm64 O=/b CC=aarch64-linux-gnu-gcc{cross} Image)"));
        let own = Args { cross_compile: Some("/opt/arm/bin/aarch64-none-linux-gnu-".into()), ..args.clone() };
        assert_eq!(own.cross(), "/opt/arm/bin/aarch64-none-linux-gnu-");
        // A prefix of the user's own is not Debian's package to install.
        assert!(ensure_cross_compiler(&own).is_ok());
    }

    #[test]
    fn a_tarball_no_line_records_is_refused_with_its_hash() {
        let dir = std::env::temp_dir().join(format!("bootmark-tarball-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tarball = dir.join("linux-9.9.tar.gz");
        std::fs::write(&tarball, b"not really a tarball").unwrap();
        let sha = crate::host::fs::sha256_file(&tarball).unwrap();
        let args = Args::for_source(&tarball);
        let e = resolve_source(&args).err().unwrap();
        assert!(e.contains(&sha) && e.contains("--config"), "{e}");
        let args = Args { config: Some(project_root().join("kernel-configs/6.1")), ..args };
        let e = resolve_source(&args).err().unwrap();
        assert!(e.contains(&sha) && e.contains("--allow-unknown") && e.contains("Debian"), "{e}");
        let args = Args { allow_unknown: true, ..args };
        assert!(resolve_source(&args).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
