//! Installing Debian packages with apt-get, for the host tools xtask needs.
//!
//! One case needs more than `apt-get install`: a package installed at a
//! version no configured apt source offers any more (from a suite since
//! removed from the sources, such as bookworm-backports) can break its
//! siblings. Machines of this project's CI ship qemu-utils 10 from
//! backports, whose `Breaks: qemu-system-common (<< 8.0)` makes bookworm's
//! qemu-system-x86 uninstallable. Such a stranded sibling (same source
//! package as something we install) is put back to its version from the
//! configured sources, and the install says so.

use crate::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `apt-get update`, then install `pkgs`, bringing stranded siblings back
/// to the configured sources' versions.
pub fn install(pkgs: &[&str]) -> Result<()> {
    // A stale mirror index is not fatal: the install says what it could not find.
    if !Command::new("apt-get").args(["update", "-qq"]).status().is_ok_and(|s| s.success()) {
        eprintln!("xtask: apt-get update reported errors; going on with the lists there are");
    }
    let pins = stranded_siblings(pkgs);
    for p in &pins {
        eprintln!(
            "xtask: {} {} is installed from a suite no apt source lists and breaks its siblings; \
             going back to {} from the configured sources",
            p.package, p.installed, p.available
        );
    }
    let ok = Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(if pins.is_empty() { &[][..] } else { &["--allow-downgrades"][..] })
        .args(pkgs)
        .args(pins.iter().map(|p| format!("{}={}", p.package, p.available)))
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success());
    if ok { Ok(()) } else { Err(format!("apt-get install {} did not succeed", pkgs.join(" "))) }
}

/// An installed package whose version no configured source offers, and
/// the newest version the sources do offer.
#[derive(Debug, PartialEq)]
struct Pin {
    package: String,
    installed: String,
    available: String,
}

/// Installed packages built from the same source package as one of `pkgs`
/// (but not in `pkgs`) whose installed version no apt source offers.
fn stranded_siblings(pkgs: &[&str]) -> Vec<Pin> {
    let (Ok(show), Ok(installed)) = (
        crate::image::tools::run(Command::new("apt-cache").args(["show", "--no-all-versions"]).args(pkgs)),
        crate::image::tools::run(Command::new("dpkg-query").args([
            "-W",
            "-f",
            "${Package} ${source:Package} ${Version} ${db:Status-Abbrev}\n",
        ])),
    ) else {
        return Vec::new();
    };
    let sources = source_packages(&show);
    let wanted: BTreeSet<&str> = pkgs.iter().map(|p| p.split(':').next().unwrap_or(p)).collect();
    installed_of_sources(&installed, &sources)
        .into_iter()
        .filter(|(name, _)| !wanted.contains(name.as_str()))
        .filter_map(|(package, installed)| {
            let madison = crate::image::tools::run(Command::new("apt-cache").args(["madison", &package])).ok()?;
            let offered = offered_versions(&madison);
            let available = offered.first()?.clone();
            (!offered.contains(&installed)).then_some(Pin { package, installed, available })
        })
        .collect()
}

/// The source package of each stanza of `apt-cache show`: its `Source:`
/// field without a version, or the package's own name.
fn source_packages(show: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for stanza in show.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
        };
        if let Some(src) = field("Source:").or_else(|| field("Package:")) {
            out.insert(src);
        }
    }
    out
}

/// Installed (`ii`) packages of the given source packages, with their
/// versions, from `dpkg-query -W -f '${Package} ${source:Package} ${Version} ${db:Status-Abbrev}\n'`.
fn installed_of_sources(dpkg: &str, sources: &BTreeSet<String>) -> BTreeMap<String, String> {
    dpkg.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (pkg, src, ver, status) = (f.next()?, f.next()?, f.next()?, f.next()?);
            (status == "ii" && sources.contains(src)).then(|| (pkg.to_string(), ver.to_string()))
        })
        .collect()
}

/// Versions from `apt-cache madison` (`pkg | version | source`), newest
/// first as apt lists them; the dpkg status file is not a source.
fn offered_versions(madison: &str) -> Vec<String> {
    madison.lines().filter_map(|l| l.split('|').nth(1)).map(|v| v.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real output of this project's CI machine (bookworm + qemu-utils from backports).
    const SHOW: &str = "Package: qemu-system-x86\nSource: qemu (1:7.2+dfsg-7+deb12u18)\nArchitecture: amd64\n\n\
                        Package: musl-dev\nSource: musl\nArchitecture: i386\n\nPackage: cpio\nArchitecture: amd64\n";
    const DPKG: &str = "qemu-utils qemu 1:10.0.2+ds-2+deb13u1~bpo12+1 ii \n\
                        cpio cpio 2.13+dfsg-7.1 rc \nlibc6 glibc 2.36-9+deb12u13 ii \n";
    const MADISON: &str = " qemu-utils | 1:7.2+dfsg-7+deb12u18+b3 | http://deb.debian.org/debian bookworm/main amd64 Packages\n \
                           qemu-utils | 1:7.2+dfsg-7+deb12u15 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n";

    #[test]
    fn source_packages_read_source_fields_and_fall_back_to_the_name() {
        let s = source_packages(SHOW);
        assert_eq!(s.into_iter().collect::<Vec<_>>(), ["cpio", "musl", "qemu"]);
    }

    #[test]
    fn installed_siblings_are_those_of_the_same_source_and_installed() {
        let sources = source_packages(SHOW);
        let got = installed_of_sources(DPKG, &sources);
        // cpio is only config-files ("rc"), glibc is not a source we install.
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [("qemu-utils".into(), "1:10.0.2+ds-2+deb13u1~bpo12+1".into())]
        );
    }

    #[test]
    fn offered_versions_come_newest_first_and_exclude_the_installed_backport() {
        let v = offered_versions(MADISON);
        assert_eq!(v, ["1:7.2+dfsg-7+deb12u18+b3", "1:7.2+dfsg-7+deb12u15"]);
        assert!(!v.contains(&"1:10.0.2+ds-2+deb13u1~bpo12+1".to_string()));
    }
}
