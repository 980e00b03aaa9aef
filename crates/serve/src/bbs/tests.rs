//! The BBS end to end: a real server on loopback with an in-memory
//! database, spoken to over raw HTTP/1.1 by the server tests' client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;

use dyno_tree::Database;
use serde_json::{Value, json};

use crate::tests::{Client, Reply, get};
use crate::{App, HELLO, ServerHandle, spawn, spawn_app};

fn bbs() -> ServerHandle {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    spawn_app(listener, 2, App::Bbs(Arc::new(Database::new()))).unwrap()
}

const FORM: Option<&str> = Some("application/x-www-form-urlencoded");
const JSON: Option<&str> = Some("application/json");

/// Asserts the status and that the body says `says`; returns the body.
#[track_caller]
fn expect(reply: &Reply, status: u16, says: &str) -> String {
    let text = reply.text();
    assert_eq!(reply.status, status, "{text}");
    assert!(text.contains(says), "expected {says:?} in: {text}");
    text
}

/// The server still answers, BBS and plain endpoints alike.
#[track_caller]
fn still_serving(addr: SocketAddr) {
    assert_eq!(get(addr, "/hello").body, HELLO);
    assert_eq!(get(addr, "/showBoard").status, 200);
}

/// POSTs the form `body` to `path`.
fn post_form(c: &mut Client, path: &str, body: &[u8]) -> Reply {
    c.send_body("POST", path, FORM, body)
}

/// Sends `body` as JSON to `path` by `method`.
fn send_json(c: &mut Client, method: &str, path: &str, body: &Value) -> Reply {
    c.send_body(method, path, JSON, body.to_string().as_bytes())
}

fn json_body(reply: &Reply) -> Value {
    assert_eq!(reply.header("content-type"), Some("application/json"));
    serde_json::from_slice(&reply.body).unwrap()
}

#[test]
fn the_five_functions_work_end_to_end() {
    let server = bbs();
    let mut c = Client::connect(server.local_addr());
    let reply = c.get("/createBoard?bname=hello&author=ann&msg=first+post&key=s3cret");
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    expect(&reply, 200, "created board hello: message 1\n");
    expect(
        &c.get("/createBoardMessage?bname=hello&author=bob&msg=a%26b%3Dc+%E3%81%82&key=k2"),
        200,
        "posted message 2 to board hello\n",
    );
    let text = expect(&c.get("/showBoardMessage?bname=hello"), 200, "");
    assert_eq!(
        text,
        "board hello: 2 messages, showing 2 to 1\n2\tbob\ta&b=c あ\n1\tann\tfirst post\n"
    );
    // The wrong key changes nothing; the right one edits.
    expect(
        &c.get("/editMessage?bname=hello&id=1&author=eve&msg=owned&key=guess"),
        403,
        "wrong key for message 1",
    );
    expect(
        &c.get("/editMessage?bname=hello&id=1&author=ann&msg=line1%0Aline2&key=s3cret"),
        200,
        "edited message 1 of board hello\n",
    );
    let text = expect(&c.get("/showBoardMessage?bname=hello"), 200, "");
    assert!(text.ends_with("1\tann\tline1\\nline2\n"), "{text}");
    expect(
        &c.get("/createBoard?bname=other&author=x&msg=y&key=z"),
        200,
        "",
    );
    let text = expect(&c.get("/showBoard"), 200, "");
    assert_eq!(text, "2 boards\nhello\t2\nother\t1\n");
    // The same by POST with a form body.
    let reply = post_form(
        &mut c,
        "/createBoardMessage",
        b"bname=hello&author=cy&msg=by+form&key=k",
    );
    expect(&reply, 200, "posted message 3 to board hello");
    let reply = post_form(&mut c, "/showBoardMessage", b"bname=hello&limit=1");
    expect(&reply, 200, "3\tcy\tby form\n");
    // HEAD reads answer the length only.
    c.send("HEAD", "/showBoardMessage?bname=hello");
    let head = c.read(true);
    assert_eq!(head.status, 200);
    assert!(head.header("content-length").is_some());
    // No key is ever shown.
    for path in [
        "/showBoardMessage?bname=hello",
        "/api/boards/hello/messages",
        "/api/boards/hello/messages/1",
        "/bbs/board?bname=hello",
        "/bbs/edit?bname=hello&id=1",
    ] {
        let text = expect(&c.get(path), 200, "");
        assert!(
            !text.contains("s3cret") && !text.contains("k2"),
            "{path}: {text}"
        );
    }
}

