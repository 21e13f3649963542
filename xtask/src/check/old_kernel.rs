//! Simulated old kernels: a seccomp filter that makes this kernel answer like
//! Linux 2.6.9 or 2.6.16, and the harness that runs bootmark under it.
//!
//! We cannot boot 2.6.9 here, so we remove what it lacks (README, "Old
//! kernels"): syscalls past its table return ENOSYS;
//! futex ops with FUTEX_PRIVATE_FLAG or newer than its last op return ENOSYS;
//! F_DUPFD_CLOEXEC and SOCK_CLOEXEC/NONBLOCK return EINVAL; clock ids ≥ 4
//! return EINVAL. Both x86_64 and i386 syscall tables are covered, so the
//! i686 binary is held to the 32-bit kernel's limits. Not simulated: the vDSO
//! (clock reads through it never reach seccomp) and missing /proc, /sys files.

use crate::build::arch::Arch;
use crate::build::static_binary;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{Cmd, Streams, cmd, shell};
use crate::host::project::{Result, project_root};
use bootmark::record::{Record, Status};
use std::os::unix::process::CommandExt;
use std::path::Path;

/// The syscall surface of one old kernel.
#[derive(Clone, Copy, Debug)]
pub struct OldKernel {
    pub name: &'static str,
    pub last_x86_64: u32,
    pub last_i386: u32,
    pub last_futex_op: u32,
}

pub const LINUX_2_6_9: OldKernel = OldKernel { name: "2.6.9", last_x86_64: 247, last_i386: 284, last_futex_op: 4 };
pub const LINUX_2_6_16: OldKernel = OldKernel { name: "2.6.16", last_x86_64: 272, last_i386: 310, last_futex_op: 5 };

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const FUTEX_PRIVATE_FLAG: u32 = 128;
const F_DUPFD_CLOEXEC: u32 = 1030;
const SOCK_FLAGS: u32 = 0o2000000 | 0o4000;

/// Syscall numbers that matter, per architecture.
struct Table {
    audit_arch: u32,
    futex: u32,
    fcntl: &'static [u32],
    socket: Option<u32>,
    clock_calls: &'static [u32],
}

const X86_64: Table = Table {
    audit_arch: AUDIT_ARCH_X86_64,
    futex: 202,
    fcntl: &[72],
    socket: Some(41),
    clock_calls: &[222, 227, 228, 229, 230],
};
// i386 has no socket syscall before 4.3 (socketcall multiplexes), so it is past the table anyway.
const I386: Table = Table {
    audit_arch: AUDIT_ARCH_I386,
    futex: 240,
    fcntl: &[55, 221],
    socket: None,
    clock_calls: &[259, 264, 265, 266, 267],
};

// Classic BPF opcodes.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGT_K: u16 = 0x25;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;
// seccomp_data offsets.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
fn off_arg_low(i: u32) -> u32 {
    16 + 8 * i
}

/// A tiny assembler: jumps name labels, resolved when the program is finished.
#[derive(Default)]
struct Asm {
    code: Vec<(u16, Jump, Jump, u32)>,
    labels: Vec<(String, usize)>,
}

#[derive(Clone)]
enum Jump {
    Next,
    To(String),
}

impl Asm {
    fn stmt(&mut self, code: u16, k: u32) {
        self.code.push((code, Jump::Next, Jump::Next, k));
    }
    fn jump(&mut self, code: u16, k: u32, yes: Jump, no: Jump) {
        self.code.push((code, yes, no, k));
    }
    fn label(&mut self, name: &str) {
        self.labels.push((name.to_string(), self.code.len()));
    }
    fn finish(self) -> Vec<libc::sock_filter> {
        let at = |name: &str| self.labels.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("label {name}")).1;
        self.code
            .iter()
            .enumerate()
            .map(|(i, (code, yes, no, k))| {
                let rel = |j: &Jump| match j {
                    Jump::Next => 0,
                    Jump::To(l) => u8::try_from(at(l) - i - 1).expect("jump too far"),
                };
                libc::sock_filter { code: *code, jt: rel(yes), jf: rel(no), k: *k }
            })
            .collect()
    }
}

fn to(l: &str) -> Jump {
    Jump::To(l.to_string())
}

