//! What one sync may still cache: a server is untrusted input, so a round caches at most
//! `[email] round_max_messages` / `round_max_mb`, an account at most
//! `max_messages_per_account`, and a user at most `quota_mb` of mail over every account.
//! What does not fit stays on the server (counted as older mail, fetched when a client
//! pages back and there is room again). Also: which messages go into which UID FETCH
//! (batches by bytes, large mail partially).

use crate::config::EmailConfig;
use crate::error::AppError;
use crate::services::Context;

/// Why a round stopped caching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Round,
    Account,
    Quota,
}

impl Limit {
    /// The account's `error` while the limit holds (the cache stays readable).
    pub fn message(self) -> &'static str {
        match self {
            Self::Round => {
                "more new mail than one sync takes; the older part is fetched when a client \
                 pages back"
            }
            Self::Account => {
                "this mailbox holds more messages than this server caches for one account \
                 ([email] max_messages_per_account); newer mail is left on the server"
            }
            Self::Quota => {
                "your mail storage quota on this server is full ([email] quota_mb); new \
                 mail is left on the server"
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Budget {
    round_messages: u64,
    round_bytes: u64,
    account_room: u64,
    quota_room: u64,
    /// The first limit that kept a message out.
    pub hit: Option<Limit>,
}

/// `(messages of the account, bytes of mail of the user)` cached now.
pub async fn usage(
    state: &Context,
    account_id: &str,
    user_id: &str,
) -> Result<(u64, u64), AppError> {
    let (aid, uid) = (account_id.to_owned(), user_id.to_owned());
    state
        .store
        .run(move |c| {
            Ok::<_, AppError>((
                crate::store::email::messages::count_of_account(c, &aid)?,
                crate::store::email::messages::bytes_of_user(c, &uid)?,
            ))
        })
        .await
}

impl Budget {
    /// The room of one round, given what is cached already.
    pub fn new(cfg: &EmailConfig, (account_messages, user_bytes): (u64, u64)) -> Self {
        Self {
            round_messages: u64::from(cfg.round_max_messages),
            round_bytes: cfg.round_max_bytes(),
            account_room: u64::from(cfg.max_messages_per_account).saturating_sub(account_messages),
            quota_room: cfg.quota_bytes().saturating_sub(user_bytes),
            hit: None,
        }
    }

    /// Takes a message of `size` bytes when it fits; records the limit otherwise.
    pub fn take(&mut self, size: u64) -> bool {
        let full = if self.account_room == 0 {
            Some(Limit::Account)
        } else if size > self.quota_room {
            Some(Limit::Quota)
        } else if self.round_messages == 0 || size > self.round_bytes {
            Some(Limit::Round)
        } else {
            None
        };
        if let Some(limit) = full {
            self.hit.get_or_insert(limit);
            return false;
        }
        self.round_messages -= 1;
        self.account_room -= 1;
        self.round_bytes -= size;
        self.quota_room -= size;
        true
    }

    /// Gives back what a message did not use (a partial fetch caches less than its size).
    pub fn refund(&mut self, bytes: u64) {
        self.round_bytes += bytes;
        self.quota_room += bytes;
    }
}

/// How much of the body of a mail over `[email] max_message_mb` is cached: its first
/// 256 KiB (or the cap itself, when smaller).
pub fn partial_body(cfg: &EmailConfig) -> u64 {
    (256 * 1024).min(cfg.max_message_bytes() / 2)
}

/// Messages a UID FETCH asks for at once (and the bytes: `[email] fetch_batch_mb`).
pub const FETCH_BATCH: usize = 100;

/// One UID FETCH: its UIDs, whether whole or partial, and the bytes it may bring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub uids: Vec<u32>,
    pub partial: bool,
    pub bytes: u64,
}

/// Splits `(uid, announced size)` into fetches: whole mail in batches of at most
/// [`FETCH_BATCH`] messages and `fetch_batch_mb`, mail over the cap in partial batches.
/// `bytes` is what the server may send for the batch (the announced sizes, or the
/// partial size, plus a header allowance); a server sending more is cut off.
pub fn batches(cfg: &EmailConfig, msgs: &[(u32, u64)]) -> Vec<Batch> {
    const HEADER_ALLOWANCE: u64 = 256 * 1024;
    let max = cfg.max_message_bytes();
    let limit = cfg.fetch_batch_bytes();
    let mut out: Vec<Batch> = Vec::new();
    let mut whole = Batch {
        uids: Vec::new(),
        partial: false,
        bytes: 0,
    };
    let mut partial = Batch {
        uids: Vec::new(),
        partial: true,
        bytes: 0,
    };
    let part = partial_body(cfg) + HEADER_ALLOWANCE;
    for &(uid, size) in msgs {
        let (batch, cost) = if size > max {
            (&mut partial, part)
        } else {
            (&mut whole, size.max(1))
        };
        if !batch.uids.is_empty() && (batch.uids.len() >= FETCH_BATCH || batch.bytes + cost > limit)
        {
            let done = std::mem::replace(
                batch,
                Batch {
                    uids: Vec::new(),
                    partial: batch.partial,
                    bytes: 0,
                },
            );
            out.push(done);
        }
        batch.uids.push(uid);
        batch.bytes += cost;
    }
    out.extend([whole, partial].into_iter().filter(|b| !b.uids.is_empty()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EmailConfig {
        EmailConfig {
            max_message_mb: 2,
            fetch_batch_mb: 4,
            round_max_messages: 5,
            round_max_mb: 100,
            max_messages_per_account: 1000,
            quota_mb: 1,
            ..EmailConfig::default()
        }
    }

    #[test]
    fn batches_are_bounded_by_bytes_and_large_mail_is_partial() {
        const MB: u64 = 1024 * 1024;
        let msgs = [
            (9, MB),
            (8, MB),
            (7, 3 * MB),
            (6, MB),
            (5, MB),
            (4, MB),
            (3, 10),
        ];
        let b = batches(&cfg(), &msgs);
        assert_eq!(b[0].uids, vec![9, 8, 6, 5], "4 MiB of whole mail");
        assert!(!b[0].partial);
        assert_eq!(b[1].uids, vec![4, 3]);
        assert_eq!(b[2].uids, vec![7]);
        assert!(
            b[2].partial,
            "over max_message_mb: header and the first part"
        );
        assert!(b.iter().all(|x| x.bytes <= 4 * MB));
    }

    #[test]
    fn a_budget_stops_at_the_round_the_account_or_the_quota() {
        let mut b = Budget::new(&cfg(), (0, 0));
        assert!((0..5).all(|_| b.take(10)));
        assert!(!b.take(10));
        assert_eq!(b.hit, Some(Limit::Round));
        let mut b = Budget::new(&cfg(), (0, 1024 * 1024 - 100));
        assert!(b.take(100));
        assert!(!b.take(1));
        assert_eq!(b.hit, Some(Limit::Quota));
        let mut b = Budget::new(&cfg(), (999, 0));
        assert!(b.take(1));
        assert!(!b.take(1));
        assert_eq!(b.hit, Some(Limit::Account));
    }
}
