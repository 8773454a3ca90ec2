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
//! Per-user scope: a job that writes only one user's rows (a sync worker storing that
//! user's messages, a token's use being recorded) says so with [`scope_to_user`]; its
//! commit then ends only entries filed for that user ([`EpochCache::insert_for`]) instead
//! of every entry. Users map onto [`USER_SLOTS`] counters by hash: two users sharing a slot
//! only end each other's entries more often. A job that does not declare a scope, or
//! declares two users, bumps the global counter, which ends everything, as before.
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

/// Counters users are spread over (by hash of the user id).
pub const USER_SLOTS: usize = 1024;

/// Whose rows the current job's writes touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Not declared: anyone's.
    Unset,
    /// Only the user(s) of this slot.
    User(usize),
    /// Several users: anyone's.
    Mixed,
    /// Nothing a cache is built from (declared with [`no_cached_data_changed`]).
    Bookkeeping,
}

thread_local! {
    /// Set by the commit hook of any connection used on this thread.
    static COMMITTED: Cell<bool> = const { Cell::new(false) };
    /// Declared by the current job ([`scope_to_user`]); reset around every job.
    static SCOPE: Cell<Scope> = const { Cell::new(Scope::Unset) };
}

fn slot_of(user_id: &str) -> usize {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(user_id.as_bytes());
    (h.finish() % USER_SLOTS as u64) as usize
}

/// Declares, from inside a [`Store::run`](super::Store::run) job, that everything the job
/// writes is `user_id`'s own rows (no other user's cached data can change). A job that
/// declares two different users counts as touching anyone's.
pub fn scope_to_user(user_id: &str) {
    let slot = slot_of(user_id);
    SCOPE.with(|s| {
        let next = match s.get() {
            Scope::Unset => Scope::User(slot),
            Scope::User(x) if x == slot => Scope::User(slot),
            Scope::Bookkeeping => Scope::User(slot),
            _ => Scope::Mixed,
        };
        s.set(next);
    });
}

/// Declares, from inside a job, that what it committed is bookkeeping no cache entry is
/// built from (e.g. a sync response that brought only typing notices: the stored sync
/// position moved, nothing a page shows). Overrides [`scope_to_user`]; the commit then ends
/// no cached entry. Only for jobs that know exactly what they wrote.
pub fn no_cached_data_changed() {
    SCOPE.with(|s| s.set(Scope::Bookkeeping));
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
        SCOPE.with(|s| s.set(Scope::Unset));
        Self(epoch)
    }
}

impl Drop for PublishCommits {
    fn drop(&mut self) {
        let scope = SCOPE.with(|s| s.replace(Scope::Unset));
        if take_committed() {
            self.0.bump(scope);
        }
    }
}

/// The write epoch of one database.
#[derive(Debug, Clone)]
pub struct WriteEpoch(Arc<Counters>);

#[derive(Debug)]
struct Counters {
    /// Every commit.
    any: AtomicU64,
    /// Commits that may touch anyone's rows.
    global: AtomicU64,
    /// Commits declared to touch only the users of one slot.
    users: Box<[AtomicU64]>,
}

impl Default for WriteEpoch {
    fn default() -> Self {
        Self(Arc::new(Counters {
            any: AtomicU64::new(0),
            global: AtomicU64::new(0),
            users: (0..USER_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }))
    }
}

/// What an entry filed for one user was computed under.
#[derive(Debug, Clone, Copy)]
struct UserStamp {
    slot: usize,
    global: u64,
    user: u64,
}

impl WriteEpoch {
    /// The count of every commit. Read it before reading the data a cache entry is built
    /// from.
    pub fn current(&self) -> u64 {
        self.0.any.load(Ordering::SeqCst)
    }

    /// `any` first: a reader that sees a slot (or global) bump also sees this one, so an
    /// entry is never filed under a slot value newer than the data it was read from.
    fn bump(&self, scope: Scope) {
        self.0.any.fetch_add(1, Ordering::SeqCst);
        match scope {
            Scope::User(slot) => self.0.users[slot].fetch_add(1, Ordering::SeqCst),
            Scope::Unset | Scope::Mixed => self.0.global.fetch_add(1, Ordering::SeqCst),
            // `any` alone: a fill under way when it committed is still not filed.
            Scope::Bookkeeping => 0,
        };
    }

    /// The stamp of `user_id`'s data as read after `before` was taken, if nothing at all
    /// was committed since then (otherwise the data may be outdated: `None`).
    fn user_stamp(&self, before: u64, user_id: &str) -> Option<UserStamp> {
        let slot = slot_of(user_id);
        let global = self.0.global.load(Ordering::SeqCst);
        let user = self.0.users[slot].load(Ordering::SeqCst);
        (self.current() == before).then_some(UserStamp { slot, global, user })
    }

    fn user_stamp_holds(&self, stamp: &UserStamp) -> bool {
        self.0.global.load(Ordering::SeqCst) == stamp.global
            && self.0.users[stamp.slot].load(Ordering::SeqCst) == stamp.user
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
    /// `any` when filed; ignored for entries filed for one user.
    epoch: u64,
    user: Option<UserStamp>,
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

    /// `(entries, weight)` now, read by `/metrics` (weight: bytes for a byte-weighed cache).
    pub fn size_reader(&self) -> crate::metrics::CacheSize {
        let entries = self.entries.clone();
        Box::new(move || (entries.entry_count(), entries.weighted_size()))
    }

    /// The value, if nothing was committed since it was computed and it is young enough.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entry = self.entries.get(key)?;
        let unchanged = match &entry.user {
            Some(stamp) => self.epoch.user_stamp_holds(stamp),
            None => entry.epoch == self.epoch.current(),
        };
        let fresh = unchanged && entry.filled.elapsed() < self.max_age;
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
            self.file(key, epoch, None, value);
        }
    }

    /// [`insert`](Self::insert) for a value derived from `user_id`'s rows only: it stays
    /// fresh across commits scoped to other users ([`scope_to_user`]).
    pub fn insert_for(&self, key: K, epoch: u64, user_id: &str, value: V) {
        if let Some(stamp) = self.epoch.user_stamp(epoch, user_id) {
            self.file(key, epoch, Some(stamp), value);
        }
    }

    fn file(&self, key: K, epoch: u64, user: Option<UserStamp>, value: V) {
        let filled = Instant::now();
        let entry = Stamped {
            epoch,
            user,
            filled,
            value,
        };
        self.entries.insert(key, entry);
    }
}

#[cfg(test)]
#[path = "epoch_tests.rs"]
mod tests;
