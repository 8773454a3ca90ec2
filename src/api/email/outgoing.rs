//! `/api/email/attachments`, `/drafts`, `/outbox`, `/addresses`: what outgoing mail needs
//! (issue #33). Thin handlers over `services::email::{uploads, drafts, outbox, addresses}`.

use std::io;

use bytes::Bytes;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::OpenApi;

use super::{outcome, Composed};
use crate::api::security::{NativeAuth, TokenAuth};
use crate::api::ApiTags;
use crate::error::AppError;
use crate::services::email::{addresses, draft_save, drafts, outbox, uploads};
use crate::services::scheduled::to_time;
use crate::state::AppState;

#[path = "outgoing_objects.rs"]
mod objects;
pub use objects::*;

fn field_stream(
    field: poem::web::Field,
) -> impl futures_util::Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static {
    let reader = field.into_async_read();
    Box::pin(futures_util::stream::unfold(
        Some(reader),
        |reader| async move {
            let mut reader = reader?;
            let mut buf = vec![0u8; uploads::CHUNK];
            match tokio::io::AsyncReadExt::read(&mut reader, &mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok(Bytes::from(buf)), Some(reader)))
                }
                Err(e) => Some((Err(e), None)),
            }
        },
    ))
}

pub struct EmailOutgoingApi;

