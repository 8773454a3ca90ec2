//! `GET /api/contacts` and `POST /api/chats`: finding people and starting conversations
//! with them. Native sessions and personal API tokens (allowlist version 4: older tokens
//! opt in).

use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::security::TokenAuth;
use super::ApiTags;
use crate::error::{AppError, ErrorCode};
use crate::services::allowlist;
use crate::services::chats::{self, NewChat};
use crate::services::contacts::{self, Contact, Contacts};
use crate::services::session::Principal;
use crate::state::AppState;

/// Someone the user can start a conversation with.
#[derive(Debug, Object)]
#[oai(rename = "Contact", rename_all = "camelCase")]
pub struct ContactView {
    /// `whatsapp`, `telegram`, `discord` or `matrix`.
    pub platform: String,
    /// The platform's id of the person (the bridge's contact id; for `matrix` the Matrix
    /// ID). Pass it as `identifier` to `POST /api/chats`.
    pub id: String,
    /// Display name; null when the platform gave none.
    pub name: Option<String>,
    /// `mxc://` avatar; null when none.
    pub avatar_url: Option<String>,
    /// The person's identifiers as the platform gives them (`tel:+4915…`, usernames, …;
    /// for `matrix` the Matrix ID). May be empty.
    pub identifiers: Vec<String>,
    /// The bridge's Matrix user (ghost) for the person, or their Matrix ID; null when
    /// unknown.
    pub matrix_id: Option<String>,
    /// The existing direct conversation with the person; null when there is none yet.
    pub room_id: Option<String>,
}

impl From<Contact> for ContactView {
    fn from(c: Contact) -> Self {
        Self {
            platform: c.platform.to_owned(),
            id: c.id,
            name: c.name,
            avatar_url: c.avatar_url,
            identifiers: c.identifiers,
            matrix_id: c.matrix_id,
            room_id: c.room_id,
        }
    }
}

#[derive(Debug, Object)]
pub struct ContactList {
    /// At most `limit` contacts.
    pub contacts: Vec<ContactView>,
    /// False when the one `platform` asked for cannot list contacts (its bridge answers
    /// `M_UNRECOGNIZED`); `contacts` is then empty. Always true for the merged list.
    pub supported: bool,
    /// Platforms left out of the merged list because they failed (unreachable, timed out
    /// or answering errors). Empty when `platform` is given (a failure is an error then).
    pub unavailable: Vec<String>,
    /// Platforms whose bridge cannot list or search contacts.
    pub unsupported: Vec<String>,
}

impl From<Contacts> for ContactList {
    fn from(c: Contacts) -> Self {
        let names = |v: Vec<&'static str>| v.into_iter().map(str::to_owned).collect();
        Self {
            contacts: c.contacts.into_iter().map(Into::into).collect(),
            supported: c.supported,
            unavailable: names(c.unavailable),
            unsupported: names(c.unsupported),
        }
    }
}

