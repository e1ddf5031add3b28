//! A DNS TXT lookup over UDP, to one resolver (`domains.resolver`, or the machine's first
//! nameserver): enough to read a domain's proof challenge, bounded in time and size.

use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("the resolver did not answer in time")]
    Timeout,
    #[error("the resolver could not be reached: {0}")]
    Io(#[from] std::io::Error),
    #[error("the resolver's answer could not be read")]
    Malformed,
    #[error("the resolver failed the lookup (rcode {0})")]
    Failed(u8),
    #[error("no resolver: set domains.resolver or list a nameserver in /etc/resolv.conf")]
    NoResolver,
}

/// The resolver to ask: `configured` (host:port), else the first nameserver of
/// /etc/resolv.conf on port 53.
pub fn resolver(configured: Option<&str>) -> Result<SocketAddr, DnsError> {
    if let Some(addr) = configured.filter(|a| !a.is_empty()) {
        return addr.parse().map_err(|_| DnsError::NoResolver);
    }
    let conf = std::fs::read_to_string("/etc/resolv.conf").map_err(|_| DnsError::NoResolver)?;
    conf.lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|ip| ip.trim().parse::<std::net::IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .next()
        .ok_or(DnsError::NoResolver)
}

/// The TXT strings published at `name` (each record's strings joined); empty when there are
/// none (NXDOMAIN included).
pub async fn txt(resolver: SocketAddr, name: &str, timeout: Duration) -> Result<Vec<String>, DnsError> {
    let id: u16 = rand_id();
    let query = encode_query(id, name).ok_or(DnsError::Malformed)?;
    let bind: SocketAddr = if resolver.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("an address");
    let socket = tokio::net::UdpSocket::bind(bind).await?;
    socket.connect(resolver).await?;
    let ask = async {
        socket.send(&query).await?;
        let mut buf = vec![0u8; 4096];
        loop {
            let n = socket.recv(&mut buf).await?;
            if n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id {
                return Ok::<_, DnsError>(buf[..n].to_vec());
            }
        }
    };
    let answer = tokio::time::timeout(timeout, ask).await.map_err(|_| DnsError::Timeout)??;
    decode_txt(&answer)
}

fn rand_id() -> u16 {
    let bytes = uuid::Uuid::new_v4();
    u16::from_be_bytes([bytes.as_bytes()[0], bytes.as_bytes()[1]])
}

fn encode_query(id: u16, name: &str) -> Option<Vec<u8>> {
    let mut q = Vec::with_capacity(32 + name.len());
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]); // recursion desired, one question
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return None;
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&[0, 16, 0, 1]); // TXT, IN
    Some(q)
}

/// Skips a (possibly compressed) name at `at`; where what follows it starts.
fn skip_name(msg: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *msg.get(at)? as usize;
        if len == 0 {
            return Some(at + 1);
        }
        if len & 0xC0 == 0xC0 {
            return Some(at + 2);
        }
        at += 1 + len;
    }
}

fn decode_txt(msg: &[u8]) -> Result<Vec<String>, DnsError> {
    let bad = || DnsError::Malformed;
    if msg.len() < 12 {
        return Err(bad());
    }
    let rcode = msg[3] & 0x0F;
    if rcode == 3 {
        return Ok(Vec::new()); // NXDOMAIN
    }
    if rcode != 0 {
        return Err(DnsError::Failed(rcode));
    }
    let questions = u16::from_be_bytes([msg[4], msg[5]]);
    let answers = u16::from_be_bytes([msg[6], msg[7]]);
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(msg, at).ok_or_else(bad)? + 4;
    }
    let mut found = Vec::new();
    for _ in 0..answers {
        at = skip_name(msg, at).ok_or_else(bad)?;
        let head = msg.get(at..at + 10).ok_or_else(bad)?;
        let kind = u16::from_be_bytes([head[0], head[1]]);
        let len = u16::from_be_bytes([head[8], head[9]]) as usize;
        let data = msg.get(at + 10..at + 10 + len).ok_or_else(bad)?;
        at += 10 + len;
        if kind != 16 {
            continue;
        }
        let (mut text, mut i) = (Vec::new(), 0);
        while i < data.len() {
            let n = data[i] as usize;
            text.extend_from_slice(data.get(i + 1..i + 1 + n).ok_or_else(bad)?);
            i += 1 + n;
        }
        found.push(String::from_utf8_lossy(&text).into_owned());
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_the_labels_and_asks_for_txt() {
        let q = encode_query(7, "_x.acme.test").unwrap();
        assert_eq!(&q[12..], b"\x02_x\x04acme\x04test\x00\x00\x10\x00\x01");
        assert!(encode_query(7, "a..b").is_none());
    }

    #[test]
    fn an_answer_with_a_compressed_name_reads_back() {
        let mut m = encode_query(9, "a.test").unwrap();
        m[2] = 0x81;
        m[3] = 0x80;
        m[7] = 1; // one answer
        m.extend_from_slice(&[0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, 6, 2, b'h', b'i', 2, b'y', b'o']);
        assert_eq!(decode_txt(&m).unwrap(), ["hiyo"]);
        m[3] = 0x83;
        assert!(decode_txt(&m).unwrap().is_empty(), "NXDOMAIN");
    }
}
