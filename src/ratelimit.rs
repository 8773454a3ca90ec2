//! Fixed-window rate limits, keyed by caller or by a route-specific key.
//!
//! The general budget (`[rate_limit]`) applies to every request; services add their own
//! narrower limits (e.g. key deletion once per hour) through [`RateLimiter::hit`].
//!
//! Every request of the server passes through here, so the table is built for that: keys
//! are spread over [`SHARDS`] independently locked maps by hash, and a hit is one hash, one
//! lock held for a map probe and two integer updates, and no allocation for a key already
//! present. (A general-purpose cache in its place, with its own read log, frequency sketch
//! and clean-up run on the calling thread, cost more than the rest of the cheapest route's
//! fixed work; see `docs/benchmarks.md`.)
//!
//! A window whose time is up is the same as no window at all (the next hit starts a new
//! one), so expired entries can be dropped at any time without changing a single answer.
//! A shard drops them whenever it last did so more than [`SWEEP_EVERY`] ago and a new key
//! arrives; memory thus follows the callers of the last window, and is capped at
//! [`CAPACITY`] keys: past that, a new key first replaces the live key with the fewest
//! requests counted in its shard (the caller least likely to be near its limit).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::unix_now;

/// Independently locked parts of the table (a power of two).
const SHARDS: usize = 64;
/// Keys kept at most, over all shards.
const CAPACITY: usize = 200_000;
/// How often a shard drops the windows whose time is up (on the arrival of a new key).
const SWEEP_EVERY: u64 = 60;

/// Where a caller stands in its current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds at which the window resets.
    pub reset: u64,
}

impl Quota {
    /// Seconds until the window resets, at least 1 (for `Retry-After`).
    pub fn retry_after(&self) -> u64 {
        self.reset.saturating_sub(unix_now()).max(1)
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: u64,
    /// Length of this window in seconds (the caller's, at least 1).
    secs: u64,
    count: u32,
}

impl Window {
    fn reset(&self) -> u64 {
        self.start.saturating_add(self.secs)
    }

    fn expired(&self, now: u64) -> bool {
        now >= self.reset()
    }
}

#[derive(Default)]
struct Shard {
    windows: HashMap<Box<str>, Window>,
    last_sweep: u64,
}

impl Shard {
    /// Makes room for one more key: expired windows go (at most every [`SWEEP_EVERY`]
    /// seconds unless the shard is full), then, if still full, the key with the fewest hits.
    fn make_room(&mut self, now: u64, cap: usize) {
        let full = self.windows.len() >= cap;
        if full || now >= self.last_sweep.saturating_add(SWEEP_EVERY) {
            self.windows.retain(|_, w| !w.expired(now));
            self.last_sweep = now;
        }
        if self.windows.len() >= cap {
            let fewest = self
                .windows
                .iter()
                .min_by_key(|(_, w)| w.count)
                .map(|(k, _)| k.clone());
            if let Some(key) = fewest {
                self.windows.remove(&key);
            }
        }
    }
}

/// Counts one request in `w` (a new window when its time is up).
fn spend(w: &mut Window, now: u64, secs: u64, limit: u32) -> Result<Quota, Quota> {
    if w.expired(now) {
        *w = Window {
            start: now,
            secs,
            count: 0,
        };
    }
    let reset = w.reset();
    if w.count >= limit {
        return Err(Quota {
            limit,
            remaining: 0,
            reset,
        });
    }
    w.count += 1;
    Ok(Quota {
        limit,
        remaining: limit - w.count,
        reset,
    })
}

/// The rate-limit table, shared by every request (cheap to clone).
#[derive(Clone)]
pub struct RateLimiter {
    inner: std::sync::Arc<Inner>,
}

struct Inner {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    /// Keys one shard may hold.
    shard_cap: usize,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimiter {
    pub fn new() -> Self {
        Self::with_capacity(CAPACITY)
    }

    fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: std::sync::Arc::new(Inner {
                shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
                // Keys carry caller-chosen parts (addresses): a keyed hash, so nobody can
                // aim many keys at one shard.
                hasher: RandomState::new(),
                shard_cap: capacity.div_ceil(SHARDS).max(1),
            }),
        }
    }

    fn shard(&self, key: &str) -> MutexGuard<'_, Shard> {
        let i = self.inner.hasher.hash_one(key) as usize & (SHARDS - 1);
        // A panic while holding the lock left plain counters behind: still usable.
        self.inner.shards[i]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts one request for `key` against `limit` per `window`. `Ok` while within the
    /// limit, `Err` (remaining 0) once it is exceeded; both carry the header values.
    ///
    /// `async` for the callers written against the earlier table; it never waits (see
    /// [`Self::count`]).
    pub async fn hit(&self, key: &str, limit: u32, window: Duration) -> Result<Quota, Quota> {
        self.count(key, limit, window)
    }

