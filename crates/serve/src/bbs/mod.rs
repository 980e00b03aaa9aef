//! The thesis's bulletin board (BBS): boards of messages on the tree
//! database, served beside the fixed endpoints when the server is given a
//! database ([`crate::App::Bbs`]).
//!
//! Three front ends share one store ([`board`]) and one set of parameter
//! rules ([`form`]):
//!
//! - the thesis's five functions, answered in plain text ([`text`]):
//!   `/showBoard`, `/createBoard`, `/showBoardMessage`,
//!   `/createBoardMessage`, `/editMessage`, with the parameters `bname`,
//!   `author`, `msg`, `key`, `id` in the query string (so a load generator
//!   that only GETs can write) or in a form body;
//! - a JSON API under `/api/boards` ([`json`]);
//! - HTML pages for a browser under `/bbs` ([`html`]).
//!
//! A read (GET or HEAD without a body) is answered at once from a snapshot,
//! inside the connection's task, with no allocation beyond its answer's.
//! A write, and any request with a body, becomes a boxed future: the body
//! is read up to [`MAX_BODY`] bytes, and the commit runs on tokio's
//! blocking pool, since a durable database blocks until its log is on disk.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;

use bytes::Bytes;
use dyno_tree::{Database, TreeError};
use hyper::header::{ALLOW, CONNECTION, CONTENT_TYPE, HeaderValue, LOCATION};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};

use crate::RequestBody;
use crate::body::Body;

mod board;
mod form;
mod html;
mod json;
mod text;

use board::{BoardError, Boards, NewMessage};
use form::{Fields, MAX_MSG};

/// The largest request body read, in bytes: room for the largest valid
/// form (a 10 KiB message percent-encoded is 30 KiB) or JSON body (escaped
/// as `\u00XX`, 60 KiB); a larger one is refused with 413 unread.
pub(crate) const MAX_BODY: usize = 64 * 1024;

/// The BBS endpoints, for the server's index page (`/`).
pub(crate) const INDEX: &str = "\
\n\
The bulletin board (BBS), parameters in the query string or a form body:\n\
GET /showBoard                                   the boards (after=NAME, limit=N)\n\
GET /createBoard?bname=B&author=A&msg=M&key=K    a board with its first message\n\
GET /showBoardMessage?bname=B                    its messages, newest first (before=ID, limit=N)\n\
GET /createBoardMessage?bname=B&author=A&msg=M&key=K   post; answers the new id\n\
GET /editMessage?bname=B&id=N&author=A&msg=M&key=K     edit with the message's key\n\
JSON: GET/POST /api/boards, GET /api/boards/B, GET/POST /api/boards/B/messages,\n\
      GET/PUT /api/boards/B/messages/N\n\
Pages for a browser: /bbs\n";

/// A response, or the reason for an error response.
pub(crate) type Answer = Result<Response<Body>, Failure>;

/// Why a request failed: the status and a message that says how to do it
/// right. Each front end renders it its own way (text, JSON, a page).
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: StatusCode,
    pub message: String,
    /// The methods the path takes, for a 405's `Allow` header.
    allow: Option<&'static str>,
    /// The request body was left unread: close the connection after the
    /// answer rather than read what may be gigabytes.
    close: bool,
}

impl Failure {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            allow: None,
            close: false,
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, message)
    }

    /// The headers every error answer carries besides its content type.
    fn headers(&self, response: &mut Response<Body>) {
        if let Some(allow) = self.allow {
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static(allow));
        }
        if self.close {
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
    }
}

impl From<BoardError> for Failure {
    fn from(err: BoardError) -> Failure {
        let status = match &err {
            BoardError::NoBoard(_) | BoardError::NoMessage { .. } => StatusCode::NOT_FOUND,
            BoardError::Exists(_) => StatusCode::CONFLICT,
            BoardError::WrongKey { .. } => StatusCode::FORBIDDEN,
            // An edit the store refused is a bug of ours; anything else
            // (contention past all retries, the log failing) is the
            // database being unable to take writes now.
            BoardError::Store(err) if matches!(**err, TreeError::Conflict { .. }) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            BoardError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            BoardError::Writer => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Failure::new(status, err.to_string())
    }
}

/// How the BBS answers a request: at once, or after reading a body or
/// committing.
pub(crate) enum Handled<B> {
    /// The answer, and the request body to read and discard.
    Now(Response<Body>, B),
    Later(Pin<Box<dyn Future<Output = Response<Body>> + Send>>),
}

/// Whether `path` belongs to the BBS. Checked only when the server has a
/// BBS, after nothing else: a few byte comparisons.
pub(crate) fn owns(path: &str) -> bool {
    matches!(
        path,
        "/showBoard"
            | "/createBoard"
            | "/showBoardMessage"
            | "/createBoardMessage"
            | "/editMessage"
            | "/bbs"
            | "/api/boards"
    ) || path.starts_with("/bbs/")
        || path.starts_with("/api/boards/")
}

/// The front end a path belongs to: it decides how answers look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Front {
    Text,
    Json,
    Html,
}

