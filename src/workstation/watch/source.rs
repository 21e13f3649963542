//! Where a console comes from: a serial device (raw mode, restored at the
//! end), standard input (`ipmitool … sol activate | bootmark watch -`), a
//! file another tool keeps appending to (followed across truncation and
//! rotation, like `tail -F`), or a TCP console server (`tcp:HOST:PORT`:
//! ser2net, conserver, QEMU's `-serial tcp:`).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub enum Source {
    /// Standard input, a TCP stream, or a serial device: ends at EOF.
    Stream { reader: Box<dyn ReadFd>, name: String, _raw: Option<RawMode> },
    /// A growing file: never ends by itself. `seen_tail`: the last bytes
    /// read, to tell a file rewritten between two polls from one that grew.
    Follow { path: PathBuf, file: File, offset: u64, inode: u64, seen_tail: Vec<u8> },
}

/// What a read brought.
pub enum Chunk {
    Data(Vec<u8>),
    /// Nothing within the wait.
    Quiet,
    /// The stream ended (EOF on stdin, a closed connection).
    End,
}

/// A reader whose descriptor can be polled.
pub trait ReadFd: Read {
    fn fd(&self) -> BorrowedFd<'_>;
}
impl ReadFd for io::Stdin {
    fn fd(&self) -> BorrowedFd<'_> {
        self.as_fd()
    }
}
impl ReadFd for File {
    fn fd(&self) -> BorrowedFd<'_> {
        self.as_fd()
    }
}
impl ReadFd for std::process::ChildStdout {
    fn fd(&self) -> BorrowedFd<'_> {
        self.as_fd()
    }
}
impl ReadFd for std::net::TcpStream {
    fn fd(&self) -> BorrowedFd<'_> {
        self.as_fd()
    }
}

/// A serial line's settings before watching, put back when it ends.
pub struct RawMode {
    fd: File,
    saved: nix::sys::termios::Termios,
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = nix::sys::termios::tcsetattr(&self.fd, nix::sys::termios::SetArg::TCSANOW, &self.saved);
    }
}

impl Source {
    /// Open SOURCE as the user gave it.
    pub fn open(spec: &str, baud: u32) -> Result<Source, String> {
        if spec == "-" {
            return Ok(Source::Stream { reader: Box::new(io::stdin()), name: "standard input".into(), _raw: None });
        }
        if let Some(addr) = spec.strip_prefix("tcp:") {
            let stream = std::net::TcpStream::connect(addr)
                .map_err(|e| format!("{spec}: cannot connect ({e}); is the console server listening there?"))?;
            return Ok(Source::Stream { reader: Box::new(stream), name: spec.into(), _raw: None });
        }
        let path = Path::new(spec);
        let meta = std::fs::metadata(path).map_err(|e| {
            format!(
                "{spec}: {e}; give a serial device (/dev/ttyUSB0), a log file, - for standard input, or tcp:HOST:PORT"
            )
        })?;
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_char_device() {
            let file = File::options().read(true).write(true).open(path).map_err(|e| format!("{spec}: {e}"))?;
            let raw = raw_mode(&file, baud).map_err(|e| format!("{spec}: cannot set {baud} baud raw mode: {e}"))?;
            return Ok(Source::Stream { reader: Box::new(file), name: spec.into(), _raw: Some(raw) });
        }
        if !meta.is_file() {
            return Err(format!("{spec}: not a serial device, a regular file, - or tcp:HOST:PORT"));
        }
        let file = File::open(path).map_err(|e| format!("{spec}: {e}"))?;
        Ok(Source::Follow { path: path.to_path_buf(), file, offset: 0, inode: meta.ino(), seen_tail: Vec::new() })
    }

    /// What a program prints (`ipmitool … sol activate`): ends when it exits.
    pub fn program(stdout: std::process::ChildStdout, name: &str) -> Source {
        Source::Stream { reader: Box::new(stdout), name: name.into(), _raw: None }
    }

    /// A followed file: start from its end, past what earlier boots wrote
    /// (a console server's log of this server). Other sources are live anyway.
    pub fn skip_what_is_there(&mut self) -> io::Result<()> {
        if let Source::Follow { file, offset, seen_tail, .. } = self {
            *offset = file.seek(SeekFrom::End(0))?;
            seen_tail.clear();
        }
        Ok(())
    }

