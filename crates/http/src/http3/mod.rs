//! dyno's own HTTP/3 framing over quinn (issue 50), as `http2` is over
//! TCP: the h3 crate spent about a fifth of the client's instructions in
//! QPACK Huffman coding (callgrind, the page against `dyno serve --h3`).
//! Not wired into the engine yet: this branch holds its pieces.
#![allow(dead_code)]

pub(crate) mod frame;
pub(crate) mod qpack;