impl Front {
    fn of(path: &str) -> Front {
        if path.starts_with("/api/") {
            Front::Json
        } else if path.starts_with("/bbs") {
            Front::Html
        } else {
            Front::Text
        }
    }

    fn render(self, answer: Answer) -> Response<Body> {
        answer.unwrap_or_else(|failure| {
            let mut response = match self {
                Front::Text => text::failure(&failure),
                Front::Json => json::failure(&failure),
                Front::Html => html::failure(&failure),
            };
            failure.headers(&mut response);
            response
        })
    }
}

/// What the path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    ShowBoard,
    CreateBoard,
    ShowBoardMessage,
    CreateBoardMessage,
    EditMessage,
    /// `/api/boards`
    ApiBoards,
    /// `/api/boards/{name}`
    ApiBoard(String),
    /// `/api/boards/{name}/messages`
    ApiMessages(String),
    /// `/api/boards/{name}/messages/{id}`
    ApiMessage(String, u64),
    /// `/bbs`: the boards; POST makes one.
    PageIndex,
    /// `/bbs/board`: a board's messages; POST posts one.
    PageBoard,
    /// `/bbs/edit`: the form to edit a message; POST edits it.
    PageEdit,
}

impl Route {
    fn parse(path: &str) -> Result<Route, Failure> {
        Ok(match path {
            "/showBoard" => Route::ShowBoard,
            "/createBoard" => Route::CreateBoard,
            "/showBoardMessage" => Route::ShowBoardMessage,
            "/createBoardMessage" => Route::CreateBoardMessage,
            "/editMessage" => Route::EditMessage,
            "/api/boards" => Route::ApiBoards,
            "/bbs" | "/bbs/" => Route::PageIndex,
            "/bbs/board" => Route::PageBoard,
            "/bbs/edit" => Route::PageEdit,
            _ => match path.strip_prefix("/api/boards/") {
                Some(rest) => json::route(rest)?,
                None => {
                    return Err(Failure::new(
                        StatusCode::NOT_FOUND,
                        format!("no page {path}: /bbs is the board index"),
                    ));
                }
            },
        })
    }

    /// The methods it takes, as an `Allow` header says them.
    fn allow(&self) -> &'static str {
        match self {
            Route::ShowBoard | Route::ShowBoardMessage => "GET, HEAD, POST",
            Route::CreateBoard | Route::CreateBoardMessage | Route::EditMessage => "GET, POST",
            Route::ApiBoards | Route::ApiMessages(_) => "GET, HEAD, POST",
            Route::ApiBoard(_) => "GET, HEAD",
            Route::ApiMessage(..) => "GET, HEAD, PUT",
            Route::PageIndex | Route::PageBoard | Route::PageEdit => "GET, HEAD, POST",
        }
    }

    /// Whether a GET writes (the thesis's write functions do).
    fn get_writes(&self) -> bool {
        matches!(
            self,
            Route::CreateBoard | Route::CreateBoardMessage | Route::EditMessage
        )
    }
}

/// The BBS of one server.
#[derive(Debug)]
pub(crate) struct Bbs {
    boards: Boards,
}

impl Bbs {
    pub(crate) fn new(db: Arc<Database>) -> Bbs {
        Bbs {
            boards: Boards::new(db),
        }
    }

