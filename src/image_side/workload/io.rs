//! Timed read()/write() loops shared by the workloads: every syscall's latency
//! goes into a histogram and its bytes into the shared progress counters.

use crate::image_side::measure::clock::mono_ns;
use crate::image_side::measure::histogram::Histogram;
use crate::image_side::measure::progress::Progress;
use std::fs::File;
use std::io::{self, Read, Write};

/// Write all of `buf`, one timed write() per call (short writes continue).
pub fn write_all_timed(f: &mut File, buf: &[u8], hist: &mut Histogram, progress: &Progress) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let t0 = mono_ns();
        let r = f.write(&buf[done..]);
        hist.record(mono_ns() - t0);
        match r {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0")),
            Ok(n) => {
                done += n;
                progress.add_written(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fill `buf` with one timed read() per call; returns bytes read (less at EOF).
pub fn read_full_timed(f: &mut File, buf: &mut [u8], hist: &mut Histogram, progress: &Progress) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let t0 = mono_ns();
        let r = f.read(&mut buf[done..]);
        hist.record(mono_ns() - t0);
        match r {
            Ok(0) => break,
            Ok(n) => {
                done += n;
                progress.add_read(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Write `total` bytes from repeated `block`-sized chunks of `buf`.
pub fn write_stream(f: &mut File, buf: &[u8], total: u64, hist: &mut Histogram, progress: &Progress) -> io::Result<()> {
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        write_all_timed(f, &buf[..n], hist, progress)?;
        left -= n as u64;
    }
    Ok(())
}

/// fdatasync: on stable storage without forcing metadata-only updates.
pub fn fdatasync(f: &File) -> io::Result<()> {
    f.sync_data()
}
