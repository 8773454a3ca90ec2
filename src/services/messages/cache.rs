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

/// Most bytes kept, as [`weight`] counts them. A bound by entries (16,384 before) let the
/// cache's size follow the messages' size instead of a figure chosen here.
const CAPACITY_BYTES: u64 = 8 * 1024 * 1024;

/// What an entry costs: its id, the sealed copy, and the opened content, which holds the
/// plaintext twice (the body and the parsed event, whose tree of `serde_json::Value`s takes
/// a few times its text) — counted as four times the sealed length, plus fixed overhead.
fn weight(message_id: &str, entry: &Entry) -> u32 {
    let bytes = message_id.len() + entry.sealed.len() * 5 + entry.content.body.len() + 256;
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

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
    CACHE.get_or_init(|| {
        let cache = ContentCache::new(CAPACITY_BYTES);
        let entries = cache.entries.clone();
        crate::metrics::global()
            .cache(crate::metrics::CacheName::Contents)
            .set_size(Box::new(move || {
                (entries.entry_count(), entries.weighted_size())
            }));
        cache
    })
}

impl ContentCache {
    fn new(capacity_bytes: u64) -> Self {
        Self {
            entries: moka::sync::Cache::builder()
                .max_capacity(capacity_bytes)
                .weigher(|id: &String, entry: &Arc<Entry>| weight(id, entry))
                .build(),
        }
    }

    /// The content opened earlier from exactly `sealed` with the key `key`.
    pub fn get(&self, message_id: &str, key: KeyTag, sealed: &[u8]) -> Option<Arc<MessageContent>> {
        let found = self
            .entries
            .get(message_id)
            .filter(|entry| entry.key == key && entry.sealed == sealed)
            .map(|entry| entry.content.clone());
        crate::metrics::global()
            .cache(crate::metrics::CacheName::Contents)
            .record(found.is_some());
        found
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
    fn the_cache_stays_bounded_by_bytes_and_keeps_recently_read_entries() {
        // 64 KiB of budget; each entry weighs a few hundred bytes.
        let budget = 64 * 1024;
        let c = ContentCache::new(budget);
        let k = KeyTag::of(&DataKey::generate());
        let hot = "hot-message".to_owned();
        c.put(&hot, k, b"x", content("hot"));
        for i in 0..3_000 {
            c.put(&format!("m{i}"), k, b"x", content("cold"));
            if i % 100 == 0 {
                assert!(c.get(&hot, k, b"x").is_some(), "read entries stay");
            }
        }
        c.entries.run_pending_tasks();
        assert!(
            c.entries.weighted_size() <= budget,
            "{}",
            c.entries.weighted_size()
        );
        assert!(c.entries.entry_count() > 50, "{}", c.entries.entry_count());
        assert!(c.get(&hot, k, b"x").is_some(), "read entries stay");
    }
}
