//! The state database, `state.db`: SQLite in WAL mode, one table per
//! collection of [`State`] (named after its field), one row per entry
//! keyed by the entry's own id (a project's name, an outbox entry's uuid,
//! a job's id, …), its value the entry as JSON. A save writes only the
//! entries that changed since the last save (upserts and deletes) in one
//! transaction: it costs the change, not the state.
//!
//! What changed is found by comparing the state with the last one saved,
//! collection by collection (`PartialEq`: an unchanged collection costs a
//! comparison, no copy and no serialising), then entry by entry: the
//! ordered lists with unique ids (outbox, jobs, delivered cards, dedupe
//! ids) by walking old and new in order, the maps and small lists by key.
//! Lists keep their order in a `seq` column: a new entry at the end gets
//! the next number; one put between others (never done today: entries are
//! appended and removed) has the rows after it written again. Only the
//! changed collections are copied for the saver, and of the outbox only
//! its new or changed entries. So the save after a delivery with 2,000
//! cards queued writes a few rows (the entry gone, the card's message id,
//! a new entry) and one fsync of the WAL (see [`open_conn`]); in memory it
//! still compares the queued entries and copies the delivered cards' and
//! dedupe ids' collections when they change (see the `save_cost` bench in
//! the tests for figures).
//!
//! Opening: a missing `state.db` is made from `state.json` (or its newest
//! good backup) when there is one, once: the file and its backups are
//! renamed `state.json.migrated`, `state.json.migrated.1` … before the new
//! database takes its place, so no start migrates them again (see
//! [`Migration`]); a database that fails its check or cannot be read is
//! moved aside as `state.db.corrupt` (with its WAL), and what can still be
//! read from it, table by table, is kept. A database of a newer schema
//! than this code knows is refused and left exactly as it is
//! ([`NewerSchema`]).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, params};
use serde::Serialize;

use super::state::{ApprovalId, CardHandle, DeadLetter, Job, OutboxEntry};
use super::state_file::{Loaded, STATE_BACKUPS, StateError, StateFile};
use super::{State, private};

/// The database's file name in the state directory.
pub const DB_FILE: &str = "state.db";
/// The state file of earlier versions, migrated on first start.
pub const JSON_FILE: &str = "state.json";
/// What `state.json` is renamed once migrated; its backup `state.json.N`
/// becomes `state.json.migrated.N`.
const MIGRATED_SUFFIX: &str = ".migrated";
/// The schema version (`PRAGMA user_version`) this code writes and reads.
pub const SCHEMA_VERSION: i64 = 1;
/// Where a migration builds the database before it takes `state.db`'s
/// place: once the JSON files carry their migrated names, a whole one.
const MIGRATING_SUFFIX: &str = ".migrating";
/// Where a new database that migrates nothing (a fresh one, a salvaged
/// one) is built: a leftover is a build cut short, of no use.
const BUILDING_SUFFIX: &str = ".new";
/// A SQLite file's first bytes, and where its header keeps the
/// `user_version` (4 bytes, big-endian): read before SQLite opens the
/// file, which could write to it.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
const USER_VERSION_AT: usize = 60;
/// How long a save waits for a write lock someone else holds (an operator's
/// `sqlite3` shell) before it counts as failed (milliseconds): the daemon
/// is the only writer, so a lock held longer is a problem to report, and a
/// durable update should not wait longer than this for it.
const BUSY_TIMEOUT_MS: u64 = 1_000;

/// The outbox's place in [`TABLES`].
const OUTBOX: usize = 4;

/// How a table's rows make the collection's JSON.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// An object: key -> value (maps, and the delivered cards in order).
    Map,
    /// An array of the values, in `seq` order.
    List,
}

/// The collections, by [`State`]'s field names, and how each is stored.
const TABLES: [(&str, Shape); 12] = [
    ("projects", Shape::Map),
    ("chats", Shape::Map),
    ("approvals", Shape::Map),
    ("cards", Shape::Map),
    ("outbox", Shape::List),
    ("jobs", Shape::List),
    ("dedupe", Shape::List),
    ("dead_letters", Shape::List),
    ("streams", Shape::Map),
    ("reminders", Shape::Map),
    ("reminded", Shape::List),
    ("closed", Shape::List),
];

/// What one save wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SaveStats {
    /// Rows inserted or replaced.
    pub upserts: usize,
    /// Rows deleted.
    pub deletes: usize,
    /// Bytes of keys and JSON values written.
    pub bytes: usize,
}

/// A `state.json` moved into the new database.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// The JSON file the state came from.
    pub from: PathBuf,
    /// Where it was kept.
    pub kept: PathBuf,
    /// Rows written.
    pub entries: usize,
}

/// What opening did with the state of an earlier version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migration {
    /// `state.json` was moved into the new database (its backups renamed
    /// with it).
    Moved(Migrated),
    /// `state.db` was missing, though an earlier start had moved
    /// `state.json` into it: the files it left (`kept`) are not read
    /// again, since the commands queued in them were typed already, and
    /// the new database is empty. The operator is told.
    DatabaseMissing { db: PathBuf, kept: Vec<PathBuf> },
}

/// Why the state database was not opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenDbError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Newer(#[from] NewerSchema),
}

/// A `state.db` written by a newer clawmux (after a rollback): this code
/// cannot read it and leaves it untouched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} has schema version {found}, newer than the version {known} this clawmux reads: a newer clawmux wrote it. Nothing was changed. Run the newer clawmux again; or, to start this one with empty state, stop every clawmux using the directory and move {} (with its -wal and -shm files) elsewhere",
    path.display(),
    path.display()
)]
pub struct NewerSchema {
    pub path: PathBuf,
    /// The file's schema version.
    pub found: i64,
    /// The version this code reads ([`SCHEMA_VERSION`]).
    pub known: i64,
}

impl NewerSchema {
    /// `path`, found at schema version `found`.
    fn of(path: &Path, found: i64) -> NewerSchema {
        NewerSchema {
            path: path.to_path_buf(),
            found,
            known: SCHEMA_VERSION,
        }
    }
}

/// The open database and what it holds, as the saver writes it.
pub struct StateDb {
    conn: Connection,
    path: PathBuf,
    /// The state as last saved: what the next save compares with.
    saved: State,
    /// Per table (in [`TABLES`] order), the key -> seq of every row.
    seqs: Vec<HashMap<String, i64>>,
    /// Per table, the next unused seq.
    next: Vec<i64>,
}

/// A save found and not written yet.
pub struct Planned {
    changes: Vec<(usize, Change)>,
    /// Copies of the outbox entries new or changed (see [`Reuse`]): the
    /// outbox is the one collection large and changed on every delivery.
    outbox_fresh: Option<Vec<super::state::OutboxEntry>>,
    /// The changed collections as they are to be saved (the rest default).
    parts: State,
}

