//! Shapes of the e-mail routes that act: thread actions, compose, labels (the read views
//! are in `views`).

use poem_openapi::{Enum, Object};

use crate::error::AppResult;
use crate::services::email::actions::{self, Action, Flag};
use crate::services::email::threads::Label;

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "EmailThreadAction", rename_all = "camelCase")]
pub enum ThreadAction {
    Read,
    Unread,
    Star,
    Unstar,
    Archive,
    Unarchive,
    Trash,
    Delete,
    AddLabel,
    RemoveLabel,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailThreadActionRequest")]
pub struct ThreadActionRequest {
    pub action: ThreadAction,
    /// The label's id, for `addLabel` and `removeLabel`.
    pub label: Option<String>,
}

impl ThreadActionRequest {
    /// What the action does on the server; 400 naming `label` when addLabel or
    /// removeLabel comes without one.
    pub fn into_action(self) -> AppResult<Action> {
        let label = || actions::required_label(self.label.as_deref());
        Ok(match self.action {
            ThreadAction::Read => Action::SetFlag(Flag::Seen, true),
            ThreadAction::Unread => Action::SetFlag(Flag::Seen, false),
            ThreadAction::Star => Action::SetFlag(Flag::Flagged, true),
            ThreadAction::Unstar => Action::SetFlag(Flag::Flagged, false),
            ThreadAction::Archive => Action::Archive,
            ThreadAction::Unarchive => Action::Unarchive,
            ThreadAction::Trash => Action::Trash,
            ThreadAction::Delete => Action::Delete,
            ThreadAction::AddLabel => Action::AddLabel(label()?),
            ThreadAction::RemoveLabel => Action::RemoveLabel(label()?),
        })
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailComposeRequest", rename_all = "camelCase")]
pub struct ComposeRequest {
    /// The mailbox to send with; default: the replied or forwarded message's, else the
    /// user's first.
    pub account_id: Option<String>,
    /// `"addr"` or `"Name <addr>"`; at least one, at most 100 recipients in all.
    pub to: Vec<String>,
    pub cc: Option<Vec<String>>,
    pub bcc: Option<Vec<String>>,
    /// One line, up to 998 characters.
    pub subject: String,
    /// The text/plain body, up to 1 MiB.
    pub text: String,
    /// An optional text/html alternative.
    pub html: Option<String>,
    /// Id of the message replied to: `In-Reply-To`/`References` are set and the reply
    /// joins its thread.
    pub reply_to: Option<String>,
    /// Id of a message to forward: its headers and text are quoted below `text`.
    pub forward: Option<String>,
    /// A signature appended after `-- `.
    pub signature_id: Option<String>,
    /// `uploadId`s from `POST /api/email/attachments` (at most 50): sent as attachment
    /// parts of a multipart/mixed message, byte-identical. 404 for an unknown upload (or
    /// another user's); 413 when they add up past `[email] max_attachments_mb`. Sent
    /// uploads are dropped.
    pub attachments: Option<Vec<String>>,
    /// With `forward`: the original's files go along as attachments, byte-identical with
    /// their names and types. They are fetched from the mail server when the message is
    /// sent, each file part alone (BODYSTRUCTURE, then the part in 1 MiB pieces), never
    /// the whole original, and count towards `[email] max_attachments_mb` (413 beyond).
    /// 409 `forwarded_message_gone` when the original was moved or deleted on the server
    /// meanwhile: nothing is sent.
    pub include_attachments: Option<bool>,
    /// 0 to 60 (default 0: sent before the answer, 201). More than 0: held that long
    /// ("undo send"), answered 202 `{outboxId, sendAt}`; `DELETE /api/email/outbox/{outboxId}`
    /// before `sendAt` cancels it.
    pub undo_seconds: Option<u32>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailComposeResult", rename_all = "camelCase")]
pub struct ComposeResult {
    /// The sent message (as filed in Sent).
    pub id: String,
    pub thread_id: String,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "EmailLabelType", rename_all = "lowercase")]
pub enum LabelType {
    /// INBOX and the SPECIAL-USE mailboxes (Sent, Drafts, Trash, Junk, Archive).
    System,
    User,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailLabel")]
pub struct LabelView {
    /// The mailbox name (e.g. `INBOX`): pass as `label` to filter threads.
    pub id: String,
    pub name: String,
    #[oai(rename = "type")]
    pub kind: LabelType,
    /// Unread messages.
    pub unread: i64,
    /// Messages.
    pub total: i64,
}

impl From<Label> for LabelView {
    fn from(l: Label) -> Self {
        Self {
            id: l.id,
            name: l.name,
            kind: if l.system {
                LabelType::System
            } else {
                LabelType::User
            },
            unread: l.unread,
            total: l.total,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailLabelList")]
pub struct LabelList {
    pub labels: Vec<LabelView>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailLabelCreateRequest", rename_all = "camelCase")]
pub struct LabelCreateRequest {
    /// 1 to 200 characters; becomes a mailbox on the server.
    pub name: String,
    /// The account to create it in; default: the user's first.
    pub account_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailDeleted", rename_all = "camelCase")]
pub struct Deleted {
    pub message: String,
    pub deleted_id: String,
}
