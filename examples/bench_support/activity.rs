//! What happens in the bench room while a row is measured: messages arriving through
//! Synapse, and another member typing (each switched on per row).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::synapse::{Account, Homeserver};

/// Messages sent to the bench room on Synapse, 20 a second while `on` is set.
#[derive(Clone, Default)]
pub struct Arrivals {
    pub on: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    /// Text of the last message sent.
    pub last: Arc<Mutex<String>>,
}

impl Arrivals {
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    pub async fn run(self, hs: Homeserver, who: Account, room: String) {
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        let run = uuid::Uuid::new_v4().simple().to_string();
        for i in 0u64.. {
            tick.tick().await;
            if !self.on.load(Ordering::SeqCst) {
                continue;
            }
            // One task per message, so a slow answer from Synapse does not lower the rate.
            let (me, hs, who, room) = (self.clone(), hs.clone(), who.clone(), room.clone());
            let txn = format!("{run}a{i}");
            tokio::spawn(async move {
                let body = format!("Arrived {i}: on my way");
                hs.send_text(&who, &room, &txn, &body).await;
                *me.last.lock().unwrap() = body;
                me.sent.fetch_add(1, Ordering::SeqCst);
            });
        }
    }
}

/// Typing notices of another member in the bench room, 20 a second while `on` is set
/// (typing and stopped in turn: each one a change every member's sync delivers).
#[derive(Clone, Default)]
pub struct Typing {
    pub on: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
}

impl Typing {
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    pub async fn run(self, hs: Homeserver, typist: Account, room: String) {
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        for i in 0u64.. {
            tick.tick().await;
            if !self.on.load(Ordering::SeqCst) {
                continue;
            }
            let (me, hs, typist, room) = (self.clone(), hs.clone(), typist.clone(), room.clone());
            tokio::spawn(async move {
                hs.typing(&typist, &room, i % 2 == 0).await;
                me.sent.fetch_add(1, Ordering::SeqCst);
            });
        }
    }
}
