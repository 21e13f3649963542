//! Which drivers the machine needs: the devices present in sysfs, by their
//! modalias strings (`pci:v00008086d00002922sv…`), matched against the
//! `alias=` patterns each module declares — what udev does, done once.
//!
//! Kernels before about 2.6.11 have no `modalias` file for PCI devices; their
//! string is put together from the `vendor`, `device`, `subsystem_*` and
//! `class` files every 2.6 kernel has, in the format the kernel's
//! file2alias uses.

use crate::fsutil::read_trimmed;
use std::collections::BTreeSet;
use std::path::Path;

/// The modalias of every device on every bus under `sys`/bus.
pub fn present(sys: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let Ok(buses) = std::fs::read_dir(sys.join("bus")) else { return found };
    for bus in buses.flatten() {
        let bus_name = bus.file_name().to_string_lossy().into_owned();
        let Ok(devices) = std::fs::read_dir(bus.path().join("devices")) else { continue };
        for device in devices.flatten() {
            let dir = device.path();
            let alias = read_trimmed(dir.join("modalias")).or_else(|| match bus_name.as_str() {
                "pci" => pci_alias_from_ids(&dir),
                _ => None,
            });
            found.extend(alias.filter(|a| !a.is_empty()));
        }
    }
    found
}

/// `pci:v…d…sv…sd…bc…sc…i…` from the id files of an old kernel's PCI device.
fn pci_alias_from_ids(dir: &Path) -> Option<String> {
    let hex =
        |f: &str| read_trimmed(dir.join(f)).and_then(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok());
    let class = hex("class")?;
    Some(format!(
        "pci:v{:08X}d{:08X}sv{:08X}sd{:08X}bc{:02X}sc{:02X}i{:02X}",
        hex("vendor")?,
        hex("device")?,
        hex("subsystem_vendor").unwrap_or(0),
        hex("subsystem_device").unwrap_or(0),
        class >> 16,
        (class >> 8) & 0xff,
        class & 0xff
    ))
}

/// Shell-style matching as modprobe does it: `*`, `?`, and `[…]` sets with
/// ranges and `!`/`^` negation.
pub fn matches(pattern: &str, text: &str) -> bool {
    glob(pattern.as_bytes(), text.as_bytes())
}

fn glob(p: &[u8], t: &[u8]) -> bool {
    // Iterative with one backtrack point: the position after the last `*`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = match p.get(pi) {
            Some(b'*') => {
                star = Some((pi + 1, ti));
                pi += 1;
                continue;
            }
            Some(b'?') => Some(pi + 1),
            Some(b'[') => set(&p[pi..], t[ti]).map(|(ok, len)| (ok, pi + len)).and_then(|(ok, n)| ok.then_some(n)),
            Some(&c) => (c == t[ti]).then_some(pi + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                pi = next;
                ti += 1;
            }
            (None, Some((sp, st))) => {
                pi = sp;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Match one byte against the set at the start of `p` (`[…]`): whether it
/// matched and the set's length; None for an unterminated set.
fn set(p: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let &lo = p.get(i)?;
        if lo == b']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if p.get(i + 1) == Some(&b'-') && p.get(i + 2).is_some_and(|&h| h != b']') {
            hit |= (lo..=p[i + 2]).contains(&c);
            i += 3;
        } else {
            hit |= lo == c;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_as_the_kernel_writes_them() {
        let ich9_ahci = "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01";
        assert!(matches("pci:v*d*sv*sd*bc01sc06i01*", ich9_ahci), "ahci's class alias");
        assert!(matches("pci:v00008086d00002922sv*sd*bc*sc*i*", ich9_ahci));
        assert!(!matches("pci:v00008086d00002923sv*sd*bc*sc*i*", ich9_ahci));
        assert!(!matches("pci:v*d*sv*sd*bc01sc01i*", ich9_ahci), "IDE class is not AHCI");
        assert!(matches("usb:v*p*d*dc*dsc*dp*ic08isc06ip50in*", "usb:v46F4p0001d0000dc00dsc00dp00ic08isc06ip50in00"));
        assert!(matches("usb:v0781p5406d0[0-1]*dc*", "usb:v0781p5406d0100dc00"));
        assert!(!matches("usb:v0781p5406d0[0-1]*dc*", "usb:v0781p5406d0200dc00"));
        assert!(matches("virtio:d00000002v*", "virtio:d00000002v00001AF4"));
        // arm64 servers' SoC controllers, as ACPI and a device tree describe them.
        assert!(matches("acpi*:APMC0D0D:*", "acpi:APMC0D0D:") && matches("acpi*:PNP0D10:*", "acpi:PNP0D10:PNP0D10:"));
        assert!(matches("acpi*:010601:*", "acpi:LNRO001E:010601:") && !matches("acpi*:PNP0D10:*", "acpi:PNP0D1:"));
        assert!(matches("of:N*T*Cgeneric-xhciC*", "of:NusbT(null)Cgeneric-xhciCxhci-platform"));
        assert!(matches("a[!b]c", "axc") && !matches("a[!b]c", "abc"));
        assert!(matches("a[]]c", "a]c"), "a ] first in a set is a member");
        assert!(!matches("abc", "abcd") && !matches("abcd", "abc") && matches("ab*", "ab"));
        assert!(!matches("a[bc", "ab"), "an unterminated set matches nothing");
    }

    #[test]
    fn old_kernels_pci_devices_get_an_alias_from_their_id_files() {
        let sys = std::env::temp_dir().join(format!("bootmark-modalias-{}", std::process::id()));
        let old = sys.join("bus/pci/devices/0000:00:01.1");
        let new = sys.join("bus/virtio/devices/virtio0");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::create_dir_all(&new).unwrap();
        for (f, v) in [("vendor", "0x8086"), ("device", "0x7010"), ("class", "0x010180")] {
            std::fs::write(old.join(f), format!("{v}\n")).unwrap();
        }
        std::fs::write(new.join("modalias"), "virtio:d00000002v00001AF4\n").unwrap();
        let found = present(&sys);
        std::fs::remove_dir_all(&sys).unwrap();
        let piix_ide = "pci:v00008086d00007010sv00000000sd00000000bc01sc01i80";
        assert_eq!(found, [piix_ide.to_string(), "virtio:d00000002v00001AF4".to_string()].into());
        assert!(matches("pci:v00008086d00007010sv*sd*bc*sc*i*", piix_ide));
    }
}
