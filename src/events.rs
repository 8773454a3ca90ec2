//! In-process change notifications: services publish, `GET /api/sync` streams them.
//!
//! Each event has a process-wide increasing id (seeded from the clock, so ids keep
//! increasing across restarts) and belongs to one user. A window of recent events is kept
//! so a client reconnecting with `Last-Event-ID` gets what it missed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{broadcast, watch};

/// Names of the events on the stream.
pub mod kind {
    pub const ROOM_UPDATED: &str = "room.updated";
    pub const MESSAGE_CREATED: &str = "message.created";
    pub const ROOM_DELETED: &str = "room.deleted";
    pub const BRIDGE_STATE: &str = "bridge.state";
    pub const SCHEDULED_UPDATED: &str = "scheduled.updated";
    pub const REMINDER_DUE: &str = "reminder.due";
}

/// How many recent events are kept for `Last-Event-ID` resumption.
pub const RETAINED_EVENTS: usize = 4096;

#[derive(Debug, Clone)]
pub struct ChangeEvent {
    pub id: u64,
    pub user_id: String,
    pub kind: &'static str,
    pub data: Value,
}

pub struct EventHub {
    sender: broadcast::Sender<Arc<ChangeEvent>>,
    /// Id of this process's first event: anything lower was issued by an earlier process.
    first_id: u64,
    next_id: AtomicU64,
    retained: Mutex<VecDeque<Arc<ChangeEvent>>>,
}

impl Default for EventHub {
    fn default() -> Self {
        Self::new()
    }
}

impl EventHub {
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(1024);
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64 * 1000)
            .unwrap_or(1);
        Self {
            sender,
            first_id: seed,
            next_id: AtomicU64::new(seed),
            retained: Mutex::new(VecDeque::with_capacity(RETAINED_EVENTS)),
        }
    }

    /// Publishes `kind` with `data` to the streams of `user_id`.
    pub fn publish(&self, user_id: &str, kind: &'static str, data: Value) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let event = Arc::new(ChangeEvent {
            id,
            user_id: user_id.to_owned(),
            kind,
            data,
        });
        {
            let mut retained = self.retained.lock().unwrap_or_else(|p| p.into_inner());
            if retained.len() == RETAINED_EVENTS {
                retained.pop_front();
            }
            retained.push_back(event.clone());
        }
        // No receivers is normal (nobody connected).
        let _ = self.sender.send(event);
        id
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ChangeEvent>> {
        self.sender.subscribe()
    }

    /// Retained events of `user_id` after `last_id`, oldest first; `None` when `last_id` is
    /// older than the retained window or was issued before this process started (the
    /// client must rescan).
    pub fn since(&self, user_id: &str, last_id: u64) -> Option<Vec<Arc<ChangeEvent>>> {
        if last_id + 1 < self.first_id {
            return None;
        }
        let retained = self.retained.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(oldest) = retained.front() {
            if last_id + 1 < oldest.id && retained.len() == RETAINED_EVENTS {
                return None;
            }
        }
        Some(
            retained
                .iter()
                .filter(|e| e.id > last_id && e.user_id == user_id)
                .cloned()
                .collect(),
        )
    }
}

/// Process shutdown, observable by long-running tasks and streams.
#[derive(Clone)]
pub struct Shutdown {
    sender: Arc<watch::Sender<bool>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        let (sender, _) = watch::channel(false);
        Self {
            sender: Arc::new(sender),
        }
    }

    pub fn trigger(&self) {
        self.sender.send_replace(true);
    }

    pub fn is_triggered(&self) -> bool {
        *self.sender.borrow()
    }

    /// Resolves once shutdown has been triggered.
    pub async fn wait(&self) {
        let mut rx = self.sender.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_get_events_and_resume_from_an_id() {
        let hub = EventHub::new();
        let mut rx = hub.subscribe();
        let first = hub.publish(
            "u1",
            kind::ROOM_UPDATED,
            serde_json::json!({"roomId": "!a"}),
        );
        let second = hub.publish("u2", kind::ROOM_UPDATED, serde_json::json!({}));
        let third = hub.publish("u1", kind::MESSAGE_CREATED, serde_json::json!({}));
        assert!(first < second && second < third);
        assert_eq!(rx.recv().await.unwrap().id, first);
        let missed = hub.since("u1", first).unwrap();
        assert_eq!(missed.iter().map(|e| e.id).collect::<Vec<_>>(), vec![third]);
        // Nothing was missed when resuming from the id just before this process's first.
        assert_eq!(hub.since("u1", first - 1).unwrap().len(), 2);
        // An id from an earlier process cannot be resumed.
        assert!(hub.since("u1", first - 10).is_none());
    }

    #[tokio::test]
    async fn shutdown_wakes_waiters() {
        let s = Shutdown::new();
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move { s.wait().await })
        };
        s.trigger();
        waiter.await.unwrap();
        assert!(s.is_triggered());
    }
}
