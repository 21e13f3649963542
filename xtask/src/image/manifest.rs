//! manifest.json: every input and output of an image with its SHA-256, the
//! bootmark version, the plan and each entry's command line; and
//! `--verify`, which re-checks an image directory against it.

use crate::Result;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;

pub fn sha256_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Every regular file under `dir`, relative path → sha256 (sorted).
pub fn hash_tree(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "manifest.json") {
                out.push((p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(), sha256_file(&p)?));
            }
        }
    }
    out.sort();
    Ok(out)
}

pub fn outputs_json(dir: &Path) -> Result<Value> {
    Ok(Value::Object(hash_tree(dir)?.into_iter().map(|(k, v)| (k, json!(v))).collect()))
}

/// Re-hash every output listed in DIR/manifest.json; Err lists each mismatch.
pub fn verify(dir: &Path) -> Result<String> {
    let text = std::fs::read_to_string(dir.join("manifest.json"))
        .map_err(|e| format!("{}: no manifest.json ({e}): is this a bootmark image directory?", dir.display()))?;
    let manifest: Value = serde_json::from_str(&text).map_err(|e| format!("manifest.json is not valid JSON: {e}"))?;
    let outputs = manifest["outputs"].as_object().ok_or("manifest.json has no outputs")?;
    let mut problems = Vec::new();
    for (name, want) in outputs {
        match sha256_file(&dir.join(name)) {
            Ok(got) if Some(got.as_str()) == want.as_str() => {}
            Ok(_) => problems.push(format!("{name}: content changed (SHA-256 differs)")),
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    let on_disk = hash_tree(dir)?;
    for (name, _) in &on_disk {
        if !outputs.contains_key(name) {
            problems.push(format!("{name}: not in the manifest"));
        }
    }
    if problems.is_empty() {
        Ok(format!("{} files match manifest.json", outputs.len()))
    } else {
        Err(format!("{} problems:\n  {}", problems.len(), problems.join("\n  ")))
    }
}
