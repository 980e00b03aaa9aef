//! The thesis's five functions, answered in plain text: short and cheap to
//! make (the BBS benchmark reads `/showBoardMessage` a million times), one
//! line per board or message after a header line.
//!
//! ```text
//! board hello: 250 messages, showing 250 to 151; older: before=151
//! 250<TAB>alice<TAB>the message
//! ```
//!
//! Fields are separated by tabs; a backslash, tab, newline or carriage
//! return inside a value is written `\\`, `\t`, `\n`, `\r`, so every line is
//! one record.

use std::fmt::Write as _;

use hyper::{Response, StatusCode};

use super::board::Boards;
use super::form::Fields;
use super::{Answer, Done, Failure, Made, html, respond};
use crate::body::Body;

pub(crate) const CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// `/showBoard`: the boards in name order, with their message counts.
pub(crate) fn boards(boards: &Boards, fields: &Fields<'_>) -> Answer {
    let (after, limit) = fields.after_and_limit()?;
    let list = boards.list(after, limit);
    let names: usize = list.boards.iter().map(|(b, _)| b.len() + 24).sum();
    let mut out = String::with_capacity(64 + names);
    let total = list.total;
    let _ = write!(out, "{total} board{}", s(total));
    if let Some(after) = &list.next_after {
        let _ = write!(out, "; more: after={}", html::url_encode(after));
    }
    out.push('\n');
    for (bname, count) in &list.boards {
        push_escaped(&mut out, bname);
        let _ = writeln!(out, "\t{count}");
    }
    Ok(respond(StatusCode::OK, CONTENT_TYPE, out.into()))
}

/// `/showBoardMessage`: a board's messages, newest first.
pub(crate) fn messages(boards: &Boards, fields: &Fields<'_>) -> Answer {
    let bname = fields.bname()?;
    let (before, limit) = fields.before_and_limit()?;
    let board = boards.board(bname)?;
    let shown: Vec<_> = board.newest(before, limit).collect();
    // One allocation of the right size for the common case of messages
    // without characters to escape.
    let size: usize = shown
        .iter()
        .map(|m| m.author().len() + m.msg().len() + 24)
        .sum();
    let mut out = String::with_capacity(bname.len() + 96 + size);
    let total = board.total();
    let _ = write!(out, "board {bname}: {total} message{}", s(total));
    if let (Some(newest), Some(oldest)) = (shown.first(), shown.last()) {
        let _ = write!(out, ", showing {} to {}", newest.id, oldest.id);
        if oldest.id > 1 {
            let _ = write!(out, "; older: before={}", oldest.id);
        }
    }
    out.push('\n');
    for message in &shown {
        let _ = write!(out, "{}\t", message.id);
        push_escaped(&mut out, &message.author());
        out.push('\t');
        push_escaped(&mut out, &message.msg());
        out.push('\n');
    }
    Ok(respond(StatusCode::OK, CONTENT_TYPE, out.into()))
}

/// The answer to a write: what was made, with its id.
pub(crate) fn written(done: &Done) -> Response<Body> {
    let id = done.id;
    let bname = &done.bname;
    let line = match done.made {
        Made::Board => format!("created board {bname}: message {id}\n"),
        Made::Post => format!("posted message {id} to board {bname}\n"),
        Made::Edit => format!("edited message {id} of board {bname}\n"),
    };
    respond(StatusCode::OK, CONTENT_TYPE, line.into())
}

pub(crate) fn failure(failure: &Failure) -> Response<Body> {
    let body = format!("{}\n", failure.message);
    respond(failure.status, CONTENT_TYPE, body.into())
}

/// The plural ending for a count of `n`.
pub(crate) fn s(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Appends `value` with backslash, tab, newline and carriage return escaped.
fn push_escaped(out: &mut String, value: &str) {
    let special = |c: char| matches!(c, '\\' | '\t' | '\n' | '\r');
    if !value.contains(special) {
        out.push_str(value);
        return;
    }
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_on_their_line() {
        let mut out = String::new();
        push_escaped(&mut out, "plain");
        push_escaped(&mut out, " a\tb\nc\\d\r");
        assert_eq!(out, "plain a\\tb\\nc\\\\d\\r");
    }
}
