//! Placeholder: filled in by the attestation work.
