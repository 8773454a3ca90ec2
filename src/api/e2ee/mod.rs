//! `/api/e2ee/*`: the sync device's end-to-end encryption trust (DESIGN §16): SAS
//! verification with the user's other Matrix devices (`verifications.rs`). Native sessions
//! only (no route here is on the personal-token allowlist). Each submodule has one
//! `OpenApi` struct; [`apis`] lists them (the list becomes a tuple).

pub mod verifications;

/// Every `OpenApi` of the `E2ee` tag (assembled into the document by `api::apis`).
pub fn apis() -> impl poem_openapi::OpenApi {
    verifications::VerificationsApi
}