/// The filter program for one old kernel, both architectures.
pub fn filter(k: OldKernel) -> Vec<libc::sock_filter> {
    let mut a = Asm::default();
    a.stmt(LD_W_ABS, OFF_ARCH);
    a.jump(JEQ_K, X86_64.audit_arch, to("x86_64"), Jump::Next);
    a.jump(JEQ_K, I386.audit_arch, to("i386"), to("allow"));
    for (prefix, table, last) in [("x86_64", &X86_64, k.last_x86_64), ("i386", &I386, k.last_i386)] {
        let l = |s: &str| format!("{prefix}_{s}");
        a.label(prefix);
        a.stmt(LD_W_ABS, OFF_NR);
        // x32 syscalls (bit 30) did not exist either.
        a.jump(JGT_K, last, to("enosys"), Jump::Next);
        a.jump(JEQ_K, table.futex, to(&l("futex")), Jump::Next);
        for &nr in table.fcntl {
            a.jump(JEQ_K, nr, to(&l("fcntl")), Jump::Next);
        }
        if let Some(nr) = table.socket {
            a.jump(JEQ_K, nr, to(&l("socket")), Jump::Next);
        }
        for &nr in table.clock_calls {
            a.jump(JEQ_K, nr, to(&l("clock")), Jump::Next);
        }
        a.stmt(RET_K, RET_ALLOW);
        a.label(&l("futex"));
        a.stmt(LD_W_ABS, off_arg_low(1));
        a.jump(JSET_K, FUTEX_PRIVATE_FLAG, to("enosys"), Jump::Next);
        a.stmt(AND_K, 127);
        a.jump(JGT_K, k.last_futex_op, to("enosys"), to("allow"));
        a.label(&l("fcntl"));
        a.stmt(LD_W_ABS, off_arg_low(1));
        a.jump(JEQ_K, F_DUPFD_CLOEXEC, to("einval"), to("allow"));
        a.label(&l("socket"));
        a.stmt(LD_W_ABS, off_arg_low(1));
        a.jump(JSET_K, SOCK_FLAGS, to("einval"), to("allow"));
        a.label(&l("clock"));
        a.stmt(LD_W_ABS, off_arg_low(0));
        a.jump(JGE_K, 4, to("einval"), to("allow"));
    }
    a.label("allow");
    a.stmt(RET_K, RET_ALLOW);
    a.label("enosys");
    a.stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32);
    a.label("einval");
    a.stmt(RET_K, RET_ERRNO | libc::EINVAL as u32);
    a.finish()
}

