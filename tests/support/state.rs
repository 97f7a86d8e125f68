//! The daemon's saved state as a test sees it: read with the library's own
//! loader from `state.db` (a test never parses the database itself), and
//! handed back shaped like the `state.json` of earlier versions.

use std::path::Path;

use clawmux::store::State;

/// The state saved in `home`, or `None` before the daemon made its
/// database. A database that cannot be read fails the test.
pub fn saved(home: &Path) -> Option<State> {
    match clawmux::store::db::read(home) {
        Ok(state) => state,
        Err(e) => panic!("the state in {}: {e}", home.display()),
    }
}

/// [`saved`] as JSON (`Null` before the database exists): the shape of
/// the old `state.json`, so a test can look at `["jobs"]`, `["outbox"]`, ….
pub fn read(home: &Path) -> serde_json::Value {
    saved(home).map_or(serde_json::Value::Null, |s| {
        serde_json::to_value(s).expect("the state serialises")
    })
}
