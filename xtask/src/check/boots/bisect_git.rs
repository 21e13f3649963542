//! `bootmark bisect git` over a real kernel tree, as a user runs it: a
//! repository made from Debian's `linux-source-6.1` and four commits on
//! top, one of them a planted regression; every commit a step boots built
//! by `cargo xtask image --kernel-src` in the bisect's own checkout (the
//! first build whole, the next ones incremental in the same out-of-tree
//! build directory), and booted on a `[server.qemu]` dl140 (the seed's
//! server) through `{image}`. The metric is the probe's read wait during
//! the bisect-ladder's big write.
//!
//! The planted regression: libata gives every disk LBA48's request size
//! (max_hw_sectors 65534 sectors), so the block layer's default cap of
//! 1280 KiB applies where 6.1 had this disk at 128 KiB — the requests
//! 6.12 sends it, which the settings bisect found behind 6.12's longer
//! read waits. It is ours, not an upstream commit: the history is made so
//! the answer is known.
//!
//! Not in `cargo xtask test`: with the first build (5–8 minutes here) it
//! takes about 15 minutes. `cargo xtask check bisect-git`; its figures are
//! in docs/measurements.md.

use super::kernel_from_source::DEBIAN_SOURCE;
use super::lab_ipmi::tail;
use crate::host::fs;
use crate::host::process::{Streams, cmd, run, shell_in, spawn};
use crate::host::project::{Result, project_root};
use std::io::BufRead;
use std::path::Path;
use std::time::Instant;

/// The history: each commit's subject and the edit that makes it
/// (a file, the text to find in it, what to put after that text; nothing
/// to find: at the file's end).
const COMMITS: [(&str, &str, &str, &str); 4] = [
    (
        "Documentation: a note (no build change)",
        "Documentation/admin-guide/README.rst",
        "",
        "\n.. bootmark: a note of the bisect-git check.\n",
    ),
    (
        "mm: a comment in page-writeback (one file rebuilt)",
        "mm/page-writeback.c",
        "int vm_dirty_ratio = 20;",
        " /* bootmark: the default dirty ratio */",
    ),
    (
        "ata: give every disk LBA48's request size (the planted regression)",
        "drivers/ata/libata-scsi.c",
        "\tblk_queue_max_hw_sectors(q, dev->max_sectors);",
        "\n\tblk_queue_max_hw_sectors(q, ATA_MAX_SECTORS_LBA48 - 1);",
    ),
    (
        "Documentation: another note (the bad end)",
        "Documentation/admin-guide/README.rst",
        "",
        "\n.. bootmark: another.\n",
    ),
];

/// The commit the bisect must find, by index (0 is Debian's tree).
const FIRST_BAD: usize = 3;

