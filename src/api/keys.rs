//! Placeholder: filled in by the keys work.

use poem_openapi::OpenApi;

use super::ApiTags;

pub struct KeysApi;

#[OpenApi(tag = "ApiTags::Keys")]
impl KeysApi {}
