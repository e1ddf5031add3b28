//! A streaming tar (POSIX ustar, with a PAX `path` record for names ustar cannot hold): entry
//! headers and paddings as byte blocks, so an archive goes out as it is made, whatever its size;
//! and a [`Reader`] that takes one back entry by entry, holding no more than the entry asked for.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt};

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

/// One regular file of an archive being read: its path, size and mtime (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub size: u64,
    pub mtime: i64,
}

/// Why an archive cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading the archive: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a tar archive this server reads: {0}")]
    Malformed(String),
    #[error("{path}: {size} bytes, more than the {limit} this import takes for one entry")]
    TooLarge { path: String, size: u64, limit: u64 },
}

/// Reads a tar archive (ustar, with PAX `path`/`size`/`mtime` records and GNU long names) one
/// regular file at a time; other entries (folders, links) are skipped.
pub struct Reader<R> {
    inner: R,
    /// What is left unread of the current entry, then its padding.
    unread: u64,
    padding: u64,
    ended: bool,
}

/// The most bytes of PAX records or a long name read for one entry.
const MAX_META: u64 = 64 * 1024;

impl<R: AsyncRead + Unpin> Reader<R> {
    pub fn new(inner: R) -> Self {
        Self { inner, unread: 0, padding: 0, ended: false }
    }

    /// The next regular file, or none at the archive's end (two zero blocks, or the stream's end
    /// exactly between entries). What the last entry left unread is skipped.
    pub async fn next(&mut self) -> Result<Option<Entry>, ReadError> {
        self.skip_rest().await?;
        let mut long_path: Option<String> = None;
        let mut pax: Vec<(String, String)> = Vec::new();
        loop {
            if self.ended {
                return Ok(None);
            }
            let mut block = [0u8; BLOCK];
            let mut filled = 0;
            while filled < BLOCK {
                let n = self.inner.read(&mut block[filled..]).await?;
                if n == 0 {
                    if filled == 0 && long_path.is_none() && pax.is_empty() {
                        self.ended = true;
                        return Ok(None);
                    }
                    return Err(ReadError::Malformed("the archive stops inside an entry's header".into()));
                }
                filled += n;
            }
            if block.iter().all(|b| *b == 0) {
                self.ended = true;
                return Ok(None);
            }
            let stored: u32 = parse_octal(&block[148..156])
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| ReadError::Malformed("a header's checksum is not a number".into()))?;
            let mut blank = block;
            blank[148..156].copy_from_slice(b"        ");
            if blank.iter().map(|b| u32::from(*b)).sum::<u32>() != stored {
                return Err(ReadError::Malformed("a header's checksum does not hold".into()));
            }
            let mut size = parse_octal(&block[124..136])
                .ok_or_else(|| ReadError::Malformed("a header's size is not a number".into()))?;
            let kind = block[156];
            if matches!(kind, b'x' | b'L') {
                if size > MAX_META {
                    return Err(ReadError::Malformed("an extended header is too long".into()));
                }
                let meta = self.read_exact_padded(size).await?;
                if kind == b'L' {
                    let end = meta.iter().position(|b| *b == 0).unwrap_or(meta.len());
                    long_path = Some(text(&meta[..end])?);
                } else {
                    pax = parse_pax(&meta)?;
                }
                continue;
            }
            let mut path = match long_path.take() {
                Some(path) => path,
                None => {
                    let name = cstr(&block[..100]);
                    let prefix = if &block[257..262] == b"ustar" { cstr(&block[345..500]) } else { &[] };
                    if prefix.is_empty() { text(name)? } else { format!("{}/{}", text(prefix)?, text(name)?) }
                }
            };
            let mut mtime = parse_octal(&block[136..148]).unwrap_or(0) as i64;
            for (key, value) in std::mem::take(&mut pax) {
                match key.as_str() {
                    "path" => path = value,
                    "size" => {
                        size = value.parse().map_err(|_| ReadError::Malformed("a PAX size is not a number".into()))?
                    }
                    "mtime" => mtime = value.split('.').next().and_then(|s| s.parse().ok()).unwrap_or(mtime),
                    _ => {}
                }
            }
            self.unread = size;
            self.padding = padding(size).len() as u64;
            // A regular file ('0', or NUL from old tars); anything else is skipped.
            if matches!(kind, b'0' | 0) {
                return Ok(Some(Entry { path, size, mtime }));
            }
            self.skip_rest().await?;
        }
    }

    /// The current entry's content, whole, when it is at most `limit` bytes.
    pub async fn content(&mut self, entry: &Entry, limit: u64) -> Result<Vec<u8>, ReadError> {
        if self.unread > limit {
            return Err(ReadError::TooLarge { path: entry.path.clone(), size: entry.size, limit });
        }
        let size = self.unread;
        let mut content = vec![0; size as usize];
        self.inner.read_exact(&mut content).await.map_err(cut)?;
        self.unread = 0;
        Ok(content)
    }

    async fn read_exact_padded(&mut self, size: u64) -> Result<Vec<u8>, ReadError> {
        let mut content = vec![0; size as usize];
        self.inner.read_exact(&mut content).await.map_err(cut)?;
        self.unread = 0;
        self.padding = padding(size).len() as u64;
        self.skip_rest().await?;
        Ok(content)
    }

    async fn skip_rest(&mut self) -> Result<(), ReadError> {
        let skip = self.unread + self.padding;
        if skip > 0 {
            let copied = tokio::io::copy(&mut (&mut self.inner).take(skip), &mut tokio::io::sink()).await?;
            if copied < skip {
                return Err(ReadError::Malformed("the archive stops inside an entry".into()));
            }
        }
        self.unread = 0;
        self.padding = 0;
        Ok(())
    }
}

