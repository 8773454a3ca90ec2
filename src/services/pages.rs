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

impl PageView {
    /// Whether the page may be sent gzip-compressed. Compression makes the length of an
    /// answer depend on how much of it repeats, so a page that mixes text someone else can
    /// choose (a message anyone may send, a Matrix ID anyone may register) with text that
    /// someone must not learn (another conversation's last message or members, another
    /// mail's subject) could leak the latter to an observer of the encrypted lengths who
    /// keeps choosing the former (the BREACH attack). Only pages of one conversation
    /// qualify, all of which every member of it sees anyway: readable history (one room
    /// per page, with or without `roomId`), sealed history of one room, and the single
    /// room. Lists of rooms or mail threads, and sealed history across rooms, do not.
    fn compressible(&self) -> bool {
        match self {
            Self::ReadableHistory { .. } | Self::Room { .. } => true,
            Self::SealedHistory { room_id, .. } => room_id.is_some(),
            Self::Rooms { .. } | Self::Stats | Self::EmailThreads { .. } => false,
        }
    }
}

/// Pages smaller than this are sent as they are (gzip would save too little for its cost).
const MIN_GZIP_BYTES: usize = 1024;

/// A rendered page: the JSON body as sent, and for pages that may be compressed
/// ([`PageView::compressible`]) a slot for its gzip form, made by the first request that
/// accepts gzip and then served from memory like the body.
#[derive(Debug, Clone)]
pub struct Page {
    pub body: Bytes,
    gzip: Option<Arc<tokio::sync::OnceCell<Option<Bytes>>>>,
}

impl Page {
    fn new(body: Bytes, compressible: bool) -> Self {
        let gzip = (compressible && body.len() >= MIN_GZIP_BYTES).then(Default::default);
        Self { body, gzip }
    }

    /// A page never sent compressed (e.g. rendered while the cache is off).
    pub fn plain(body: Bytes) -> Self {
        Self { body, gzip: None }
    }

    /// Whether [`Self::gzip`] may have a compressed form (the answer then varies with
    /// `Accept-Encoding`).
    pub fn compressible(&self) -> bool {
        self.gzip.is_some()
    }

    /// The body gzip-compressed (made once per page; concurrent callers wait for the
    /// first), or None when the page is not compressible or came out no smaller.
    pub async fn gzip(&self) -> Option<Bytes> {
        let cell = self.gzip.as_ref()?;
        cell.get_or_init(|| async { gzip(&self.body) })
            .await
            .clone()
    }

    /// What the cache counts: the body, and for a compressible page half as much again for
    /// its compressed form, made only when asked for (readable pages compress to about an
    /// eighth, sealed ones, being base64 ciphertext, to about half).
    fn weight(&self) -> u32 {
        let extra = if self.gzip.is_some() {
            self.body.len() / 2
        } else {
            0
        };
        u32::try_from(self.body.len() + extra).unwrap_or(u32::MAX)
    }
}

/// Level 1 ("fast"): on JSON pages it keeps most of the best level's saving at a fraction
/// of its time, and it is paid on the request path once per page.
fn gzip(body: &[u8]) -> Option<Bytes> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    encoder.write_all(body).ok()?;
    let out = encoder.finish().ok()?;
    (out.len() < body.len()).then(|| Bytes::from(out))
}

/// Rendered pages by [`PageKey`]; `None` when turned off (`storage.history_cache_mb = 0`).
pub struct PageCache {
    pages: Option<EpochCache<PageKey, Page>>,
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
                Some(Page::weight),
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
    pub fn get(&self, key: &PageKey) -> Option<Page> {
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

    /// Files a page rendered from data read after `epoch` was taken; returns it as it is
    /// served.
    pub fn insert(&self, key: PageKey, epoch: u64, body: Bytes) -> Page {
        let Some(cache) = &self.pages else {
            // Not kept: compressing it would be paid again by every request.
            return Page::plain(body);
        };
        let page = Page::new(body, key.view.compressible());
        // A page shows its caller's rows only: other users' writes keep it.
        let user = key.user_id.clone();
        cache.insert_for(key, epoch, &user, page.clone());
        page
    }

    /// The cached page, or the one `render` makes (filed when nothing was written
    /// meanwhile). Concurrent misses of one key render once; errors are not cached.
    pub async fn get_or_render<F, Fut>(&self, key: PageKey, render: F) -> AppResult<Page>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = AppResult<Bytes>>,
    {
        if self.pages.is_none() {
            return render().await.map(Page::plain);
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
        Ok(self.insert(key, since, body))
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
        let body = |k: &PageKey| pages.get(k).map(|p| p.body);
        assert_eq!(body(&key("a")).as_deref(), Some(&b"a1"[..]));
        // A's own write ends A's page.
        write(&store, Some("a")).await;
        assert_eq!(body(&key("a")), None);
        let page = pages.get_or_render(key("a"), render("a2")).await.unwrap();
        assert_eq!(&page.body[..], b"a2");
        // A write of unknown scope ends every page.
        write(&store, None).await;
        assert_eq!(body(&key("a")), None);
    }

    fn view_key(view: PageView) -> PageKey {
        PageKey {
            user_id: "u".to_owned(),
            view,
        }
    }

    #[tokio::test]
    async fn pages_of_one_conversation_or_sealed_are_gzipped_once_the_mixed_lists_never() {
        let pages = PageCache::new(&crate::store::epoch::WriteEpoch::default(), 1);
        let json = format!(
            "[{}]",
            vec![r#"{"text":"see you on Saturday"}"#; 200].join(",")
        );
        let render = || async { Ok(Bytes::from(json.clone())) };
        let one_room = view_key(PageView::ReadableHistory {
            room_id: Some("!r:hs".to_owned()),
            cursor: None,
            limit: 50,
        });
        let page = pages.get_or_render(one_room.clone(), render).await.unwrap();
        let zipped = page.gzip().await.expect("compressed");
        assert!(zipped.len() * 5 < page.body.len(), "{}", zipped.len());
        let mut out = String::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(&zipped[..])
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, json);
        // Served again from the cache, compressed once: the same bytes.
        let again = pages.get(&one_room).unwrap().gzip().await.unwrap();
        assert_eq!(again.as_ptr(), zipped.as_ptr());

        let mixed = [
            PageView::SealedHistory {
                room_id: None,
                before: None,
                limit: 50,
            },
            PageView::Rooms {
                readable: false,
                sort: "recency",
                archived: "exclude",
                cursor: None,
                limit: 50,
            },
            PageView::Rooms {
                readable: true,
                sort: "recency",
                archived: "exclude",
                cursor: None,
                limit: 50,
            },
            PageView::EmailThreads {
                label: None,
                q: None,
                cursor: None,
                limit: None,
            },
        ];
        for view in mixed {
            let page = pages.get_or_render(view_key(view), render).await.unwrap();
            assert!(!page.compressible());
            assert_eq!(page.gzip().await, None);
        }
        // Too small to be worth it.
        let room = PageView::Room {
            room_id: "!r:hs".to_owned(),
            readable: true,
        };
        let small = pages
            .get_or_render(view_key(room), || async {
                Ok(Bytes::from_static(b"{\"total\":3}"))
            })
            .await
            .unwrap();
        assert_eq!(small.gzip().await, None);

        // With the cache off, nothing is compressed (it would be compressed again for
        // every request).
        let off = PageCache::new(&crate::store::epoch::WriteEpoch::default(), 0);
        let page = off.get_or_render(one_room.clone(), render).await.unwrap();
        assert!(!page.compressible());
        assert!(!off.insert(one_room, 0, page.body).compressible());
    }
}
