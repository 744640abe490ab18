//! The persistent response cache: an SQLite file (through `rusqlite`, SQLite bundled) holding each
//! answer under a 128-bit key of the endpoint and the whole request (model, parameters, messages),
//! written as soon as the answer arrives, so a rerun, or a run killed half-way, asks no prompt
//! twice. The API key is never part of a key or a row.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use super::client::Reply;
use super::error::LlmError;

/// An open cache file.
pub struct ResponseCache {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResponseCache({})", self.path.display())
    }
}

/// The key of a request: XXH3-128 of the endpoint and the request body.
pub fn request_key(url: &str, body: &[u8]) -> u128 {
    let mut bytes = Vec::with_capacity(url.len() + 1 + body.len());
    bytes.extend_from_slice(url.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(body);
    xxhash_rust::xxh3::xxh3_128(&bytes)
}

impl ResponseCache {
    /// Open (or create) the cache at `path`.
    pub fn open(path: &Path) -> Result<ResponseCache, LlmError> {
        let fail = |e: rusqlite::Error| LlmError::Cache { path: path.display().to_string(), message: e.to_string() };
        let conn = Connection::open(path).map_err(fail)?;
        conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(fail)?;
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(())).map_err(fail)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(fail)?;
        conn.execute("CREATE TABLE IF NOT EXISTS answers (key BLOB PRIMARY KEY, reply TEXT NOT NULL) WITHOUT ROWID", []).map_err(fail)?;
        // The identities of the endpoints whose answers were stored ([`ResponseCache::served`]).
        conn.execute("CREATE TABLE IF NOT EXISTS served (identity TEXT PRIMARY KEY) WITHOUT ROWID", []).map_err(fail)?;
        Ok(ResponseCache { conn: Mutex::new(conn), path: path.to_path_buf() })
    }

    /// The identities (SHA-256 of what each endpoint said of its model,
    /// [`crate::EndpointIdentity::hash`]) of every run that stored answers here, as recorded
    /// with [`ResponseCache::record_served`].
    pub fn served(&self) -> Result<Vec<String>, LlmError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |e: rusqlite::Error| LlmError::Cache { path: self.path.display().to_string(), message: e.to_string() };
        let mut statement = conn.prepare_cached("SELECT identity FROM served ORDER BY identity").map_err(fail)?;
        let rows = statement.query_map([], |row| row.get::<_, String>(0)).map_err(fail)?;
        rows.collect::<Result<Vec<String>, _>>().map_err(fail)
    }

    /// Record that answers of the endpoint whose identity hashes to `identity` are stored here.
    pub fn record_served(&self, identity: &str) -> Result<(), LlmError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |e: rusqlite::Error| LlmError::Cache { path: self.path.display().to_string(), message: e.to_string() };
        conn.execute("INSERT OR IGNORE INTO served (identity) VALUES (?1)", params![identity]).map_err(fail)?;
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The answer stored under `key`.
    pub fn get(&self, key: u128) -> Result<Option<Reply>, LlmError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |message: String| LlmError::Cache { path: self.path.display().to_string(), message };
        let mut statement = conn.prepare_cached("SELECT reply FROM answers WHERE key = ?1").map_err(|e| fail(e.to_string()))?;
        let text: Option<String> =
            statement.query_row(params![key.to_le_bytes().as_slice()], |row| row.get(0)).optional().map_err(|e| fail(e.to_string()))?;
        match text {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| fail(format!("a stored answer cannot be read ({e})"))),
        }
    }

    /// Store `reply` under `key`.
    pub fn put(&self, key: u128, reply: &Reply) -> Result<(), LlmError> {
        let text = serde_json::to_string(reply).map_err(|e| LlmError::Json(e.to_string()))?;
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |e: rusqlite::Error| LlmError::Cache { path: self.path.display().to_string(), message: e.to_string() };
        let mut statement = conn.prepare_cached("INSERT OR REPLACE INTO answers (key, reply) VALUES (?1, ?2)").map_err(fail)?;
        statement.execute(params![key.to_le_bytes().as_slice(), text]).map_err(fail)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_survive_reopening_and_keys_depend_on_endpoint_and_body() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        let reply = Reply { content: "Yes".into(), top: Some(vec![("Yes".into(), -0.1), ("No".into(), -2.4)]) };
        let key = request_key("http://a/v1/chat/completions", b"{\"prompt\":1}");
        assert_ne!(key, request_key("http://b/v1/chat/completions", b"{\"prompt\":1}"));
        assert_ne!(key, request_key("http://a/v1/chat/completions", b"{\"prompt\":2}"));
        {
            let cache = ResponseCache::open(&path).unwrap();
            assert_eq!(cache.get(key).unwrap(), None);
            cache.put(key, &reply).unwrap();
        }
        let cache = ResponseCache::open(&path).unwrap();
        assert_eq!(cache.get(key).unwrap(), Some(reply));
    }
}
