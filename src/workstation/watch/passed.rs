//! What a follower has passed on of a followed file, kept small enough to
//! follow a console for months and exact enough to recognise it again:
//! when the file is truncated, rewritten or replaced, its new content is
//! compared with what was passed, so the follower goes on where it was (the
//! same stream, written again) or starts over (a new one) by content, never
//! by size alone.
//!
//! Both sides are compared as text: each maximal run of bytes that is not
//! UTF-8 counts as one U+FFFD, so a copy someone rewrote "as text" (bad
//! bytes replaced, the file longer than before) is the same stream as the
//! bytes it came from. The first [`HEAD`] bytes of text are kept as they
//! are, so a new boot, which prints the same firmware banner as the last
//! one and then differs, is told apart at its first different byte; past
//! them, each [`BLOCK`] of text is kept as a 64-bit hash.

use std::hash::{Hash, Hasher};

/// Text kept verbatim from the start of a stream.
pub const HEAD: usize = 16 << 10;
/// Text hashed as one block past the head: a difference there is seen at
/// most this many bytes after it.
pub const BLOCK: usize = 512;

/// A stream's text as fingerprints: its head, a hash per whole block, and
/// the text after the last whole block.
#[derive(Clone, Debug, Default)]
pub struct Passed {
    head: Vec<u8>,
    blocks: Vec<u64>,
    tail: Vec<u8>,
    /// Raw bytes of a UTF-8 sequence not finished yet (at most 3).
    pending: Vec<u8>,
    /// Raw bytes whose text is counted (all pushed but `pending`).
    raw: u64,
    /// As a stream read again: how many of its blocks agreed already (each
    /// is compared once, however often the agreement is asked).
    agreed_blocks: usize,
}

/// How a stream being read again agrees with the one passed.
#[derive(Debug, PartialEq, Eq)]
pub enum Agreement {
    /// What was passed so far is all there, the same: go on from raw byte `resume` of the new file.
    Same { resume: u64 },
    /// They differ: the file holds another stream.
    Differ,
    /// Alike as far as the new one goes, and it is shorter: wait for more.
    SoFar,
}

impl Passed {
    /// The text's length.
    pub fn len(&self) -> u64 {
        (self.blocks.len() * BLOCK + self.tail.len()) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.pending.is_empty()
    }

    /// The raw bytes pushed, whose text is counted (all but an unfinished UTF-8 sequence).
    pub fn raw_len(&self) -> u64 {
        self.raw
    }

    /// Add raw bytes as they were passed on.
    pub fn push(&mut self, raw: &[u8]) {
        self.push_until(raw, u64::MAX);
    }

    /// Add raw bytes until the text is `limit` long; the rest is left.
    pub fn push_until(&mut self, raw: &[u8], limit: u64) {
        let mut input = std::mem::take(&mut self.pending);
        input.extend_from_slice(raw);
        let mut at = 0;
        for chunk in input.utf8_chunks() {
            let valid = chunk.valid().as_bytes();
            let room = limit.saturating_sub(self.len()) as usize;
            let take = valid.len().min(room);
            self.push_text(&valid[..take]);
            at += take;
            self.raw += take as u64;
            if take < valid.len() {
                return self.pending.clear();
            }
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            // An unfinished sequence at the very end may still become a
            // character: held until the next bytes say.
            if at + invalid.len() == input.len() && invalid.len() < 4 && (0xc2..=0xf4).contains(&invalid[0]) {
                self.pending = invalid.to_vec();
                return;
            }
            let room = limit.saturating_sub(self.len()) as usize;
            if room < 3 {
                // What was passed ends on a character, never inside a
                // U+FFFD: the part that fits is a difference, kept to be seen.
                return self.push_text(&"\u{fffd}".as_bytes()[..room]);
            }
            self.push_text("\u{fffd}".as_bytes());
            at += invalid.len();
            self.raw += invalid.len() as u64;
        }
    }

    fn push_text(&mut self, mut text: &[u8]) {
        if self.head.len() < HEAD {
            let n = text.len().min(HEAD - self.head.len());
            self.head.extend_from_slice(&text[..n]);
        }
        while !text.is_empty() {
            let n = text.len().min(BLOCK - self.tail.len());
            self.tail.extend_from_slice(&text[..n]);
            text = &text[n..];
            if self.tail.len() == BLOCK {
                self.blocks.push(hash(&self.tail));
                self.tail.clear();
            }
        }
    }

    /// How `again` (the file read again from its start, pushed with
    /// [`Passed::push_until`] up to this one's length) agrees with what was passed.
    pub fn agreement(&self, again: &mut Passed) -> Agreement {
        let common = self.head.len().min(again.head.len());
        let blocks = self.blocks.len().min(again.blocks.len());
        let from = again.agreed_blocks.min(blocks);
        if self.head[..common] != again.head[..common] || self.blocks[from..blocks] != again.blocks[from..blocks] {
            return Agreement::Differ;
        }
        again.agreed_blocks = blocks;
        if again.blocks.len() == self.blocks.len() {
            let common = self.tail.len().min(again.tail.len());
            if self.tail[..common] != again.tail[..common] {
                return Agreement::Differ;
            }
        }
        match again.len() >= self.len() {
            true => Agreement::Same { resume: again.raw },
            false => Agreement::SoFar,
        }
    }

