//! `/api/email/*`: the user's own mailboxes over IMAP and SMTP (see docs/design.md). Thin
//! handlers over `services::email`. Account routes are for native sessions only (not on
//! the personal-token allowlist: passwords never reach scripts); the rest are on it.

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Json, Response};
use poem_openapi::{ApiResponse, OpenApi};

use super::fast_json::FastJson;
use super::security::{NativeAuth, TokenAuth};
use super::ApiTags;
use crate::error::AppError;
use crate::services::email::{accounts, actions, compose, file_parts, threads};
use crate::services::pages::{PageKey, PageView};
use crate::state::AppState;

mod labels;
pub mod outgoing;
mod signatures;
pub mod views;

pub use labels::EmailLabelsApi;
pub use outgoing::EmailOutgoingApi;
pub use signatures::EmailSignaturesApi;

use views::*;

#[derive(ApiResponse)]
pub enum AccountCreated {
    #[oai(status = 201)]
    Created(Json<AccountView>),
}

#[derive(ApiResponse)]
pub enum Composed {
    /// Sent.
    #[oai(status = 201)]
    Created(Json<ComposeResult>),
    /// Held for `undoSeconds`; sent by the scheduler at `sendAt` unless cancelled.
    #[oai(status = 202)]
    Held(Json<outgoing::HeldResult>),
}

pub(super) fn outcome(o: compose::Outcome) -> Result<Composed, AppError> {
    Ok(match o {
        compose::Outcome::Sent(s) => Composed::Created(Json(ComposeResult {
            id: s.id,
            thread_id: s.thread_id,
        })),
        compose::Outcome::Held { outbox_id, send_at } => {
            Composed::Held(Json(outgoing::HeldResult {
                outbox_id,
                send_at: crate::services::scheduled::to_time(send_at),
            }))
        }
    })
}

fn endpoint(s: ServerRequest) -> accounts::EndpointInput {
    accounts::EndpointInput {
        host: s.host,
        port: s.port,
        security: s.security.as_str().to_owned(),
        username: s.username,
        password: s.password,
    }
}

pub struct EmailApi;

