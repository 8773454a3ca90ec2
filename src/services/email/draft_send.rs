//! Sending a draft: its fields and files read back from the Drafts mailbox and sent like a
//! composed message ([`super::send`]); the draft is removed once the message has gone out.

use super::actions;
use super::compose::{ComposeInput, Outcome};
use super::drafts::{drafts_box, locate, show};
use super::ref_hash;
use super::uploads;
use crate::error::{AppError, AppResult};
use crate::services::Context;

/// Sends a draft like compose (its files spooled as uploads first); the draft is removed
/// once the message has gone out (a held one that is undone leaves the draft in place).
pub async fn send(
    state: &Context,
    user_id: &str,
    id: &str,
    undo_seconds: u32,
) -> AppResult<Outcome> {
    let (id, ctx, versions) = locate(state, user_id, id).await?;
    let (uid, m) = versions
        .into_iter()
        .next()
        .ok_or_else(|| AppError::not_found("draft"))?;
    let (_, name) = drafts_box(state, &ctx)
        .await?
        .ok_or_else(|| AppError::not_found("draft"))?;
    let raw = actions::fetch_uid(state, &ctx, &name, uid).await?;
    let f = super::parse::draft_fields(&raw).unwrap_or_default();
    let mut attachments = Vec::new();
    if !m.body.attachments.is_empty() {
        for (i, (ctype, fname, bytes)) in super::parse::attachments(&raw).into_iter().enumerate() {
            let name = fname.unwrap_or_else(|| format!("attachment-{i}"));
            attachments.push(
                uploads::store_bytes(state, user_id, &name, &ctype, bytes)
                    .await?
                    .id,
            );
        }
    }
    drop(raw);
    // A reply draft goes out as a reply (In-Reply-To, References, its thread) when the
    // message it answers is cached.
    let reply_to = match &f.in_reply_to {
        Some(mid) => {
            let (aid, key) = (ctx.account_id.clone(), ref_hash(&ctx.dek, "mid", mid));
            state
                .db(move |c| Ok(crate::store::email::messages::find_by_key(c, &aid, &key)?))
                .await?
                .map(|(id, _)| id)
        }
        None => None,
    };
    let input = ComposeInput {
        reply_to,
        account_id: Some(ctx.account_id.clone()),
        to: f.to.iter().map(show).collect(),
        cc: f.cc.iter().map(show).collect(),
        bcc: f.bcc.iter().map(show).collect(),
        subject: f.subject,
        text: f.text,
        html: f.html,
        attachments: attachments.clone(),
        draft_id: Some(id),
        ..Default::default()
    };
    let r = super::send::send(state, user_id, input, undo_seconds).await;
    if r.is_err() {
        let _ = uploads::discard(state, attachments).await;
    }
    r
}
