//! The bridge emulator's group creation, with the shapes of mautrix-go's
//! `bridgev2/matrix/provisioning.go` and `bridgev2/provisionutil/creategroup.go`:
//!
//! - `GET /v3/capabilities` answers `bridgev2.ProvisioningCapabilities`
//!   (`{resolve_identifier: {…}, group_creation: {<type>: GroupTypeCapabilities}}`).
//!   WhatsApp offers `group` (name required, at most 25 characters as the real connector
//!   says, 1 to 1024 participants); Telegram offers `group` with an optional name; Discord
//!   offers none (its `group_creation` is empty), like a network connector without
//!   `GroupCreatingNetworkAPI`.
//! - `POST /v3/create_group/{type}` takes `GroupCreateParams` (`participants`: network
//!   user ids, or ghost MXIDs, which provisionutil normalises; `name: {name}`), checks them
//!   as provisionutil does (`M_UNRECOGNIZED` 501 for a bridge or type without group
//!   creation, `M_INVALID_PARAM` 400 for the bounds or an unknown user id,
//!   `FI.MAU.NOT_LOGGED_IN` without a login), and answers 200 `{id, mxid}`.
//!
//! The portal is real: the bridge bot creates the room on the test Synapse with the name
//! and `m.bridge` state, invites the participants' ghosts (who join) and the user, as
//! bridgev2's `CreateMatrixRoom` does.

use poem::Response;
use serde_json::{json, Value};

use super::snc::directory;
use super::{error, json_response, Emu, Network};
use crate::common::matrix;

impl Emu {
    pub(super) fn capabilities(&self) -> Value {
        let field = |allowed: bool, required: bool, min: usize, max: usize| json!({"allowed": allowed, "required": required, "min_length": min, "max_length": max});
        let group_creation = match self.network {
            Network::WhatsApp => json!({"group": {
                "type_description": "a WhatsApp group",
                "name": field(true, true, 0, 25),
                "username": field(false, false, 0, 0),
                "avatar": field(true, false, 0, 0),
                "topic": field(true, false, 0, 2048),
                "disappear": field(true, false, 0, 0),
                "participants": field(true, true, 1, 1024),
                "parent": field(false, false, 0, 0),
            }}),
            Network::Telegram => json!({"group": {
                "type_description": "a Telegram group",
                "name": field(true, false, 0, 255),
                "participants": field(true, true, 1, 200),
            }}),
            Network::Discord => json!({}),
        };
        json!({
            "resolve_identifier": {"create_dm": true, "lookup_phone": true, "lookup_username": true,
                                   "contact_list": self.network != Network::Telegram,
                                   "search": self.network != Network::Telegram},
            "group_creation": group_creation,
        })
    }

    pub(super) async fn create_group(&self, user: &str, kind: &str, body: &Value) -> Response {
        let caps = self.capabilities();
        let Some(spec) = caps["group_creation"].get(kind).cloned() else {
            return if caps["group_creation"]
                .as_object()
                .is_some_and(|o| o.is_empty())
            {
                error(
                    501,
                    "M_UNRECOGNIZED",
                    "This bridge does not support creating groups",
                )
            } else {
                error(
                    501,
                    "M_UNRECOGNIZED",
                    &format!("Unrecognized group type {kind}"),
                )
            };
        };
        if let Some(resp) = self.without_login(user) {
            return resp;
        }
        let Some(participants) = body["participants"].as_array() else {
            return error(400, "M_NOT_JSON", "Failed to decode request body");
        };
        let (min, max) = (
            spec["participants"]["min_length"].as_u64().unwrap_or(0) as usize,
            spec["participants"]["max_length"].as_u64().unwrap_or(0) as usize,
        );
        if participants.len() < min || (max > 0 && participants.len() > max) {
            return error(400, "M_INVALID_PARAM", "Wrong number of members");
        }
        let mut remotes = Vec::new();
        for p in participants {
            // Network user ids only (resolve_identifier's `id`); anything else is invalid.
            let id = p.as_str().unwrap_or_default();
            match directory(self.network).iter().find(|r| r.id == id) {
                Some(r) => remotes.push(r),
                None => {
                    return error(
                        400,
                        "M_INVALID_PARAM",
                        &format!("User ID {id:?} is not valid on this network"),
                    )
                }
            }
        }
        let name = body["name"]["name"].as_str().unwrap_or_default();
        if name.is_empty() && spec["name"]["required"] == true {
            return error(400, "M_INVALID_PARAM", "Name is required");
        }
        let name_max = spec["name"]["max_length"].as_u64().unwrap_or(0) as usize;
        if name_max > 0 && name.len() > name_max {
            return error(
                400,
                "M_INVALID_PARAM",
                &format!("Name must be at most {name_max} characters"),
            );
        }
        let _one = self.creating.lock().await;
        let net = self.network.id();
        let group_id = format!("{}@g.us", self.next_id("120363"));
        let bot = matrix::register_or_login(&format!("{net}bot")).await;
        let mut ghosts = Vec::new();
        for r in &remotes {
            ghosts.push(self.ghost(r).await);
        }
        let server = user.split_once(':').map_or("localhost", |(_, s)| s);
        let bridge = json!({
            "bridgebot": bot.user_id,
            "creator": bot.user_id,
            "protocol": {"id": net, "displayname": net},
            "channel": {"id": group_id, "displayname": name},
        });
        let state_key = format!("{server}/{net}");
        let mut invite: Vec<String> = ghosts.iter().map(|g| g.user_id.clone()).collect();
        invite.push(user.to_owned());
        let mut create = json!({
            "preset": "private_chat",
            "invite": invite,
            "initial_state": [
                {"type": "m.bridge", "state_key": state_key, "content": bridge},
                {"type": "uk.half-shot.bridge", "state_key": state_key, "content": bridge},
            ],
        });
        if !name.is_empty() {
            create["name"] = json!(name);
        }
        let room = bot.create_room_with(create).await;
        for g in &ghosts {
            g.join(&room).await;
        }
        let ids = remotes.iter().map(|r| r.id.to_owned()).collect();
        self.state
            .lock()
            .unwrap()
            .groups
            .insert(group_id.clone(), (user.to_owned(), room.clone(), ids));
        json_response(200, json!({"id": group_id, "mxid": room}))
    }
}
