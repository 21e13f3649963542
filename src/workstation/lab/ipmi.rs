//! IPMI through `ipmitool -I lanplus` (what every lab has; LAVA and ktest
//! drive BMCs with it too). The password reaches ipmitool in its own
//! environment (`-E` reads IPMI_PASSWORD), never on a command line that
//! `ps` would show; errors name the command without it.
//!
//! The commands, as a user would type them:
//! `ipmitool -I lanplus -H BMC -U USER -E chassis power status|on|off`,
//! `… chassis bootdev pxe|cdrom|disk` (once, for the next boot),
//! `… sol deactivate`, `… sol activate` (the console).

use super::BootDevice;
use super::file::Secret;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Ipmi {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Secret,
    /// `-C N`, when the lab file sets it (ipmitool's default otherwise).
    pub cipher_suite: Option<u8>,
}

impl Ipmi {
    fn command(&self, args: &[&str]) -> (Command, String) {
        let mut c = Command::new("ipmitool");
        let port = self.port.to_string();
        let mut all = vec!["-I", "lanplus", "-H", &self.host, "-p", &port, "-U", &self.user, "-E"];
        let suite = self.cipher_suite.map(|n| n.to_string());
        if let Some(n) = &suite {
            all.extend(["-C", n]);
        }
        all.extend(args);
        c.args(&all).env("IPMI_PASSWORD", self.password.expose());
        (c, format!("ipmitool {}", all.join(" ")))
    }

    /// Run one ipmitool command; its output, or an error naming it.
    fn run(&self, args: &[&str]) -> Result<String, String> {
        let (mut c, shown) = self.command(args);
        let out = c.stdin(Stdio::null()).output().map_err(|e| {
            format!("{shown}: cannot run ipmitool ({e}); install it (Debian: apt-get install ipmitool)")
        })?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
            return Err(format!("{shown}: {} ({})", out.status, tail.join(" / ")));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub fn power_is_on(&self) -> Result<bool, String> {
        let said = self.run(&["chassis", "power", "status"])?;
        match said.trim() {
            s if s.ends_with(" on") => Ok(true),
            s if s.ends_with(" off") => Ok(false),
            s => Err(format!("ipmitool chassis power status said {s:?}, neither on nor off")),
        }
    }

    /// Power off and wait until the BMC says so (at most a minute).
    pub fn power_off(&self) -> Result<(), String> {
        if !self.power_is_on()? {
            return Ok(());
        }
        self.run(&["chassis", "power", "off"])?;
        let since = Instant::now();
        while self.power_is_on()? {
            if since.elapsed() > Duration::from_secs(60) {
                return Err(format!("{}: still on a minute after `chassis power off`", self.host));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(())
    }

    /// On. A step is a cold boot: off (if on), then on; never `chassis
    /// power cycle`, which many BMCs refuse when the server is off and
    /// others ignore.
    pub fn power_on(&self) -> Result<(), String> {
        self.run(&["chassis", "power", "on"]).map(|_| ())
    }

    /// The next boot only, from `device`.
    pub fn boot_once(&self, device: BootDevice) -> Result<(), String> {
        let name = match device {
            BootDevice::Pxe => "pxe",
            BootDevice::Cdrom => "cdrom",
            BootDevice::Disk => "disk",
        };
        self.run(&["chassis", "bootdev", name]).map(|_| ())
    }

    /// Serial over LAN, as a child whose stdout is the console. A session
    /// left open by an earlier run (ours or somebody's) is closed first:
    /// BMCs allow one. Its stdin is a pipe kept open: ipmitool ends the
    /// session at EOF on its input.
    pub fn sol(&self) -> Result<Child, String> {
        let _ = self.run(&["sol", "deactivate"]);
        let (mut c, shown) = self.command(&["sol", "activate"]);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        c.spawn()
            .map_err(|e| format!("{shown}: cannot run ipmitool ({e}); install it (Debian: apt-get install ipmitool)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_goes_in_the_environment_never_on_the_command_line() {
        let ipmi = Ipmi {
            host: "bmc".into(),
            port: 623,
            user: "admin".into(),
            password: Secret::new("hunter2".into()),
            cipher_suite: Some(3),
        };
        let (c, shown) = ipmi.command(&["chassis", "power", "status"]);
        assert_eq!(shown, "ipmitool -I lanplus -H bmc -p 623 -U admin -E -C 3 chassis power status");
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!args.iter().any(|a| a.contains("hunter2")), "{args:?}");
        let env: Vec<_> = c.get_envs().collect();
        assert!(env.iter().any(|(k, v)| *k == "IPMI_PASSWORD" && v.is_some_and(|v| v == "hunter2")), "{env:?}");
    }
}