#[OpenApi(prefix_path = "/api/email", tag = "ApiTags::Email")]
impl EmailApi {
    /// List connected mailboxes
    ///
    /// Native sessions only. `status`: `ok`, `auth_failed`, `unreachable` or `syncing`
    /// (with `progress` while a mailbox is fetched).
    #[oai(
        path = "/accounts",
        method = "get",
        operation_id = "email_list_accounts"
    )]
    async fn list_accounts(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<AccountList>, AppError> {
        let accounts = accounts::list(&state, auth.user_id()).await?;
        Ok(Json(AccountList {
            accounts: accounts.into_iter().map(Into::into).collect(),
        }))
    }

    /// Connect a mailbox
    ///
    /// Native sessions only. Logs in to the IMAP server and does EHLO (+AUTH when a
    /// username is given) on the SMTP server before storing anything: 400
    /// `mail_login_failed` with the server's words when either refuses, 400
    /// `mail_server_unreachable` when one cannot be reached, 400 `mail_host_not_allowed`
    /// naming `imap.host` or `smtp.host` when the host resolves to a private, loopback,
    /// link-local or other non-public address the operator has not allowed (`[email]
    /// allow_private_hosts`; the connection goes to the address that was checked), 400
    /// `invalid_request` naming the field otherwise. Passwords are stored sealed under the
    /// user's data key. Sync starts at once (`status: syncing`).
    #[oai(
        path = "/accounts",
        method = "post",
        operation_id = "email_connect_account"
    )]
    async fn connect_account(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<AccountCreateRequest>,
    ) -> Result<AccountCreated, AppError> {
        let b = body.0;
        let input = accounts::AccountInput {
            email: b.email,
            display_name: b.display_name,
            imap: endpoint(b.imap),
            smtp: endpoint(b.smtp),
        };
        let a = accounts::connect(&state, auth.user_id(), input).await?;
        Ok(AccountCreated::Created(Json(a.into())))
    }

    /// Disconnect a mailbox
    ///
    /// Native sessions only. Drops the account, its credentials and all its cached mail
    /// (nothing changes on the mail server). 404 when it is not the caller's.
    #[oai(
        path = "/accounts/:id",
        method = "delete",
        operation_id = "email_delete_account"
    )]
    async fn delete_account(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Account id.
        id: Path<String>,
    ) -> Result<Json<Deleted>, AppError> {
        let id = accounts::remove(&state, auth.user_id(), &id).await?;
        Ok(Json(Deleted {
            message: "mail account removed".into(),
            deleted_id: id,
        }))
    }

    /// List threads
    ///
    /// From the cache, latest activity first, across all connected mailboxes. `label`: a
    /// label's id (e.g. `INBOX`); `q`: words in subject, snippet or participants (of cached
    /// mail); `limit` 1 to 100 (default 50); `cursor` from `nextCursor`.
    ///
    /// Older mail on demand: the first sync caches the newest `[email] first_sync_limit`
    /// messages of each mailbox. A page that reaches past the oldest cached thread while
    /// a mailbox in view (the `label`'s, or all) still holds older mail on the server waits
    /// for the next older batch of that size to be fetched and answers from it (the
    /// account shows `status: syncing` with `progress` meanwhile); pagers arriving together
    /// share one fetch. Such a page may be short and still carry a `nextCursor`: paging on
    /// reaches the mailbox's first mail, and `nextCursor` is null only then. No back-fill
    /// with `q`, or for an account whose server is failing (the cache answers). Personal
    /// tokens allowed.
    #[oai(path = "/threads", method = "get", operation_id = "email_list_threads")]
    async fn list_threads(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        label: Query<Option<String>>,
        q: Query<Option<String>>,
        cursor: Query<Option<String>>,
        limit: Query<Option<String>>,
    ) -> Result<FastJson<ThreadList>, AppError> {
        // The rendered page is kept until the next database write (services::pages), like
        // the history and room-list pages: scripts poll the inbox.
        let key = PageKey {
            user_id: auth.user_id().to_owned(),
            view: PageView::EmailThreads {
                label: label.0.clone(),
                q: q.0.clone(),
                cursor: cursor.0.clone(),
                limit: limit.0.clone(),
            },
        };
        let render = || async {
            let page = threads::list(
                &state,
                auth.user_id(),
                label.0.as_deref(),
                q.0.as_deref(),
                cursor.0.as_deref(),
                limit.0.as_deref(),
            )
            .await?;
            FastJson::<ThreadList>::object_bytes(&ThreadList {
                threads: page.threads.into_iter().map(Into::into).collect(),
                next_cursor: page.next_cursor,
            })
        };
        let body = state.pages.get_or_render(key, render).await?;
        Ok(FastJson::from_page(body))
    }

    /// Get a thread
    ///
    /// 404 when it is not the caller's. Personal tokens allowed.
    #[oai(
        path = "/threads/:id",
        method = "get",
        operation_id = "email_get_thread"
    )]
    async fn get_thread(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Thread id.
        id: Path<String>,
    ) -> Result<Json<ThreadView>, AppError> {
        Ok(Json(
            threads::get(&state, auth.user_id(), &id).await?.into(),
        ))
    }

    /// Read, star, archive, trash, delete or label a thread
    ///
    /// Made on the IMAP server before the answer, then mirrored into the cache: `read` /
    /// `unread` set or clear `\Seen` on all its messages, `star` / `unstar` `\Flagged`;
    /// `archive` moves them out of INBOX into the `\Archive` mailbox (created as `Archive`
    /// when missing), `unarchive` back; `trash` moves them into `\Trash`; `delete` expunges
    /// them for good; `addLabel` copies them into the mailbox `label`, `removeLabel` takes
    /// them out of it (user labels only). The answer is the new thread (without messages
    /// after `delete`). 404 for an unknown thread or label; 502 `mail_action_failed` with
    /// the server's words when it refuses; 503 `mail_unreachable`. Personal tokens allowed.
    #[oai(
        path = "/threads/:id",
        method = "put",
        operation_id = "email_update_thread"
    )]
    async fn update_thread(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Thread id.
        id: Path<String>,
        body: Json<ThreadActionRequest>,
    ) -> Result<Json<ThreadView>, AppError> {
        let action = body.0.into_action()?;
        let t = actions::apply(&state, auth.user_id(), &id, action).await?;
        Ok(Json(t.into()))
    }

    /// Get a message
    ///
    /// From the cache: headers, text and HTML bodies, attachment list. 404 when it is not
    /// the caller's. Personal tokens allowed.
    #[oai(
        path = "/messages/:id",
        method = "get",
        operation_id = "email_get_message"
    )]
    async fn get_message(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Message id.
        id: Path<String>,
    ) -> Result<Json<MessageView>, AppError> {
        Ok(Json(
            threads::message(&state, auth.user_id(), &id).await?.into(),
        ))
    }

    /// Download an attachment
    ///
    /// Fetched from the IMAP server on demand, its part alone (found through the message's
    /// `BODYSTRUCTURE`, decoded as it arrives; the message whole, at most `[email]
    /// max_message_mb`, only when the structure does not match the cached list of files or
    /// the part comes back empty) and sent with its content type. 404 for an unknown message or
    /// index; 502/503 when the mail server refuses or is unreachable; 502
    /// `mail_action_failed` for a `truncated` message (larger than the cap).
    /// Personal tokens allowed.
    #[oai(
        path = "/messages/:id/attachments/:index",
        method = "get",
        operation_id = "email_get_attachment"
    )]
    async fn get_attachment(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Message id.
        id: Path<String>,
        /// `index` from the message's `attachments`.
        index: Path<u32>,
    ) -> Result<Response<Binary<Vec<u8>>>, AppError> {
        let (ctype, name, bytes) =
            file_parts::attachment(&state, auth.user_id(), &id, index.0).await?;
        // The type comes from the mail: only a plain `type/subtype` token is passed on, and
        // the part is always a download (never rendered on this origin, never sniffed).
        let ctype = if !ctype.is_empty()
            && ctype.len() <= 127
            && ctype
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-/".contains(c))
        {
            ctype
        } else {
            "application/octet-stream".to_owned()
        };
        let safe: String = name
            .unwrap_or_else(|| format!("attachment-{}", index.0))
            .chars()
            .filter(|c| (c.is_ascii_graphic() || *c == ' ') && *c != '"' && *c != '\\')
            .take(200)
            .collect();
        let resp = Response::new(Binary(bytes))
            .header("Content-Type", ctype)
            .header("X-Content-Type-Options", "nosniff")
            .header(
                "Content-Disposition",
                format!("attachment; filename=\"{safe}\""),
            );
        Ok(resp)
    }

    /// Send, reply or forward
    ///
    /// Sent through the account's SMTP server, then appended to its Sent mailbox (which
    /// files it in its thread). A reply carries `In-Reply-To`/`References`; a forward
    /// quotes the original (and with `includeAttachments` carries its files). With
    /// `attachments` the message is multipart/mixed, each file byte-identical, in the Sent
    /// copy too. Every check is made before the SMTP transaction; the files stream from the
    /// sealed spool as the message goes out, and one that cannot be read breaks the
    /// transaction off before its end: the message leaves whole or not at all. 201 `{id, threadId}` when sent now; 202
    /// `{outboxId, sendAt}` with `undoSeconds` > 0 (held, then sent once by the scheduler;
    /// see `GET /api/email/outbox/{id}`). 400 naming the field for a malformed address or
    /// `undoSeconds` past 60; 404 for an unknown `replyTo`, `forward`, `signatureId`,
    /// `accountId` or upload; 409 `forwarded_message_gone` when the forwarded message is
    /// no longer on the mail server; 413 `payload_too_large` past `[email]
    /// max_attachments_mb`; 502 `mail_send_failed` when the SMTP server refuses or a file
    /// could not be read while sending (nothing was sent). Personal tokens allowed.
    #[oai(path = "/compose", method = "post", operation_id = "email_compose")]
    async fn compose(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        body: Json<ComposeRequest>,
    ) -> Result<Composed, AppError> {
        let b = body.0;
        let undo = b.undo_seconds.unwrap_or(0);
        let input = compose::ComposeInput {
            account_id: b.account_id,
            to: b.to,
            cc: b.cc.unwrap_or_default(),
            bcc: b.bcc.unwrap_or_default(),
            subject: b.subject,
            text: b.text,
            html: b.html,
            reply_to: b.reply_to,
            forward: b.forward,
            signature_id: b.signature_id,
            attachments: b.attachments.unwrap_or_default(),
            include_attachments: b.include_attachments.unwrap_or(false),
            draft_id: None,
        };
        outcome(crate::services::email::send::send(&state, auth.user_id(), input, undo).await?)
    }
}