/// Copies collection `t` (of [`TABLES`]) of `from` into `to`.
fn copy_part(t: usize, from: &State, to: &mut State) {
    match t {
        0 => to.projects.clone_from(&from.projects),
        1 => to.chats.clone_from(&from.chats),
        2 => to.approvals.clone_from(&from.approvals),
        3 => to.cards.clone_from(&from.cards),
        4 => to.outbox.clone_from(&from.outbox),
        5 => to.jobs.clone_from(&from.jobs),
        6 => to.dedupe.clone_from(&from.dedupe),
        7 => to.dead_letters.clone_from(&from.dead_letters),
        8 => to.streams.clone_from(&from.streams),
        9 => to.reminders.clone_from(&from.reminders),
        10 => to.reminded.clone_from(&from.reminded),
        _ => to.closed.clone_from(&from.closed),
    }
}

/// Moves collection `t` (of [`TABLES`]) of `from` into `to`.
fn move_part(t: usize, from: &mut State, to: &mut State) {
    use std::mem::take;
    match t {
        0 => to.projects = take(&mut from.projects),
        1 => to.chats = take(&mut from.chats),
        2 => to.approvals = take(&mut from.approvals),
        3 => to.cards = take(&mut from.cards),
        4 => to.outbox = take(&mut from.outbox),
        5 => to.jobs = take(&mut from.jobs),
        6 => to.dedupe = take(&mut from.dedupe),
        7 => to.dead_letters = take(&mut from.dead_letters),
        8 => to.streams = take(&mut from.streams),
        9 => to.reminders = take(&mut from.reminders),
        10 => to.reminded = take(&mut from.reminded),
        _ => to.closed = take(&mut from.closed),
    }
}

/// One table's planned writes.
#[derive(Default)]
struct Change {
    /// key, seq, JSON value.
    upserts: Vec<(String, i64, String)>,
    deletes: Vec<String>,
    next: i64,
    /// For a merged list: how to rebuild its saved copy.
    reuse: Option<Reuse>,
}

impl StateDb {
    /// Opens (making or migrating as needed) the database in `dir`.
    pub fn open(dir: &Path) -> Result<(StateDb, Loaded, Option<Migration>), OpenDbError> {
        let path = dir.join(DB_FILE);
        let migrating = sibling(&path, MIGRATING_SUFFIX);
        // A build cut short: of no use (what it came from is still there).
        let _ = fs::remove_file(sibling(&path, BUILDING_SUFFIX));
        if path.exists() {
            // `state.db` takes the place of a migration's build last, so
            // one left beside it is stale.
            let _ = fs::remove_file(&migrating);
            refuse_newer(&path)?;
            return match open_existing(&path) {
                Ok(db) => Ok((db, Loaded::Current, None)),
                Err(Unusable::Corrupt(problem)) => Ok(salvage(dir, &path, problem)?),
                // Busy, out of memory, no permission: the file may be fine
                // and is left alone.
                Err(Unusable::Error(source)) => Err(StateError::Database { path, source }.into()),
                Err(Unusable::Newer(found)) => Err(NewerSchema::of(&path, found).into()),
            };
        }
        let json = StateFile::new(dir.join(JSON_FILE));
        let kept = migrated_files(json.path());
        if !kept.is_empty() {
            if migrating.exists() {
                // The files are renamed only once the build is whole: the
                // migration was cut short just before its last step.
                return finish_migration(dir, &path, &migrating, &json);
            }
            let (db, _) = create(&path, BUILDING_SUFFIX, &State::default(), || Ok(()))?;
            let missing = Migration::DatabaseMissing { db: path, kept };
            return Ok((db, Loaded::Fresh, Some(missing)));
        }
        let _ = fs::remove_file(&migrating);
        if unmigrated_files(json.path()).is_empty() {
            let (db, _) = create(&path, BUILDING_SUFFIX, &State::default(), || Ok(()))?;
            return Ok((db, Loaded::Fresh, None));
        }
        let (state, loaded) = json.load::<State>()?;
        let (db, entries) = create(&path, MIGRATING_SUFFIX, &state, || {
            rename_migrated(dir, json.path())
        })?;
        let loaded = match loaded {
            Loaded::Current | Loaded::Fresh => Loaded::Current,
            other => other,
        };
        let migrated = Migrated {
            from: json.path().to_path_buf(),
            kept: migrated_name(json.path(), 0),
            entries,
        };
        Ok((db, loaded, Some(Migration::Moved(migrated))))
    }

    /// The state as loaded (and as last saved).
    pub fn state(&self) -> &State {
        &self.saved
    }

    /// Writes what changed between the last save and `state` in one
    /// transaction. On failure nothing is written and the next save
    /// compares with the same last saved state, so it writes this change
    /// too.
    pub fn save(&mut self, state: &State) -> Result<SaveStats, StateError> {
        let planned = self.plan(state)?;
        self.write(planned)
    }

    /// What a save of `state` writes (the changed rows per table), with a
    /// copy of the collections they come from: for the saver to take while
    /// it holds the state's lock, and [`Self::write`] after releasing it.
    pub fn plan(&self, state: &State) -> Result<Planned, StateError> {
        let changes =
            diff(&self.saved, state, &self.seqs, &self.next).map_err(StateError::Serialize)?;
        let mut parts = State::default();
        let mut outbox_fresh = None;
        for (t, change) in &changes {
            match (*t, &change.reuse) {
                (OUTBOX, Some(reuse)) => {
                    let fresh = (state.outbox.iter().zip(&reuse.fresh))
                        .filter(|(_, f)| **f)
                        .map(|(e, _)| e.clone());
                    outbox_fresh = Some(fresh.collect());
                }
                _ => copy_part(*t, state, &mut parts),
            }
        }
        Ok(Planned {
            changes,
            outbox_fresh,
            parts,
        })
    }

    /// Writes a planned save in one transaction.
    pub fn write(&mut self, planned: Planned) -> Result<SaveStats, StateError> {
        let Planned {
            changes,
            mut outbox_fresh,
            mut parts,
        } = planned;
        let mut stats = SaveStats::default();
        if changes.is_empty() {
            return Ok(stats);
        }
        let werr = |source| StateError::Database {
            path: self.path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(werr)?;
        for (t, change) in &changes {
            let name = TABLES[*t].0;
            let mut del = tx
                .prepare_cached(&format!("DELETE FROM {name} WHERE k = ?1"))
                .map_err(werr)?;
            for key in &change.deletes {
                del.execute([key]).map_err(werr)?;
            }
            let mut put = tx
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO {name} (k, seq, v) VALUES (?1, ?2, ?3)"
                ))
                .map_err(werr)?;
            for (key, seq, value) in &change.upserts {
                put.execute(params![key, seq, value]).map_err(werr)?;
                stats.bytes += key.len() + value.len();
            }
            stats.upserts += change.upserts.len();
            stats.deletes += change.deletes.len();
        }
        tx.commit().map_err(werr)?;
        for (t, change) in changes {
            let fresh = if t == OUTBOX {
                outbox_fresh.take()
            } else {
                None
            };
            match (&change.reuse, fresh) {
                (Some(reuse), Some(fresh)) => {
                    let old = std::mem::take(&mut self.saved.outbox);
                    self.saved.outbox = reuse.rebuild(old, fresh);
                }
                _ => move_part(t, &mut parts, &mut self.saved),
            }
            let seqs = &mut self.seqs[t];
            for key in change.deletes {
                seqs.remove(&key);
            }
            for (key, seq, _) in change.upserts {
                seqs.insert(key, seq);
            }
            self.next[t] = change.next;
        }
        Ok(stats)
    }
}

