//! What every step of ingest shares, below all of them: who is syncing
//! ([`IngestContext`]), one pass over a transaction ([`Pass`], whose per-event steps are
//! methods in `ingest`, `amend` and `reactions`), what the pass found ([`IngestOutcome`]),
//! the msgtypes ingest stores for stickers and undecryptable events, and the scoring of a
//! message. Kept apart so the steps depend on it and not on each other.

use std::collections::{BTreeSet, HashMap};

use rusqlite::Transaction;
use serde_json::Value;

use crate::clients::provisioning::identity::BridgeIdentities;
use crate::crypto::DataKey;
use crate::services::importance::{self, MessageFacts, Reader, Score};
use crate::services::senders::Profile;
use crate::store::conversation::ReceiptRow;

/// Stickers are their own event type; stored with this as their msgtype.
pub const STICKER: &str = "m.sticker";
/// msgtype of a message that could not be decrypted yet; its content is the encrypted
/// event content, kept to decrypt it when its room key arrives.
pub const UNDECRYPTABLE: &str = "m.room.encrypted";
/// Readable text of such a message.
pub const UNDECRYPTABLE_BODY: &str =
    "Unable to decrypt this message yet: its room key has not arrived.";

/// What the worker looked up on the homeserver for a room whose members changed.
#[derive(Debug, Clone, Default)]
pub struct RoomHint {
    /// The room has no `m.room.name` (so its computed name may be refreshed).
    pub unnamed: bool,
    /// Display names of the joined and invited members.
    pub display_names: HashMap<String, String>,
    /// The invited members (a room whose only other person is invited is named after them).
    pub invited: Vec<String>,
}

/// Who is syncing, and what the worker knows beyond the response.
pub struct IngestContext<'a> {
    /// Switchboard user id.
    pub user_id: &'a str,
    /// The user's Matrix identity, for `is_mine`, mentions and receipts.
    pub reader: &'a Reader,
    /// The configured bridges' bots and ghosts (who is trusted).
    pub bridges: &'a BridgeIdentities,
    /// Homeserver lookups for rooms whose members changed (see [`RoomHint`]).
    pub hints: &'a HashMap<String, RoomHint>,
    /// Unix seconds.
    pub now: i64,
}

pub use crate::services::importance::NewMessage;

/// One pass of ingest over a transaction: who is syncing, the data key, and what changed
/// so far. The per-event steps (here and in `amend`) are its methods, so they share these
/// instead of passing them along; `e2ee` applies late-decrypted rows through them too.
pub(super) struct Pass<'a, 't> {
    pub tx: &'a Transaction<'t>,
    pub ctx: &'a IngestContext<'a>,
    pub dek: &'a DataKey,
    pub out: IngestOutcome,
    /// Back-fill: the sender's profile of each message as it was when sent, by event id
    /// ([`super::past_senders`]); empty for a sync, whose member events come in order.
    pub senders_then: HashMap<String, Profile>,
}

#[derive(Debug, Default)]
pub struct IngestOutcome {
    pub new_messages: Vec<NewMessage>,
    /// Edits and redactions applied.
    pub updated_messages: usize,
    /// Rooms whose row, members or messages changed.
    pub changed_rooms: BTreeSet<String>,
    /// Rooms the user is invited to by a trusted inviter (to be joined).
    pub invites: Vec<String>,
    /// Typing and others' receipts, to publish ([`super::conversation`]).
    pub live: Live,
}

impl IngestOutcome {
    /// Nothing stored that a page or a room object shows: no message, edit, room change,
    /// invitation or receipt (typing notices are not stored). Such a response only moved
    /// the sync position.
    pub fn is_quiet(&self) -> bool {
        self.new_messages.is_empty()
            && self.updated_messages == 0
            && self.changed_rooms.is_empty()
            && self.invites.is_empty()
            && self.live.receipts.is_empty()
    }
}

impl<'a, 't> Pass<'a, 't> {
    pub fn new(tx: &'a Transaction<'t>, ctx: &'a IngestContext<'a>, dek: &'a DataKey) -> Self {
        Self {
            tx,
            ctx,
            dek,
            out: IngestOutcome::default(),
            senders_then: HashMap::new(),
        }
    }
}

/// The ephemeral news of one response, published after it is stored.
#[derive(Debug, Default)]
pub struct Live {
    /// (room, who else is typing now) for every room whose typing changed.
    pub typing: Vec<(String, Vec<String>)>,
    /// (room, receipt) for every receipt of another member that moved.
    pub receipts: Vec<(String, ReceiptRow)>,
}

/// The event an edit replaces (`m.relates_to.rel_type == "m.replace"`).
pub(super) fn replaced_event(content: &Value) -> Option<&str> {
    let rel = &content["m.relates_to"];
    (rel["rel_type"] == "m.replace")
        .then(|| rel["event_id"].as_str())
        .flatten()
}

pub(super) fn score(
    ctx: &IngestContext<'_>,
    is_direct: bool,
    content: &Value,
    msgtype: &str,
    is_mine: bool,
) -> Score {
    let mentioned = importance::mentioned_ids(content);
    importance::score(
        ctx.reader,
        &MessageFacts {
            body: content["body"].as_str().unwrap_or_default(),
            msgtype,
            is_mine,
            is_direct,
            mentioned_ids: &mentioned,
        },
    )
}
