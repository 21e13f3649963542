//! The compiler, make and binutils a build would use, checked against what
//! the kernel line is known to build with — before make prints a wall of
//! errors (GNU make 3.82+ cannot parse kernels before 2.6.36; gcc 4 breaks
//! 2.6.9; current kernels refuse gcc older than 5.1).

use super::line::{Range, Toolchain, version_numbers};
use crate::host::process::{Cmd, cmd, shell};
use crate::host::project::Result;

/// The tools found, by version.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Found {
    pub gcc: String,
    pub make: String,
    pub binutils: String,
}

/// What the build runs: `cc` (default `{cross}gcc`), `make` and `{cross}ld`,
/// each through `runner` (a chroot) when given.
pub fn find(cc: &str, make: &str, cross: &str, runner: Option<&std::path::Path>) -> Result<Found> {
    let sh = shell()?;
    let version = |tool: &str, args: &[&str], parse: &dyn Fn(&str) -> Option<String>| {
        let (cmd, shown) = match runner {
            Some(root) => (cmd!(sh, "chroot {root} {tool} {args...}"), format!("{} {tool}", root.display())),
            None => (cmd!(sh, "{tool} {args...}"), String::new()),
        };
        version_of(cmd, format!("{shown} {}", args.join(" ")).trim_start(), tool, parse)
    };
    let gcc = version(cc, &["-dumpversion"], &|out| out.lines().next().map(str::trim).map(String::from))?;
    let make_v = version(make, &["--version"], &|out| {
        out.lines().next().and_then(|l| l.strip_prefix("GNU Make ")).map(|v| v.trim().to_string())
    })?;
    let binutils = version(&format!("{cross}ld"), &["--version"], &|out| {
        out.lines().next().and_then(|l| l.split_whitespace().last()).map(String::from)
    })?;
    Ok(Found { gcc, make: make_v, binutils })
}

/// The version `parse` finds in what `cmd` printed; `args` as the error shows them.
fn version_of(cmd: Cmd<'_>, args: &str, tool: &str, parse: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let out = crate::host::process::output(cmd)
        .map_err(|e| format!("{e} ({tool}: install it, or point the build at another one: see --help)"))?;
    if !out.status.success() && out.stdout.is_empty() {
        return Err(format!("cannot run {tool} ({args}): {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    parse(&text)
        .filter(|v| !version_numbers(v).is_empty())
        .ok_or_else(|| format!("{tool} ({args}): no version in {text:?}"))
}

/// Refuse tools outside the line's known-good ranges, naming what works
/// and how to point the build at it.
pub fn check(found: &Found, wanted: &Toolchain, line: &str) -> Result<()> {
    let mut problems = Vec::new();
    let mut one = |tool: &str, have: &str, range: &Range, flag: &str| {
        if let Some(why) = outside(have, range) {
            problems.push(format!("{tool} {have} is {why} for Linux {line} ({}); {flag}", describe(range)));
        }
    };
    one("gcc", &found.gcc, &wanted.gcc, "give another with --cc PATH or --cross-compile PREFIX");
    one("GNU make", &found.make, &wanted.make, "give another with --make PATH");
    one("binutils (ld)", &found.binutils, &wanted.binutils, "give another set with --cross-compile PREFIX");
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "this toolchain cannot build Linux {line}:\n  {}\n{}\nOr run the build inside a tree of that era with --chroot ROOT.",
        problems.join("\n  "),
        wanted.how
    ))
}

fn outside(have: &str, range: &Range) -> Option<&'static str> {
    let v = version_numbers(have);
    if v < version_numbers(&range.min) {
        return Some("too old");
    }
    match &range.max {
        // A maximum of 3.4 admits 3.4.6: compare only as many parts as it has.
        Some(max) if v.iter().take(version_numbers(max).len()).copied().collect::<Vec<_>>() > version_numbers(max) => {
            Some("too new")
        }
        _ => None,
    }
}

fn describe(range: &Range) -> String {
    match &range.max {
        Some(max) => format!("it builds with {} to {max}", range.min),
        None => format!("it needs {} or newer", range.min),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(min: &str, max: Option<&str>) -> Range {
        Range { min: min.into(), max: max.map(String::from) }
    }

    #[test]
    fn a_maximum_admits_its_own_point_releases_and_nothing_newer() {
        assert_eq!(outside("3.4.6", &range("2.95", Some("3.4"))), None);
        assert_eq!(outside("4.1.2", &range("2.95", Some("3.4"))), Some("too new"));
        assert_eq!(outside("2.95.3", &range("2.95", Some("3.4"))), None);
        assert_eq!(outside("3.81", &range("3.79.1", Some("3.81"))), None);
        assert_eq!(outside("4.3", &range("3.79.1", Some("3.81"))), Some("too new"));
        assert_eq!(outside("4.9", &range("5.1", None)), Some("too old"));
        assert_eq!(outside("12", &range("5.1", None)), None);
    }

    #[test]
    fn a_too_new_toolchain_is_refused_naming_what_works_and_the_flags() {
        let wanted = Toolchain {
            gcc: range("2.95.3", Some("3.4")),
            make: range("3.79.1", Some("3.81")),
            binutils: range("2.12", Some("2.17")),
            how: "Use Debian sarge's toolchain in a chroot.".into(),
        };
        let found = Found { gcc: "12.2.0".into(), make: "4.3".into(), binutils: "2.40".into() };
        let e = check(&found, &wanted, "2.6.9").unwrap_err();
        assert!(e.contains("gcc 12.2.0 is too new for Linux 2.6.9 (it builds with 2.95.3 to 3.4)"), "{e}");
        assert!(e.contains("GNU make 4.3 is too new") && e.contains("--make PATH"), "{e}");
        assert!(e.contains("--cross-compile PREFIX") && e.contains("sarge") && e.contains("--chroot ROOT"), "{e}");
        let ok = Found { gcc: "3.4.6".into(), make: "3.81".into(), binutils: "2.17".into() };
        check(&ok, &wanted, "2.6.9").unwrap();
    }

    #[test]
    fn the_host_tools_are_found_by_version() {
        let found = find("gcc", "make", "", None).unwrap();
        assert!(version_numbers(&found.gcc)[0] >= 4, "{found:?}");
        assert!(version_numbers(&found.make) >= version_numbers("3.80"), "{found:?}");
        assert!(version_numbers(&found.binutils) >= version_numbers("2.20"), "{found:?}");
        assert!(find("no-such-cc", "make", "", None).unwrap_err().contains("cannot run no-such-cc"));
    }

    #[test]
    fn the_tools_of_a_chroot_are_asked_inside_it() {
        // SAFETY: geteuid has no side effects.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: chroot needs root");
            return;
        }
        let inside = find("gcc", "make", "", Some(std::path::Path::new("/"))).unwrap();
        assert_eq!(inside.gcc, find("gcc", "make", "", None).unwrap().gcc);
        let empty = std::env::temp_dir().join(format!("bootmark-chroot-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let e = find("gcc", "make", "", Some(&empty)).unwrap_err();
        assert!(e.contains("cannot run gcc"), "{e}");
        std::fs::remove_dir_all(&empty).unwrap();
    }
}
