//! LVM2 physical volumes and volume groups, read from the disks: the PV
//! label (`LABELONE`, in one of the first four sectors), the metadata
//! area's header and its newest text, and from that text a logical
//! volume's device-mapper table (linear and striped segments).
//!
//! Only reading: bootmark never writes LVM metadata (no backup, no seqno
//! bump, no `MISSING` flag). The layout is lvm2's `format_text` and
//! `label` code: the same on disk since LVM2 1.0 (2002).

use super::dm::Target;
use super::lvm_text::{self, Section, Value};
use super::{ReadAt, u32_at, u64_at};
use std::io;

const SECTOR: u64 = 512;
const LABEL_ID: &[u8; 8] = b"LABELONE";
const LABEL_TYPE: &[u8; 8] = b"LVM2 001";
const MDA_MAGIC: &[u8; 16] = b" LVM2 x[5A%r0N*>";
/// lvm2's CRC: the reflected CRC-32 polynomial, this seed, no final xor.
const INITIAL_CRC: u32 = 0xf597a6cf;
/// The metadata area's header; its circular text buffer starts after it.
const MDA_HEADER_SIZE: u64 = 512;
/// The largest metadata text bootmark reads. lvm2's default area is about
/// 1 MiB and keeps each text under half of it; a VG of a thousand LVs
/// writes a few hundred KiB. A text's length comes from the disk, so it is
/// checked against this before anything is allocated for it.
pub const MAX_TEXT: u64 = 16 << 20;

/// lvm2's `calc_crc`.
pub fn crc(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    crc
}

/// What a PV label says: the PV's UUID and where its metadata areas are.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    /// 32 characters, without lvm's dashes.
    pub uuid: String,
    pub device_size: u64,
    /// (offset, size) in bytes of each metadata area.
    pub metadata_areas: Vec<(u64, u64)>,
}

/// The PV label of a device, if it has one (sectors 0–3, as lvm2 looks).
pub fn read_label(dev: &dyn ReadAt) -> io::Result<Option<Label>> {
    let mut head = vec![0u8; 4 * SECTOR as usize];
    let n = dev.read_at(&mut head, 0)?;
    for sector in 0..(n / SECTOR as usize) {
        let s = &head[sector * 512..sector * 512 + 512];
        if &s[0..8] != LABEL_ID || &s[24..32] != LABEL_TYPE || u64_at(s, 8) != sector as u64 {
            continue;
        }
        // The label's CRC covers the sector from offset_xl's field on.
        if crc(INITIAL_CRC, &s[20..]) != u32_at(s, 16) {
            continue;
        }
        // offset_xl is the disk's claim: checked before it indexes (no wrap on i686).
        let at = u32_at(s, 20) as usize;
        if at.checked_add(40).is_none_or(|end| end > 512) {
            continue;
        }
        let uuid = String::from_utf8_lossy(&s[at..at + 32]).into_owned();
        let device_size = u64_at(s, at + 32);
        // Two zero-terminated lists of (offset, size): data areas, then metadata areas.
        let mut lists: Vec<Vec<(u64, u64)>> = vec![Vec::new(), Vec::new()];
        let mut p = at + 40;
        for list in lists.iter_mut() {
            while p + 16 <= 512 {
                let (offset, size) = (u64_at(s, p), u64_at(s, p + 8));
                p += 16;
                if offset == 0 {
                    break;
                }
                list.push((offset, size));
            }
        }
        return Ok(Some(Label { uuid, device_size, metadata_areas: lists.pop().unwrap_or_default() }));
    }
    Ok(None)
}

