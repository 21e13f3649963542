//! A git range as a bisect's ladder: the commits from the good end to the
//! bad one along the bad end's first-parent line (`range`), each built
//! into an image of its own by the user's build command when a step first
//! boots it (`Builds`), and booted through the lab like a ladder's entry
//! (`OnGit`). The builds share one checkout in the bisect's directory, a
//! `git clone --shared` of the user's tree that only ever moves from
//! commit to commit: git rewrites only the files that differ, so a build
//! system that goes by modification times (Kbuild) rebuilds only what the
//! step changed. The user's own tree and checkout are never touched.

use super::metric::Metric;
use super::on_lab::OnLab;
use super::session::{Lab, Measured};
use crate::workstation::lab::ImageEntries;
use crate::workstation::lab::file;
use crate::workstation::lab::session::Servers;
use crate::workstation::output::say;
use crate::workstation::template::{self, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The commits of a range, the good end first, the bad end last.
pub struct Range {
    /// Full commit ids.
    pub commits: Vec<String>,
    /// `abc1234 subject` of each, for the tables.
    pub titles: Vec<String>,
}

/// `git -C tree ARGS`: its stdout, or an error quoting git.
fn git(tree: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e} (install git)"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The range from `good` to `bad` in `tree`: every commit on `bad`'s
/// first-parent line after `good`, which must be on that line. A merge is
/// one candidate (the branch it brings in, whole): bisect into it as a
/// range of its own when it is the answer.
pub fn range(tree: &Path, good: &str, bad: &str) -> Result<Range, String> {
    git(tree, &["rev-parse", "--git-dir"])
        .map_err(|_| format!("--tree {}: not a git repository (give your kernel's git tree)", tree.display()))?;
    let commit = |flag: &str, rev: &str| {
        git(tree, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
            .map_err(|_| format!("{flag} {rev}: no such commit in {}", tree.display()))
    };
    let (good_id, bad_id) = (commit("--good", good)?, commit("--bad", bad)?);
    if good_id == bad_id {
        return Err(format!("--good {good} and --bad {bad} are the same commit: the range holds no commits"));
    }
    if git(tree, &["merge-base", "--is-ancestor", &good_id, &bad_id]).is_err() {
        return Err(format!(
            "--good {good} is not an ancestor of --bad {bad}: the range {good}..{bad} is not a line of history \
             (swapped? the good end is the older commit)"
        ));
    }
    let log = git(
        tree,
        &[
            "log",
            "--reverse",
            "--first-parent",
            "--ancestry-path",
            "--format=%H %h %s",
            &format!("{good_id}..{bad_id}"),
        ],
    )?;
    let mut commits = vec![good_id.clone()];
    let mut titles = vec![title(tree, &good_id)?];
    for line in log.lines() {
        let (id, rest) = line.split_once(' ').unwrap_or((line, ""));
        commits.push(id.to_string());
        titles.push(rest.to_string());
    }
    if commits.last() != Some(&bad_id) || git(tree, &["rev-parse", &format!("{}^", commits[1])]).ok() != Some(good_id) {
        return Err(format!(
            "--good {good} is not on --bad {bad}'s first-parent line (it came in through a merge): give the merge's \
             first parent as --good, or bisect the merged branch as a range of its own"
        ));
    }
    Ok(Range { commits, titles })
}

fn title(tree: &Path, id: &str) -> Result<String, String> {
    git(tree, &["log", "-1", "--format=%h %s", id])
}

/// A candidate's image, as a build left it.
pub enum Built {
    Image(PathBuf),
    /// Its build failed (the candidate is a skip): why.
    Failed(String),
    /// Ctrl-C stopped its build: nothing is kept, the next run builds it.
    Interrupted,
}

/// The user's build command for one commit: `{tree}`, `{image}` (paths,
/// quoted) and `{commit}` (hex) filled in one pass (template.rs).
fn fill_build(command: &str, tree: &Path, image: &Path, commit: &str) -> Result<template::Filled, String> {
    if commit.is_empty() || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("commit {commit:?} is not a commit id: not put into `sh -c`"));
    }
    let values = [("tree", Value::Path(tree)), ("image", Value::Path(image)), ("commit", Value::Plain(commit))];
    template::fill(command, &values, "--build")
}

