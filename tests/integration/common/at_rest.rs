//! What is on disk: the database file and its WAL as one haystack, to show that a secret
//! is not stored in plain text (and, with a marker that is, that the scan sees the data).

use super::TestApp;

/// Every byte of the live database files (`switchboard.db` and, if present, its `-wal`).
pub fn database_bytes(app: &TestApp) -> Vec<u8> {
    let mut bytes = Vec::new();
    for name in ["switchboard.db", "switchboard.db-wal"] {
        if let Ok(b) = std::fs::read(app.data_dir().join(name)) {
            bytes.extend_from_slice(&b);
        }
    }
    bytes
}

/// Whether `needle` (not empty) stands in `haystack`.
pub fn contains(haystack: &[u8], needle: impl AsRef<[u8]>) -> bool {
    let needle = needle.as_ref();
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}
