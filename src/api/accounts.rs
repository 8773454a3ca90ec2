//! Placeholder: filled in by the accounts work.

use poem_openapi::OpenApi;

use super::ApiTags;

pub struct AccountsApi;

#[OpenApi(tag = "ApiTags::Accounts")]
impl AccountsApi {}
