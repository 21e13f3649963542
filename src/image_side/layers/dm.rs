//! Device-mapper's ioctl interface (`/dev/mapper/control`), version 4 —
//! the one every kernel since 2.6.0 speaks: create a device, load its
//! table, resume it (which makes the table live), read a table back,
//! remove the device. What libdevmapper does, without libdevmapper or udev.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// `struct dm_ioctl` (include/uapi/linux/dm-ioctl.h): 312 bytes.
const HEADER: usize = 312;
/// `struct dm_target_spec`: 40 bytes, then the parameters, NUL-ended.
const SPEC: usize = 40;
const NAME_LEN: usize = 128;
const UUID_LEN: usize = 129;

const READONLY_FLAG: u32 = 1 << 0;
const SUSPEND_FLAG: u32 = 1 << 1;
const STATUS_TABLE_FLAG: u32 = 1 << 4;
const BUFFER_FULL_FLAG: u32 = 1 << 8;

const VERSION: u32 = 0;
const DEV_CREATE: u32 = 3;
const DEV_REMOVE: u32 = 4;
const DEV_SUSPEND: u32 = 6;
const TABLE_LOAD: u32 = 9;
const TABLE_STATUS: u32 = 12;

/// One line of a device-mapper table: sectors `start..start+length` map
/// through target `kind` (linear, striped…) with `params`.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub start: u64,
    pub length: u64,
    pub kind: String,
    pub params: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {} {}", self.start, self.length, self.kind, self.params)
    }
}

/// `_IOWR(0xfd, nr, struct dm_ioctl)`.
fn request(nr: u32) -> u64 {
    (3u64 << 30) | ((HEADER as u64) << 16) | (0xfd << 8) | nr as u64
}

/// An open control device.
pub struct Control {
    file: File,
}

/// A request buffer: header, then `data`. Kept in u64s so the kernel sees
/// it 8-byte aligned, as its structures are.
struct Buffer {
    words: Vec<u64>,
}

impl Buffer {
    fn new(size: usize, name: &str, flags: u32) -> Buffer {
        let mut b = Buffer { words: vec![0u64; size.div_ceil(8)] };
        let len = b.words.len() * 8;
        // Interface version 4.0.0: the kernel takes any 4.x request as long as it knows the minor.
        b.put_u32(0, 4);
        b.put_u32(12, len as u32); // data_size: the whole buffer
        b.put_u32(16, HEADER as u32); // data_start
        b.put_u32(28, flags);
        let n = name.len().min(NAME_LEN - 1);
        b.bytes_mut()[48..48 + n].copy_from_slice(&name.as_bytes()[..n]);
        b
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: a u64 slice viewed as its bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.words.len() * 8) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.words.len() * 8) }
    }

    fn put_u32(&mut self, at: usize, v: u32) {
        self.bytes_mut()[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    }

    fn u32_at(&self, at: usize) -> u32 {
        u32::from_ne_bytes(self.bytes()[at..at + 4].try_into().unwrap())
    }

    fn u64_at(&self, at: usize) -> u64 {
        u64::from_ne_bytes(self.bytes()[at..at + 8].try_into().unwrap())
    }
}

/// The `(major, minor)` of a `huge_encode_dev` number, as dm_ioctl's `dev` carries it.
fn decode_dev(dev: u64) -> (u32, u32) {
    (((dev >> 8) & 0xfff) as u32, ((dev & 0xff) | ((dev >> 12) & 0xfff00)) as u32)
}

