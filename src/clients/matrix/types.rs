//! The parts of the client-server API's `/sync` response Switchboard reads. Everything is
//! lenient (`default`): homeservers omit empty sections.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Default, Deserialize)]
pub struct SyncResponse {
    pub next_batch: String,
    #[serde(default)]
    pub rooms: Rooms,
    #[serde(default)]
    pub account_data: Events,
    /// End-to-end encryption: kept as received for the crypto machine.
    #[serde(default)]
    pub to_device: RawEvents,
    #[serde(default)]
    pub device_lists: Value,
    #[serde(default)]
    pub device_one_time_keys_count: Value,
    #[serde(default)]
    pub device_unused_fallback_key_types: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct RawEvents {
    #[serde(default)]
    pub events: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Rooms {
    #[serde(default)]
    pub join: HashMap<String, JoinedRoom>,
    #[serde(default)]
    pub invite: HashMap<String, InvitedRoom>,
    #[serde(default)]
    pub leave: HashMap<String, LeftRoom>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Events {
    #[serde(default)]
    pub events: Vec<Event>,
}

#[derive(Debug, Default, Deserialize)]
pub struct JoinedRoom {
    #[serde(default)]
    pub state: Events,
    #[serde(default)]
    pub timeline: Timeline,
    #[serde(default)]
    pub ephemeral: Events,
    #[serde(default)]
    pub account_data: Events,
    #[serde(default)]
    pub unread_notifications: UnreadNotifications,
    #[serde(default)]
    pub summary: RoomSummary,
}

#[derive(Debug, Default, Deserialize)]
pub struct InvitedRoom {
    #[serde(default)]
    pub invite_state: Events,
}

#[derive(Debug, Default, Deserialize)]
pub struct LeftRoom {
    #[serde(default)]
    pub timeline: Timeline,
}

#[derive(Debug, Default, Deserialize)]
pub struct Timeline {
    #[serde(default)]
    pub events: Vec<Event>,
    #[serde(default)]
    pub limited: bool,
    #[serde(default)]
    pub prev_batch: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct UnreadNotifications {
    #[serde(default)]
    pub notification_count: Option<i64>,
    #[serde(default)]
    pub highlight_count: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct RoomSummary {
    #[serde(default, rename = "m.heroes")]
    pub heroes: Option<Vec<String>>,
    #[serde(default, rename = "m.joined_member_count")]
    pub joined_member_count: Option<i64>,
    #[serde(default, rename = "m.invited_member_count")]
    pub invited_member_count: Option<i64>,
}

/// A client event (state or timeline, or account data / ephemeral which lack ids).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(default)]
    pub sender: Option<String>,
    #[serde(default)]
    pub origin_server_ts: Option<i64>,
    #[serde(default)]
    pub state_key: Option<String>,
    #[serde(default)]
    pub content: Value,
    #[serde(default)]
    pub redacts: Option<String>,
    #[serde(default)]
    pub unsigned: Option<Value>,
}
