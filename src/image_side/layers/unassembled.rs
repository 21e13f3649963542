//! An md array read through its members before it is assembled: each
//! piece of a read goes to the member md would put it on (`md_layout`),
//! at that member's data offset. /init reads a filesystem's superblock or
//! an LVM2 PV's label and metadata inside an array this way, so that a
//! `LABEL=` is found inside any array it can read without activating
//! anything. Only reads; a chunk on a member that is not here is an error.

use super::ReadAt;
use super::md::Member;
use super::md_layout::Geometry;
use std::io;

/// An array's members by slot, each a device and its data area's start in bytes.
pub struct Unassembled<'a> {
    geometry: Geometry,
    members: Vec<Option<(&'a dyn ReadAt, u64)>>,
}

impl<'a> Unassembled<'a> {
    /// The array `members` (their superblocks and devices) belong to, as
    /// their first member's superblock describes it.
    pub fn new(members: &[(&Member, &'a dyn ReadAt)]) -> Result<Unassembled<'a>, String> {
        let (first, _) = members.first().ok_or("an array with no member here")?;
        let geometry = first.geometry();
        if let Some((m, _)) = members.iter().find(|(m, _)| m.geometry() != geometry) {
            return Err(format!(
                "the md array {}: its members disagree on its geometry ({} and {})",
                first.uuid,
                geometry.describe(),
                m.geometry().describe()
            ));
        }
        let mut by_slot: Vec<Option<(&dyn ReadAt, u64)>> = vec![None; geometry.raid_disks as usize];
        for (m, dev) in members {
            // Two members claiming one slot (a replaced disk): the first given (the caller's newest) holds it.
            if let Some(slot) = m.slot.filter(|s| *s < geometry.raid_disks)
                && by_slot[slot as usize].is_none()
            {
                let start = m.data_offset.checked_mul(512).ok_or("a data offset past any disk")?;
                by_slot[slot as usize] = Some((*dev, start));
            }
        }
        Ok(Unassembled { geometry, members: by_slot })
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// How many bytes from `pos` lie on one member, in one run.
    fn run_from(&self, pos: u64) -> u64 {
        let g = &self.geometry;
        let unit = match g.level {
            1 => return u64::MAX,
            -1 => g.member_sectors.max(1).saturating_mul(512),
            _ => g.chunk_sectors.max(1).saturating_mul(512),
        };
        unit - pos % unit
    }
}

impl ReadAt for Unassembled<'_> {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        let (slot, sector) = self.geometry.locate(pos / 512).map_err(io::Error::other)?;
        let len = (buf.len() as u64).min(self.run_from(pos)) as usize;
        // A mirror's data is on every member: any one here will do.
        let member = match self.geometry.level {
            1 => self.members.iter().flatten().next(),
            _ => self.members.get(slot as usize).and_then(Option::as_ref),
        };
        let &(dev, start) =
            member.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("member slot {slot} is not here")))?;
        let at = sector
            .checked_mul(512)
            .and_then(|b| b.checked_add(start))
            .and_then(|b| b.checked_add(pos % 512))
            .ok_or_else(|| io::Error::other("an offset past the end of any disk"))?;
        dev.read_at(&mut buf[..len], at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image_side::layers::crafted::{md_disk, md_sb1, set_sb1_u32};
    use crate::image_side::layers::md::read_member;

    /// Three members of a raid5 (left-symmetric, 4 KiB chunks) whose data
    /// chunks hold their own array offset, laid out by the layout's
    /// arithmetic; parity chunks are 0xff.
    #[test]
    fn a_read_across_chunks_gathers_them_from_each_member() {
        const CHUNK: usize = 4096;
        let members: Vec<(Member, Vec<u8>)> = (0..3u16)
            .map(|slot| {
                let mut sb = md_sb1(0x77, 3, slot, 20, u64::MAX, &[0, 1, 2]);
                set_sb1_u32(&mut sb, 72, 5);
                set_sb1_u32(&mut sb, 76, 2);
                set_sb1_u32(&mut sb, 88, (CHUNK / 512) as u32);
                let disk = md_disk(&sb, 2 << 20);
                let m = read_member(&disk, disk.len() as u64).unwrap().unwrap();
                (m, disk)
            })
            .collect();
        let mut disks: Vec<Vec<u8>> = members.iter().map(|(_, d)| d.clone()).collect();
        let g = members[0].0.geometry();
        for chunk in 0..12u64 {
            let (slot, sector) = g.locate(chunk * (CHUNK as u64 / 512)).unwrap();
            let at = (1 << 20) + sector as usize * 512;
            for word in 0..CHUNK / 8 {
                let value = chunk * CHUNK as u64 + word as u64 * 8;
                disks[slot as usize][at + word * 8..at + word * 8 + 8].copy_from_slice(&value.to_le_bytes());
            }
        }
        let devs: Vec<(&Member, &dyn ReadAt)> =
            members.iter().zip(&disks).map(|((m, _), d)| (m, d as &dyn ReadAt)).collect();
        let array = Unassembled::new(&devs).unwrap();
        // 40 KiB from the middle of chunk 1: ten chunks on three members, in order.
        let mut buf = vec![0u8; 10 * CHUNK];
        array.read_exact_at(&mut buf, CHUNK as u64 + 512).unwrap();
        for (i, word) in buf.chunks_exact(8).enumerate() {
            assert_eq!(u64::from_le_bytes(word.try_into().unwrap()), CHUNK as u64 + 512 + i as u64 * 8);
        }
        // Without the member in slot 2, a read that needs it says so; one that does not still reads.
        let two = Unassembled::new(&devs[..2]).unwrap();
        assert!(two.read_exact_at(&mut [0u8; 16], 0).is_ok());
        let e = two.read_exact_at(&mut buf, 0).unwrap_err();
        assert!(e.to_string().contains("member slot 2 is not here"), "{e}");
    }
}
