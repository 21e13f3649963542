//! Serial framing: records as lines that survive a noisy serial line and
//! kernel messages printed in the middle of our output.
//!
//! A record (its JSON bytes) becomes one header line and N data lines:
//!
//! ```text
//! @BM1 H <run_id> <seq> <chunks> <bytes> <sha256-hex> *<crc32-hex>
//! @BM1 D <run_id> <seq> <index>/<chunks> <base64-payload> *<crc32-hex>
//! ```
//!
//! The CRC-32 covers the line up to (not including) ` *`; it lets a reader
//! drop a damaged line and keep a good copy of the same chunk seen elsewhere.
//! The SHA-256 covers the whole record: a record is accepted only if its
//! reassembled bytes match it. Lines may be preceded by anything (a reader
//! searches for `@BM1 `), so a partial line after printk noise is harmless.
//! Full description for other tools: docs/serial-framing.md.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub const MAGIC: &str = "@BM1";
/// Base64 characters per data line: short enough to rarely meet printk output.
pub const CHUNK_CHARS: usize = 96;

/// The framed lines of one record (without line terminators).
pub fn encode(run_id: &str, seq: u32, record: &[u8]) -> Vec<String> {
    let b64 = base64_encode(record);
    let chunks: Vec<&str> = b64.as_bytes().chunks(CHUNK_CHARS).map(|c| std::str::from_utf8(c).unwrap()).collect();
    let n = chunks.len().max(1);
    let mut lines = Vec::with_capacity(n + 1);
    lines.push(seal(format!("{MAGIC} H {run_id} {seq} {n} {} {}", record.len(), sha256_hex(record))));
    for (i, c) in chunks.iter().enumerate() {
        lines.push(seal(format!("{MAGIC} D {run_id} {seq} {i}/{n} {c}")));
    }
    if chunks.is_empty() {
        lines.push(seal(format!("{MAGIC} D {run_id} {seq} 0/1 ")));
    }
    lines
}

fn seal(body: String) -> String {
    let crc = crc32(body.as_bytes());
    format!("{body} *{crc:08x}")
}

pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

/// One framed line as read back, after its CRC was checked.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    Header { run_id: String, seq: u32, chunks: u32, bytes: u64, sha256: String },
    Data { run_id: String, seq: u32, index: u32, chunks: u32, payload: String },
}

/// Why a line that looked like ours was not usable.
#[derive(Clone, Debug, PartialEq)]
pub enum LineError {
    BadChecksum,
    Malformed,
}

