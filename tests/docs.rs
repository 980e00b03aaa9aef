//! The README and the guide (`docs/src`, an mdBook) as a reader meets
//! them: every chapter is in the book's table of contents, and every link
//! between them (and into the repository) leads somewhere that exists,
//! down to the heading it names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README and every chapter of the guide.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![Path::new(ROOT).join("README.md")];
    let src = Path::new(ROOT).join("docs/src");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("docs/src exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The links of a markdown text (targets of links and images).
fn links(text: &str) -> Vec<String> {
    Parser::new_ext(text, Options::all())
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.into_string())
            }
            _ => None,
        })
        .collect()
}

/// The anchors mdBook gives a text's headings: the heading's text in
/// lower case, spaces as hyphens, other punctuation dropped.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::all()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = &mut heading {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let h = heading.take().unwrap_or_default();
                let slug: String = h
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| match c {
                        ' ' => Some('-'),
                        c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                        _ => None,
                    })
                    .collect();
                out.insert(slug);
            }
            _ => {}
        }
    }
    out
}

#[test]
fn every_chapter_is_in_the_table_of_contents_and_every_entry_exists() {
    let summary_path = Path::new(ROOT).join("docs/src/SUMMARY.md");
    let summary = read(&summary_path);
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    for doc in documents().iter().skip(1) {
        let name = doc.file_name().unwrap().to_string_lossy().into_owned();
        if name != "SUMMARY.md" {
            assert!(
                listed.contains(&name),
                "docs/src/{name} is not in SUMMARY.md"
            );
        }
    }
    for name in &listed {
        assert!(
            Path::new(ROOT).join("docs/src").join(name).is_file(),
            "SUMMARY.md lists {name}, which does not exist"
        );
    }
    // The book's top level is the first-level heading of each chapter.
    let first = anchors(&read(&Path::new(ROOT).join("docs/src/introduction.md")));
    assert!(first.contains("introduction"), "{first:?}");
}

#[test]
fn every_link_leads_somewhere_that_exists() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = read(&doc);
        let dir = doc.parent().unwrap();
        for link in links(&text) {
            if link.starts_with("http://")
                || link.starts_with("https://")
                || link.starts_with("mailto:")
            {
                continue;
            }
            let (file, anchor) = match link.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                doc.clone()
            } else {
                dir.join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", doc.display()));
                continue;
            }
            if let Some(anchor) = anchor
                && target.extension().is_some_and(|e| e == "md")
                && !anchors(&read(&target)).contains(anchor)
            {
                broken.push(format!("{}: {link} (no such heading)", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
