//! The engine's errors as people read them: each cause is said once. The
//! binary prints an error with its whole chain (`{:#}`), so a message that
//! also formats its `#[source]` says the cause twice.

use std::error::Error as _;
use std::io;

use dyno_http::EngineError;

/// The message and every source, joined as anyhow's `{:#}` joins them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[test]
fn a_failed_lookup_names_its_cause_once() {
    let e = EngineError::Resolve {
        host: "nonexistent.invalid".into(),
        source: io::Error::other("failed to lookup address information: Name or service not known"),
    };
    assert!(e.source().is_some(), "the cause stays in the chain");
    let text = chain(&e);
    assert_eq!(
        text.matches("Name or service not known").count(),
        1,
        "{text}"
    );
    assert!(
        text.starts_with("cannot resolve 'nonexistent.invalid'"),
        "{text}"
    );
}
