//! Commands on the selected mailbox: fetching, flags, moves, APPEND, CREATE and IDLE.

use std::collections::HashSet;
use std::time::Duration;

use async_imap::types::{Fetch, Flag};
use futures_util::TryStreamExt;

use super::{timed, Caps, ImapError, Result, Session};

/// A message as fetched: UID, flags, the size the server announced and the RFC 5322 text
/// (only its header and the first part of its body when `truncated`).
#[derive(Debug, Clone)]
pub struct Fetched {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
    pub size: u64,
    pub truncated: bool,
    pub raw: Vec<u8>,
}

/// Flags of one UID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagState {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
}

pub(super) fn flags_of(f: &Fetch) -> (bool, bool) {
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

/// Messages one mailbox may list (a server inventing more is refused: the list of UIDs
/// and sizes is held in memory).
pub const MAX_LISTED: usize = 1_000_000;

/// Runs `UID FETCH <set> <query>` and hands each response to `each` as it arrives (none is
/// kept: each holds its own read buffer). Each response must come within the deadline;
/// unsolicited responses are dropped as they come, so none piles up behind the fetch.
pub(super) async fn for_each_fetch(
    s: &mut Session,
    uid_set: &str,
    query: &str,
    mut each: impl FnMut(&Fetch) -> Result<()>,
) -> Result<()> {
    let unsolicited = s.unsolicited_responses.clone();
    let mut stream = timed("UID FETCH", async {
        Ok(s.uid_fetch(uid_set, query).await?)
    })
    .await?;
    while let Some(f) = timed("UID FETCH", async { Ok(stream.try_next().await?) }).await? {
        while unsolicited.try_recv().is_ok() {}
        each(&f)?;
    }
    Ok(())
}

/// UID and announced size (RFC822.SIZE) of every message in the selected mailbox, read
/// as one FETCH line per message (no single line grows with the mailbox).
pub async fn uid_sizes(s: &mut Session) -> Result<Vec<(u32, u64)>> {
    let mut out = Vec::new();
    for_each_fetch(s, "1:*", "(UID RFC822.SIZE)", |f| {
        if let Some(uid) = f.uid {
            if out.len() >= MAX_LISTED {
                return Err(ImapError::Protocol(format!(
                    "the mailbox lists more than {MAX_LISTED} messages"
                )));
            }
            out.push((uid, u64::from(f.size.unwrap_or(0))));
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// UIDs of every message in the selected mailbox.
pub async fn all_uids(s: &mut Session) -> Result<HashSet<u32>> {
    Ok(uid_sizes(s).await?.into_iter().map(|(u, _)| u).collect())
}

/// How much of a message to fetch: all of it, or its header and the first `part` bytes
/// of its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    Whole,
    Partial(u64),
}

/// Messages by UID set (`BODY.PEEK[]`: fetching does not mark them read), at most
/// `budget` bytes in all: a server sending more than that (more than the sizes it
/// announced) is cut off with an error.
pub async fn fetch_messages(
    s: &mut Session,
    uid_set: &str,
    extent: Extent,
    budget: u64,
) -> Result<Vec<Fetched>> {
    let query = match extent {
        Extent::Whole => "(UID FLAGS RFC822.SIZE BODY.PEEK[])".to_owned(),
        Extent::Partial(n) => {
            format!("(UID FLAGS RFC822.SIZE BODY.PEEK[HEADER] BODY.PEEK[TEXT]<0.{n}>)")
        }
    };
    let mut out = Vec::new();
    let mut total = 0u64;
    for_each_fetch(s, uid_set, &query, |f| {
        let Some(uid) = f.uid else { return Ok(()) };
        let raw = match extent {
            Extent::Whole => match f.body() {
                Some(b) => b.to_vec(),
                None => return Ok(()),
            },
            Extent::Partial(_) => {
                let mut raw = f.header().unwrap_or_default().to_vec();
                raw.extend_from_slice(f.text().unwrap_or_default());
                raw
            }
        };
        total += raw.len() as u64;
        if total > budget {
            return Err(ImapError::Protocol(format!(
                "the server sent more than the {budget} bytes it announced for the messages"
            )));
        }
        let (seen, flagged) = flags_of(f);
        out.push(Fetched {
            uid,
            seen,
            flagged,
            size: u64::from(f.size.unwrap_or(0)).max(raw.len() as u64),
            truncated: extent != Extent::Whole,
            raw,
        });
        Ok(())
    })
    .await?;
    Ok(out)
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
    let mut out = Vec::new();
    for_each_fetch(s, uid_set, &query, |f| {
        if let Some(uid) = f.uid {
            if out.len() >= MAX_LISTED {
                return Err(ImapError::Protocol(format!(
                    "the server sent flags of more than {MAX_LISTED} messages"
                )));
            }
            let (seen, flagged) = flags_of(f);
            out.push(FlagState { uid, seen, flagged });
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// `UID STORE <set> +FLAGS|-FLAGS (<flag>)`.
pub async fn store_flag(s: &mut Session, uid_set: &str, add: bool, flag: &str) -> Result<()> {
    let op = if add {
        "+FLAGS.SILENT"
    } else {
        "-FLAGS.SILENT"
    };
    timed("UID STORE", async {
        let mut st = s.uid_store(uid_set, format!("{op} ({flag})")).await?;
        // Read and dropped one by one: nothing of the answer is kept.
        while st.try_next().await?.is_some() {}
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
            let mut st = std::pin::pin!(s.uid_expunge(uid_set).await?);
            while st.as_mut().try_next().await?.is_some() {}
        } else {
            let mut st = std::pin::pin!(s.expunge().await?);
            while st.as_mut().try_next().await?.is_some() {}
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
