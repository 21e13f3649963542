//! Where an md array's data lies on its members, before the array is
//! assembled: an array sector to (member slot, sector in the member's data
//! area), as md computes it (drivers/md: raid0's zone 0, raid10's
//! `__raid10_find_phys`, raid5.c's `raid5_compute_sector`). With it /init
//! reads a filesystem's superblock or an LVM2 PV inside any striped array
//! without activating anything, and the e2e check verifies it against
//! arrays the real mdadm made.
//!
//! Layouts are md's numbers as the superblock stores them. What is not
//! here (raid5/6 layouts of DDF or of a raid5→6 conversion, raid0 beyond
//! its first zone, linear beyond its first member) is an error naming the
//! level and layout, so the caller can say which array it cannot look into.

/// raid4/5/6 parity layouts (md's `ALGORITHM_*`).
const LEFT_ASYMMETRIC: u32 = 0;
const RIGHT_ASYMMETRIC: u32 = 1;
const LEFT_SYMMETRIC: u32 = 2;
const RIGHT_SYMMETRIC: u32 = 3;
const PARITY_0: u32 = 4;
const PARITY_N: u32 = 5;

/// What md needs to place data: the superblock's level, layout, chunk and member count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// -1 linear, 0, 1, 4, 5, 6, 10.
    pub level: i32,
    pub layout: u32,
    /// In 512-byte sectors.
    pub chunk_sectors: u64,
    pub raid_disks: u32,
    /// raid0: the members' data size in sectors (zone 0 ends at the smallest); linear: the first's.
    pub member_sectors: u64,
}

impl Geometry {
    /// md's name for the level and layout, for messages ("raid5 left-symmetric").
    pub fn describe(&self) -> String {
        let parity = |l: u32| match l {
            LEFT_ASYMMETRIC => "left-asymmetric".to_string(),
            RIGHT_ASYMMETRIC => "right-asymmetric".to_string(),
            LEFT_SYMMETRIC => "left-symmetric".to_string(),
            RIGHT_SYMMETRIC => "right-symmetric".to_string(),
            PARITY_0 => "parity-first".to_string(),
            PARITY_N => "parity-last".to_string(),
            other => format!("layout {other}"),
        };
        match self.level {
            4..=6 => format!("raid{} {}", self.level, parity(self.layout)),
            10 => {
                let (near, far, offset) = raid10_copies(self.layout);
                let kind = if far == 1 {
                    format!("n{near}")
                } else if offset {
                    format!("o{far}")
                } else {
                    format!("f{far}")
                };
                format!("raid10 {kind}")
            }
            -1 => "linear".to_string(),
            level => format!("raid{level}"),
        }
    }

    /// The member slot holding array sector `sector`, and the sector in
    /// that member's data area.
    pub fn locate(&self, sector: u64) -> Result<(u32, u64), String> {
        let n = self.raid_disks as u64;
        let unsupported = || format!("{} is not a layout bootmark reads before assembling", self.describe());
        if n == 0 {
            return Err(format!("{} with no member disks", self.describe()));
        }
        if self.level == 1 {
            return Ok((0, sector));
        }
        if self.level == -1 {
            // Members one after another, each its own size: bootmark reads only the first.
            return if sector < self.member_sectors {
                Ok((0, sector))
            } else {
                Err(format!("{} beyond its first member", self.describe()))
            };
        }
        let c = self.chunk_sectors;
        if c == 0 {
            return Err(format!("{} with a chunk of 0", self.describe()));
        }
        let (chunk, offset) = (sector / c, sector % c);
        match self.level {
            0 => {
                // Zone 0 spans every member up to the smallest; bootmark reads no further.
                if self.member_sectors > 0 && sector >= self.member_sectors.saturating_mul(n) {
                    return Err(format!("{} beyond its first zone", self.describe()));
                }
                Ok(((chunk % n) as u32, (chunk / n) * c + offset))
            }
            10 => {
                let (near, far, far_offset) = raid10_copies(self.layout);
                if near == 0 || far == 0 {
                    return Err(unsupported());
                }
                // The first copy of each chunk, as __raid10_find_phys places it.
                let past = || format!("{} past any disk's end", self.describe());
                let virtual_chunk = chunk.checked_mul(near as u64).ok_or_else(past)?;
                let (dev, mut stripe) = (virtual_chunk % n, virtual_chunk / n);
                if far_offset {
                    stripe = stripe.checked_mul(far as u64).ok_or_else(past)?;
                }
                let sector = stripe.checked_mul(c).and_then(|s| s.checked_add(offset)).ok_or_else(past)?;
                Ok((dev as u32, sector))
            }
            4..=6 => {
                let parities = if self.level == 6 { 2 } else { 1 };
                if n <= parities {
                    return Err(format!("{} with {n} member disks", self.describe()));
                }
                let data_disks = n - parities;
                let (stripe, dd) = (chunk / data_disks, chunk % data_disks);
                let dev = match self.level {
                    4 => Some(dd),
                    5 => raid5_data_disk(self.layout, n, stripe, dd),
                    _ => raid6_data_disk(self.layout, n, stripe, dd),
                };
                let dev = dev.ok_or_else(unsupported)?;
                Ok((dev as u32, stripe * c + offset))
            }
            _ => Err(unsupported()),
        }
    }
}

/// raid10's layout word: near copies, far copies, and whether the far copies are "offset".
fn raid10_copies(layout: u32) -> (u32, u32, bool) {
    (layout & 0xff, (layout >> 8) & 0xff, layout & 0x10000 != 0)
}