    /// The file being followed, if it is one.
    pub fn followed_path(&self) -> Option<PathBuf> {
        match self {
            Source::Follow { path, .. } => Some(path.clone()),
            Source::Stream { .. } => None,
        }
    }

    pub fn name(&self) -> String {
        match self {
            Source::Stream { name, .. } => name.clone(),
            Source::Follow { path, .. } => path.display().to_string(),
        }
    }

    /// Whatever arrives within `wait_ms`.
    pub fn read(&mut self, wait_ms: u16) -> io::Result<Chunk> {
        match self {
            Source::Stream { reader, .. } => read_stream(reader.as_mut(), wait_ms),
            Source::Follow { path, file, offset, inode, seen_tail } => {
                // Truncated and written again past where we were (the next
                // boot's log): the bytes before our offset are not the ones
                // we read. Start again from the beginning.
                if rewritten(file, *offset, seen_tail) {
                    file.seek(SeekFrom::Start(0))?;
                    *offset = 0;
                    seen_tail.clear();
                }
                let mut buf = vec![0u8; 64 << 10];
                let n = file.read(&mut buf)?;
                if n > 0 {
                    *offset += n as u64;
                    buf.truncate(n);
                    let keep = buf.len().min(TAIL);
                    seen_tail.extend_from_slice(&buf[buf.len() - keep..]);
                    let excess = seen_tail.len().saturating_sub(TAIL);
                    seen_tail.drain(..excess);
                    return Ok(Chunk::Data(buf));
                }
                // At the end: truncated (copytruncate) or replaced (rotation)?
                match std::fs::metadata(&*path) {
                    Ok(m) if m.ino() != *inode => {
                        *file = File::open(&*path)?;
                        (*offset, *inode) = (0, m.ino());
                        seen_tail.clear();
                    }
                    Ok(m) if m.len() < *offset => {
                        file.seek(SeekFrom::Start(0))?;
                        *offset = 0;
                        seen_tail.clear();
                    }
                    _ => std::thread::sleep(std::time::Duration::from_millis(u64::from(wait_ms).min(200))),
                }
                Ok(Chunk::Quiet)
            }
        }
    }
}

/// How many of the last bytes read a followed file is checked against.
const TAIL: usize = 64;

/// Do the bytes just before `offset` differ from the ones read there?
fn rewritten(file: &File, offset: u64, seen_tail: &[u8]) -> bool {
    use std::os::unix::fs::FileExt;
    if seen_tail.is_empty() {
        return false;
    }
    let Some(at) = offset.checked_sub(seen_tail.len() as u64) else { return true };
    let mut now = vec![0u8; seen_tail.len()];
    match file.read_exact_at(&mut now, at) {
        Ok(()) => now != seen_tail,
        Err(_) => true, // shorter than before: truncated
    }
}

fn read_stream(reader: &mut dyn ReadFd, wait_ms: u16) -> io::Result<Chunk> {
    let mut pfd = libc::pollfd { fd: reader.fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, libc::c_int::from(wait_ms)) };
    if n <= 0 {
        return Ok(Chunk::Quiet);
    }
    let mut buf = vec![0u8; 64 << 10];
    match reader.read(&mut buf) {
        Ok(0) => Ok(Chunk::End),
        Ok(n) => {
            buf.truncate(n);
            Ok(Chunk::Data(buf))
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Chunk::Quiet),
        // A serial line whose other end went away (a pty closed) ends too.
        Err(e) if e.raw_os_error() == Some(libc::EIO) => Ok(Chunk::End),
        Err(e) => Err(e),
    }
}

/// Raw 8N1 at `baud`, no echo, no line discipline.
fn raw_mode(file: &File, baud: u32) -> nix::Result<RawMode> {
    use nix::sys::termios::{self, BaudRate, SetArg};
    let saved = termios::tcgetattr(file)?;
    let mut t = saved.clone();
    termios::cfmakeraw(&mut t);
    let rate = match baud {
        9600 => BaudRate::B9600,
        19200 => BaudRate::B19200,
        38400 => BaudRate::B38400,
        57600 => BaudRate::B57600,
        _ => BaudRate::B115200,
    };
    termios::cfsetspeed(&mut t, rate)?;
    termios::tcsetattr(file, SetArg::TCSANOW, &t)?;
    Ok(RawMode { fd: file.try_clone().map_err(|_| nix::errno::Errno::EBADF)?, saved })
}
