//! Commands on the selected mailbox: fetching, flags, moves, APPEND, CREATE and IDLE.

use std::collections::HashSet;
use std::time::Duration;

use async_imap::types::Flag;
use futures_util::TryStreamExt;

use super::{timed, Caps, Result, Session};

/// A message as fetched: UID, flags, size and the whole RFC 5322 text.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
    pub raw: Vec<u8>,
}

/// Flags of one UID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagState {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
}

fn flags_of(f: &async_imap::types::Fetch) -> (bool, bool) {
    let mut seen = false;
    let mut flagged = false;
    for flag in f.flags() {
        match flag {
            Flag::Seen => seen = true,
            Flag::Flagged => flagged = true,
            _ => {}
        }
    }
    (seen, flagged)
}

/// UIDs of every message in the selected mailbox.
pub async fn all_uids(s: &mut Session) -> Result<HashSet<u32>> {
    timed("UID SEARCH", async { Ok(s.uid_search("ALL").await?) }).await
}

/// Whole messages by UID set (`BODY.PEEK[]`: fetching does not mark them read).
pub async fn fetch_messages(s: &mut Session, uid_set: &str) -> Result<Vec<Fetched>> {
    timed("UID FETCH", async {
        let fetches: Vec<_> = s
            .uid_fetch(uid_set, "(UID FLAGS BODY.PEEK[])")
            .await?
            .try_collect()
            .await?;
        Ok(fetches
            .iter()
            .filter_map(|f| {
                let (seen, flagged) = flags_of(f);
                Some(Fetched {
                    uid: f.uid?,
                    seen,
                    flagged,
                    raw: f.body()?.to_vec(),
                })
            })
            .collect())
    })
    .await
}

/// Flags of the messages in `uid_set`; with `changed_since` (CONDSTORE) only those changed
/// after that modification sequence.
pub async fn fetch_flags(
    s: &mut Session,
    uid_set: &str,
    changed_since: Option<u64>,
) -> Result<Vec<FlagState>> {
    let query = match changed_since {
        Some(m) => format!("(UID FLAGS) (CHANGEDSINCE {m})"),
        None => "(UID FLAGS)".to_owned(),
    };
    timed("UID FETCH FLAGS", async {
        let fetches: Vec<_> = s.uid_fetch(uid_set, &query).await?.try_collect().await?;
        Ok(fetches
            .iter()
            .filter_map(|f| {
                let (seen, flagged) = flags_of(f);
                Some(FlagState {
                    uid: f.uid?,
                    seen,
                    flagged,
                })
            })
            .collect())
    })
    .await
}

/// `UID STORE <set> +FLAGS|-FLAGS (<flag>)`.
pub async fn store_flag(s: &mut Session, uid_set: &str, add: bool, flag: &str) -> Result<()> {
    let op = if add {
        "+FLAGS.SILENT"
    } else {
        "-FLAGS.SILENT"
    };
    timed("UID STORE", async {
        let _: Vec<_> = s
            .uid_store(uid_set, format!("{op} ({flag})"))
            .await?
            .try_collect()
            .await?;
        Ok(())
    })
    .await
}

/// Moves messages to another mailbox (MOVE when offered, else COPY + delete).
pub async fn move_uids(s: &mut Session, caps: Caps, uid_set: &str, to: &str) -> Result<()> {
    if caps.mv {
        return timed("UID MOVE", async { Ok(s.uid_mv(uid_set, to).await?) }).await;
    }
    copy_uids(s, uid_set, to).await?;
    expunge_uids(s, caps, uid_set).await
}

pub async fn copy_uids(s: &mut Session, uid_set: &str, to: &str) -> Result<()> {
    timed("UID COPY", async { Ok(s.uid_copy(uid_set, to).await?) }).await
}

/// Deletes messages for good: `\Deleted`, then UID EXPUNGE (UIDPLUS) or EXPUNGE.
pub async fn expunge_uids(s: &mut Session, caps: Caps, uid_set: &str) -> Result<()> {
    store_flag(s, uid_set, true, "\\Deleted").await?;
    timed("EXPUNGE", async {
        if caps.uidplus {
            let _: Vec<_> = s.uid_expunge(uid_set).await?.try_collect().await?;
        } else {
            let _: Vec<_> = s.expunge().await?.try_collect().await?;
        }
        Ok(())
    })
    .await
}

pub async fn append(s: &mut Session, mailbox: &str, flags: &str, raw: &[u8]) -> Result<()> {
    timed("APPEND", async {
        Ok(s.append(mailbox, Some(flags), None, raw).await?)
    })
    .await
}

pub async fn create_mailbox(s: &mut Session, name: &str) -> Result<()> {
    timed("CREATE", async { Ok(s.create(name).await?) }).await?;
    // Subscribing is a courtesy for other clients; a refusal changes nothing here.
    let _ = timed("SUBSCRIBE", async { Ok(s.subscribe(name).await?) }).await;
    Ok(())
}

/// Waits in IDLE on the selected mailbox until the server reports a change (true), the
/// timeout passes or `wake` resolves (false). Returns the session for further commands.
///
/// A change the server reports between the SELECT and the IDLE's continuation lands in
/// the session's unsolicited responses, not in the IDLE stream: anything there once IDLE
/// is running counts as a change at once (what came before is drained first).
pub async fn idle(
    s: Session,
    timeout: Duration,
    wake: impl std::future::Future<Output = ()>,
) -> Result<(Session, bool)> {
    while s.unsolicited_responses.try_recv().is_ok() {}
    let unsolicited = s.unsolicited_responses.clone();
    let mut handle = s.idle();
    timed("IDLE", async { Ok(handle.init().await?) }).await?;
    if unsolicited.try_recv().is_ok() {
        let s = timed("DONE", async { Ok(handle.done().await?) }).await?;
        return Ok((s, true));
    }
    let changed = {
        let (fut, stop) = handle.wait_with_timeout(timeout);
        tokio::pin!(fut);
        tokio::pin!(wake);
        let res = tokio::select! {
            r = &mut fut => r,
            _ = &mut wake => {
                drop(stop);
                fut.await
            }
        };
        matches!(res?, async_imap::extensions::idle::IdleResponse::NewData(_))
    };
    let s = timed("DONE", async { Ok(handle.done().await?) }).await?;
    Ok((s, changed))
}

pub async fn logout(mut s: Session) {
    let _ = tokio::time::timeout(Duration::from_secs(5), s.logout()).await;
}