#[test]
fn unknown_boards_ids_and_existing_boards_say_so() {
    let server = bbs();
    let mut c = Client::connect(server.local_addr());
    expect(&c.get("/createBoard?bname=b&author=a&msg=m&key=k"), 200, "");
    expect(
        &c.get("/showBoardMessage?bname=b"),
        200,
        "board b: 1 message, showing 1 to 1\n",
    );
    expect(&c.get("/showBoard"), 200, "1 board\n");
    expect(
        &c.get("/createBoard?bname=b&author=a&msg=m&key=k"),
        409,
        "a board named 'b' exists already",
    );
    for path in [
        "/showBoardMessage?bname=nope",
        "/createBoardMessage?bname=nope&author=a&msg=m&key=k",
        "/editMessage?bname=nope&id=1&author=a&msg=m&key=k",
    ] {
        expect(&c.get(path), 404, "there is no board named 'nope'");
    }
    expect(
        &c.get("/editMessage?bname=b&id=2&author=a&msg=m&key=k"),
        404,
        "board 'b' has no message 2",
    );
    for id in ["x", "0", "-1", "1.5", ""] {
        expect(
            &c.get(&format!(
                "/editMessage?bname=b&id={id}&author=a&msg=m&key=k"
            )),
            400,
            "id must be a message number",
        );
    }
    still_serving(server.local_addr());
}

