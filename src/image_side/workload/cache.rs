//! Making a file's page cache cold, and checking that it is.
//!
//! A "cold read" is only evidence if the pages really were not resident, so
//! every method is followed by a mincore() count of resident pages.
//! Methods, in the order `auto` tries them:
//! - `drop_caches`: sync, then `3` to /proc/sys/vm/drop_caches (2.6.16+, root);
//! - `fadvise`: fsync the file, then POSIX_FADV_DONTNEED over it (any 2.6 kernel);
//! - fresh boot / remount are done by /init before the plan starts.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ColdMethod {
    #[default]
    Auto,
    DropCaches,
    Fadvise,
    /// Do not try: a deliberately warm read.
    None,
}

/// What was done and what mincore saw afterwards.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CacheState {
    pub method: String,
    pub resident_pages_before: u64,
    pub total_pages: u64,
    pub cold: bool,
}

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

fn drop_caches() -> io::Result<()> {
    // SAFETY: sync(2) cannot fail.
    unsafe { libc::sync() };
    std::fs::write(DROP_CACHES, "3\n")
}

fn fadvise_dontneed(f: &File) -> io::Result<()> {
    f.sync_all()?;
    // SAFETY: valid fd; offset 0 length 0 means the whole file.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Try to evict `path` from the page cache; report how and whether it worked.
pub fn make_cold(path: &Path, method: ColdMethod) -> io::Result<CacheState> {
    let f = File::open(path)?;
    let used = match method {
        ColdMethod::None => "none",
        ColdMethod::DropCaches => {
            drop_caches()?;
            "drop_caches"
        }
        ColdMethod::Fadvise => {
            fadvise_dontneed(&f)?;
            "fadvise"
        }
        ColdMethod::Auto => {
            if drop_caches().is_ok() {
                "drop_caches"
            } else {
                fadvise_dontneed(&f)?;
                "fadvise"
            }
        }
    };
    let (resident, total) = resident_pages(&f)?;
    Ok(CacheState { method: used.into(), resident_pages_before: resident, total_pages: total, cold: resident == 0 })
}

/// (resident, total) pages of a file, by mincore() over 64 MiB windows (so a
/// large file fits a 32-bit address space).
pub fn resident_pages(f: &File) -> io::Result<(u64, u64)> {
    let len = f.metadata()?.len();
    // SAFETY: sysconf is always safe.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let window = 64u64 << 20;
    let mut resident = 0;
    let mut offset = 0;
    while offset < len {
        let n = (len - offset).min(window);
        resident += resident_in_window(f, offset, n, page)?;
        offset += n;
    }
    Ok((resident, len.div_ceil(page)))
}

fn resident_in_window(f: &File, offset: u64, len: u64, page: u64) -> io::Result<u64> {
    // SAFETY: read-only shared mapping of a range inside the file; mincore
    // writes one byte per page into a vector of exactly that many bytes; the
    // mapping is removed before returning.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            offset as libc::off_t,
        );
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut vec = vec![0u8; len.div_ceil(page) as usize];
        let r = libc::mincore(addr, len as usize, vec.as_mut_ptr());
        let err = io::Error::last_os_error();
        libc::munmap(addr, len as usize);
        if r != 0 {
            return Err(err);
        }
        Ok(vec.iter().filter(|b| **b & 1 == 1).count() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn mincore_sees_a_freshly_written_file_as_resident_and_fadvise_evicts_it() {
        // target/ is on a disk filesystem; tmpfs pages cannot be evicted.
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/test-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        drop(f);
        let f = File::open(&path).unwrap();
        let (resident, total) = resident_pages(&f).unwrap();
        assert_eq!(total, (1 << 20) / 4096);
        assert_eq!(resident, total, "a file just written is in the page cache");
        let state = make_cold(&path, ColdMethod::Fadvise).unwrap();
        assert_eq!(state.method, "fadvise");
        assert_eq!(state.resident_pages_before, 0, "{state:?}");
        assert!(state.cold);
        let mut buf = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut buf).unwrap();
        assert_eq!(resident_pages(&File::open(&path).unwrap()).unwrap().0, total);
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_dir(&dir).unwrap();
    }
}