pub fn test(base: &Path) -> Result<()> {
    let started = Instant::now();
    let dir = base.join("bisect-git");
    fs::create_dir_all(&dir)?;
    let repo = dir.join("linux");
    let commits = history(&repo)?;
    let made = started.elapsed().as_secs_f64();
    let state = dir.join("lab.state");
    let _ = std::fs::remove_dir_all(&state);
    let plan = dir.join("bisect-read.json");
    fs::write(&plan, super::bisect_ladder::PLAN)?;
    let xtask = std::env::current_exe().map_err(|e| format!("bisect-git: cannot find xtask's own binary: {e}"))?;
    let root = project_root();
    let install = if crate::host::deps::can_install() { " --install-deps" } else { "" };
    let build = format!(
        "{xtask} image --kernel-src {{tree}} --kernel-src-config {config} --plan {plan} --target LABEL=SCRATCH \
         --out {{image}}{install}",
        xtask = xtask.display(),
        config = root.join("kernel-configs/6.1").display(),
        plan = plan.display()
    );
    fs::write(dir.join("serial-a.log"), "")?;
    let lab = format!(
        "image = \"image\"\nstate = \"lab.state\"\n[[server]]\nname = \"a\"\nconsole = \"file:serial-a.log\"\n\
         boot_s = 60\nmax_step_s = 400\n[server.qemu]\ncommand = \"{xtask} qemu --image {{image}} --entry-label {{entry}} \
         --disk scratch-a.img --fresh-disk ext3 --log serial-a.log --machine dl140 --timeout 400\"\n",
        xtask = xtask.display()
    );
    let lab_file = dir.join("lab.toml");
    fs::write(&lab_file, lab)?;
    let bootmark = root.join("target/debug/bootmark");
    let (good, bad) = (&commits[0], &commits[commits.len() - 1]);
    let sh = shell_in(&root)?;
    let metric = "seqwrite.read_p50_ms";
    let bisect = cmd!(
        sh,
        "{bootmark} bisect git {lab_file} --metric {metric} --tree {repo} --good {good} --bad {bad} --build {build}"
    );
    let streams = Streams { stdin: None, stdout: Some(std::process::Stdio::piped()), stderr: None };
    let mut child = spawn(bisect, streams)?;
    // Its own lines as they come (a build takes minutes), the per-boot console aside.
    let mut said = Vec::new();
    for line in std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?).lines() {
        let line = line.map_err(|e| format!("bisect-git: reading bootmark's output: {e}"))?;
        if !line.starts_with('[') {
            println!("{line}");
            said.push(line);
        }
    }
    let status = child.wait().map_err(|e| format!("bisect-git: {e}"))?;
    let out = said.join("\n");
    // git abbreviates ids as long as the repository needs: match the line's id as a prefix.
    let names = |said: &str, i: usize| {
        out.lines()
            .filter_map(|l| l.strip_prefix(said))
            .any(|rest| rest.split(' ').next().is_some_and(|id| id.len() >= 7 && commits[i].starts_with(id)))
    };
    if status.code() != Some(0) || !names("first bad: ", FIRST_BAD) || !names("last good: ", FIRST_BAD - 1) {
        return Err(format!(
            "bisect-git: `bootmark bisect git` exited {:?} without naming {} as the first bad:\n{}",
            status.code(),
            &commits[FIRST_BAD][..9],
            tail(&out)
        ));
    }
    // The log replays to the same commit in the tree it came from.
    let sh = shell_in(&repo)?;
    let log = state.join("bisect/git-bisect.log");
    run(cmd!(sh, "git bisect start"))?;
    let replayed = run(cmd!(sh, "git bisect replay {log}"));
    run(cmd!(sh, "git bisect reset"))?;
    let replayed = replayed?;
    if !replayed.contains(&format!("{} is the first bad commit", commits[FIRST_BAD])) {
        return Err(format!(
            "bisect-git: `git bisect replay` of {} did not end at {}:\n{replayed}",
            log.display(),
            commits[FIRST_BAD]
        ));
    }
    let builds: Vec<&str> = said.iter().map(String::as_str).filter(|l| l.contains(" built in ")).collect();
    let table: Vec<&str> =
        said.iter().map(String::as_str).filter(|l| l.starts_with('|') || l.starts_with("the ends")).collect();
    println!(
        "e2e: bisect git: {} commits on Debian's 6.1, the planted regression found; history made in {made:.0} s, \
         in all {:.0} s\n{}\n{}",
        commits.len(),
        started.elapsed().as_secs_f64(),
        builds.join("\n"),
        table.join("\n")
    );
    Ok(())
}

/// The repository: Debian's tree as its first commit, then `COMMITS`;
/// made once and kept (it takes minutes), made again if it is not that.
fn history(repo: &Path) -> Result<Vec<String>> {
    let sh = shell_in(repo.parent().ok_or("no parent")?)?;
    if repo.join(".git").is_dir() {
        let sh = shell_in(repo)?;
        // A repository cut short (no commits yet) is made again.
        let subjects = run(cmd!(sh, "git log --reverse --format=%s")).unwrap_or_default();
        let wanted: Vec<&str> = COMMITS.iter().map(|c| c.0).collect();
        if subjects.lines().skip(1).collect::<Vec<_>>() == wanted {
            return Ok(run(cmd!(sh, "git rev-list --reverse HEAD"))?.lines().map(String::from).collect());
        }
    }
    let _ = std::fs::remove_dir_all(repo);
    fs::create_dir_all(repo)?;
    println!("e2e: bisect git: making a repository of {DEBIAN_SOURCE} in {}", repo.display());
    run(cmd!(sh, "tar -xJf {DEBIAN_SOURCE} --strip-components=1 -C {repo}"))?;
    let sh = shell_in(repo)?;
    let git_as_check = ["-c", "user.name=bootmark check", "-c", "user.email=check@bootmark.invalid"];
    run(cmd!(sh, "git init --quiet -b master"))?;
    // Debian's tree ignores itself (its .gitignore holds `/*`): every file, forced.
    run(cmd!(sh, "git add --force --all ."))?;
    run(cmd!(sh, "git {git_as_check...} commit --quiet -m 'Linux 6.1 as Debian ships it (linux-source-6.1)'"))?;
    for (subject, file, find, add) in COMMITS {
        let path = repo.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let edited = if find.is_empty() {
            text + add
        } else if text.matches(find).count() == 1 {
            text.replacen(find, &format!("{find}{add}"), 1)
        } else {
            return Err(format!(
                "bisect-git: {file} does not hold {find:?} once: Debian's tree changed; pick another line"
            ));
        };
        fs::write(&path, edited)?;
        run(cmd!(sh, "git {git_as_check...} commit --quiet -a -m {subject}"))?;
    }
    Ok(run(cmd!(sh, "git rev-list --reverse HEAD"))?.lines().map(String::from).collect())
}
