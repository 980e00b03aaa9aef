//! HAR 1.2 documents (a browser's or proxy's recording of a session). A HAR
//! file is one JSON document, so unlike the line formats it is read whole.
//! Each entry becomes an [`Entry`] numbered by its index + 1; an entry that
//! cannot be used is a [`LineError`] and the others are still read.

use serde::Deserialize;

use super::format::{parse_iso, target_of};
use super::{Entry, LineError};

#[derive(Deserialize)]
struct Document {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    entries: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarEntry {
    started_date_time: String,
    request: Request,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: i64,
}

/// Reads a HAR document into its entries. The error is for the document as
/// a whole (not JSON, no `log.entries`); a bad entry is an error item.
pub(super) fn parse(text: &[u8]) -> Result<Vec<Result<Entry, LineError>>, String> {
    let document: Document = serde_json::from_slice(text).map_err(|e| {
        format!("it is not a HAR document ({e}); a HAR file is a JSON object with log.entries")
    })?;
    Ok(document
        .log
        .entries
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            let number = index as u64 + 1;
            entry(&value)
                .map(|mut e| {
                    e.line = number;
                    e
                })
                .map_err(|why| LineError::new(number, &value.to_string(), why))
        })
        .collect())
}

fn entry(value: &serde_json::Value) -> Result<Entry, String> {
    let har = HarEntry::deserialize(value).map_err(|e| format!("not a HAR entry: {e}"))?;
    let (at_us, resolution_us) = parse_iso(&har.started_date_time)?;
    let headers = har
        .request
        .headers
        .into_iter()
        // HTTP/2 pseudo-headers (":authority") are not headers to send.
        .filter(|h| !h.name.starts_with(':'))
        .map(|h| (h.name, h.value))
        .collect();
    Ok(Entry {
        line: 0,
        at_us,
        resolution_us,
        method: har.request.method,
        target: target_of(&har.request.url)?,
        // HAR writes status 0 when no response came.
        status: har
            .response
            .and_then(|r| u16::try_from(r.status).ok())
            .filter(|&s| s != 0),
        headers,
        body: har
            .request
            .post_data
            .and_then(|p| p.text)
            .map(String::into_bytes),
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A small HAR document, pretty-printed as browsers save them.
    pub(in crate::replay) const SMALL_HAR: &str = r#"{
  "log": {
    "version": "1.2",
    "creator": {"name": "Firefox", "version": "120.0"},
    "entries": [
      {
        "startedDateTime": "2023-11-14T22:13:20.125+00:00",
        "time": 41.2,
        "request": {
          "method": "GET",
          "url": "https://shop.example/api/items?page=2",
          "httpVersion": "HTTP/2",
          "headers": [
            {"name": ":authority", "value": "shop.example"},
            {"name": "accept", "value": "application/json"}
          ],
          "queryString": [{"name": "page", "value": "2"}]
        },
        "response": {"status": 200, "statusText": "OK"}
      },
      {
        "startedDateTime": "2023-11-14T23:13:21.000+01:00",
        "request": {
          "method": "POST",
          "url": "https://shop.example/api/cart",
          "headers": [{"name": "content-type", "value": "application/json"}],
          "postData": {"mimeType": "application/json", "text": "{\"sku\":42}"}
        },
        "response": {"status": 0}
      }
    ]
  }
}"#;

    #[test]
    fn reads_a_small_har_document() {
        let entries: Vec<Entry> = parse(SMALL_HAR.as_bytes())
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(entries.len(), 2);
        let (get, post) = (&entries[0], &entries[1]);
        assert_eq!((get.line, post.line), (1, 2));
        assert_eq!(get.at_us, 1_700_000_000_125_000);
        assert_eq!(get.resolution_us, 1_000);
        assert_eq!(get.target, "/api/items?page=2");
        assert_eq!(get.status, Some(200));
        assert_eq!(
            get.headers,
            vec![("accept".to_owned(), "application/json".to_owned())]
        );
        assert_eq!(post.at_us, 1_700_000_001_000_000);
        assert_eq!(post.method, "POST");
        assert_eq!(post.body.as_deref(), Some(&b"{\"sku\":42}"[..]));
        assert_eq!(post.status, None);
    }

    #[test]
    fn a_bad_entry_is_an_error_item_among_good_ones() {
        let text = r#"{"log":{"entries":[
            {"startedDateTime":"2023-11-14T22:13:20Z","request":{"method":"GET","url":"/a"}},
            {"startedDateTime":"not a time","request":{"method":"GET","url":"/b"}},
            {"request":{"method":"GET","url":"/c"}}
        ]}}"#;
        let items = parse(text.as_bytes()).unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].as_ref().unwrap().target, "/a");
        let bad = items[1].as_ref().unwrap_err();
        assert_eq!(bad.line, 2);
        assert!(bad.why.contains("ISO 8601"), "{}", bad.why);
        let missing = items[2].as_ref().unwrap_err();
        assert_eq!(missing.line, 3);
        assert!(missing.why.contains("startedDateTime"), "{}", missing.why);
    }

    #[test]
    fn refuses_a_document_that_is_not_har() {
        let why = parse(br#"{"entries": []}"#).err().unwrap();
        assert!(why.contains("log.entries"), "{why}");
        assert!(parse(b"[1, 2").is_err());
    }
}
