//! HTTP/3's frames (RFC 9114 §7) and QUIC's variable-length integers
//! (RFC 9000 §16), as the client writes and reads them: HEADERS and DATA
//! on request streams; SETTINGS and GOAWAY on the control streams.

/// Frame types.
pub(crate) const DATA: u64 = 0x00;
pub(crate) const HEADERS: u64 = 0x01;
pub(crate) const SETTINGS: u64 = 0x04;
pub(crate) const GOAWAY: u64 = 0x07;

/// Unidirectional stream types.
pub(crate) const CONTROL_STREAM: u64 = 0x00;
pub(crate) const QPACK_ENCODER_STREAM: u64 = 0x02;
pub(crate) const QPACK_DECODER_STREAM: u64 = 0x03;

/// The largest value a variable-length integer holds.
pub(crate) const VARINT_MAX: u64 = (1 << 62) - 1;

/// Writes `v` (at most [`VARINT_MAX`]) in the fewest bytes.
pub(crate) fn put_varint(out: &mut Vec<u8>, v: u64) {
    debug_assert!(v <= VARINT_MAX);
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes());
    } else {
        out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes());
    }
}

/// Reads a variable-length integer from the front of `src`: its value
/// and its length, or `None` when `src` holds only part of it.
pub(crate) fn get_varint(src: &[u8]) -> Option<(u64, usize)> {
    let first = *src.first()?;
    let len = 1usize << (first >> 6);
    let bytes = src.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        v = (v << 8) | u64::from(b);
    }
    Some((v, len))
}

/// A frame's head: its type and its payload's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) kind: u64,
    pub(crate) len: u64,
    /// The head's own length in bytes.
    pub(crate) size: usize,
}

/// Reads a frame's head from the front of `src`, or `None` when `src`
/// holds only part of it.
pub(crate) fn head(src: &[u8]) -> Option<Head> {
    let (kind, a) = get_varint(src)?;
    let (len, b) = get_varint(&src[a..])?;
    Some(Head {
        kind,
        len,
        size: a + b,
    })
}

/// Writes a frame's head.
pub(crate) fn put_head(out: &mut Vec<u8>, kind: u64, len: u64) {
    put_varint(out, kind);
    put_varint(out, len);
}

/// The control stream's opening: its type, then SETTINGS. Nothing is set:
/// the defaults (no dynamic QPACK table, no blocked streams, no limit on
/// a field section) are what this client wants.
pub(crate) fn control_stream_opening() -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, CONTROL_STREAM);
    put_head(&mut out, SETTINGS, 0);
    out
}

/// A GOAWAY frame's payload: the id of the first request stream the
/// server will not process (RFC 9114 §5.2).
pub(crate) fn goaway_id(payload: &[u8]) -> Option<u64> {
    get_varint(payload).map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_take_the_fewest_bytes_and_read_back() {
        // RFC 9000 §A.1's examples.
        for (v, bytes) in [
            (37u64, &[0x25][..]),
            (15_293, &[0x7b, 0xbd][..]),
            (494_878_333, &[0x9d, 0x7f, 0x3e, 0x7d][..]),
            (
                151_288_809_941_952_652,
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
            ),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, bytes, "{v}");
            assert_eq!(get_varint(bytes), Some((v, bytes.len())));
            // Cut short, it is not read.
            assert_eq!(get_varint(&bytes[..bytes.len() - 1]), None, "{v}");
        }
        assert_eq!(get_varint(&[]), None);
    }

    #[test]
    fn a_frame_head_reads_back_and_knows_its_size() {
        let mut out = Vec::new();
        put_head(&mut out, HEADERS, 300);
        assert_eq!(
            head(&out),
            Some(Head {
                kind: HEADERS,
                len: 300,
                size: 3
            })
        );
        assert_eq!(head(&out[..2]), None);
    }

    #[test]
    fn the_control_stream_opens_with_empty_settings() {
        assert_eq!(control_stream_opening(), [0x00, 0x04, 0x00]);
        assert_eq!(goaway_id(&[0x40, 0x40]), Some(64));
    }
}
