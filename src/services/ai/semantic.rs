//! `POST /api/ai/search`: results ranked by meaning (embeddings) merged with keyword hits,
//! over chat messages and cached e-mail alike.
//!
//! - Keyword hits come from the encrypted index ([`crate::services::search`]), verified,
//!   over everything the user has.
//! - Meaning: the user's newest [`SEMANTIC_WINDOW`] indexed items (messages and mails by
//!   time) are compared, so one request costs at most that many vector openings whatever
//!   the size of the account. Items of the window without a vector (at most
//!   [`EMBED_PER_REQUEST`] per search, newest first) are embedded and stored sealed under
//!   the user's data key (AAD `search_vectors`/`vector`/`<kind>/<id>`); the query is
//!   embedded, the window's vectors opened and compared (cosine).
//! - The two rankings are merged by reciprocal rank fusion (score Σ 1/(60 + rank)).
//! - All calls to the service together are bounded by `[ai] timeout`.
//! - Without `[ai]` this is keyword search, `model: "keyword"`.

use std::collections::HashMap;

use rusqlite::Connection;

use super::{client, keys_of, unavailable};
use crate::clients::ai::{AiClient, AiError};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::messages::cache::KeyTag;
use crate::services::search::open_item;
use crate::services::search::run::{name_senders, parse_limit, render, verified_matches, Verified};
use crate::services::search::{Query, SearchPage};
use crate::services::Context;
use crate::store::search_index::{self, Candidate, Filters, VectorRow};

/// Items embedded at most per search (in batches of [`EMBED_BATCH`]).
pub const EMBED_PER_REQUEST: usize = 256;
/// Newest indexed items of a user compared by meaning per search.
pub const SEMANTIC_WINDOW: i64 = 5_000;
const EMBED_BATCH: usize = 64;
/// Characters of an item sent for embedding at most.
const EMBED_MAX_CHARS: usize = 2_000;
pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 50;
/// Reciprocal rank fusion constant.
const RRF_K: f64 = 60.0;

/// The AI search answer: the search page and the model that ranked it.
#[derive(Debug, Clone, PartialEq)]
pub struct AiSearch {
    pub page: SearchPage,
    pub model: String,
}

fn vector_aad(kind: &str, item_id: &str) -> String {
    format!("{kind}/{item_id}")
}

fn seal_vector(dek: &DataKey, kind: &str, item_id: &str, v: &[f32]) -> Vec<u8> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let key = vector_aad(kind, item_id);
    dek.seal(&bytes, &Aad::new("search_vectors", "vector", &key))
}

