//! Storage as installed: the layers a server's filesystem may sit on —
//! LVM2 logical volumes (`lvm`, `lvm_text`) mapped through device-mapper
//! (`dm`), md RAID arrays (`md`) — read from the disks and set up from
//! the static /init without mdadm, lvm or udev, and the stack a record
//! describes (`stack`). `md_layout` places an array's data on its members
//! and `unassembled` reads an array through them before it is assembled.
//!
//! Everything here reads metadata and never writes it; what /init may
//! activate, and read-write, is decided in `init::assembly`.

#[cfg(any(test, feature = "workstation"))]
pub mod crafted;
pub mod dm;
pub mod lvm;
pub mod lvm_text;
pub mod md;
pub mod md_layout;
pub mod stack;
pub mod unassembled;

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Little-endian fields of on-disk metadata (both md and LVM2 write little-endian).
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Positioned reads from a device, a window into one, or an md array
/// before it is assembled (`unassembled`).
pub trait ReadAt {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize>;

    fn read_exact_at(&self, mut buf: &mut [u8], mut pos: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, pos)? {
                0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the device ends here")),
                n => {
                    buf = &mut buf[n..];
                    pos += n as u64;
                }
            }
        }
        Ok(())
    }
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, pos)
    }
}

/// Bytes in memory as a device: the fuzz targets and tests hand the
/// readers crafted disks this way.
impl ReadAt for &[u8] {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        let start = usize::try_from(pos).unwrap_or(usize::MAX).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

impl ReadAt for Vec<u8> {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.as_slice().read_at(buf, pos)
    }
}

/// The part of a device from `offset` bytes on: an md member's data area,
/// a PV's extents.
pub struct Window<'a> {
    pub dev: &'a dyn ReadAt,
    pub offset: u64,
}

impl ReadAt for Window<'_> {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        // Both numbers come from a disk's metadata: past the end of any device is an error, not a wrap.
        let at = pos.checked_add(self.offset).ok_or_else(|| io::Error::other("an offset past the end of any disk"))?;
        self.dev.read_at(buf, at)
    }
}
