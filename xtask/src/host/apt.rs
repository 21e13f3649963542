//! Installing Debian packages with apt-get, for the host tools xtask needs.
//!
//! One case needs more than `apt-get install`: a package installed at a
//! version no configured apt source offers any more (from a suite since
//! removed from the sources, such as bookworm-backports) can break what we
//! install. Machines of this project's CI ship qemu-utils 10 from
//! backports, whose `Breaks: qemu-system-common (< 1:8.0+dfsg-5~)` makes
//! bookworm's qemu-system-x86 uninstallable. When apt's resolver fails, a
//! package it names that is stranded so is put back to its version from
//! the configured sources, and the install says so. Stranded packages apt
//! does not complain about (a newer linux-libc-dev than the mirror has)
//! are left alone.

use crate::host::process::{cmd, run, shell};
use crate::host::project::Result;
use std::collections::BTreeSet;

/// One apt download or list update at a time in this process: two lanes
/// of boots (`check::boots::run_group`) building images at once would race
/// on one cache — apt's own lock, and a .deb half written while the other
/// lane looks for it.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    APT.lock().unwrap_or_else(|e| e.into_inner())
}

/// `apt-get update`, then install `pkgs`, bringing a stranded package that
/// blocks them back to the configured sources' version.
pub fn install(pkgs: &[&str]) -> Result<()> {
    update();
    let pins = blocking_strays(pkgs);
    for p in &pins {
        eprintln!(
            "xtask: {} {} (from a suite no apt source lists) blocks the install; \
             going back to {} from the configured sources",
            p.package, p.installed, p.available
        );
    }
    let downgrades = if pins.is_empty() { &[][..] } else { &["--allow-downgrades"][..] };
    let pinned = pins.iter().map(|p| format!("{}={}", p.package, p.available));
    let sh = shell()?;
    crate::host::process::run_shown(
        cmd!(sh, "apt-get install -y -qq --no-install-recommends {downgrades...} {pkgs...}")
            .args(pinned)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// `apt-get update`. A stale mirror index is not fatal: what is then
/// missing is named by the install that follows.
pub fn update() {
    eprintln!("xtask: apt-get update");
    let updated = shell().and_then(|sh| crate::host::process::run_shown(cmd!(sh, "apt-get update -qq")));
    if updated.is_err() {
        eprintln!("xtask: apt-get update reported errors; going on with the lists there are");
    }
}

/// An installed package whose version no configured source offers, and
/// the newest version the sources do offer.
#[derive(Debug, PartialEq)]
struct Pin {
    package: String,
    installed: String,
    available: String,
}

/// When a dry run of the install fails, the stranded installed packages
/// among those apt's complaint names.
fn blocking_strays(pkgs: &[&str]) -> Vec<Pin> {
    let Ok(sh) = shell() else { return Vec::new() };
    let Ok(dry) = crate::host::process::output(cmd!(sh, "apt-get install -s --no-install-recommends {pkgs...}")) else {
        return Vec::new();
    };
    if dry.status.success() {
        return Vec::new();
    }
    let complaint = String::from_utf8_lossy(&dry.stdout).into_owned() + &String::from_utf8_lossy(&dry.stderr);
    named_in_unmet(&complaint).into_iter().filter_map(|package| stray(&package)).collect()
}

/// `package` if it is installed at a version no configured source offers.
fn stray(package: &str) -> Option<Pin> {
    let sh = shell().ok()?;
    let format = "${Version} ${db:Status-Abbrev}";
    let installed = run(cmd!(sh, "dpkg-query -W -f {format} {package}")).ok()?;
    let (installed, status) = installed.split_once(' ')?;
    if status.trim() != "ii" {
        return None;
    }
    let offered = offered_versions(&run(cmd!(sh, "apt-cache madison {package}")).ok()?);
    let available = offered.first()?.clone();
    (!offered.iter().any(|v| v == installed)).then(|| Pin {
        package: package.to_string(),
        installed: installed.to_string(),
        available,
    })
}

/// Every package named in apt's "unmet dependencies" lines
/// (` qemu-utils : Breaks: qemu-system-common (< 1:8.0+dfsg-5~) but … is to be installed`):
/// the one with the relation, and the one it relates to.
fn named_in_unmet(apt: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let relation = |text: &str| {
        ["Breaks:", "Conflicts:", "Depends:", "PreDepends:"]
            .iter()
            .find_map(|r| text.trim_start().strip_prefix(r))
            .and_then(|rest| rest.split_whitespace().next())
            .map(|n| n.split(':').next().unwrap_or(n).to_string())
    };
    for line in apt.lines().skip_while(|l| !l.contains("have unmet dependencies")).skip(1) {
        match line.split_once(" : ") {
            Some((who, what)) if !who.trim().contains(' ') && !who.trim().is_empty() => {
                names.insert(who.trim().split(':').next().unwrap_or("").to_string());
                names.extend(relation(what));
            }
            _ => names.extend(relation(line)),
        }
    }
    names
}

/// Versions from `apt-cache madison` (`pkg | version | source`), newest
/// first as apt lists them; the dpkg status file is not a source.
fn offered_versions(madison: &str) -> Vec<String> {
    madison.lines().filter_map(|l| l.split('|').nth(1)).map(|v| v.trim().to_string()).collect()
}

/// The exact package behind a Debian meta package (linux-image-amd64 → linux-image-6.1.0-57-amd64).
pub fn resolve_meta(meta: &str) -> Result<String> {
    let sh = shell()?;
    let out = crate::host::process::run(cmd!(sh, "apt-cache depends {meta}"))?;
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|d| d.starts_with("linux-image-"))
        .map(String::from)
        .ok_or_else(|| format!("apt-cache depends {meta} names no linux-image package: run apt-get update?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // What apt printed on this project's CI machine (bookworm + qemu-utils from backports).
    const UNMET: &str = "Reading package lists...\nBuilding dependency tree...\nReading state information...\n\
        Some packages could not be installed. This may mean that you have\nrequested an impossible situation.\n\
        The following information may help to resolve the situation:\n\n\
        The following packages have unmet dependencies:\n \
        qemu-utils : Breaks: qemu-system-common (< 1:8.0+dfsg-5~) but 1:7.2+dfsg-7+deb12u18+b3 is to be installed\n\
        E: Error, pkgProblemResolver::Resolve generated breaks, this may be caused by held packages.\n";
    const MADISON: &str = " qemu-utils | 1:7.2+dfsg-7+deb12u18+b3 | http://deb.debian.org/debian bookworm/main amd64 Packages\n \
        qemu-utils | 1:7.2+dfsg-7+deb12u15 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n";

    #[test]
    fn the_unmet_lines_name_both_sides_of_the_break() {
        let names: Vec<String> = named_in_unmet(UNMET).into_iter().collect();
        assert_eq!(names, ["qemu-system-common", "qemu-utils"]);
    }

    #[test]
    fn continuation_lines_and_arch_qualified_names_are_read() {
        let apt = "The following packages have unmet dependencies:\n \
                   musl-dev:i386 : Depends: musl:i386 (= 1.2.3-1) but 1.2.4-1 is to be installed\n\
                                   Conflicts: musl-tools (< 1.2.3)\n";
        let names: Vec<String> = named_in_unmet(apt).into_iter().collect();
        assert_eq!(names, ["musl", "musl-dev", "musl-tools"]);
    }

    #[test]
    fn nothing_is_named_when_apt_does_not_complain_of_dependencies() {
        assert!(named_in_unmet("E: Unable to locate package nosuch\n").is_empty());
    }

    #[test]
    fn offered_versions_come_newest_first_and_exclude_the_installed_backport() {
        let v = offered_versions(MADISON);
        assert_eq!(v, ["1:7.2+dfsg-7+deb12u18+b3", "1:7.2+dfsg-7+deb12u15"]);
        assert!(!v.contains(&"1:10.0.2+ds-2+deb13u1~bpo12+1".to_string()));
    }
}
