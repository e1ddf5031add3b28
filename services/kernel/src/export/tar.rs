//! A streaming tar (POSIX ustar, with a PAX `path` record for names ustar cannot hold): entry
//! headers and paddings as byte blocks, so an archive goes out as it is made, whatever its size.

use bytes::Bytes;

const BLOCK: usize = 512;

/// The header block(s) of a regular file `path` of `size` bytes modified at `mtime` (Unix
/// seconds). A path over ustar's 100 bytes, or not ASCII, goes in a PAX extended header first.
pub fn file_header(path: &str, size: u64, mtime: i64) -> Bytes {
    let mut out = Vec::with_capacity(BLOCK * 3);
    let fits = path.len() <= 100 && path.is_ascii();
    if !fits {
        let record = pax_record("path", path);
        out.extend_from_slice(&ustar(&pax_name(path), record.len() as u64, mtime, b'x'));
        out.extend_from_slice(&record);
        out.extend_from_slice(&padding(record.len() as u64));
    }
    let name = if fits { path.to_string() } else { pax_name(path) };
    out.extend_from_slice(&ustar(&name, size, mtime, b'0'));
    Bytes::from(out)
}

/// The zeros that fill an entry of `size` bytes to a whole block.
pub fn padding(size: u64) -> Bytes {
    let rest = (size % BLOCK as u64) as usize;
    Bytes::from(if rest == 0 { Vec::new() } else { vec![0; BLOCK - rest] })
}

/// The end of the archive: two zero blocks.
pub fn end() -> Bytes {
    Bytes::from(vec![0; BLOCK * 2])
}

/// A short ASCII stand-in name for an entry whose real path is in its PAX record.
fn pax_name(path: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(path.as_bytes());
    format!("PaxHeaders/{}", hex::encode(&digest[..16]))
}

/// `"<length> <key>=<value>\n"`, the length counting itself.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut length = body.len() + 1;
    while length.to_string().len() + body.len() != length {
        length = length.to_string().len() + body.len();
    }
    format!("{length}{body}").into_bytes()
}

fn ustar(name: &str, size: u64, mtime: i64, kind: u8) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let name = name.as_bytes();
    h[..name.len().min(100)].copy_from_slice(&name[..name.len().min(100)]);
    octal(&mut h[100..108], 0o644);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime.max(0) as u64);
    h[148..156].copy_from_slice(b"        ");
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    let text = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(text.as_bytes());
    h
}

/// `value` in octal, zero-padded, NUL-terminated, filling `field`.
fn octal(field: &mut [u8], value: u64) {
    let width = field.len() - 1;
    let text = format!("{value:0width$o}");
    field[..width].copy_from_slice(&text.as_bytes()[text.len() - width..]);
    field[width] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pax_record_counts_its_own_length() {
        for value in ["a", &"x".repeat(90), &"y".repeat(995)] {
            let record = pax_record("path", value);
            let (length, _) = std::str::from_utf8(&record).unwrap().split_once(' ').unwrap();
            assert_eq!(length.parse::<usize>().unwrap(), record.len());
        }
    }

    #[test]
    fn headers_fill_whole_blocks_and_carry_their_checksum() {
        let short = file_header("a.md", 3, 0);
        assert_eq!(short.len(), BLOCK);
        let long = file_header(&format!("{}/n.md", "d".repeat(120)), 3, 0);
        assert_eq!(long.len() % BLOCK, 0);
        assert_eq!(long.len(), BLOCK * 3);
        let h = &short[..];
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        let mut blank = h.to_vec();
        blank[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, blank.iter().map(|b| u32::from(*b)).sum::<u32>());
        assert_eq!(padding(3).len(), BLOCK - 3);
        assert_eq!(padding(1024).len(), 0);
    }
}
