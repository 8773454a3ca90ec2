//! The server as an operator and a client generator see it: health, the OpenAPI document and
//! the clients generated from it, the HTTP layer and its hardening, attestation, storage,
//! the command line, the admin API, operations (keep-alive, access log, metrics) and the
//! Debian package.

pub mod admin;
mod attestation;
mod cli;
pub mod clients;
mod connections;
mod foundation;
mod hardening;
mod http_layer;
mod operations;
mod package;
mod storage;
