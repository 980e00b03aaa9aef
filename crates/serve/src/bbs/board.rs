//! The boards as trees of the database: how messages are laid out, posted,
//! edited and read. Nothing here knows HTTP. Writes block (a durable
//! database waits for its log), so they run on tokio's blocking pool: posts
//! through their board's writer (below), the rest from the handlers. Reads
//! take a snapshot and never wait.
//!
//! One tree per board, named [`PREFIX`] + the board's name, so writers on
//! different boards never meet, and other users of the database cannot
//! collide with a board. The board's root has the attribute `created` (unix
//! seconds); its messages are the leaves of a three-level tree of pages in
//! posting order:
//!
//! ```text
//! root ── chunk 0 ── page 0 ── message 1 … message 64
//!    │          └─── page 1 ── message 65 … message 128
//!    │          …     (64 pages a chunk)
//!    └─── chunk 1 ── page 0 ── message 4097 …
//! ```
//!
//! Message number `id` sits at position `p = id - 1`, under chunk
//! `p / 64²`, page `(p / 64) % 64`, child `p % 64`, so a message is found
//! by arithmetic and the count of messages is read off the last page.
//! Pages rather than one flat list of children because an edit copies the
//! children of every node on its path: appending to a flat list of `n`
//! messages would copy `n` of them, and a million posts to one board would
//! copy half a trillion; with pages a post copies at most 128 nodes plus one
//! per 4,096 messages (244 at a million).
//!
//! Posts to one board are committed in groups: the first post to find the
//! board's writer idle starts it on the blocking pool, and the posts that
//! arrive while it commits go into its next transaction together (up to
//! [`MAX_BATCH`]). Concurrent posts would otherwise race for the same root,
//! every loser redoing its work, and each would hold a blocking thread and,
//! in a durable database, wait for the disk on its own. Measured
//! before this: 57–76 µs of server CPU a post with 100 connections on one
//! core (a fifth in thread switches, another in arc-swap paying the debts
//! of hundreds of blocking threads), against 12 µs a read.
//!
//! A message is a node with the attributes `id` (its number, written out so
//! that the stored tree reads on its own), `author`, `msg`, `key` (the
//! poster's edit key, compared on edit and never shown), `time` (unix
//! seconds of the post) and, once edited, `edited`. Messages are never
//! deleted or moved and their keys never change; [`Boards::edit`] relies on
//! that to check the key on a snapshot before it commits.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use dyno_tree::{Database, Edit, Node, Tree, TreeError, Version};
use tokio::sync::oneshot;

/// Tree names of boards start with this; the rest is the board's name.
pub(crate) const PREFIX: &str = "board/";

/// Children per page and pages per chunk.
const FANOUT: u64 = 64;

/// The most posts one transaction of a board's writer takes (a few MiB of
/// log record at most); more wait for the next.
pub(crate) const MAX_BATCH: usize = 256;

/// Why a board operation did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BoardError {
    #[error("there is no board named '{0}'")]
    NoBoard(String),
    #[error("a board named '{0}' exists already")]
    Exists(String),
    #[error("board '{bname}' has no message {id}")]
    NoMessage { bname: String, id: u64 },
    #[error("wrong key for message {id}: give the key it was posted with")]
    WrongKey { id: u64 },
    /// Shared by every post of a failed group.
    #[error("the database did not take the write: {0}")]
    Store(Arc<TreeError>),
    #[error("the board's writer failed inside the server; the post was not made")]
    Writer,
}

impl From<TreeError> for BoardError {
    fn from(err: TreeError) -> BoardError {
        BoardError::Store(Arc::new(err))
    }
}

/// A message to post.
#[derive(Debug, Clone)]
pub(crate) struct NewMessage {
    pub author: String,
    pub msg: String,
    pub key: String,
}

/// The boards of one database.
#[derive(Debug)]
pub(crate) struct Boards {
    db: Arc<Database>,
    /// Each board's queue of posts, made at its first post.
    queues: Mutex<HashMap<String, Arc<Queue>>>,
}

/// Posts waiting for a board's writer.
#[derive(Debug, Default)]
struct Queue {
    state: Mutex<Waiting>,
}

type Reply = oneshot::Sender<Result<u64, BoardError>>;

#[derive(Debug, Default)]
struct Waiting {
    posts: Vec<(NewMessage, Reply)>,
    /// A writer is running and will take these posts.
    writing: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // A writer that panicked clears the queue on its way out (see
        // write_posts), so what is left is consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Boards {
    pub(crate) fn new(db: Arc<Database>) -> Boards {
        Boards {
            db,
            queues: Mutex::default(),
        }
    }

