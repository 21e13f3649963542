//! Filesystem chores that must work on 2.6.9: no *at syscalls, so no
//! `fs::remove_dir_all` and no `DirEntry::metadata` (both use fstatat/unlinkat).

use std::io;
use std::path::Path;

/// Remove a directory tree with path-based calls only (lstat, unlink, rmdir).
/// Symlinks are removed, never followed.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return std::fs::remove_file(path);
    }
    for entry in std::fs::read_dir(path)? {
        remove_tree(&entry?.path())?;
    }
    std::fs::remove_dir(path)
}

/// Bytes available to an unprivileged writer on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let st = nix::sys::statvfs::statvfs(path).map_err(io::Error::from)?;
    Ok(st.blocks_available() as u64 * st.fragment_size() as u64)
}

/// Read a small text file (from /proc or /sys), trimmed; None when absent or
/// unreadable: on an old kernel a missing file means "not available here".
/// At most `max` bytes of a file (a /proc file, or anything whose size
/// PID 1 must not trust).
pub fn read_capped(path: impl AsRef<Path>, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    std::fs::File::open(path).ok()?.take(max).read_to_end(&mut data).ok()?;
    Some(data)
}

pub fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Where `path` is, or will be once made: its links resolved as far as it
/// exists, the rest (which cannot hold links yet) with `.` and `..` taken
/// as written. Two spellings of one place, `serial.log` and
/// a detour through a directory and back up, or `link/serial.log`, compare equal before either
/// file exists.
pub fn resolved(path: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while std::fs::canonicalize(existing).is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.components().next_back()) else {
            return absolute;
        };
        rest.push(name);
        existing = parent;
    }
    let mut real = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    for part in rest.into_iter().rev() {
        match part {
            Component::ParentDir => {
                real.pop();
            }
            Component::CurDir => {}
            other => real.push(other),
        }
    }
    real
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_nested_trees_and_does_not_follow_symlinks() {
        let base = std::env::temp_dir().join(format!("bootmark-rt-{}", std::process::id()));
        let outside = base.join("outside");
        let tree = base.join("tree");
        std::fs::create_dir_all(tree.join("a/b/c")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"x").unwrap();
        std::fs::write(tree.join("a/b/c/f"), b"y").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a/link")).unwrap();
        remove_tree(&tree).unwrap();
        assert!(!tree.exists());
        assert!(outside.join("keep").exists(), "the symlink's target survives");
        remove_tree(&tree).unwrap(); // already gone is fine
        remove_tree(&base).unwrap();
    }
}
