//! The cache of rendered read pages: history (readable and sealed), room lists, single
//! rooms and message statistics, each kept as the exact JSON body that was sent.
//!
//! Apps and scripts read the same pages over and over (the newest messages of a
//! conversation, the first page of the inbox). A page is rendered once and served from
//! memory until something that may concern its caller is written to the database (the
//! write epoch, [`crate::store::epoch`]): a new, edited or redacted message of the caller
//! (a sync worker's writes are scoped to its user), and any write not scoped to one user
//! (a room change through the API, key deletion, an account change) end the page, so a
//! cached page is never older than the data it was rendered from, while messages arriving
//! for other users leave it alone. Only successful pages are cached; the key
//! holds everything a page depends on besides the stored data: the caller (so nothing is
//! ever served to another user), the view (readable or sealed: personal tokens and native
//! sessions never share a page) and the query.
//!
//! Sealed pages: a cached sealed page is served again byte for byte, so a repeat carries
//! the same ephemeral public key, nonces and ciphertexts as the first answer. That is a
//! replay of one encryption, never a second encryption under a used (key, nonce) pair: the
//! ephemeral secret is gone once the page is sealed, the page is only ever served whole,
//! and any write (a new message, a new registered key) ends it, so different plaintexts are
//! never sealed under the same key and nonce. The only thing a repeat tells an observer of
//! the (TLS-protected) answers is that the page did not change, which the caller knows.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::error::AppResult;
use crate::store::epoch::{EpochCache, WriteEpoch};

/// A page is served from memory for at most this long: writes by this process end it at
/// once; this bounds how long a write by another process (e.g. a restore into a running
/// server) can go unseen.
const PAGE_CACHE_MAX_AGE: Duration = Duration::from_secs(1);

/// Which page of which caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub user_id: String,
    pub view: PageView,
}

/// What a rendered page depends on besides the stored data and the caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PageView {
    /// `GET /api/messages`, personal token.
    ReadableHistory {
        room_id: Option<String>,
        cursor: Option<String>,
        limit: i64,
    },
    /// `GET /api/messages`, native session: sealed to the key registered when the page was
    /// rendered (a new key is a write, which ends the page).
    SealedHistory {
        room_id: Option<String>,
        before: Option<i64>,
        limit: i64,
    },
    /// `GET /api/rooms`, as received (validated before rendering).
    Rooms {
        readable: bool,
        sort: &'static str,
        archived: &'static str,
        cursor: Option<String>,
        limit: i64,
    },
    /// `GET /api/rooms/{roomId}`.
    Room { room_id: String, readable: bool },
    /// `GET /api/messages/stats`.
    Stats,
    /// `GET /api/email/threads`, as received (validated before rendering).
    EmailThreads {
        label: Option<String>,
        q: Option<String>,
        cursor: Option<String>,
        limit: Option<String>,
    },
}

/// Rendered pages (JSON bodies) by [`PageKey`]; `None` when turned off
/// (`storage.history_cache_mb = 0`).
pub struct PageCache {
    pages: Option<EpochCache<PageKey, Bytes>>,
    /// One render at a time per key: after a write, the many requests for the same page
    /// that arrive together wait for the first render instead of each sealing their own
    /// (with 64 connections and 20 messages a second that is most of the work).
    rendering: moka::sync::Cache<PageKey, Arc<tokio::sync::Mutex<()>>>,
}

impl PageCache {
    pub fn new(epoch: &WriteEpoch, megabytes: u32) -> Self {
        let pages = (megabytes > 0).then(|| {
            EpochCache::new(
                epoch,
                u64::from(megabytes) * 1024 * 1024,
                PAGE_CACHE_MAX_AGE,
                Some(|body: &Bytes| u32::try_from(body.len()).unwrap_or(u32::MAX)),
            )
        });
        if let Some(cache) = &pages {
            crate::metrics::global()
                .cache(crate::metrics::CacheName::Pages)
                .set_size(cache.size_reader());
        }
        Self {
            pages,
            rendering: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_idle(Duration::from_secs(10))
                .build(),
        }
    }

    /// The cached page (counted as a hit or miss in `/metrics`).
    pub fn get(&self, key: &PageKey) -> Option<Bytes> {
        let page = self.pages.as_ref()?.get(key);
        crate::metrics::global()
            .cache(crate::metrics::CacheName::Pages)
            .record(page.is_some());
        page
    }

    /// The epoch to take before reading the data of a page.
    pub fn epoch(&self) -> u64 {
        self.pages.as_ref().map_or(0, EpochCache::epoch)
    }

    /// Files a page rendered from data read after `epoch` was taken.
    pub fn insert(&self, key: PageKey, epoch: u64, body: Bytes) {
        if let Some(cache) = &self.pages {
            // A page shows its caller's rows only: other users' writes keep it.
            let user = key.user_id.clone();
            cache.insert_for(key, epoch, &user, body);
        }
    }

    /// The cached page, or the one `render` makes (filed when nothing was written
    /// meanwhile). Concurrent misses of one key render once; errors are not cached.
    pub async fn get_or_render<F, Fut>(&self, key: PageKey, render: F) -> AppResult<Bytes>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = AppResult<Bytes>>,
    {
        if self.pages.is_none() {
            return render().await;
        }
        if let Some(body) = self.get(&key) {
            return Ok(body);
        }
        let lock = self
            .rendering
            .get_with_by_ref(&key, || Arc::new(tokio::sync::Mutex::new(())));
        let _turn = lock.lock().await;
        // Rendered by the request we waited for (not counted again).
        if let Some(body) = self.pages.as_ref().and_then(|p| p.get(&key)) {
            return Ok(body);
        }
        let since = self.epoch();
        let body = render().await?;
        self.insert(key, since, body.clone());
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StorageConfig;
    use crate::store::{epoch, Store, StoreError};

    fn key(user: &str) -> PageKey {
        PageKey {
            user_id: user.to_owned(),
            view: PageView::Stats,
        }
    }

    async fn write(store: &Store, scope: Option<&'static str>) {
        store
            .run(move |c| {
                if let Some(user) = scope {
                    epoch::scope_to_user(user);
                }
                c.execute("INSERT INTO t VALUES (1)", [])
                    .map_err(StoreError::from)
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn pages_survive_other_users_writes_and_end_with_their_own_and_global_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&StorageConfig {
            data_dir: dir.path().to_path_buf(),
            ..StorageConfig::default()
        })
        .unwrap();
        store
            .run(|c| {
                c.execute_batch("CREATE TABLE t (x)")
                    .map_err(StoreError::from)
            })
            .await
            .unwrap();
        let pages = PageCache::new(store.epoch(), 1);
        let render = |text: &'static str| move || async move { Ok(Bytes::from(text)) };
        pages.get_or_render(key("a"), render("a1")).await.unwrap();
        // 50 other users' messages arrive (each a write scoped to its user).
        for _ in 0..50 {
            write(&store, Some("someone-else")).await;
        }
        assert_eq!(pages.get(&key("a")).as_deref(), Some(&b"a1"[..]));
        // A's own write ends A's page.
        write(&store, Some("a")).await;
        assert_eq!(pages.get(&key("a")), None);
        let body = pages.get_or_render(key("a"), render("a2")).await.unwrap();
        assert_eq!(&body[..], b"a2");
        // A write of unknown scope ends every page.
        write(&store, None).await;
        assert_eq!(pages.get(&key("a")), None);
    }
}