/// Reads the state saved in `dir`'s database without changing it (tests,
/// tools). `None` when there is no database yet.
pub fn read(dir: &Path) -> Result<Option<State>, StateError> {
    let path = dir.join(DB_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .and_then(|c| {
            c.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
            Ok(c)
        })
        .map_err(|source| StateError::Database {
            path: path.clone(),
            source,
        })?;
    let (tables, problems) = read_tables(&conn, true);
    if let Some(problem) = problems.into_iter().next() {
        return Err(StateError::Corrupt { path, problem });
    }
    let (state, _) = state_from(&tables);
    Ok(Some(state))
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    fs::File::open(dir).and_then(|d| d.sync_all())
}

/// Opens `path` with the settings every connection of the daemon uses.
///
/// WAL: a commit appends the changed pages to `state.db-wal` instead of
/// rewriting the database, and readers (tests, an operator's `sqlite3`)
/// never block the writer. `synchronous = FULL`: every commit fsyncs the
/// WAL before it returns, so a change the daemon acts on after
/// `update_durable` (typing into a pane, after recording the intent)
/// survives a power loss too, not only a crash of the process, which is
/// what the state file gave before; `NORMAL` would only sync at
/// checkpoints and could lose the last commits on power loss.
fn open_conn(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// Why an existing database was not opened.
enum Unusable {
    /// Its content is bad: it is moved aside.
    Corrupt(String),
    /// Opening failed for another reason: it is left alone.
    Error(rusqlite::Error),
    /// Its schema is newer than this code's (this version): left alone
    /// and refused.
    Newer(i64),
}

impl From<rusqlite::Error> for Unusable {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match e.sqlite_error_code() {
            Some(DatabaseCorrupt | NotADatabase) => Unusable::Corrupt(e.to_string()),
            _ => Unusable::Error(e),
        }
    }
}

/// Opens a database that exists, checks it and loads the state.
fn open_existing(path: &Path) -> Result<StateDb, Unusable> {
    let conn = open_conn(path)?;
    let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(Unusable::Corrupt(format!("failed its check: {check}")));
    }
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(Unusable::Newer(version));
    }
    if version != SCHEMA_VERSION {
        return Err(Unusable::Corrupt(format!(
            "schema version {version}, this clawmux reads {SCHEMA_VERSION}"
        )));
    }
    let (tables, problems) = read_tables(&conn, true);
    if let Some(problem) = problems.into_iter().next() {
        return Err(Unusable::Corrupt(problem));
    }
    let (state, problems) = state_from(&tables);
    if let Some(problem) = problems.into_iter().next() {
        return Err(Unusable::Corrupt(problem));
    }
    let (seqs, next) = seqs_of(&tables);
    let db = StateDb {
        conn,
        path: path.to_path_buf(),
        saved: state,
        seqs,
        next,
    };
    Ok(db)
}

/// One table's rows as read: key, seq, JSON value.
type Rows = Vec<(String, i64, String)>;

/// Reads every table, in order. `strict`: stop at the first problem;
/// else keep the rows read before a table's problem and go on.
fn read_tables(conn: &Connection, strict: bool) -> (Vec<Rows>, Vec<String>) {
    let mut tables = Vec::new();
    let mut problems = Vec::new();
    for (name, _) in TABLES {
        let mut rows = Vec::new();
        if let Err(e) = read_table(conn, name, &mut rows) {
            problems.push(format!("table {name}: {e}"));
            if strict {
                return (tables, problems);
            }
        }
        tables.push(rows);
    }
    (tables, problems)
}

fn read_table(conn: &Connection, name: &str, rows: &mut Rows) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(&format!("SELECT k, seq, v FROM {name} ORDER BY seq, k"))?;
    let mut found = stmt.query([])?;
    while let Some(row) = found.next()? {
        rows.push((row.get(0)?, row.get(1)?, row.get(2)?));
    }
    Ok(())
}

/// The state the tables hold; a row that does not read as an entry of its
/// collection (a damaged row, a name an older release let through) is
/// left out and named in the problems.
fn state_from(tables: &[Rows]) -> (State, Vec<String>) {
    let reads = |name: &str, shape: Shape, rows: &[(String, i64, String)]| {
        let field = collection_json(name, shape, rows);
        serde_json::from_str::<State>(&format!("{{{field}}}")).map(|_| field)
    };
    let mut fields = Vec::new();
    let mut problems = Vec::new();
    for ((name, shape), rows) in TABLES.iter().zip(tables) {
        // Each collection checked alone, then each row of a bad one: one
        // bad row costs only itself.
        match reads(name, *shape, rows) {
            Ok(field) => fields.push(field),
            Err(e) => {
                let good: Rows = (rows.iter())
                    .filter(|row| reads(name, *shape, std::slice::from_ref(row)).is_ok())
                    .cloned()
                    .collect();
                let lost = rows.len() - good.len();
                problems.push(format!(
                    "table {name}: {e} ({lost} of {} rows left out)",
                    rows.len()
                ));
                fields.push(collection_json(name, *shape, &good));
            }
        }
    }
    let text = format!("{{{}}}", fields.join(","));
    match serde_json::from_str::<State>(&text) {
        Ok(state) => (state, problems),
        Err(e) => {
            problems.push(e.to_string());
            (State::default(), problems)
        }
    }
}

/// `"name":{…}` or `"name":[…]` from a table's rows (values are JSON
/// already; the text keeps the rows' order, which the cards' map needs).
fn collection_json(name: &str, shape: Shape, rows: &[(String, i64, String)]) -> String {
    let mut out = format!("\"{name}\":");
    let (open, close) = match shape {
        Shape::Map => ('{', '}'),
        Shape::List => ('[', ']'),
    };
    out.push(open);
    for (i, (key, _, value)) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if shape == Shape::Map {
            out.push_str(&serde_json::Value::from(key.as_str()).to_string());
            out.push(':');
        }
        out.push_str(value);
    }
    out.push(close);
    out
}