/// The bisect checks commits out (`--force`) only in its own clone,
/// `DIR/tree`: refused when that is, or holds, anything else — the user's
/// `--tree` itself, another repository (one without the user's objects as
/// its alternates, which `git clone --shared` made), files — and when
/// `DIR` is inside the user's tree (its images and state would land there).
fn check_own_checkout(tree: &Path, dir: &Path) -> Result<(), String> {
    let checkout = dir.join("tree");
    let next = "give the bisect a --dir of its own (it makes DIR/tree, its clone)";
    if crate::fsutil::resolved(dir).starts_with(tree) {
        return Err(format!(
            "--dir {} is inside --tree {}: the bisect would write there; {next}",
            dir.display(),
            tree.display()
        ));
    }
    if !checkout.exists() {
        return Ok(());
    }
    if std::fs::canonicalize(&checkout).is_ok_and(|c| c == tree) {
        return Err(format!(
            "{} is your --tree {}: the bisect checks commits out there with --force, which would lose your changes; {next}",
            checkout.display(),
            tree.display()
        ));
    }
    let alternates = std::fs::read_to_string(checkout.join(".git/objects/info/alternates")).unwrap_or_default();
    let ours = alternates.lines().any(|l| Path::new(l.trim()) == tree.join(".git/objects"));
    let empty = std::fs::read_dir(&checkout).is_ok_and(|mut d| d.next().is_none());
    if !ours && !empty {
        return Err(format!(
            "{} is not the bisect's own clone of {} (it would be checked out there with --force); {next}, or remove it",
            checkout.display(),
            tree.display()
        ));
    }
    Ok(())
}

/// The candidates' images, built one at a time in the bisect's checkout
/// by the user's command (`{tree}` the checkout at the candidate's commit,
/// `{image}` the directory to build its image into, `{commit}` its id);
/// each kept in `DIR/images/COMMIT`, a failed build's reason in
/// `DIR/images/COMMIT.failed`, so neither is built twice (a resumed bisect too).
pub struct Builds {
    tree: PathBuf,
    command: String,
    dir: PathBuf,
    lock: Mutex<()>,
}

impl Builds {
    pub fn new(tree: &Path, command: &str, dir: &Path) -> Result<Builds, String> {
        if !command.contains("{tree}") || !command.contains("{image}") {
            return Err(format!(
                "--build {command:?} needs {{tree}} (the checkout of the commit to build) and {{image}} (where to \
                 put its image), e.g. `cargo xtask image --kernel-src {{tree}} --kernel-src-config kernel-configs/6.1 --out {{image}}`"
            ));
        }
        // Refused now, before anything is cloned or built, if a path cannot go where it stands.
        fill_build(command, Path::new("/tree"), Path::new("/image"), "0123abcd")?;
        let tree = std::fs::canonicalize(tree).map_err(|e| format!("--tree {}: {e}", tree.display()))?;
        check_own_checkout(&tree, dir)?;
        Ok(Builds { tree, command: command.to_string(), dir: dir.to_path_buf(), lock: Mutex::new(()) })
    }

    fn checkout(&self) -> PathBuf {
        self.dir.join("tree")
    }

