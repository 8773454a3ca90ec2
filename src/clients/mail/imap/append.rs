//! APPEND of a message given in pieces, so a large message (a 20 MB attachment) is never
//! held whole: async-imap's own `append` takes the message as one slice. The command goes
//! through async-imap (`run_command`), the server's answers are read and parsed by it
//! (`read_response`, imap-proto's `Response`); only the literal's bytes are written here,
//! straight to the session's stream, after the server's continuation.

use std::io;

use async_imap::imap_proto::{RequestId, Response, Status};
use tokio::io::AsyncWriteExt;

use super::{timed, ImapError, Result, Session};

/// `"name"` as an IMAP quoted string (backslash and quote escaped); a name with CR or LF
/// cannot be one.
fn quoted(name: &str) -> Result<String> {
    if name.contains(['\r', '\n']) {
        return Err(ImapError::Protocol(
            "a mailbox name holds a line break".into(),
        ));
    }
    Ok(format!(
        "\"{}\"",
        name.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

/// `APPEND <mailbox> <flags> {len}` and the message from `pieces` (exactly `len` bytes).
/// Each write and each answer runs under the step deadline. A piece that fails (its source
/// could not be read) ends the connection before the literal is complete, so the server
/// stores nothing ([`ImapError::Source`]); the session cannot be used after that.
pub async fn append_pieces(
    s: &mut Session,
    mailbox: &str,
    flags: &str,
    len: u64,
    pieces: impl Iterator<Item = io::Result<Vec<u8>>>,
) -> Result<()> {
    let command = format!("APPEND {} {flags} {{{len}}}", quoted(mailbox)?);
    let id = timed("APPEND", async { Ok(s.run_command(command).await?) }).await?;
    timed("APPEND", continuation(s, &id)).await?;
    let mut written = 0u64;
    for piece in pieces {
        let piece = match piece {
            Ok(p) => p,
            Err(e) => return Err(abandon(s, ImapError::Source(e.to_string())).await),
        };
        written += piece.len() as u64;
        if written > len {
            let e = ImapError::Source(format!("the message is longer than its {len} bytes"));
            return Err(abandon(s, e).await);
        }
        timed("APPEND", async { Ok(s.get_mut().write_all(&piece).await?) }).await?;
    }
    if written != len {
        let e = ImapError::Source(format!("the message has {written} bytes, not {len}"));
        return Err(abandon(s, e).await);
    }
    timed("APPEND", async {
        s.get_mut().write_all(b"\r\n").await?;
        Ok(s.get_mut().flush().await?)
    })
    .await?;
    timed("APPEND", completion(s, &id)).await
}

/// Closes the connection mid-literal (the server drops the incomplete APPEND).
async fn abandon(s: &mut Session, e: ImapError) -> ImapError {
    let _ = tokio::time::timeout(super::step_timeout(), s.get_mut().shutdown()).await;
    e
}

/// What a tagged answer says: OK, or the server's refusal.
fn outcome(status: &Status, information: Option<&str>) -> Result<()> {
    match status {
        Status::Ok => Ok(()),
        _ => Err(ImapError::Refused(format!(
            "APPEND: {}",
            information.unwrap_or("refused")
        ))),
    }
}

/// Waits for the server's go-ahead (`+`) for the literal; a tagged answer instead is a
/// refusal (no such mailbox, a message too large).
async fn continuation(s: &mut Session, id: &RequestId) -> Result<()> {
    loop {
        let Some(r) = s.read_response().await? else {
            return Err(ImapError::Unreachable(
                "connection lost during APPEND".into(),
            ));
        };
        match r.parsed() {
            Response::Continue(_) => return Ok(()),
            Response::Done {
                tag,
                status,
                outcome: o,
            } if tag == id => {
                outcome(status, o.information.as_deref())?;
                return Err(ImapError::Protocol(
                    "APPEND ended before the message was sent".into(),
                ));
            }
            // Untagged news (EXISTS, FETCH of another mailbox…): the next sync sees it.
            _ => {}
        }
    }
}

/// Reads until the tagged completion of the APPEND.
async fn completion(s: &mut Session, id: &RequestId) -> Result<()> {
    loop {
        let Some(r) = s.read_response().await? else {
            return Err(ImapError::Unreachable(
                "connection lost during APPEND".into(),
            ));
        };
        if let Response::Done {
            tag,
            status,
            outcome: o,
        } = r.parsed()
        {
            if tag == id {
                return outcome(status, o.information.as_deref());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailbox_names_are_quoted() {
        assert_eq!(quoted("Sent").unwrap(), "\"Sent\"");
        assert_eq!(quoted("a\"b\\c").unwrap(), "\"a\\\"b\\\\c\"");
        assert!(quoted("a\r\nb").is_err());
    }
}
