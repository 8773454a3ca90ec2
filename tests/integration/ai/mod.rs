//! The AI features against a stand-in OpenAI-compatible service (`common::ai`): scoring of
//! incoming messages, the AI routes, their limits, and mail summaries and semantic search.

mod email;
mod limits;
mod routes;
mod scoring;
