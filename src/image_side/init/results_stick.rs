//! The results stick in a boot: mounted noatime, its journal opened (or,
//! only when allowed, created) for records written in place.

use super::devices::BlockDev;
use super::{Boot, RESULTS_MOUNT, load_filesystem, mount, say};
use crate::image_side::sink::serial::Serial;
use crate::image_side::sink::stick::Stick;
use serde_json::json;
use std::path::Path;

/// Mount the results stick and open its journal. `may_create`: make a
/// journal if the stick has none (never on the error path of a bad command
/// line, whose stick spec is only a guess).
pub(super) fn open_stick(results: &BlockDev, boot: &mut Boot, serial: &mut Option<Serial>, may_create: bool) {
    let fs = results.fs.as_ref().map(|f| f.fs.clone()).unwrap_or_else(|| "vfat".into());
    let root = Path::new(RESULTS_MOUNT);
    load_filesystem(boot, serial, &fs);
    // noatime: reading the journal's header must not rewrite a directory entry.
    let opened = mount::mount_dev(&results.node, root, &fs, "noatime").and_then(|()| {
        if !may_create && !root.join(crate::schema::journal::PATH).exists() {
            return Err(format!("no {} on it", crate::schema::journal::PATH));
        }
        Stick::open(root, &results.node, results.size_bytes)
            .map_err(|e| format!("{} on {}: {e}", crate::schema::journal::PATH, results.node.display()))
    });
    match opened {
        Ok(stick) => {
            let (at, of) = stick.position();
            say(
                serial,
                &format!(
                    "bootmark: results stick {} → {} ({} earlier entries, appending at block {at} of {of}{})",
                    results.name,
                    crate::schema::journal::PATH,
                    stick.found_entries,
                    if stick.created { "; journal created" } else { "" }
                ),
            );
            boot.facts.insert(
                "results".into(),
                json!({"device": results.name, "journal_block": at, "journal_blocks": of,
                       "earlier_entries": stick.found_entries, "stray_blocks": stick.found_stray_blocks,
                       "journal_created": stick.created}),
            );
            boot.stick = Some(stick);
        }
        Err(e) => {
            let _ = mount::unmount(root);
            say(
                serial,
                &format!(
                    "bootmark: results stick {} unusable ({e}); results go to the serial console only",
                    results.name
                ),
            );
            boot.facts.insert("results_error".into(), json!(e));
        }
    }
}
