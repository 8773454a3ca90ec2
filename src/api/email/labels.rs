//! `/api/email/labels`: the mailboxes of the connected accounts, listed and created. On the
//! personal-token allowlist like the other e-mail routes but the account ones.

use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, OpenApi};

use super::views::{LabelCreateRequest, LabelList, LabelView};
use crate::api::security::TokenAuth;
use crate::api::ApiTags;
use crate::error::AppError;
use crate::services::email::{actions, threads};
use crate::state::AppState;

#[derive(ApiResponse)]
pub enum LabelCreated {
    #[oai(status = 201)]
    Created(Json<LabelView>),
}

pub struct EmailLabelsApi;

#[OpenApi(prefix_path = "/api/email", tag = "ApiTags::Email")]
impl EmailLabelsApi {
    /// List labels
    ///
    /// The mailboxes of the connected accounts: INBOX and SPECIAL-USE ones are `system`,
    /// the rest `user`; `unread`/`total` count cached messages. Personal tokens allowed.
    #[oai(path = "/labels", method = "get", operation_id = "email_list_labels")]
    async fn list_labels(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
    ) -> Result<Json<LabelList>, AppError> {
        let labels = threads::labels(&state, auth.user_id()).await?;
        Ok(Json(LabelList {
            labels: labels.into_iter().map(Into::into).collect(),
        }))
    }

    /// Create a label
    ///
    /// Creates a mailbox on the IMAP server. 409 `label_exists`; 404 for an unknown
    /// `accountId`. Personal tokens allowed.
    #[oai(path = "/labels", method = "post", operation_id = "email_create_label")]
    async fn create_label(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        body: Json<LabelCreateRequest>,
    ) -> Result<LabelCreated, AppError> {
        let l = actions::create_label(
            &state,
            auth.user_id(),
            &body.0.name,
            body.0.account_id.as_deref(),
        )
        .await?;
        Ok(LabelCreated::Created(Json(l.into())))
    }
}