/// Find and check a framed line anywhere in `text` (one line of a log).
/// None: no `@BM1 ` in it at all. A line may follow any bytes, even a
/// fragment of another framed line whose end a UART overrun ate: the
/// occurrence that verifies is taken, else the first one's error.
pub fn parse_line(text: &str) -> Option<Result<Line, LineError>> {
    let mut first_error = None;
    for (start, _) in text.match_indices("@BM1 ") {
        // MAGIC + ' ', without allocating per line
        match check_from(&text[start..]) {
            Ok(line) => return Some(Ok(line)),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    first_error.map(Err)
}

/// The record (run id, seq) a framed line that failed its checks says it
/// belongs to, when its first fields can still be read: a hint only (its
/// CRC did not vouch for them), to tell a damaged copy of a record that
/// arrived intact elsewhere from a loss.
pub fn claimed_record(text: &str) -> Option<(String, u32)> {
    let start = text.find("@BM1 ")?;
    let mut f = text[start..].split(' ').skip(1);
    let kind = f.next()?;
    let (run_id, seq) = (f.next()?, f.next()?.parse().ok()?);
    let plausible = |r: &str| !r.is_empty() && r.len() <= 64 && r.bytes().all(|b| b.is_ascii_graphic());
    (matches!(kind, "H" | "D") && plausible(run_id)).then(|| (run_id.to_string(), seq))
}

/// Check the framed line that starts `text`.
fn check_from(text: &str) -> Result<Line, LineError> {
    let line = text.trim_end_matches(['\r', '\n']);
    let Some((body, crc)) = line.rsplit_once(" *") else { return Err(LineError::Malformed) };
    let Ok(crc) = u32::from_str_radix(crc.trim(), 16) else { return Err(LineError::Malformed) };
    if crc32(body.as_bytes()) != crc {
        return Err(LineError::BadChecksum);
    }
    parse_body(body).ok_or(LineError::Malformed)
}

fn parse_body(body: &str) -> Option<Line> {
    let f: Vec<&str> = body.split(' ').collect();
    match (f.get(1)?, f.len()) {
        (&"H", 7) => Some(Line::Header {
            run_id: f[2].to_string(),
            seq: f[3].parse().ok()?,
            chunks: f[4].parse().ok()?,
            bytes: f[5].parse().ok()?,
            sha256: f[6].to_string(),
        }),
        (&"D", 6) => {
            let (i, n) = f[4].split_once('/')?;
            let (index, chunks): (u32, u32) = (i.parse().ok()?, n.parse().ok()?);
            if index >= chunks {
                return None;
            }
            Some(Line::Data {
                run_id: f[2].to_string(),
                seq: f[3].parse().ok()?,
                index,
                chunks,
                payload: f[5].to_string(),
            })
        }
        _ => None,
    }
}

/// Reassembles records from checked lines; a record is complete when its
/// header and every chunk are present and the SHA-256 matches.
#[derive(Default)]
pub struct Assembler {
    partial: BTreeMap<(String, u32), Partial>,
    /// Records already delivered, with their SHA-256: later copies of their
    /// lines (a repeated print, the rest of a second copy) are ignored.
    done: BTreeMap<(String, u32), String>,
}

#[derive(Default)]
struct Partial {
    header: Option<(u32, u64, String)>,
    chunks: BTreeMap<u32, String>,
}

/// The outcome of feeding a line.
#[derive(Debug, PartialEq)]
pub enum Fed {
    Incomplete,
    /// A record whose checksum matched: (run_id, seq, bytes).
    Record(String, u32, Vec<u8>),
    /// All parts present but the record failed its SHA-256.
    Corrupt(String, u32),
    /// The header of a record delivered already, with the same SHA-256:
    /// the same record printed again (a repeated boot in one capture).
    Again(String, u32),
}

impl Assembler {
    pub fn feed(&mut self, line: Line) -> Fed {
        let key = match &line {
            Line::Header { run_id, seq, .. } | Line::Data { run_id, seq, .. } => (run_id.clone(), *seq),
        };
        if let Some(sha) = self.done.get(&key) {
            match &line {
                Line::Header { sha256, .. } if sha256 != sha => {
                    self.done.remove(&key); // a different record under the same key: assemble it too
                }
                Line::Header { .. } => return Fed::Again(key.0, key.1),
                Line::Data { .. } => return Fed::Incomplete,
            }
        }
        let p = self.partial.entry(key.clone()).or_default();
        match line {
            Line::Header { chunks, bytes, sha256, .. } => p.header = Some((chunks, bytes, sha256)),
            Line::Data { index, payload, .. } => {
                p.chunks.insert(index, payload);
            }
        }
        let Some((n, _, _)) = &p.header else { return Fed::Incomplete };
        // Keys are unique and sorted: n of them, the last n-1, means 0..n are all there.
        let n = *n;
        let complete = p.chunks.len() == n as usize && p.chunks.keys().next_back() == n.checked_sub(1).as_ref();
        if !complete {
            return Fed::Incomplete;
        }
        let p = self.partial.remove(&key).expect("entry exists");
        let (_, bytes, sha) = p.header.expect("checked above");
        let b64: String = p.chunks.values().map(String::as_str).collect();
        match base64_decode(&b64) {
            Some(data) if data.len() as u64 == bytes && sha256_hex(&data) == sha => {
                self.done.insert(key.clone(), sha);
                Fed::Record(key.0, key.1, data)
            }
            _ => Fed::Corrupt(key.0, key.1),
        }
    }

    /// Records still missing parts: (run_id, seq, chunks present, chunks expected or None without header).
    pub fn unfinished(&self) -> Vec<(String, u32, usize, Option<u32>)> {
        self.partial.iter().map(|((r, s), p)| (r.clone(), *s, p.chunks.len(), p.header.as_ref().map(|h| h.0))).collect()
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Character → 6-bit value (0xff: not base64).
const B64_DECODE: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 64 {
        t[B64[i] as usize] = i as u8;
        i += 1;
    }
    t
};

pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| match B64_DECODE[c as usize] {
        0xff => None,
        v => Some(v as u32),
    };
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (k, q) in bytes.chunks(4).enumerate() {
        let last = k == bytes.len() / 4 - 1;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = n << 6 | value(c)?;
        }
        n <<= 6 * pad as u32;
        let got = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&got[..3 - pad]);
    }
    Some(out)
}

/// CRC-32 (IEEE 802.3, as zlib and `cksum -a crc32b`) of a framed line.
/// The collector checks every line of multi-gigabyte logs with it: on the
/// workstation, crc32fast (SIMD; the collector reads logs 24 % faster with
/// it, `cargo xtask bench-collect`); in the image, which frames a few
/// records per boot and must stay small, a table.
pub fn crc32(data: &[u8]) -> u32 {
    #[cfg(feature = "workstation")]
    return crc32fast::hash(data);
    #[cfg(not(feature = "workstation"))]
    return crc32_by_table(data);
}