/// The raid5 member holding data chunk `dd` of `stripe`.
fn raid5_data_disk(layout: u32, n: u64, stripe: u64, dd: u64) -> Option<u64> {
    let data_disks = n - 1;
    Some(match layout {
        LEFT_ASYMMETRIC => {
            let pd = data_disks - stripe % n;
            if dd >= pd { dd + 1 } else { dd }
        }
        RIGHT_ASYMMETRIC => {
            let pd = stripe % n;
            if dd >= pd { dd + 1 } else { dd }
        }
        LEFT_SYMMETRIC => (data_disks - stripe % n + 1 + dd) % n,
        RIGHT_SYMMETRIC => (stripe % n + 1 + dd) % n,
        PARITY_0 => dd + 1,
        PARITY_N => dd,
        _ => return None,
    })
}

/// The raid6 member holding data chunk `dd` of `stripe` (P and Q placed as md does).
fn raid6_data_disk(layout: u32, n: u64, stripe: u64, dd: u64) -> Option<u64> {
    let asymmetric = |pd: u64| {
        if pd == n - 1 {
            dd + 1 // Q wraps to the first member
        } else if dd >= pd {
            dd + 2
        } else {
            dd
        }
    };
    Some(match layout {
        LEFT_ASYMMETRIC => asymmetric(n - 1 - stripe % n),
        RIGHT_ASYMMETRIC => asymmetric(stripe % n),
        LEFT_SYMMETRIC => (n - 1 - stripe % n + 2 + dd) % n,
        RIGHT_SYMMETRIC => (stripe % n + 2 + dd) % n,
        PARITY_0 => dd + 2,
        PARITY_N => dd,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(level: i32, layout: u32, raid_disks: u32) -> Geometry {
        Geometry { level, layout, chunk_sectors: 8, raid_disks, member_sectors: 1 << 20 }
    }

    /// The member of each of the first `chunks` data chunks.
    fn members(g: Geometry, chunks: u64) -> Vec<u32> {
        (0..chunks).map(|c| g.locate(c * g.chunk_sectors + 3).unwrap().0).collect()
    }

    #[test]
    fn raid5_layouts_place_chunks_as_md_documents_them() {
        // mdadm's man page and md's tables, 3 disks: left-symmetric (the default)
        // D0 D1 P / D3 P D2 / P D4 D5: the data continues after the parity.
        assert_eq!(members(geometry(5, LEFT_SYMMETRIC, 3), 6), [0, 1, 2, 0, 1, 2]);
        // left-asymmetric: D0 D1 P / D2 P D3 / P D4 D5.
        assert_eq!(members(geometry(5, LEFT_ASYMMETRIC, 3), 6), [0, 1, 0, 2, 1, 2]);
        // right-asymmetric: P D0 D1 / D2 P D3 / D4 D5 P.
        assert_eq!(members(geometry(5, RIGHT_ASYMMETRIC, 3), 6), [1, 2, 0, 2, 0, 1]);
        // right-symmetric: P D0 D1 / D3 P D2 / D4 D5 P.
        assert_eq!(members(geometry(5, RIGHT_SYMMETRIC, 3), 6), [1, 2, 2, 0, 0, 1]);
        assert_eq!(members(geometry(5, PARITY_0, 3), 4), [1, 2, 1, 2]);
        assert_eq!(members(geometry(4, PARITY_N, 3), 4), [0, 1, 0, 1]);
        // The sector within the member: stripe × chunk + offset.
        assert_eq!(geometry(5, LEFT_SYMMETRIC, 3).locate(5 * 8 + 3).unwrap(), (2, 2 * 8 + 3));
    }

    #[test]
    fn raid6_left_symmetric_starts_its_data_after_p_and_q() {
        // 4 disks, left-symmetric: P on the last member and Q wrapped to the first: Q D0 D1 P.
        assert_eq!(members(geometry(6, LEFT_SYMMETRIC, 4), 4), [1, 2, 0, 1]);
        assert_eq!(members(geometry(6, LEFT_ASYMMETRIC, 4), 4), [1, 2, 0, 1]);
        assert_eq!(members(geometry(6, PARITY_N, 5), 3), [0, 1, 2]);
    }

    #[test]
    fn raid0_raid10_and_the_rest() {
        assert_eq!(members(geometry(0, 0, 3), 6), [0, 1, 2, 0, 1, 2]);
        assert!(geometry(0, 0, 3).locate(3 << 20).unwrap_err().contains("beyond its first zone"));
        // raid10 n2 on 4 disks: chunk 0 on 0/1, chunk 1 on 2/3; f2 and o2 place the first copy raid0-like.
        assert_eq!(members(geometry(10, 0x102, 4), 4), [0, 2, 0, 2]);
        assert_eq!(members(geometry(10, 0x201, 2), 4), [0, 1, 0, 1]);
        assert_eq!(geometry(10, 0x201, 2).locate(2 * 8).unwrap(), (0, 8));
        assert_eq!(geometry(10, 0x10201, 2).locate(2 * 8).unwrap(), (0, 16), "o2: each stripe then its copy");
        assert_eq!(geometry(1, 0, 2).locate(12345).unwrap(), (0, 12345));
        let e = geometry(6, 8, 4).locate(0).unwrap_err();
        assert_eq!(e, "raid6 layout 8 is not a layout bootmark reads before assembling");
        assert_eq!(geometry(10, 0x10201, 2).describe(), "raid10 o2");
    }
}