impl Control {
    pub fn open(path: &Path) -> Result<Control, String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("opening device-mapper's control device {}: {e}", path.display()))?;
        Ok(Control { file })
    }

    fn call(&self, nr: u32, what: &str, b: &mut Buffer) -> Result<(), String> {
        // SAFETY: the buffer is as large as its data_size says, and lives across the call.
        let r = unsafe { libc::ioctl(self.file.as_raw_fd(), request(nr) as _, b.words.as_mut_ptr()) };
        if r < 0 {
            return Err(format!("device-mapper: {what}: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// The kernel's interface version (`4.x.y`).
    pub fn version(&self) -> Result<(u32, u32, u32), String> {
        let mut b = Buffer::new(HEADER, "", 0);
        self.call(VERSION, "asking its version", &mut b)?;
        Ok((b.u32_at(0), b.u32_at(4), b.u32_at(8)))
    }

    /// Create an empty device; returns its (major, minor).
    pub fn create(&self, name: &str, uuid: &str) -> Result<(u32, u32), String> {
        let mut b = Buffer::new(HEADER, name, 0);
        let n = uuid.len().min(UUID_LEN - 1);
        b.bytes_mut()[176..176 + n].copy_from_slice(&uuid.as_bytes()[..n]);
        self.call(DEV_CREATE, &format!("creating {name}"), &mut b)?;
        Ok(decode_dev(b.u64_at(40)))
    }

    /// Load `targets` as `name`'s inactive table (read-only if asked).
    pub fn load(&self, name: &str, targets: &[Target], read_only: bool) -> Result<(), String> {
        let mut b = Buffer::new(table_size(targets), name, if read_only { READONLY_FLAG } else { 0 });
        put_targets(&mut b, targets, false);
        self.call(TABLE_LOAD, &format!("loading the table of {name}"), &mut b)
    }

    /// Make the loaded table live.
    pub fn resume(&self, name: &str) -> Result<(), String> {
        let mut b = Buffer::new(HEADER, name, 0);
        self.call(DEV_SUSPEND, &format!("resuming {name}"), &mut b)
    }

    /// Suspend `name`: its I/O drains, new I/O waits (before removing it).
    pub fn suspend(&self, name: &str) -> Result<(), String> {
        let mut b = Buffer::new(HEADER, name, SUSPEND_FLAG);
        self.call(DEV_SUSPEND, &format!("suspending {name}"), &mut b)
    }

    pub fn remove(&self, name: &str) -> Result<(), String> {
        let mut b = Buffer::new(HEADER, name, 0);
        self.call(DEV_REMOVE, &format!("removing {name}"), &mut b)
    }

    /// The live table of `name`.
    pub fn table(&self, name: &str) -> Result<Vec<Target>, String> {
        let mut size = 16 * 1024;
        loop {
            let mut b = Buffer::new(size, name, STATUS_TABLE_FLAG);
            self.call(TABLE_STATUS, &format!("reading the table of {name}"), &mut b)?;
            if b.u32_at(28) & BUFFER_FULL_FLAG != 0 && size < 1 << 20 {
                size *= 4;
                continue;
            }
            return Ok(parse_status(&b));
        }
    }
}

/// The bytes a table needs after the header: each spec, its parameters NUL-ended, 8-aligned.
fn table_size(targets: &[Target]) -> usize {
    HEADER + targets.iter().map(|t| SPEC + (t.params.len() + 1).next_multiple_of(8)).sum::<usize>()
}

/// Write `targets` after the header. A load's `next` is relative to each
/// spec; a status reply's to the data's start (`from_data_start`).
fn put_targets(b: &mut Buffer, targets: &[Target], from_data_start: bool) {
    b.put_u32(20, targets.len() as u32); // target_count
    let mut at = HEADER;
    for t in targets {
        let next = SPEC + (t.params.len() + 1).next_multiple_of(8);
        let bytes = b.bytes_mut();
        bytes[at..at + 8].copy_from_slice(&t.start.to_ne_bytes());
        bytes[at + 8..at + 16].copy_from_slice(&t.length.to_ne_bytes());
        let link = if from_data_start { at + next - HEADER } else { next };
        bytes[at + 20..at + 24].copy_from_slice(&(link as u32).to_ne_bytes());
        let kind = &t.kind.as_bytes()[..t.kind.len().min(15)];
        bytes[at + 24..at + 24 + kind.len()].copy_from_slice(kind);
        bytes[at + SPEC..at + SPEC + t.params.len()].copy_from_slice(t.params.as_bytes());
        at += next;
    }
}

/// The targets of a TABLE_STATUS reply. There `next` is relative to the data's start.
fn parse_status(b: &Buffer) -> Vec<Target> {
    let bytes = b.bytes();
    let start = b.u32_at(16) as usize;
    let count = b.u32_at(20) as usize;
    let mut out = Vec::new();
    let mut at = start;
    for _ in 0..count {
        if at + SPEC > bytes.len() {
            break;
        }
        let cstr = |from: usize, max: usize| {
            let s = &bytes[from..(from + max).min(bytes.len())];
            String::from_utf8_lossy(&s[..s.iter().position(|c| *c == 0).unwrap_or(s.len())]).into_owned()
        };
        out.push(Target {
            start: u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap()),
            length: u64::from_ne_bytes(bytes[at + 8..at + 16].try_into().unwrap()),
            kind: cstr(at + 24, 16),
            params: cstr(at + SPEC, bytes.len()),
        });
        at = start + u32::from_ne_bytes(bytes[at + 20..at + 24].try_into().unwrap()) as usize;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_match_the_kernel_header() {
        // DM_DEV_CREATE and DM_TABLE_LOAD as strace shows libdevmapper's calls.
        assert_eq!(request(DEV_CREATE), 0xc138fd03);
        assert_eq!(request(TABLE_LOAD), 0xc138fd09);
        assert_eq!(request(TABLE_STATUS), 0xc138fd0c);
    }

    #[test]
    fn device_numbers_decode_as_huge_encode_dev_made_them() {
        assert_eq!(decode_dev(0xfe00), (254, 0));
        // minor 300 on major 253: low byte in bits 0-7, the rest from bit 20.
        assert_eq!(decode_dev((253 << 8) | (300 & 0xff) | ((300 & !0xff) << 12)), (253, 300));
    }

    #[test]
    fn a_loaded_table_reads_back_through_the_status_layout() {
        // Laid out as a status reply does (`next` from the data's start), then read back.
        let t = [
            Target { start: 0, length: 8192, kind: "linear".into(), params: "8:16 2048".into() },
            Target { start: 8192, length: 16384, kind: "striped".into(), params: "2 128 8:16 10240 8:32 2048".into() },
        ];
        let mut b = Buffer::new(table_size(&t), "vg-lv", 0);
        put_targets(&mut b, &t, true);
        assert_eq!(parse_status(&b), t);
        assert_eq!(t[1].to_string(), "8192 16384 striped 2 128 8:16 10240 8:32 2048");
    }
}