#[OpenApi(prefix_path = "/api/email", tag = "ApiTags::Email")]
impl EmailOutgoingApi {
    /// Upload an attachment
    ///
    /// multipart/form-data with one part `file`, streamed to disk as it arrives, sealed
    /// under the user's data key (never held whole in memory). Answers 201 `{uploadId,
    /// name, size, mimetype}`; pass `uploadId` in `attachments` of compose or a draft. An
    /// upload is dropped once its message is sent, and 24 h after upload otherwise. 413
    /// `payload_too_large` past `[email] max_attachments_mb` (default 25 MiB, the limit of
    /// one message's files), or when the user already has 100 uploads or four times that
    /// limit waiting. 400 naming `file` when it is missing, empty or has a malformed
    /// Content-Type. Personal tokens allowed (allowlist version 5).
    #[oai(
        path = "/attachments",
        method = "post",
        operation_id = "email_upload_attachment"
    )]
    async fn upload(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        form: AttachmentUpload,
    ) -> Result<Uploaded, AppError> {
        let mut multipart = form.0;
        let field = multipart
            .next_field()
            .await
            .map_err(|e| AppError::invalid("body", format!("malformed multipart: {e}")))?
            .ok_or_else(|| AppError::invalid("file", "is required"))?;
        if field.name() != Some("file") {
            return Err(AppError::invalid(
                field.name().unwrap_or("body"),
                "is not a field of this form (file)",
            ));
        }
        let name = field.file_name().map(str::to_owned);
        let ctype = field.content_type().map(str::to_owned);
        let u = uploads::store(
            &state,
            auth.user_id(),
            name.as_deref(),
            ctype.as_deref(),
            field_stream(field),
        )
        .await?;
        Ok(Uploaded::Created(Json(UploadView {
            upload_id: u.id,
            name: u.name,
            size: u.size,
            mimetype: u.mimetype,
        })))
    }

    /// A held message's state
    ///
    /// `pending` until `sendAt`, then `sending` and `sent` (or `failed` with `error`, in
    /// which case nothing was sent), or `cancelled`. Kept 7 days after it finished. 404
    /// when it is not the caller's. Personal tokens allowed (allowlist version 5).
    #[oai(
        path = "/outbox/:id",
        method = "get",
        operation_id = "email_outbox_get"
    )]
    async fn outbox_get(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// `outboxId` from a 202 of compose or draft send.
        id: Path<String>,
    ) -> Result<Json<OutboxView>, AppError> {
        let s = outbox::status(&state, auth.user_id(), &id).await?;
        Ok(Json(OutboxView {
            outbox_id: s.id,
            status: s.status,
            send_at: to_time(s.send_at),
            error: s.error,
        }))
    }

    /// Undo send
    ///
    /// Cancels a held message before its `sendAt`: 204 and nothing is sent (also for one
    /// already cancelled or failed). 409 `already_sent` once it is being sent or sent; 404
    /// when it is not the caller's. Personal tokens allowed (allowlist version 5).
    #[oai(
        path = "/outbox/:id",
        method = "delete",
        operation_id = "email_outbox_cancel"
    )]
    async fn outbox_cancel(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// `outboxId` from a 202 of compose or draft send.
        id: Path<String>,
    ) -> Result<NoContent, AppError> {
        outbox::cancel(&state, auth.user_id(), &id).await?;
        Ok(NoContent::Done)
    }

    /// List drafts
    ///
    /// The drafts in the Drafts mailbox (SPECIAL-USE `\Drafts`) of every connected
    /// account, those saved by other mail clients included (the mailbox is synced first;
    /// when the server cannot be reached, the cached drafts are listed). Newest first, at
    /// most 200 per account. Native sessions only.
    #[oai(path = "/drafts", method = "get", operation_id = "email_list_drafts")]
    async fn list_drafts(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<DraftList>, AppError> {
        let list = drafts::list(&state, auth.user_id()).await?;
        Ok(Json(DraftList {
            drafts: list.into_iter().map(Into::into).collect(),
        }))
    }

    /// Save a new draft
    ///
    /// APPENDed to the account's Drafts mailbox (created as `Drafts` when the server has
    /// none) with the `\\Draft` flag, as a MIME message built like a sent one (Bcc kept),
    /// files included. 201 `{id}`. 400 naming the field, 404 for an unknown `accountId` or
    /// upload, 413 past `[email] max_attachments_mb`, 502/503 when the mail server refuses
    /// or cannot be reached. Native sessions only.
    #[oai(path = "/drafts", method = "post", operation_id = "email_create_draft")]
    async fn create_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<DraftRequest>,
    ) -> Result<DraftCreated, AppError> {
        let (input, _) = body.0.into_input();
        let id = draft_save::save(&state, auth.user_id(), None, input, &[]).await?;
        Ok(DraftCreated::Created(Json(DraftSaved { id })))
    }

    /// Get a draft
    ///
    /// Read from the mail server (with Bcc). 404 when unknown, another user's, or deleted
    /// meanwhile (e.g. by another client). Native sessions only.
    #[oai(path = "/drafts/:id", method = "get", operation_id = "email_get_draft")]
    async fn get_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Draft id.
        id: Path<String>,
    ) -> Result<Json<DraftView>, AppError> {
        Ok(Json(drafts::get(&state, auth.user_id(), &id).await?.into()))
    }

    /// Replace a draft
    ///
    /// The fields replace the draft's (absent ones become empty); its files are kept
    /// unless listed in `removeAttachments`, and `attachments` adds uploads. The new
    /// version is APPENDed first, then the old one expunged; the id stays. `accountId` is
    /// ignored (a draft stays in its account). 404 when unknown or another user's.
    /// Native sessions only.
    #[oai(
        path = "/drafts/:id",
        method = "put",
        operation_id = "email_update_draft"
    )]
    async fn update_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Draft id.
        id: Path<String>,
        body: Json<DraftRequest>,
    ) -> Result<Json<DraftSaved>, AppError> {
        let (input, remove) = body.0.into_input();
        let id = draft_save::save(&state, auth.user_id(), Some(&id), input, &remove).await?;
        Ok(Json(DraftSaved { id }))
    }

    /// Delete a draft
    ///
    /// Expunged from the Drafts mailbox. 204; 404 when unknown or another user's. Native
    /// sessions only.
    #[oai(
        path = "/drafts/:id",
        method = "delete",
        operation_id = "email_delete_draft"
    )]
    async fn delete_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Draft id.
        id: Path<String>,
    ) -> Result<NoContent, AppError> {
        drafts::delete(&state, auth.user_id(), &id).await?;
        Ok(NoContent::Done)
    }

    /// Send a draft
    ///
    /// As compose, from the draft's fields and files as saved on the server: 201 `{id,
    /// threadId}`, or 202 `{outboxId, sendAt}` with `undoSeconds`. The draft leaves the
    /// Drafts mailbox once the message has gone out (an undone one stays a draft). 400
    /// when the draft has no recipient; 404 when unknown or another user's. Native
    /// sessions only.
    #[oai(
        path = "/drafts/:id/send",
        method = "post",
        operation_id = "email_send_draft"
    )]
    async fn send_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Draft id.
        id: Path<String>,
        body: Json<Option<DraftSendRequest>>,
    ) -> Result<Composed, AppError> {
        let undo = body.0.and_then(|b| b.undo_seconds).unwrap_or(0);
        outcome(crate::services::email::draft_send::send(&state, auth.user_id(), &id, undo).await?)
    }

    /// Complete addresses
    ///
    /// From the From, To and Cc of the user's own mail and the recipients of what they
    /// send (stored sealed), most used first (sending to someone counts twice), then most
    /// recent. `q`: a part of the address or name, any case (empty: the most used);
    /// `limit` 1 to 100 (default 10). Personal tokens allowed (allowlist version 5).
    #[oai(path = "/addresses", method = "get", operation_id = "email_addresses")]
    async fn addresses(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        q: Query<Option<String>>,
        limit: Query<Option<String>>,
    ) -> Result<Json<AddressList>, AppError> {
        let list =
            addresses::search(&state, auth.user_id(), q.0.as_deref(), limit.0.as_deref()).await?;
        Ok(Json(AddressList {
            addresses: list
                .into_iter()
                .map(|a| AddressView {
                    name: a.name,
                    address: a.address,
                    last_used_at: to_time(a.last_used_at),
                })
                .collect(),
        }))
    }
}
