//! Placeholder: filled in by the attestation work.

use poem_openapi::OpenApi;

use super::ApiTags;

pub struct AttestationApi;

#[OpenApi(tag = "ApiTags::Attestation")]
impl AttestationApi {}
