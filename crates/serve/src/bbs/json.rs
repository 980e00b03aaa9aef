//! The JSON API: the same operations as the thesis's functions, on
//! resources.
//!
//! - `GET /api/boards` (`after`, `limit`): `{"total", "boards": [{"name",
//!   "messages"}], "next_after"}`
//! - `POST /api/boards` `{"name", "author", "msg", "key"}`: 201 `{"board",
//!   "id"}`, the board with its first message
//! - `GET /api/boards/{name}`: `{"name", "messages", "created"}`
//! - `GET /api/boards/{name}/messages` (`before`, `limit`): `{"board",
//!   "total", "messages": [{"id", "author", "msg", "time", "edited"}],
//!   "next_before"}`, newest first
//! - `POST /api/boards/{name}/messages` `{"author", "msg", "key"}`: 201
//!   `{"board", "id"}`
//! - `GET /api/boards/{name}/messages/{id}`: one message
//! - `PUT /api/boards/{name}/messages/{id}` `{"author", "msg", "key"}`: 200
//!   `{"board", "id"}`
//!
//! Errors are `{"error": "..."}` with the status. Times are unix seconds.
//! Path segments are percent-decoded (`+` is itself there).

use std::borrow::Cow;

use bytes::Bytes;
use hyper::header::{HeaderValue, LOCATION};
use hyper::{Response, StatusCode};
use serde::{Deserialize, Serialize};

use super::board::{Boards, Message, NewMessage};
use super::form::{self, Fields};
use super::{Answer, Done, Failure, Made, Route, Write, html, respond};
use crate::body::Body;

pub(crate) const CONTENT_TYPE: &str = "application/json";

/// The route of a path below `/api/boards/`.
pub(crate) fn route(rest: &str) -> Result<Route, Failure> {
    let mut segments = rest.split('/');
    let raw_name = segments.next().unwrap_or_default();
    let shape = (segments.next(), segments.next(), segments.next());
    if !matches!(shape, (None, ..) | (Some("messages"), None | Some(_), None)) {
        return Err(Failure::new(
            StatusCode::NOT_FOUND,
            format!(
                "no API path /api/boards/{rest}: use /api/boards/NAME, /api/boards/NAME/messages or /api/boards/NAME/messages/ID"
            ),
        ));
    }
    let bname = form::path_segment(raw_name, "board name")?;
    form::check_bname(&bname)?;
    Ok(match shape {
        (None, ..) => Route::ApiBoard(bname),
        (Some(_), None, _) => Route::ApiMessages(bname),
        (Some(_), Some(id), _) => Route::ApiMessage(bname, form::parse_id("the message id", id)?),
    })
}

#[derive(Serialize)]
struct BoardsOut<'a> {
    total: u64,
    boards: Vec<BoardOut<'a>>,
    next_after: Option<&'a str>,
}

#[derive(Serialize)]
struct BoardOut<'a> {
    name: &'a str,
    messages: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<u64>,
}

#[derive(Serialize)]
struct MessagesOut<'a> {
    board: &'a str,
    total: u64,
    messages: Vec<MessageOut<'a>>,
    next_before: Option<u64>,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    id: u64,
    author: Cow<'a, str>,
    msg: Cow<'a, str>,
    time: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    edited: Option<u64>,
}

impl<'a> From<Message<'a>> for MessageOut<'a> {
    fn from(m: Message<'a>) -> MessageOut<'a> {
        MessageOut {
            id: m.id,
            author: m.author(),
            msg: m.msg(),
            time: m.time(),
            edited: m.edited(),
        }
    }
}

#[derive(Serialize)]
struct WrittenOut<'a> {
    board: &'a str,
    id: u64,
}

#[derive(Serialize)]
struct ErrorOut<'a> {
    error: &'a str,
}

/// A body of `POST /api/boards`, `POST .../messages` or `PUT
/// .../messages/{id}` (`name` only in the first).
#[derive(Deserialize)]
struct MessageIn {
    name: Option<String>,
    author: Option<String>,
    msg: Option<String>,
    key: Option<String>,
}

fn json(status: StatusCode, value: &impl Serialize) -> Response<Body> {
    // Structs of strings and numbers always serialise.
    let body = serde_json::to_vec(value).expect("plain data serialises");
    respond(status, CONTENT_TYPE, Bytes::from(body))
}

