//! Placeholder: filled in by the admin work.

use poem_openapi::OpenApi;

use super::ApiTags;

pub struct AdminApi;

#[OpenApi(tag = "ApiTags::Admin")]
impl AdminApi {}