    fn queue(&self, bname: &str) -> Arc<Queue> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = queues.get(bname) {
            return queue.clone();
        }
        queues.entry(bname.to_owned()).or_default().clone()
    }

    fn tree(&self, bname: &str) -> Option<Arc<Tree>> {
        let mut name = String::with_capacity(PREFIX.len() + bname.len());
        name.push_str(PREFIX);
        name.push_str(bname);
        self.db.tree(&name)
    }

    fn existing(&self, bname: &str) -> Result<Arc<Tree>, BoardError> {
        self.tree(bname)
            .ok_or_else(|| BoardError::NoBoard(bname.to_owned()))
    }

    /// The board named `bname` as it is now.
    pub(crate) fn board(&self, bname: &str) -> Result<Board, BoardError> {
        self.existing(bname).map(|tree| Board {
            version: tree.snapshot(),
        })
    }

    /// Boards in name order after `after` (all when `None`), at most
    /// `limit` of them, with the number of boards in all. Blocks: no.
    pub(crate) fn list(&self, after: Option<&str>, limit: usize) -> BoardList {
        let names = self.db.names();
        let boards = names.iter().filter_map(|n| n.strip_prefix(PREFIX));
        let total = boards.clone().count() as u64;
        let mut listed = Vec::with_capacity(limit.min(total as usize));
        let mut more = false;
        for bname in boards.filter(|b| after.is_none_or(|a| *b > a)) {
            if listed.len() == limit {
                more = true;
                break;
            }
            // A board listed by names() is never removed, so it is there.
            if let Ok(board) = self.board(bname) {
                listed.push((bname.to_owned(), board.total()));
            }
        }
        BoardList {
            total,
            next_after: if more {
                listed.last().map(|(b, _)| b.clone())
            } else {
                None
            },
            boards: listed,
        }
    }

    /// Makes board `bname` with `first` as its first message; returns the
    /// message's id. Blocks until the commits are durable.
    pub(crate) fn create(&self, bname: &str, first: &NewMessage) -> Result<u64, BoardError> {
        let mut name = String::with_capacity(PREFIX.len() + bname.len());
        name.push_str(PREFIX);
        name.push_str(bname);
        // The board, its creation time and its first message in one
        // record: a crash leaves the board whole or not there.
        let created = now().to_string();
        let mut root = Node::with_attributes([("created", created.as_bytes())]);
        append(0, message_node(1, first, &created))
            .apply_in_place(&mut root)
            .expect("an empty board takes its first message");
        self.db
            .create_tree_with(&name, root)
            .map_err(|err| match err {
                TreeError::Exists(_) => BoardError::Exists(bname.to_owned()),
                err => err.into(),
            })?;
        Ok(1)
    }

    /// Posts `message` to board `bname`; resolves to its id once the
    /// commit is durable. Needs a tokio runtime: the board's writer runs on
    /// its blocking pool.
    pub(crate) async fn post(&self, bname: &str, message: NewMessage) -> Result<u64, BoardError> {
        let tree = self.existing(bname)?;
        let queue = self.queue(bname);
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut waiting = queue.lock();
            waiting.posts.push((message, reply));
            !std::mem::replace(&mut waiting.writing, true)
        };
        if start {
            tokio::task::spawn_blocking(move || write_posts(&tree, &queue));
        }
        answer.await.unwrap_or(Err(BoardError::Writer))
    }

    /// Replaces the author and text of message `id` of board `bname`, if
    /// `key` is the key it was posted with. Blocks until the commit is
    /// durable.
    pub(crate) fn edit(
        &self,
        bname: &str,
        id: u64,
        author: &str,
        msg: &str,
        key: &str,
    ) -> Result<(), BoardError> {
        let tree = self.existing(bname)?;
        let board = Board {
            version: tree.snapshot(),
        };
        let no_message = || BoardError::NoMessage {
            bname: bname.to_owned(),
            id,
        };
        let message = board.message(id).ok_or_else(no_message)?;
        // Messages are never removed and their keys never change, so what
        // this snapshot says holds for every later version too.
        if !message.key_is(key) {
            return Err(BoardError::WrongKey { id });
        }
        let path = path_of(id - 1);
        let edited = now().to_string();
        tree.update(|t| {
            for (name, value) in [
                ("author", author.as_bytes()),
                ("msg", msg.as_bytes()),
                ("edited", edited.as_bytes()),
            ] {
                t.edit(Edit::PutAttribute {
                    path: path.clone(),
                    name: name.into(),
                    value: value.to_vec(),
                })?;
            }
            Ok(())
        })?;
        Ok(())
    }
}

