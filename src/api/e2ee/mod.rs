//! `/api/e2ee/*`: the sync device as a trusted end-to-end encryption device (docs/design.md):
//! its status and recovery key (`status.rs`) and SAS verification with the user's other
//! Matrix devices (`verifications.rs`). Native sessions only (no route here is on the
//! personal-token allowlist). Each submodule has one `OpenApi` struct; [`apis`] lists them.

pub mod status;
pub mod verifications;

/// Every `OpenApi` of the `E2ee` tag (assembled into the document by `api::apis`).
pub fn apis() -> impl poem_openapi::OpenApi {
    (status::E2eeStatusApi, verifications::VerificationsApi)
}