#[test]
fn listings_are_newest_first_and_paged() {
    let server = bbs();
    let mut c = Client::connect(server.local_addr());
    expect(
        &c.get("/createBoard?bname=big&author=a&msg=1&key=k"),
        200,
        "",
    );
    for i in 2..=250 {
        c.get(&format!(
            "/createBoardMessage?bname=big&author=a&msg={i}&key=k"
        ));
    }
    let text = expect(&c.get("/showBoardMessage?bname=big"), 200, "");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("board big: 250 messages, showing 250 to 151; older: before=151")
    );
    let ids: Vec<u64> = lines
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids, (151..=250).rev().collect::<Vec<_>>());
    let text = expect(
        &c.get("/showBoardMessage?bname=big&before=151&limit=1000"),
        200,
        "",
    );
    assert!(
        text.starts_with("board big: 250 messages, showing 150 to 1\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 151);
    let text = expect(&c.get("/showBoardMessage?bname=big&before=1"), 200, "");
    assert_eq!(text, "board big: 250 messages\n");
    for limit in ["0", "1001", "x"] {
        expect(
            &c.get(&format!("/showBoardMessage?bname=big&limit={limit}")),
            400,
            "limit must be a whole number from 1 to 1000",
        );
    }
    // The JSON API pages the same way.
    let page = json_body(&c.get("/api/boards/big/messages?limit=2&before=100"));
    assert_eq!(page["total"], 250);
    assert_eq!(page["messages"][0]["id"], 99);
    assert_eq!(page["messages"][1]["msg"], "98");
    assert_eq!(page["next_before"], 98);
    // Boards page by name.
    for b in ["c", "a"] {
        expect(
            &c.get(&format!("/createBoard?bname={b}&author=a&msg=1&key=k")),
            200,
            "",
        );
    }
    let text = expect(&c.get("/showBoard?limit=2"), 200, "");
    assert_eq!(text, "3 boards; more: after=big\na\t1\nbig\t250\n");
    let text = expect(&c.get("/showBoard?limit=2&after=big"), 200, "");
    assert_eq!(text, "3 boards\nc\t1\n");
}

#[test]
fn pages_escape_what_people_wrote() {
    let server = bbs();
    let addr = server.local_addr();
    let mut c = Client::connect(addr);
    let script = "%3Cscript%3Ealert(1)%3C%2Fscript%3E";
    expect(
        &c.get(&format!(
            "/createBoard?bname=%3Cb%3E%22x&author=%3Ci%3Eeve&msg={script}&key=k"
        )),
        200,
        "",
    );
    for path in [
        "/bbs",
        "/bbs/board?bname=%3Cb%3E%22x",
        "/bbs/edit?bname=%3Cb%3E%22x&id=1",
    ] {
        let reply = c.get(path);
        let page = expect(&reply, 200, "&lt;b&gt;&quot;x");
        assert_eq!(
            reply.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        let csp = reply.header("content-security-policy").unwrap();
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(
            !page.contains("<script") && !page.contains("<b>\"") && !page.contains("<i>"),
            "{path}: {page}"
        );
        if path != "/bbs" {
            assert!(
                page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                "{page}"
            );
            assert!(page.contains("&lt;i&gt;eve"), "{page}");
        }
    }
    // Links carry the name percent-encoded.
    let page = c.get("/bbs").text();
    assert!(
        page.contains("href=\"/bbs/board?bname=%3Cb%3E%22x\""),
        "{page}"
    );
    // Errors are pages too, escaped.
    let reply = c.get("/bbs/board?bname=%3Cscript%3E");
    let page = expect(
        &reply,
        404,
        "there is no board named &#39;&lt;script&gt;&#39;",
    );
    assert!(!page.contains("<script"), "{page}");
}

#[test]
fn forms_post_to_their_pages_and_go_back_to_the_board() {
    let server = bbs();
    let mut c = Client::connect(server.local_addr());
    let reply = post_form(&mut c, "/bbs", b"bname=our+board&author=ann&msg=hi&key=k");
    assert_eq!(reply.status, 303, "{}", reply.text());
    assert_eq!(
        reply.header("location"),
        Some("/bbs/board?bname=our%20board#m1")
    );
    let reply = post_form(
        &mut c,
        "/bbs/board",
        b"bname=our+board&author=bo&msg=yo&key=j",
    );
    assert_eq!(
        reply.header("location"),
        Some("/bbs/board?bname=our%20board#m2")
    );
    let reply = post_form(
        &mut c,
        "/bbs/edit",
        b"bname=our+board&id=2&author=bo&msg=edited&key=wrong",
    );
    expect(&reply, 403, "wrong key for message 2");
    assert_eq!(
        reply.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let reply = post_form(
        &mut c,
        "/bbs/edit",
        b"bname=our+board&id=2&author=bo&msg=edited&key=j",
    );
    assert_eq!(reply.status, 303);
    let page = expect(&c.get("/bbs/board?bname=our%20board"), 200, "edited");
    assert!(page.contains("<article id=\"m2\">"), "{page}");
    assert!(page.contains("action=\"/bbs/board\""), "{page}");
    let form = expect(
        &c.get("/bbs/edit?bname=our%20board&id=2"),
        200,
        ">edited</textarea>",
    );
    assert!(form.contains("value=\"bo\""), "{form}");
}

#[test]
fn json_api_round_trip() {
    let server = bbs();
    let mut c = Client::connect(server.local_addr());
    let create = json!({"name": "a/b c", "author": "ann", "msg": "<hi>", "key": "k"});
    let reply = send_json(&mut c, "POST", "/api/boards", &create);
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(
        reply.header("location"),
        Some("/api/boards/a%2Fb%20c/messages/1")
    );
    assert_eq!(json_body(&reply), json!({"board": "a/b c", "id": 1}));
    let reply = send_json(&mut c, "POST", "/api/boards", &create);
    assert_eq!(
        json_body(&reply),
        json!({"error": "a board named 'a/b c' exists already"})
    );
    assert_eq!(reply.status, 409);
    let post = json!({"author": "bob", "msg": "two", "key": "k2"});
    let reply = send_json(&mut c, "POST", "/api/boards/a%2Fb%20c/messages", &post);
    assert_eq!(
        (reply.status, json_body(&reply)["id"].clone()),
        (201, json!(2))
    );
    let boards = json_body(&c.get("/api/boards"));
    assert_eq!(
        boards,
        json!({"total": 1, "boards": [{"name": "a/b c", "messages": 2}], "next_after": null})
    );
    let board = json_body(&c.get("/api/boards/a%2Fb%20c"));
    assert_eq!(board["messages"], 2);
    assert!(board["created"].as_u64().unwrap() > 1_600_000_000);
    let list = json_body(&c.get("/api/boards/a%2Fb%20c/messages"));
    assert_eq!(list["total"], 2);
    assert_eq!(list["next_before"], Value::Null);
    let messages = list["messages"].as_array().unwrap();
    assert_eq!(
        (messages[0]["id"].clone(), messages[0]["author"].clone()),
        (json!(2), json!("bob"))
    );
    assert_eq!(messages[1]["msg"], "<hi>");
    assert!(messages[1].get("key").is_none() && messages[1].get("edited").is_none());
    let edit = json!({"author": "bob", "msg": "2!", "key": "nope"});
    let reply = send_json(&mut c, "PUT", "/api/boards/a%2Fb%20c/messages/2", &edit);
    assert_eq!(reply.status, 403);
    assert!(
        json_body(&reply)["error"]
            .as_str()
            .unwrap()
            .contains("wrong key")
    );
    let edit = json!({"author": "bob", "msg": "2!", "key": "k2"});
    let reply = send_json(&mut c, "PUT", "/api/boards/a%2Fb%20c/messages/2", &edit);
    assert_eq!(
        (reply.status, json_body(&reply)),
        (200, json!({"board": "a/b c", "id": 2}))
    );
    let message = json_body(&c.get("/api/boards/a%2Fb%20c/messages/2"));
    assert_eq!(message["msg"], "2!");
    assert!(message["edited"].as_u64().is_some());
    // Errors are JSON too.
    for (method, path, body, status, says) in [
        (
            "GET",
            "/api/boards/nope",
            "",
            404,
            "there is no board named 'nope'",
        ),
        ("GET", "/api/boards/nope/messages", "", 404, "no board"),
        (
            "GET",
            "/api/boards/a%2Fb%20c/messages/9",
            "",
            404,
            "has no message 9",
        ),
        (
            "GET",
            "/api/boards/a%2Fb%20c/messages/x",
            "",
            400,
            "message number",
        ),
        ("GET", "/api/boards/a%2Fb%20c/other", "", 404, "no API path"),
        (
            "GET",
            "/api/boards/%zz",
            "",
            400,
            "'%zz' is not a percent escape",
        ),
        ("GET", "/api/boards/%FF", "", 400, "not UTF-8"),
        ("DELETE", "/api/boards/a%2Fb%20c", "", 405, "use GET, HEAD"),
        (
            "POST",
            "/api/boards",
            "{",
            400,
            "(send {\"name\": ..., \"author\": ..., \"msg\": ..., \"key\": ...})",
        ),
        ("POST", "/api/boards", "[1]", 400, "bad JSON body"),
        (
            "POST",
            "/api/boards/b/messages",
            "{",
            400,
            "(send {\"author\": ..., \"msg\": ..., \"key\": ...})",
        ),
        (
            "POST",
            "/api/boards",
            "{\"name\":\"n\",\"author\":\"a\",\"msg\":\"m\"}",
            400,
            "missing field 'key'",
        ),
        (
            "POST",
            "/api/boards",
            "{\"author\":\"a\",\"msg\":\"m\",\"key\":\"k\"}",
            400,
            "missing field 'name'",
        ),
        (
            "POST",
            "/api/boards",
            "{\"name\":\"\",\"author\":\"a\",\"msg\":\"m\",\"key\":\"k\"}",
            400,
            "bname is empty",
        ),
        (
            "POST",
            "/api/boards/nope/messages",
            "{\"author\":\"a\",\"msg\":\"m\",\"key\":\"k\"}",
            404,
            "no board",
        ),
    ] {
        let reply = c.send_body(method, path, JSON, body.as_bytes());
        let error = json_body(&reply)["error"].as_str().unwrap().to_owned();
        assert_eq!(reply.status, status, "{method} {path}: {error}");
        assert!(error.contains(says), "{method} {path}: {error}");
    }
    // A JSON body must say it is JSON (or say nothing of its type), as a
    // form must say it is a form; nothing is written otherwise.
    let post = "{\"author\":\"a\",\"msg\":\"typed\",\"key\":\"k\"}";
    for kind in ["text/plain", "application/x-www-form-urlencoded"] {
        let reply = c.send_body(
            "POST",
            "/api/boards/a%2Fb%20c/messages",
            Some(kind),
            post.as_bytes(),
        );
        let error = json_body(&reply)["error"].as_str().unwrap().to_owned();
        assert_eq!(reply.status, 415, "{kind}: {error}");
        assert!(
            error.contains(kind) && error.contains("application/json"),
            "{error}"
        );
    }
    for kind in [None, Some("application/json; charset=utf-8")] {
        let reply = c.send_body(
            "POST",
            "/api/boards/a%2Fb%20c/messages",
            kind,
            post.as_bytes(),
        );
        assert_eq!(reply.status, 201, "{kind:?}: {}", reply.text());
    }
    still_serving(server.local_addr());
}

#[test]
fn bad_input_is_refused_with_a_reason_and_the_server_goes_on() {
    let server = bbs();
    let addr = server.local_addr();
    let mut c = Client::connect(addr);
    expect(&c.get("/createBoard?bname=b&author=a&msg=m&key=k"), 200, "");
    let long = |n: usize| "x".repeat(n);
    let cases: Vec<(String, u16, String)> = vec![
        (
            "/createBoardMessage?bname=b&msg=m&key=k".into(),
            400,
            "missing parameter 'author'".into(),
        ),
        (
            "/createBoardMessage?bname=b&author=a&key=k".into(),
            400,
            "missing parameter 'msg'".into(),
        ),
        (
            "/createBoardMessage?bname=b&author=a&msg=m".into(),
            400,
            "missing parameter 'key'".into(),
        ),
        (
            "/createBoardMessage?author=a&msg=m&key=k".into(),
            400,
            "missing parameter 'bname'".into(),
        ),
        (
            "/editMessage?bname=b&author=a&msg=m&key=k".into(),
            400,
            "missing parameter 'id'".into(),
        ),
        (
            "/showBoardMessage".into(),
            400,
            "missing parameter 'bname'".into(),
        ),
        (
            "/showBoardMessage?bname=".into(),
            400,
            "bname is empty".into(),
        ),
        (
            "/createBoardMessage?bname=b&author=a%1B&msg=m&key=k".into(),
            400,
            "author holds a control character".into(),
        ),
        (
            "/createBoardMessage?bname=b&author=a&msg=m%07&key=k".into(),
            400,
            "msg holds a control character".into(),
        ),
        (
            "/createBoard?bname=a%0Ab&author=a&msg=m&key=k".into(),
            400,
            "control character".into(),
        ),
        (
            format!("/createBoard?bname={}&author=a&msg=m&key=k", long(101)),
            400,
            "bname is 101 bytes long; the limit is 100 bytes".into(),
        ),
        (
            format!(
                "/createBoardMessage?bname=b&author={}&msg=m&key=k",
                long(101)
            ),
            400,
            "author is 101 bytes long; the limit is 100 bytes".into(),
        ),
        (
            format!(
                "/createBoardMessage?bname=b&author=a&msg={}&key=k",
                long(10241)
            ),
            400,
            "msg is 10241 bytes long; the limit is 10240 bytes".into(),
        ),
        (
            format!(
                "/createBoardMessage?bname=b&author=a&msg=m&key={}",
                long(101)
            ),
            400,
            "key is 101 bytes long; the limit is 100 bytes".into(),
        ),
        (
            "/showBoardMessage?bname=b%zz".into(),
            400,
            "bad query string: '%zz' is not a percent escape".into(),
        ),
        (
            "/showBoardMessage?bname=b%4".into(),
            400,
            "'%4' is not a percent escape".into(),
        ),
        (
            "/showBoardMessage?bname=%FF%FE".into(),
            400,
            "the value of 'bname' is not UTF-8".into(),
        ),
        (
            "/showBoardMessage?bname=hello&bname=hello2".into(),
            400,
            "parameter 'bname' is given twice in the query string".into(),
        ),
        (
            "/createBoardMessage?bname=b&author=a&msg=m&key=k&msg=n".into(),
            400,
            "parameter 'msg' is given twice".into(),
        ),
        ("/bbs/nothing".into(), 404, "no page /bbs/nothing".into()),
    ];
    for (path, status, says) in &cases {
        let reply = c.get(path);
        expect(&reply, *status, says);
    }
    // A message of exactly the limit is taken.
    expect(
        &c.get(&format!(
            "/createBoardMessage?bname=b&author={}&msg={}&key={}",
            long(100),
            long(10240),
            long(100)
        )),
        200,
        "posted message 2",
    );
    // Wrong methods.
    let reply = c.send_body("DELETE", "/showBoard", None, b"");
    expect(
        &reply,
        405,
        "/showBoard does not take DELETE: use GET, HEAD, POST",
    );
    assert_eq!(reply.header("allow"), Some("GET, HEAD, POST"));
    let reply = c.send_body("PUT", "/createBoardMessage", FORM, b"");
    assert_eq!(
        (reply.status, reply.header("allow")),
        (405, Some("GET, POST"))
    );
    let reply = c.send_body("PUT", "/api/boards", JSON, b"{}");
    assert_eq!(reply.status, 405);
    // A body that is not a form, or not UTF-8.
    let reply = c.send_body(
        "POST",
        "/createBoardMessage",
        Some("multipart/form-data; boundary=x"),
        b"--x--",
    );
    expect(&reply, 415, "application/x-www-form-urlencoded");
    let reply = post_form(&mut c, "/createBoardMessage", b"bname=b&msg=\xff");
    expect(&reply, 400, "bad form body: it is not UTF-8");
    let reply = post_form(
        &mut c,
        "/createBoardMessage",
        b"bname=b&author=a&msg=%ZZ&key=k",
    );
    expect(&reply, 400, "bad form body: '%ZZ' is not a percent escape");
    still_serving(addr);

    // A declared body past the limit is refused unread, and the connection
    // closed.
    let mut big = Client::connect(addr);
    big.send_raw(b"POST /createBoardMessage HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n");
    let reply = big.read(false);
    expect(&reply, 413, "the limit is 65536 bytes");
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(big.is_closed());
    still_serving(addr);
    // So is a chunked one, once it passes the limit.
    let mut chunked = Client::connect(addr);
    let chunk = format!("{:x}\r\n{}\r\n", 40_000, "m".repeat(40_000));
    let raw = format!(
        "POST /api/boards/b/messages HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n{chunk}{chunk}0\r\n\r\n"
    );
    chunked.send_raw(raw.as_bytes());
    let reply = chunked.read(false);
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert!(
        json_body(&reply)["error"]
            .as_str()
            .unwrap()
            .contains("65536")
    );
    still_serving(addr);
    // Raw bytes in the request line are not even HTTP: 400, the connection
    // closed, and the server goes on.
    let mut junk = Client::connect(addr);
    junk.send_raw(b"GET /showBoardMessage?bname=\xff\xfe HTTP/1.1\r\nHost: t\r\n\r\n");
    expect(&junk.read(false), 400, "not HTTP/1.1");
    assert!(junk.is_closed());
    still_serving(addr);
    // Nothing was posted by any of it.
    let text = expect(&get(addr, "/showBoardMessage?bname=b"), 200, "");
    assert!(text.starts_with("board b: 2 messages"), "{text}");
}

#[test]
fn concurrent_posts_to_one_board_all_land_with_distinct_ids() {
    let server = bbs();
    let addr = server.local_addr();
    expect(
        &get(addr, "/createBoard?bname=hot&author=a&msg=0&key=k"),
        200,
        "",
    );
    let (threads, posts) = (8, 50);
    let ids: Vec<u64> = (0..threads)
        .map(|t| {
            thread::spawn(move || {
                let mut c = Client::connect(addr);
                (0..posts)
                    .map(|i| {
                        let reply = c.get(&format!(
                            "/createBoardMessage?bname=hot&author=t{t}&msg={i}&key=k"
                        ));
                        let text = expect(&reply, 200, "posted message ");
                        text["posted message ".len()..]
                            .split(' ')
                            .next()
                            .unwrap()
                            .parse()
                            .unwrap()
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (2..=threads * posts + 1).collect::<Vec<u64>>());
    // Every post is listed, each thread's in the order it made them.
    let text = expect(
        &get(addr, "/showBoardMessage?bname=hot&limit=1000"),
        200,
        "",
    );
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len() as u64, threads * posts + 1);
    for t in 0..threads {
        let author = format!("t{t}");
        let mine: Vec<u64> = lines
            .iter()
            .rev()
            .filter_map(|l| {
                let mut f = l.split('\t');
                let (_, a, m) = (f.next()?, f.next()?, f.next()?);
                (a == author).then(|| m.parse().unwrap())
            })
            .collect();
        assert_eq!(mine, (0..posts).collect::<Vec<u64>>(), "{author}");
    }
}

#[test]
fn posts_to_different_boards_stay_apart() {
    let server = bbs();
    let addr = server.local_addr();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            thread::spawn(move || {
                let mut c = Client::connect(addr);
                expect(
                    &c.get(&format!("/createBoard?bname=b{t}&author=a&msg=0&key=k")),
                    200,
                    "",
                );
                for i in 1..=(20 + t) {
                    c.get(&format!(
                        "/createBoardMessage?bname=b{t}&author=a&msg={i}&key=k"
                    ));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let text = expect(&get(addr, "/showBoard"), 200, "");
    assert_eq!(text, "4 boards\nb0\t21\nb1\t22\nb2\t23\nb3\t24\n");
}

#[test]
fn the_plain_server_has_no_bbs_and_the_index_lists_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let plain = spawn(listener, 1).unwrap();
    expect(&get(plain.local_addr(), "/showBoard"), 404, "not found");
    assert!(!get(plain.local_addr(), "/").text().contains("showBoard"));
    let server = bbs();
    let index = expect(
        &get(server.local_addr(), "/"),
        200,
        "/showBoardMessage?bname=B",
    );
    assert!(index.contains("/blob/<size>"), "{index}");
}

/// Sends `raw` on a new connection, reads what comes back until the server
/// closes (bounded by the client's read timeout) and returns it.
fn raw_exchange(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    // A server that answers before reading everything may close meanwhile.
    let _ = stream.write_all(raw);
    let mut back = Vec::new();
    let mut buf = [0; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => back.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    back
}

#[test]
fn malformed_requests_get_a_status_and_a_reason_not_a_dropped_connection() {
    let server = bbs();
    let addr = server.local_addr();
    let many_headers: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "raw bytes in the request line",
            b"GET /showBoardMessage?bname=\xff\xfe HTTP/1.1\r\nHost: t\r\n\r\n".to_vec(),
            "400",
            "request line",
        ),
        (
            "a 200 KB query string",
            format!(
                "GET /showBoardMessage?bname={} HTTP/1.1\r\nHost: t\r\n\r\n",
                "x".repeat(200_000)
            )
            .into_bytes(),
            "414",
            "too long",
        ),
        (
            "a 2 MB header",
            format!(
                "GET /showBoard HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
                "x".repeat(2_000_000)
            )
            .into_bytes(),
            "431",
            "header",
        ),
        (
            "200 headers",
            format!("GET /showBoard HTTP/1.1\r\nHost: t\r\n{many_headers}\r\n").into_bytes(),
            "431",
            "header",
        ),
    ];
    let mut wrong = Vec::new();
    for (what, raw, status, says) in cases {
        let back = raw_exchange(addr, &raw);
        let text = String::from_utf8_lossy(&back);
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        if !text.starts_with(&format!("HTTP/1.1 {status} ")) || !body.contains(says) {
            wrong.push(format!("{what}: {text:?}"));
        }
        still_serving(addr);
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
