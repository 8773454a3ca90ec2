//! Server attestation (`GET /api/attestation`): the server's X25519 key, signed with its
//! Ed25519 key, so an app that pinned the signing key can detect a swapped encryption key.

use bytes::Bytes;

use crate::crypto::{attestation_message, ServerKeys};

/// Version of the server's X25519 key. The key is generated once into the data directory
/// and never rotated by the server, so this is 1; it will count up if rotation is added.
pub const SERVER_KEY_VERSION: i64 = 1;

/// Version of this binary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Build commit: packagers set `SWITCHBOARD_COMMIT` in the environment of `cargo build`;
/// `unknown` otherwise.
pub const COMMIT: &str = match option_env!("SWITCHBOARD_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// What `GET /api/attestation` returns; binary values are standard padded base64. The
/// field order and names are the wire form (`api::attestation` documents it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attestation {
    pub server_public_key: String,
    pub key_version: i64,
    pub signing_public_key: String,
    /// Ed25519 over [`attestation_message`]`(server_public_key, key_version, version)`.
    pub signature: String,
    pub version: String,
    pub commit: String,
}

/// The attestation for `keys` (one signature).
pub fn attestation(keys: &ServerKeys) -> Attestation {
    let server_public_key = keys.x25519_public_b64();
    let message = attestation_message(&server_public_key, SERVER_KEY_VERSION, VERSION);
    Attestation {
        signature: keys.sign_b64(message.as_bytes()),
        server_public_key,
        key_version: SERVER_KEY_VERSION,
        signing_public_key: keys.ed25519_public_b64(),
        version: VERSION.to_owned(),
        commit: COMMIT.to_owned(),
    }
}

/// The JSON body of `GET /api/attestation` for `keys`, rendered once when the server
/// starts: the keys never change in a running process, and the route is the one apps and
/// probes call most, so a request costs no signing, lock or serialization.
pub fn rendered(keys: &ServerKeys) -> Result<Bytes, serde_json::Error> {
    serde_json::to_vec(&attestation(keys)).map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::verify_signature;

    #[test]
    fn the_attestation_signature_verifies_over_the_documented_message() {
        let keys = ServerKeys::from_bytes([1u8; 32], [2u8; 32]);
        let a = attestation(&keys);
        assert_eq!(a.server_public_key, keys.x25519_public_b64());
        assert_eq!(a.signing_public_key, keys.ed25519_public_b64());
        assert_eq!(a.key_version, 1);
        assert_eq!(a.version, env!("CARGO_PKG_VERSION"));
        let msg = format!(
            "switchboard-attestation-v1\n{}\n1\n{}",
            a.server_public_key, a.version
        );
        assert!(verify_signature(
            &a.signing_public_key,
            msg.as_bytes(),
            &a.signature
        ));
    }

    #[test]
    fn the_rendered_body_is_the_attestation_in_the_documented_form() {
        let keys = ServerKeys::from_bytes([3u8; 32], [4u8; 32]);
        let body: serde_json::Value = serde_json::from_slice(&rendered(&keys).unwrap()).unwrap();
        let a = attestation(&keys);
        assert_eq!(
            body,
            serde_json::json!({
                "serverPublicKey": a.server_public_key,
                "keyVersion": 1,
                "signingPublicKey": a.signing_public_key,
                "signature": a.signature,
                "version": a.version,
                "commit": a.commit,
            })
        );
        let other = ServerKeys::from_bytes([5u8; 32], [6u8; 32]);
        assert_ne!(rendered(&other).unwrap(), rendered(&keys).unwrap());
    }
}
