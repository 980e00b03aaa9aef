//! Fuzzes the response parser (`dyno_http::parse`) the way the engine drives
//! it: the input is a byte stream from a server, fed whole, split in two at
//! a position taken from the first byte, and one byte at a time.
//!
//! Checked: no panic; no call consumes more than it was given; and when no
//! run ends in an error, all three give the same responses (including what
//! `eof` says at the end). Runs that stop at an error may stop at different
//! places (a bad head is seen early in a whole buffer, late when dripped),
//! but the responses completed before it must agree.

#![no_main]

use dyno_http::parse::{ParseError, Response, ResponseParser, Step};
use libfuzzer_sys::fuzz_target;

type Outcome = Result<Response, ParseError>;

/// Plays the engine over `pieces`; returns the outcomes and whether a
/// `feed` failed (then the last outcome is its error and `eof` is not called).
fn drive<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
    head_request: bool,
) -> (Vec<Outcome>, bool) {
    let mut parser = ResponseParser::default();
    parser.start(head_request);
    let mut outcomes = Vec::new();
    let mut buf = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match parser.feed(&buf) {
                Ok(Step::NeedMore(n)) => {
                    assert!(n <= buf.len(), "NeedMore({n}) for {} bytes", buf.len());
                    buf.drain(..n);
                    break;
                }
                Ok(Step::Done(n, response)) => {
                    assert!(n <= buf.len(), "Done({n}) for {} bytes", buf.len());
                    assert!(!parser.started());
                    buf.drain(..n);
                    outcomes.push(Ok(response));
                    parser.start(head_request);
                    if buf.is_empty() {
                        break;
                    }
                }
                Err(e) => {
                    outcomes.push(Err(e));
                    return (outcomes, true);
                }
            }
        }
        assert!(
            buf.len() <= ResponseParser::MAX_HEAD_BYTES,
            "{} unconsumed bytes",
            buf.len()
        );
    }
    outcomes.push(parser.eof());
    (outcomes, false)
}

/// The completed responses before the first error.
fn responses(outcomes: &[Outcome]) -> impl Iterator<Item = &Response> {
    outcomes.iter().map_while(|o| o.as_ref().ok())
}

fn agree(a: &(Vec<Outcome>, bool), b: &(Vec<Outcome>, bool), what: &str) {
    if !a.1 && !b.1 {
        assert_eq!(a.0, b.0, "{what}");
    } else {
        for (x, y) in responses(&a.0).zip(responses(&b.0)) {
            assert_eq!(x, y, "{what}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, stream)) = data.split_first() else {
        return;
    };
    // Low bit: the requests were HEAD. The other seven: where to split.
    let head_request = control & 1 == 1;
    let at = usize::from(control >> 1) * stream.len() / 127;
    let (a, b) = stream.split_at(at.min(stream.len()));

    let whole = drive([stream], head_request);
    let split = drive([a, b], head_request);
    agree(&whole, &split, "whole vs split");
    if stream.len() <= 4096 {
        let dripped = drive(stream.chunks(1), head_request);
        agree(&whole, &dripped, "whole vs one byte at a time");
    }
});
