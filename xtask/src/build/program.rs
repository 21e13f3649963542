//! `cargo xtask program NAME`: our example programs for `command`
//! workloads (image/programs/NAME.c), built static with musl for an
//! architecture as the static mkfs programs are, so they run on every
//! kernel an image boots. Prints the program's path, for `--include`.

use crate::build::arch::Arch;
use crate::host::fs;
use crate::host::process::{cmd, run, shell_in};
use crate::host::project::{Result, project_root};
use std::path::PathBuf;

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The program: a file image/programs/NAME.c (seedwrite: the seed's many-files writer).
    pub name: String,
    /// Architecture to build for.
    #[arg(long, value_enum, default_value_t = Arch::X86_64)]
    pub arch: Arch,
    /// Install the missing compilers (musl-tools; for i686 musl-dev:i386; for aarch64
    /// gcc-aarch64-linux-gnu, with arm64's musl fetched from Debian) with apt-get.
    #[arg(long)]
    pub install_deps: bool,
}

pub fn run_args(args: &Args) -> Result<()> {
    println!("{}", build(&args.name, args.arch, args.install_deps)?.display());
    Ok(())
}

/// The names image/programs holds, for the error that lists them.
fn known() -> Vec<String> {
    let dir = project_root().join("image/programs");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().strip_suffix(".c").map(str::to_string))
        .collect();
    names.sort();
    names
}

/// Build image/programs/NAME.c for `arch` into target/programs/ARCH/NAME.
pub fn build(name: &str, arch: Arch, install_deps: bool) -> Result<PathBuf> {
    // One build at a time in this process: two tests, or two lanes of the
    // suite, would otherwise write the same temporary file.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let src = project_root().join("image/programs").join(format!("{name}.c"));
    if name.contains('/') || !src.is_file() {
        return Err(format!("no program '{name}' in image/programs: known are {}", known().join(", ")));
    }
    crate::build::image::static_mkfs::ensure_build_tools(arch, install_deps)?;
    let dir = project_root().join("target/programs").join(arch.name());
    fs::create_dir_all(&dir)?;
    let out = dir.join(name);
    let cc = arch.musl_cc(install_deps)?;
    let mut cc = cc.split_whitespace();
    let (compiler, cc_flags): (&str, Vec<&str>) = (cc.next().unwrap_or("musl-gcc"), cc.collect());
    // Made aside and renamed: a program being run (a test, a lane's image)
    // is never rewritten in place.
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let sh = shell_in(&dir)?;
    run(cmd!(sh, "{compiler} {cc_flags...} -static -s -O2 -Wall -Werror -o {tmp} {src}"))
        .map_err(|e| format!("building {name}: {e}"))?;
    fs::rename(&tmp, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::image::include;

    /// Built, accepted by the image builder's check, and run: the seed's
    /// writes land in the files it names.
    #[test]
    fn seedwrite_builds_static_passes_the_image_check_and_writes_its_files() {
        let path = build("seedwrite", Arch::X86_64, false).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        include::check_program("seedwrite", &bytes, &[Arch::X86_64]).unwrap();
        assert!(include::check_program("seedwrite", &bytes, &[Arch::I686]).unwrap_err().contains("built for x86_64"));
        let dir = std::env::temp_dir().join(format!("bootmark-seedwrite-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sh = shell_in(&dir).unwrap();
        let said = run(cmd!(sh, "{path} 3 40 16")).unwrap();
        assert!(said.starts_with("seedwrite: 3 files x 40 KiB in "), "{said}");
        for i in 0..3 {
            assert_eq!(std::fs::metadata(dir.join(format!("f{i:06}"))).unwrap().len(), 40 * 1024);
        }
        let bad = crate::host::process::output(cmd!(sh, "{path} 3 x").ignore_status()).unwrap();
        assert_eq!(bad.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&bad.stderr).contains("SIZE_KIB must be a positive number, not 'x'"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The example plan docs/plans.md shows: refused without seedwrite,
    /// accepted with the program built here.
    #[test]
    fn the_seed_program_plan_takes_the_built_program() {
        let plan = crate::build::image::cmdline::load_plan("seed-program").unwrap();
        assert!(include::check_plan(&plan, &[], &[Arch::X86_64]).unwrap_err().contains("'seedwrite'"));
        let path = build("seedwrite", Arch::X86_64, false).unwrap();
        let inc = include::parse(&path.display().to_string()).unwrap();
        include::check_plan(&plan, &[inc], &[Arch::X86_64]).unwrap();
    }

    #[test]
    fn an_unknown_program_names_the_known_ones() {
        let err = build("nosuch", Arch::X86_64, false).unwrap_err();
        assert!(err.contains("no program 'nosuch'") && err.contains("seedwrite"), "{err}");
    }
}
