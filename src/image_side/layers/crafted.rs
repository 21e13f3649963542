//! Crafted disks, for the unit tests and the hostile-disk QEMU boot
//! (`cargo xtask check hostile-disks`): the real PV fixture (made by lvm2
//! 2.03.16, tests/data/layers/README.md) re-sealed after a change, md 1.x
//! superblocks laid out field by field as md_p.h says, and an MBR. Every
//! checksum is made valid, so what they exercise is a reader's bounds,
//! not its checksum test. Not in the /init build.

use super::lvm::crc;
use super::{u32_at, u64_at};

const LVM_CRC_SEED: u32 = 0xf597a6cf;
/// Where the fixture's label and metadata area header are.
pub const LABEL_AT: usize = 512;
pub const MDA_AT: usize = 4096;
pub const MD_MAGIC: u32 = 0xa92b_4efc;

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The first 32 KiB of a real PV: VG tvg (lv1 linear on pv0, lv2 striped
/// over pv0 and pv1, lv3 on pv1), its text the newest of four.
pub fn pv0() -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/layers/pv0.bin", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The current text of the fixture's metadata area.
pub fn text(pv: &[u8]) -> String {
    let h = &pv[MDA_AT..MDA_AT + 512];
    let (offset, len) = (u64_at(h, 40) as usize, u64_at(h, 48) as usize);
    String::from_utf8(pv[MDA_AT + offset..MDA_AT + offset + len].to_vec()).unwrap()
}

/// Replace the current text (same place in the ring), its length and checksum sealed.
pub fn set_text(pv: &mut Vec<u8>, text: &str) {
    let offset = u64_at(&pv[MDA_AT..], 40) as usize;
    let end = MDA_AT + offset + text.len();
    if pv.len() < end {
        pv.resize(end, 0);
    }
    pv[MDA_AT + offset..end].copy_from_slice(text.as_bytes());
    set_locn(pv, offset as u64, text.len() as u64, crc(LVM_CRC_SEED, text.as_bytes()));
}

/// Set raw_locn[0] (the current text's offset, length and checksum) and seal the header.
pub fn set_locn(pv: &mut [u8], offset: u64, len: u64, checksum: u32) {
    let h = &mut pv[MDA_AT..MDA_AT + 512];
    put64(h, 40, offset);
    put64(h, 48, len);
    put32(h, 56, checksum);
    let sealed = crc(LVM_CRC_SEED, &h[4..]);
    put32(h, 0, sealed);
}

/// Set the label's first metadata area's size and seal the label.
pub fn set_area_size(pv: &mut [u8], size: u64) {
    let s = &mut pv[LABEL_AT..LABEL_AT + 512];
    let at = u32_at(s, 20) as usize;
    // After the UUID and device size: the data areas (zero-terminated), then the metadata areas.
    let mut p = at + 40;
    while u64_at(s, p) != 0 {
        p += 16;
    }
    put64(s, p + 16 + 8, size);
    seal_label(pv);
}

/// Set the PV's UUID (32 characters, no dashes) in the label and seal it.
pub fn set_label_uuid(pv: &mut [u8], uuid: &str) {
    let s = &mut pv[LABEL_AT..LABEL_AT + 512];
    let at = u32_at(s, 20) as usize;
    s[at..at + 32].copy_from_slice(uuid.as_bytes());
    seal_label(pv);
}

fn seal_label(pv: &mut [u8]) {
    let s = &mut pv[LABEL_AT..LABEL_AT + 512];
    let sealed = crc(LVM_CRC_SEED, &s[20..]);
    put32(s, 16, sealed);
}

/// An md 1.2 superblock (4 KiB, for byte 4096 of its member): raid1 of
/// `raid_disks`, this member in `slot`, the roles given, checksum sealed.
pub fn md_sb1(uuid_byte: u8, raid_disks: u32, slot: u16, events: u64, resync_offset: u64, roles: &[u16]) -> Vec<u8> {
    // super_offset: this superblock at sector 8; data_offset: 1 MiB, mdadm's default.
    sb1(uuid_byte, raid_disks, slot, events, resync_offset, roles, 8, 2048)
}

/// A disk of `bytes` that is a whole-disk md 1.0 member (raid1 of 2, slot
/// 0, clean): its superblock 8 KiB before the end, the array's data from
/// sector 0 — so what the array holds at its start (a partition table) is
/// what the raw disk shows.
pub fn md_1_0_member(uuid_byte: u8, mut disk: Vec<u8>) -> Vec<u8> {
    let at = ((disk.len() as u64 / 512).saturating_sub(16) & !7) as usize * 512;
    let sb = sb1(uuid_byte, 2, 0, 20, u64::MAX, &[0, 1], at as u64 / 512, 0);
    disk[at..at + 4096].copy_from_slice(&sb);
    disk
}

#[allow(clippy::too_many_arguments)]
fn sb1(
    uuid_byte: u8,
    raid_disks: u32,
    slot: u16,
    events: u64,
    resync_offset: u64,
    roles: &[u16],
    super_offset: u64,
    data_offset: u64,
) -> Vec<u8> {
    let mut sb = vec![0u8; 4096];
    put32(&mut sb, 0, MD_MAGIC);
    put32(&mut sb, 4, 1);
    sb[16..32].copy_from_slice(&[uuid_byte; 16]);
    sb[32..40].copy_from_slice(b"host:md0");
    put32(&mut sb, 72, 1);
    put32(&mut sb, 92, raid_disks);
    put64(&mut sb, 128, data_offset);
    put64(&mut sb, 144, super_offset);
    put32(&mut sb, 160, slot as u32);
    put64(&mut sb, 200, events);
    put64(&mut sb, 208, resync_offset);
    put32(&mut sb, 220, roles.len() as u32);
    for (i, r) in roles.iter().enumerate() {
        sb[256 + 2 * i..258 + 2 * i].copy_from_slice(&r.to_le_bytes());
    }
    reseal_sb1(&mut sb);
    sb
}

/// Set a 32-bit field of a 1.x superblock and seal it again.
pub fn set_sb1_u32(sb: &mut [u8], at: usize, v: u32) {
    put32(sb, at, v);
    reseal_sb1(sb);
}

/// Set a 64-bit field of a 1.x superblock and seal it again.
pub fn set_sb1_u64(sb: &mut [u8], at: usize, v: u64) {
    put64(sb, at, v);
    reseal_sb1(sb);
}

fn reseal_sb1(sb: &mut [u8]) {
    let max_dev = (u32_at(sb, 220) as usize).min(1920);
    let mut sum: u64 = 0;
    for (i, w) in sb[..256 + 2 * max_dev].chunks_exact(4).enumerate() {
        if i != 216 / 4 {
            sum += u32::from_le_bytes(w.try_into().unwrap()) as u64;
        }
    }
    put32(sb, 216, ((sum & 0xffff_ffff) + (sum >> 32)) as u32);
}

/// The member disks (`bytes` each) of an md array with 1.2 superblocks:
/// `level`, md's `layout` number, `chunk_kib`, `n` members, data from 1 MiB.
pub fn md_array(uuid_byte: u8, level: i32, layout: u32, chunk_kib: u32, n: u16, bytes: usize) -> Vec<Vec<u8>> {
    let roles: Vec<u16> = (0..n).collect();
    (0..n)
        .map(|slot| {
            let mut sb = md_sb1(uuid_byte, n as u32, slot, 20, u64::MAX, &roles);
            put32(&mut sb, 72, level as u32);
            put32(&mut sb, 76, layout);
            set_sb1_u32(&mut sb, 88, chunk_kib * 2);
            md_disk(&sb, bytes)
        })
        .collect()
}

/// Write `data` at byte `pos` of the array whose members are `disks` (as
/// `md_array` made them): each piece where md would put it.
pub fn write_through(disks: &mut [Vec<u8>], pos: u64, data: &[u8]) {
    let member = super::md::read_member(&disks[0], disks[0].len() as u64).unwrap().unwrap();
    let g = member.geometry();
    let data_start = member.data_offset as usize * 512;
    for (i, byte) in data.iter().enumerate() {
        let at = pos + i as u64;
        let (slot, sector) = g.locate(at / 512).unwrap();
        disks[slot as usize][data_start + sector as usize * 512 + (at % 512) as usize] = *byte;
    }
}

/// An ext3 superblock labelled `label` (16 bytes at most), as at byte 1024 of its filesystem.
pub fn ext3_superblock(label: &str) -> Vec<u8> {
    let mut sb = vec![0u8; 1024];
    sb[56..58].copy_from_slice(&0xEF53u16.to_le_bytes());
    sb[92] = 0x4; // has_journal: ext3
    sb[120..120 + label.len()].copy_from_slice(label.as_bytes());
    sb
}

/// A disk of `bytes` with a 1.2 superblock at 4 KiB.
pub fn md_disk(sb: &[u8], bytes: usize) -> Vec<u8> {
    let mut disk = vec![0u8; bytes];
    disk[4096..8192].copy_from_slice(sb);
    disk
}

/// The PV fixture as another VG's PV: `vg_id` and `pv_uuid` (lvm's dashed
/// forms, 38 characters) in the text, the PV's UUID in the label too. The
/// VG keeps its name: two such disks are two VGs of one name.
pub fn pv0_with_ids(vg_id: &str, pv_uuid: &str) -> Vec<u8> {
    let mut pv = pv0();
    let text = text(&pv).replacen("U0ojSR-jU3a-oCmR-tCJC-30YU-5fx9-vInEA0", vg_id, 1).replacen(
        "fcH57v-eDwP-K3gq-Dp0f-sThq-rCYs-EMiFVD",
        pv_uuid,
        1,
    );
    set_text(&mut pv, &text);
    set_label_uuid(&mut pv, &pv_uuid.replace('-', ""));
    pv
}

/// An MBR with these partitions: (first sector, sectors, type).
pub fn mbr(partitions: &[(u32, u32, u8)]) -> [u8; 512] {
    let mut sector = [0u8; 512];
    for (i, (start, sectors, kind)) in partitions.iter().enumerate().take(4) {
        let e = 446 + 16 * i;
        sector[e + 4] = *kind;
        put32(&mut sector, e + 8, *start);
        put32(&mut sector, e + 12, *sectors);
    }
    sector[510] = 0x55;
    sector[511] = 0xaa;
    sector
}
