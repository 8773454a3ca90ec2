//! How many IMAP sessions are open: over the whole process and per user. A session holds
//! a [`Permit`] for its life (inside its stream), so dropping the session frees the place.
//! A connection that finds no place waits for one up to its deadline.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

static OPEN: AtomicUsize = AtomicUsize::new(0);
static PER_USER: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);
static FREED: Notify = Notify::const_new();

/// IMAP sessions open right now (for `/metrics`).
pub fn open_sessions() -> usize {
    OPEN.load(Ordering::Relaxed)
}

/// A place among the open sessions; freed on drop.
#[derive(Debug)]
pub struct Permit {
    user: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut users = PER_USER.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = users.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                users.remove(&self.user);
            }
        }
        OPEN.fetch_sub(1, Ordering::Relaxed);
        drop(users);
        FREED.notify_waiters();
    }
}

fn try_acquire(user: &str, max: usize, per_user: usize) -> Option<Permit> {
    let mut users = PER_USER.lock().unwrap_or_else(|e| e.into_inner());
    let mine = users.get(user).copied().unwrap_or(0);
    if mine >= per_user || OPEN.load(Ordering::Relaxed) >= max {
        return None;
    }
    users.insert(user.to_owned(), mine + 1);
    OPEN.fetch_add(1, Ordering::Relaxed);
    Some(Permit {
        user: user.to_owned(),
    })
}

/// A place for a session of `user`, waiting up to `wait` for one; `None` when every place
/// stayed taken.
pub async fn acquire(user: &str, max: usize, per_user: usize, wait: Duration) -> Option<Permit> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let freed = FREED.notified();
        if let Some(p) = try_acquire(user, max, per_user) {
            return Some(p);
        }
        if tokio::time::timeout_at(deadline, freed).await.is_err() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn places_are_counted_per_user_and_freed_on_drop() {
        let user = "sessions-test-user";
        let a = acquire(user, 1000, 2, Duration::ZERO).await.unwrap();
        let _b = acquire(user, 1000, 2, Duration::ZERO).await.unwrap();
        assert!(acquire(user, 1000, 2, Duration::from_millis(20))
            .await
            .is_none());
        assert!(open_sessions() >= 2);
        let waiter = tokio::spawn(acquire(user, 1000, 2, Duration::from_secs(5)));
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(a);
        assert!(waiter.await.unwrap().is_some(), "a freed place is taken");
        assert!(acquire("someone-else", 1000, 2, Duration::ZERO)
            .await
            .is_some());
    }
}
