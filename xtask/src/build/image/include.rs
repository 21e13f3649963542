//! `--include SRC[:DEST]`: the user's own files in the image — the static
//! program a `command` workload runs, an input or job file it reads — in an
//! archive of their own in every entry's initramfs (`initramfs.rs`). An
//! image of x86 and arm64 kernels has such an archive per architecture: a
//! program goes to its own architecture's entries, so one DEST may be
//! given twice, once per architecture (`--fio` does that with its fio).
//!
//! Checked here, at build time, because at boot there is no one to ask: a
//! program the plan runs must be provided by an `--include`, and must be a
//! static ELF the image's kernels can run. A dynamic one would fail at boot
//! with "No such file or directory" (its interpreter is not in the image),
//! so the build names the interpreter and libraries instead.

use crate::build::arch::Arch;
use crate::host::project::Result;
use bootmark::plan::Plan;
use bootmark::workload::WorkloadSpec;
use std::path::{Component, Path, PathBuf};

/// One `--include`: a file on this machine and where it goes in the image.
#[derive(Clone, Debug, PartialEq)]
pub struct Include {
    pub src: PathBuf,
    /// Absolute path inside the image.
    pub dest: String,
    /// The architecture whose kernels run it, when it is an ELF program of
    /// one; None for any other file (a job file, an input), which every
    /// entry gets.
    pub arch: Option<Arch>,
}

impl Include {
    /// `src` to `dest`, its architecture read from its ELF header.
    pub fn new(src: PathBuf, dest: String) -> Result<Include> {
        let arch = program_arch(&src)?;
        Ok(Include { src, dest, arch })
    }

    /// "--include SRC (aarch64)", for messages.
    fn named(&self) -> String {
        match self.arch {
            Some(a) => format!("--include {} ({a})", self.src.display()),
            None => format!("--include {}", self.src.display()),
        }
    }
}

/// The architecture an ELF program at `path` is built for; None for a file
/// that is no ELF program, or one of a machine bootmark has no kernels for.
fn program_arch(path: &Path) -> Result<Option<Arch>> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut f = std::fs::File::open(path).map_err(|e| format!("--include {}: {e}", path.display()))?;
    if f.read_exact(&mut head).is_err() || &head != b"\x7fELF" {
        return Ok(None);
    }
    let bytes = std::fs::read(path).map_err(|e| format!("--include {}: {e}", path.display()))?;
    Ok(super::elf::read(&bytes).ok().and_then(|e| Arch::ALL.into_iter().find(|a| runs_on(e.machine, e.class64, *a))))
}

/// The includes an entry of `arch` gets: every file that is no program of
/// another architecture.
pub fn for_arch(includes: &[Include], arch: Arch) -> Vec<Include> {
    includes.iter().filter(|i| i.arch.is_none_or(|a| a == arch)).cloned().collect()
}

/// Paths of the image that an include must not replace.
const RESERVED: [&str; 4] = ["/init", "/etc/bootmark", "/dev", "/lib/modules"];

