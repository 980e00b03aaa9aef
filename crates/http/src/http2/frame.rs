//! HTTP/2's frame layout (RFC 9113 §4, §6): the 9-byte header, the frame
//! types, flags, settings and error codes the client uses, and writers for
//! the frames it sends.

/// The connection preface a client sends before its first frame (§3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub(crate) const HEADER_LEN: usize = 9;

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const PRIORITY: u8 = 0x2;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY_FLAG: u8 = 0x20;

pub(crate) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

pub(crate) const NO_ERROR: u32 = 0x0;
pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(crate) const CANCEL: u32 = 0x8;
pub(crate) const COMPRESSION_ERROR: u32 = 0x9;

/// The largest frame payload the client accepts: the protocol's default,
/// which it never raises (nginx sends 8 KiB DATA frames anyway).
pub(crate) const MAX_FRAME: usize = 16_384;
/// The initial flow-control window of the protocol (§6.9.2).
pub(crate) const DEFAULT_WINDOW: i64 = 65_535;
/// The largest flow-control window (§6.9.1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;

/// A frame's header, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) len: usize,
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    pub(crate) stream: u32,
}

impl Head {
    pub(crate) fn parse(b: &[u8; HEADER_LEN]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// A frame type's name, for error messages.
pub(crate) fn name(kind: u8) -> String {
    match kind {
        DATA => "DATA".into(),
        HEADERS => "HEADERS".into(),
        PRIORITY => "PRIORITY".into(),
        RST_STREAM => "RST_STREAM".into(),
        SETTINGS => "SETTINGS".into(),
        PUSH_PROMISE => "PUSH_PROMISE".into(),
        PING => "PING".into(),
        GOAWAY => "GOAWAY".into(),
        WINDOW_UPDATE => "WINDOW_UPDATE".into(),
        CONTINUATION => "CONTINUATION".into(),
        other => format!("type 0x{other:02x}"),
    }
}

/// Appends a frame header.
pub(crate) fn write_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len < 1 << 24);
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&len[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Appends a SETTINGS frame with `settings`.
pub(crate) fn write_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    write_head(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub(crate) fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub(crate) fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    write_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub(crate) fn write_goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    write_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_head_reads_back() {
        let mut out = Vec::new();
        write_head(
            &mut out,
            0x01_02_03,
            HEADERS,
            END_HEADERS | END_STREAM,
            0x7fff_fffd,
        );
        let head = Head::parse(out[..HEADER_LEN].try_into().unwrap());
        assert_eq!(
            head,
            Head {
                len: 0x01_02_03,
                kind: HEADERS,
                flags: END_HEADERS | END_STREAM,
                stream: 0x7fff_fffd
            }
        );
        // The reserved bit is ignored on receipt.
        let mut b = [0u8; HEADER_LEN];
        b[5] = 0x80;
        b[8] = 3;
        assert_eq!(Head::parse(&b).stream, 3);
    }
}
