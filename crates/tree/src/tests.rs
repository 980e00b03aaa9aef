//! The database as its users see it: versions, conflicts, many threads.

use std::sync::Arc;
use std::thread;

use proptest::prelude::*;

use crate::*;

fn add(path: &[usize], at: usize, name: &str) -> Edit {
    Edit::AddChild {
        path: path.to_vec(),
        at,
        node: Node::with_attributes([("name", name.as_bytes())]),
    }
}

fn put(path: &[usize], name: &str, value: &str) -> Edit {
    Edit::PutAttribute {
        path: path.to_vec(),
        name: name.into(),
        value: value.as_bytes().to_vec(),
    }
}

fn text(node: &Node, name: &str) -> String {
    String::from_utf8(node.attribute(name).unwrap_or_default().to_vec()).unwrap()
}

#[test]
fn commits_make_versions_and_old_ones_stay_readable_until_compacted() {
    let db = Database::new();
    let tree = db.create_tree("board").unwrap();
    assert_eq!(tree.snapshot().number(), 0);
    let mut t = tree.transaction();
    t.edit(add(&[], 0, "first"))
        .unwrap()
        .edit(put(&[], "title", "hello"))
        .unwrap();
    assert_eq!(
        t.commit().unwrap(),
        Commit {
            version: 1,
            retries: 0
        }
    );
    let v1 = tree.snapshot();
    let mut t = tree.transaction();
    t.edit(add(&[], 1, "second")).unwrap();
    t.commit().unwrap();
    let v2 = tree.snapshot();
    assert_eq!(v2.number(), 2);
    assert_eq!(v2.root().children().len(), 2);
    assert_eq!(
        v1.root().children().len(),
        1,
        "a held version never changes"
    );
    assert_eq!(text(tree.version(1).unwrap().root(), "title"), "hello");
    assert_eq!(tree.versions(), [0, 1, 2]);
    assert_eq!(tree.compact(2), 2);
    assert_eq!(tree.versions(), [2]);
    assert!(tree.version(1).is_none());
    assert_eq!(
        v1.root().children().len(),
        1,
        "a reader keeps its version alive"
    );
    assert_eq!(tree.compact(99), 0, "the current version is always kept");
    assert_eq!(
        tree.stats(),
        TreeStats {
            commits: 2,
            retries: 0
        }
    );
    assert!(matches!(db.create_tree("board"), Err(TreeError::Exists(_))));
    assert_eq!(db.names(), ["board"]);
}

#[test]
fn a_commit_that_lost_the_race_replays_its_edits_on_the_winner() {
    let db = Database::new();
    let tree = db.create_tree("t").unwrap();
    let mut setup = tree.transaction();
    setup
        .edit(add(&[], 0, "a"))
        .unwrap()
        .edit(add(&[], 1, "b"))
        .unwrap();
    setup.commit().unwrap();

    let mut first = tree.transaction();
    let mut second = tree.transaction();
    first.edit(put(&[0], "x", "1")).unwrap();
    second.edit(put(&[1], "y", "2")).unwrap();
    assert_eq!(first.commit().unwrap().retries, 0);
    let c = second.commit().unwrap();
    assert_eq!(
        c,
        Commit {
            version: 3,
            retries: 1
        }
    );
    let root = tree.snapshot();
    assert_eq!(
        text(&root.root().children()[0], "x"),
        "1",
        "the winner's edit is kept"
    );
    assert_eq!(text(&root.root().children()[1], "y"), "2");
    assert_eq!(tree.stats().retries, 1);

    // An edit that no longer fits the newer version: nothing is committed.
    let mut deleter = tree.transaction();
    let mut editor = tree.transaction();
    deleter
        .edit(Edit::DeleteChild {
            path: vec![],
            at: 1,
        })
        .unwrap();
    deleter
        .edit(Edit::DeleteChild {
            path: vec![],
            at: 0,
        })
        .unwrap();
    editor.edit(put(&[1], "z", "3")).unwrap();
    deleter.commit().unwrap();
    let err = editor.commit().unwrap_err();
    assert!(
        matches!(err, TreeError::Conflict { version: 4, .. }),
        "{err}"
    );
    assert_eq!(tree.snapshot().number(), 4);
    assert!(tree.snapshot().root().children().is_empty());
}

