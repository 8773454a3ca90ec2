//! What happens while a row is measured, each switched on per row: messages arriving in the
//! bench room through Synapse, another member of it typing, and messages arriving for the
//! other users (`others.rs`). All three are one [`Pulse`] with a different act.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::synapse::{Account, Homeserver};

/// Something done 20 times a second while switched on, counting what was done.
#[derive(Clone, Default)]
pub struct Pulse {
    on: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
}

impl Pulse {
    pub fn switch(&self, on: bool) {
        self.on.store(on, Ordering::SeqCst);
    }

    /// Acts finished so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Runs `act(i)` every 50 ms while switched on, each in its own task, so a slow answer
    /// from Synapse does not lower the rate.
    pub async fn run<F, Fut>(self, act: F)
    where
        F: Fn(u64) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        for i in 0u64.. {
            tick.tick().await;
            if !self.on.load(Ordering::SeqCst) {
                continue;
            }
            let (done, sent) = (act(i), self.sent.clone());
            tokio::spawn(async move {
                done.await;
                sent.fetch_add(1, Ordering::SeqCst);
            });
        }
    }
}

/// Messages from `who` into `room`; `last` holds the text of the last one sent.
pub async fn arrivals(
    pulse: Pulse,
    hs: Homeserver,
    who: Account,
    room: String,
    last: Arc<Mutex<String>>,
) {
    let run = uuid::Uuid::new_v4().simple().to_string();
    pulse
        .run(move |i| {
            let (hs, who, room, last) = (hs.clone(), who.clone(), room.clone(), last.clone());
            let txn = format!("{run}a{i}");
            async move {
                let body = format!("Arrived {i}: on my way");
                hs.send_text(&who, &room, &txn, &body).await;
                *last.lock().unwrap() = body;
            }
        })
        .await;
}

/// Typing notices of `typist` in `room` (typing and stopped in turn: each one a change
/// every member's sync delivers).
pub async fn typing(pulse: Pulse, hs: Homeserver, typist: Account, room: String) {
    pulse
        .run(move |i| {
            let (hs, typist, room) = (hs.clone(), typist.clone(), room.clone());
            async move { hs.typing(&typist, &room, i % 2 == 0).await }
        })
        .await;
}
