//! QPACK (RFC 9204) as dyno's HTTP/3 client needs it, and no more: the
//! client announces a dynamic table of capacity 0 (the default of
//! SETTINGS_QPACK_MAX_TABLE_CAPACITY), so a server may only use the
//! static table and literals, and a field section's Required Insert
//! Count is always 0.
//!
//! A request's field section is written once per static template, with
//! the static table's indexes where they fit and plain literals
//! elsewhere (no Huffman: the section is made once and sent many times,
//! and the bytes Huffman would save on a loopback benchmark are not
//! worth the client's time). An answer's section is decoded with
//! `httlib-huffman`'s table decoder for Huffman-coded strings.

use std::fmt;

/// The static table (RFC 9204, Appendix A): name and value by index.
pub(crate) const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Why a field section cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QpackError {
    /// The section ends inside a field line.
    Truncated,
    /// It refers to the dynamic table, which this client gave no room.
    Dynamic,
    /// A static index past the table's end.
    BadIndex(u64),
    /// An integer too large to be one.
    Overflow,
    /// A Huffman-coded string that does not decode.
    Huffman,
}

impl fmt::Display for QpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QpackError::Truncated => {
                f.write_str("QPACK: the field section ends inside a field line")
            }
            QpackError::Dynamic => f.write_str(
                "QPACK: the server refers to its dynamic table, which this client gave capacity 0",
            ),
            QpackError::BadIndex(i) => write!(f, "QPACK: static index {i} is past the table's end"),
            QpackError::Overflow => f.write_str("QPACK: an integer does not fit"),
            QpackError::Huffman => f.write_str("QPACK: a Huffman-coded string does not decode"),
        }
    }
}

/// Writes `value` as a QPACK prefixed integer (RFC 9204 §4.1.1, as
/// HPACK's): its low `bits` bits in the first byte, whose high bits are
/// `flags`.
fn put_int(out: &mut Vec<u8>, bits: u8, flags: u8, value: u64) {
    let max = (1u64 << bits) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Reads a prefixed integer of `bits` bits from `src` at `*at`.
fn get_int(src: &[u8], at: &mut usize, bits: u8) -> Result<u64, QpackError> {
    let max = (1u64 << bits) - 1;
    let first = *src.get(*at).ok_or(QpackError::Truncated)?;
    *at += 1;
    let mut value = u64::from(first) & max;
    if value < max {
        return Ok(value);
    }
    let mut shift = 0u32;
    loop {
        let byte = *src.get(*at).ok_or(QpackError::Truncated)?;
        *at += 1;
        let part = u64::from(byte & 0x7f)
            .checked_shl(shift)
            .filter(|_| shift <= 56)
            .ok_or(QpackError::Overflow)?;
        value = value.checked_add(part).ok_or(QpackError::Overflow)?;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
    }
}

/// Writes a string literal whose length prefix has `bits` bits, under
/// `flags`, without Huffman coding.
fn put_str(out: &mut Vec<u8>, bits: u8, flags: u8, s: &[u8]) {
    put_int(out, bits, flags, s.len() as u64);
    out.extend_from_slice(s);
}

/// Reads a string literal whose length prefix has `bits` bits and whose
/// Huffman flag is `huffman_flag` of its first byte; Huffman-coded ones
/// are decoded into `scratch`, whose bytes the result then borrows.
fn get_str<'a>(
    src: &'a [u8],
    at: &mut usize,
    bits: u8,
    huffman_flag: u8,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], QpackError> {
    let huffman = src.get(*at).ok_or(QpackError::Truncated)? & huffman_flag != 0;
    let len = usize::try_from(get_int(src, at, bits)?).map_err(|_| QpackError::Overflow)?;
    let end = at.checked_add(len).ok_or(QpackError::Overflow)?;
    let raw = src.get(*at..end).ok_or(QpackError::Truncated)?;
    *at = end;
    if !huffman {
        return Ok(raw);
    }
    scratch.clear();
    httlib_huffman::decode(raw, scratch, httlib_huffman::DecoderSpeed::FourBits)
        .map_err(|_| QpackError::Huffman)?;
    Ok(scratch)
}

