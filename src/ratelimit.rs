//! Fixed-window rate limits kept in moka, keyed by caller or by a route-specific key.
//!
//! The general budget (`[rate_limit]`) applies to every request; services add their own
//! narrower limits (e.g. key deletion once per hour) through [`RateLimiter::hit`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::unix_now;

use moka::future::Cache;

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

#[derive(Debug)]
struct Window {
    start: u64,
    count: u32,
}

#[derive(Clone)]
pub struct RateLimiter {
    windows: Cache<String, Arc<Mutex<Window>>>,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimiter {
    pub fn new() -> Self {
        Self {
            // Idle keys disappear after the longest window any caller uses (1 h).
            windows: Cache::builder()
                .max_capacity(200_000)
                .time_to_idle(Duration::from_secs(3_600))
                .build(),
        }
    }

    /// Counts one request for `key` against `limit` per `window`. `Ok` while within the
    /// limit, `Err` (remaining 0) once it is exceeded; both carry the header values.
    pub async fn hit(&self, key: &str, limit: u32, window: Duration) -> Result<Quota, Quota> {
        let entry = self
            .windows
            .get_with_by_ref(key, async {
                Arc::new(Mutex::new(Window {
                    start: unix_now(),
                    count: 0,
                }))
            })
            .await;
        let now = unix_now();
        let window_secs = window.as_secs().max(1);
        let mut w = entry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if now >= w.start + window_secs {
            w.start = now;
            w.count = 0;
        }
        let reset = w.start + window_secs;
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

    /// Looks at the quota without counting a request.
    pub async fn peek(&self, key: &str, limit: u32, window: Duration) -> Quota {
        let now = unix_now();
        let window_secs = window.as_secs().max(1);
        match self.windows.get(key).await {
            Some(entry) => {
                let w = entry
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                if now >= w.start + window_secs {
                    Quota {
                        limit,
                        remaining: limit,
                        reset: now + window_secs,
                    }
                } else {
                    Quota {
                        limit,
                        remaining: limit.saturating_sub(w.count),
                        reset: w.start + window_secs,
                    }
                }
            }
            None => Quota {
                limit,
                remaining: limit,
                reset: now + window_secs,
            },
        }
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
}