fn open_vector(dek: &DataKey, kind: &str, item_id: &str, sealed: &[u8]) -> Option<Vec<f32>> {
    let key = vector_aad(kind, item_id);
    let bytes = dek
        .open(sealed, &Aad::new("search_vectors", "vector", &key))
        .ok()?;
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return -1.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 {
        return -1.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// The newest items of the window without a vector of `model`, with the text to embed.
fn unembedded(
    c: &Connection,
    user_id: &str,
    dek: &DataKey,
    model: &str,
) -> AppResult<Vec<(Candidate, String)>> {
    let tag = KeyTag::of(dek);
    let mut out = Vec::new();
    for (cand, _) in search_index::newest_with_vectors(c, user_id, model, SEMANTIC_WINDOW, false)?
        .into_iter()
        .filter(|(_, v)| v.is_none())
    {
        if out.len() == EMBED_PER_REQUEST {
            break;
        }
        let Some(text) = open_item(c, dek, tag, user_id, &cand)? else {
            continue;
        };
        let text: String = text.trim().chars().take(EMBED_MAX_CHARS).collect();
        if !text.is_empty() {
            out.push((cand, text));
        }
    }
    Ok(out)
}

/// `POST /api/ai/search`.
pub async fn search(
    state: &Context,
    user_id: &str,
    query_text: &str,
    limit: Option<i64>,
) -> AppResult<AiSearch> {
    let limit = parse_limit(limit, DEFAULT_LIMIT, MAX_LIMIT)? as usize;
    let query = parse_query(query_text)?;
    let ai = client(state);
    let model = ai.as_ref().map(|a| a.embedding_model().to_owned());
    let master = state.master.clone();
    let uid = user_id.to_owned();
    let q = query.clone();
    let m = model.clone();
    let (dek, recipient, keyword, pending) = state
        .store
        .run(move |c| {
            let (_, dek, recipient) = keys_of(c, &master, &uid)?;
            let (keyword, _) =
                verified_matches(c, &uid, &dek, &q, &Filters::default(), None, limit)?;
            let pending = match &m {
                Some(model) => unembedded(c, &uid, &dek, model)?,
                None => Vec::new(),
            };
            Ok::<_, AppError>((dek, recipient, keyword, pending))
        })
        .await?;
    let (Some(ai), Some(model)) = (ai, model) else {
        return Ok(AiSearch {
            page: render(keyword, recipient, None)?,
            model: "keyword".to_owned(),
        });
    };
    let (vectors, query_vector) = embed_pending_and_query(&ai, &pending, query_text).await?;
    let fresh: Vec<(Candidate, Vec<f32>)> = pending
        .into_iter()
        .map(|(cand, _)| cand)
        .zip(vectors)
        .collect();
    let uid = user_id.to_owned();
    let m = model.clone();
    let page = state
        .store
        .run(move |c| {
            store_vectors(c, &uid, &dek, &m, &fresh)?;
            let semantic = rank_by_meaning(c, &uid, &dek, &m, &query_vector, limit * 2)?;
            let mut merged = fuse(keyword, semantic, &query, limit);
            name_senders(c, &dek, &uid, &mut merged)?;
            render(merged, recipient, None)
        })
        .await?;
    Ok(AiSearch { page, model })
}

/// The query, its field named `query` in errors (the keyword parser says `q`).
fn parse_query(query_text: &str) -> AppResult<Query> {
    Query::parse(query_text).map_err(|e| match e {
        AppError::BadRequest { message, .. } => {
            AppError::invalid("query", message.trim_start_matches("q: ").to_owned())
        }
        other => other,
    })
}

/// The vectors of the pending items' texts (in their order) and of the query. Network
/// calls happen outside any store job, all under one deadline.
async fn embed_pending_and_query(
    ai: &AiClient,
    pending: &[(Candidate, String)],
    query_text: &str,
) -> AppResult<(Vec<Vec<f32>>, Vec<f32>)> {
    let texts: Vec<String> = pending.iter().map(|(_, t)| t.clone()).collect();
    let query_input = query_text.trim().to_owned();
    ai.within(async {
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(EMBED_BATCH) {
            vectors.extend(ai.embed(chunk).await?);
        }
        let query_vector = ai
            .embed(std::slice::from_ref(&query_input))
            .await?
            .pop()
            .ok_or_else(|| AiError::Malformed("no vector".into()))?;
        Ok((vectors, query_vector))
    })
    .await
    .map_err(unavailable)
}

/// Stores the new vectors sealed under the user's data key; new items arrived since the
/// last search, so the vectors of gone ones are swept.
fn store_vectors(
    c: &mut Connection,
    uid: &str,
    dek: &DataKey,
    model: &str,
    fresh: &[(Candidate, Vec<f32>)],
) -> AppResult<()> {
    let now = crate::clock::unix_now() as i64;
    let tx = c.transaction()?;
    for (cand, v) in fresh {
        let row = VectorRow {
            kind: cand.kind.clone(),
            item_id: cand.item_id.clone(),
            model: model.to_owned(),
            vector_enc: seal_vector(dek, &cand.kind, &cand.item_id, v),
        };
        search_index::put_vector(&tx, uid, &row, now)?;
    }
    if !fresh.is_empty() {
        search_index::drop_orphan_vectors(&tx, uid)?;
    }
    tx.commit()?;
    Ok(())
}

/// The items of the window nearest to `query` by cosine similarity, best first, opened.
fn rank_by_meaning(
    c: &Connection,
    user_id: &str,
    dek: &DataKey,
    model: &str,
    query: &[f32],
    take: usize,
) -> AppResult<Vec<(Candidate, String)>> {
    let mut scored: Vec<(f64, Candidate)> =
        search_index::newest_with_vectors(c, user_id, model, SEMANTIC_WINDOW, true)?
            .into_iter()
            .filter_map(|(cand, sealed)| {
                let v = open_vector(dek, &cand.kind, &cand.item_id, sealed.as_deref()?)?;
                Some((cosine(query, &v), cand))
            })
            .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let tag = KeyTag::of(dek);
    let mut out = Vec::new();
    for (_, cand) in scored.into_iter().take(take) {
        if let Some(text) = open_item(c, dek, tag, user_id, &cand)? {
            out.push((cand, text));
        }
    }
    Ok(out)
}

/// Reciprocal rank fusion of the keyword and the semantic ranking.
fn fuse(
    keyword: Vec<Verified>,
    semantic: Vec<(Candidate, String)>,
    query: &Query,
    limit: usize,
) -> Vec<Verified> {
    let mut scores: HashMap<String, (f64, Verified)> = HashMap::new();
    for (rank, v) in keyword.into_iter().enumerate() {
        let s = 1.0 / (RRF_K + rank as f64 + 1.0);
        scores.insert(v.candidate.item_id.clone(), (s, v));
    }
    for (rank, (cand, text)) in semantic.into_iter().enumerate() {
        let s = 1.0 / (RRF_K + rank as f64 + 1.0);
        scores
            .entry(cand.item_id.clone())
            .and_modify(|e| e.0 += s)
            .or_insert_with(|| {
                let hits = query.matches(&text).unwrap_or_default();
                (
                    s,
                    Verified {
                        candidate: cand,
                        text,
                        hits,
                        sender: None,
                    },
                )
            });
    }
    let mut all: Vec<(f64, Verified)> = scores.into_values().collect();
    all.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.candidate.ts.cmp(&a.1.candidate.ts))
    });
    all.into_iter().take(limit).map(|(_, v)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_sealed_and_compare_by_angle() {
        let dek = DataKey::from_bytes([3; 32]);
        let v = vec![0.5f32, -1.0, 2.0];
        let row = VectorRow {
            kind: "message".into(),
            item_id: "m1".into(),
            model: "e".into(),
            vector_enc: seal_vector(&dek, "message", "m1", &v),
        };
        assert_eq!(
            open_vector(&dek, "message", "m1", &row.vector_enc).unwrap(),
            v
        );
        assert!(
            open_vector(&dek, "message", "m2", &row.vector_enc).is_none(),
            "bound to its row"
        );
        assert!(
            open_vector(&dek, "email", "m1", &row.vector_enc).is_none(),
            "bound to its kind"
        );
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-9);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-9);
    }
}