/// A direct chat (`identifier`) or a new group (`participants`, optional `name`): exactly
/// one of `identifier` and `participants`.
#[derive(Debug, Object)]
pub struct StartChatRequest {
    /// `whatsapp`, `telegram`, `discord` or `matrix`.
    pub platform: String,
    /// A direct chat: who to write to, a phone number (normalised to E.164, e.g.
    /// `+4915123456789`), a username, a bridge contact id (`id` of `GET /api/contacts`), or
    /// for `matrix` a Matrix user ID (`@alice:example.org`). At most 256 characters.
    pub identifier: Option<String>,
    /// A new group: 1 to 100 people besides the user, each written as `identifier` is.
    pub participants: Option<Vec<String>>,
    /// The new group's name (with `participants`): at most 255 characters; some networks
    /// require one (WhatsApp), others name the group after its members when it is blank.
    pub name: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct StartedChat {
    /// The conversation's Matrix room ID (listed in `GET /api/rooms` already).
    pub room_id: String,
    /// True when the conversation was created now; false when it existed.
    pub created: bool,
}

impl From<NewChat> for StartedChat {
    fn from(c: NewChat) -> Self {
        Self {
            room_id: c.room_id,
            created: c.created,
        }
    }
}

#[derive(ApiResponse)]
pub enum StartChatResponse {
    /// The conversation existed: the same room as before.
    #[oai(status = 200)]
    Existing(Json<StartedChat>),
    /// A new conversation was created.
    #[oai(status = 201)]
    Created(Json<StartedChat>),
}

pub struct ContactsApi;

#[OpenApi(tag = "ApiTags::Contacts")]
impl ContactsApi {
    /// List or search contacts
    ///
    /// People the user can start a conversation with. With `platform` (`whatsapp`,
    /// `telegram`, `discord`): that bridge's contact list (`GET /v3/contacts` of its
    /// provisioning API), or its user search when `q` is given (`POST /v3/search_users`);
    /// a bridge that cannot list contacts answers an empty list with `supported: false`.
    /// With `platform=matrix`: the homeserver's user directory for `q` (users sharing a room
    /// with the user or in a public room, on Synapse's defaults), or without `q` the people
    /// of the user's plain-Matrix direct conversations. Without `platform`: every
    /// configured platform and Matrix at once, merged (sorted by name without `q`; with
    /// `q` each platform keeps its ranking and they take turns); a bridge that fails is
    /// left out and named in `unavailable`, one without listing in `unsupported`, one the
    /// user has no login on is left out; the merged list never fails because of a bridge.
    ///
    /// `limit` 1 to 100 (default 50); `q` at most 200 characters (blank: none). 400
    /// `invalid_request` naming the field, 400 `invalid_platform`; for one bridge platform:
    /// 409 `not_logged_in` when the user has no login on it, 503 `bridge_not_configured` /
    /// `bridge_unavailable`, 502 `bridge_error` naming the bridge. Native sessions and
    /// personal tokens (tokens created before allowlist version 4 opt in first).
    #[oai(path = "/api/contacts", method = "get", operation_id = "contacts_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// `whatsapp`, `telegram`, `discord` or `matrix`; absent: all merged.
        platform: Query<Option<String>>,
        /// Search words (name, username, phone number, Matrix ID).
        q: Query<Option<String>>,
        /// 1 to 100, default 50.
        limit: Query<Option<i64>>,
    ) -> Result<Json<ContactList>, AppError> {
        let found = contacts::list(
            &state,
            auth.0.user_id(),
            platform.0.as_deref(),
            q.0.as_deref(),
            limit.0,
        )
        .await?;
        Ok(Json(found.into()))
    }

