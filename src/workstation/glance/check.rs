//! Reading a field only to check it has its schema's type, keeping
//! nothing: what lets a glance refuse every record the whole schema
//! refuses, in the same pass and without building the timeline's arrays.
//!
//! `Check<T>` deserializes a `T` and drops it (for small values); `Str`,
//! `Seq<T>` and `Map<K, V>` visit strings, arrays and objects element by
//! element and store none of them.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A `T`, checked and dropped.
pub struct Check<T>(PhantomData<T>);

impl<T> Check<T> {
    pub const fn new() -> Self {
        Check(PhantomData)
    }
}

impl<T> Default for Check<T> {
    fn default() -> Self {
        Check::new()
    }
}

impl<T> Clone for Check<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Check<T> {}

impl<T> fmt::Debug for Check<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("checked")
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Check<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|_| Check::new())
    }
}

/// A string, checked (escaped or not), not kept.
#[derive(Clone, Copy, Debug, Default)]
pub struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        d.deserialize_str(V)
    }
}

/// An array whose every element is a `T`; keeps their count.
pub struct Seq<T> {
    pub len: usize,
    of: PhantomData<T>,
}

impl<T> Default for Seq<T> {
    fn default() -> Self {
        Seq { len: 0, of: PhantomData }
    }
}

impl<T> fmt::Debug for Seq<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} checked", self.len)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Seq<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Seq<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seq<T>, A::Error> {
                let mut len = 0;
                while seq.next_element::<T>()?.is_some() {
                    len += 1;
                }
                Ok(Seq { len, of: PhantomData })
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

/// An object whose every key is a `K` and value a `V`.
pub struct Map<K, V>(PhantomData<(K, V)>);

impl<K, V> Default for Map<K, V> {
    fn default() -> Self {
        Map(PhantomData)
    }
}

impl<K, V> fmt::Debug for Map<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("checked")
    }
}

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Map<K, V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for Vis<K, V> {
            type Value = Map<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Map<K, V>, A::Error> {
                while map.next_entry::<K, V>()?.is_some() {}
                Ok(Map(PhantomData))
            }
        }
        d.deserialize_map(Vis(PhantomData))
    }
}

/// A number where an `f64` belongs, checked from its JSON text without
/// converting it (exact float parsing is most of the cost of a record, and
/// the timeline's arrays are most of its numbers). Every such number is a
/// time, a size or a rate of one boot: one of 1e12 or more (31 years in
/// ms) is implausible, and would only make a picture or a sum meaningless.
#[derive(Clone, Copy, Debug, Default)]
pub struct F64;

/// Decimal digits a timeline's number may have before its point.
const MAX_MAGNITUDE: i64 = 12;

impl<'de> Deserialize<'de> for F64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&serde_json::value::RawValue>::deserialize(d)?;
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'-' | b'0'..=b'9') if magnitude(text) < MAX_MAGNITUDE => Ok(F64),
            Some(b'-' | b'0'..=b'9') => {
                Err(serde::de::Error::custom(format!("implausible value {text}: a timeline's number is below 1e12")))
            }
            _ => Err(serde::de::Error::custom(format!("invalid type: {text}, expected f64",))),
        }
    }
}

/// Digits before the decimal point of a JSON number's text, its exponent
/// counted (`1.5e3` → 4, `0.001` → 1), without parsing it.
fn magnitude(text: &str) -> i64 {
    let text = text.trim_start_matches('-');
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].trim_start_matches('+').parse::<i64>().unwrap_or(i64::MAX / 2)),
        None => (text, 0),
    };
    let integer = mantissa.split('.').next().unwrap_or("");
    integer.trim_start_matches('0').len().max(1) as i64 + exponent
}

/// A `u64` or null, checked from its JSON text: digits only, in range.
#[derive(Clone, Copy, Debug, Default)]
pub struct OptU64;

impl<'de> Deserialize<'de> for OptU64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&serde_json::value::RawValue>::deserialize(d)?;
        let text = raw.get();
        if text == "null" || text.parse::<u64>().is_ok() {
            Ok(OptU64)
        } else {
            Err(serde::de::Error::custom(format!("invalid value: {text}, expected u64 or null")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numbers_magnitude_is_read_from_its_text() {
        for (text, digits) in
            [("0", 1), ("0.001", 1), ("12.5", 2), ("-999", 3), ("1.5e3", 4), ("1e-5", -4), ("1E+308", 309)]
        {
            assert_eq!(magnitude(text), digits, "{text}");
        }
        let f = |text: &str| serde_json::from_str::<F64>(text);
        assert!(f("123456789012.5").is_err() && f("1e308").is_err() && f("99999999999").is_ok() && f("-3.2").is_ok());
        assert!(f("1e308").unwrap_err().to_string().contains("implausible value 1e308"));
    }
}
