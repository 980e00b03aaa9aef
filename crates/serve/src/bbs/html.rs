//! Pages for a person in a browser: `/bbs` lists the boards with a form to
//! make one, `/bbs/board?bname=B` shows a board's messages with a form to
//! post, `/bbs/edit?bname=B&id=N` the form to edit a message. Each form
//! posts to its own page, which answers 303 to the board (so a reload does
//! not post again) or an error page.
//!
//! Every value is HTML-escaped where it is written, and every value in a
//! link is percent-encoded; the Content-Security-Policy forbids scripts,
//! so even a value that slipped through would not run.

use std::fmt::Write as _;

use bytes::Bytes;
use dyno_model::html::push_escaped;
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use percent_encoding::{NON_ALPHANUMERIC, PercentEncode, utf8_percent_encode};

use super::board::{Boards, Message};
use super::form::{Fields, MAX_AUTHOR, MAX_BNAME, MAX_KEY, MAX_MSG};
use super::{Answer, Done, Failure, respond, see_other, text};
use crate::body::Body;

const CONTENT_TYPE: &str = "text/html; charset=utf-8";

/// No scripts, no remote anything; the one inline style sheet.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const STYLE: &str = "body{font:16px/1.45 system-ui,sans-serif;max-width:46rem;margin:1rem auto;padding:0 1rem;color:#222}\
a{color:#0645ad}table{border-collapse:collapse}td,th{padding:.2rem .8rem .2rem 0;text-align:left}\
article{border-top:1px solid #ccc;padding:.4rem 0}article p{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0}\
.meta{color:#666;font-size:.9rem}label{display:block;margin:.4rem 0}input,textarea{font:inherit;width:100%;box-sizing:border-box}\
textarea{height:6rem}.error{color:#a00}";

/// `value` percent-encoded for a URL's query or path: everything but
/// letters and digits, so it is safe in HTML attributes as it is.
pub(crate) fn url_encode(value: &str) -> PercentEncode<'_> {
    utf8_percent_encode(value, NON_ALPHANUMERIC)
}

/// A whole page: `title` (escaped here) and the body `content` writes.
fn page(status: StatusCode, title: &str, content: impl FnOnce(&mut String)) -> Response<Body> {
    let mut out = String::with_capacity(4096);
    out.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    push_escaped(&mut out, title);
    out.push_str(" · dyno BBS</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n");
    content(&mut out);
    out.push_str("\n</body></html>\n");
    let mut response = respond(status, CONTENT_TYPE, Bytes::from(out));
    let headers = response.headers_mut();
    headers.insert("content-security-policy", HeaderValue::from_static(CSP));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

/// The fields of a message form; `author` and `msg` prefilled.
fn message_fields(out: &mut String, author: &str, msg: &str, msg_label: &str) {
    let _ = write!(
        out,
        "<label>Your name <input name=\"author\" maxlength=\"{MAX_AUTHOR}\" value=\""
    );
    push_escaped(out, author);
    let _ = write!(
        out,
        "\"></label>\n<label>{msg_label} <textarea name=\"msg\" maxlength=\"{MAX_MSG}\" required>"
    );
    push_escaped(out, msg);
    let _ = write!(
        out,
        "</textarea></label>\n<label>Edit key (keep it to edit the message later) <input name=\"key\" type=\"password\" maxlength=\"{MAX_KEY}\" autocomplete=\"off\"></label>\n"
    );
}

/// `GET /bbs`: the boards, and a form to make one.
pub(crate) fn index(boards: &Boards, fields: &Fields<'_>) -> Answer {
    let (after, limit) = fields.after_and_limit()?;
    let list = boards.list(after, limit);
    Ok(page(StatusCode::OK, "Boards", |out| {
        let total = list.total;
        let _ = write!(out, "<h1>Boards</h1>\n<p>{total} board{}", text::s(total));
        if after.is_some() {
            out.push_str(" · <a href=\"/bbs\">first page</a>");
        }
        out.push_str("</p>\n");
        if !list.boards.is_empty() {
            out.push_str("<table><tr><th>Board<th>Messages\n");
            for (bname, count) in &list.boards {
                let _ = write!(
                    out,
                    "<tr><td><a href=\"/bbs/board?bname={}\">",
                    url_encode(bname)
                );
                push_escaped(out, bname);
                let _ = writeln!(out, "</a><td>{count}");
            }
            out.push_str("</table>\n");
        }
        if let Some(next) = &list.next_after {
            let _ = writeln!(
                out,
                "<p><a href=\"/bbs?after={}\">More boards</a></p>",
                url_encode(next)
            );
        }
        let _ = write!(
            out,
            "<h2>New board</h2>\n<form method=\"post\" action=\"/bbs\">\n<label>Board name <input name=\"bname\" maxlength=\"{MAX_BNAME}\" required></label>\n"
        );
        message_fields(out, "", "", "First message");
        out.push_str("<button>Create the board</button></form>");
    }))
}

/// `GET /bbs/board?bname=B`: a board's messages, newest first, and a form
/// to post.
pub(crate) fn board(boards: &Boards, fields: &Fields<'_>) -> Answer {
    let bname = fields.bname()?;
    let (before, limit) = fields.before_and_limit()?;
    let board = boards.board(bname)?;
    let encoded = url_encode(bname).to_string();
    let shown: Vec<Message<'_>> = board.newest(before, limit).collect();
    Ok(page(StatusCode::OK, bname, |out| {
        out.push_str("<p><a href=\"/bbs\">All boards</a></p>\n<h1>");
        push_escaped(out, bname);
        let total = board.total();
        let _ = write!(out, "</h1>\n<p>{total} message{}", text::s(total));
        if before.is_some() {
            let _ = write!(out, " · <a href=\"/bbs/board?bname={encoded}\">newest</a>");
        }
        out.push_str("</p>\n<form method=\"post\" action=\"/bbs/board\">\n<input type=\"hidden\" name=\"bname\" value=\"");
        push_escaped(out, bname);
        out.push_str("\">\n");
        message_fields(out, "", "", "Message");
        out.push_str("<button>Post</button></form>\n");
        for message in &shown {
            let id = message.id;
            let _ = write!(out, "<article id=\"m{id}\"><div class=\"meta\">#{id} <b>");
            push_escaped(out, &message.author());
            out.push_str("</b>");
            if let Some(time) = message.time() {
                let _ = write!(out, " · {}", when(time));
            }
            if let Some(edited) = message.edited() {
                let _ = write!(out, " · edited {}", when(edited));
            }
            let _ = write!(
                out,
                " · <a href=\"/bbs/edit?bname={encoded}&amp;id={id}\">edit</a></div><p>"
            );
            push_escaped(out, &message.msg());
            out.push_str("</p></article>\n");
        }
        if let Some(oldest) = shown.last().filter(|m| m.id > 1) {
            let _ = write!(
                out,
                "<p><a href=\"/bbs/board?bname={encoded}&amp;before={}\">Older messages</a></p>",
                oldest.id
            );
        }
    }))
}

/// `GET /bbs/edit?bname=B&id=N`: the form to edit a message.
pub(crate) fn edit_form(boards: &Boards, fields: &Fields<'_>) -> Answer {
    let bname = fields.bname()?;
    let id = fields.id()?;
    let board = boards.board(bname)?;
    let message = board.found(bname, id)?;
    Ok(page(StatusCode::OK, &format!("Edit message {id}"), |out| {
        let _ = write!(
            out,
            "<p><a href=\"/bbs/board?bname={}#m{id}\">Back to ",
            url_encode(bname)
        );
        push_escaped(out, bname);
        let _ = write!(
            out,
            "</a></p>\n<h1>Edit message {id}</h1>\n<form method=\"post\" action=\"/bbs/edit\">\n<input type=\"hidden\" name=\"bname\" value=\""
        );
        push_escaped(out, bname);
        let _ = writeln!(out, "\"><input type=\"hidden\" name=\"id\" value=\"{id}\">");
        message_fields(out, &message.author(), &message.msg(), "Message");
        out.push_str("<button>Save</button></form>");
    }))
}

/// The answer to a form's write: back to the board, at the message.
pub(crate) fn written(done: &Done) -> Response<Body> {
    see_other(format!(
        "/bbs/board?bname={}#m{}",
        url_encode(&done.bname),
        done.id
    ))
}

pub(crate) fn failure(failure: &Failure) -> Response<Body> {
    let status = failure.status;
    let title = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    page(status, &title, |out| {
        out.push_str("<h1>");
        push_escaped(out, &title);
        out.push_str("</h1>\n<p class=\"error\">");
        push_escaped(out, &failure.message);
        out.push_str(
            "</p>\n<p>Go back to change what you sent, or see <a href=\"/bbs\">all boards</a>.</p>",
        );
    })
}

/// Unix seconds as a UTC date and time.
fn when(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(
            || secs.to_string(),
            |t| t.strftime("%Y-%m-%d %H:%M UTC").to_string(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_encodes_links() {
        let mut out = String::new();
        push_escaped(&mut out, "<script>alert('x' & \"y\")</script>");
        assert_eq!(
            out,
            "&lt;script&gt;alert(&#39;x&#39; &amp; &quot;y&quot;)&lt;/script&gt;"
        );
        assert_eq!(url_encode("a b/c&d\"<").to_string(), "a%20b%2Fc%26d%22%3C");
        assert_eq!(when(0), "1970-01-01 00:00 UTC");
    }
}