    /// Start a conversation or a group
    ///
    /// **Direct chat** (`identifier`):
    /// opens a direct conversation with someone, answering 201 `{roomId, created: true}`,
    /// or 200 `{roomId, created: false}` with the same room when it exists already. The
    /// room is in `GET /api/rooms` and readable at once (stored before the answer, not
    /// after the next sync).
    ///
    /// On a bridge the identifier is resolved first (`GET /v3/resolve_identifier`), then
    /// the bridge creates the direct chat (`POST /v3/create_dm`); Switchboard joins the
    /// portal room it is invited to, after checking that the bridge's bot or one of its
    /// ghosts created it. On `matrix` Switchboard creates an end-to-end encrypted direct
    /// room with the person invited (`is_direct`) and records it in `m.direct`.
    ///
    /// Identifiers are checked before anything is sent: phone numbers are normalised to
    /// E.164 (WhatsApp; Telegram with `+`), usernames and contact ids are 1 to 128
    /// characters of `A-Z a-z 0-9 . _ - @ : + =`, Matrix IDs follow the grammar; at most
    /// 256 characters; 400 `invalid_request` naming `identifier` (or `platform`) otherwise.
    /// 404 `identifier_not_found` when nobody has it; 409 `not_logged_in` when the user has
    /// no login on that bridge; 502 `bridge_error` naming the bridge when it fails, 503
    /// `bridge_unavailable` when it cannot be reached, 503 `bridge_not_configured`.
    /// Each call that passes validation counts against a per-user budget of
    /// `[rate_limit] new_chats_per_hour` (20; all tokens and sessions together): 429
    /// `rate_limited` with `Retry-After` beyond it. Native sessions and personal tokens
    /// (tokens created before allowlist version 4 opt in first).
    ///
    /// **Group** (`participants`, optional `name`): always a new room, 201 `{roomId,
    /// created: true}`, listed at once. 1 to 100 participants besides the user, each
    /// checked as `identifier` is (400 naming `participants[i]`; the same person twice, or
    /// the user's own Matrix ID, is 400 too); `name` at most 255 characters. On a bridge the
    /// network's group types are read first (`GET /v3/capabilities`,
    /// `provisioning.group_creation`; the plain `group` type when offered): none is 409
    /// `not_supported`, and its bounds (how many participants, whether a name is required)
    /// are 400 naming the field; every participant is resolved to the network's user id
    /// (`GET /v3/resolve_identifier`; 404 `identifier_not_found` naming the first unknown
    /// one), then the bridge creates the group (`POST /v3/create_group/{type}` with those
    /// ids and the name) and Switchboard joins its portal room after checking that the
    /// bridge's bot or a ghost created it. On `matrix` every participant must be known to
    /// the homeserver (404 `identifier_not_found` naming it), and Switchboard creates an
    /// end-to-end encrypted private room with them invited. Other errors and the budget as
    /// for a direct chat (one group counts once). Personal tokens created before allowlist
    /// version 6 that have not opted in get 403 `forbidden_for_api_token` for this form.
    /// Giving both `identifier` and `participants` is 400; `name` without `participants`
    /// is 400.
    #[oai(path = "/api/chats", method = "post", operation_id = "chats_start")]
    async fn start(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        body: Json<StartChatRequest>,
    ) -> Result<StartChatResponse, AppError> {
        let body = body.0;
        let chat =
            match (body.identifier, body.participants) {
                (Some(_), Some(_)) => return Err(AppError::invalid(
                    "participants",
                    "give either identifier (a direct chat) or participants (a group), not both",
                )),
                (Some(identifier), None) => {
                    if body.name.is_some() {
                        return Err(AppError::invalid(
                            "name",
                            "names a group: give participants, not identifier",
                        ));
                    }
                    chats::start(&state, auth.0.user_id(), &body.platform, &identifier).await?
                }
                (None, Some(participants)) => {
                    token_may_create_groups(&auth.0)?;
                    let name = body.name.as_deref();
                    chats::start_group(
                        &state,
                        auth.0.user_id(),
                        &body.platform,
                        &participants,
                        name,
                    )
                    .await?
                }
                (None, None) => {
                    return Err(AppError::invalid(
                        "identifier",
                        "is required (or participants, for a group)",
                    ))
                }
            };
        Ok(if chat.created {
            StartChatResponse::Created(Json(chat.into()))
        } else {
            StartChatResponse::Existing(Json(chat.into()))
        })
    }
}

/// 403 `forbidden_for_api_token` for a personal token from before the allowlist version
/// that opened group creation, unless it opted in.
fn token_may_create_groups(principal: &Principal) -> Result<(), AppError> {
    let Principal::ApiToken {
        allowlist_version, ..
    } = principal
    else {
        return Ok(());
    };
    if allowlist::token_may_create_groups(*allowlist_version) {
        return Ok(());
    }
    Err(AppError::forbidden(
        ErrorCode::ForbiddenForApiToken,
        format!(
            "creating a group (POST /api/chats with participants) is open to personal tokens \
             from allowlist version {}; this token is older: opt it in first (PATCH \
             /api/developer/tokens/{{id}} with {{\"optIn\": true}})",
            allowlist::GROUPS_SINCE
        ),
    ))
}
