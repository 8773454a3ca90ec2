//! `GET /api/attestation`: the server's identity keys, signed, for apps to pin. No
//! authentication.

use poem::web::Data;
use poem_openapi::{Object, OpenApi};

use super::fast_json::FastJson;
use super::ApiTags;
use crate::state::AppState;

// Documents the body `services::attestation::Attestation` renders (same fields, same order).
/// Server attestation.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct AttestationResult {
    /// The server's X25519 public key (standard base64, 32 bytes); clients seal
    /// scheduled-message bodies to it. Stable across restarts (kept in the data directory).
    pub server_public_key: String,
    /// Version of `serverPublicKey`; 1 (the server does not rotate this key).
    pub key_version: i64,
    /// The server's Ed25519 public key (standard base64, 32 bytes) that made `signature`.
    pub signing_public_key: String,
    /// Ed25519 signature (standard base64, 64 bytes) over the UTF-8 bytes of
    /// `"switchboard-attestation-v1\n" + serverPublicKey + "\n" + keyVersion + "\n" + version`.
    pub signature: String,
    /// Version of the server software.
    pub version: String,
    /// Build commit, from `SWITCHBOARD_COMMIT` in the environment of the build (set by
    /// packagers); `unknown` when it was not set.
    pub commit: String,
}

pub struct AttestationApi;

#[OpenApi(tag = "ApiTags::Attestation")]
impl AttestationApi {
    /// Server attestation
    ///
    /// No authentication. Returns the server's X25519 key with its `keyVersion`, the Ed25519
    /// signing key, a signature binding the X25519 key, key version and server version,
    /// and the build `commit`. An app that pinned `signingPublicKey` verifies `signature`
    /// over `"switchboard-attestation-v1\n" + serverPublicKey + "\n" + keyVersion + "\n" +
    /// version` (UTF-8) to detect a swapped encryption key.
    #[oai(
        path = "/api/attestation",
        method = "get",
        operation_id = "get_attestation"
    )]
    async fn attestation(&self, state: Data<&AppState>) -> FastJson<AttestationResult> {
        // Rendered once at start (`services::attestation::rendered`), in this object's form.
        FastJson::from_bytes(state.attestation_body.clone())
    }
}
