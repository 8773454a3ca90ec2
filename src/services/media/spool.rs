//! Spool space and upload slots: what bounds the disk and the connections media use.
//!
//! Uploads and encrypted downloads spool through unlinked files in the data directory
//! (`upload`, `decrypt`). Their bytes together may not pass `[media] max_spool_mb`: each
//! chunk is reserved as it is written, and a spool that would pass the cap fails with
//! 503 `spool_full` (Retry-After), so no client can fill the data disk. The reservation
//! is given back when the spool's owner ends (the file is gone then too). A user may also
//! have at most `[media] max_concurrent_uploads` uploads in progress (429
//! `too_many_uploads`): an upload holds a connection, a spool and a blocking thread.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;

/// Spooled bytes of the whole process.
static USED: AtomicU64 = AtomicU64::new(0);

/// How long a client is told to wait when the spool space is full.
const FULL_RETRY_SECS: u64 = 30;

/// Spooled bytes now (for tests and metrics).
pub fn used_bytes() -> u64 {
    USED.load(Ordering::Relaxed)
}

/// One spool's share of the space; given back on drop.
#[derive(Debug)]
pub struct Reservation {
    limit: u64,
    held: AtomicU64,
}

impl Reservation {
    pub fn new(state: &Context) -> Arc<Self> {
        Arc::new(Self {
            limit: state.config.media.max_spool_bytes(),
            held: AtomicU64::new(0),
        })
    }

    /// Reserves `n` more bytes; an `io::ErrorKind::StorageFull` error when the space
    /// would pass the cap (nothing is reserved then).
    pub fn grow(&self, n: u64) -> io::Result<()> {
        let before = USED.fetch_add(n, Ordering::AcqRel);
        if before.saturating_add(n) > self.limit {
            USED.fetch_sub(n, Ordering::AcqRel);
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "the media spool space ([media] max_spool_mb) is full",
            ));
        }
        self.held.fetch_add(n, Ordering::AcqRel);
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        USED.fetch_sub(*self.held.get_mut(), Ordering::AcqRel);
    }
}

/// 503 `spool_full` with Retry-After.
pub fn full() -> AppError {
    AppError::Unavailable {
        code: ErrorCode::SpoolFull,
        message: "the server's media spool space is full; retry in a moment".into(),
        retry_after_secs: Some(FULL_RETRY_SECS),
    }
}

fn uploads() -> &'static Mutex<HashMap<String, u32>> {
    static UPLOADS: OnceLock<Mutex<HashMap<String, u32>>> = OnceLock::new();
    UPLOADS.get_or_init(Default::default)
}

/// One of a user's uploads in progress; the slot is freed on drop.
#[derive(Debug)]
pub struct UploadSlot {
    user_id: String,
}

/// Takes an upload slot of `user_id`: 429 `too_many_uploads` when all
/// `[media] max_concurrent_uploads` are in use.
pub fn upload_slot(state: &Context, user_id: &str) -> AppResult<UploadSlot> {
    let cap = state.config.media.max_concurrent_uploads;
    let mut map = uploads().lock().unwrap_or_else(|e| e.into_inner());
    let n = map.entry(user_id.to_owned()).or_insert(0);
    if *n >= cap {
        return Err(AppError::TooManyRequests {
            code: ErrorCode::TooManyUploads,
            message: format!(
                "at most {cap} uploads at once per user ([media] max_concurrent_uploads); \
                 wait for one to finish"
            ),
            retry_after_secs: None,
        });
    }
    *n += 1;
    Ok(UploadSlot {
        user_id: user_id.to_owned(),
    })
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        let mut map = uploads().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.user_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.user_id);
            }
        }
    }
}