    /// `commit`'s image directory, built now if it was not; Err when the
    /// checkout itself failed (the bisect stops).
    pub fn image_of(&self, commit: &str, title: &str) -> Result<Built, String> {
        let _one_at_a_time = self.lock.lock().map_err(|_| "a build's thread panicked".to_string())?;
        let images = self.dir.join("images");
        let image = images.join(commit);
        let failed = images.join(format!("{commit}.failed"));
        if image.join("manifest.json").is_file() && image.join(".built").is_file() {
            return Ok(Built::Image(image));
        }
        if let Ok(why) = std::fs::read_to_string(&failed) {
            return Ok(Built::Failed(why));
        }
        self.check_out(commit)?;
        if image.exists() {
            // A build cut short (Ctrl-C, a crash): our own directory, built again.
            std::fs::remove_dir_all(&image).map_err(|e| format!("cannot remove {}: {e}", image.display()))?;
        }
        std::fs::create_dir_all(&images).map_err(|e| format!("cannot create {}: {e}", images.display()))?;
        let log = images.join(format!("{commit}.build.log"));
        let command = fill_build(&self.command, &self.checkout(), &image, commit)?;
        say(&format!("bisect: building {title} (its output: {})", log.display()));
        let started = std::time::Instant::now();
        let mut out = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        std::io::Write::write_all(&mut out, format!("$ {}\n", command.shown()).as_bytes())
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
        let build = Command::new("sh")
            .args(["-c", &command.text])
            .envs(command.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run sh: {e}"))?;
        let status = finished_or_stopped(build)?;
        let seconds = started.elapsed().as_secs();
        let Some(status) = status else {
            say(&format!("bisect: {title}: its build stopped by Ctrl-C; the next run builds it again"));
            let _ = std::fs::remove_dir_all(&image);
            return Ok(Built::Interrupted);
        };
        let why = if !status.success() {
            Some(format!("its build failed ({status}) after {seconds} s: {}", tail(&log)))
        } else if !image.join("manifest.json").is_file() {
            Some(format!("its build ended well after {seconds} s but wrote no {}/manifest.json", image.display()))
        } else {
            None
        };
        if let Some(why) = why {
            say(&format!("bisect: {title}: {why}; a skip"));
            crate::workstation::output::replace_synced(&images, &format!("{commit}.failed"), why.as_bytes())?;
            return Ok(Built::Failed(why));
        }
        say(&format!("bisect: {title} built in {seconds} s"));
        crate::workstation::output::replace_synced(&image, ".built", b"")?;
        Ok(Built::Image(image))
    }

    /// The bisect's checkout at `commit`, made on first use.
    fn check_out(&self, commit: &str) -> Result<(), String> {
        let checkout = self.checkout();
        if !checkout.join(".git").exists() {
            let out = Command::new("git")
                .args(["clone", "--quiet", "--shared", "--no-checkout"])
                .arg(&self.tree)
                .arg(&checkout)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run git: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "cannot clone {} into {}: {}",
                    self.tree.display(),
                    checkout.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        // A shared clone reads the user's objects: every commit of the range is there.
        git(&checkout, &["checkout", "--quiet", "--force", "--detach", commit])
            .map(|_| ())
            .map_err(|e| format!("cannot check out {commit} in {}: {e}", checkout.display()))
    }
}

/// Wait for a build (in a process group of its own); on Ctrl-C end the
/// whole group (make's jobs with it) and say None: the build is no failure.
fn finished_or_stopped(mut build: std::process::Child) -> Result<Option<std::process::ExitStatus>, String> {
    loop {
        if let Some(status) = build.try_wait().map_err(|e| format!("waiting for the build: {e}"))? {
            return Ok(Some(status));
        }
        if crate::interrupt::interrupted() {
            let group = build.id() as i32;
            // SAFETY: signals the process group we started for this build.
            unsafe { libc::kill(-group, libc::SIGTERM) };
            let _ = build.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The last lines of a build's log, for the reason it failed.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
    let last = &lines[lines.len().saturating_sub(3)..];
    if last.is_empty() { format!("no output (see {})", log.display()) } else { last.join(" / ") }
}

/// A git range's boots: each commit's image built (`Builds`), then booted
/// on the lab's server as the lab boots an entry, the servers prepared
/// for that image alone.
pub struct OnGit<'a> {
    pub lab: &'a file::Lab,
    /// The lab's servers the bisect boots (bisect server `i` is `chosen[i]`).
    pub chosen: Vec<usize>,
    pub builds: Builds,
    /// The entry of each commit's image booted (its first, k0, by default).
    pub entry: String,
    pub metric: Metric,
    pub dir: PathBuf,
    pub titles: Vec<(String, String)>,
    /// Whether a step's kernel release that does not name its commit was said.
    pub release_said: std::sync::atomic::AtomicBool,
}

impl OnGit<'_> {
    /// A step's records name their kernel by its release: one that does
    /// not carry the commit (no `-gSHA`: the build's config lacks
    /// CONFIG_LOCALVERSION_AUTO) is said once, with how to have it.
    fn say_if_release_hides_the_commit(&self, commit: &str, release: Option<&str>) {
        let short = &commit[..commit.len().min(7)];
        let Some(release) = release.filter(|r| !r.contains(&format!("-g{short}"))) else { return };
        if !self.release_said.swap(true, std::sync::atomic::Ordering::Relaxed) {
            crate::workstation::output::say(&format!(
                "bisect: note: commit {short}'s kernel is {release}, which does not name the commit: its records will not say \
                 which commit made them (the bisect's state does). Set CONFIG_LOCALVERSION_AUTO=y in the config your build \
                 uses, as kernel-configs/6.1 does"
            ));
        }
    }
}

impl Lab for OnGit<'_> {
    fn boot(&self, server: usize, (commit, _): (&str, Option<&str>), id: &str) -> Result<Option<Measured>, String> {
        let title = self.titles.iter().find(|(c, _)| c == commit).map_or(commit, |(_, t)| t.as_str());
        let no_value =
            |why: String| Measured { run_id: None, value: None, why: Some(why), hardware: None, hung: false };
        let image_dir = match self.builds.image_of(commit, title)? {
            Built::Image(dir) => dir,
            Built::Failed(why) => return Ok(Some(no_value(why))),
            Built::Interrupted => return Ok(None),
        };
        let lab = self.lab.with_image(&image_dir);
        let image = ImageEntries::read(&lab.manifest)?;
        let release = image.entries.iter().find(|e| e.label == self.entry).and_then(|e| e.kernel_release.as_deref());
        self.say_if_release_hides_the_commit(commit, release);
        if !image.entries.iter().any(|e| e.label == self.entry) {
            let labels: Vec<&str> = image.entries.iter().map(|e| e.label.as_str()).collect();
            return Ok(Some(no_value(format!(
                "its image {} has no entry {} (its entries: {})",
                image_dir.display(),
                self.entry,
                labels.join(", ")
            ))));
        }
        let servers = Servers::prepare_these(&lab, &image, &self.dir, &[self.chosen[server]])?;
        let on = OnLab { servers, image: &image, metric: self.metric.clone(), dir: self.dir.clone(), kind: "bisect" };
        let booted = on.boot(0, (&self.entry, None), id);
        on.servers.finish()?;
        booted
    }
}

/// A lab a git bisect can boot: each server's boot must take the image a
/// step gives it — a `[server.qemu]` command with `{image}` — and servers
/// that boot from a shared place (a TFTP root, the web server's ISO) boot
/// one commit at a time: one server.
pub fn check_lab(lab: &file::Lab, chosen: &[usize]) -> Result<(), String> {
    for &i in chosen {
        let s = &lab.servers[i];
        match (&s.bmc, &s.boot) {
            (file::Bmc::Qemu { command }, _) if !command.contains("{image}") => {
                return Err(format!(
                    "server {:?}: its qemu.command has no {{image}}: every commit would boot the lab's image; \
                     give it the step's image (`cargo xtask qemu --image {{image}} --entry-label {{entry}}`)",
                    s.name
                ));
            }
            (_, file::Boot::Pxe(_) | file::Boot::VirtualMedia(_)) if chosen.len() > 1 => {
                return Err(format!(
                    "server {:?} boots by PXE or virtual media, which serve one image at a time: a git bisect \
                     boots such a server alone (--server {})",
                    s.name, s.name
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