/// A board's writer: commits the posts waiting in `queue` to `tree`, a
/// group at a time, until none are left.
fn write_posts(tree: &Tree, queue: &Queue) {
    let _stop = StopOnPanic(queue);
    loop {
        // Let the threads that read requests have the core first, so that
        // the posts already in the sockets join this group: a commit's
        // fsync costs about 120 µs of CPU on this VM whatever it carries.
        // On one server core this made groups 5× larger (20 → 100 posts an
        // fsync) and a post 25% cheaper; with nothing else to run it
        // returns at once.
        std::thread::yield_now();
        let group = {
            let mut waiting = queue.lock();
            if waiting.posts.is_empty() {
                // Under the lock that a poster takes to see whether a
                // writer runs: none is left waiting unseen.
                waiting.writing = false;
                return;
            }
            if waiting.posts.len() <= MAX_BATCH {
                std::mem::take(&mut waiting.posts)
            } else {
                waiting.posts.drain(..MAX_BATCH).collect()
            }
        };
        let first =
            append_messages(tree, group.iter().map(|(message, _)| message)).map_err(Arc::new);
        for (i, (_, reply)) in (0..).zip(group) {
            let id = first.clone().map(|first| first + i);
            // A poster that went away (its connection closed) needs no answer.
            let _ = reply.send(id.map_err(BoardError::Store));
        }
    }
}

/// Clears a board's queue when its writer panics, so that the next post
/// starts a new one; the posts it drops are answered with
/// [`BoardError::Writer`].
struct StopOnPanic<'a>(&'a Queue);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut waiting = self.0.lock();
            waiting.posts.clear();
            waiting.writing = false;
        }
    }
}

/// Appends `messages` to the board `tree` in one commit; returns the id of
/// the first. Blocks until the commit is durable.
fn append_messages<'m>(
    tree: &Tree,
    messages: impl IntoIterator<Item = &'m NewMessage> + Clone,
) -> Result<u64, TreeError> {
    let time = now().to_string();
    // Rerun on a conflict: the ids follow the count of messages of the
    // version the commit lands on.
    let (_, first) = tree.update(|t| {
        let first = count(t.root()) + 1;
        for (id, message) in (first..).zip(messages.clone()) {
            t.edit(append(id - 1, message_node(id, message, &time)))?;
        }
        Ok(first)
    })?;
    Ok(first)
}

/// The node of message `id`.
fn message_node(id: u64, message: &NewMessage, time: &str) -> Node {
    let id_text = id.to_string();
    Node::with_attributes([
        ("id", id_text.as_bytes()),
        ("author", message.author.as_bytes()),
        ("msg", message.msg.as_bytes()),
        ("key", message.key.as_bytes()),
        ("time", time.as_bytes()),
    ])
}

/// The edit that puts `node` at `position`, the end of the board: into the
/// last page, or a new page, or a new chunk.
fn append(position: u64, node: Node) -> Edit {
    let [chunk, page, at] = path_of(position).try_into().expect("three levels");
    if position.is_multiple_of(FANOUT * FANOUT) {
        let page = Node::new().with_children(vec![node]);
        Edit::AddChild {
            path: vec![],
            at: chunk,
            node: Node::new().with_children(vec![page]),
        }
    } else if position.is_multiple_of(FANOUT) {
        Edit::AddChild {
            path: vec![chunk],
            at: page,
            node: Node::new().with_children(vec![node]),
        }
    } else {
        Edit::AddChild {
            path: vec![chunk, page],
            at,
            node,
        }
    }
}

/// The path from a board's root to the message at `position`.
fn path_of(position: u64) -> Vec<usize> {
    let chunk = position / (FANOUT * FANOUT);
    let page = (position / FANOUT) % FANOUT;
    let at = position % FANOUT;
    // A position past usize has no node, so the lookup finds none.
    [chunk, page, at]
        .into_iter()
        .map(|i| usize::try_from(i).unwrap_or(usize::MAX))
        .collect()
}

/// How many messages the board with root `root` holds: every chunk but the
/// last and every page but the last are full.
fn count(root: &Node) -> u64 {
    let Some(chunk) = root.children().last() else {
        return 0;
    };
    let Some(page) = chunk.children().last() else {
        return 0;
    };
    let full_chunks = root.children().len() as u64 - 1;
    let full_pages = chunk.children().len() as u64 - 1;
    (full_chunks * FANOUT + full_pages) * FANOUT + page.children().len() as u64
}

