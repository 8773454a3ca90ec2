//! The write epoch: a counter per database, bumped after every job of [`Store::run`] that
//! committed a write, so in-memory caches of derived data (authentication results, rendered
//! history pages) can tell in one atomic load whether anything may have changed since they
//! were filled.
//!
//! SQLite's commit hook marks the thread that committed; [`Store::run`] bumps the epoch when
//! its job returns, i.e. after the commit is visible to every connection and before the
//! write is acknowledged to anyone. A cache therefore reads the epoch *before* reading the
//! database and files its result under that value: a commit that lands during the read
//! bumps the epoch afterwards and the entry is never served. Every write bumps it, whatever
//! the table: coarse (an unrelated write also invalidates) but with no table or code path
//! that could be forgotten. (SQLite's WAL hook would look like the natural place, but it
//! does not run for a statement that commits when it is reset rather than stepped to the
//! end, such as `DELETE … RETURNING` read with `query_row`.)
//!
//! Writes by another process (the CLI, a restore) are not seen here; caches bound the age
//! of their entries for those.
//!
//! [`Store::run`]: super::Store::run

use std::cell::Cell;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::Connection;

thread_local! {
    /// Set by the commit hook of any connection used on this thread.
    static COMMITTED: Cell<bool> = const { Cell::new(false) };
}

/// Installs the commit hook on a pooled connection.
pub fn install(conn: &Connection) -> rusqlite::Result<()> {
    // rusqlite 0.37's commit_hook returns nothing (later versions return a Result).
    conn.commit_hook(Some(|| {
        COMMITTED.with(|c| c.set(true));
        false // let the commit proceed
    }));
    Ok(())
}

/// Whether a connection committed on this thread since the last call (and resets that).
fn take_committed() -> bool {
    COMMITTED.with(|c| c.replace(false))
}

/// Scope of one store job on a blocking thread: bumps `epoch` when dropped if the job
/// committed anything.
pub(super) struct PublishCommits(WriteEpoch);

impl PublishCommits {
    pub(super) fn new(epoch: WriteEpoch) -> Self {
        take_committed(); // a leftover from a connection used outside a job
        Self(epoch)
    }
}

impl Drop for PublishCommits {
    fn drop(&mut self) {
        if take_committed() {
            self.0.bump();
        }
    }
}

/// The write epoch of one database.
#[derive(Debug, Clone, Default)]
pub struct WriteEpoch(Arc<AtomicU64>);

impl WriteEpoch {
    /// The current value. Read it before reading the data a cache entry is built from.
    pub fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// A bounded in-memory cache of values derived from the database: an entry is served only
/// while the write epoch is the one read before the value was computed, and for at most
/// `max_age` (which bounds what writes by other processes can leave stale).
pub struct EpochCache<K, V> {
    epoch: WriteEpoch,
    entries: moka::sync::Cache<K, Stamped<V>>,
    max_age: Duration,
}

#[derive(Clone)]
struct Stamped<V> {
    epoch: u64,
    filled: Instant,
    value: V,
}

impl<K, V> EpochCache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// At most `capacity` in total `weight` (entries count 1 each without a weigher).
    pub fn new(
        epoch: &WriteEpoch,
        capacity: u64,
        max_age: Duration,
        weight: Option<fn(&V) -> u32>,
    ) -> Self {
        let mut builder = moka::sync::Cache::builder()
            .max_capacity(capacity)
            .time_to_live(max_age);
        if let Some(weight) = weight {
            builder = builder.weigher(move |_k: &K, v: &Stamped<V>| weight(&v.value));
        }
        Self {
            epoch: epoch.clone(),
            entries: builder.build(),
            max_age,
        }
    }

    /// The value, if nothing was committed since it was computed and it is young enough.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entry = self.entries.get(key)?;
        let fresh = entry.epoch == self.epoch.current() && entry.filled.elapsed() < self.max_age;
        fresh.then_some(entry.value)
    }

    /// The epoch to take before reading the data of a value to [`insert`](Self::insert).
    pub fn epoch(&self) -> u64 {
        self.epoch.current()
    }

    /// Files `value`, computed from data read after `epoch` was taken with
    /// [`epoch`](Self::epoch). A value that is already outdated is not kept.
    pub fn insert(&self, key: K, epoch: u64, value: V) {
        if epoch == self.epoch.current() {
            self.entries.insert(
                key,
                Stamped {
                    epoch,
                    filled: Instant::now(),
                    value,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StorageConfig;
    use crate::store::Store;

    fn store(dir: &std::path::Path) -> Store {
        Store::open(&StorageConfig {
            data_dir: dir.to_path_buf(),
            ..StorageConfig::default()
        })
        .unwrap()
    }

    async fn exec(store: &Store, sql: &'static str) {
        store
            .run(move |c| c.execute_batch(sql).map_err(crate::store::StoreError::from))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn jobs_that_commit_bump_the_epoch_and_reads_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        exec(&store, "CREATE TABLE t (x INTEGER)").await;
        let e0 = store.epoch().current();
        exec(&store, "INSERT INTO t VALUES (1)").await;
        let e1 = store.epoch().current();
        assert!(e1 > e0, "a write bumps");
        exec(&store, "SELECT * FROM t").await;
        assert_eq!(store.epoch().current(), e1, "a read does not");
        // A statement that commits when it is reset, not when stepped to the end.
        store
            .run(|c| {
                c.query_row("DELETE FROM t RETURNING x", [], |r| r.get::<_, i64>(0))
                    .map_err(crate::store::StoreError::from)
            })
            .await
            .unwrap();
        assert!(store.epoch().current() > e1, "DELETE … RETURNING bumps");
        let e2 = store.epoch().current();
        let failed: Result<(), crate::store::StoreError> = store
            .run(|c| {
                let tx = c.transaction()?;
                tx.execute("INSERT INTO t VALUES (2)", [])?;
                Ok(()) // dropped: rolled back
            })
            .await;
        failed.unwrap();
        assert_eq!(store.epoch().current(), e2, "a rollback does not");
    }

    #[tokio::test]
    async fn cached_values_go_stale_with_the_next_commit_and_with_age() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        exec(&store, "CREATE TABLE t (x INTEGER)").await;
        let cache: EpochCache<&'static str, u32> =
            EpochCache::new(store.epoch(), 10, Duration::from_secs(60), None);
        cache.insert("a", cache.epoch(), 1);
        assert_eq!(cache.get(&"a"), Some(1));
        exec(&store, "INSERT INTO t VALUES (1)").await;
        assert_eq!(cache.get(&"a"), None, "a commit invalidates");

        let before_write = cache.epoch();
        exec(&store, "INSERT INTO t VALUES (2)").await;
        cache.insert("b", before_write, 2);
        assert_eq!(cache.get(&"b"), None, "read before a commit: not kept");

        let aged: EpochCache<&'static str, u32> =
            EpochCache::new(store.epoch(), 10, Duration::from_millis(50), None);
        aged.insert("c", aged.epoch(), 3);
        assert_eq!(aged.get(&"c"), Some(3));
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(aged.get(&"c"), None, "older than max_age");
    }
}
