//! Loading the kernel modules the image builder put in the initramfs, in the
//! order it recorded, with the parameters it recorded.
//!
//! The list (`/etc/bootmark/modules.list`) has one module per line:
//! `path/inside/initramfs.ko [param=value …]`; `#` starts a comment.
//! finit_module (3.8+) is tried first, init_module (every kernel) after.

use std::path::{Path, PathBuf};

pub const LIST: &str = "/etc/bootmark/modules.list";

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Entry {
    pub path: PathBuf,
    pub params: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Loaded {
    pub module: String,
    /// "loaded", "already loaded", or the error.
    pub result: String,
}

pub fn parse_list(text: &str, root: &Path) -> Vec<Entry> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (path, params) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            Entry { path: root.join(path.trim_start_matches('/')), params: params.trim().to_string() }
        })
        .collect()
}

/// Load every module of the list; failures are reported, never fatal here.
pub fn load_all(list: &Path) -> Vec<Loaded> {
    let Ok(text) = std::fs::read_to_string(list) else { return Vec::new() };
    parse_list(&text, Path::new("/")).iter().map(load_one).collect()
}

fn load_one(e: &Entry) -> Loaded {
    let module = e.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let result = match load(&e.path, &e.params) {
        Ok(()) => "loaded".to_string(),
        Err(err) if err.raw_os_error() == Some(libc::EEXIST) => "already loaded".to_string(),
        Err(err) => err.to_string(),
    };
    Loaded { module, result }
}

fn load(path: &Path, params: &str) -> std::io::Result<()> {
    let cparams = std::ffi::CString::new(params).map_err(|_| std::io::Error::other("NUL in parameters"))?;
    let file = std::fs::File::open(path)?;
    // SAFETY: finit_module(fd, params, flags) with a valid fd and C string.
    let r =
        unsafe { libc::syscall(libc::SYS_finit_module, std::os::fd::AsRawFd::as_raw_fd(&file), cparams.as_ptr(), 0) };
    if r == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::ENOSYS) {
        return Err(err);
    }
    let image = std::fs::read(path)?;
    // SAFETY: init_module(image, len, params) with a buffer that outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_init_module, image.as_ptr(), image.len(), cparams.as_ptr()) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_format() {
        let list = "# storage\nlib/modules/6.1/kernel/drivers/ata/ahci.ko\n\n/lib/modules/6.1/usb-storage.ko delay_use=0 quirks=x # stick\n";
        let e = parse_list(list, Path::new("/"));
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].path, PathBuf::from("/lib/modules/6.1/kernel/drivers/ata/ahci.ko"));
        assert_eq!(e[0].params, "");
        assert_eq!(e[1].params, "delay_use=0 quirks=x");
    }

    #[test]
    fn a_module_that_is_not_there_is_reported_not_fatal() {
        let r = load_one(&Entry { path: PathBuf::from("/nonexistent/x.ko"), params: String::new() });
        assert_eq!(r.module, "x.ko");
        assert!(r.result.contains("No such file"), "{}", r.result);
    }
}
