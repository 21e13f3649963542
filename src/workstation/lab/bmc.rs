//! The power and boot device of a lab's server, whichever way its BMC is
//! reached: IPMI (`ipmi.rs`) or Redfish (`redfish.rs`), or a program that
//! is the server while it runs (`qemu_server.rs`). A step asks the same things of
//! each: power off, the boot device for the next boot only, power on; and,
//! with virtual media, the ISO inserted.

use super::BootDevice;
use super::file::{Bmc, Server};
use super::ipmi::Ipmi;
use super::qemu_server::QemuPower;
use super::redfish::Redfish;
use std::path::Path;

/// A server's BMC, ready to be asked.
pub enum Controller {
    Ipmi(Ipmi),
    Redfish(Redfish),
    Qemu(QemuPower),
}

impl Controller {
    /// Reach `server`'s BMC (Redfish: finds its system, so a wrong URL,
    /// password or certificate stops the lab before any step). A `qemu`
    /// server's command runs in `lab_dir` (its `{image}` the image's
    /// directory, `image_dir`) and keeps its pid in `state_dir`.
    pub fn connect(server: &Server, lab_dir: &Path, image_dir: &Path, state_dir: &Path) -> Result<Controller, String> {
        match &server.bmc {
            Bmc::Qemu { command } => {
                let power = QemuPower::new(command, lab_dir, state_dir, &server.name).with_image(image_dir);
                // A path placeholder where it cannot be quoted is refused before any step.
                power.command_for("k0", None).map_err(|e| format!("server {:?}: {e}", server.name))?;
                Ok(Controller::Qemu(power))
            }
            Bmc::Ipmi { host, port, user, password, cipher_suite } => Ok(Controller::Ipmi(Ipmi {
                host: host.clone(),
                port: *port,
                user: user.clone(),
                password: password.clone(),
                cipher_suite: *cipher_suite,
            })),
            Bmc::Redfish { url, user, password, tls, system } => {
                Redfish::connect(url, user, password, tls, system.as_deref())
                    .map(Controller::Redfish)
                    .map_err(|e| format!("server {:?}: {e}", server.name))
            }
        }
    }

    pub fn power_off(&self) -> Result<(), String> {
        match self {
            Controller::Ipmi(i) => i.power_off(),
            Controller::Redfish(r) => r.power_off(),
            Controller::Qemu(q) => q.power_off(),
        }
    }

    /// On; `entry` and its settings `set` are the step's, for a server
    /// that boots it itself (qemu).
    pub fn power_on(&self, entry: &str, set: Option<&str>) -> Result<(), String> {
        match self {
            Controller::Ipmi(i) => i.power_on(),
            Controller::Redfish(r) => r.power_on(),
            Controller::Qemu(q) => q.power_on(entry, set),
        }
    }

    /// Why the server went off by itself, for a server that is a program
    /// (qemu) whose program has ended; None for a BMC, which says nothing of it.
    pub fn ended(&self) -> Option<String> {
        match self {
            Controller::Qemu(q) => q.ended(),
            _ => None,
        }
    }

    /// The next boot only, from `device`. Asked just before the power
    /// cycle: IPMI BMCs forget a boot device set more than 60 s before the
    /// boot.
    pub fn boot_once(&self, device: BootDevice) -> Result<(), String> {
        match self {
            Controller::Ipmi(i) => i.boot_once(device),
            Controller::Redfish(r) => r.boot_once(device),
            Controller::Qemu(_) => Ok(()), // its command boots the entry
        }
    }

    /// The IPMI BMC, for serial over LAN.
    pub fn ipmi(&self) -> Option<&Ipmi> {
        match self {
            Controller::Ipmi(i) => Some(i),
            _ => None,
        }
    }

    /// The Redfish service, for virtual media.
    pub fn redfish(&self) -> Option<&Redfish> {
        match self {
            Controller::Redfish(r) => Some(r),
            _ => None,
        }
    }
}
