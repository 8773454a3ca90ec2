//! In-process change notifications: services publish, `GET /api/sync` streams them.
//!
//! Each event has a process-wide increasing id (seeded from the clock, so ids keep
//! increasing across restarts) and belongs to one user. Every user has a channel of their
//! own and a window of their own recent events, so a client reconnecting with
//! `Last-Event-ID` gets what it missed however busy other users are, and a stream never
//! falls behind because of someone else's traffic. The hub also counts each user's open
//! streams ([`MAX_STREAMS_PER_USER`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, watch};

mod change;

pub use change::ChangeEvent;

/// How many of a user's recent events are kept for `Last-Event-ID` resumption.
pub const RETAINED_PER_USER: usize = 1024;

/// Open `GET /api/sync` streams allowed per user at once.
pub const MAX_STREAMS_PER_USER: usize = 8;

/// Events a user's stream may be behind before it gets `resync`.
const USER_CHANNEL_CAPACITY: usize = 256;

/// One published change: its stream id and the user it belongs to.
#[derive(Debug, Clone)]
pub struct Published {
    pub id: u64,
    pub user_id: String,
    pub change: ChangeEvent,
}

/// One user's channel, replay window and stream count.
struct UserLog {
    sender: broadcast::Sender<Arc<Published>>,
    retained: VecDeque<Arc<Published>>,
    /// Highest id dropped from `retained` (0: none yet): a resume from before it missed events.
    evicted_through: u64,
    streams: usize,
}

impl UserLog {
    fn new() -> Self {
        Self {
            sender: broadcast::channel(USER_CHANNEL_CAPACITY).0,
            retained: VecDeque::new(),
            evicted_through: 0,
            streams: 0,
        }
    }
}

type Logs = Arc<Mutex<HashMap<String, UserLog>>>;

fn lock(logs: &Logs) -> std::sync::MutexGuard<'_, HashMap<String, UserLog>> {
    logs.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct EventHub {
    /// Every user's events, for in-process consumers (the push hook).
    all: broadcast::Sender<Arc<Published>>,
    /// Id of this process's first event: anything lower was issued by an earlier process.
    first_id: u64,
    /// Taken while `logs` is locked, so ids enter each window in order.
    next_id: AtomicU64,
    logs: Logs,
}

/// The user already has [`MAX_STREAMS_PER_USER`] streams open.
#[derive(Debug)]
pub struct TooManyStreams;

/// An open stream's view of its user's events.
pub struct Subscription {
    /// Events published after the subscription.
    pub rx: broadcast::Receiver<Arc<Published>>,
    /// The retained events after the resume id, oldest first (empty without one); `None`
    /// when they cannot be replayed and the client must rescan.
    pub missed: Option<Vec<Arc<Published>>>,
    /// Holds one of the user's stream slots until dropped.
    pub slot: StreamSlot,
}

/// One of a user's stream slots; given back when dropped (the stream ended or the client
/// went away).
pub struct StreamSlot {
    logs: Logs,
    user_id: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        if let Some(log) = lock(&self.logs).get_mut(&self.user_id) {
            log.streams = log.streams.saturating_sub(1);
        }
    }
}

impl Default for EventHub {
    fn default() -> Self {
        Self::new()
    }
}

