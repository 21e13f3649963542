//! What the machine under the records was, where it was not real hardware:
//! an emulated target disk (an emulator's model names, a virtio disk) and
//! the throttle QEMU gave it (the chassis asset tag `xtask qemu` writes).
//! Said once at the top of the report, so that nobody reads an emulator's
//! speed as a drive's.

use crate::workstation::glance::Glance;

/// Disk models that name an emulator, not a drive.
const EMULATED_MODELS: [&str; 4] = ["QEMU", "VBOX", "VMware", "Virtual"];
/// How `xtask qemu` starts the asset tag it writes.
const THROTTLE_TAG: &str = "qemu: disk throttled";
/// Names kept for the sentence, at most.
const NAMED: usize = 3;

#[derive(Debug, Default)]
pub struct Setting {
    records: usize,
    emulated: usize,
    models: Vec<String>,
    /// Records that carry an asset tag at all (newer than it), and those whose tag is QEMU's throttle.
    tagged: usize,
    throttled: usize,
    throttles: Vec<String>,
}

impl Setting {
    pub fn offer(&mut self, g: &Glance) {
        self.records += 1;
        let device = g.storage.device.as_ref();
        let model = device.and_then(|d| d.model.as_deref()).unwrap_or("");
        let virtio = device.is_some_and(|d| d.disk.starts_with("vd"));
        if virtio || EMULATED_MODELS.iter().any(|m| model.contains(m)) {
            self.emulated += 1;
            let name = if model.is_empty() { "virtio" } else { model };
            keep(&mut self.models, name);
        }
        if let Some(tag) = g.host.dmi_asset_tag.as_deref() {
            self.tagged += 1;
            if tag.starts_with(THROTTLE_TAG) {
                self.throttled += 1;
                keep(&mut self.throttles, tag.trim_start_matches("qemu: "));
            }
        }
    }

    /// The sentence, when any record's target disk was emulated.
    pub fn said(&self) -> Option<String> {
        if self.emulated == 0 {
            return None;
        }
        let throttle = match (self.throttled, self.tagged) {
            (0, 0) => {
                "; whether the emulator throttled it, these records do not say (they predate the asset tag that tells)"
                    .to_string()
            }
            (0, _) => "; not throttled".to_string(),
            (n, _) => format!("; {} in {n} of them", self.throttles.join(", ")),
        };
        Some(format!(
            "The target disk is emulated ({}) in {} of {} records{throttle}: its speed is the emulator's, not a drive's — compare kernels on it, not its figures with real disks.",
            self.models.join(", "),
            self.emulated,
            self.records
        ))
    }
}

fn keep(names: &mut Vec<String>, name: &str) {
    if names.len() < NAMED && !names.iter().any(|n| n == name) {
        names.push(name.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::record::Record;

    fn record(model: &str, tag: Option<&str>) -> Record {
        let mut r = Record::blank("t", 0);
        r.storage.device = Some(crate::schema::machine::Device {
            name: "sda1".into(),
            disk: "sda".into(),
            model: Some(model.into()),
            ..Default::default()
        });
        r.host.dmi_asset_tag = tag.map(String::from);
        r
    }

    #[test]
    fn an_emulated_disk_and_its_throttle_are_said() {
        let mut s = Setting::default();
        let tag = "qemu: disk throttled to 30 MB/s and 240 requests/s of 128 KiB";
        s.offer(&Glance::of(&record("ATA QEMU HARDDISK", Some(tag))));
        s.offer(&Glance::of(&record("ATA QEMU HARDDISK", Some(tag))));
        s.offer(&Glance::of(&record("SAMSUNG MZ7LH960", Some("Not Specified"))));
        assert_eq!(
            s.said().unwrap(),
            "The target disk is emulated (ATA QEMU HARDDISK) in 2 of 3 records; disk throttled to 30 MB/s and 240 requests/s of 128 KiB in 2 of them: its speed is the emulator's, not a drive's — compare kernels on it, not its figures with real disks."
        );
        let mut old = Setting::default();
        old.offer(&Glance::of(&record("ATA QEMU HARDDISK", None)));
        assert!(old.said().unwrap().contains("these records do not say"), "{:?}", old.said());
        let mut real = Setting::default();
        real.offer(&Glance::of(&record("SAMSUNG MZ7LH960", Some("Not Specified"))));
        assert_eq!(real.said(), None, "real hardware: nothing to say");
    }
}