    /// [`Self::hit`] without the future: one lock of one shard, never held across an await.
    pub fn count(&self, key: &str, limit: u32, window: Duration) -> Result<Quota, Quota> {
        let now = unix_now();
        let secs = window.as_secs().max(1);
        let mut guard = self.shard(key);
        let shard = &mut *guard;
        if let Some(w) = shard.windows.get_mut(key) {
            return spend(w, now, secs, limit);
        }
        shard.make_room(now, self.inner.shard_cap);
        let w = shard.windows.entry(key.into()).or_insert(Window {
            start: now,
            secs,
            count: 0,
        });
        spend(w, now, secs, limit)
    }

    /// Looks at the quota without counting a request.
    pub async fn peek(&self, key: &str, limit: u32, window: Duration) -> Quota {
        self.look(key, limit, window)
    }

    /// [`Self::peek`] without the future.
    pub fn look(&self, key: &str, limit: u32, window: Duration) -> Quota {
        let now = unix_now();
        let secs = window.as_secs().max(1);
        let shard = self.shard(key);
        match shard.windows.get(key) {
            Some(w) if !w.expired(now) => Quota {
                limit,
                remaining: limit.saturating_sub(w.count),
                reset: w.reset(),
            },
            _ => Quota {
                limit,
                remaining: limit,
                reset: now + secs,
            },
        }
    }

    /// Keys held now (for tests and metrics).
    pub fn len(&self) -> usize {
        self.inner
            .shards
            .iter()
            .map(|s| s.lock().map_or(0, |s| s.windows.len()))
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_is_refused_after_its_limit_and_others_are_not() {
        let limiter = RateLimiter::new();
        let window = Duration::from_secs(60);
        for expected_remaining in [2, 1, 0] {
            let quota = limiter.hit("a", 3, window).await.unwrap();
            assert_eq!(quota.remaining, expected_remaining);
            assert_eq!(quota.limit, 3);
        }
        let refused = limiter.hit("a", 3, window).await.unwrap_err();
        assert_eq!(refused.remaining, 0);
        assert!(refused.retry_after() >= 1 && refused.retry_after() <= 60);
        assert!(limiter.hit("b", 3, window).await.is_ok());
    }

    #[tokio::test]
    async fn the_window_resets_after_it_elapses() {
        let limiter = RateLimiter::new();
        let window = Duration::from_secs(1);
        limiter.hit("k", 1, window).await.unwrap();
        assert!(limiter.hit("k", 1, window).await.is_err());
        tokio::time::sleep(Duration::from_millis(2_100)).await;
        assert!(limiter.hit("k", 1, window).await.is_ok());
    }

    #[test]
    fn peek_counts_nothing_and_agrees_with_hit() {
        let limiter = RateLimiter::new();
        let window = Duration::from_secs(60);
        assert_eq!(limiter.look("p", 2, window).remaining, 2);
        let hit = limiter.count("p", 2, window).unwrap();
        let looked = limiter.look("p", 2, window);
        assert_eq!(looked, hit);
        assert_eq!(limiter.look("p", 2, window).remaining, 1);
        limiter.count("p", 2, window).unwrap();
        assert_eq!(limiter.look("p", 2, window).remaining, 0);
        assert!(limiter.count("p", 2, window).is_err());
    }

    #[test]
    fn concurrent_hits_on_one_key_are_all_counted() {
        let limiter = RateLimiter::new();
        let window = Duration::from_secs(60);
        let admitted: u32 = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        (0..1_000)
                            .filter(|_| limiter.count("shared", 5_000, window).is_ok())
                            .count() as u32
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).sum()
        });
        // 8,000 attempts against a budget of 5,000: exactly the budget gets through.
        assert_eq!(admitted, 5_000);
        assert_eq!(limiter.look("shared", 5_000, window).remaining, 0);
    }

    #[test]
    fn the_table_stays_within_its_capacity_and_keeps_busy_callers() {
        let limiter = RateLimiter::with_capacity(SHARDS * 4);
        let window = Duration::from_secs(60);
        // A caller that spent its budget, then a flood of one-off keys.
        for _ in 0..3 {
            limiter.count("busy", 3, window).unwrap();
        }
        for i in 0..10_000 {
            limiter.count(&format!("once-{i}"), 3, window).unwrap();
        }
        assert!(limiter.len() <= SHARDS * 4, "{}", limiter.len());
        // The flood pushed out one-off keys (one hit each), never the busy caller.
        assert!(limiter.count("busy", 3, window).is_err());
    }

    #[test]
    fn expired_windows_are_dropped_without_changing_answers() {
        let limiter = RateLimiter::new();
        let mut shard = Shard::default();
        shard.windows.insert(
            "old".into(),
            Window {
                start: 0,
                secs: 1,
                count: 9,
            },
        );
        shard.make_room(10_000, 100);
        assert!(shard.windows.is_empty());
        // An absent key and an expired one both start a fresh window.
        assert_eq!(
            limiter
                .count("new", 2, Duration::from_secs(5))
                .unwrap()
                .remaining,
            1
        );
    }
}
