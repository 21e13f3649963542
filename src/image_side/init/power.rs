//! The end of every boot: sync, then power off / reboot / halt. If the
//! kernel refuses, sleep forever: PID 1 exiting would panic the kernel.

use super::cmdline::After;

pub fn end_boot(after: After) -> ! {
    // SAFETY: sync(2) cannot fail.
    unsafe { libc::sync() };
    // Only the real PID 1 may do this; anywhere else (a test, a shell) it is refused.
    if std::process::id() == 1 {
        let mode = match after {
            After::Poweroff => nix::sys::reboot::RebootMode::RB_POWER_OFF,
            After::Reboot => nix::sys::reboot::RebootMode::RB_AUTOBOOT,
            After::Halt => nix::sys::reboot::RebootMode::RB_HALT_SYSTEM,
        };
        let err = nix::sys::reboot::reboot(mode).err();
        crate::note!("bootmark: {after:?} failed ({err:?}); halting here — it is safe to switch the machine off");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    crate::note!("bootmark: not PID 1, so not calling reboot(2); exiting");
    std::process::exit(0)
}
