//! `cargo xtask check NAME`: the suite's parts one by one. Every name comes
//! from a table — the parts that are no QEMU boot here, the QEMU scenarios
//! and their groups from `boots::scenarios` — so `check --help` lists
//! exactly what runs, and a new scenario needs no line here.

use super::boots::scenarios::{self, Group, SCENARIOS};
use super::boots::{self, bisect_git, kernel_from_source, resets};
use super::{arm64_init, fake_boots, fuzz, kcidb, old_kernel, pictures};
use crate::build::arch::Arch;
use crate::host::project::{Result, project_root};
use clap::{Arg, ArgMatches, Command, FromArgMatches, Subcommand, value_parser};

/// The parts of `cargo xtask test` that are no QEMU scenario.
const PARTS: [(&str, &str); 9] = [
    ("old-kernel", "The quick plan with both x86 static binaries under simulated 2.6.9 and 2.6.16 syscall surfaces"),
    ("arm64-init", "The aarch64 static /init running the quick plan under qemu-user (qemu-aarch64)"),
    ("fake-boots", "/init as PID 1 in namespaces with loop devices: happy path, hostile command lines, refusals"),
    ("kcidb", "The KCIDB export against kcidb-io's validator"),
    ("pictures", "The report's figures screenshot in headless Chromium: every drawn panel shows colour"),
    ("kernel-from-source", "A kernel built from Debian's linux-source-6.1 with kernel-configs/6.1, imaged and booted"),
    ("kernel-from-source-arm64", "The same for aarch64: cross-built, booted under AAVMF on QEMU's virt machine"),
    (
        "bisect-git",
        "bootmark bisect git over a repository of Debian's linux-source-6.1 with a planted regression, each commit \
         built incrementally and booted in QEMU (not in `cargo xtask test`: about 15 minutes)",
    ),
    (
        "fuzz",
        "Fuzz the serial log parser, the md/LVM2 metadata readers, the lab file and the bisect state, each for a while (installs cargo-fuzz if missing)",
    ),
];

/// The check a user named, with the flags of the few that take one.
pub struct Check {
    name: String,
    /// `fuzz --seconds`.
    seconds: u64,
    /// `resets --kills` (the e2e run's count otherwise).
    kills: usize,
}

/// Every `check` subcommand: the parts, the groups, then the scenarios.
fn commands() -> Vec<Command> {
    let mut out: Vec<Command> = PARTS.iter().map(|(name, about)| Command::new(*name).about(*about)).collect();
    out.extend(Group::ALL.iter().map(|g| Command::new(g.name()).about(g.about())));
    out.extend(SCENARIOS.iter().map(|s| Command::new(s.name).about(s.about)));
    out.into_iter()
        .map(|c| match c.get_name() {
            "fuzz" => c.arg(
                Arg::new("seconds")
                    .long("seconds")
                    .value_parser(value_parser!(u64))
                    .default_value("30")
                    .help("Per target"),
            ),
            "resets" => c.arg(
                Arg::new("kills")
                    .long("kills")
                    .value_parser(value_parser!(usize))
                    .help(format!("How many times QEMU is killed [default: {}]", resets::CI_KILLS)),
            ),
            _ => c,
        })
        .collect()
}

impl FromArgMatches for Check {
    fn from_arg_matches(matches: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let (name, sub) =
            matches.subcommand().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        Ok(Check {
            name: name.to_string(),
            seconds: sub.try_get_one::<u64>("seconds").ok().flatten().copied().unwrap_or(30),
            kills: sub.try_get_one::<usize>("kills").ok().flatten().copied().unwrap_or(resets::CI_KILLS),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for Check {
    fn augment_subcommands(cmd: Command) -> Command {
        cmd.subcommands(commands()).subcommand_required(true)
    }

    fn augment_subcommands_for_update(cmd: Command) -> Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        commands().iter().any(|c| c.get_name() == name)
    }
}

pub fn run(check: Check) -> Result<()> {
    match check.name.as_str() {
        "old-kernel" => old_kernel::harness(),
        "arm64-init" => arm64_init::check(),
        "fake-boots" => fake_boots::harness(),
        "kcidb" => kcidb::check(),
        "pictures" => pictures::check(),
        "kernel-from-source" => {
            boot_tools()?;
            kernel_from_source::test(&project_root().join("target/kernel-boot"), Arch::X86_64)
        }
        "kernel-from-source-arm64" => {
            boot_tools()?;
            kernel_from_source::test(&project_root().join("target/kernel-boot"), Arch::Aarch64)
        }
        "bisect-git" => {
            boot_tools()?;
            bisect_git::test(&project_root().join("target"))
        }
        "fuzz" => fuzz::run(check.seconds),
        name => match Group::ALL.iter().find(|g| g.name() == name) {
            Some(group) => {
                boot_tools()?;
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                boots::run_group(*group, check.kills, &|| cores >= 2)
            }
            None => {
                let scenario = scenarios::named(name).ok_or_else(|| format!("no check is named {name}"))?;
                boot_tools()?;
                boots::run_one(scenario, check.kills)
            }
        },
    }
}

/// A check that boots QEMU, run alone on a fresh machine, needs what the
/// whole suite installs first (QEMU, firmware, mkfs…): without it every boot
/// waits out its deadline in silence.
fn boot_tools() -> Result<()> {
    crate::host::deps::ensure_test_tools()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_name_is_one_thing_and_the_table_names_its_file() {
        let names: Vec<String> = commands().iter().map(|c| c.get_name().to_string()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "a name is both a part, a group or a scenario: {names:?}");
        // A scenario's name is its file's, but for the few that share one.
        let shared = [
            ("bios-usb", "boot_ways"),
            ("uefi-usb", "boot_ways"),
            ("bios-pxe", "boot_ways"),
            ("unsigned-kernel-refused", "secure_boot"),
            ("trixie-on-nvme", "generations"),
            ("two-generations", "generations"),
            ("lava-arm64", "lava"),
        ];
        let dir = project_root().join("xtask/src/check/boots");
        for s in SCENARIOS {
            let own = s.name.replace('-', "_");
            let file = shared.iter().find(|(n, _)| *n == s.name).map_or(own.as_str(), |(_, f)| f);
            assert!(dir.join(format!("{file}.rs")).exists(), "check {}: no check/boots/{file}.rs", s.name);
        }
        assert!(SCENARIOS.iter().any(|s| s.groups.contains(&Group::E2e)));
        for g in Group::ALL {
            assert!(SCENARIOS.iter().any(|s| s.groups.contains(&g)), "{} has no scenario", g.name());
        }
    }

    #[test]
    fn check_parses_its_names_and_flags_from_the_tables() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(subcommand)]
            check: Check,
        }
        let c = Cli::try_parse_from(["check", "resets", "--kills", "22"]).unwrap().check;
        assert_eq!((c.name.as_str(), c.kills), ("resets", 22));
        let c = Cli::try_parse_from(["check", "fuzz"]).unwrap().check;
        assert_eq!((c.name.as_str(), c.seconds), ("fuzz", 30));
        assert_eq!(Cli::try_parse_from(["check", "md-layouts"]).unwrap().check.name, "md-layouts");
        assert!(Cli::try_parse_from(["check", "nvme", "--kills", "3"]).is_err(), "a flag of another check");
        assert!(Cli::try_parse_from(["check", "no-such-check"]).is_err());
    }
}
