//! MBR and GPT partition tables, read from any source of bytes: a disk as
//! /init sees it (PARTUUIDs), a stick image the collector opens (where its
//! FAT partition starts). One parser for both sides, fuzzed; sectors may be
//! 512 or 4096 bytes (GPT's header sits at LBA 1 in the disk's own sectors).

use std::io;

/// A reader of `len` bytes at a byte offset; reading past the end is an error.
pub type ReadAt<'a> = &'a mut dyn FnMut(u64, usize) -> io::Result<Vec<u8>>;

/// One used MBR slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MbrPartition {
    /// 1 to 4.
    pub number: u32,
    /// The partition type byte (0x0c FAT32 LBA, 0x83 Linux, 0xee GPT protective…).
    pub kind: u8,
    pub start_sector: u64,
}

/// The disk signature and the used primary slots of a master boot record;
/// None without the 0x55AA mark.
pub fn mbr(sector0: &[u8]) -> Option<(u32, Vec<MbrPartition>)> {
    if sector0.len() < 512 || sector0[510] != 0x55 || sector0[511] != 0xAA {
        return None;
    }
    let signature = u32::from_le_bytes(sector0[440..444].try_into().unwrap());
    let parts = (0..4)
        .filter_map(|i| {
            let e = &sector0[446 + 16 * i..462 + 16 * i];
            (e[4] != 0).then(|| MbrPartition {
                number: i as u32 + 1,
                kind: e[4],
                start_sector: u32::from_le_bytes(e[8..12].try_into().unwrap()) as u64,
            })
        })
        .collect();
    Some((signature, parts))
}

/// PARTUUIDs as the kernel and blkid give them, as (partition number,
/// partuuid): MBR `<disk signature>-<nn>`; GPT the partition's unique GUID.
/// `sector` is the disk's logical sector size.
pub fn partition_uuids(read: ReadAt, sector: u64) -> io::Result<Vec<(u32, String)>> {
    let Some((signature, parts)) = mbr(&read(0, 512)?) else { return Ok(Vec::new()) };
    if parts.first().is_some_and(|p| p.kind == 0xEE) {
        return gpt_uuids(read, sector);
    }
    Ok(parts.iter().map(|p| (p.number, format!("{signature:08x}-{:02x}", p.number))).collect())
}

fn gpt_uuids(read: ReadAt, sector: u64) -> io::Result<Vec<(u32, String)>> {
    let hdr = read(sector, 92)?;
    if &hdr[0..8] != b"EFI PART" {
        return Ok(Vec::new());
    }
    let lba = u64::from_le_bytes(hdr[72..80].try_into().unwrap());
    let count = u32::from_le_bytes(hdr[80..84].try_into().unwrap()).min(256);
    let size = u32::from_le_bytes(hdr[84..88].try_into().unwrap()) as u64;
    if size < 32 {
        return Err(io::Error::other(format!("GPT entries of {size} bytes")));
    }
    let mut out = Vec::new();
    for i in 0..count as u64 {
        let at = lba.checked_mul(sector).and_then(|b| b.checked_add(i * size));
        let e = read(at.ok_or_else(|| io::Error::other("GPT entry offset overflows"))?, 32)?;
        if e[0..16].iter().all(|&b| b == 0) {
            continue;
        }
        out.push((i as u32 + 1, guid(&e[16..32])));
    }
    Ok(out)
}

/// A GUID as text: its first three fields are stored little-endian.
fn guid(g: &[u8]) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!(
        "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{}-{}",
        g[3],
        g[2],
        g[1],
        g[0],
        g[5],
        g[4],
        g[7],
        g[6],
        hex(&g[8..10]),
        hex(&g[10..16])
    )
}

/// A reader over bytes in memory (images, tests, the fuzzer).
pub fn slice_reader(data: &[u8]) -> impl FnMut(u64, usize) -> io::Result<Vec<u8>> + '_ {
    move |at, len| {
        let start = usize::try_from(at).map_err(|_| io::Error::other("offset too large"))?;
        data.get(start..start.saturating_add(len))
            .filter(|s| s.len() == len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "past the end"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mbr_disk(entries: &[(u8, u32)]) -> Vec<u8> {
        let mut d = vec![0u8; 4096 * 4];
        d[440..444].copy_from_slice(&0xdeadbeefu32.to_le_bytes());
        for (i, (kind, start)) in entries.iter().enumerate() {
            d[446 + 16 * i + 4] = *kind;
            d[446 + 16 * i + 8..446 + 16 * i + 12].copy_from_slice(&start.to_le_bytes());
        }
        d[510] = 0x55;
        d[511] = 0xAA;
        d
    }

    #[test]
    fn mbr_slots_and_partuuids() {
        let d = mbr_disk(&[(0x0c, 2048), (0x83, 4096)]);
        let (sig, parts) = mbr(&d).unwrap();
        assert_eq!(sig, 0xdeadbeef);
        assert_eq!(parts[1], MbrPartition { number: 2, kind: 0x83, start_sector: 4096 });
        let uuids = partition_uuids(&mut slice_reader(&d), 512).unwrap();
        assert_eq!(uuids, [(1, "deadbeef-01".to_string()), (2, "deadbeef-02".to_string())]);
        assert!(mbr(&[0u8; 512]).is_none(), "no 0x55AA: no table");
        assert!(mbr(&d[..100]).is_none(), "too short");
    }

    /// A GPT on a 4Kn disk: the header is at byte 4096, not 512.
    #[test]
    fn gpt_in_the_disks_own_sector_size() {
        let sector = 4096u64;
        let mut d = mbr_disk(&[(0xEE, 1)]);
        let h = sector as usize;
        d[h..h + 8].copy_from_slice(b"EFI PART");
        d[h + 72..h + 80].copy_from_slice(&2u64.to_le_bytes()); // entries at LBA 2
        d[h + 80..h + 84].copy_from_slice(&1u32.to_le_bytes());
        d[h + 84..h + 88].copy_from_slice(&128u32.to_le_bytes());
        let e = 2 * h;
        d[e] = 1; // a type GUID that is not zero
        d[e + 16..e + 32].copy_from_slice(&[
            0x52, 0x9f, 0x3c, 0x6a, 0x7e, 0x1b, 0x2a, 0x4d, 0x9c, 0x4f, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
        ]);
        let uuids = partition_uuids(&mut slice_reader(&d), sector).unwrap();
        assert_eq!(uuids, [(1, "6a3c9f52-1b7e-4d2a-9c4f-0123456789ab".to_string())]);
        assert!(partition_uuids(&mut slice_reader(&d), 512).unwrap().is_empty(), "no header at 512 on this disk");
    }

    #[test]
    fn a_table_pointing_past_the_end_is_an_error_not_a_panic() {
        let mut d = mbr_disk(&[(0xEE, 1)]);
        d[512..520].copy_from_slice(b"EFI PART");
        d[512 + 72..512 + 80].copy_from_slice(&u64::MAX.to_le_bytes());
        d[512 + 80..512 + 84].copy_from_slice(&4u32.to_le_bytes());
        d[512 + 84..512 + 88].copy_from_slice(&128u32.to_le_bytes());
        assert!(partition_uuids(&mut slice_reader(&d), 512).is_err());
        d[512 + 84..512 + 88].copy_from_slice(&0u32.to_le_bytes());
        assert!(partition_uuids(&mut slice_reader(&d), 512).is_err(), "zero-sized entries");
    }
}
