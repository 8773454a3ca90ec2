//! Flags the user changed here while a sync request was already on its way.
//!
//! A sync response can carry room account data (`m.tag`, `m.marked_unread`) or push rules
//! that the homeserver computed *before* the user's own later change reached it: e.g. the
//! room was marked unread (its echo, `unread: true`, is in flight), then read, which
//! clears the mark here and on the homeserver; if that older response is applied after the
//! clear, the mark comes back until the next sync. So a flag the user changes here is
//! remembered with the time its write finished (and as "in flight" while it is written),
//! and a sync response whose request began before that keeps its hands off that flag of
//! that room. What such a response carried for that flag is read again from the
//! homeserver once the write has finished (`workers::sync` "recheck"), so a change another
//! client made meanwhile is not lost with the left-out copy.
//!
//! Kept in memory: after a restart no sync request is in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What kind of shared flag a local write changed (the account data it lands in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SharedFlag {
    /// Favorite and archived: the room's `m.tag`.
    Tags,
    /// The room's `m.marked_unread`.
    MarkedUnread,
    /// Muted and the notification level: the account's `m.push_rules`.
    PushLevel,
}

/// Entries older than this (and not in flight) are forgotten: far longer than any sync
/// request's long poll.
const FORGET_AFTER: Duration = Duration::from_secs(600);

type Key = (String, String, SharedFlag);

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Writes of this flag under way (local store, then the homeserver).
    in_flight: u32,
    /// When the last write started or finished.
    last: Instant,
}

impl Entry {
    /// Under way, or finished after `began`.
    fn newer_than(&self, began: Instant) -> bool {
        self.in_flight > 0 || self.last > began
    }
}

/// The registry; one per process, shared by the services (which write) and the sync
/// worker (which asks).
#[derive(Debug, Default, Clone)]
pub struct LocalWrites {
    inner: Arc<Mutex<HashMap<Key, Entry>>>,
}

/// Held while a flag is written here and to the homeserver; dropping it marks the write
/// finished (now).
#[must_use = "the write counts as finished when this is dropped"]
pub struct WriteGuard {
    writes: LocalWrites,
    key: Key,
}

impl LocalWrites {
    /// Starts a write of `flag` of `room_id`: call it before the local store changes.
    pub fn begin(&self, user_id: &str, room_id: &str, flag: SharedFlag) -> WriteGuard {
        let key = (user_id.to_owned(), room_id.to_owned(), flag);
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, e| e.in_flight > 0 || now.duration_since(e.last) < FORGET_AFTER);
        let e = map.entry(key.clone()).or_insert(Entry {
            in_flight: 0,
            last: now,
        });
        e.in_flight += 1;
        e.last = now;
        WriteGuard {
            writes: self.clone(),
            key,
        }
    }

    /// Whether a sync response whose request began at `began` must leave `flag` of
    /// `room_id` alone: a local write of it is under way or finished after `began`.
    pub fn is_newer(&self, user_id: &str, room_id: &str, flag: SharedFlag, began: Instant) -> bool {
        let key = (user_id.to_owned(), room_id.to_owned(), flag);
        self.lock().get(&key).is_some_and(|e| e.newer_than(began))
    }

    /// The rooms whose `flag` was written locally after `began` (or is being written):
    /// for account-wide data such as `m.push_rules`, which carries every room's level.
    pub fn newer_rooms(&self, user_id: &str, flag: SharedFlag, began: Instant) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|((u, _, f), e)| u == user_id && *f == flag && e.newer_than(began))
            .map(|((_, room, _), _)| room.clone())
            .collect()
    }

    /// Whether a write of `flag` of `room_id` is under way now.
    pub fn in_flight(&self, user_id: &str, room_id: &str, flag: SharedFlag) -> bool {
        let key = (user_id.to_owned(), room_id.to_owned(), flag);
        self.lock().get(&key).is_some_and(|e| e.in_flight > 0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        // A panic while holding this lock cannot leave the map inconsistent (every
        // update is one field assignment), so a poisoned lock is used as it is.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        let mut map = self.writes.lock();
        if let Some(e) = map.get_mut(&self.key) {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.last = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "u1";
    const R: &str = "!r:hs";

    #[test]
    fn a_response_begun_before_a_write_finished_leaves_the_flag_alone() {
        let writes = LocalWrites::default();
        let began = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let guard = writes.begin(U, R, SharedFlag::MarkedUnread);
        assert!(writes.in_flight(U, R, SharedFlag::MarkedUnread));
        assert!(writes.is_newer(U, R, SharedFlag::MarkedUnread, began));
        // Under way: even a response begun after the write started keeps off.
        assert!(writes.is_newer(U, R, SharedFlag::MarkedUnread, Instant::now()));
        drop(guard);
        assert!(writes.is_newer(U, R, SharedFlag::MarkedUnread, began));
        assert_eq!(
            writes.newer_rooms(U, SharedFlag::MarkedUnread, began),
            vec![R.to_owned()]
        );
        assert!(!writes.in_flight(U, R, SharedFlag::MarkedUnread));
    }

    #[test]
    fn a_response_begun_after_the_write_finished_applies() {
        let writes = LocalWrites::default();
        drop(writes.begin(U, R, SharedFlag::Tags));
        std::thread::sleep(Duration::from_millis(2));
        let began = Instant::now();
        assert!(!writes.is_newer(U, R, SharedFlag::Tags, began));
        assert!(writes.newer_rooms(U, SharedFlag::Tags, began).is_empty());
    }

    #[test]
    fn other_flags_rooms_and_users_are_not_affected() {
        let writes = LocalWrites::default();
        let began = Instant::now();
        let _guard = writes.begin(U, R, SharedFlag::Tags);
        assert!(writes.is_newer(U, R, SharedFlag::Tags, began));
        assert!(!writes.is_newer(U, R, SharedFlag::MarkedUnread, began));
        assert!(!writes.is_newer(U, "!other:hs", SharedFlag::Tags, began));
        assert!(!writes.is_newer("u2", R, SharedFlag::Tags, began));
        assert!(writes.newer_rooms("u2", SharedFlag::Tags, began).is_empty());
        assert!(!writes.in_flight(U, R, SharedFlag::MarkedUnread));
    }
}
