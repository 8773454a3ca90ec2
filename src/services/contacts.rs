//! `GET /api/contacts`: people the user can start a chat with.
//!
//! - A bridge platform: its provisioning API, `GET /v3/contacts`, or `POST
//!   /v3/search_users {query}` when `q` is given. A bridge whose network cannot list
//!   (`M_UNRECOGNIZED`) gives an empty list and `supported: false`.
//! - `matrix`: with `q`, the homeserver's user directory (on Synapse by default the users
//!   sharing a room with the user or in a public room); without, the partners of the
//!   user's joined plain-Matrix direct chats.
//! - No platform: every configured platform (and Matrix) at once, merged. A failing one
//!   is left out and named in `unavailable`, one that cannot list in `unsupported`, one
//!   the user has no login on is left out; the list itself never fails for a bridge.
//!
//! Without `q` the merged list is sorted by name; with `q` each source keeps its own
//! ranking and the sources take turns, so one platform cannot push the others past `limit`.

use std::collections::HashMap;

use futures_util::future::join_all;

use crate::clients::provisioning::{BridgeError, Failure, Platform, ResolvedIdentifier};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::chats::Target;
use crate::services::conversations::{open_room_field, RoomField};
use crate::services::upstream::{bridge_error, homeserver_error};
use crate::services::{params, users, Context};
use crate::store::users::UserRow;

/// Longest `q`, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;

/// Someone the user can start a chat with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contact {
    /// `whatsapp`, `telegram`, `discord` or `matrix`.
    pub platform: &'static str,
    /// The platform's id of the person (for `matrix` the Matrix ID).
    pub id: String,
    pub name: Option<String>,
    pub avatar_url: Option<String>,
    /// `tel:+…`, `mailto:…`, usernames…; for `matrix` the Matrix ID.
    pub identifiers: Vec<String>,
    /// The bridge's ghost of the person, or the Matrix ID.
    pub matrix_id: Option<String>,
    /// The existing direct chat, when there is one.
    pub room_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contacts {
    pub contacts: Vec<Contact>,
    /// False only when the one platform asked for cannot list contacts.
    pub supported: bool,
    pub unavailable: Vec<&'static str>,
    pub unsupported: Vec<&'static str>,
}

/// What one source answered.
enum Part {
    Listed(Vec<Contact>),
    Unsupported,
    NotLoggedIn,
}

pub async fn list(
    state: &Context,
    user_id: &str,
    platform: Option<&str>,
    q: Option<&str>,
    limit: Option<i64>,
) -> AppResult<Contacts> {
    let limit = params::parse_limit(limit, DEFAULT_LIMIT, MAX_LIMIT)? as usize;
    let q = q.map(str::trim).filter(|q| !q.is_empty());
    if q.is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS || q.chars().any(char::is_control)) {
        return Err(AppError::invalid(
            "q",
            format!("must be at most {MAX_QUERY_CHARS} characters without control characters"),
        ));
    }
    let target = platform.map(Target::parse).transpose()?;
    let user = users::load(state, user_id).await?;
    match target {
        Some(t) => one(state, &user, t, q, limit).await,
        None => merged(state, &user, q, limit).await,
    }
}

async fn one(
    state: &Context,
    user: &UserRow,
    target: Target,
    q: Option<&str>,
    limit: usize,
) -> AppResult<Contacts> {
    let part = match target {
        Target::Bridge(p) => {
            state.bridges.clients.get(p)?;
            from_bridge(state, user, p, q)
                .await
                .map_err(|e| bridge_error(e, ErrorCode::NotFound))?
        }
        Target::Matrix => from_matrix(state, user, q, limit).await?,
    };
    let mut out = Contacts {
        supported: true,
        ..Contacts::default()
    };
    match part {
        Part::Listed(mut list) => {
            list.truncate(limit);
            out.contacts = list;
        }
        Part::Unsupported => {
            out.supported = false;
            out.unsupported.push(target.id());
        }
        Part::NotLoggedIn => {
            let name = match target {
                Target::Bridge(p) => p.name(),
                Target::Matrix => "Matrix",
            };
            return Err(AppError::conflict(
                ErrorCode::NotLoggedIn,
                format!("no {name} account is logged in on the bridge; connect one first"),
            ));
        }
    }
    Ok(out)
}

async fn merged(
    state: &Context,
    user: &UserRow,
    q: Option<&str>,
    limit: usize,
) -> AppResult<Contacts> {
    let mut targets: Vec<Target> = Platform::ALL
        .into_iter()
        .filter(|p| state.bridges.clients.is_configured(*p))
        .map(Target::Bridge)
        .collect();
    if state.matrix.is_some() && user.matrix_user_id.is_some() {
        targets.push(Target::Matrix);
    }
    let parts = join_all(targets.iter().map(|t| async move {
        match *t {
            Target::Bridge(p) => from_bridge(state, user, p, q)
                .await
                .map_err(|e| tracing::warn!(error = %e, "contacts of a bridge unavailable")),
            Target::Matrix => from_matrix(state, user, q, limit)
                .await
                .map_err(|e| tracing::warn!(error = %e, "Matrix contacts unavailable")),
        }
    }))
    .await;
    let mut out = Contacts {
        supported: true,
        ..Contacts::default()
    };
    let mut lists = Vec::new();
    for (target, part) in targets.into_iter().zip(parts) {
        match part {
            Ok(Part::Listed(list)) => lists.push(list),
            Ok(Part::Unsupported) => out.unsupported.push(target.id()),
            Ok(Part::NotLoggedIn) => {}
            Err(()) => out.unavailable.push(target.id()),
        }
    }
    out.contacts = merge(lists, q.is_some(), limit);
    Ok(out)
}

