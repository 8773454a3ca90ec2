//! The native history page: each message's content (with the sender's name and avatar
//! route) sealed to the caller's registered
//! X25519 key (the envelope of `crypto::envelope`), written in its wire form (`EncryptedMessagePage` of the API
//! document).
//!
//! One page, one ephemeral key: the X25519 agreement is done once per page
//! ([`crypto::Sealer`]) and each envelope carries its own random nonce, so the page costs
//! one scalar multiplication instead of one per message. Clients open each envelope with
//! the contract's recipe regardless (its `ephemeralPubkey` is in every envelope). Rendered
//! pages are cached ([`crate::services::pages`], which explains why serving a sealed page
//! again is safe).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use rusqlite::Connection;

use super::cache::KeyTag;
use super::{is_mine, open, rich};
use crate::crypto::{self, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::senders::Senders;
use crate::store::messages::MessageRow;
use crate::store::users::UserRow;

/// The plaintext sealed into a native envelope: the text, the event content and the
/// rich fields ([`rich::Rich`]: `media`, `replyTo`, `editedAt`, `reactions`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Plaintext<'a> {
    body: &'a str,
    content: &'a Value,
    msgtype: &'a str,
    /// The sender's display name when the message was sent.
    sender_name: &'a str,
    /// The member avatar route, or null.
    sender_avatar_url: Option<&'a str>,
    #[serde(flatten)]
    rich: rich::Rich,
}

/// `EncryptedContent` of the API document, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EnvelopeOut<'a> {
    ephemeral_pubkey: &'a str,
    nonce: String,
    ciphertext: String,
}

/// `EncryptedMessage` of the API document, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageOut<'a> {
    id: &'a str,
    event_id: &'a str,
    room_id: &'a str,
    sender_id: &'a str,
    timestamp: i64,
    msgtype: &'a str,
    platform: Option<&'a str>,
    importance: f64,
    is_mine: bool,
    edited: bool,
    redacted: bool,
    encrypted_content: EnvelopeOut<'a>,
}

#[derive(Serialize)]
struct PageOut<'a> {
    messages: Vec<MessageOut<'a>>,
}

/// Opens each row (rows whose content is gone are left out), seals its content to
/// `recipient` under one ephemeral key and writes the page.
pub(super) fn seal_page(
    c: &Connection,
    user: &UserRow,
    dek: &DataKey,
    recipient: &[u8; 32],
    rows: Vec<(MessageRow, Option<String>)>,
) -> AppResult<Bytes> {
    let mut reactions = rich::reactions_of(
        c,
        dek,
        &user.id,
        user.matrix_user_id.as_deref(),
        rows.iter()
            .filter(|(r, _)| !r.redacted)
            .map(|(r, _)| r.event_id.as_str()),
    )?;
    let key = KeyTag::of(dek);
    let opened: Vec<_> = rows
        .iter()
        .filter_map(|(row, platform)| Some((row, platform, open(dek, key, row)?)))
        .collect();
    let sealer = page_sealer(recipient, !opened.is_empty())?;
    let ephemeral = sealer
        .as_ref()
        .map(|s| STANDARD.encode(s.ephemeral_pubkey()))
        .unwrap_or_default();
    let mut senders = Senders::new(c, dek, &user.id);
    let mut plaintext = Vec::with_capacity(512);
    let mut messages = Vec::with_capacity(opened.len());
    for (row, platform, content) in opened {
        plaintext.clear();
        let sender = senders.of(row)?;
        let sealed = Plaintext {
            body: if row.redacted { "" } else { &content.body },
            content: &content.content,
            msgtype: &row.msgtype,
            sender_name: &sender.name,
            sender_avatar_url: sender.avatar_url.as_deref(),
            rich: rich::rich(
                &row.msgtype,
                &content.content,
                row.edited_at,
                reactions.remove(&row.event_id).unwrap_or_default(),
            ),
        };
        serde_json::to_writer(&mut plaintext, &sealed).map_err(AppError::internal)?;
        let Some(sealer) = &sealer else { break };
        let envelope = sealer.seal(&plaintext);
        let encrypted_content = EnvelopeOut {
            ephemeral_pubkey: &ephemeral,
            nonce: STANDARD.encode(envelope.nonce),
            ciphertext: STANDARD.encode(&envelope.ciphertext),
        };
        messages.push(message_out(user, row, platform, encrypted_content));
    }
    let mut body = Vec::with_capacity(640 * messages.len() + 16);
    serde_json::to_writer(&mut body, &PageOut { messages }).map_err(AppError::internal)?;
    Ok(Bytes::from(body))
}

/// The page's sealer: one ephemeral key per page; none for a page with nothing to seal.
fn page_sealer(recipient: &[u8; 32], needed: bool) -> AppResult<Option<crypto::Sealer>> {
    if !needed {
        return Ok(None);
    }
    crypto::Sealer::to(recipient).map(Some).map_err(|_| {
        AppError::conflict(
            ErrorCode::InvalidPublicKey,
            "the registered public key cannot be sealed to (a low-order X25519 point); \
             replace it with PUT /api/keys",
        )
    })
}

/// The clear fields of a native message around its sealed content.
fn message_out<'a>(
    user: &UserRow,
    row: &'a MessageRow,
    platform: &'a Option<String>,
    encrypted_content: EnvelopeOut<'a>,
) -> MessageOut<'a> {
    MessageOut {
        id: &row.id,
        event_id: &row.event_id,
        room_id: &row.room_id,
        sender_id: &row.sender_id,
        timestamp: row.ts,
        msgtype: &row.msgtype,
        platform: platform.as_deref(),
        importance: row.importance,
        is_mine: is_mine(user, row),
        edited: row.edited,
        redacted: row.redacted,
        encrypted_content,
    }
}