/// The newest metadata text in the PV's first metadata area that has a
/// sound one: a damaged first copy is passed over for the second
/// (`--pvmetadatacopies 2` keeps one at each end of the PV). `None`: a PV
/// without metadata (`--metadatacopies 0`) or not in a VG yet. An error
/// names every copy's damage when no copy is sound.
pub fn read_metadata(dev: &dyn ReadAt, label: &Label) -> Result<Option<String>, String> {
    let mut damage = Vec::new();
    for &(start, size) in &label.metadata_areas {
        match read_area(dev, start, size) {
            Ok(Some(text)) => return Ok(Some(text)),
            Ok(None) => {}
            Err(e) => damage.push(e),
        }
    }
    if damage.is_empty() { Ok(None) } else { Err(damage.join("; ")) }
}

/// The current text of the metadata area at `start` of `size` bytes.
/// Every offset and length is the disk's claim: each is checked (against
/// the area, against `MAX_TEXT`, without overflow) before it is used.
fn read_area(dev: &dyn ReadAt, start: u64, size: u64) -> Result<Option<String>, String> {
    if size <= MDA_HEADER_SIZE {
        return Err(format!("the metadata area at byte {start} is {size} bytes, too small for its own header"));
    }
    let mut header = vec![0u8; MDA_HEADER_SIZE as usize];
    dev.read_exact_at(&mut header, start).map_err(|e| format!("reading the metadata area at byte {start}: {e}"))?;
    if &header[4..20] != MDA_MAGIC {
        return Err(format!("the metadata area at byte {start} has no LVM2 header"));
    }
    if crc(INITIAL_CRC, &header[4..]) != u32_at(&header, 0) {
        return Err(format!("the metadata area header at byte {start} fails its checksum"));
    }
    // raw_locn[0]: the current text (offset from the area's start, size, checksum).
    let (offset, len, checksum) = (u64_at(&header, 40), u64_at(&header, 48), u32_at(&header, 56));
    if offset == 0 || len == 0 {
        return Ok(None);
    }
    if offset < MDA_HEADER_SIZE || offset >= size || len > size - MDA_HEADER_SIZE {
        return Err(format!("the metadata text at byte {start}+{offset} ({len} bytes) lies outside its area"));
    }
    if len > MAX_TEXT {
        return Err(format!(
            "the metadata text at byte {start}+{offset} claims {len} bytes, more than the {MAX_TEXT} bytes any lvm2 writes"
        ));
    }
    let at =
        |o: u64| start.checked_add(o).ok_or_else(|| format!("the metadata area at byte {start} ends past any disk"));
    // The area is a ring after its header: a text may wrap to its beginning.
    let first = len.min(size - offset);
    let mut text = vec![0u8; len as usize];
    let read = |buf: &mut [u8], pos: u64| {
        dev.read_exact_at(buf, pos).map_err(|e| format!("reading the metadata text at byte {pos}: {e}"))
    };
    read(&mut text[..first as usize], at(offset)?)?;
    if first < len {
        read(&mut text[first as usize..], at(MDA_HEADER_SIZE)?)?;
    }
    if crc(INITIAL_CRC, &text) != checksum {
        return Err(format!("the metadata text at byte {start}+{offset} fails its checksum"));
    }
    Ok(Some(String::from_utf8_lossy(&text).into_owned()))
}