    /// The raw bytes of an unfinished UTF-8 sequence at the end: passed on
    /// already, so skipped when the stream read again has them too.
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    /// The stream read again did not have them: what follows is its text.
    pub fn forget_pending(&mut self) {
        self.pending.clear();
    }
}

fn hash(block: &[u8]) -> u64 {
    // SipHash with fixed keys: the same text gives the same hash in every run.
    let mut h = std::hash::DefaultHasher::new();
    block.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A boot's console: firmware bytes that are not UTF-8, then the kernel's lines.
    fn console(boot: u32, lines: usize) -> Vec<u8> {
        let mut out = b"SeaBIOS (version 1.16)\r\n\xff\xfe\x1b[2J iPXE\r\n".to_vec();
        for i in 0..lines {
            out.extend_from_slice(format!("[{:5}.{:06}] boot {boot} line {i}\r\n", i / 100, i * 7).as_bytes());
        }
        out
    }

    fn passed(bytes: &[u8]) -> Passed {
        let mut p = Passed::default();
        p.push(bytes);
        p
    }

    /// Read `again` as a follower does after a rewrite: in pieces, up to what was passed.
    fn read_again(p: &Passed, again: &[u8], piece: usize) -> Agreement {
        let mut a = Passed::default();
        for chunk in again.chunks(piece) {
            a.push_until(chunk, p.len());
            match p.agreement(&mut a) {
                Agreement::SoFar => {}
                decided => return decided,
            }
        }
        Agreement::SoFar
    }

    #[test]
    fn the_same_bytes_again_are_the_same_stream_and_go_on_where_they_were() {
        let boot = console(1, 2000);
        for cut in [0, 1, 37, HEAD - 1, HEAD, HEAD + BLOCK, boot.len() / 2, boot.len()] {
            let p = passed(&boot[..cut]);
            for piece in [1, 7, 4096, 1 << 20] {
                let got = read_again(&p, &boot, piece);
                assert_eq!(got, Agreement::Same { resume: cut as u64 }, "cut {cut}, pieces of {piece}");
            }
        }
    }

    /// Rewritten "as text": every byte that is not UTF-8 replaced, the file
    /// longer than it was; the position maps into the new file.
    #[test]
    fn a_copy_with_bad_bytes_replaced_is_the_same_stream() {
        let boot = console(1, 3000);
        let text = String::from_utf8_lossy(&boot).into_owned().into_bytes();
        assert!(text.len() > boot.len());
        for cut in [60, 5000, boot.len() - 10] {
            let p = passed(&boot[..cut]);
            let resume = (cut + text.len() - boot.len()) as u64;
            assert_eq!(read_again(&p, &text, 333), Agreement::Same { resume }, "cut {cut}");
        }
    }

    /// Another boot prints the same banner, then differs: told apart
    /// at its first different byte in the head, within a block past it.
    #[test]
    fn another_stream_is_told_apart_soon_after_it_differs() {
        let first = console(1, 3000);
        let second = console(2, 3000);
        let differs_at = first.iter().zip(&second).position(|(a, b)| a != b).unwrap();
        let p = passed(&first);
        let mut a = Passed::default();
        a.push_until(&second[..differs_at], p.len());
        assert_eq!(p.agreement(&mut a), Agreement::SoFar, "alike so far");
        a.push_until(&second[differs_at..differs_at + 1], p.len());
        assert_eq!(p.agreement(&mut a), Agreement::Differ);
        // A difference past the head: seen within one block.
        let mut late = first.clone();
        late[HEAD + 3 * BLOCK + 5] = b'#';
        let mut a = Passed::default();
        a.push_until(&late[..HEAD + 4 * BLOCK], p.len());
        assert_eq!(p.agreement(&mut a), Agreement::Differ);
        // A rotated log's new content, shorter than what was passed.
        assert_eq!(read_again(&p, b"[ 1.000] after the rotation\n", 64), Agreement::Differ);
    }

    /// An unfinished UTF-8 sequence at a read's end is held, not replaced.
    #[test]
    fn a_character_split_between_reads_is_one_character() {
        let text = "été · 温度 ".repeat(50);
        let mut p = Passed::default();
        for piece in text.as_bytes().chunks(5) {
            p.push(piece);
        }
        assert_eq!(p.len() as usize, text.len());
        assert_eq!(p.raw_len() as usize, text.len());
        let mut split = Passed::default();
        split.push(&text.as_bytes()[..1]);
        assert_eq!((split.len(), split.pending()), (0, &text.as_bytes()[..1]), "é's first byte held");
        split.push(&text.as_bytes()[1..2]);
        assert_eq!((split.len(), split.pending()), (2, &b""[..]), "then é whole");
    }
}
