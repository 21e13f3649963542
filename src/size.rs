//! Byte sizes as people write them in plans ("16KiB", "1GiB", 4096) and as we print them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A number of bytes. Deserializes from an integer or a string with a binary
/// suffix (K/KiB, M/MiB, G/GiB, T/TiB; all powers of 1024, like dd's `bs=16k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Bytes(pub u64);

const UNITS: [(&str, u64); 9] = [
    ("tib", 1 << 40),
    ("gib", 1 << 30),
    ("mib", 1 << 20),
    ("kib", 1 << 10),
    ("t", 1 << 40),
    ("g", 1 << 30),
    ("m", 1 << 20),
    ("k", 1 << 10),
    ("b", 1),
];

/// Parse "16KiB", "1 GiB", "512", "4k".
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (number, multiplier) =
        UNITS.iter().find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n.trim(), *m))).unwrap_or((t.as_str(), 1));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size: write a whole number with an optional unit, e.g. 16KiB, 1GiB"))?;
    n.checked_mul(multiplier).ok_or_else(|| format!("'{text}' is too large"))
}

/// "1.00 GiB", "16.0 KiB", "512 B".
pub fn human(n: u64) -> String {
    let units = [("TiB", 1u64 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in units {
        if n >= size {
            return format!("{:.2} {name}", n as f64 / size as f64);
        }
    }
    format!("{n} B")
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&human(self.0))
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom("expected a size: a whole number of bytes or a string like \"16KiB\"")
        })? {
            Raw::Number(n) => Ok(Bytes(n)),
            Raw::Text(t) => parse_bytes(&t).map(Bytes).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_rejects_junk() {
        assert_eq!(parse_bytes("16KiB"), Ok(16384));
        assert_eq!(parse_bytes("16k"), Ok(16384));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("2M"), Ok(2 << 20));
        assert!(parse_bytes("1.5G").is_err());
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }

    #[test]
    fn human_readable() {
        assert_eq!(human(1 << 30), "1.00 GiB");
        assert_eq!(human(1536), "1.50 KiB");
        assert_eq!(human(12), "12 B");
    }
}
