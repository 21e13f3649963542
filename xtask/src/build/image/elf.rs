//! What an ELF file says about the program in it — its machine, class,
//! the loader and libraries it needs — read with the `object` crate: how
//! the image builder tells a static program of the image's architecture
//! (`--include`, the static mkfs and fio it builds) from anything else.

/// What the ELF header and program headers say about a program.
#[derive(Debug, PartialEq)]
pub struct Elf {
    /// e_machine: 62 x86-64, 3 i386, 183 AArch64.
    pub machine: u16,
    pub class64: bool,
    /// PT_INTERP: the dynamic loader it asks for.
    pub interpreter: Option<String>,
    /// DT_NEEDED: the shared libraries it links.
    pub needed: Vec<String>,
}

/// Read an ELF file's facts, with the `object` crate's ELF reader; Err
/// for anything that is not an ELF executable.
pub fn read(bytes: &[u8]) -> Result<Elf, String> {
    use object::elf::{FileHeader32, FileHeader64};
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        let what = if bytes.starts_with(b"#!") {
            "a script (the image has no interpreter for it)"
        } else {
            "not an ELF program"
        };
        return Err(what.into());
    }
    match bytes[4] {
        1 => read_class::<FileHeader32<object::Endianness>>(bytes, false),
        2 => read_class::<FileHeader64<object::Endianness>>(bytes, true),
        c => Err(format!("an ELF file of unknown class {c}")),
    }
}

fn read_class<H>(bytes: &[u8], class64: bool) -> Result<Elf, String>
where
    H: object::read::elf::FileHeader<Endian = object::Endianness>,
{
    use object::elf::{DT_NEEDED, DT_NULL, DT_STRTAB, ET_DYN, ET_EXEC, PT_LOAD};
    use object::read::elf::{Dyn, ProgramHeader};
    let truncated = |_| "a truncated ELF file".to_string();
    let header = H::parse(bytes).map_err(truncated)?;
    let endian = header.endian().map_err(truncated)?;
    if !object::Endian::is_little_endian(endian) {
        return Err("a big-endian ELF file".into());
    }
    let e_type = header.e_type(endian);
    if e_type != ET_EXEC && e_type != ET_DYN {
        return Err(format!("an ELF file that is not a program (e_type {e_type}: an object file or core dump)"));
    }
    let segments = header.program_headers(endian, bytes).map_err(truncated)?;
    let (mut interpreter, mut dynamic) = (None, None);
    for s in segments {
        if let Some(path) = s.interpreter(endian, bytes).map_err(|_| "a truncated ELF file".to_string())? {
            interpreter = Some(String::from_utf8_lossy(path).into_owned());
        }
        dynamic = dynamic.or(s.dynamic(endian, bytes).map_err(|_| "a truncated ELF file".to_string())?);
    }
    // DT_NEEDED names are offsets into DT_STRTAB, a virtual address: the
    // PT_LOAD segment that maps it holds the strings.
    let entries: Vec<_> = dynamic
        .unwrap_or_default()
        .iter()
        .map(|d| (d.tag(endian), d.val(endian)))
        .take_while(|(tag, _)| *tag != DT_NULL)
        .collect();
    let strings = entries.iter().find(|(tag, _)| *tag == DT_STRTAB).and_then(|&(_, at)| {
        segments.iter().filter(|s| s.p_type(endian) == PT_LOAD).find_map(|s| {
            let start = at.checked_sub(s.p_vaddr(endian).into())?;
            s.data(endian, bytes).ok()?.get(start as usize..)
        })
    });
    let c_str = |b: &[u8]| String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or_default()).into_owned();
    let needed = entries
        .iter()
        .filter(|(tag, _)| *tag == DT_NEEDED)
        .filter_map(|&(_, at)| strings?.get(at as usize..).map(c_str))
        .collect();
    Ok(Elf { machine: header.e_machine(endian).0, class64, interpreter, needed })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF program header (64- or 32-bit, ET_EXEC) with one program header of type `p_type`.
    fn elf_with(class64: bool, p_type: u32) -> Vec<u8> {
        let mut elf = vec![0u8; 64 + 56];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[5] = 1; // little-endian
        elf[6] = 1; // ELF version 1
        elf[16] = 2; // ET_EXEC
        if class64 {
            elf[4] = 2;
            elf[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
            elf[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
            elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        } else {
            elf[4] = 1;
            elf[0x1c..0x20].copy_from_slice(&52u32.to_le_bytes());
            elf[0x2a..0x2c].copy_from_slice(&32u16.to_le_bytes());
            elf[0x2c..0x2e].copy_from_slice(&1u16.to_le_bytes());
        }
        let at = if class64 { 64 } else { 52 };
        elf[at..at + 4].copy_from_slice(&p_type.to_le_bytes());
        if p_type == 3 {
            // PT_INTERP's p_offset and p_filesz: "/lib/ld.so" at the end of the header.
            let path = b"/lib/ld.so\0";
            let (off, size) = (elf.len() - 16, path.len());
            elf[off..off + size].copy_from_slice(path);
            if class64 {
                elf[at + 8..at + 16].copy_from_slice(&(off as u64).to_le_bytes());
                elf[at + 32..at + 40].copy_from_slice(&(size as u64).to_le_bytes());
            } else {
                elf[at + 4..at + 8].copy_from_slice(&(off as u32).to_le_bytes());
                elf[at + 16..at + 20].copy_from_slice(&(size as u32).to_le_bytes());
            }
        }
        elf
    }

    #[test]
    fn an_elf_interpreter_is_read_in_both_classes() {
        for class64 in [true, false] {
            let e = read(&elf_with(class64, 3)).unwrap();
            assert_eq!((e.class64, e.interpreter.as_deref()), (class64, Some("/lib/ld.so")), "PT_INTERP");
            let e = read(&elf_with(class64, 1)).unwrap();
            assert_eq!((e.interpreter, e.needed.len()), (None, 0), "PT_LOAD only: static");
        }
        assert_eq!(read(b"\x7fELF\x02").unwrap_err(), "not an ELF program", "a truncated file");
    }
}