fn seqs_of(tables: &[Rows]) -> (Vec<HashMap<String, i64>>, Vec<i64>) {
    let seqs: Vec<HashMap<String, i64>> = tables
        .iter()
        .map(|rows| rows.iter().map(|(k, s, _)| (k.clone(), *s)).collect())
        .collect();
    let next = tables
        .iter()
        .map(|rows| rows.iter().map(|(_, s, _)| s + 1).max().unwrap_or(0))
        .collect();
    (seqs, next)
}

/// Makes a new database at `path` holding `state`: built and filled under
/// the temp name `path` + `temp`, then `between` runs (a migration renames
/// its JSON files there), then it is renamed into place, so `state.db` is
/// always whole and holds the state from its first moment. Returns it and
/// the rows written.
fn create(
    path: &Path,
    temp: &str,
    state: &State,
    between: impl FnOnce() -> Result<(), StateError>,
) -> Result<(StateDb, usize), StateError> {
    let building = sibling(path, temp);
    let dberr = |source| StateError::Database {
        path: path.to_path_buf(),
        source,
    };
    let werr = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        private::create_dir(dir).map_err(werr)?;
    }
    // Made 0600 before SQLite opens it; its journal, WAL and shared-memory
    // files take the database's mode.
    drop(private::create(&building).map_err(werr)?);
    let mut conn = Connection::open_with_flags(
        &building,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(dberr)?;
    // A rollback journal while it is built: the file alone is the
    // database when it is renamed.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(dberr)?;
    let tx = conn.transaction().map_err(dberr)?;
    for (name, _) in TABLES {
        tx.execute_batch(&format!(
            "CREATE TABLE {name} (k TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, v TEXT NOT NULL) WITHOUT ROWID;"
        ))
        .map_err(dberr)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(dberr)?;
    tx.commit().map_err(dberr)?;
    let mut db = StateDb {
        conn,
        path: path.to_path_buf(),
        saved: State::default(),
        seqs: vec![HashMap::new(); TABLES.len()],
        next: vec![0; TABLES.len()],
    };
    let entries = db.save(state)?.upserts;
    let StateDb {
        conn,
        saved,
        seqs,
        next,
        ..
    } = db;
    conn.close().map_err(|(_, e)| dberr(e))?;
    if let Some(dir) = dir {
        sync_dir(dir).map_err(werr)?;
    }
    between()?;
    fs::rename(&building, path).map_err(werr)?;
    if let Some(dir) = dir {
        sync_dir(dir).map_err(werr)?;
    }
    let conn = open_conn(path).map_err(dberr)?;
    let db = StateDb {
        conn,
        path: path.to_path_buf(),
        saved,
        seqs,
        next,
    };
    Ok((db, entries))
}

/// Refuses a database whose schema is newer than [`SCHEMA_VERSION`],
/// before anything could write to it: the version in the file's header,
/// and, when a WAL is there (a newer clawmux that did not stop cleanly),
/// the one a read-only connection sees through it. A file that is no
/// SQLite database is left to [`open_existing`] to find.
fn refuse_newer(path: &Path) -> Result<(), NewerSchema> {
    let newer = |found| NewerSchema::of(path, found);
    let mut header = [0u8; USER_VERSION_AT + 4];
    let read = fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut header)
    });
    if read.is_ok() && header.starts_with(SQLITE_MAGIC) {
        let mut version = [0u8; 4];
        version.copy_from_slice(&header[USER_VERSION_AT..]);
        let found = i64::from(i32::from_be_bytes(version));
        if found > SCHEMA_VERSION {
            return Err(newer(found));
        }
    }
    if !sibling(path, "-wal").exists() {
        return Ok(());
    }
    // Read-only: it never checkpoints the WAL into the file.
    let found = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)));
    match found {
        Ok(found) if found > SCHEMA_VERSION => Err(newer(found)),
        // Older, or unreadable: the usual open decides.
        _ => Ok(()),
    }
}

/// `state.json`'s name once migrated, and its backup `n`'s.
fn migrated_name(json: &Path, n: usize) -> PathBuf {
    match n {
        0 => sibling(json, MIGRATED_SUFFIX),
        n => sibling(json, &format!("{MIGRATED_SUFFIX}.{n}")),
    }
}

/// `state.json` (0) and its backups `state.json.N`, by their names before
/// a migration.
fn unmigrated_name(json: &Path, n: usize) -> PathBuf {
    match n {
        0 => json.to_path_buf(),
        n => sibling(json, &format!(".{n}")),
    }
}

/// The files a migration renamed that are still there.
fn migrated_files(json: &Path) -> Vec<PathBuf> {
    (0..=STATE_BACKUPS)
        .map(|n| migrated_name(json, n))
        .filter(|p| p.exists())
        .collect()
}

/// `state.json` and its backups under their names before a migration.
fn unmigrated_files(json: &Path) -> Vec<PathBuf> {
    (0..=STATE_BACKUPS)
        .map(|n| unmigrated_name(json, n))
        .filter(|p| p.exists())
        .collect()
}

