//! One lab, one runner: `lab run` and `bisect` hold an exclusive lock on
//! the lab's state directory while they boot its servers. Two at once
//! would share the state file (the last writer wins), each server's power
//! pid file and its console: a step's records counted twice, its log
//! holding another session's boots. The lock is `flock` on
//! `STATE/.lock`, released by the kernel when the process ends however it
//! ends, so a crashed session never leaves the lab locked; the file holds
//! the holder's pid, for the message.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// Held while it lives.
pub struct Lock {
    _file: std::fs::File,
}

/// Lock the lab whose state is in `state_dir` (made if missing), or say
/// who holds it.
pub fn lock(state_dir: &Path) -> Result<Lock, String> {
    std::fs::create_dir_all(state_dir).map_err(|e| format!("cannot create {}: {e}", state_dir.display()))?;
    let path = state_dir.join(".lock");
    let mut file = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on an fd this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let holder = holder.trim();
        let who = if holder.is_empty() { "another bootmark".to_string() } else { format!("bootmark (pid {holder})") };
        return Err(format!(
            "{who} is running this lab now (its state: {}): one lab, one runner; wait for it to end, or stop it",
            state_dir.display()
        ));
    }
    let pid = std::process::id();
    let written = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| writeln!(file, "{pid}"));
    written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Lock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_runner_is_refused_naming_the_first_and_the_lock_goes_with_it() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-lock-{}", std::process::id()));
        let first = lock(&dir).unwrap();
        // flock locks belong to the open file: a second open, even in this process, is refused.
        let e = lock(&dir).err().unwrap();
        assert!(e.contains(&format!("bootmark (pid {}) is running this lab now", std::process::id())), "{e}");
        drop(first);
        assert!(lock(&dir).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