/// Unix seconds now (0 for a clock before 1970).
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One board as of one version, read without locks.
#[derive(Debug)]
pub(crate) struct Board {
    version: Arc<Version>,
}

impl Board {
    /// How many messages it holds (the highest id).
    pub(crate) fn total(&self) -> u64 {
        count(self.version.root())
    }

    /// Unix seconds of the board's making.
    pub(crate) fn created(&self) -> Option<u64> {
        number(self.version.root().attribute("created"))
    }

    /// Message `id`.
    pub(crate) fn message(&self, id: u64) -> Option<Message<'_>> {
        let position = id.checked_sub(1)?;
        let node = self.version.root().at(&path_of(position))?;
        Some(Message { id, node })
    }

    /// Message `id` of this board, named `bname`, or why there is none.
    pub(crate) fn found(&self, bname: &str, id: u64) -> Result<Message<'_>, BoardError> {
        self.message(id).ok_or_else(|| BoardError::NoMessage {
            bname: bname.to_owned(),
            id,
        })
    }

    /// Up to `limit` messages older than `before` (from the newest when
    /// `None`), newest first.
    pub(crate) fn newest(
        &self,
        before: Option<u64>,
        limit: usize,
    ) -> impl Iterator<Item = Message<'_>> {
        let end = before
            .map_or(u64::MAX, |b| b.saturating_sub(1))
            .min(self.total());
        let start = end.saturating_sub(limit as u64);
        let root = self.version.root();
        (start + 1..=end).rev().map(move |id| {
            let node = root
                .at(&path_of(id - 1))
                .expect("every id up to the count has a message");
            Message { id, node }
        })
    }
}

/// Boards listed by [`Boards::list`].
#[derive(Debug)]
pub(crate) struct BoardList {
    /// Boards in all.
    pub total: u64,
    /// Name and message count of each listed board, in name order.
    pub boards: Vec<(String, u64)>,
    /// Where the next page starts (`after=`), when there are more.
    pub next_after: Option<String>,
}

/// One message of a [`Board`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Message<'a> {
    pub id: u64,
    node: &'a Node,
}

impl<'a> Message<'a> {
    pub(crate) fn author(&self) -> Cow<'a, str> {
        text(self.node.attribute("author"))
    }

    pub(crate) fn msg(&self) -> Cow<'a, str> {
        text(self.node.attribute("msg"))
    }

    pub(crate) fn time(&self) -> Option<u64> {
        number(self.node.attribute("time"))
    }

    pub(crate) fn edited(&self) -> Option<u64> {
        number(self.node.attribute("edited"))
    }

    /// Whether `key` is the message's key, compared in time that does not
    /// depend on where they differ.
    fn key_is(&self, key: &str) -> bool {
        let stored = self.node.attribute("key").unwrap_or_default();
        stored.len() == key.len()
            && stored
                .iter()
                .zip(key.as_bytes())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

/// A stored text attribute (written from a `&str`, so UTF-8).
fn text(value: Option<&[u8]>) -> Cow<'_, str> {
    String::from_utf8_lossy(value.unwrap_or_default())
}