/// The field section of a request: `fields` in order (pseudo-fields
/// first, names in lower case), each as the static table's index when
/// name and value are there, else a literal naming the static table's
/// entry for the name when it has one, else a literal name and value.
pub(crate) fn encode(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    // Required Insert Count 0, Delta Base 0: no dynamic table.
    out.extend_from_slice(&[0, 0]);
    for &(name, value) in fields {
        let exact = STATIC
            .iter()
            .position(|&(n, v)| n.as_bytes() == name && v.as_bytes() == value);
        if let Some(index) = exact {
            // Indexed field line, static (T = 1): 1 1 index(6+).
            put_int(out, 6, 0xc0, index as u64);
            continue;
        }
        match STATIC.iter().position(|&(n, _)| n.as_bytes() == name) {
            // Literal with name reference, N = 0, static (T = 1):
            // 0 1 0 1 index(4+), then the value: H = 0, length(7+).
            Some(index) => put_int(out, 4, 0x50, index as u64),
            // Literal with literal name, N = 0, H = 0: 0 0 1 0 0
            // length(3+), the name.
            None => put_str(out, 3, 0x20, name),
        }
        put_str(out, 7, 0x00, value);
    }
}

/// Reads the field section `block`, handing each field's name and value
/// to `each` in order.
pub(crate) fn decode(block: &[u8], mut each: impl FnMut(&[u8], &[u8])) -> Result<(), QpackError> {
    let mut at = 0;
    // Required Insert Count: anything but 0 needs the dynamic table.
    if get_int(block, &mut at, 8)? != 0 {
        return Err(QpackError::Dynamic);
    }
    // The base (a sign bit and a delta) means nothing without it.
    get_int(block, &mut at, 7)?;
    let (mut names, mut values) = (Vec::new(), Vec::new());
    let entry = |index: u64| {
        usize::try_from(index)
            .ok()
            .and_then(|i| STATIC.get(i))
            .ok_or(QpackError::BadIndex(index))
    };
    while at < block.len() {
        let first = block[at];
        if first & 0x80 != 0 {
            // Indexed field line: 1 T index(6+).
            if first & 0x40 == 0 {
                return Err(QpackError::Dynamic);
            }
            let (name, value) = entry(get_int(block, &mut at, 6)?)?;
            each(name.as_bytes(), value.as_bytes());
        } else if first & 0x40 != 0 {
            // Literal with name reference: 0 1 N T index(4+), value.
            if first & 0x10 == 0 {
                return Err(QpackError::Dynamic);
            }
            let (name, _) = entry(get_int(block, &mut at, 4)?)?;
            let value = get_str(block, &mut at, 7, 0x80, &mut values)?;
            each(name.as_bytes(), value);
        } else if first & 0x20 != 0 {
            // Literal with literal name: 0 0 1 N H length(3+), name,
            // value.
            let name = get_str(block, &mut at, 3, 0x08, &mut names)?;
            let value = get_str(block, &mut at, 7, 0x80, &mut values)?;
            each(name, value);
        } else {
            // Post-base forms (0001…, 0000…) name dynamic entries.
            return Err(QpackError::Dynamic);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(block: &[u8]) -> Result<Vec<(String, String)>, QpackError> {
        let mut out = Vec::new();
        decode(block, |n, v| {
            out.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ));
        })?;
        Ok(out)
    }

    #[test]
    fn a_request_round_trips_with_static_indexes_where_they_fit() {
        let fields: Vec<(&[u8], &[u8])> = vec![
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"127.0.0.1:8443"),
            (b":path", b"/hello.html"),
            (b"user-agent", b"dyno"),
            (b"x-run", b"a b c"),
        ];
        let mut block = Vec::new();
        encode(&fields, &mut block);
        // The prefix, then :method GET and :scheme https as one byte each
        // (static 17 and 23), :authority by name (static 0).
        assert_eq!(&block[..5], &[0, 0, 0xc0 | 17, 0xc0 | 23, 0x50]);
        let back = decoded(&block).unwrap();
        let want: Vec<(String, String)> = fields
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                )
            })
            .collect();
        assert_eq!(back, want);
    }

    #[test]
    fn long_values_and_large_indexes_take_continuation_bytes() {
        let value = vec![b'v'; 300];
        let fields: Vec<(&[u8], &[u8])> = vec![
            (b"x-frame-options", b"sameorigin"), // static 98: past 6 bits
            (b"x-long", &value),
        ];
        let mut block = Vec::new();
        encode(&fields, &mut block);
        assert_eq!(&block[2..4], &[0xff, 98 - 63]);
        let back = decoded(&block).unwrap();
        assert_eq!(back[0], ("x-frame-options".into(), "sameorigin".into()));
        assert_eq!(back[1].1.len(), 300);
    }

    #[test]
    fn huffman_coded_answers_decode() {
        // :status 200 (static 25), then server by name reference (static
        // 92) with a Huffman-coded value, then a literal name and value,
        // both Huffman-coded.
        let mut block = vec![0, 0, 0xc0 | 25];
        let mut coded = Vec::new();
        httlib_huffman::encode(b"Caddy", &mut coded).unwrap();
        put_int(&mut block, 4, 0x50, 92);
        put_int(&mut block, 7, 0x80, coded.len() as u64);
        block.extend_from_slice(&coded);
        let (mut name, mut value) = (Vec::new(), Vec::new());
        httlib_huffman::encode(b"x-cache", &mut name).unwrap();
        httlib_huffman::encode(b"HIT from the edge", &mut value).unwrap();
        put_int(&mut block, 3, 0x28, name.len() as u64);
        block.extend_from_slice(&name);
        put_int(&mut block, 7, 0x80, value.len() as u64);
        block.extend_from_slice(&value);
        assert_eq!(
            decoded(&block).unwrap(),
            [
                (":status".into(), "200".into()),
                ("server".into(), "Caddy".into()),
                ("x-cache".into(), "HIT from the edge".into()),
            ]
        );
    }

    #[test]
    fn what_needs_a_dynamic_table_or_is_cut_short_is_refused() {
        // A Required Insert Count.
        assert_eq!(decoded(&[1, 0]), Err(QpackError::Dynamic));
        // An indexed line of the dynamic table (T = 0).
        assert_eq!(decoded(&[0, 0, 0x80]), Err(QpackError::Dynamic));
        // A name reference into the dynamic table (T = 0).
        assert_eq!(decoded(&[0, 0, 0x40, 0]), Err(QpackError::Dynamic));
        // Post-base forms.
        assert_eq!(decoded(&[0, 0, 0x10]), Err(QpackError::Dynamic));
        assert_eq!(decoded(&[0, 0, 0x00]), Err(QpackError::Dynamic));
        // A static index past the table.
        assert_eq!(
            decoded(&[0, 0, 0xc0 | 63, 40]),
            Err(QpackError::BadIndex(103))
        );
        // A value longer than what is left.
        assert_eq!(decoded(&[0, 0, 0x5c, 5, b'a']), Err(QpackError::Truncated));
        // An integer that never ends.
        assert_eq!(decoded(&[0, 0, 0xff, 0xff]), Err(QpackError::Truncated));
        assert_eq!(
            decoded(&[
                0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]),
            Err(QpackError::Overflow)
        );
        // The empty section is a section.
        assert_eq!(decoded(&[0, 0]), Ok(Vec::new()));
    }

    #[test]
    fn the_static_table_has_its_landmarks() {
        assert_eq!(STATIC[0], (":authority", ""));
        assert_eq!(STATIC[17], (":method", "GET"));
        assert_eq!(STATIC[25], (":status", "200"));
        assert_eq!(STATIC[63], (":status", "100"));
        assert_eq!(STATIC[92], ("server", ""));
        assert_eq!(STATIC[98], ("x-frame-options", "sameorigin"));
    }
}