    /// Answers `request`, whose path [`owns`] said is the BBS's.
    pub(crate) fn call<B: RequestBody>(self: &Arc<Self>, request: Request<B>) -> Handled<B> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path();
        let front = Front::of(path);
        let route = match Route::parse(path) {
            Ok(route) => route,
            Err(failure) => return Handled::Now(front.render(Err(failure)), body),
        };
        let allow = route.allow();
        if !allow.split(", ").any(|m| m == parts.method.as_str()) {
            let mut failure = Failure::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} does not take {}: use {allow}", path, parts.method),
            );
            failure.allow = Some(allow);
            return Handled::Now(front.render(Err(failure)), body);
        }
        let reads = matches!(parts.method, Method::GET | Method::HEAD) && !route.get_writes();
        if reads {
            let query = parts.uri.query().unwrap_or("");
            return Handled::Now(front.render(self.read(&route, query)), body);
        }
        let bbs = self.clone();
        Handled::Later(Box::pin(async move {
            front.render(bbs.write(route, parts, body).await)
        }))
    }

    /// A GET or HEAD of a page that only reads: answered from a snapshot.
    fn read(&self, route: &Route, query: &str) -> Answer {
        let fields = Fields::parse(None, query)?;
        let boards = &self.boards;
        match route {
            Route::ShowBoard => text::boards(boards, &fields),
            Route::ShowBoardMessage => text::messages(boards, &fields),
            Route::ApiBoards => json::boards(boards, &fields),
            Route::ApiBoard(bname) => json::board(boards, bname),
            Route::ApiMessages(bname) => json::messages(boards, bname, &fields),
            Route::ApiMessage(bname, id) => json::message(boards, bname, *id),
            Route::PageIndex => html::index(boards, &fields),
            Route::PageBoard => html::board(boards, &fields),
            Route::PageEdit => html::edit_form(boards, &fields),
            Route::CreateBoard | Route::CreateBoardMessage | Route::EditMessage => {
                unreachable!("a GET of a write goes to write()")
            }
        }
    }

    /// A write, or a request with a body: reads the body, then reads or
    /// commits.
    async fn write<B: RequestBody>(self: Arc<Self>, route: Route, parts: Parts, body: B) -> Answer {
        let query = parts.uri.query().unwrap_or("");
        let has_body = matches!(parts.method, Method::POST | Method::PUT);
        // A GET's body (there rarely is one) is read too, and ignored, so
        // that the connection stays in step for its next request.
        let raw = read_body(body).await?;
        if Front::of(parts.uri.path()) == Front::Json {
            // Only a POST or PUT of the API comes here.
            json::check_type(parts.headers.get(CONTENT_TYPE))?;
            let write = json::write(&route, &raw)?;
            let done = self.commit(write).await?;
            return Ok(json::written(&done));
        }
        let form = if has_body {
            Some(form_body(&parts, &raw)?)
        } else {
            None
        };
        let fields = Fields::parse(form, query)?;
        let write = match route {
            // A form posted to a page that only reads: read with its fields.
            Route::ShowBoard => return text::boards(&self.boards, &fields),
            Route::ShowBoardMessage => return text::messages(&self.boards, &fields),
            Route::CreateBoard | Route::PageIndex => Write::Create {
                bname: fields.bname()?.to_owned(),
                first: new_message(&fields)?,
            },
            Route::CreateBoardMessage | Route::PageBoard => Write::Post {
                bname: fields.bname()?.to_owned(),
                message: new_message(&fields)?,
            },
            Route::EditMessage | Route::PageEdit => Write::Edit {
                bname: fields.bname()?.to_owned(),
                id: fields.id()?,
                message: new_message(&fields)?,
            },
            Route::ApiBoards
            | Route::ApiBoard(_)
            | Route::ApiMessages(_)
            | Route::ApiMessage(..) => {
                unreachable!("the JSON API is handled above")
            }
        };
        let done = self.commit(write).await?;
        Ok(match Front::of(parts.uri.path()) {
            Front::Html => html::written(&done),
            _ => text::written(&done),
        })
    }

    /// Makes `write`. A post goes to its board's writer, which commits
    /// the posts that arrive together in one transaction; the rest runs on
    /// the blocking pool, since a durable commit waits for the disk and
    /// must not stall the connections this thread serves.
    async fn commit(self: Arc<Self>, write: Write) -> Result<Done, Failure> {
        if let Write::Post { bname, message } = write {
            let id = self.boards.post(&bname, message).await?;
            return Ok(Done {
                made: Made::Post,
                bname,
                id,
            });
        }
        tokio::task::spawn_blocking(move || {
            let boards = &self.boards;
            Ok(match write {
                Write::Create { bname, first } => Done {
                    made: Made::Board,
                    id: boards.create(&bname, &first)?,
                    bname,
                },
                Write::Edit { bname, id, message } => {
                    let NewMessage { author, msg, key } = message;
                    boards.edit(&bname, id, &author, &msg, &key)?;
                    Done {
                        made: Made::Edit,
                        bname,
                        id,
                    }
                }
                Write::Post { .. } => unreachable!("posts go to their board's writer"),
            })
        })
        .await
        .unwrap_or_else(|err| {
            Err(Failure::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the write failed inside the server: {err}"),
            ))
        })
    }
}