/// A volume group as its metadata describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct VolumeGroup {
    pub name: String,
    pub id: String,
    pub seqno: i64,
    /// In 512-byte sectors.
    pub extent_size: u64,
    pub writable: bool,
    pub pvs: Vec<PvEntry>,
    pub lvs: Vec<LogicalVolume>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PvEntry {
    /// The metadata's key for it (`pv0`).
    pub key: String,
    /// Without dashes, as in the label.
    pub uuid: String,
    /// The device it was on when the metadata was written (a hint only).
    pub device_hint: String,
    /// Sectors from the PV's start to its first extent.
    pub pe_start: u64,
    /// How many extents the PV has (every lvm2 writes it; None if absent).
    pub pe_count: Option<u64>,
    pub missing: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LogicalVolume {
    pub name: String,
    pub id: String,
    pub writable: bool,
    pub segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub start_extent: u64,
    pub extent_count: u64,
    /// lvm2's segment type: `striped` (linear is striped with one stripe),
    /// `mirror`, `raid1`, `thin`, `snapshot`…
    pub kind: String,
    /// In sectors; 0 for one stripe.
    pub stripe_size: u64,
    /// (PV key, first extent on that PV) per stripe.
    pub stripes: Vec<(String, u64)>,
}

/// Where one piece of an LV lies on a PV, in sectors from the PV's start.
#[derive(Clone, Debug, PartialEq)]
pub struct Extent {
    pub pv: String,
    pub start: u64,
    pub sectors: u64,
}

fn no_dashes(s: &str) -> String {
    s.chars().filter(|c| *c != '-').collect()
}

fn int(s: &Section, key: &str, what: &str) -> Result<u64, String> {
    s.int(key).and_then(|i| u64::try_from(i).ok()).ok_or_else(|| format!("{what} has no valid '{key}'"))
}

/// The volume group in a metadata text.
pub fn volume_group(text: &str) -> Result<VolumeGroup, String> {
    let top = lvm_text::parse(text)?;
    let (name, vg) = top.sections().next().ok_or("the metadata holds no volume group")?;
    let what = format!("volume group {name}");
    let mut pvs = Vec::new();
    for (key, pv) in vg.section("physical_volumes").map(|s| s.sections().collect()).unwrap_or_else(Vec::new) {
        pvs.push(PvEntry {
            key: key.to_string(),
            uuid: no_dashes(pv.str("id").ok_or_else(|| format!("{what}: {key} has no id"))?),
            device_hint: pv.str("device").unwrap_or("?").to_string(),
            pe_start: int(pv, "pe_start", &format!("{what}: {key}"))?,
            pe_count: pv.int("pe_count").and_then(|n| u64::try_from(n).ok()),
            missing: pv.strings("flags").contains(&"MISSING"),
        });
    }
    let mut lvs = Vec::new();
    for (lv_name, lv) in vg.section("logical_volumes").map(|s| s.sections().collect()).unwrap_or_else(Vec::new) {
        let lv_what = format!("logical volume {name}/{lv_name}");
        let mut segments = Vec::new();
        for (_, seg) in lv.sections() {
            let mut stripes = Vec::new();
            let items = seg.list("stripes");
            for pair in items.chunks(2) {
                match pair {
                    [Value::Str(pv), Value::Int(e)] if *e >= 0 => stripes.push((pv.clone(), *e as u64)),
                    _ => return Err(format!("{lv_what}: a stripe is not a (PV, extent) pair")),
                }
            }
            segments.push(Segment {
                start_extent: int(seg, "start_extent", &lv_what)?,
                extent_count: int(seg, "extent_count", &lv_what)?,
                kind: seg.str("type").unwrap_or("?").to_string(),
                stripe_size: seg.int("stripe_size").unwrap_or(0).max(0) as u64,
                stripes,
            });
        }
        segments.sort_by_key(|s| s.start_extent);
        lvs.push(LogicalVolume {
            name: lv_name.to_string(),
            id: lv.str("id").unwrap_or("").to_string(),
            writable: lv.strings("status").contains(&"WRITE"),
            segments,
        });
    }
    let extent_size = int(vg, "extent_size", &what)?;
    if extent_size == 0 {
        return Err(format!("{what} has an extent size of 0"));
    }
    Ok(VolumeGroup {
        name: name.to_string(),
        id: vg.str("id").unwrap_or("").to_string(),
        seqno: vg.int("seqno").unwrap_or(0),
        extent_size,
        writable: vg.strings("status").contains(&"WRITE"),
        pvs,
        lvs,
    })
}

impl VolumeGroup {
    pub fn lv(&self, name: &str) -> Result<&LogicalVolume, String> {
        self.lvs.iter().find(|l| l.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.lvs.iter().map(|l| l.name.as_str()).collect();
            format!("volume group {} has no logical volume {name}; it has: {}", self.name, names.join(", "))
        })
    }

    fn pv(&self, key: &str) -> Result<&PvEntry, String> {
        self.pvs.iter().find(|p| p.key == key).ok_or_else(|| format!("volume group {}: no {key}", self.name))
    }

    /// Why bootmark will not activate `lv` read-write, if it will not:
    /// segment types other than linear/striped, a read-only VG or LV, a PV
    /// the metadata marks missing.
    pub fn refusal(&self, lv: &LogicalVolume) -> Option<String> {
        let name = format!("{}/{}", self.name, lv.name);
        if !self.writable || !lv.writable {
            return Some(format!("the logical volume {name} is read-only in its metadata"));
        }
        if lv.segments.is_empty() {
            return Some(format!("the logical volume {name} has no segments"));
        }
        if let Some(s) = lv.segments.iter().find(|s| s.kind != "striped") {
            return Some(format!(
                "the logical volume {name} has a '{}' segment: bootmark activates linear and striped logical volumes only (activate it with lvm on the installed system, or choose another target)",
                s.kind
            ));
        }
        let used: Vec<&str> = lv.segments.iter().flat_map(|s| s.stripes.iter().map(|(k, _)| k.as_str())).collect();
        if let Some(p) = self.pvs.iter().find(|p| p.missing && used.contains(&p.key.as_str())) {
            return Some(format!(
                "the logical volume {name} lies on {} ({}), which its metadata marks MISSING",
                p.key, p.device_hint
            ));
        }
        None
    }

    /// Every piece of `lv` on its PVs, in LV order (stripes interleave
    /// within a segment; each stripe's run of extents is one piece).
    pub fn extents(&self, lv: &LogicalVolume) -> Result<Vec<Extent>, String> {
        let mut out = Vec::new();
        for s in &lv.segments {
            let n = s.stripes.len() as u64;
            if n == 0 || s.extent_count % n != 0 {
                return Err(format!("{}/{}: a segment's extents do not divide among its stripes", self.name, lv.name));
            }
            for (key, first) in &s.stripes {
                let pv = self.pv(key)?;
                let per_stripe = s.extent_count / n;
                out.push(Extent {
                    pv: key.clone(),
                    start: self.pv_sector(lv, pv, *first, per_stripe)?,
                    sectors: self.sectors(lv, per_stripe)?,
                });
            }
        }
        Ok(out)
    }

    /// The device-mapper table of `lv`, with each PV named by `device_of`
    /// (its `major:minor`).
    pub fn table(
        &self,
        lv: &LogicalVolume,
        device_of: &dyn Fn(&PvEntry) -> Option<String>,
    ) -> Result<Vec<Target>, String> {
        if let Some(why) = self.refusal(lv) {
            return Err(why);
        }
        let mut out = Vec::new();
        for s in &lv.segments {
            let n = s.stripes.len() as u64;
            if n == 0 || s.extent_count % n != 0 {
                return Err(format!("{}/{}: a segment's extents do not divide among its stripes", self.name, lv.name));
            }
            let length = self.sectors(lv, s.extent_count)?;
            let mut devices = Vec::new();
            for (key, first) in &s.stripes {
                let pv = self.pv(key)?;
                let dev = device_of(pv).ok_or_else(|| {
                    format!(
                        "{}/{} needs the physical volume {} (last seen as {}), which no disk here carries",
                        self.name, lv.name, pv.key, pv.device_hint
                    )
                })?;
                devices.push(format!("{dev} {}", self.pv_sector(lv, pv, *first, s.extent_count / n)?));
            }
            let (kind, params) = if n == 1 {
                ("linear", devices.remove(0))
            } else {
                ("striped", format!("{n} {} {}", s.stripe_size, devices.join(" ")))
            };
            out.push(Target { start: self.sectors(lv, s.start_extent)?, length, kind: kind.to_string(), params });
        }
        Ok(out)
    }

    /// `extents` extents in sectors. Counts come from the disk: a product
    /// that overflows is damaged metadata, not a table to load.
    fn sectors(&self, lv: &LogicalVolume, extents: u64) -> Result<u64, String> {
        extents.checked_mul(self.extent_size).ok_or_else(|| {
            format!(
                "{}/{}: {extents} extents of {} sectors overflow a sector count",
                self.name, lv.name, self.extent_size
            )
        })
    }

    /// The sector on `pv` where a run of `count` extents from `first` starts,
    /// checked to lie within the PV's extents.
    fn pv_sector(&self, lv: &LogicalVolume, pv: &PvEntry, first: u64, count: u64) -> Result<u64, String> {
        if let Some(pe_count) = pv.pe_count
            && first.checked_add(count).is_none_or(|end| end > pe_count)
        {
            return Err(format!(
                "{}/{}: extents {first}+{count} on {} lie beyond its {pe_count} extents",
                self.name, lv.name, pv.key
            ));
        }
        self.sectors(lv, first)?
            .checked_add(pv.pe_start)
            .ok_or_else(|| format!("{}/{}: extent {first} on {} overflows a sector count", self.name, lv.name, pv.key))
    }

    /// The device-mapper name lvm gives the LV: `vg-lv`, dashes doubled.
    pub fn dm_name(&self, lv: &LogicalVolume) -> String {
        format!("{}-{}", self.name.replace('-', "--"), lv.name.replace('-', "--"))
    }

    /// The device-mapper UUID lvm gives the LV (`LVM-` + VG id + LV id).
    pub fn dm_uuid(&self, lv: &LogicalVolume) -> String {
        format!("LVM-{}{}", no_dashes(&self.id), no_dashes(&lv.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    /// The first 32 KiB of a PV that lvm2 2.03.16 made (its commands in
    /// tests/data/layers/README.md): label, metadata header, text.
    fn pv_fixture(name: &str) -> File {
        File::open(format!("{}/tests/data/layers/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn a_real_pv_label_and_its_newest_metadata() {
        let f = pv_fixture("pv0.bin");
        let label = read_label(&f).unwrap().expect("a PV label");
        assert_eq!(label.uuid.len(), 32);
        assert_eq!(label.metadata_areas, [(4096, 1044480)]);
        let text = read_metadata(&f, &label).unwrap().expect("metadata");
        let vg = volume_group(&text).unwrap();
        assert_eq!(vg.name, "tvg");
        assert_eq!(vg.seqno, 4, "the newest of the ring's four texts");
        assert!(vg.pvs.iter().any(|p| p.uuid == label.uuid));
        assert_eq!(vg.extent_size, 8192);
        let names: Vec<&str> = vg.lvs.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["lv1", "lv2", "lv3"]);
    }

    #[test]
    fn linear_and_striped_tables_as_lvm_would_load_them() {
        let f = pv_fixture("pv0.bin");
        let text = read_metadata(&f, &read_label(&f).unwrap().unwrap()).unwrap().unwrap();
        let vg = volume_group(&text).unwrap();
        let dev = |p: &PvEntry| Some(if p.key == "pv0" { "7:0".to_string() } else { "7:1".to_string() });
        let lv1 = vg.table(vg.lv("lv1").unwrap(), &dev).unwrap();
        assert_eq!(lv1, [Target { start: 0, length: 4 * 8192, kind: "linear".into(), params: "7:0 2048".into() }]);
        let lv2 = vg.table(vg.lv("lv2").unwrap(), &dev).unwrap();
        assert_eq!(
            lv2,
            [Target { start: 0, length: 4 * 8192, kind: "striped".into(), params: "2 128 7:0 34816 7:1 2048".into() }]
        );
        let lv3 = vg.extents(vg.lv("lv3").unwrap()).unwrap();
        assert_eq!(lv3, [Extent { pv: "pv1".into(), start: 2048 + 2 * 8192, sectors: 3 * 8192 }]);
        assert_eq!(vg.dm_name(vg.lv("lv1").unwrap()), "tvg-lv1");
        let none = |_: &PvEntry| None;
        assert!(vg.table(vg.lv("lv1").unwrap(), &none).unwrap_err().contains("no disk here carries"));
        assert!(vg.lv("nope").unwrap_err().contains("it has: lv1, lv2, lv3"));
    }

    #[test]
    fn damaged_metadata_is_refused_not_guessed() {
        let f = pv_fixture("pv0.bin");
        let label = read_label(&f).unwrap().unwrap();
        let mut bytes = std::fs::read(format!("{}/tests/data/layers/pv0.bin", env!("CARGO_MANIFEST_DIR"))).unwrap();
        // One flipped byte in the newest text: its checksum no longer matches.
        let header = &bytes[4096..4096 + 512];
        let at = 4096 + u64_at(header, 40) as usize + 20;
        bytes[at] ^= 0x20;
        let dir = std::env::temp_dir().join(format!("bootmark-lvm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pv.bin"), &bytes).unwrap();
        let err = read_metadata(&File::open(dir.join("pv.bin")).unwrap(), &label).unwrap_err();
        assert!(err.contains("fails its checksum"), "{err}");
        // A label whose CRC is wrong is no label.
        bytes[512 + 40] ^= 1;
        std::fs::write(dir.join("pv.bin"), &bytes).unwrap();
        assert_eq!(read_label(&File::open(dir.join("pv.bin")).unwrap()).unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    use crate::image_side::layers::crafted::{self, MDA_AT, pv0, set_area_size, set_locn, set_text};

    fn metadata_of(pv: &[u8]) -> Result<Option<String>, String> {
        read_metadata(&pv, &read_label(&pv).unwrap().expect("a label"))
    }

    #[test]
    fn lengths_a_disk_claims_are_checked_before_anything_is_allocated() {
        // An area of 1 PiB whose text claims 32 TiB, CRCs valid: this allocation aborted PID 1.
        let mut pv = pv0();
        set_area_size(&mut pv, 1 << 50);
        set_locn(&mut pv, 4608, 32 << 40, 0);
        let e = metadata_of(&pv).unwrap_err();
        assert!(e.contains("claims 35184372088832 bytes, more than the 16777216 bytes any lvm2 writes"), "{e}");
        // An area too small for its own header underflowed `size - 512`.
        for size in [0, 100, 512] {
            let mut pv = pv0();
            set_area_size(&mut pv, size);
            assert!(metadata_of(&pv).unwrap_err().contains("too small for its own header"), "{size}");
        }
        // A text placed inside the header, or at an offset past any disk.
        let mut pv = pv0();
        set_locn(&mut pv, 100, 10, 0);
        assert!(metadata_of(&pv).unwrap_err().contains("lies outside its area"));
        let mut pv = pv0();
        set_area_size(&mut pv, u64::MAX);
        set_locn(&mut pv, u64::MAX - 4, 8, 0);
        assert!(metadata_of(&pv).is_err());
        // A label whose offset_xl points past its sector is no label (no index out of range).
        let mut pv = pv0();
        pv[crafted::LABEL_AT + 20..crafted::LABEL_AT + 24].copy_from_slice(&u32::MAX.to_le_bytes());
        let sealed = crc(INITIAL_CRC, &pv[crafted::LABEL_AT + 20..crafted::LABEL_AT + 512]);
        pv[crafted::LABEL_AT + 16..crafted::LABEL_AT + 20].copy_from_slice(&sealed.to_le_bytes());
        assert_eq!(read_label(&pv).unwrap(), None);
    }

    #[test]
    fn a_damaged_first_copy_is_passed_over_for_the_second() {
        // A PV with two metadata areas (pvcreate --pvmetadatacopies 2): the first one damaged.
        let good = pv0();
        let mut pv = good.clone();
        pv.resize(64 << 10, 0);
        pv[32 << 10..(32 << 10) + 28672].copy_from_slice(&good[MDA_AT..MDA_AT + 28672]);
        let s = &mut pv[crafted::LABEL_AT..crafted::LABEL_AT + 512];
        let at = u32_at(s, 20) as usize;
        let mut p = at + 40;
        while u64_at(s, p) != 0 {
            p += 16;
        }
        // The metadata list: (4096, size), then (32 KiB, 28672), then the terminator.
        s[p + 32..p + 40].copy_from_slice(&(32u64 << 10).to_le_bytes());
        s[p + 40..p + 48].copy_from_slice(&28672u64.to_le_bytes());
        s[p + 48..p + 64].fill(0);
        let sealed = crc(INITIAL_CRC, &s[20..]);
        s[16..20].copy_from_slice(&sealed.to_le_bytes());
        let text = crafted::text(&pv);
        pv[MDA_AT + 4608 + 30] ^= 0x20;
        let read = metadata_of(&pv).unwrap().expect("the second copy");
        assert_eq!(read, text);
        // Both damaged: an error naming each copy's damage.
        pv[(32 << 10) + 4608 + 30] ^= 0x20;
        let e = metadata_of(&pv).unwrap_err();
        assert!(e.contains("at byte 4096+4608 fails its checksum; the metadata text at byte 32768+4608"), "{e}");
    }

    #[test]
    fn extent_arithmetic_that_overflows_or_leaves_the_pv_is_refused() {
        let pv = pv0();
        let original = crafted::text(&pv);
        let dev = |_: &PvEntry| Some("7:0".to_string());
        for (from, to, why) in [
            ("extent_size = 8192", "extent_size = 4611686018427387904", "overflow a sector count"),
            ("\"pv0\", 0\n]", "\"pv0\", 2305843009213693952\n]", "beyond its 15 extents"),
            (
                "extent_count = 4\n\ntype = \"striped\"\nstripe_count = 1",
                "extent_count = 16\n\ntype = \"striped\"\nstripe_count = 1",
                "beyond its 15 extents",
            ),
            ("extent_size = 8192", "extent_size = 0", "extent size of 0"),
        ] {
            let mut pv = pv.clone();
            assert!(original.contains(from), "{from}");
            set_text(&mut pv, &original.replacen(from, to, 1));
            let text = metadata_of(&pv).unwrap().unwrap();
            let e = volume_group(&text)
                .and_then(|vg| vg.table(vg.lv("lv1")?, &dev).and_then(|_| vg.extents(vg.lv("lv1")?)))
                .unwrap_err();
            assert!(e.contains(why), "{to}: {e}");
        }
    }

    #[test]
    fn segment_types_bootmark_does_not_map_are_refused_by_name() {
        let text = "vg {\nid = \"a\"\nstatus = [\"READ\", \"WRITE\"]\nextent_size = 8192\n\
            physical_volumes {\npv0 {\nid = \"p\"\npe_start = 2048\nflags = [\"MISSING\"]\n}\n}\n\
            logical_volumes {\nm {\nid = \"m\"\nstatus = [\"READ\", \"WRITE\", \"VISIBLE\"]\n\
            segment1 {\nstart_extent = 0\nextent_count = 1\ntype = \"raid1\"\n}\n}\n\
            l {\nid = \"l\"\nstatus = [\"READ\", \"WRITE\", \"VISIBLE\"]\n\
            segment1 {\nstart_extent = 0\nextent_count = 1\ntype = \"striped\"\nstripe_count = 1\nstripes = [\"pv0\", 0]\n}\n}\n\
            r {\nid = \"r\"\nstatus = [\"READ\", \"VISIBLE\"]\n}\n}\n}\n";
        let vg = volume_group(text).unwrap();
        assert!(vg.refusal(vg.lv("m").unwrap()).unwrap().contains("'raid1' segment"));
        assert!(vg.refusal(vg.lv("l").unwrap()).unwrap().contains("MISSING"));
        assert!(vg.refusal(vg.lv("r").unwrap()).unwrap().contains("read-only"));
    }
}
