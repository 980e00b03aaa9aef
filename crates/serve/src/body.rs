//! Response bodies and the shared blob buffer they are cut from.
//!
//! Every response body is one `Bytes` value handed out whole, or repeated until
//! a byte count is reached. Static pages are `Bytes::from_static` and blobs are
//! refcounted slices of one buffer made once per server, so answering a request
//! never copies or allocates body bytes, however large the body.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};

/// Length of the shared blob buffer: bodies up to this size are one slice of it,
/// larger ones repeat it.
pub(crate) const BLOB_BUFFER_LEN: usize = 1 << 20;

/// Makes the shared blob buffer: deterministic pseudo-random bytes, so that
/// bodies differ byte to byte (nothing along the way can get away with
/// compressing or deduplicating runs) yet every server sends the same bytes.
pub(crate) fn blob_buffer() -> Bytes {
    // SplitMix64: tiny, fast and good enough to make bytes look random.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut buffer = Vec::with_capacity(BLOB_BUFFER_LEN);
    while buffer.len() < BLOB_BUFFER_LEN {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        buffer.extend_from_slice(&z.to_le_bytes());
    }
    buffer.truncate(BLOB_BUFFER_LEN);
    Bytes::from(buffer)
}

/// A response body: `remaining` bytes taken from `chunk`, repeating it as often
/// as needed. Its exact size hint lets hyper write a `Content-Length` header
/// (HEAD responses included) instead of chunked encoding.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    chunk: Bytes,
    remaining: u64,
}

impl Body {
    /// The whole of `bytes`, once.
    pub(crate) fn full(bytes: Bytes) -> Self {
        let remaining = bytes.len() as u64;
        Self {
            chunk: bytes,
            remaining,
        }
    }

    /// A static byte string, once.
    pub(crate) fn from_static(bytes: &'static [u8]) -> Self {
        Self::full(Bytes::from_static(bytes))
    }

    /// No body at all (`Content-Length: 0`).
    pub(crate) fn empty() -> Self {
        Self::full(Bytes::new())
    }

    /// Exactly `len` bytes of `chunk`, repeated from its start as often as
    /// needed. A body of `len <= chunk.len()` is a single slice.
    pub(crate) fn repeat(chunk: &Bytes, len: u64) -> Self {
        if len <= chunk.len() as u64 {
            // Fits in one slice: `len` fits in usize since it is at most chunk.len().
            return Self::full(chunk.slice(..len as usize));
        }
        // An empty chunk could never make progress towards `len`.
        assert!(!chunk.is_empty(), "cannot repeat an empty chunk");
        Self {
            chunk: chunk.clone(),
            remaining: len,
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.remaining == 0 {
            return Poll::Ready(None);
        }
        let chunk_len = this.chunk.len();
        let take = this.remaining.min(chunk_len as u64) as usize;
        this.remaining -= take as u64;
        let data = if this.remaining == 0 && take == chunk_len {
            // The last (often the only) frame: hand over the chunk itself.
            std::mem::take(&mut this.chunk)
        } else {
            this.chunk.slice(..take)
        };
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body as _;

    /// Drains a body synchronously (it never returns Pending).
    fn collect(mut body: Body) -> Vec<u8> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        let mut frames = 0;
        while let Poll::Ready(Some(frame)) = Pin::new(&mut body).poll_frame(&mut cx) {
            let frame = frame.unwrap();
            out.extend_from_slice(frame.data_ref().unwrap());
            frames += 1;
            assert!(frames < 1_000, "body never ends");
        }
        assert!(body.is_end_stream());
        out
    }

    #[test]
    fn blob_buffer_is_deterministic_and_varied() {
        let a = blob_buffer();
        let b = blob_buffer();
        assert_eq!(a.len(), BLOB_BUFFER_LEN);
        assert_eq!(a, b);
        let mut seen = [false; 256];
        for &byte in a.iter() {
            seen[usize::from(byte)] = true;
        }
        assert!(seen.iter().all(|&s| s), "every byte value should occur");
        assert_ne!(a[..4096], a[4096..8192]);
    }

    #[test]
    fn full_body_has_exact_size_and_content() {
        let body = Body::from_static(b"hello");
        assert_eq!(body.size_hint().exact(), Some(5));
        assert!(!body.is_end_stream());
        assert_eq!(collect(body), b"hello");
        let empty = Body::empty();
        assert!(empty.is_end_stream());
        assert_eq!(empty.size_hint().exact(), Some(0));
        assert!(collect(empty).is_empty());
    }

    #[test]
    fn repeat_cuts_and_cycles_the_chunk() {
        let chunk = Bytes::from_static(b"0123456789");
        assert_eq!(collect(Body::repeat(&chunk, 4)), b"0123");
        assert_eq!(collect(Body::repeat(&chunk, 10)), b"0123456789");
        let long = Body::repeat(&chunk, 25);
        assert_eq!(long.size_hint().exact(), Some(25));
        assert_eq!(collect(long), b"0123456789012345678901234");
        assert!(collect(Body::repeat(&chunk, 0)).is_empty());
    }

    #[test]
    fn repeat_does_not_copy_the_chunk() {
        let chunk = blob_buffer();
        let mut body = Body::repeat(&chunk, 3 * BLOB_BUFFER_LEN as u64 + 7);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) else {
            panic!("expected a data frame");
        };
        let data = frame.into_data().unwrap();
        assert_eq!(data.as_ptr(), chunk.as_ptr(), "frames share the buffer");
        assert_eq!(data.len(), BLOB_BUFFER_LEN);
    }
}
