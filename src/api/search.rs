//! `GET /api/search`: encrypted full-text search over the caller's messages (and e-mail
//! once it is stored).

use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Enum, Object, OpenApi};

use super::messages::EncryptedContent;
use super::security::TokenAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::services::search::{self, SearchHit, SearchPage, SearchParams, SenderText, SnippetText};
use crate::state::AppState;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "SearchResultKind", rename_all = "lowercase")]
pub enum ResultKind {
    Message,
    Email,
}

/// A highlighted range of the snippet, in characters (Unicode code points) from its start,
/// `end` exclusive.
#[derive(Debug, Object)]
#[oai(rename = "SearchHighlight")]
pub struct HighlightView {
    pub start: u64,
    pub end: u64,
}

/// One match.
#[derive(Debug, Object)]
#[oai(rename = "SearchResult", rename_all = "camelCase")]
pub struct SearchResultView {
    /// `message` (chat) or `email`.
    pub kind: ResultKind,
    /// Message id (UUID, as in history) or e-mail message id.
    pub id: String,
    /// Room of a message.
    #[oai(skip_serializing_if_is_none)]
    pub room_id: Option<String>,
    /// Thread of an e-mail.
    #[oai(skip_serializing_if_is_none)]
    pub thread_id: Option<String>,
    /// Matrix ID of a message's sender; null for e-mail.
    pub sender_id: Option<String>,
    /// A message's sender as the history names them (`senderName` of message objects): the
    /// display name in that room when the message was sent, else the localpart of
    /// `senderId`. From the user's own stored names, never asked of the homeserver. Present
    /// for messages wherever `snippet` is text; absent for e-mail and where the snippet is
    /// sealed (then it is in `encryptedSender`).
    #[oai(skip_serializing_if_is_none)]
    pub sender_name: Option<String>,
    /// With `senderName`: the member avatar route
    /// (`/api/rooms/{roomId}/members/{userId}/avatar`) when the sender had an avatar when
    /// the message was sent; null otherwise, and for e-mail.
    pub sender_avatar_url: Option<String>,
    /// Where the snippet is sealed (`encryptedSnippet`), a message's sender instead: the
    /// JSON `{"senderName": "…", "senderAvatarUrl": "…" | null}` sealed the same way.
    #[oai(skip_serializing_if_is_none)]
    pub encrypted_sender: Option<EncryptedContent>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The text around the first match (at most 200 characters, "…" where cut). Personal
    /// tokens, and native sessions of users without a registered key.
    #[oai(skip_serializing_if_is_none)]
    pub snippet: Option<String>,
    /// Native sessions of users with a registered key: the snippet (UTF-8 text) sealed to
    /// that key, the same envelope as message content (one ephemeral key per response).
    #[oai(skip_serializing_if_is_none)]
    pub encrypted_snippet: Option<EncryptedContent>,
    /// Where the query matched inside the snippet.
    pub highlights: Vec<HighlightView>,
}

#[derive(Debug, Object)]
#[oai(rename = "SearchPage", rename_all = "camelCase")]
pub struct SearchPageView {
    /// Newest first.
    pub results: Vec<SearchResultView>,
    /// Pass as `cursor` for the next page (same `q` and filters); null at the end. A page
    /// may be short, even empty, with a `nextCursor`: keep following it.
    pub next_cursor: Option<String>,
}

impl From<SearchHit> for SearchResultView {
    fn from(h: SearchHit) -> Self {
        let email = h.kind == search::KIND_EMAIL;
        let (snippet, encrypted_snippet) = match h.snippet {
            SnippetText::Plain(s) => (Some(s), None),
            SnippetText::Sealed {
                ephemeral_pubkey,
                nonce,
                ciphertext,
            } => (
                None,
                Some(EncryptedContent {
                    ephemeral_pubkey,
                    nonce,
                    ciphertext,
                }),
            ),
        };
        let (sender_name, sender_avatar_url, encrypted_sender) = sender_fields(h.sender);
        Self {
            kind: if email {
                ResultKind::Email
            } else {
                ResultKind::Message
            },
            id: h.id,
            room_id: (!email).then(|| h.scope.clone()),
            thread_id: email.then_some(h.scope),
            sender_id: h.sender_id,
            sender_name,
            sender_avatar_url,
            encrypted_sender,
            timestamp: h.timestamp,
            snippet,
            encrypted_snippet,
            highlights: h
                .highlights
                .into_iter()
                .map(|x| HighlightView {
                    start: x.start as u64,
                    end: x.end as u64,
                })
                .collect(),
        }
    }
}

