//! `POST /api/ai/search`: results ranked by meaning (embeddings) merged with keyword hits.
//!
//! - Keyword hits come from the encrypted index ([`crate::services::search`]), verified.
//! - Embeddings: the newest messages without a vector (at most [`EMBED_PER_REQUEST`] per
//!   search) are embedded and stored sealed under the user's data key (AAD
//!   `search_vectors`/`vector`/`<kind>/<id>`), so vectors accumulate as the user searches;
//!   the query is embedded, every stored vector of the user opened and compared (cosine).
//! - The two rankings are merged by reciprocal rank fusion (score Σ 1/(60 + rank)).
//! - Without `[ai]` this is keyword search, `model: "keyword"`.

use std::collections::HashMap;

use rusqlite::Connection;

use super::{client, keys_of, unavailable};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::conversations;
use crate::services::search::run::{render, verified_matches, Verified};
use crate::services::search::{Query, SearchPage, KIND_MESSAGE};
use crate::services::Context;
use crate::store::messages::{self as stored, MessageRow};
use crate::store::search_index::{self, Candidate, Filters, VectorRow};

/// Messages embedded at most per search (in batches of [`EMBED_BATCH`]).
pub const EMBED_PER_REQUEST: i64 = 256;
const EMBED_BATCH: usize = 64;
/// Characters of a message sent for embedding at most.
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

fn open_vector(dek: &DataKey, row: &VectorRow) -> Option<Vec<f32>> {
    let key = vector_aad(&row.kind, &row.item_id);
    let bytes = dek
        .open(&row.vector_enc, &Aad::new("search_vectors", "vector", &key))
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

/// The newest readable messages of the user that have no vector of `model` yet.
fn unembedded(
    c: &Connection,
    user_id: &str,
    dek: &DataKey,
    model: &str,
) -> AppResult<Vec<(MessageRow, String)>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {} FROM messages m WHERE m.user_id = ?1 AND m.redacted = 0 \
         AND m.msgtype != 'm.room.encrypted' AND NOT EXISTS (SELECT 1 FROM search_vectors v \
         WHERE v.kind = 'message' AND v.item_id = m.id AND v.model = ?2) \
         ORDER BY m.ts DESC LIMIT ?3",
        prefixed_columns()
    ))?;
    let rows: Vec<MessageRow> = stmt
        .query_map(
            rusqlite::params![user_id, model, EMBED_PER_REQUEST],
            stored::from_row,
        )?
        .collect::<Result<_, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let body = conversations::open_message(dek, &row.id, &row.content_enc)
                .ok()?
                .body;
            let text: String = body.trim().chars().take(EMBED_MAX_CHARS).collect();
            (!text.is_empty()).then_some((row, text))
        })
        .collect())
}

fn prefixed_columns() -> String {
    stored::COLUMNS
        .split(", ")
        .map(|c| format!("m.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `POST /api/ai/search`.
pub async fn search(
    state: &Context,
    user_id: &str,
    query_text: &str,
    limit: Option<i64>,
) -> AppResult<AiSearch> {
    let limit = match limit {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(_) => {
            return Err(AppError::invalid(
                "limit",
                format!("must be an integer from 1 to {MAX_LIMIT}"),
            ))
        }
    } as usize;
    let query = Query::parse(query_text).map_err(|e| match e {
        AppError::BadRequest { message, .. } => {
            AppError::invalid("query", message.trim_start_matches("q: ").to_owned())
        }
        other => other,
    })?;
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
    // Network calls happen outside any store job.
    let mut fresh: Vec<(String, Vec<f32>)> = Vec::new();
    for chunk in pending.chunks(EMBED_BATCH) {
        let texts: Vec<String> = chunk.iter().map(|(_, t)| t.clone()).collect();
        let vectors = ai.embed(&texts).await.map_err(unavailable)?;
        fresh.extend(chunk.iter().map(|(r, _)| r.id.clone()).zip(vectors));
    }
    let query_vector = ai
        .embed(&[query_text.trim().to_owned()])
        .await
        .map_err(unavailable)?
        .pop()
        .ok_or_else(|| unavailable(crate::clients::ai::AiError::Malformed("no vector".into())))?;
    let uid = user_id.to_owned();
    let m = model.clone();
    let page = state
        .store
        .run(move |c| {
            let now = crate::clock::unix_now() as i64;
            let tx = c.transaction()?;
            for (id, v) in &fresh {
                let row = VectorRow {
                    kind: KIND_MESSAGE.to_owned(),
                    item_id: id.clone(),
                    model: m.clone(),
                    vector_enc: seal_vector(&dek, KIND_MESSAGE, id, v),
                };
                search_index::put_vector(&tx, &uid, &row, now)?;
            }
            tx.commit()?;
            let semantic = rank_by_meaning(c, &uid, &dek, &m, &query_vector, limit * 2)?;
            let merged = fuse(keyword, semantic, &query, limit);
            render(merged, recipient, None)
        })
        .await?;
    Ok(AiSearch { page, model })
}

/// The user's messages nearest to `query` by cosine similarity, best first, opened.
fn rank_by_meaning(
    c: &Connection,
    user_id: &str,
    dek: &DataKey,
    model: &str,
    query: &[f32],
    take: usize,
) -> AppResult<Vec<(Candidate, String)>> {
    let mut scored: Vec<(f64, VectorRow)> = search_index::vectors_of_user(c, user_id, model)?
        .into_iter()
        .filter_map(|row| Some((cosine(query, &open_vector(dek, &row)?), row)))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = Vec::new();
    for (_, row) in scored.into_iter().take(take) {
        let Some(msg) = search_index::message_by_id(c, user_id, &row.item_id)? else {
            continue;
        };
        let Ok(content) = conversations::open_message(dek, &msg.id, &msg.content_enc) else {
            continue;
        };
        out.push((
            Candidate {
                doc: 0,
                kind: KIND_MESSAGE.to_owned(),
                item_id: msg.id,
                scope: msg.room_id,
                sender: Some(msg.sender_id),
                ts: msg.ts,
            },
            content.body,
        ));
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
        assert_eq!(open_vector(&dek, &row).unwrap(), v);
        let moved = VectorRow {
            item_id: "m2".into(),
            ..row.clone()
        };
        assert!(open_vector(&dek, &moved).is_none(), "bound to its row");
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-9);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-9);
    }
}