impl EventHub {
    pub fn new() -> Self {
        let (all, _) = broadcast::channel(1024);
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64 * 1000)
            .unwrap_or(1);
        Self {
            all,
            first_id: seed,
            next_id: AtomicU64::new(seed),
            logs: Arc::default(),
        }
    }

    /// Publishes `change` to the streams of `user_id`.
    pub fn publish(&self, user_id: &str, change: ChangeEvent) -> u64 {
        let event = {
            let mut logs = lock(&self.logs);
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let event = Arc::new(Published {
                id,
                user_id: user_id.to_owned(),
                change,
            });
            let log = logs.entry(user_id.to_owned()).or_insert_with(UserLog::new);
            if log.retained.len() == RETAINED_PER_USER {
                if let Some(old) = log.retained.pop_front() {
                    log.evicted_through = old.id;
                }
            }
            log.retained.push_back(event.clone());
            // No receivers is normal (nobody connected).
            let _ = log.sender.send(event.clone());
            event
        };
        let id = event.id;
        let _ = self.all.send(event);
        id
    }

    /// Every user's events as they are published (no replay, no stream slot).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Published>> {
        self.all.subscribe()
    }

    /// Opens a stream of `user_id`'s events, replaying those after `resume` first. The
    /// subscription and the replay are taken together, so no event is lost or repeated
    /// between the two.
    pub fn open_stream(
        &self,
        user_id: &str,
        resume: Option<u64>,
    ) -> Result<Subscription, TooManyStreams> {
        let mut logs = lock(&self.logs);
        let log = logs.entry(user_id.to_owned()).or_insert_with(UserLog::new);
        if log.streams >= MAX_STREAMS_PER_USER {
            return Err(TooManyStreams);
        }
        log.streams += 1;
        let missed = match resume {
            Some(last) => self.replay(log, last),
            None => Some(Vec::new()),
        };
        Ok(Subscription {
            rx: log.sender.subscribe(),
            missed,
            slot: StreamSlot {
                logs: self.logs.clone(),
                user_id: user_id.to_owned(),
            },
        })
    }

    /// Retained events of `user_id` after `last_id`, oldest first; `None` when events of
    /// the user after `last_id` are no longer retained or `last_id` was issued before this
    /// process started (the client must rescan).
    pub fn since(&self, user_id: &str, last_id: u64) -> Option<Vec<Arc<Published>>> {
        match lock(&self.logs).get(user_id) {
            Some(log) => self.replay(log, last_id),
            None => self.replay(&UserLog::new(), last_id),
        }
    }

    fn replay(&self, log: &UserLog, last_id: u64) -> Option<Vec<Arc<Published>>> {
        if last_id + 1 < self.first_id || last_id < log.evicted_through {
            return None;
        }
        Some(
            log.retained
                .iter()
                .filter(|e| e.id > last_id)
                .cloned()
                .collect(),
        )
    }

    /// Streams `user_id` has open now.
    pub fn open_streams(&self, user_id: &str) -> usize {
        lock(&self.logs).get(user_id).map_or(0, |l| l.streams)
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

    fn room(id: &str) -> ChangeEvent {
        ChangeEvent::RoomUpdated { room_id: id.into() }
    }

    #[tokio::test]
    async fn subscribers_get_events_and_resume_from_an_id() {
        let hub = EventHub::new();
        let mut rx = hub.subscribe();
        let first = hub.publish("u1", room("!a"));
        let second = hub.publish("u2", room("!r"));
        let third = hub.publish("u1", room("!m"));
        assert!(first < second && second < third);
        assert_eq!(rx.recv().await.unwrap().id, first);
        let missed = hub.since("u1", first).unwrap();
        assert_eq!(missed.iter().map(|e| e.id).collect::<Vec<_>>(), vec![third]);
        // Nothing was missed when resuming from the id just before this process's first.
        assert_eq!(hub.since("u1", first - 1).unwrap().len(), 2);
        // An id from an earlier process cannot be resumed.
        assert!(hub.since("u1", first - 10).is_none());
    }

    #[test]
    fn other_users_traffic_does_not_push_a_users_events_out_of_the_window() {
        let hub = EventHub::new();
        let mine = hub.publish("u1", room("!r"));
        let after = hub.publish("u1", room("!r"));
        for _ in 0..(RETAINED_PER_USER * 3) {
            hub.publish("busy", room("!r"));
        }
        let missed = hub.since("u1", mine).expect("still replayable");
        assert_eq!(missed.iter().map(|e| e.id).collect::<Vec<_>>(), vec![after]);
        // The busy user's own oldest events did leave its window.
        assert!(hub.since("busy", after).is_none());
    }

    #[test]
    fn a_user_has_at_most_eight_streams_and_a_closed_one_frees_its_slot() {
        let hub = EventHub::new();
        let open: Vec<_> = (0..MAX_STREAMS_PER_USER)
            .map(|_| hub.open_stream("u1", None).expect("slot"))
            .collect();
        assert!(hub.open_stream("u1", None).is_err());
        assert!(hub.open_stream("u2", None).is_ok(), "per user");
        drop(open);
        assert_eq!(hub.open_streams("u1"), 0);
        assert!(hub.open_stream("u1", None).is_ok());
    }

    #[tokio::test]
    async fn a_stream_gets_only_its_users_events_and_the_replay_does_not_repeat() {
        let hub = EventHub::new();
        let first = hub.publish("u1", room("!r"));
        let second = hub.publish("u1", room("!r"));
        let mut sub = hub.open_stream("u1", Some(first)).unwrap();
        assert_eq!(
            sub.missed
                .as_ref()
                .unwrap()
                .iter()
                .map(|e| e.id)
                .collect::<Vec<_>>(),
            vec![second]
        );
        hub.publish("u2", room("!r"));
        let third = hub.publish("u1", room("!r"));
        assert_eq!(sub.rx.recv().await.unwrap().id, third);
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
