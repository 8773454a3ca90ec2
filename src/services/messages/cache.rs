//! Opened message contents, kept in memory so a page read again (clients poll the newest
//! page) is not decrypted and parsed again.
//!
//! An entry is used only while it still matches the row it was opened from: the exact
//! sealed bytes (an edit or redaction re-seals the content) and the data key that opened it
//! (identified by its SHA-256; `DELETE /api/keys` replaces the key, so shredded content is
//! never served from here). Deleted rows are simply never asked for again. The cache is a
//! bounded moka cache: entries that are rarely read make way for those read often.

use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};

use crate::crypto::DataKey;
use crate::services::conversations::MessageContent;

/// Most entries kept (about 1 KiB each with the sealed copy).
const CAPACITY: u64 = 16_384;

/// Identifies a data key without holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyTag([u8; 32]);

impl KeyTag {
    pub fn of(dek: &DataKey) -> Self {
        Self(Sha256::digest(dek.as_bytes()).into())
    }
}

struct Entry {
    key: KeyTag,
    sealed: Vec<u8>,
    content: Arc<MessageContent>,
}

pub struct ContentCache {
    entries: moka::sync::Cache<String, Arc<Entry>>,
}

/// The process-wide cache.
pub fn cache() -> &'static ContentCache {
    static CACHE: OnceLock<ContentCache> = OnceLock::new();
    CACHE.get_or_init(|| ContentCache::new(CAPACITY))
}

impl ContentCache {
    fn new(capacity: u64) -> Self {
        Self {
            entries: moka::sync::Cache::builder().max_capacity(capacity).build(),
        }
    }

    /// The content opened earlier from exactly `sealed` with the key `key`.
    pub fn get(&self, message_id: &str, key: KeyTag, sealed: &[u8]) -> Option<Arc<MessageContent>> {
        let entry = self.entries.get(message_id)?;
        (entry.key == key && entry.sealed == sealed).then(|| entry.content.clone())
    }

    pub fn put(&self, message_id: &str, key: KeyTag, sealed: &[u8], content: Arc<MessageContent>) {
        let entry = Arc::new(Entry {
            key,
            sealed: sealed.to_vec(),
            content,
        });
        self.entries.insert(message_id.to_owned(), entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(body: &str) -> Arc<MessageContent> {
        Arc::new(MessageContent {
            body: body.to_owned(),
            content: serde_json::json!({"body": body}),
        })
    }

    #[test]
    fn entries_match_only_the_same_sealed_bytes_and_key() {
        let c = cache();
        let (k1, k2) = (
            KeyTag::of(&DataKey::generate()),
            KeyTag::of(&DataKey::generate()),
        );
        let id = uuid::Uuid::new_v4().to_string();
        assert!(c.get(&id, k1, b"sealed").is_none());
        c.put(&id, k1, b"sealed", content("hi"));
        assert_eq!(c.get(&id, k1, b"sealed").unwrap().body, "hi");
        assert!(c.get(&id, k1, b"resealed").is_none(), "an edit re-seals");
        assert!(c.get(&id, k2, b"sealed").is_none(), "another data key");
    }

    #[test]
    fn the_cache_stays_bounded_and_keeps_recently_read_entries() {
        let c = ContentCache::new(CAPACITY);
        let k = KeyTag::of(&DataKey::generate());
        let hot = "hot-message".to_owned();
        c.put(&hot, k, b"x", content("hot"));
        for i in 0..CAPACITY as usize * 3 {
            c.put(&format!("m{i}"), k, b"x", content("cold"));
            if i % 100 == 0 {
                assert!(c.get(&hot, k, b"x").is_some(), "read entries stay");
            }
        }
        c.entries.run_pending_tasks();
        assert!(
            c.entries.entry_count() <= CAPACITY,
            "{}",
            c.entries.entry_count()
        );
        assert!(c.get(&hot, k, b"x").is_some(), "read entries stay");
    }
}