/// Install the filter on the calling process (inherited across fork and exec).
/// Async-signal-safe: only two prctl calls on a program built beforehand.
pub fn install(program: &[libc::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr() as *mut _ };
    // SAFETY: prog points to a valid program that outlives the calls.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const _ as libc::c_ulong, 0, 0)
                != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Start `cmd` under the old kernel's syscall surface: the filter is
/// installed in the child between fork and exec. As root, the child also
/// gets a mount namespace of its own where /proc/pressure is an empty
/// directory, as on every kernel before 4.20 (the filter simulates
/// syscalls; files in /proc it cannot hide).
pub fn spawn_under(k: OldKernel, cmd: Cmd<'_>, streams: Streams) -> Result<std::process::Child> {
    spawn_with_vm(k, cmd, streams, None)
}

/// `spawn_under`, and as root with `vm_dir` (a directory of plain files)
/// bound over /proc/sys/vm in the child's mount namespace: the sysctls an
/// old kernel has, as it has them (2.6.9: no dirty_bytes, no drop_caches),
/// written by the run without touching the host's.
fn spawn_with_vm(
    k: OldKernel,
    cmd: Cmd<'_>,
    streams: Streams,
    vm_dir: Option<std::ffi::CString>,
) -> Result<std::process::Child> {
    let bpf = filter(k);
    let hide = hides_pressure();
    crate::host::process::spawn_prepared(cmd, streams, move |c| {
        // SAFETY: the closure only makes syscalls (unshare, mount, prctl),
        // which are async-signal-safe, on strings made before the fork.
        unsafe {
            c.pre_exec(move || {
                if hide || vm_dir.is_some() {
                    private_mount_namespace()?;
                }
                if hide {
                    hide_pressure_stall_information()?;
                }
                if let Some(dir) = &vm_dir {
                    bind_over_proc_sys_vm(dir)?;
                }
                install(&bpf)
            })
        };
    })
}

fn host_has_pressure() -> bool {
    std::path::Path::new("/proc/pressure").is_dir()
}

/// Whether `spawn_under` hides /proc/pressure: as root, where the host has
/// it (psi=0 or CONFIG_PSI off leave nothing to hide).
fn hides_pressure() -> bool {
    running_as_root() && host_has_pressure()
}

/// Whether a run under `spawn_under` sees no /proc/pressure, as before 4.20.
fn pressure_absent_under_spawn() -> bool {
    hides_pressure() || !host_has_pressure()
}

fn check_rc(rc: libc::c_int) -> std::io::Result<()> {
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// A mount namespace of the child's own, private, so that nothing mounted
/// in it propagates to the host's mounts.
fn private_mount_namespace() -> std::io::Result<()> {
    // SAFETY: constant NUL-terminated strings; no memory is allocated.
    unsafe {
        check_rc(libc::unshare(libc::CLONE_NEWNS))?;
        check_rc(libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))
    }
}

/// `dir` bound over /proc/sys/vm (in the child's own namespace).
fn bind_over_proc_sys_vm(dir: &std::ffi::CStr) -> std::io::Result<()> {
    // SAFETY: NUL-terminated strings made before the fork; no memory is allocated.
    unsafe {
        check_rc(libc::mount(dir.as_ptr(), c"/proc/sys/vm".as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()))
    }
}

/// In the child's namespace, a read-only empty tmpfs over /proc/pressure.
fn hide_pressure_stall_information() -> std::io::Result<()> {
    // SAFETY: constant NUL-terminated strings; no memory is allocated.
    unsafe {
        check_rc(libc::mount(
            c"none".as_ptr(),
            c"/proc/pressure".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_RDONLY,
            std::ptr::null(),
        ))
    }
}

/// `cargo xtask check old-kernel`: both static binaries, both kernels, the quick plan.
pub fn harness() -> Result<()> {
    let (mut passed, mut failed) = (0, 0);
    let mut report = |label: &str, outcome: Result<String>| match outcome {
        Ok(figures) => {
            passed += 1;
            eprintln!("old-kernel: ok   {label}: {figures}");
        }
        Err(e) => {
            failed += 1;
            eprintln!("old-kernel: FAIL {label}: {e}");
        }
    };
    for arch in Arch::X86 {
        let binary = static_binary::build(arch)?;
        for kernel in [LINUX_2_6_9, LINUX_2_6_16] {
            report(&format!("{arch} binary on simulated Linux {}", kernel.name), check_quick_plan(kernel, &binary));
        }
    }
    for arch in Arch::X86 {
        report(
            &format!("the {arch} binary running a static program (command workload) on simulated Linux 2.6.9"),
            check_command(LINUX_2_6_9, arch),
        );
    }
    for arch in Arch::X86 {
        report(
            &format!("the {arch} binary running the image's static fio (fio workload) on simulated Linux 2.6.9"),
            check_fio(LINUX_2_6_9, arch),
        );
    }
    for arch in Arch::X86 {
        for fs in ["ext3", "reiserfs"] {
            report(
                &format!("the image's static {arch} mkfs formatting {fs} on simulated Linux 2.6.9"),
                check_static_mkfs(LINUX_2_6_9, arch, fs),
            );
        }
    }
    for arch in Arch::X86 {
        report(
            &format!("the {arch} binary's variants restoring what they found on 2.6.9's sysctls"),
            check_variants_restore(LINUX_2_6_9, arch),
        );
    }
    println!("old-kernel harness: {passed} passed, {failed} failed");
    if failed > 0 { Err(format!("{failed} old-kernel runs failed")) } else { Ok(()) }
}

/// Run the quick plan under `kernel`; check the records are complete and that
/// nothing burned CPU while waiting (std's futex fallbacks spin on old kernels).
fn check_quick_plan(kernel: OldKernel, binary: &Path) -> Result<String> {
    let dir = project_root().join(format!("target/oldkernel-{}-{}", kernel.name, std::process::id()));
    fs::create_dir_all(&dir)?;
    let out = dir.join("records.jsonl");
    let work = dir.join("work");
    fs::create_dir_all(&work)?;
    let start = std::time::Instant::now();
    let sh = shell()?;
    let child = spawn_under(
        kernel,
        // --kernel-events: an old kernel must say it has no tracepoints, touching nothing.
        cmd!(sh, "{binary} run --plan quick --quiet --kernel-events --dir {work} --out {out}"),
        Streams::default(),
    )?;
    let (status, usage) = wait4(child.id() as i32)?;
    let wall = start.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    if status != 0 {
        return Err(format!("exit status {status:#x}; records so far:\n{text}"));
    }
    check_records(&text, usage, wall, pressure_absent_under_spawn())
}

/// A `command` workload under the old kernel's syscall surface: /init
/// forks, execs and follows the seed's program (static musl, as
/// `cargo xtask program` builds it) to an ok record with its output; the
/// host's glibc `true`, run the same way, must fail there, or the filter
/// would not be simulating the old kernel.
fn check_command(kernel: OldKernel, arch: Arch) -> Result<String> {
    let seedwrite = crate::build::program::build("seedwrite", arch, crate::host::deps::can_install())?;
    let workload = |program: &Path, args: &[&str]| serde_json::json!({"name": "command", "params": {"program": program, "args": args}});
    let workloads = [workload(&seedwrite, &["20", "256"]), workload(Path::new("/bin/true"), &[])];
    let (records, text) = run_workloads_under(kernel, arch, "command", &workloads)?;
    let [ours, host] = records.as_slice() else {
        return Err(format!("expected two records, got:\n{text}"));
    };
    let said = ours.details["stdout"].as_str().unwrap_or_default();
    if ours.status != Status::Ok || !said.starts_with("seedwrite: 20 files x 256 KiB") {
        return Err(format!("seedwrite: {:?} {:?}, stdout {said:?}", ours.status, ours.error));
    }
    if host.status == Status::Ok {
        return Err("the host's glibc /bin/true ran under the filter: the simulation is too lenient".into());
    }
    if running_as_root() && !ours.details["confined"].is_object() {
        return Err(format!("seedwrite ran unconfined: {}", ours.details));
    }
    Ok(format!(
        "\"{}\", {} written{}; the host's glibc program fails there: {}",
        said.trim(),
        bootmark::size::human(ours.bytes_written),
        if ours.details["confined"].is_object() { ", confined as in a boot" } else { "" },
        host.error.as_deref().unwrap_or_default()
    ))
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// `arch`'s static binary running a plan of `workloads` under `kernel`'s
/// syscall surface, in a directory of its own under target/: the records it
/// wrote, and their text for an error.
fn run_workloads_under(
    kernel: OldKernel,
    arch: Arch,
    name: &str,
    workloads: &[serde_json::Value],
) -> Result<(Vec<Record>, String)> {
    let binary = static_binary::build(arch)?;
    let dir = project_root().join(format!("target/oldkernel-{name}-{arch}-{}", std::process::id()));
    let work = dir.join("work");
    fs::create_dir_all(&work)?;
    let plan = dir.join(format!("{name}.json"));
    let json = serde_json::json!({"name": format!("old-{name}"), "probe": {"baseline_s": 0.2, "recovery_deadline_s": 5},
        "workloads": workloads});
    fs::write(&plan, serde_json::to_string(&json).unwrap())?;
    let out = dir.join("records.jsonl");
    let sh = shell()?;
    // As a boot runs them (confine.rs: clone, mount, mknod, capset, prctl, all in 2.6.9's table), where root may.
    let confine: Vec<&str> = if running_as_root() { vec!["--confine-programs"] } else { Vec::new() };
    let mut child = spawn_under(
        kernel,
        cmd!(sh, "{binary} run --plan {plan} --quiet --dir {work} --out {out} {confine...}"),
        Streams::null(),
    )?;
    let _ = child.wait();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    Ok((text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect(), text))
}

/// 2.6.9's vm sysctls, at its defaults: what a variant may set that it
/// has (no dirty_bytes or dirty_background_bytes before 2.6.29), those a
/// record reads beside them, and no drop_caches (2.6.16).
const VM_OF_2_6_9: [(&str, &str); 7] = [
    ("dirty_ratio", "40"),
    ("dirty_background_ratio", "10"),
    ("dirty_expire_centisecs", "3000"),
    ("dirty_writeback_centisecs", "500"),
    ("swappiness", "60"),
    ("vfs_cache_pressure", "100"),
    ("overcommit_memory", "0"),
];

/// Variants of every kind of vm setting, twice round, on 2.6.9's sysctls
/// (plain files bound over /proc/sys/vm: the host's are never written):
/// every run is on the settings as found plus its own; the variant of the
/// byte limits, which 2.6.9 lacks, is skipped and says why; after the run
/// every file holds what it held before. As root only (the bind mount).
fn check_variants_restore(kernel: OldKernel, arch: Arch) -> Result<String> {
    if !running_as_root() {
        return Ok("skipped: binding 2.6.9's sysctls over /proc/sys/vm needs root".into());
    }
    let binary = static_binary::build(arch)?;
    let dir = project_root().join(format!("target/oldkernel-restore-{arch}-{}", std::process::id()));
    let (work, vm) = (dir.join("work"), dir.join("vm"));
    fs::create_dir_all(&work)?;
    fs::create_dir_all(&vm)?;
    for (name, value) in VM_OF_2_6_9 {
        fs::write(vm.join(name), format!("{value}\n"))?;
    }
    let plan = dir.join("restore.json");
    let json = serde_json::json!({"name": "old-restore", "repeat": 2, "probe": {"enabled": false},
    "workloads": [{"name": "idle", "params": {"seconds": 0.1}}],
    "variants": [
        {"name": "asfound"},
        {"name": "tinydirty", "vm": {"dirty_bytes": 4194304, "dirty_background_bytes": 1048576}},
        {"name": "ratio10", "vm": {"dirty_ratio": 10, "dirty_background_ratio": 5}},
        {"name": "swappy", "vm": {"swappiness": 10, "dirty_expire_centisecs": 1000}}
    ]});
    fs::write(&plan, serde_json::to_string(&json).unwrap())?;
    let (out, said) = (dir.join("records.jsonl"), dir.join("stderr.txt"));
    let sh = shell()?;
    let vm_c = std::ffi::CString::new(vm.display().to_string()).map_err(|e| e.to_string())?;
    let stderr = std::fs::File::create(&said).map_err(|e| format!("{}: {e}", said.display()))?;
    let mut child = spawn_with_vm(
        kernel,
        cmd!(sh, "{binary} run --plan {plan} --quiet --dir {work} --out {out}"),
        Streams::null().stderr(stderr),
        Some(vm_c),
    )?;
    let _ = child.wait();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let notes = std::fs::read_to_string(&said).unwrap_or_default();
    let records: Vec<Record> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let after: Vec<(String, String)> = VM_OF_2_6_9
        .iter()
        .map(|(name, _)| {
            (name.to_string(), std::fs::read_to_string(vm.join(name)).unwrap_or_default().trim().to_string())
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let checked = restored_as_found(&records, &after, &notes);
    checked.map_err(|e| format!("{e}\nits stderr: {notes}"))
}

/// What `check_variants_restore` asserts of its records and of the files after the run.
/// A variant nothing of which applies (tinydirty: 2.6.9 has neither byte
/// limit) is skipped, not run as a copy of the settings as found, and says so.
fn restored_as_found(
    records: &[Record],
    after: &[(String, String)],
    notes: &str,
) -> std::result::Result<String, String> {
    let names: Vec<&str> = records.iter().filter_map(|r| r.variant.as_ref()).map(|v| v.name.as_str()).collect();
    let ok = records.iter().all(|r| r.status == Status::Ok);
    if names != ["asfound", "ratio10", "swappy", "asfound", "ratio10", "swappy"] || !ok {
        let said: Vec<String> = records.iter().map(|r| format!("{:?} {:?}", r.status, r.error)).collect();
        return Err(format!("expected 6 ok runs (3 variants twice, tinydirty skipped), got {names:?}: {said:?}"));
    }
    let skipped = "variant tinydirty skipped: vm.dirty_background_bytes: this kernel has no";
    if !notes.contains(skipped) || !notes.contains("vm.dirty_bytes: this kernel has no") {
        return Err(format!("the skipped variant's note does not say 2.6.9 lacks both byte limits (\"{skipped}…\")"));
    }
    let in_force = |r: &Record| -> std::collections::BTreeMap<String, Option<i64>> {
        bootmark::schema::variant::VM_SETTINGS
            .iter()
            .map(|k| (k.to_string(), r.vm.get(*k).copied().flatten()))
            .collect()
    };
    let found: std::collections::BTreeMap<String, Option<i64>> = VM_OF_2_6_9
        .iter()
        .filter(|(k, _)| bootmark::schema::variant::VM_SETTINGS.contains(k))
        .map(|(k, v)| (k.to_string(), v.parse().ok()))
        .chain([("dirty_bytes".to_string(), None), ("dirty_background_bytes".to_string(), None)])
        .collect();
    for r in records {
        let v = r.variant.as_ref().ok_or("a record without its variant")?;
        let mut want = found.clone();
        for (key, value) in &v.asked {
            let name = key.strip_prefix("vm.").unwrap_or(key);
            if !v.not_applied.contains_key(key) {
                want.insert(name.to_string(), value.parse().ok());
            }
        }
        if in_force(r) != want {
            return Err(format!(
                "{} run {} was not on 2.6.9's settings as found plus its own: {:?} where {want:?} was due; not applied {:?}",
                v.name,
                r.repetition,
                in_force(r),
                v.not_applied
            ));
        }
        let lacks = ["vm.dirty_bytes", "vm.dirty_background_bytes"];
        if v.name == "tinydirty"
            && !lacks.iter().all(|k| v.not_applied.get(*k).is_some_and(|w| w.contains("this kernel has no")))
        {
            return Err(format!(
                "tinydirty: the byte limits 2.6.9 lacks are not said not applied: {:?}",
                v.not_applied
            ));
        }
    }
    let changed: Vec<String> = VM_OF_2_6_9
        .iter()
        .zip(after)
        .filter(|((_, before), (_, now))| before != now)
        .map(|((k, before), (_, now))| format!("{k} {before} → {now}"))
        .collect();
    if !changed.is_empty() {
        return Err(format!("after the run the sysctls do not hold what they held before: {changed:?}"));
    }
    Ok("6 runs of 3 variants twice, each on 2.6.9's settings as found plus its own; the byte-limit variant skipped, saying 2.6.9 has neither; every sysctl as found afterwards".into())
}

/// A `fio` workload under the old kernel's syscall surface: the static fio
/// `--fio` puts in the image (musl; its threads and shared memory on the
/// futex ops and calls 2.6.9 has) runs a writer and a rate-limited reader
/// to an ok record with fio's figures for both.
fn check_fio(kernel: OldKernel, arch: Arch) -> Result<String> {
    let fio = crate::build::image::static_fio::fio(arch, crate::host::deps::can_install())?;
    let job = "[global]\nioengine=psync\n\n[writer]\nrw=write\nbs=16k\nsize=8m\nend_fsync=1\n\n[reader]\nrw=randread\nbs=4k\nsize=1m\nruntime=1\ntime_based=1\nrate_iops=50\n";
    let workloads = [serde_json::json!({"name": "fio", "params": {"program": fio, "job": job}})];
    let (records, text) = run_workloads_under(kernel, arch, "fio", &workloads)?;
    let [r] = records.as_slice() else {
        return Err(format!("expected one record, got:\n{text}"));
    };
    let jobs = &r.details["fio"]["jobs"];
    if r.status != Status::Ok || jobs[0]["write"]["io_bytes"] != 8 << 20 || jobs[1]["read"]["iops"].as_f64().is_none() {
        return Err(format!("fio: {:?} {:?}, stderr {}, jobs {jobs}", r.status, r.error, r.details["stderr"]));
    }
    Ok(format!(
        "{} written by its writer, its reader at {:.0} IOPS with a completion p99 of {:.2} ms",
        bootmark::size::human(r.bytes_written),
        jobs[1]["read"]["iops"].as_f64().unwrap_or_default(),
        jobs[1]["read"]["clat"]["p99_ms"].as_f64().unwrap_or(f64::NAN)
    ))
}

/// The mkfs program `--mkfs FS` puts in the image formats a file under the
/// old kernel's syscall surface, with the arguments /init gives it, into a
/// filesystem that kernel mounts. The host's glibc program must fail there:
/// if it did not, the filter would not be simulating the old kernel.
fn check_static_mkfs(kernel: OldKernel, arch: Arch, fs: &str) -> Result<String> {
    let install = crate::host::deps::can_install();
    let (ours, host) = match fs {
        "ext3" => (crate::build::image::static_mkfs::mke2fs(arch, install)?, "/sbin/mke2fs"),
        _ => (crate::build::image::static_mkfs::mkreiserfs(arch, install)?, "/sbin/mkfs.reiserfs"),
    };
    let img = project_root().join(format!("target/oldkernel-mkfs-{fs}-{arch}-{}.img", std::process::id()));
    let format = |program: &Path| -> Result<bool> {
        std::fs::write(&img, b"")
            .and_then(|()| std::fs::File::create(&img)?.set_len(64 << 20))
            .with_context(|| format!("cannot make {}", img.display()))?;
        // A refusal under seccomp is an answer here, not an error.
        let sh = shell()?;
        let args = bootmark::contract::formatting::mkfs_args(fs, Some("OLDKERNEL"), None);
        let ran = spawn_under(kernel, cmd!(sh, "{program} {args...} {img}"), Streams::null());
        Ok(ran.is_ok_and(|mut child| child.wait().is_ok_and(|s| s.success())))
    };
    let host_ran = Path::new(host).exists() && format(Path::new(host))?;
    let ours_ran = format(&ours)?;
    let checked = if fs == "ext3" { check_ext3(&img) } else { check_reiserfs(&img) };
    let _ = std::fs::remove_file(&img);
    if host_ran {
        return Err(format!("the host's glibc {host} ran under the filter: the simulation is too lenient"));
    }
    if !ours_ran {
        return Err(format!("{} failed", ours.display()));
    }
    Ok(format!("{}; the host's glibc program fails there", checked?))
}

/// An ext3 Linux 2.6.9 mounts, labelled OLDKERNEL.
fn check_ext3(img: &Path) -> Result<String> {
    let sh = shell()?;
    let summary = crate::host::process::run(cmd!(sh, "dumpe2fs -h {img}"))?;
    let field = |name: &str| {
        summary.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).unwrap_or_default()
    };
    let features = field("Filesystem features:");
    // What 2.6.9's ext3 refuses: incompatible features it does not know.
    let unknown_to_2_6_9 = ["extent", "64bit", "metadata_csum", "flex_bg", "huge_file", "orphan_file", "inline_data"];
    if !features.contains("has_journal") || features.split_whitespace().any(|f| unknown_to_2_6_9.contains(&f)) {
        return Err(format!("not an ext3 Linux 2.6.9 mounts: features {features}"));
    }
    if field("Filesystem volume name:") != "OLDKERNEL" {
        return Err(format!("the label is not kept:\n{summary}"));
    }
    Ok(format!("features {features}; inode size {}", field("Inode size:")))
}

/// A clean reiserfs 3.6 (the format 2.6 kernels mount) labelled OLDKERNEL.
fn check_reiserfs(img: &Path) -> Result<String> {
    let sh = shell()?;
    let summary = crate::host::process::run(cmd!(sh, "debugreiserfs {img}"))?;
    if !summary.contains("format 3.6 with standard journal") || !summary.contains("LABEL: OLDKERNEL") {
        return Err(format!("not a labelled reiserfs 3.6:\n{summary}"));
    }
    crate::host::process::run(cmd!(sh, "reiserfsck --check --yes --quiet {img}"))
        .map_err(|e| format!("reiserfsck: {e}"))?;
    Ok("reiserfs 3.6 with standard journal, label kept, reiserfsck clean".into())
}

fn wait4(pid: i32) -> Result<(i32, f64)> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok((status, s(usage.ru_utime) + s(usage.ru_stime)))
}

/// A JSONL text's records, which must be the quick plan's six, in order
/// (the old-kernel harness and the arm64 /init under qemu-user).
pub fn quick_plan_records(text: &str) -> Result<Vec<Record>> {
    let records: Vec<Record> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| format!("not a {} record: {e}", bootmark::record::SCHEMA))?;
    let names: Vec<&str> = records.iter().map(|r| r.workload.name.as_str()).collect();
    if names != ["manyfiles", "seqwrite", "seqread", "sort", "instances", "idle"] {
        return Err(format!("expected the quick plan's six records, got {names:?}"));
    }
    Ok(records)
}

/// The checks on one run's records; returns a line of figures.
/// `pressure_hidden`: the run saw no /proc/pressure (`spawn_under` as root, or a host without PSI).
pub fn check_records(text: &str, total_cpu: f64, wall: f64, pressure_hidden: bool) -> Result<String> {
    let records = quick_plan_records(text)?;
    let cpu = |r: &Record| r.times.user_s + r.times.sys_s;
    let mut accounted = 0.0;
    let mut probe_cpu = 0.0;
    for r in &records {
        let name = &r.workload.name;
        if r.status != Status::Ok {
            return Err(format!("{name}: status {} ({})", r.status.name(), r.error.as_deref().unwrap_or("")));
        }
        // What an old kernel is most likely to leave empty.
        let missing = [
            ("kernel.release", r.kernel.release.is_none()),
            ("storage.fs", r.storage.fs.is_none()),
            ("timeline.t_s", r.timeline.t_s.is_empty()),
        ];
        if let Some((field, _)) = missing.iter().find(|(_, m)| *m) {
            return Err(format!("{name}: {field} is missing"));
        }
        // Where its evidence on waits came from, and that tracing was not touched on a pre-2.6.27 kernel.
        let tracepoints = r.sources.get("tracepoints").map_or("", String::as_str);
        if r.kernel_events.is_some() || !tracepoints.starts_with("not used: the kernel predates 2.6.27") {
            return Err(format!("{name}: tracepoints read or not said so: sources {:?}", r.sources));
        }
        if !r.sources.get("wchan").is_some_and(|s| s.starts_with("used")) {
            return Err(format!("{name}: the wchan source is not said: {:?}", r.sources));
        }
        // No PSI before 4.20 (hidden by spawn_under as root): said so, and no series sampled from it.
        if pressure_hidden {
            let psi = r.sources.get("psi").map_or("", String::as_str);
            let sampled = r.timeline.series.iter().any(|(k, v)| k.starts_with("psi_") && v.iter().any(Option::is_some));
            if !psi.starts_with("not used: /proc/pressure/io") || sampled {
                return Err(format!("{name}: PSI read on a kernel without it, or not said so: sources.psi {psi:?}"));
            }
        }
        let probe = r.responsiveness.as_ref().ok_or_else(|| format!("{name}: the probe did not run"))?;
        if probe.baseline_samples == 0 {
            return Err(format!("{name}: the probe took no baseline samples"));
        }
        accounted += cpu(r) + probe.probe_cpu_s;
        probe_cpu += probe.probe_cpu_s;
    }
    // The writer's state is read with procfs's parser, under 2.6.9's syscalls.
    let seqwrite = &records[1];
    if !seqwrite.timeline.writer_state.iter().flatten().any(|s| s.len() == 1) {
        return Err(format!("seqwrite: no writer state sampled: {:?}", seqwrite.timeline.writer_state));
    }
    let idle = &records[5];
    let (idle_cpu, idle_wall) = (cpu(idle), idle.times.wall_s);
    if idle_cpu > 0.05 * idle_wall {
        return Err(format!("the idle workload used {idle_cpu:.3} s CPU in {idle_wall:.3} s: something spins"));
    }
    // CPU figures must be real: sorting 8 MiB takes measurable CPU (a wrong
    // rusage layout once made every figure zero on i686).
    if cpu(&records[3]) <= 0.0 {
        return Err("the sort record reports no CPU time: rusage is not being read correctly".into());
    }
    if probe_cpu > 0.05 * wall {
        return Err(format!("the probe used {probe_cpu:.3} s CPU in a {wall:.1} s run: it spins"));
    }
    // The runner itself only polls and samples /proc; a spinning wait shows as CPU ≈ wall.
    let runner_cpu = total_cpu - accounted;
    if runner_cpu > 0.15 * wall {
        return Err(format!("the runner used {runner_cpu:.2} s CPU in a {wall:.1} s run: something spins"));
    }
    Ok(format!(
        "6 records ok{}; wall {wall:.1} s, CPU total {total_cpu:.2} s (runner {runner_cpu:.2} s, probe {probe_cpu:.3} s, idle workload {idle_cpu:.3} s)",
        if pressure_hidden { ", no PSI said so" } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `f` in a forked child under the filter; the child's exit code is
    /// the errno that `f` saw (0 for success).
    fn errno_under(k: OldKernel, f: fn() -> libc::c_long) -> i32 {
        let bpf = filter(k);
        // SAFETY: the child only installs the filter, makes one syscall and _exits.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                if install(&bpf).is_err() {
                    libc::_exit(200);
                }
                let r = f();
                libc::_exit(if r < 0 { *libc::__errno_location() } else { 0 });
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::WEXITSTATUS(status)
        }
    }

    /// Module loading on a kernel before 3.8: finit_module is ENOSYS, so
    /// /init must read the (decompressed) module and call init_module. The
    /// filter stands in for such a kernel and for its answer to init_module
    /// (this host has no module support), with an errno nothing else
    /// returns. Only module syscalls are changed: this test runs in the
    /// glibc-linked xtask, whose open() is openat, which 2.6.9 lacks.
    #[test]
    fn modules_load_through_init_module_when_finit_module_is_enosys() {
        let module = std::env::temp_dir().join(format!("bootmark-old-module-{}.ko", std::process::id()));
        std::fs::write(&module, b"\x7fELF\x02\x01\x01 a decompressed module").unwrap();
        let mut a = Asm::default();
        a.stmt(LD_W_ABS, OFF_NR);
        a.jump(JEQ_K, libc::SYS_finit_module as u32, to("enosys"), Jump::Next);
        a.jump(JEQ_K, libc::SYS_init_module as u32, Jump::Next, to("allow"));
        a.stmt(RET_K, RET_ERRNO | libc::EKEYREJECTED as u32);
        a.label("enosys");
        a.stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32);
        a.label("allow");
        a.stmt(RET_K, RET_ALLOW);
        let before_3_8 = a.finish();
        let path = module.clone();
        // SAFETY: the child installs the filter, loads one file and _exits.
        let errno = unsafe {
            let pid = libc::fork();
            if pid == 0 {
                if install(&before_3_8).is_err() {
                    libc::_exit(200);
                }
                let r = bootmark::contract::modules::load(&path, "delay_use=0");
                libc::_exit(r.err().and_then(|e| e.raw_os_error()).unwrap_or(0));
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::WEXITSTATUS(status)
        };
        std::fs::remove_file(&module).unwrap();
        assert_eq!(errno, libc::EKEYREJECTED, "init_module was not reached after finit_module's ENOSYS");
    }

    #[test]
    fn syscalls_newer_than_the_kernel_get_enosys() {
        // getrandom (318) came in 3.17; unshare (272) in 2.6.16.
        let getrandom = || unsafe { libc::syscall(libc::SYS_getrandom, [0u8; 4].as_mut_ptr(), 4usize, 0) };
        assert_eq!(errno_under(LINUX_2_6_9, getrandom), libc::ENOSYS);
        assert_eq!(errno_under(LINUX_2_6_16, getrandom), libc::ENOSYS);
        let getpid = || unsafe { libc::syscall(libc::SYS_getpid) };
        assert_eq!(errno_under(LINUX_2_6_9, getpid), 0);
        // openat (257) is past 2.6.9's table but inside 2.6.16's.
        let openat = || unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, c"/".as_ptr(), libc::O_RDONLY) };
        assert_eq!(errno_under(LINUX_2_6_9, openat), libc::ENOSYS);
        assert_eq!(errno_under(LINUX_2_6_16, openat), 0);
    }

    #[test]
    fn private_and_bitset_futexes_get_enosys_plain_ones_work() {
        static WORD: i32 = 1;
        let private_wake =
            || unsafe { libc::syscall(libc::SYS_futex, &WORD, libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1) };
        let bitset_wait = || unsafe { libc::syscall(libc::SYS_futex, &WORD, libc::FUTEX_WAIT_BITSET, 0, 0, 0, !0u32) };
        let plain_wake = || unsafe { libc::syscall(libc::SYS_futex, &WORD, libc::FUTEX_WAKE, 1) };
        assert_eq!(errno_under(LINUX_2_6_9, private_wake), libc::ENOSYS);
        assert_eq!(errno_under(LINUX_2_6_16, bitset_wait), libc::ENOSYS);
        assert_eq!(errno_under(LINUX_2_6_9, plain_wake), 0);
    }

    #[test]
    fn new_flags_and_clocks_get_einval() {
        let dupfd = || unsafe { libc::syscall(libc::SYS_fcntl, 0, libc::F_DUPFD_CLOEXEC, 10) };
        let sock =
            || unsafe { libc::syscall(libc::SYS_socket, libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        let boottime = || unsafe {
            let mut ts: libc::timespec = std::mem::zeroed();
            libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_BOOTTIME, &mut ts)
        };
        let monotonic = || unsafe {
            let mut ts: libc::timespec = std::mem::zeroed();
            libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts)
        };
        assert_eq!(errno_under(LINUX_2_6_9, dupfd), libc::EINVAL);
        assert_eq!(errno_under(LINUX_2_6_9, sock), libc::EINVAL);
        assert_eq!(errno_under(LINUX_2_6_9, boottime), libc::EINVAL);
        assert_eq!(errno_under(LINUX_2_6_9, monotonic), 0);
    }

    /// The quick plan's six records as a healthy run writes them, with `edit`
    /// applied; returned as JSON lines.
    fn quick_run(edit: impl Fn(&mut Vec<Record>)) -> String {
        let mut records: Vec<Record> = ["manyfiles", "seqwrite", "seqread", "sort", "instances", "idle"]
            .iter()
            .enumerate()
            .map(|(seq, name)| {
                let mut r = Record::blank("old", seq as u32);
                r.workload.name = name.to_string();
                r.kernel.release = Some("2.6.9".into());
                r.storage.fs = Some("ext3".into());
                r.times = bootmark::record::Times { wall_s: 1.0, user_s: 0.01, sys_s: 0.02, ..Default::default() };
                r.responsiveness = Some(bootmark::record::Responsiveness {
                    p99_ms: 3.0,
                    baseline_samples: 20,
                    probe_cpu_s: 0.002,
                    ..Default::default()
                });
                r.timeline.t_s = vec![0.0];
                r.timeline.writer_state = vec![Some("D".into())];
                r.sources.insert("wchan".into(), "used: /proc/PID/wchan of the worker every 100 ms".into());
                let none =
                    "not used: the kernel predates 2.6.27 (no pipe2): it has no trace events; tracefs not looked for";
                r.sources.insert("tracepoints".into(), none.into());
                let no_psi = "not used: /proc/pressure/io: No such file or directory (os error 2) (4.20+ with CONFIG_PSI, not psi=0)";
                r.sources.insert("psi".into(), no_psi.into());
                r
            })
            .collect();
        edit(&mut records);
        records.iter().map(|r| format!("{}\n", serde_json::to_string(r).unwrap())).collect()
    }

    /// Each check fails for the reason it names, and a healthy run passes.
    #[test]
    fn record_checks_catch_a_spinning_runner_and_missing_records() {
        let healthy = quick_run(|_| {});
        let (cpu, wall) = (6.0 * 0.03 + 6.0 * 0.002 + 0.1, 8.0);
        assert!(check_records(&healthy, cpu, wall, true).is_ok(), "{:?}", check_records(&healthy, cpu, wall, true));
        assert!(check_records(&healthy, cpu + 0.5 * wall, wall, true).unwrap_err().contains("the runner used"));
        assert!(check_records("", 0.0, 1.0, true).unwrap_err().contains("six records"));
        type Edit = fn(&mut Vec<Record>);
        let cases: [(&str, Edit); 13] = [
            ("no writer state sampled", |r| r[1].timeline.writer_state = vec![None]),
            ("PSI read on a kernel without it", |r| {
                r[0].sources.insert("psi".into(), "used: /proc/pressure/io and memory every 100 ms".into());
            }),
            ("PSI read on a kernel without it", |r| {
                r[3].timeline.series.insert("psi_io_some_us".into(), vec![Some(7)]);
            }),
            ("tracepoints read or not said", |r| r[1].kernel_events = Some(Default::default())),
            ("tracepoints read or not said", |r| {
                r[2].sources.insert("tracepoints".into(), "used: see kernel_events".into());
            }),
            ("six records", |r| {
                r.pop();
            }),
            ("status", |r| r[1].status = Status::Error),
            ("storage.fs is missing", |r| r[2].storage.fs = None),
            ("the probe did not run", |r| r[4].responsiveness = None),
            ("no baseline samples", |r| r[4].responsiveness.as_mut().unwrap().baseline_samples = 0),
            ("the idle workload used", |r| r[5].times.user_s = 0.9),
            ("no CPU time", |r| {
                r[3].times.user_s = 0.0;
                r[3].times.sys_s = 0.0;
            }),
            ("the probe used", |r| r[0].responsiveness.as_mut().unwrap().probe_cpu_s = 2.0),
        ];
        for (reason, edit) in cases {
            let err = check_records(&quick_run(edit), cpu + 2.0, wall, true).unwrap_err();
            assert!(err.contains(reason), "expected '{reason}', got: {err}");
        }
    }
}