/// A write to make.
#[derive(Debug)]
pub(crate) enum Write {
    Create {
        bname: String,
        first: NewMessage,
    },
    Post {
        bname: String,
        message: NewMessage,
    },
    Edit {
        bname: String,
        id: u64,
        message: NewMessage,
    },
}

/// A write made.
#[derive(Debug)]
pub(crate) struct Done {
    made: Made,
    bname: String,
    /// The message made or edited.
    id: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    /// A board, with its first message.
    Board,
    Post,
    Edit,
}

/// `author`, `msg` and `key` of a form or query.
fn new_message(fields: &Fields<'_>) -> Result<NewMessage, Failure> {
    form::new_message(
        "parameter",
        fields.get("author"),
        fields.get("msg"),
        fields.get("key"),
    )
}

/// Reads a request body of at most [`MAX_BODY`] bytes.
async fn read_body<B: RequestBody>(body: B) -> Result<Vec<u8>, Failure> {
    let too_large = |len: u64| {
        let mut failure = Failure::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body is {len} bytes or more; the limit is {MAX_BODY} bytes (a message may be {MAX_MSG} bytes)"
            ),
        );
        failure.close = true;
        failure
    };
    // A Content-Length past the limit is refused before anything is read.
    let hint = body.size_hint();
    if hint.lower() > MAX_BODY as u64 {
        return Err(too_large(hint.lower()));
    }
    let mut raw = Vec::with_capacity(hint.lower() as usize);
    let mut body = pin!(body);
    while let Some(frame) = poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|err| {
            Failure::bad_request(format!("could not read the request body: {err}"))
        })?;
        if let Ok(data) = frame.into_data() {
            if raw.len() + data.len() > MAX_BODY {
                return Err(too_large((raw.len() + data.len()) as u64));
            }
            raw.extend_from_slice(&data);
        }
    }
    Ok(raw)
}

/// A form body as text: it must be `application/x-www-form-urlencoded`
/// (or say nothing of its type) and UTF-8.
fn form_body<'a>(parts: &Parts, raw: &'a [u8]) -> Result<&'a str, Failure> {
    if let Some(kind) = parts.headers.get(CONTENT_TYPE)
        && !media_type(kind).eq_ignore_ascii_case("application/x-www-form-urlencoded")
    {
        return Err(Failure::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "a body of type '{}' cannot be read: send the fields as application/x-www-form-urlencoded or in the query string",
                String::from_utf8_lossy(kind.as_bytes())
            ),
        ));
    }
    std::str::from_utf8(raw).map_err(|_| Failure::bad_request("bad form body: it is not UTF-8"))
}

/// A Content-Type's media type without its parameters (`charset` and the
/// like), trimmed; empty when the header is not text.
pub(crate) fn media_type(kind: &HeaderValue) -> &str {
    kind.to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
}

/// A response with the headers every BBS answer carries.
pub(crate) fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: Bytes,
) -> Response<Body> {
    let mut response = crate::routes::response(status, content_type, Body::full(body));
    response.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// A 303 to `location` (after a form's POST, so that reloading does not
/// post again).
pub(crate) fn see_other(location: String) -> Response<Body> {
    let mut response = respond(StatusCode::SEE_OTHER, text::CONTENT_TYPE, Bytes::new());
    // The location is made of percent-encoded parts, so it is a valid header.
    if let Ok(value) = HeaderValue::try_from(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// [`crate::fuzz::fields`].
pub(crate) fn fuzz_fields(
    body: Option<&str>,
    query: &str,
) -> Result<Vec<(String, String)>, String> {
    Fields::parse(body, query)
        .map(|f| f.pairs())
        .map_err(|failure| failure.message)
}

/// [`crate::fuzz::route`].
pub(crate) fn fuzz_route(path: &str) -> Result<(), String> {
    Route::parse(path)
        .map(drop)
        .map_err(|failure| failure.message)
}

#[cfg(test)]
mod tests;