/// `senderName`, `senderAvatarUrl` and `encryptedSender` of a result.
fn sender_fields(
    sender: Option<SenderText>,
) -> (Option<String>, Option<String>, Option<EncryptedContent>) {
    match sender {
        Some(SenderText::Plain(s)) => (Some(s.name), s.avatar_url, None),
        Some(SenderText::Sealed {
            ephemeral_pubkey,
            nonce,
            ciphertext,
        }) => {
            let sealed = EncryptedContent {
                ephemeral_pubkey,
                nonce,
                ciphertext,
            };
            (None, None, Some(sealed))
        }
        None => (None, None, None),
    }
}

impl From<SearchPage> for SearchPageView {
    fn from(p: SearchPage) -> Self {
        Self {
            results: p.results.into_iter().map(Into::into).collect(),
            next_cursor: p.next_cursor,
        }
    }
}

pub struct SearchApi;

#[OpenApi(tag = "ApiTags::Search")]
impl SearchApi {
    /// Search messages
    ///
    /// Full-text search over the caller's stored messages across every room (and e-mail,
    /// `kind: "email"`, once mailboxes are connected), newest first. `q` holds words and
    /// `"quoted phrases"`; a result has all of them. A word of 3 or more characters also
    /// matches words it begins ("addr" finds "address"); shorter words match whole words
    /// only; a quoted phrase matches exactly (whole words, in order). Case and diacritics
    /// are ignored ("muller" finds "Müller").
    ///
    /// The index is encrypted: words are stored only as keyed hashes (HMAC-SHA256 under a
    /// key derived from the user's data key), never in plaintext; `DELETE /api/keys`
    /// destroys it. Every candidate is decrypted and checked before it is returned.
    ///
    /// Native sessions get each snippet sealed to their registered X25519 key
    /// (`encryptedSnippet`), or as text before a key is registered; personal tokens get
    /// `snippet` as text. Message results name their sender as message objects do
    /// (`senderName`, `senderAvatarUrl`; sealed as `encryptedSender` where the snippet is
    /// sealed), from the caller's own stored names. Personal tokens need an explicit opt-in for this route
    /// (`PATCH /api/developer/tokens/{id}` `{"optIn": true}`), whenever they were created:
    /// it reads across every room at once. 400 `invalid_request` for a missing `q`, a
    /// `limit` outside 1 to 100, an unknown `platform`, a bad `after`/`before`/`cursor`;
    /// 409 `NO_SIGNING_KEY` after the user deleted their keys.
    #[oai(path = "/api/search", method = "get", operation_id = "search")]
    #[allow(clippy::too_many_arguments)]
    async fn search(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Words and "quoted phrases" (at most 500 characters).
        q: Query<Option<String>>,
        /// Only this room.
        #[oai(name = "roomId")]
        room_id: Query<Option<String>>,
        /// Only rooms of this platform: whatsapp, telegram, discord, or matrix (no bridge).
        platform: Query<Option<String>>,
        /// Only messages of this Matrix ID.
        sender: Query<Option<String>>,
        /// Only after this time (exclusive): milliseconds or RFC 3339.
        after: Query<Option<String>>,
        /// Only before this time (exclusive): milliseconds or RFC 3339.
        before: Query<Option<String>>,
        /// `nextCursor` of the previous page.
        cursor: Query<Option<String>>,
        /// Page size, 1 to 100 (default 20).
        limit: Query<Option<i64>>,
    ) -> Result<Json<SearchPageView>, AppError> {
        let params = SearchParams {
            q: q.0,
            room_id: room_id.0,
            platform: platform.0,
            sender: sender.0,
            after: after.0,
            before: before.0,
            cursor: cursor.0,
            limit: limit.0,
        };
        let page = search::search(&state, &auth.0, params).await?;
        Ok(Json(page.into()))
    }
}
