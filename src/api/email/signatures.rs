//! `/api/email/signatures`: Switchboard's own signatures (sealed), on the personal-token
//! allowlist like the other e-mail routes but the account ones.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::views::Deleted;
use crate::api::security::TokenAuth;
use crate::api::ApiTags;
use crate::error::AppError;
use crate::services::email::signatures::{self, Signature};
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename = "EmailSignature", rename_all = "camelCase")]
pub struct SignatureView {
    pub id: String,
    pub name: String,
    pub text: String,
    pub is_default: bool,
}

impl From<Signature> for SignatureView {
    fn from(s: Signature) -> Self {
        Self {
            id: s.id,
            name: s.name,
            text: s.text,
            is_default: s.is_default,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailSignatureList")]
pub struct SignatureList {
    pub signatures: Vec<SignatureView>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailSignatureCreateRequest", rename_all = "camelCase")]
pub struct SignatureCreateRequest {
    /// 1 to 100 characters.
    pub name: String,
    /// Up to 10,000 characters.
    pub text: String,
    /// Default false; a new default replaces the old one.
    pub is_default: Option<bool>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailSignatureUpdateRequest", rename_all = "camelCase")]
pub struct SignatureUpdateRequest {
    pub name: Option<String>,
    pub text: Option<String>,
    pub is_default: Option<bool>,
}

#[derive(ApiResponse)]
pub enum SignatureCreated {
    #[oai(status = 201)]
    Created(Json<SignatureView>),
}

pub struct EmailSignaturesApi;

#[OpenApi(prefix_path = "/api/email", tag = "ApiTags::Email")]
impl EmailSignaturesApi {
    /// List signatures
    ///
    /// Personal tokens allowed.
    #[oai(
        path = "/signatures",
        method = "get",
        operation_id = "email_list_signatures"
    )]
    async fn list_signatures(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
    ) -> Result<Json<SignatureList>, AppError> {
        let s = signatures::list(&state, auth.user_id()).await?;
        Ok(Json(SignatureList {
            signatures: s.into_iter().map(Into::into).collect(),
        }))
    }

    /// Create a signature
    ///
    /// Stored sealed. Personal tokens allowed.
    #[oai(
        path = "/signatures",
        method = "post",
        operation_id = "email_create_signature"
    )]
    async fn create_signature(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        body: Json<SignatureCreateRequest>,
    ) -> Result<SignatureCreated, AppError> {
        let b = body.0;
        let s = signatures::create(
            &state,
            auth.user_id(),
            &b.name,
            &b.text,
            b.is_default.unwrap_or(false),
        )
        .await?;
        Ok(SignatureCreated::Created(Json(s.into())))
    }

    /// Update a signature
    ///
    /// Partial: absent fields stay. 404 when it is not the caller's. Personal tokens
    /// allowed.
    #[oai(
        path = "/signatures/:id",
        method = "put",
        operation_id = "email_update_signature"
    )]
    async fn update_signature(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Signature id.
        id: Path<String>,
        body: Json<SignatureUpdateRequest>,
    ) -> Result<Json<SignatureView>, AppError> {
        let b = body.0;
        let s = signatures::update(
            &state,
            auth.user_id(),
            &id,
            b.name.as_deref(),
            b.text.as_deref(),
            b.is_default,
        )
        .await?;
        Ok(Json(s.into()))
    }

    /// Delete a signature
    ///
    /// 404 when it is not the caller's. Personal tokens allowed.
    #[oai(
        path = "/signatures/:id",
        method = "delete",
        operation_id = "email_delete_signature"
    )]
    async fn delete_signature(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Signature id.
        id: Path<String>,
    ) -> Result<Json<Deleted>, AppError> {
        let id = signatures::delete(&state, auth.user_id(), &id).await?;
        Ok(Json(Deleted {
            message: "signature deleted".into(),
            deleted_id: id,
        }))
    }
}