/// A stored decimal attribute.
fn number(value: Option<&[u8]>) -> Option<u64> {
    std::str::from_utf8(value?).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(author: &str, msg: &str, key: &str) -> NewMessage {
        NewMessage {
            author: author.into(),
            msg: msg.into(),
            key: key.into(),
        }
    }

    fn boards() -> Boards {
        Boards::new(Arc::new(Database::new()))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    /// Posts through the board's writer, on a runtime of its own.
    fn post(boards: &Boards, bname: &str, message: NewMessage) -> Result<u64, BoardError> {
        runtime().block_on(boards.post(bname, message))
    }

    #[test]
    fn paths_walk_chunks_pages_and_messages() {
        assert_eq!(path_of(0), [0, 0, 0]);
        assert_eq!(path_of(63), [0, 0, 63]);
        assert_eq!(path_of(64), [0, 1, 0]);
        assert_eq!(path_of(4095), [0, 63, 63]);
        assert_eq!(path_of(4096), [1, 0, 0]);
        assert_eq!(path_of(4096 * 3 + 64 * 5 + 7), [3, 5, 7]);
    }

    #[test]
    fn posts_fill_pages_and_chunks_in_order() {
        let boards = boards();
        boards.create("b", &message("a", "1", "k")).unwrap();
        // Across a page and a chunk boundary.
        let n = 4096 + 70;
        runtime().block_on(async {
            for i in 2..=n {
                let id = boards.post("b", message("a", &i.to_string(), "k")).await;
                assert_eq!(id.unwrap(), i);
            }
        });
        let board = boards.board("b").unwrap();
        assert_eq!(board.total(), n);
        let root = board.version.root();
        assert_eq!(root.children().len(), 2);
        assert_eq!(root.children()[0].children().len(), 64);
        assert_eq!(root.children()[1].children().len(), 2);
        for id in [1, 64, 65, 4096, 4097, n] {
            let m = board.message(id).unwrap();
            assert_eq!(m.msg(), id.to_string());
            assert_eq!(m.node.attribute("id"), Some(id.to_string().as_bytes()));
        }
        assert!(board.message(0).is_none());
        assert!(board.message(n + 1).is_none());
        let ids: Vec<u64> = board.newest(None, 3).map(|m| m.id).collect();
        assert_eq!(ids, [n, n - 1, n - 2]);
        let ids: Vec<u64> = board.newest(Some(4098), 3).map(|m| m.id).collect();
        assert_eq!(ids, [4097, 4096, 4095]);
        assert_eq!(
            board.newest(Some(3), 10).map(|m| m.id).collect::<Vec<_>>(),
            [2, 1]
        );
        assert_eq!(board.newest(Some(1), 10).count(), 0);
    }

    #[test]
    fn concurrent_posts_commit_in_groups_with_every_id_once() {
        let boards = Arc::new(boards());
        boards.create("b", &message("a", "0", "k")).unwrap();
        assert!(matches!(
            post(&boards, "nope", message("a", "1", "k")),
            Err(BoardError::NoBoard(_))
        ));
        let n = 1000;
        let mut ids = runtime().block_on(async {
            let mut posts = tokio::task::JoinSet::new();
            for i in 1..=n {
                let boards = boards.clone();
                posts.spawn(async move {
                    let id = boards.post("b", message("a", &i.to_string(), "k")).await;
                    (id.unwrap(), i)
                });
            }
            posts.join_all().await
        });
        ids.sort_unstable();
        assert_eq!(
            ids.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            (2..=n + 1).collect::<Vec<_>>()
        );
        let board = boards.board("b").unwrap();
        for (id, i) in ids {
            assert_eq!(board.message(id).unwrap().msg(), i.to_string());
        }
        // The board was made, its first message posted, and the rest went
        // in groups: far fewer commits than posts.
        let commits = boards.tree("b").unwrap().stats().commits;
        assert!(commits < n / 2, "{commits} commits for {n} posts");
        assert!(
            !boards.queue("b").lock().writing,
            "the writer stops when done"
        );
    }

    #[test]
    fn edits_need_the_key_and_an_existing_message() {
        let boards = boards();
        assert_eq!(
            boards.create("b", &message("ann", "hi", "secret")).unwrap(),
            1
        );
        assert!(matches!(
            boards.create("b", &message("x", "y", "z")),
            Err(BoardError::Exists(_))
        ));
        assert!(matches!(
            boards.edit("b", 1, "eve", "owned", "guess"),
            Err(BoardError::WrongKey { id: 1 })
        ));
        assert!(matches!(
            boards.edit("b", 1, "eve", "owned", "secre"),
            Err(BoardError::WrongKey { id: 1 })
        ));
        assert!(matches!(
            boards.edit("b", 2, "eve", "owned", "secret"),
            Err(BoardError::NoMessage { id: 2, .. })
        ));
        assert!(matches!(
            boards.edit("nope", 1, "eve", "owned", "secret"),
            Err(BoardError::NoBoard(_))
        ));
        boards.edit("b", 1, "ann", "hello", "secret").unwrap();
        let board = boards.board("b").unwrap();
        let m = board.message(1).unwrap();
        assert_eq!((&*m.author(), &*m.msg()), ("ann", "hello"));
        assert!(m.edited().is_some() && m.time().is_some());
        assert!(board.created().is_some());
    }

    #[test]
    fn boards_list_in_name_order_in_pages() {
        let boards = boards();
        // Another user's tree of the same database is not a board.
        boards.db.create_tree("other").unwrap();
        for b in ["c", "a", "b", "d"] {
            boards.create(b, &message("x", "y", "z")).unwrap();
        }
        post(&boards, "b", message("x", "y", "z")).unwrap();
        let first = boards.list(None, 2);
        assert_eq!(first.total, 4);
        assert_eq!(first.boards, [("a".to_owned(), 1), ("b".to_owned(), 2)]);
        assert_eq!(first.next_after.as_deref(), Some("b"));
        let second = boards.list(Some("b"), 2);
        assert_eq!(second.boards, [("c".to_owned(), 1), ("d".to_owned(), 1)]);
        assert_eq!(second.next_after, None);
    }
}