fn cut(e: std::io::Error) -> ReadError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        ReadError::Malformed("the archive stops inside an entry".into())
    } else {
        ReadError::Io(e)
    }
}

/// The bytes of a NUL-terminated field.
fn cstr(field: &[u8]) -> &[u8] {
    &field[..field.iter().position(|b| *b == 0).unwrap_or(field.len())]
}

fn text(bytes: &[u8]) -> Result<String, ReadError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ReadError::Malformed("a name is not UTF-8".into()))
}

/// An octal number field (spaces and NULs around it), or a base-256 one (high bit set).
fn parse_octal(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        return field[1..]
            .iter()
            .try_fold(u64::from(field[0] & 0x7f), |n, b| n.checked_mul(256)?.checked_add(u64::from(*b)));
    }
    let digits = std::str::from_utf8(field).ok()?.trim_matches(|c: char| c == '\0' || c == ' ');
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, 8).ok()
}

/// `"<length> <key>=<value>\n"` records.
fn parse_pax(mut bytes: &[u8]) -> Result<Vec<(String, String)>, ReadError> {
    let bad = || ReadError::Malformed("a PAX record is not well formed".into());
    let mut records = Vec::new();
    while !bytes.is_empty() {
        let space = bytes.iter().position(|b| *b == b' ').ok_or_else(bad)?;
        let length: usize = std::str::from_utf8(&bytes[..space]).ok().and_then(|l| l.parse().ok()).ok_or_else(bad)?;
        if length <= space + 1 || length > bytes.len() || bytes[length - 1] != b'\n' {
            return Err(bad());
        }
        let record = &bytes[space + 1..length - 1];
        let equals = record.iter().position(|b| *b == b'=').ok_or_else(bad)?;
        records.push((text(&record[..equals])?, text(&record[equals + 1..])?));
        bytes = &bytes[length..];
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An archive of `files`, as the export writes it.
    fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (path, content) in files {
            out.extend_from_slice(&file_header(path, content.len() as u64, 1_700_000_000));
            out.extend_from_slice(content);
            out.extend_from_slice(&padding(content.len() as u64));
        }
        out.extend_from_slice(&end());
        out
    }

    #[tokio::test]
    async fn the_reader_takes_back_what_the_writer_wrote() {
        let long = format!("{}/Réunion: notes.md", "d".repeat(120));
        let bytes = archive(&[("a.md", b"alpha"), (&long, &[7u8; 1500]), ("empty.md", b"")]);
        let mut reader = Reader::new(&bytes[..]);
        let first = reader.next().await.unwrap().unwrap();
        assert_eq!(first, Entry { path: "a.md".into(), size: 5, mtime: 1_700_000_000 });
        assert_eq!(reader.content(&first, 10).await.unwrap(), b"alpha");
        // The second is skipped unread; its padding too.
        assert_eq!(reader.next().await.unwrap().unwrap().path, long);
        let third = reader.next().await.unwrap().unwrap();
        assert_eq!((third.path.as_str(), reader.content(&third, 0).await.unwrap().len()), ("empty.md", 0));
        assert_eq!(reader.next().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_cut_or_damaged_archive_is_an_error_and_a_large_entry_is_refused() {
        let bytes = archive(&[("a.md", &[1u8; 2000])]);
        let mut reader = Reader::new(&bytes[..700]);
        let entry = reader.next().await.unwrap().unwrap();
        assert!(matches!(reader.content(&entry, 4096).await, Err(ReadError::Malformed(_))));
        let mut reader = Reader::new(&bytes[..]);
        let entry = reader.next().await.unwrap().unwrap();
        assert!(matches!(reader.content(&entry, 1000).await, Err(ReadError::TooLarge { size: 2000, .. })));
        let mut damaged = bytes.clone();
        damaged[10] ^= 1;
        assert!(matches!(Reader::new(&damaged[..]).next().await, Err(ReadError::Malformed(_))));
    }

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