/// Renames `state.json` and each backup to its migrated name (0600): the
/// migration's mark, so no later start reads them again.
fn rename_migrated(dir: &Path, json: &Path) -> Result<(), StateError> {
    use std::os::unix::fs::PermissionsExt;
    for n in 0..=STATE_BACKUPS {
        let (from, to) = (unmigrated_name(json, n), migrated_name(json, n));
        if !from.exists() {
            continue;
        }
        let werr = |source| StateError::Write {
            path: to.clone(),
            source,
        };
        fs::rename(&from, &to).map_err(werr)?;
        fs::set_permissions(&to, fs::Permissions::from_mode(private::FILE_MODE)).map_err(werr)?;
    }
    sync_dir(dir).map_err(|source| StateError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// A migration stopped after its database was built and (some of) the
/// JSON files renamed: renames the rest and puts the database in place.
fn finish_migration(
    dir: &Path,
    path: &Path,
    migrating: &Path,
    json: &StateFile,
) -> Result<(StateDb, Loaded, Option<Migration>), OpenDbError> {
    rename_migrated(dir, json.path())?;
    let werr = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    fs::rename(migrating, path).map_err(werr)?;
    sync_dir(dir).map_err(werr)?;
    let db = match open_existing(path) {
        Ok(db) => db,
        Err(Unusable::Corrupt(problem)) => return Ok(salvage(dir, path, problem)?),
        Err(Unusable::Error(source)) => {
            let path = path.to_path_buf();
            return Err(StateError::Database { path, source }.into());
        }
        Err(Unusable::Newer(found)) => return Err(NewerSchema::of(path, found).into()),
    };
    let migrated = Migrated {
        from: json.path().to_path_buf(),
        kept: migrated_name(json.path(), 0),
        entries: db.seqs.iter().map(HashMap::len).sum(),
    };
    Ok((db, Loaded::Current, Some(Migration::Moved(migrated))))
}

/// A database that cannot be used: moved aside with its WAL as
/// `state.db.corrupt`, what can be read from it kept in a new database.
fn salvage(
    dir: &Path,
    path: &Path,
    problem: String,
) -> Result<(StateDb, Loaded, Option<Migration>), StateError> {
    let problem = format!("{} is unusable: {problem}", path.display());
    let aside = sibling(path, ".corrupt");
    let werr = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    fs::rename(path, &aside).map_err(werr)?;
    for suffix in ["-wal", "-shm"] {
        let from = sibling(path, suffix);
        if from.exists() {
            fs::rename(&from, sibling(&aside, suffix)).map_err(werr)?;
        }
    }
    sync_dir(dir).map_err(werr)?;
    let (state, lost) = match Connection::open_with_flags(&aside, OpenFlags::SQLITE_OPEN_READ_WRITE)
    {
        Ok(conn) => {
            let (tables, mut lost) = read_tables(&conn, false);
            let (state, more) = state_from(&tables);
            lost.extend(more);
            (state, lost)
        }
        Err(e) => (State::default(), vec![e.to_string()]),
    };
    let (db, _) = create(path, BUILDING_SUFFIX, &state, || Ok(()))?;
    let loaded = if state == State::default() {
        Loaded::Reset { problem }
    } else {
        let problem = if lost.is_empty() {
            problem
        } else {
            format!("{problem}; not read: {}", lost.join("; "))
        };
        Loaded::Backup {
            backup: aside,
            problem,
        }
    };
    Ok((db, loaded, None))
}

/// The rows of each changed collection that differ from the last save.
fn diff(
    old: &State,
    new: &State,
    seqs: &[HashMap<String, i64>],
    next: &[i64],
) -> Result<Vec<(usize, Change)>, serde_json::Error> {
    let mut out = Vec::new();
    let mut table = |t: usize, ordered: bool, old_rows: RowsOf, new_rows: RowsOf| {
        let change = diff_table(ordered, &old_rows, &new_rows, &seqs[t], next[t])?;
        if !(change.upserts.is_empty() && change.deletes.is_empty()) {
            out.push((t, change));
        }
        Ok::<(), serde_json::Error>(())
    };
    // Each collection compared whole first: an unchanged one costs no
    // rows. Indexes are those of [`TABLES`].
    macro_rules! map {
        ($t:expr, $field:ident) => {
            if old.$field != new.$field {
                table($t, false, keyed(&old.$field), keyed(&new.$field))?;
            }
        };
    }
    macro_rules! list {
        ($t:expr, $ordered:expr, $field:ident, $id:expr) => {
            if old.$field != new.$field {
                let (o, n) = (
                    listed(old.$field.iter(), $id),
                    listed(new.$field.iter(), $id),
                );
                table($t, $ordered, o, n)?;
            }
        };
    }
    map!(0, projects);
    map!(1, chats);
    map!(2, approvals);
    // Lists whose ids are unique by construction (a map's keys, random
    // uuids, a set's ids): compared by walking both in order, with no
    // copies and no hashing of the entries that did not change.
    let mut merged_out = Vec::new();
    macro_rules! merged {
        ($t:expr, $field:ident, $row:expr) => {
            if old.$field != new.$field {
                let o: Vec<_> = old.$field.iter().map($row).collect();
                let n: Vec<_> = new.$field.iter().map($row).collect();
                let change = merge_table(&o, &n, &seqs[$t], next[$t])?;
                if !(change.upserts.is_empty() && change.deletes.is_empty()) {
                    merged_out.push(($t, change));
                }
            }
        };
    }
    merged!(3, cards, |(k, v): (&String, &String)| (k.as_str(), v));
    merged!(4, outbox, |e: &OutboxEntry| (e.uuid.as_str(), e));
    merged!(5, jobs, |j: &Job| (j.id.as_str(), j));
    merged!(6, dedupe, |id: &String| (id.as_str(), id));
    list!(7, true, dead_letters, |d: &DeadLetter| d.entry.uuid.clone());
    map!(8, streams);
    map!(9, reminders);
    list!(10, false, reminded, |id: &ApprovalId| id.to_string());
    list!(11, true, closed, |h: &CardHandle| h.to_string());
    out.extend(merged_out);
    Ok(out)
}

/// A collection's rows: key and entry.
type RowsOf<'a> = Vec<(String, &'a dyn Entry)>;

/// An entry of a collection: compared with the saved one, and written as
/// JSON when it differs.
trait Entry {
    fn same(&self, other: &dyn Entry) -> bool;
    fn json(&self) -> Result<String, serde_json::Error>;
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: PartialEq + Serialize + 'static> Entry for T {
    fn same(&self, other: &dyn Entry) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A map's rows: its keys as they are written.
fn keyed<K: ToString, V: Entry>(
    map: &std::collections::BTreeMap<K, V>,
) -> Vec<(String, &dyn Entry)> {
    map.iter()
        .map(|(k, v)| (k.to_string(), v as &dyn Entry))
        .collect()
}

/// A list's rows, keyed by each entry's id; an id seen again (a list may
/// hold one twice) gets `\u{1}N` appended, so every row has its own key.
fn listed<'a, T: Entry + 'a>(
    items: impl Iterator<Item = &'a T>,
    id: impl Fn(&T) -> String,
) -> Vec<(String, &'a dyn Entry)> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    items
        .map(|item| {
            let base = id(item);
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            let key = if *n == 1 {
                base
            } else {
                format!("{base}\u{1}{n}")
            };
            (key, item as &dyn Entry)
        })
        .collect()
}

/// One ordered table's writes, for lists whose ids are unique: both
/// walked in order; a row matched by id is written if its entry changed;
/// an old row that does not match is gone (deleted); new rows past the
/// old ones get the next numbers. An entry put between old ones makes the
/// old rows after it deleted and written again after it: more writes, the
/// same order.
fn merge_table<T: Serialize + PartialEq>(
    old: &[(&str, &T)],
    new: &[(&str, &T)],
    seqs: &HashMap<String, i64>,
    next: i64,
) -> Result<Change, serde_json::Error> {
    let mut change = Change {
        next,
        ..Change::default()
    };
    let mut i = 0;
    let mut reuse = Reuse {
        kept_old: vec![false; old.len()],
        fresh: Vec::with_capacity(new.len()),
    };
    for (key, entry) in new {
        while let Some((old_key, _)) = old.get(i).filter(|(k, _)| k != key) {
            change.deletes.push(old_key.to_string());
            i += 1;
        }
        let seq = match old.get(i) {
            Some((_, saved)) => {
                i += 1;
                if saved == entry {
                    reuse.kept_old[i - 1] = true;
                    reuse.fresh.push(false);
                    continue;
                }
                seqs.get(*key).copied()
            }
            None => None,
        };
        reuse.fresh.push(true);
        let seq = seq.unwrap_or_else(|| {
            change.next += 1;
            change.next - 1
        });
        change
            .upserts
            .push((key.to_string(), seq, serde_json::to_string(entry)?));
    }
    change
        .deletes
        .extend(old[i..].iter().map(|(k, _)| k.to_string()));
    change.reuse = Some(reuse);
    Ok(change)
}

/// How a merged list's saved copy is rebuilt after a save without copying
/// it whole: the old entries kept (in order) and, in the new order, which
/// places take a copy of a new or changed entry.
struct Reuse {
    kept_old: Vec<bool>,
    /// Per new entry: true for a copy, false for the next kept old entry.
    fresh: Vec<bool>,
}

impl Reuse {
    /// The new list from the `old` one and the `copies` of the fresh
    /// entries.
    fn rebuild<T, C: IntoIterator<Item = T> + FromIterator<T>>(&self, old: C, copies: Vec<T>) -> C {
        let mut kept = (old.into_iter().zip(&self.kept_old)).filter_map(|(e, k)| k.then_some(e));
        let mut copies = copies.into_iter();
        (self.fresh.iter())
            .filter_map(|&fresh| if fresh { copies.next() } else { kept.next() })
            .collect()
    }
}

/// One table's writes: rows new or changed since the last save, and rows
/// gone. `seqs` are the saved rows' numbers; in an `ordered` table a new
/// row gets the next number, and rows found out of their saved order
/// renumber the table.
fn diff_table(
    ordered: bool,
    old: &[(String, &dyn Entry)],
    new: &[(String, &dyn Entry)],
    seqs: &HashMap<String, i64>,
    next: i64,
) -> Result<Change, serde_json::Error> {
    let before: HashMap<&str, &dyn Entry> = old.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut change = Change {
        next,
        ..Change::default()
    };
    let mut last = i64::MIN;
    let mut in_order = true;
    let mut planned: Vec<(&str, i64, &dyn Entry)> = Vec::new();
    for (key, entry) in new {
        match (seqs.get(key.as_str()), before.get(key.as_str())) {
            (Some(&seq), Some(saved)) => {
                in_order &= seq > last;
                last = seq;
                if !entry.same(*saved) {
                    planned.push((key, seq, *entry));
                }
            }
            // New (or saved without a snapshot entry: written again).
            (seq, _) => {
                let seq = match seq {
                    Some(&s) if !ordered => s,
                    _ => {
                        change.next += 1;
                        change.next - 1
                    }
                };
                last = seq;
                planned.push((key, seq, *entry));
            }
        }
    }
    if ordered && !in_order {
        planned = (new.iter().enumerate())
            .map(|(i, (k, e))| (k.as_str(), change.next + i as i64, *e))
            .collect();
        change.next += new.len() as i64;
    }
    for (key, seq, entry) in planned {
        change.upserts.push((key.to_string(), seq, entry.json()?));
    }
    let present: HashSet<&str> = new.iter().map(|(k, _)| k.as_str()).collect();
    change.deletes = (seqs.keys())
        .filter(|k| !present.contains(k.as_str()))
        .cloned()
        .collect();
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{ChatTarget, OutboxOp};
    use clawmux_message::{Block, Button, Message, Style, Tone};
    use std::os::unix::fs::MetadataExt;

    fn card(i: usize) -> OutboxEntry {
        OutboxEntry {
            uuid: format!("u{i}"),
            op: OutboxOp::Patch {
                handle: format!("h{i}").parse().unwrap(),
            },
            message: Some(
                Message::new(format!("card {i}"), Tone::Info).push(Block::text("x".repeat(500))),
            ),
            created_ms: i as u64,
        }
    }

    fn reopen(dir: &Path) -> State {
        let (db, loaded, migrated) = StateDb::open(dir).unwrap();
        assert_eq!((loaded, migrated), (Loaded::Current, None));
        db.saved
    }

    #[test]
    fn a_save_writes_what_changed_and_keeps_the_order() {
        let dir = tempfile::tempdir().unwrap();
        let (mut db, loaded, _) = StateDb::open(dir.path()).unwrap();
        assert_eq!(loaded, Loaded::Fresh);
        let mut state = State::default();
        state.outbox.extend((0..2000).map(card));
        state
            .chats
            .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"));
        let all = db.save(&state).unwrap();
        assert_eq!((all.upserts, all.deletes), (2001, 0));

        // One card delivered: its entry leaves, its message id is kept.
        state.outbox.pop_front();
        state.cards.insert("h0".into(), "om_0".into());
        let one = db.save(&state).unwrap();
        assert_eq!((one.upserts, one.deletes), (1, 1));
        assert!(one.bytes < all.bytes / 500, "{one:?} against {all:?}");
        assert_eq!(db.save(&state).unwrap(), SaveStats::default());

        // A changed entry in the middle is one row; a new one goes last.
        state.outbox[500].message = Some(Message::new("changed", Tone::Info));
        state.outbox.push_back(card(2000));
        let two = db.save(&state).unwrap();
        assert_eq!((two.upserts, two.deletes), (2, 0));
        drop(db);
        assert_eq!(reopen(dir.path()), state);
    }

    #[test]
    fn entries_out_of_order_and_repeated_ids_read_back_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let (mut db, _, _) = StateDb::open(dir.path()).unwrap();
        let mut state = State::default();
        state.outbox.extend((0..5).map(card));
        for h in ["a", "b", "a"] {
            state.close_card(&h.parse().unwrap());
        }
        db.save(&state).unwrap();
        // One put in front: read back in front, not misread.
        state.outbox.push_front(card(9));
        state.close_card(&"a".parse().unwrap());
        let stats = db.save(&state).unwrap();
        // The five after it deleted and written again after it (6 + the
        // closed prompt): more writes, the same order.
        assert_eq!((stats.upserts, stats.deletes), (7, 5));
        drop(db);
        let back = reopen(dir.path());
        assert_eq!(back.outbox, state.outbox);
        assert_eq!(back.closed, state.closed);
    }

    #[test]
    fn a_state_file_is_migrated_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = State::default();
        state
            .chats
            .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"));
        state.outbox.extend((0..3).map(card));
        let json = StateFile::new(dir.path().join(JSON_FILE));
        json.save(&state).unwrap();
        let (db, loaded, migrated) = StateDb::open(dir.path()).unwrap();
        assert_eq!(loaded, Loaded::Current);
        let Some(Migration::Moved(migrated)) = migrated else {
            panic!("{migrated:?}")
        };
        assert_eq!(migrated.entries, 4);
        assert_eq!(migrated.kept, dir.path().join("state.json.migrated"));
        assert_eq!(db.saved, state);
        drop(db);
        assert!(!json.path().exists());
        for name in ["state.json.migrated", DB_FILE] {
            let mode = fs::metadata(dir.path().join(name)).unwrap().mode();
            assert_eq!(mode & 0o777, private::FILE_MODE, "{name}");
        }
        assert_eq!(reopen(dir.path()), state, "not migrated again");
        assert!(!dir.path().join("state.db.migrating").exists());
    }

    /// The state of an earlier version with backups `state.json.1` and
    /// `.2` (a save a minute, so each is a generation), the last one with
    /// a command queued.
    fn json_with_backups(dir: &Path) -> State {
        let json = StateFile::new(dir.join(JSON_FILE));
        let mut state = State::default();
        for minute in 1..=3 {
            state.jobs.push(Job::new(
                &"demo".parse().unwrap(),
                &format!("command {minute}"),
                ChatTarget::Console,
                None,
                60,
                0,
            ));
            let bytes = serde_json::to_vec(&state).unwrap();
            json.save_bytes(&bytes, minute * crate::state_file::BACKUP_INTERVAL_MS)
                .unwrap();
        }
        assert!(dir.join("state.json.2").exists());
        state
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = (fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("state.json"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_migration_renames_the_backups_and_a_lost_database_is_never_migrated_again() {
        let dir = tempfile::tempdir().unwrap();
        let state = json_with_backups(dir.path());
        let (db, _, migrated) = StateDb::open(dir.path()).unwrap();
        assert!(
            matches!(migrated, Some(Migration::Moved(_))),
            "{migrated:?}"
        );
        assert_eq!(db.saved, state);
        drop(db);
        // Every file of the earlier version under its migrated name.
        assert_eq!(
            names_in(dir.path()),
            [
                "state.json.migrated",
                "state.json.migrated.1",
                "state.json.migrated.2"
            ]
        );
        for name in names_in(dir.path()) {
            let mode = fs::metadata(dir.path().join(&name)).unwrap().mode();
            assert_eq!(mode & 0o777, private::FILE_MODE, "{name}");
        }

        // The database lost: started empty, the operator told, nothing of
        // the migrated files (their queued commands) read again.
        for name in [DB_FILE, "state.db-wal", "state.db-shm"] {
            let _ = fs::remove_file(dir.path().join(name));
        }
        let (db, loaded, migrated) = StateDb::open(dir.path()).unwrap();
        assert_eq!(db.saved, State::default());
        assert_eq!(loaded, Loaded::Fresh);
        let Some(Migration::DatabaseMissing { db: lost, kept }) = migrated else {
            panic!("{migrated:?}")
        };
        assert_eq!(lost, dir.path().join(DB_FILE));
        assert_eq!(kept.len(), 3, "{kept:?}");
        drop(db);
        assert_eq!(reopen(dir.path()), State::default());
    }

    /// What a release before this one left: `state.json` migrated, its
    /// backups under their old names.
    #[test]
    fn backups_an_earlier_migration_left_are_not_migrated_when_the_database_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        json_with_backups(dir.path());
        fs::rename(
            dir.path().join(JSON_FILE),
            dir.path().join("state.json.migrated"),
        )
        .unwrap();
        let (db, _, migrated) = StateDb::open(dir.path()).unwrap();
        assert_eq!(db.saved.jobs, [], "a queued command would be typed again");
        assert!(
            matches!(migrated, Some(Migration::DatabaseMissing { .. })),
            "{migrated:?}"
        );
        assert!(
            dir.path().join("state.json.1").exists(),
            "left for the operator"
        );
    }

    #[test]
    fn a_migration_cut_short_after_its_build_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        let state = json_with_backups(dir.path());
        let json = dir.path().join(JSON_FILE);
        // The build is whole; the process ends after the first rename.
        let path = dir.path().join(DB_FILE);
        let cut = create(&path, MIGRATING_SUFFIX, &state, || {
            fs::rename(json.with_extension("json.2"), migrated_name(&json, 2)).unwrap();
            Err(StateError::Corrupt {
                path: json.clone(),
                problem: "the process ended".into(),
            })
        });
        assert!(cut.is_err());
        assert!(!path.exists());
        let (db, loaded, migrated) = StateDb::open(dir.path()).unwrap();
        assert_eq!(loaded, Loaded::Current);
        assert!(
            matches!(migrated, Some(Migration::Moved(_))),
            "{migrated:?}"
        );
        assert_eq!(db.saved, state);
        drop(db);
        assert_eq!(
            names_in(dir.path()),
            [
                "state.json.migrated",
                "state.json.migrated.1",
                "state.json.migrated.2"
            ]
        );
        assert_eq!(reopen(dir.path()), state);
    }

    /// Every file in `dir` and its bytes.
    fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = (fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().path())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
            .filter(|(n, _)| n != "state.db-shm")
            .map(|(n, p)| (n, fs::read(p).unwrap()))
            .collect();
        files.sort();
        files
    }

    #[test]
    fn a_database_of_a_newer_schema_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let (mut db, _, _) = StateDb::open(dir.path()).unwrap();
        let mut state = State::default();
        state
            .chats
            .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"));
        db.save(&state).unwrap();
        drop(db);
        let path = dir.path().join(DB_FILE);
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
        drop(conn);
        let before = files_of(dir.path());
        let err = StateDb::open(dir.path()).err().expect("refused");
        let OpenDbError::Newer(newer) = &err else {
            panic!("{err}")
        };
        assert_eq!((newer.found, newer.known), (2, SCHEMA_VERSION));
        let text = err.to_string();
        assert!(text.contains("schema version 2"), "{text}");
        assert!(text.contains("version 1 this clawmux reads"), "{text}");
        assert_eq!(files_of(dir.path()), before, "nothing was changed");

        // A newer clawmux that did not stop cleanly: the version is in the
        // WAL only. (Copied while its connection is open, as a crash
        // leaves them.)
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .unwrap();
        drop(conn);
        let conn = open_conn(&path).unwrap();
        conn.pragma_update(None, "user_version", 3).unwrap();
        let crashed = tempfile::tempdir().unwrap();
        for name in [DB_FILE, "state.db-wal"] {
            fs::copy(dir.path().join(name), crashed.path().join(name)).unwrap();
        }
        drop(conn);
        let before = files_of(crashed.path());
        let err = StateDb::open(crashed.path()).err().expect("refused");
        assert!(
            matches!(err, OpenDbError::Newer(NewerSchema { found: 3, .. })),
            "{err}"
        );
        assert_eq!(files_of(crashed.path()), before, "nothing was changed");
    }

    #[test]
    fn a_corrupt_state_file_migrates_from_its_backup() {
        let dir = tempfile::tempdir().unwrap();
        let json = StateFile::new(dir.path().join(JSON_FILE));
        let mut state = State::default();
        state
            .chats
            .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"));
        json.save(&state).unwrap();
        json.save(&State::default()).unwrap();
        fs::write(json.path(), b"{garbage").unwrap();
        let (db, loaded, migrated) = StateDb::open(dir.path()).unwrap();
        assert!(matches!(loaded, Loaded::Backup { .. }), "{loaded:?}");
        assert!(migrated.is_some());
        assert_eq!(db.saved, state);
    }

    #[test]
    fn a_bad_row_costs_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let (mut db, _, _) = StateDb::open(dir.path()).unwrap();
        let mut state = State::default();
        state
            .chats
            .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"));
        state.outbox.extend((0..3).map(card));
        db.save(&state).unwrap();
        db.conn
            .execute("UPDATE outbox SET v = '{\"not\":1}' WHERE k = 'u1'", [])
            .unwrap();
        drop(db);
        let (db, loaded, _) = StateDb::open(dir.path()).unwrap();
        let Loaded::Backup { backup, problem } = loaded else {
            panic!("{loaded:?}")
        };
        assert_eq!(backup, dir.path().join("state.db.corrupt"));
        assert!(problem.contains("table outbox"), "{problem}");
        assert!(problem.contains("1 of 3 rows left out"), "{problem}");
        assert_eq!(db.saved.chats, state.chats, "the rest is kept");
        let kept: Vec<OutboxEntry> = [0, 2].map(card).into();
        assert_eq!(db.saved.outbox, kept, "the other rows are kept");
        assert!(backup.exists(), "the bad database is kept");
        drop(db);
        assert_eq!(reopen(dir.path()).chats, state.chats);
    }

    #[test]
    fn an_unreadable_database_is_moved_aside_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (mut db, _, _) = StateDb::open(dir.path()).unwrap();
        let mut state = State::default();
        state
            .chats
            .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"));
        db.save(&state).unwrap();
        drop(db);
        let path = dir.path().join(DB_FILE);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
        let (mut db, loaded, _) = StateDb::open(dir.path()).unwrap();
        assert!(
            matches!(loaded, Loaded::Reset { .. } | Loaded::Backup { .. }),
            "{loaded:?}"
        );
        assert_eq!(
            fs::read(dir.path().join("state.db.corrupt")).unwrap().len(),
            bytes.len() / 3
        );
        db.save(&State::default()).unwrap();
        fs::write(&path, b"not a database at all, not even close.....").unwrap();
        drop(db);
        let (_, loaded, _) = StateDb::open(dir.path()).unwrap();
        assert!(matches!(loaded, Loaded::Reset { .. }), "{loaded:?}");
    }

    #[test]
    fn read_sees_what_was_saved_and_nothing_before_the_database() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let (mut db, _, _) = StateDb::open(dir.path()).unwrap();
        let mut state = State::default();
        state.jobs.push(Job::new(
            &"demo".parse().unwrap(),
            "t",
            ChatTarget::Console,
            None,
            60,
            0,
        ));
        db.save(&state).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(state));
        for name in [DB_FILE, "state.db-wal"] {
            let mode = fs::metadata(dir.path().join(name)).unwrap().mode();
            assert_eq!(mode & 0o777, private::FILE_MODE, "{name}");
        }
    }

    /// The cost of a save with 2,000 cards queued, against the whole-file
    /// save of `state.json` before, in the same run: each save follows one
    /// delivery (the card leaves the outbox, its message id is recorded, a
    /// new card is queued, a chat event id is remembered). Prints saves per
    /// second and bytes written per save (`wchar` of `/proc/self/io`: what
    /// the process handed to `write`). Not a test (it times); run with
    /// `cargo test --release --lib store::db::tests::save_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn save_cost_with_2000_queued_cards() {
        const QUEUED: usize = 2000;
        const SAVES: usize = 300;
        fn wchar() -> u64 {
            let io = fs::read_to_string("/proc/self/io").unwrap();
            let line = io.lines().find(|l| l.starts_with("wchar:")).unwrap();
            line[6..].trim().parse().unwrap()
        }
        // A card about the size the bridge queues (a result card).
        let big = |i: usize| {
            let mut e = card(i);
            e.message = Some(
                Message::new(format!("demo: command {i}"), Tone::Done)
                    .push(Block::text("x".repeat(1200)))
                    .push(Block::Buttons(vec![Button::new(
                        "Yes",
                        Style::Primary,
                        serde_json::json!({"a": i}),
                    )])),
            );
            e
        };
        let mut state = State::default();
        state.outbox.extend((0..QUEUED).map(big));
        for i in 0..crate::state::CARDS_CAPACITY {
            state.cards.insert(format!("old{i}"), format!("om_old{i}"));
        }
        for i in 0..crate::state::DEDUPE_CAPACITY {
            state.dedupe.first_seen(&format!("ev_old{i}"));
        }
        let deliver = |state: &mut State, n: usize| {
            let sent = state.outbox.pop_front().unwrap();
            state
                .cards
                .insert(sent.op.handle().to_string(), format!("om_{n}"));
            state.outbox.push_back(big(QUEUED + n));
            state.dedupe.first_seen(&format!("ev_{n}"));
        };
        let run = |save: &mut dyn FnMut(&State)| {
            let mut s = state.clone();
            let (bytes, t) = (wchar(), std::time::Instant::now());
            for n in 0..SAVES {
                deliver(&mut s, n);
                save(&s);
            }
            let secs = t.elapsed().as_secs_f64();
            (SAVES as f64 / secs, (wchar() - bytes) / SAVES as u64, s)
        };

        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::new(dir.path().join("old.json"));
        file.save(&state).unwrap();
        let (old_rate, old_bytes, _) = run(&mut |s| file.save(s).unwrap());

        let (mut db, _, _) = StateDb::open(dir.path()).unwrap();
        db.save(&state).unwrap();
        let mut finding = std::time::Duration::ZERO;
        let (new_rate, new_bytes, last) = run(&mut |s| {
            // What the saver does under the state's lock: find the change
            // and copy what it comes from.
            let t = std::time::Instant::now();
            let plan = db.plan(s).unwrap();
            finding += t.elapsed();
            db.write(plan).unwrap();
        });
        let finding_ms = finding.as_secs_f64() * 1000.0 / SAVES as f64;
        drop(db);
        assert_eq!(read(dir.path()).unwrap().as_ref(), Some(&last));
        let json = serde_json::to_vec(&state).unwrap().len();
        println!(
            "state with {QUEUED} queued cards ({json} bytes as JSON), {SAVES} saves, one delivery each:\n\
             state.db (changed rows, one transaction): {new_rate:.0} saves/s, {new_bytes} bytes written per save\n\
             state.json (whole file, before):          {old_rate:.0} saves/s, {old_bytes} bytes written per save\n\
             {:.1}x the saves per second, {:.1}x fewer bytes\n\
             of a state.db save, finding the change and copying it (under the lock) took {finding_ms:.1} ms",
            new_rate / old_rate,
            old_bytes as f64 / new_bytes.max(1) as f64
        );
    }
}