#[test]
fn readers_see_whole_commits_while_writers_race() {
    const WRITERS: usize = 4;
    const COMMITS: usize = 300;
    let db = Arc::new(Database::new());
    let shared = db.create_tree("shared").unwrap();
    thread::scope(|s| {
        for w in 0..WRITERS {
            let db = db.clone();
            s.spawn(move || {
                // One tree of its own and the shared one: every commit adds
                // a child and sets the root's count in the same transaction.
                let own = db.create_tree(&format!("own-{w}")).unwrap();
                for i in 0..COMMITS {
                    for tree in [&own, &db.tree("shared").unwrap()] {
                        tree.update(|t| {
                            let n = t.root().children().len();
                            t.edit(add(&[], n, &format!("{w}-{i}")))?;
                            t.edit(put(&[], "count", &(n + 1).to_string()))?;
                            Ok(())
                        })
                        .unwrap();
                    }
                }
            });
        }
        for _ in 0..2 {
            let shared = shared.clone();
            s.spawn(move || {
                let mut last = 0;
                while last < (WRITERS * COMMITS) as u64 {
                    let v = shared.snapshot();
                    assert!(v.number() >= last, "versions only move forward");
                    last = v.number();
                    let children = v.root().children().len();
                    if children > 0 {
                        // Both edits of a commit, or neither.
                        assert_eq!(text(v.root(), "count"), children.to_string());
                    }
                    assert_eq!(v.root().count(), 1 + children as u64);
                }
            });
        }
    });
    let v = shared.snapshot();
    assert_eq!(v.number(), (WRITERS * COMMITS) as u64);
    assert_eq!(
        v.root().children().len(),
        WRITERS * COMMITS,
        "no commit lost"
    );
    let stats = shared.stats();
    assert_eq!(stats.commits, (WRITERS * COMMITS) as u64);
    // Retried updates read the count again: it is exact.
    assert_eq!(text(v.root(), "count"), (WRITERS * COMMITS).to_string());
    for w in 0..WRITERS {
        let own = db.tree(&format!("own-{w}")).unwrap();
        assert_eq!(
            own.stats(),
            TreeStats {
                commits: COMMITS as u64,
                retries: 0
            }
        );
    }
}

/// A plain mutable tree: what every edit should do, written the obvious way.
#[derive(Debug, Clone, Default, PartialEq)]
struct Model {
    attributes: Vec<(String, Vec<u8>)>,
    children: Vec<Model>,
}

impl Model {
    fn of(node: &Node) -> Model {
        Model {
            attributes: node
                .attributes()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_vec()))
                .collect(),
            children: node.children().iter().map(Model::of).collect(),
        }
    }

    fn at(&mut self, path: &[usize]) -> &mut Model {
        path.iter().fold(self, |m, &i| &mut m.children[i])
    }

    fn apply(&mut self, edit: &Edit) {
        match edit {
            Edit::AddChild { path, at, node } => {
                self.at(path).children.insert(*at, Model::of(node))
            }
            Edit::DeleteChild { path, at } => {
                self.at(path).children.remove(*at);
            }
            Edit::PutAttribute { path, name, value } => {
                let m = self.at(path);
                match m.attributes.iter_mut().find(|(k, _)| k == name) {
                    Some(slot) => slot.1 = value.clone(),
                    None => m.attributes.push((name.clone(), value.clone())),
                }
            }
            Edit::DeleteAttribute { path, name } => {
                self.at(path).attributes.retain(|(k, _)| k != name);
            }
            Edit::MoveChild { path, from, to } => {
                let c = &mut self.at(path).children;
                let moved = c.remove(*from);
                c.insert(*to, moved);
            }
        }
    }

    /// A valid edit chosen by `raw` numbers: a path walked down by them,
    /// then an operation that fits the node there.
    fn edit_for(&self, raw: &[usize; 5]) -> Edit {
        let mut path = Vec::new();
        let mut m = self;
        for &r in &raw[..raw[0] % 4] {
            if m.children.is_empty() {
                break;
            }
            let i = r % m.children.len();
            path.push(i);
            m = &m.children[i];
        }
        let n = m.children.len();
        let name = format!("k{}", raw[3] % 3);
        match (raw[4] % 5, n) {
            (1, n) if n > 0 => Edit::DeleteChild {
                path,
                at: raw[1] % n,
            },
            (2, _) => Edit::PutAttribute {
                path,
                name,
                value: raw[2].to_le_bytes().to_vec(),
            },
            (3, _) if m.attributes.iter().any(|(k, _)| *k == name) => {
                Edit::DeleteAttribute { path, name }
            }
            (4, n) if n > 0 => Edit::MoveChild {
                path,
                from: raw[1] % n,
                to: raw[2] % n,
            },
            _ => add(&path, raw[1] % (n + 1), &name),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Transactions of random edits give the tree the model gives, and every
    /// earlier version still reads as it was committed.
    #[test]
    fn versions_match_a_plain_model(
        transactions in prop::collection::vec(
            prop::collection::vec(any::<[usize; 5]>(), 1..6), 1..25)
    ) {
        let db = Database::new();
        let tree = db.create_tree("p").unwrap();
        let mut model = Model::default();
        let mut committed = vec![model.clone()];
        for edits in &transactions {
            let mut t = tree.transaction();
            for raw in edits {
                let edit = Model::of(t.root()).edit_for(raw);
                model.apply(&edit);
                t.edit(edit).unwrap();
            }
            t.commit().unwrap();
            committed.push(model.clone());
        }
        prop_assert_eq!(Model::of(tree.snapshot().root()), model);
        for (number, expected) in committed.iter().enumerate() {
            let version = tree.version(number as u64).unwrap();
            prop_assert_eq!(&Model::of(version.root()), expected);
        }
    }
}
