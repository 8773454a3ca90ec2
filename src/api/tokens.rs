//! Placeholder: filled in by the tokens work.

use poem_openapi::OpenApi;

use super::ApiTags;

pub struct TokensApi;

#[OpenApi(tag = "ApiTags::Tokens")]
impl TokensApi {}
