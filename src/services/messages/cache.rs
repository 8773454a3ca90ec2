//! Opened message contents, kept in memory so a page read again (clients poll the newest
//! page) is not decrypted and parsed again.
//!
//! An entry is used only while it still matches the row it was opened from: the exact
//! sealed bytes (an edit or redaction re-seals the content) and the data key that opened it
//! (identified by its SHA-256; `DELETE /api/keys` replaces the key, so shredded content is
//! never served from here). Deleted rows are simply never asked for again. The cache is
//! bounded: 16 shards, each keeping two generations; when the young generation is full the
//! old one is dropped, so entries not read for two generations go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::crypto::DataKey;
use crate::services::conversations::MessageContent;

/// Most entries kept (about 1 KiB each with the sealed copy).
const CAPACITY: usize = 16_384;
const SHARDS: usize = 16;

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

#[derive(Default)]
struct Shard {
    young: HashMap<String, Arc<Entry>>,
    old: HashMap<String, Arc<Entry>>,
}

pub struct ContentCache {
    shards: Vec<Mutex<Shard>>,
}

/// The process-wide cache.
pub fn cache() -> &'static ContentCache {
    static CACHE: OnceLock<ContentCache> = OnceLock::new();
    CACHE.get_or_init(|| ContentCache {
        shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
    })
}

impl ContentCache {
    fn shard(&self, message_id: &str) -> std::sync::MutexGuard<'_, Shard> {
        let h = message_id
            .bytes()
            .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
        self.shards[h % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The content opened earlier from exactly `sealed` with the key `key`.
    pub fn get(&self, message_id: &str, key: KeyTag, sealed: &[u8]) -> Option<Arc<MessageContent>> {
        let mut shard = self.shard(message_id);
        let entry = match shard.young.get(message_id) {
            Some(e) => e.clone(),
            None => {
                let e = shard.old.remove(message_id)?;
                shard.young.insert(message_id.to_owned(), e.clone());
                e
            }
        };
        (entry.key == key && entry.sealed == sealed).then(|| entry.content.clone())
    }

    pub fn put(&self, message_id: &str, key: KeyTag, sealed: &[u8], content: Arc<MessageContent>) {
        let entry = Arc::new(Entry {
            key,
            sealed: sealed.to_vec(),
            content,
        });
        let mut shard = self.shard(message_id);
        if shard.young.len() >= CAPACITY / SHARDS / 2 {
            shard.old = std::mem::take(&mut shard.young);
        }
        shard.young.insert(message_id.to_owned(), entry);
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
        let c = ContentCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        };
        let k = KeyTag::of(&DataKey::generate());
        let hot = "hot-message".to_owned();
        c.put(&hot, k, b"x", content("hot"));
        for i in 0..CAPACITY * 3 {
            c.put(&format!("m{i}"), k, b"x", content("cold"));
            if i % 100 == 0 {
                assert!(c.get(&hot, k, b"x").is_some(), "read entries stay");
            }
        }
        let total: usize = c
            .shards
            .iter()
            .map(|s| {
                let s = s.lock().unwrap();
                s.young.len() + s.old.len()
            })
            .sum();
        assert!(total <= CAPACITY + SHARDS, "{total}");
    }
}