/// Without a query: everything sorted by name; with one: the sources take turns.
fn merge(lists: Vec<Vec<Contact>>, ranked: bool, limit: usize) -> Vec<Contact> {
    if !ranked {
        let mut all: Vec<Contact> = lists.into_iter().flatten().collect();
        all.sort_by_cached_key(|c| {
            let name = c.name.as_deref().unwrap_or(&c.id).to_lowercase();
            (name, c.platform, c.id.clone())
        });
        all.truncate(limit);
        return all;
    }
    let mut iters: Vec<_> = lists.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    while out.len() < limit {
        let before = out.len();
        for it in &mut iters {
            if let Some(c) = it.next() {
                out.push(c);
            }
        }
        if out.len() == before {
            break;
        }
    }
    out.truncate(limit);
    out
}

/// One bridge's contacts or search results. `NotLoggedIn` and `Unsupported` are answers,
/// not failures; other errors are the bridge's.
async fn from_bridge(
    state: &Context,
    user: &UserRow,
    platform: Platform,
    q: Option<&str>,
) -> Result<Part, BridgeError> {
    let client = state.bridges.clients.get(platform)?;
    let Some(mxid) = user.matrix_user_id.as_deref() else {
        return Ok(Part::NotLoggedIn);
    };
    let found = match q {
        Some(q) => client.search_users(mxid, q).await,
        None => client.contacts(mxid).await,
    };
    match found {
        Ok(list) => Ok(Part::Listed(
            list.into_iter()
                .map(|r| bridge_contact(platform, r))
                .collect(),
        )),
        Err(e) => match e.failure() {
            Failure::Unsupported => Ok(Part::Unsupported),
            Failure::NotLoggedIn => Ok(Part::NotLoggedIn),
            _ => Err(e),
        },
    }
}

fn bridge_contact(platform: Platform, r: ResolvedIdentifier) -> Contact {
    Contact {
        platform: platform.id(),
        id: r.id,
        name: r.name.filter(|n| !n.is_empty()),
        avatar_url: r.avatar_url.filter(|a| !a.is_empty()),
        identifiers: r.identifiers.unwrap_or_default(),
        matrix_id: r.mxid.filter(|m| !m.is_empty()),
        room_id: r.dm_room_mxid.filter(|m| !m.is_empty()),
    }
}

/// Matrix: the user directory for `q`, else the partners of the joined direct chats.
async fn from_matrix(
    state: &Context,
    user: &UserRow,
    q: Option<&str>,
    limit: usize,
) -> AppResult<Part> {
    let directs = direct_chats(state, user).await?;
    let Some(q) = q else {
        return Ok(Part::Listed(directs.into_values().collect()));
    };
    let matrix = state.matrix.as_ref().ok_or_else(|| {
        AppError::unavailable(
            ErrorCode::HomeserverUnavailable,
            "no Matrix homeserver is configured on this server",
        )
    })?;
    let token = users::matrix_token_of(&state.master, user)?.ok_or_else(|| {
        AppError::conflict(
            ErrorCode::MatrixAccountMissing,
            "this account has no Matrix session yet; sign in again in the native app",
        )
    })?;
    let found = matrix
        .search_user_directory(&token, q, limit as u32)
        .await
        .map_err(homeserver_error)?;
    let me = user.matrix_user_id.as_deref();
    Ok(Part::Listed(
        found
            .into_iter()
            .filter(|u| Some(u.user_id.as_str()) != me)
            .map(|u| Contact {
                platform: "matrix",
                room_id: directs.get(&u.user_id).and_then(|c| c.room_id.clone()),
                identifiers: vec![u.user_id.clone()],
                matrix_id: Some(u.user_id.clone()),
                name: u.display_name,
                avatar_url: u.avatar_url,
                id: u.user_id,
            })
            .collect(),
    ))
}

/// The partners of the user's joined plain-Matrix direct chats (newest chat per partner),
/// by their display name (else named as their rooms are).
async fn direct_chats(state: &Context, user: &UserRow) -> AppResult<HashMap<String, Contact>> {
    let master = state.master.clone();
    let user = user.clone();
    state
        .db(move |c| {
            let rows = crate::store::rooms::joined_direct(c, &user.id)?;
            let dek = users::data_key(&master, &user)?;
            let mut out: HashMap<String, Contact> = HashMap::new();
            for r in rows.into_iter().filter(|r| r.platform.is_none()) {
                let Some(partner) = r.recipient_id.clone() else {
                    continue;
                };
                let open = |field, sealed: &Option<Vec<u8>>| {
                    open_room_field(&dek, &user.id, &r.room_id, field, sealed.as_deref())
                };
                out.entry(partner.clone()).or_insert_with(|| Contact {
                    platform: "matrix",
                    id: partner.clone(),
                    // The partner's own display name, else the chat's name.
                    name: open(RoomField::RecipientName, &r.recipient_name_enc)
                        .or_else(|| open(RoomField::Name, &r.name_enc)),
                    avatar_url: open(RoomField::Avatar, &r.avatar_enc),
                    identifiers: vec![partner.clone()],
                    matrix_id: Some(partner),
                    room_id: Some(r.room_id.clone()),
                });
            }
            Ok(out)
        })
        .await
}