/// CRC-32 one byte at a time through a 256-entry table.
#[cfg_attr(feature = "workstation", allow(dead_code))]
fn crc32_by_table(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc = CRC_TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged line still says which record it was part of, when its
    /// first fields survived; a hint, never trusted further.
    #[test]
    fn a_damaged_line_names_its_record_when_it_can() {
        let line = &encode("20261204-000000-abcd", 7, b"{\"x\":1}")[1];
        let cut = &line[..line.len() - 9];
        assert!(matches!(parse_line(cut), Some(Err(_))));
        assert_eq!(claimed_record(cut), Some(("20261204-000000-abcd".into(), 7)));
        assert_eq!(claimed_record("[ 3.1] @BM1 H run"), None, "cut before the seq");
        assert_eq!(claimed_record("@BM1 X run 7"), None);
        assert_eq!(claimed_record("no frame here"), None);
    }

    fn reassemble(lines: &[String]) -> Vec<Fed> {
        let mut a = Assembler::default();
        lines
            .iter()
            .filter_map(|l| parse_line(l))
            .filter_map(Result::ok)
            .map(|l| a.feed(l))
            .filter(|f| *f != Fed::Incomplete)
            .collect()
    }

    #[test]
    fn crc32_known_vectors_and_both_implementations_agree() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32_by_table(b"123456789"), 0xCBF4_3926);
        // The image frames with the table, the collector checks with crc32fast:
        // they must agree on every length and alignment.
        let bytes: Vec<u8> = (0..4099u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for start in 0..9 {
            for len in [0, 1, 7, 15, 16, 17, 63, 64, 65, 255, 1024, 4000] {
                let part = &bytes[start..start + len];
                assert_eq!(crc32(part), crc32_by_table(part), "start {start} len {len}");
            }
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_decode("Zm8="), Some(b"fo".to_vec()));
        assert_eq!(base64_decode("Zm9vYg=="), Some(b"foob".to_vec()));
        assert_eq!(base64_decode("Zm=8"), None);
        assert_eq!(base64_decode("Zm9"), None);
    }

    #[test]
    fn round_trip_in_any_order_with_noise_around() {
        let record: Vec<u8> = (0..1000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut lines = encode("20261130-000000-abcd", 7, &record);
        lines.reverse();
        let noisy: Vec<String> = lines.iter().map(|l| format!("[   12.3456] garbage {l}\r")).collect();
        assert_eq!(reassemble(&noisy), vec![Fed::Record("20261130-000000-abcd".into(), 7, record)]);
    }

    #[test]
    fn empty_record_round_trips() {
        assert_eq!(reassemble(&encode("r", 0, b"")), vec![Fed::Record("r".into(), 0, vec![])]);
    }

    #[test]
    fn any_flipped_byte_is_detected() {
        let record = br#"{"schema":"bootmark.result/1","throughput_mib_s":123.4}"#.repeat(5);
        let lines = encode("r", 1, &record);
        for (li, line) in lines.iter().enumerate() {
            for pos in 0..line.len() {
                let mut bytes = line.clone().into_bytes();
                bytes[pos] ^= 0x04;
                let Ok(bad) = String::from_utf8(bytes) else { continue };
                let mut copy = lines.clone();
                copy[li] = bad;
                let fed = reassemble(&copy);
                assert!(!fed.iter().any(|f| matches!(f, Fed::Record(..))), "line {li} byte {pos}: {fed:?}");
            }
        }
        assert_eq!(reassemble(&lines), vec![Fed::Record("r".into(), 1, record)], "undamaged, it is accepted");
    }

    /// A UART overrun ate a line end: a fragment of one framed line runs
    /// into the next, whole one, on the same console line.
    #[test]
    fn a_framed_line_after_a_fragment_of_another_is_still_read() {
        let lines = encode("20261201-000000-abcd", 3, br#"{"schema":"bootmark.result/1","x":1}"#);
        let fragment = &lines[0][..lines[0].len() / 2];
        for (i, whole) in lines.iter().enumerate() {
            let merged = format!("[  12.3] noise {fragment}{whole}");
            assert!(matches!(parse_line(&merged), Some(Ok(_))), "line {i}: {merged}");
        }
        let flipped = lines[0].replacen('H', "X", 1);
        assert_eq!(parse_line(&format!("{fragment}{flipped}")), Some(Err(LineError::BadChecksum)));
        assert_eq!(parse_line("no frame here"), None);
    }

    #[test]
    fn a_line_cut_by_printk_is_rejected_and_a_repeat_recovers_it() {
        let record = b"x".repeat(500);
        let mut lines = encode("r", 2, &record);
        let cut = lines[2].clone();
        lines[2] = format!("{}\n[  5.1] usb 1-1: new device{}", &cut[..40], &cut[40..]);
        let split: Vec<String> = lines.iter().flat_map(|l| l.lines().map(String::from).collect::<Vec<_>>()).collect();
        assert!(reassemble(&split).is_empty(), "missing chunk: nothing accepted");
        let mut again = split.clone();
        again.push(cut);
        assert_eq!(reassemble(&again), vec![Fed::Record("r".into(), 2, record)]);
    }
}
