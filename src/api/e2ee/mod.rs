//! `/api/e2ee/*`: the sync device's end-to-end encryption trust (DESIGN §16). Native
//! sessions only (the personal-token allowlist has none of these routes).

pub mod verifications;