/// `GET /api/boards`
pub(crate) fn boards(boards: &Boards, fields: &Fields<'_>) -> Answer {
    let (after, limit) = fields.after_and_limit()?;
    let list = boards.list(after, limit);
    let out = BoardsOut {
        total: list.total,
        boards: list
            .boards
            .iter()
            .map(|(name, messages)| BoardOut {
                name,
                messages: *messages,
                created: None,
            })
            .collect(),
        next_after: list.next_after.as_deref(),
    };
    Ok(json(StatusCode::OK, &out))
}

/// `GET /api/boards/{name}`
pub(crate) fn board(boards: &Boards, bname: &str) -> Answer {
    let board = boards.board(bname)?;
    let out = BoardOut {
        name: bname,
        messages: board.total(),
        created: board.created(),
    };
    Ok(json(StatusCode::OK, &out))
}

/// `GET /api/boards/{name}/messages`
pub(crate) fn messages(boards: &Boards, bname: &str, fields: &Fields<'_>) -> Answer {
    let (before, limit) = fields.before_and_limit()?;
    let board = boards.board(bname)?;
    let messages: Vec<MessageOut<'_>> = board.newest(before, limit).map(Into::into).collect();
    let out = MessagesOut {
        board: bname,
        total: board.total(),
        next_before: messages.last().map(|m| m.id).filter(|&id| id > 1),
        messages,
    };
    Ok(json(StatusCode::OK, &out))
}

/// `GET /api/boards/{name}/messages/{id}`
pub(crate) fn message(boards: &Boards, bname: &str, id: u64) -> Answer {
    let board = boards.board(bname)?;
    let message = board.found(bname, id)?;
    Ok(json(StatusCode::OK, &MessageOut::from(message)))
}

/// A body of the API must say it is JSON (`application/json`, parameters
/// such as `charset` allowed) or say nothing of its type, as a form body
/// must say it is a form: a body of another type is 415.
pub(crate) fn check_type(kind: Option<&HeaderValue>) -> Result<(), Failure> {
    let Some(kind) = kind else { return Ok(()) };
    if super::media_type(kind).eq_ignore_ascii_case(CONTENT_TYPE) {
        return Ok(());
    }
    Err(Failure::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "a body of type '{}' cannot be read here: send JSON with Content-Type: application/json",
            String::from_utf8_lossy(kind.as_bytes())
        ),
    ))
}

/// The write a POST or PUT of the API asks for.
pub(crate) fn write(route: &Route, body: &[u8]) -> Result<Write, Failure> {
    let input: MessageIn = serde_json::from_slice(body).map_err(|err| {
        let fields = match route {
            Route::ApiBoards => "{\"name\": ..., \"author\": ..., \"msg\": ..., \"key\": ...}",
            _ => "{\"author\": ..., \"msg\": ..., \"key\": ...}",
        };
        Failure::bad_request(format!("bad JSON body: {err} (send {fields})"))
    })?;
    let MessageIn {
        name,
        author,
        msg,
        key,
    } = input;
    Ok(match route {
        Route::ApiBoards => {
            let bname = name.ok_or_else(|| form::missing("field", "name"))?;
            form::check_bname(&bname)?;
            let first = new_message(author, msg, key)?;
            Write::Create { bname, first }
        }
        Route::ApiMessages(bname) => {
            let message = new_message(author, msg, key)?;
            let bname = bname.clone();
            Write::Post { bname, message }
        }
        Route::ApiMessage(bname, id) => {
            let message = new_message(author, msg, key)?;
            let (bname, id) = (bname.clone(), *id);
            Write::Edit { bname, id, message }
        }
        _ => unreachable!("only the API's POST and PUT routes write"),
    })
}

fn new_message(
    author: Option<String>,
    msg: Option<String>,
    key: Option<String>,
) -> Result<NewMessage, Failure> {
    form::new_message("field", author.as_deref(), msg.as_deref(), key.as_deref())
}

/// The answer to a write of the API.
pub(crate) fn written(done: &Done) -> Response<Body> {
    let bname = &done.bname;
    let created = done.made != Made::Edit;
    let out = WrittenOut {
        board: bname,
        id: done.id,
    };
    if !created {
        return json(StatusCode::OK, &out);
    }
    let mut response = json(StatusCode::CREATED, &out);
    let location = format!(
        "/api/boards/{}/messages/{}",
        html::url_encode(bname),
        done.id
    );
    if let Ok(value) = HeaderValue::try_from(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

pub(crate) fn failure(failure: &Failure) -> Response<Body> {
    json(
        failure.status,
        &ErrorOut {
            error: &failure.message,
        },
    )
}
