//! Path templates: a replayed request's target folded into the endpoint it
//! belongs to (`/users/42/posts` → `/users/{id}/posts`), so results can be
//! counted per endpoint rather than per distinct URL. User templates are
//! tried first; the automatic folding is the fallback.

/// Why a user template was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A template that does not start with `/`.
    #[error(
        "the path template '{0}' does not start with '/': write it as a path, such as /users/{{id}}/posts"
    )]
    NotAPath(String),
    /// A placeholder that is only part of a segment (`/v{n}`).
    #[error(
        "in the path template '{template}', the segment '{segment}' mixes text and a \
         placeholder: a {{name}} placeholder must be a whole segment, such as /users/{{id}}"
    )]
    PartialPlaceholder {
        /// The template as given.
        template: String,
        /// The segment at fault.
        segment: String,
    },
}

/// Folds a target into an automatic template: the query is dropped, and
/// each path segment that looks like an identifier is replaced: digits by
/// `{id}`, a UUID by `{uuid}`, 16 or more hex digits by `{hex}`, and 16 or
/// more letters, digits, `-` and `_` mixing letters and digits by `{token}`.
pub fn template(target: &str) -> String {
    path_of(target)
        .split('/')
        .map(|segment| fold(segment).unwrap_or(segment))
        .collect::<Vec<_>>()
        .join("/")
}

/// The path of a target: no query, no fragment.
fn path_of(target: &str) -> &str {
    let end = target.find(['?', '#']).unwrap_or(target.len());
    &target[..end]
}

fn fold(segment: &str) -> Option<&'static str> {
    let bytes = segment.as_bytes();
    if !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit) {
        return Some("{id}");
    }
    if is_uuid(bytes) {
        return Some("{uuid}");
    }
    if bytes.len() < 16 {
        return None;
    }
    if bytes.iter().all(u8::is_ascii_hexdigit) {
        return Some("{hex}");
    }
    let token_chars = bytes
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let letters = bytes.iter().any(u8::is_ascii_alphabetic);
    let digits = bytes.iter().any(u8::is_ascii_digit);
    (token_chars && letters && digits).then_some("{token}")
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(bytes: &[u8]) -> bool {
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// One segment of a user template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{name}`: any one non-empty segment.
    Any,
}

/// User templates, tried in the order given, with the automatic folding of
/// [`template`] for targets none of them matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Templates {
    user: Vec<(String, Vec<Segment>)>,
}

impl Templates {
    /// Compiles user templates such as `/users/{id}/posts/{post}`: a `{name}`
    /// segment matches any one segment, other segments match themselves.
    pub fn new(templates: &[&str]) -> Result<Templates, TemplateError> {
        let user = templates
            .iter()
            .map(|&text| compile(text).map(|segments| (text.to_owned(), segments)))
            .collect::<Result<_, _>>()?;
        Ok(Templates { user })
    }

    /// The template a target belongs to: the first user template that
    /// matches its path, else the automatic folding.
    pub fn template(&self, target: &str) -> String {
        let path = path_of(target);
        let segments: Vec<&str> = path.split('/').collect();
        let matched = self.user.iter().find(|(_, pattern)| {
            pattern.len() == segments.len()
                && pattern.iter().zip(&segments).all(|(p, s)| match p {
                    Segment::Literal(text) => text == s,
                    Segment::Any => !s.is_empty(),
                })
        });
        match matched {
            Some((text, _)) => text.clone(),
            None => template(path),
        }
    }
}

fn compile(text: &str) -> Result<Vec<Segment>, TemplateError> {
    if !text.starts_with('/') {
        return Err(TemplateError::NotAPath(text.to_owned()));
    }
    path_of(text)
        .split('/')
        .map(|segment| {
            let braced = segment.len() >= 2 && segment.starts_with('{') && segment.ends_with('}');
            if braced && !segment[1..segment.len() - 1].contains(['{', '}']) {
                Ok(Segment::Any)
            } else if segment.contains(['{', '}']) {
                Err(TemplateError::PartialPlaceholder {
                    template: text.to_owned(),
                    segment: segment.to_owned(),
                })
            } else {
                Ok(Segment::Literal(segment.to_owned()))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_identifiers() {
        assert_eq!(template("/users/42/posts"), "/users/{id}/posts");
        assert_eq!(template("/users/42/posts?page=3&x=1"), "/users/{id}/posts");
        assert_eq!(
            template("/orders/3F2504E0-4F89-11D3-9A0C-0305E82C3301/lines/7"),
            "/orders/{uuid}/lines/{id}"
        );
        assert_eq!(template("/blobs/0123456789abcdef0123"), "/blobs/{hex}");
        assert_eq!(template("/s/aZ3kQ9xV2mP7wL4t_r"), "/s/{token}");
        assert_eq!(template("/"), "/");
        assert_eq!(template("/a//b/"), "/a//b/");
    }

    #[test]
    fn leaves_words_and_short_tokens_alone() {
        // Long but all letters; short hex; a file name with dots.
        assert_eq!(
            template("/documentation/internationalization"),
            "/documentation/internationalization"
        );
        assert_eq!(template("/c/abc123"), "/c/abc123");
        assert_eq!(
            template("/static/jquery-3.6.0.min.js"),
            "/static/jquery-3.6.0.min.js"
        );
        assert_eq!(template("/v2/items"), "/v2/items");
    }

    #[test]
    fn user_templates_come_first() {
        let templates = Templates::new(&["/users/{id}/posts/{post}", "/files/{name}"]).unwrap();
        assert_eq!(
            templates.template("/users/42/posts/hello-world"),
            "/users/{id}/posts/{post}"
        );
        assert_eq!(
            templates.template("/files/report.pdf?dl=1"),
            "/files/{name}"
        );
        // A placeholder matches one segment, not none and not two.
        assert_eq!(templates.template("/files/"), "/files/");
        assert_eq!(templates.template("/files/a/b"), "/files/a/b");
        // No match: automatic folding.
        assert_eq!(templates.template("/users/42/likes"), "/users/{id}/likes");
        assert_eq!(Templates::default().template("/users/7"), "/users/{id}");
    }

    #[test]
    fn refuses_bad_templates() {
        assert_eq!(
            Templates::new(&["users/{id}"]).unwrap_err(),
            TemplateError::NotAPath("users/{id}".to_owned())
        );
        let err = Templates::new(&["/v{n}/items"]).unwrap_err();
        assert!(matches!(err, TemplateError::PartialPlaceholder { .. }));
        assert!(err.to_string().contains("'v{n}'"), "{err}");
    }
}
