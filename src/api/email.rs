//! `/api/email/*`: reserved for the e-mail backend. The routes exist behind authentication
//! and the personal-token allowlist (DESIGN §8) and answer 501 `not_implemented` until the
//! backend is built, so clients and scripts can detect it.

use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::OpenApi;

use super::security::TokenAuth;
use super::views::MessageResponse;
use super::ApiTags;
use crate::error::AppError;

fn not_built() -> AppError {
    AppError::NotImplemented {
        message: "the e-mail backend is not available on this server yet".to_owned(),
    }
}

pub struct EmailApi;

#[OpenApi(prefix_path = "/api/email", tag = "ApiTags::Email")]
impl EmailApi {
    /// List e-mail threads
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(path = "/threads", method = "get", operation_id = "email_list_threads")]
    async fn list_threads(&self, _auth: TokenAuth) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }

    /// Read, star, archive or delete a thread
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(
        path = "/threads/:id",
        method = "put",
        operation_id = "email_update_thread"
    )]
    async fn update_thread(
        &self,
        _auth: TokenAuth,
        #[oai(name = "id")] _id: Path<String>,
    ) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }

    /// Get an e-mail message
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(
        path = "/messages/:id",
        method = "get",
        operation_id = "email_get_message"
    )]
    async fn get_message(
        &self,
        _auth: TokenAuth,
        #[oai(name = "id")] _id: Path<String>,
    ) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }

    /// Send, reply or forward
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(path = "/compose", method = "post", operation_id = "email_compose")]
    async fn compose(&self, _auth: TokenAuth) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }

    /// List labels
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(path = "/labels", method = "get", operation_id = "email_list_labels")]
    async fn list_labels(&self, _auth: TokenAuth) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }

    /// Create a label
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(path = "/labels", method = "post", operation_id = "email_create_label")]
    async fn create_label(&self, _auth: TokenAuth) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }

    /// List signatures
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(
        path = "/signatures",
        method = "get",
        operation_id = "email_list_signatures"
    )]
    async fn list_signatures(&self, _auth: TokenAuth) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }

    /// Create a signature
    ///
    /// Not implemented yet: 501 `not_implemented`.
    #[oai(
        path = "/signatures",
        method = "post",
        operation_id = "email_create_signature"
    )]
    async fn create_signature(&self, _auth: TokenAuth) -> Result<Json<MessageResponse>, AppError> {
        Err(not_built())
    }
}