/// `SRC` or `SRC:DEST`; DEST defaults to /usr/local/bin/NAME, where a
/// `command` workload's bare program name is looked for first.
pub fn parse(arg: &str) -> Result<Include> {
    let (src, dest) = match arg.rsplit_once(':') {
        Some((src, dest)) if dest.starts_with('/') => (src, dest.to_string()),
        _ => {
            let name = Path::new(arg)
                .file_name()
                .ok_or_else(|| format!("--include {arg}: names no file"))?
                .to_string_lossy()
                .into_owned();
            (arg, format!("/usr/local/bin/{name}"))
        }
    };
    if !Path::new(&dest).components().skip(1).all(|c| matches!(c, Component::Normal(_))) || dest.ends_with('/') {
        return Err(format!(
            "--include {arg}: {dest} must be a plain absolute path to a file (no '..', no trailing '/')"
        ));
    }
    if let Some(r) = RESERVED.iter().find(|r| dest == **r || dest.starts_with(&format!("{r}/"))) {
        return Err(format!("--include {arg}: {dest} would replace the image's own {r}; choose another DEST"));
    }
    let meta = std::fs::metadata(src).map_err(|e| format!("--include {arg}: {src}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("--include {arg}: {src} is not a file (give each file of a directory its own --include)"));
    }
    Include::new(PathBuf::from(src), dest)
}

/// Parse every `--include`, refusing two that go to one place, but for
/// programs of two architectures (each entry gets its own).
pub fn parse_all(args: &[String]) -> Result<Vec<Include>> {
    let mut out: Vec<Include> = Vec::new();
    for arg in args {
        let inc = parse(arg)?;
        let clash =
            |o: &&Include| o.dest == inc.dest && !(o.arch.is_some() && inc.arch.is_some() && o.arch != inc.arch);
        if let Some(other) = out.iter().find(clash) {
            return Err(format!(
                "--include {arg}: {} already goes to {} (from {}); give one of them another :DEST (one DEST takes two programs only when they are built for different architectures)",
                inc.src.display(),
                inc.dest,
                other.named()
            ));
        }
        out.push(inc);
    }
    Ok(out)
}

/// Whether a kernel of `arch` runs a program built for `machine`.
fn runs_on(machine: u16, class64: bool, arch: Arch) -> bool {
    match arch {
        Arch::X86_64 => machine == 62 && class64,
        Arch::I686 => machine == 3 && !class64,
        Arch::Aarch64 => machine == 183 && class64,
    }
}

fn machine_name(machine: u16) -> String {
    match machine {
        3 => "i386".into(),
        62 => "x86_64".into(),
        183 => "aarch64 (arm64)".into(),
        40 => "arm (32-bit)".into(),
        m => format!("machine {m}"),
    }
}

/// Refuse `bytes` unless it is a static program every `arches` kernel runs.
pub fn check_program(what: &str, bytes: &[u8], arches: &[Arch]) -> Result<()> {
    let e = super::elf::read(bytes)
        .map_err(|why| format!("{what} is {why}: a command workload runs a static ELF program"))?;
    if let Some(a) = arches.iter().find(|a| !runs_on(e.machine, e.class64, **a)) {
        return Err(format!(
            "{what} is built for {}, and the image has {a} kernels: build it for {a} (an image of two architectures takes one program of each at the same DEST)",
            machine_name(e.machine)
        ));
    }
    if e.interpreter.is_some() || !e.needed.is_empty() {
        let interp = e.interpreter.as_deref().unwrap_or("none");
        let libs = if e.needed.is_empty() { "none".into() } else { e.needed.join(", ") };
        return Err(format!(
            "{what} is dynamically linked (interpreter {interp}; libraries {libs}), and the image has neither: link it statically (musl-gcc -static, or gcc -static; `cargo xtask program` builds ours)"
        ));
    }
    Ok(())
}

/// What a plan's workloads need from the image: (the workload, the
/// program it runs, a job file it reads), nested ones too.
fn needs_of(plan: &Plan) -> Vec<(&'static str, &str, Option<&str>)> {
    fn walk<'a>(w: &'a WorkloadSpec, out: &mut Vec<(&'static str, &'a str, Option<&'a str>)>) {
        match w {
            WorkloadSpec::Command(p) => out.push(("command", &p.program, None)),
            WorkloadSpec::Fio(p) => out.push(("fio", &p.program, p.job_file.as_deref())),
            WorkloadSpec::Instances(i) => walk(&i.workload, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for w in &plan.workloads {
        walk(w, &mut out);
    }
    out
}

/// Every program the plan runs is included, static, for each of the
/// image's arches; every job file it reads is included.
pub fn check_plan(plan: &Plan, includes: &[Include], arches: &[Arch]) -> Result<()> {
    for (workload, program, job_file) in needs_of(plan) {
        let candidates = bootmark::workload::command::candidates(program);
        for arch in arches {
            let ours = for_arch(includes, *arch);
            let found = candidates.iter().find_map(|c| ours.iter().find(|i| Path::new(&i.dest) == c));
            let inc = found.ok_or_else(|| missing_program(plan, workload, program, &candidates, includes, *arch))?;
            let bytes = std::fs::read(&inc.src).map_err(|e| format!("--include {}: {e}", inc.src.display()))?;
            let what = format!("--include {} (the plan's program '{program}')", inc.src.display());
            check_program(&what, &bytes, &[*arch])?;
        }
        if let Some(job) = job_file {
            let inc = includes.iter().find(|i| i.dest == job).ok_or_else(|| {
                format!(
                    "plan '{}' runs fio on job_file {job}, which no --include provides: add --include PATH/TO/JOB.fio:{job}, or give the job inline (\"job\")",
                    plan.name
                )
            })?;
            // /init checks it again; refusing here saves a boot.
            let text =
                std::fs::read_to_string(&inc.src).map_err(|e| format!("--include {}: {e}", inc.src.display()))?;
            bootmark::workload::fio_job::allowed(&text, &format!("--include {} (job_file {job})", inc.src.display()))?;
        }
    }
    Ok(())
}

/// Why no include gives `arch`'s entries the plan's `program`: there is
/// none, or only one built for another architecture.
fn missing_program(
    plan: &Plan,
    workload: &str,
    program: &str,
    candidates: &[PathBuf],
    includes: &[Include],
    arch: Arch,
) -> String {
    let name = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let other = candidates.iter().find_map(|c| includes.iter().find(|i| Path::new(&i.dest) == c));
    if let Some(other) = other {
        return format!(
            "plan '{}' runs program '{program}', and {} gives it to {}'s entries only; the image has {arch} kernels too: add --include PATH/TO/{name}:{} built for {arch}",
            plan.name,
            other.named(),
            other.arch.map_or("no architecture", Arch::name),
            other.dest
        );
    }
    let looked: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    let add = match workload {
        "fio" if program == "fio" => "add --fio (a static fio built from Debian's source)".to_string(),
        _ => format!("add --include PATH/TO/{name}"),
    };
    format!(
        "plan '{}' runs program '{program}', which no --include provides (looked for {}): {add}",
        plan.name,
        looked.join(", ")
    )
}

/// The archive entries: (path without the leading '/', content, mode).
/// Programs the plan runs, and files that are executable here, get 0755.
pub fn files(includes: &[Include]) -> Result<super::mkfs::Files> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    for inc in includes {
        let data = std::fs::read(&inc.src).map_err(|e| format!("--include {}: {e}", inc.src.display()))?;
        let executable = std::fs::metadata(&inc.src).map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false);
        let mode = if executable || data.starts_with(b"\x7fELF") { 0o755 } else { 0o644 };
        out.push((inc.dest.trim_start_matches('/').to_string(), data, mode));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bootmark-include-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn dest_defaults_to_usr_local_bin_and_reserved_places_are_refused() {
        let dir = scratch("parse");
        let prog = dir.join("loadgen");
        std::fs::write(&prog, b"x").unwrap();
        let p = prog.display().to_string();
        assert_eq!(parse(&p).unwrap().dest, "/usr/local/bin/loadgen");
        assert_eq!(parse(&format!("{p}:/opt/jobs/a.fio")).unwrap().dest, "/opt/jobs/a.fio");
        assert!(parse(&format!("{p}:/init")).unwrap_err().contains("the image's own /init"));
        assert!(parse(&format!("{p}:/etc/bootmark/plans/x.json")).unwrap_err().contains("/etc/bootmark"));
        assert!(parse(&format!("{p}:/opt/../init")).unwrap_err().contains("no '..'"));
        assert!(parse(&format!("{}/missing", dir.display())).unwrap_err().contains("No such file"));
        assert!(parse(&dir.display().to_string()).unwrap_err().contains("not a file"));
        let twice = parse_all(&[p.clone(), format!("{p}:/usr/local/bin/loadgen")]).unwrap_err();
        assert!(twice.contains("already goes to /usr/local/bin/loadgen"), "{twice}");
    }

    /// The host's own programs: dynamic x86_64 glibc binaries.
    #[test]
    fn a_dynamic_program_is_refused_naming_its_interpreter_and_libraries() {
        let bytes = std::fs::read("/bin/ls").unwrap();
        let e = super::super::elf::read(&bytes).unwrap();
        assert_eq!((e.machine, e.class64), (62, true));
        assert!(e.interpreter.as_deref().unwrap().contains("ld-linux-x86-64"), "{e:?}");
        assert!(e.needed.iter().any(|l| l.starts_with("libc.so")), "{e:?}");
        let err = check_program("ls", &bytes, &[Arch::X86_64]).unwrap_err();
        assert!(err.contains("dynamically linked") && err.contains("libc.so.6") && err.contains("ld-linux"), "{err}");
        let err = check_program("ls", &bytes, &[Arch::I686]).unwrap_err();
        assert!(err.contains("built for x86_64, and the image has i686 kernels"), "{err}");
    }

    #[test]
    fn scripts_and_other_files_are_not_programs() {
        assert!(check_program("s", b"#!/bin/sh\necho hi\n", &[Arch::X86_64]).unwrap_err().contains("a script"));
        assert!(check_program("t", &[b'x'; 100], &[Arch::X86_64]).unwrap_err().contains("not an ELF program"));
        let mut object = std::fs::read("/bin/ls").unwrap();
        object[16] = 1; // ET_REL
        assert!(check_program("o", &object, &[Arch::X86_64]).unwrap_err().contains("not a program"));
        assert!(check_program("cut", &std::fs::read("/bin/ls").unwrap()[..40], &[Arch::X86_64]).is_err());
    }

    /// A static ELF64 executable header for `machine` (62 x86-64, 183 AArch64): no segments, no loader.
    fn static_program(dir: &Path, name: &str, machine: u16) -> PathBuf {
        let mut d = vec![0u8; 128];
        d[..4].copy_from_slice(b"\x7fELF");
        (d[4], d[5], d[6]) = (2, 1, 1);
        d[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        d[18..20].copy_from_slice(&machine.to_le_bytes());
        d[20..24].copy_from_slice(&1u32.to_le_bytes());
        d[52..54].copy_from_slice(&64u16.to_le_bytes());
        d[54..56].copy_from_slice(&56u16.to_le_bytes());
        d[58..60].copy_from_slice(&64u16.to_le_bytes());
        let path = dir.join(name);
        std::fs::write(&path, d).unwrap();
        path
    }

    #[test]
    fn one_dest_takes_a_program_per_architecture_and_each_entry_gets_its_own() {
        let dir = scratch("arches");
        let x86 = static_program(&dir, "loadgen-x86_64", 62).display().to_string();
        let arm = static_program(&dir, "loadgen-aarch64", 183).display().to_string();
        let job = dir.join("seed.fio");
        std::fs::write(&job, b"[seed]\nrw=write\n").unwrap();
        let dest = "/usr/local/bin/loadgen";
        let both =
            parse_all(&[format!("{x86}:{dest}"), format!("{arm}:{dest}"), format!("{}:/etc/seed.fio", job.display())])
                .unwrap();
        assert_eq!(both.iter().map(|i| i.arch).collect::<Vec<_>>(), [Some(Arch::X86_64), Some(Arch::Aarch64), None]);
        let x86_entries = for_arch(&both, Arch::X86_64);
        assert_eq!(x86_entries.iter().map(|i| i.dest.as_str()).collect::<Vec<_>>(), [dest, "/etc/seed.fio"]);
        assert_eq!(x86_entries[0].src.display().to_string(), x86, "x86's entries get x86's program");
        assert_eq!(for_arch(&both, Arch::Aarch64)[0].src.display().to_string(), arm);
        // Two of one architecture at one place stay refused.
        let again = parse_all(&[format!("{x86}:{dest}"), format!("{x86}:{dest}")]).unwrap_err();
        assert!(again.contains("already goes to") && again.contains("(x86_64)"), "{again}");
        // A plan's program for both architectures' kernels: each must have its own.
        let plan =
            Plan::from_json(r#"{"name":"mine","workloads":[{"name":"command","params":{"program":"loadgen"}}]}"#)
                .unwrap();
        let arches = [Arch::X86_64, Arch::Aarch64];
        assert_eq!(check_plan(&plan, &both, &arches), Ok(()));
        let x86_only = parse_all(&[format!("{x86}:{dest}")]).unwrap();
        let e = check_plan(&plan, &x86_only, &arches).unwrap_err();
        assert!(e.contains("gives it to x86_64's entries only") && e.contains("built for aarch64"), "{e}");
        assert_eq!(check_plan(&plan, &x86_only, &[Arch::X86_64]), Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_plan_naming_a_program_no_include_provides_is_refused() {
        let plan = Plan::from_json(
            r#"{"name":"mine","workloads":[{"name":"instances","params":{"count":2,
                "workload":{"name":"command","params":{"program":"loadgen"}}}}]}"#,
        )
        .unwrap();
        let err = check_plan(&plan, &[], &[Arch::X86_64]).unwrap_err();
        assert!(err.contains("program 'loadgen', which no --include provides"), "{err}");
        let fio = Plan::from_json(r#"{"name":"f","workloads":[{"name":"fio","params":{"job_file":"/etc/seed.fio"}}]}"#)
            .unwrap();
        assert!(check_plan(&fio, &[], &[Arch::X86_64]).unwrap_err().contains("add --fio"));
        let fake_fio = Include::new("/bin/ls".into(), "/usr/local/bin/fio".into()).unwrap();
        assert!(check_plan(&fio, &[fake_fio], &[Arch::X86_64]).unwrap_err().contains("dynamically linked"));
        assert!(err.contains("/usr/local/bin/loadgen") && err.contains("--include PATH/TO/loadgen"), "{err}");
        let dynamic = Include::new("/bin/ls".into(), "/usr/local/bin/loadgen".into()).unwrap();
        assert!(check_plan(&plan, &[dynamic], &[Arch::X86_64]).unwrap_err().contains("dynamically linked"));
    }

    /// The issue's job: a storage engineer's own, naming their device.
    #[test]
    fn an_included_fio_job_naming_a_device_is_refused_at_build() {
        let dir = scratch("fio-job");
        let fio = static_program(&dir, "fio", 62).display().to_string();
        let job = dir.join("job.fio");
        std::fs::write(&job, b"[global]\nioengine=psync\n\n[w]\nfilename=/dev/sdb\nrw=write\nsize=8m\n").unwrap();
        let includes =
            parse_all(&[format!("{fio}:/usr/local/bin/fio"), format!("{}:/etc/jobs/job.fio", job.display())]).unwrap();
        let plan =
            Plan::from_json(r#"{"name":"f","workloads":[{"name":"fio","params":{"job_file":"/etc/jobs/job.fio"}}]}"#)
                .unwrap();
        let err = check_plan(&plan, &includes, &[Arch::X86_64]).unwrap_err();
        assert!(
            err.contains("job.fio (job_file /etc/jobs/job.fio)")
                && err.contains("line 5, [w], option filename: '/dev/sdb'"),
            "{err}"
        );
        std::fs::write(&job, b"[w]\nfilename=data\nrw=write\nsize=8m\n").unwrap();
        assert_eq!(check_plan(&plan, &includes, &[Arch::X86_64]), Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
