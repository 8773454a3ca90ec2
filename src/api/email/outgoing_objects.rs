//! The request and response objects of `/api/email/attachments`, `/drafts`, `/outbox` and
//! `/addresses` (their handlers are in `outgoing`).

use chrono::{DateTime, Utc};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};

use super::super::views::AttachmentView;
use crate::services::email::compose::ComposeInput;
use crate::services::email::drafts;
use crate::services::scheduled::to_time;

/// The form of `POST /api/email/attachments` (multipart/form-data).
#[derive(Debug, Object)]
#[oai(rename = "EmailAttachmentUploadForm")]
#[allow(dead_code)]
pub struct UploadForm {
    /// The file (binary). Its part's `filename` names it; its `Content-Type` is the type
    /// the attachment is sent with (`application/octet-stream` when absent).
    pub file: String,
}

/// The multipart body, read field by field as it arrives.
pub type AttachmentUpload = crate::api::streamed_form::StreamedForm<UploadForm>;

#[derive(Debug, Object)]
#[oai(rename = "EmailUpload", rename_all = "camelCase")]
pub struct UploadView {
    /// Pass in `attachments` of compose or a draft.
    pub upload_id: String,
    pub name: String,
    /// Bytes.
    pub size: u64,
    pub mimetype: String,
}

#[derive(ApiResponse)]
pub enum Uploaded {
    #[oai(status = 201)]
    Created(Json<UploadView>),
}

#[derive(Debug, Object)]
#[oai(rename = "EmailHeldResult", rename_all = "camelCase")]
pub struct HeldResult {
    /// For `DELETE /api/email/outbox/{id}` (undo) and `GET /api/email/outbox/{id}`.
    pub outbox_id: String,
    /// When it goes out.
    pub send_at: DateTime<Utc>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailOutboxStatus", rename_all = "camelCase")]
pub struct OutboxView {
    pub outbox_id: String,
    /// `pending` (held), `sending`, `sent`, `failed` (see `error`) or `cancelled`.
    pub status: String,
    pub send_at: DateTime<Utc>,
    /// Why it failed (the mail server's words).
    pub error: Option<String>,
}

#[derive(ApiResponse)]
pub enum NoContent {
    #[oai(status = 204)]
    Done,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailDraftRequest", rename_all = "camelCase")]
pub struct DraftRequest {
    /// The mailbox whose Drafts it goes to (a new draft only; default the user's first).
    pub account_id: Option<String>,
    /// `"addr"` or `"Name <addr>"`; may be empty in a draft.
    pub to: Option<Vec<String>>,
    pub cc: Option<Vec<String>>,
    pub bcc: Option<Vec<String>>,
    pub subject: Option<String>,
    pub text: Option<String>,
    pub html: Option<String>,
    /// A message this draft replies to (its `In-Reply-To`/`References` are kept).
    pub reply_to: Option<String>,
    /// `uploadId`s added to the draft's files (the uploads are then dropped: the files
    /// live in the draft on the mail server).
    pub attachments: Option<Vec<String>>,
    /// On `PUT`: `index`es of the draft's current files to leave out (the rest are kept).
    pub remove_attachments: Option<Vec<u32>>,
}

impl DraftRequest {
    pub(super) fn into_input(self) -> (ComposeInput, Vec<u32>) {
        (
            ComposeInput {
                account_id: self.account_id,
                to: self.to.unwrap_or_default(),
                cc: self.cc.unwrap_or_default(),
                bcc: self.bcc.unwrap_or_default(),
                subject: self.subject.unwrap_or_default(),
                text: self.text.unwrap_or_default(),
                html: self.html,
                reply_to: self.reply_to,
                attachments: self.attachments.unwrap_or_default(),
                ..Default::default()
            },
            self.remove_attachments.unwrap_or_default(),
        )
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailDraftSaved")]
pub struct DraftSaved {
    /// Stays the same across saves.
    pub id: String,
}

#[derive(ApiResponse)]
pub enum DraftCreated {
    #[oai(status = 201)]
    Created(Json<DraftSaved>),
}

#[derive(Debug, Object)]
#[oai(rename = "EmailDraft", rename_all = "camelCase")]
pub struct DraftView {
    pub id: String,
    pub account_id: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// Only in `GET /api/email/drafts/{id}` (read from the server); empty in the list.
    pub bcc: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    pub attachments: Vec<AttachmentView>,
    pub updated_at: DateTime<Utc>,
}

impl From<drafts::Draft> for DraftView {
    fn from(d: drafts::Draft) -> Self {
        Self {
            id: d.id,
            account_id: d.account_id,
            to: d.to,
            cc: d.cc,
            bcc: d.bcc,
            subject: d.subject,
            text: d.text,
            html: d.html,
            attachments: d.attachments.into_iter().map(Into::into).collect(),
            updated_at: to_time(d.updated_at),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailDraftList")]
pub struct DraftList {
    /// Newest first, over every connected mailbox.
    pub drafts: Vec<DraftView>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailDraftSendRequest", rename_all = "camelCase")]
pub struct DraftSendRequest {
    /// 0 to 60 (default 0), as in compose.
    pub undo_seconds: Option<u32>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailAddress", rename_all = "camelCase")]
pub struct AddressView {
    pub name: Option<String>,
    pub address: String,
    pub last_used_at: DateTime<Utc>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailAddressList")]
pub struct AddressList {
    pub addresses: Vec<AddressView>,
}
