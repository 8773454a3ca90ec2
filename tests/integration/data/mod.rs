//! Hardening of stored data: tables that would only grow (purge, caps), data that must
//! really go (`DELETE /api/keys`), user-row writes that must not revert each other, error
//! messages without internal addresses, and the `log` mail transport.

mod caps;
mod mail_log;
mod purge;
mod races;
mod shredding;
mod upstream;

use crate::common::TestApp;

/// Every byte of the live database files (`switchboard.db` and, if present, `-wal`).
pub fn database_bytes(app: &TestApp) -> Vec<u8> {
    let mut bytes = Vec::new();
    for name in ["switchboard.db", "switchboard.db-wal"] {
        if let Ok(b) = std::fs::read(app.data_dir().join(name)) {
            bytes.extend_from_slice(&b);
        }
    }
    bytes
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}
