//! Room names computed from members (see the module above) and the direct partner's name.

use super::{RoomHint, RoomView};
use crate::clients::matrix::types::RoomSummary;
use crate::workers::sync::context::IngestContext;

impl RoomView {
    /// The direct partner's display name: as seen in this response or the homeserver
    /// lookup, else as stored while the partner is the same; null when unknown (clients
    /// fall back to `recipientId`).
    pub(super) fn recipient_name(&self, hint: Option<&RoomHint>) -> Option<String> {
        let partner = self.row.recipient_id.as_deref()?;
        let seen = self
            .display_names
            .get(partner)
            .or_else(|| hint.and_then(|h| h.display_names.get(partner)));
        match seen {
            Some(name) => Some(name.clone()),
            None if self
                .existing
                .as_ref()
                .and_then(|e| e.recipient_id.as_deref())
                == Some(partner) =>
            {
                self.stored.recipient_name.clone()
            }
            None => None,
        }
    }

    pub(super) fn computed_name(
        &self,
        ctx: &IngestContext<'_>,
        summary: Option<&RoomSummary>,
        hint: Option<&RoomHint>,
    ) -> String {
        let me = ctx.reader.matrix_user_id.as_str();
        let heroes: Vec<&str> = summary
            .and_then(|s| s.heroes.as_ref())
            .map(|h| {
                h.iter()
                    .map(String::as_str)
                    .filter(|id| *id != me)
                    .collect()
            })
            .unwrap_or_default();
        let mut ids = if heroes.is_empty() {
            self.others(ctx)
        } else {
            heroes
        };
        if ids.is_empty() {
            // Nobody else has joined yet (a chat just started): name it after the invited,
            // as the homeserver's heroes would.
            ids = self.invited_others(me, hint);
        }
        if ids.is_empty() {
            // Only bots (e.g. a bridge management room): name it after them.
            ids = self
                .members
                .iter()
                .map(String::as_str)
                .filter(|m| *m != me)
                .collect();
        }
        if ids.is_empty() {
            // An invite: name it after the inviter.
            ids.extend(self.inviter.as_deref().filter(|i| *i != me));
        }
        let names: Vec<String> = ids
            .iter()
            .map(|id| {
                self.display_names
                    .get(*id)
                    .or_else(|| hint.and_then(|h| h.display_names.get(*id)))
                    .cloned()
                    .unwrap_or_else(|| localpart(id).to_owned())
            })
            .collect();
        join_names(&names)
    }

    /// The invited (known here or from the hint), not yet members, neither me nor a bot;
    /// sorted, once each.
    fn invited_others<'a>(&'a self, me: &str, hint: Option<&'a RoomHint>) -> Vec<&'a str> {
        let invited = hint.map(|h| h.invited.iter()).into_iter().flatten();
        let mut all: Vec<&str> = self
            .invited
            .iter()
            .chain(invited)
            .map(String::as_str)
            .filter(|m| *m != me && !self.bots.contains(*m) && !self.members.contains(*m))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

pub fn localpart(user_id: &str) -> &str {
    user_id
        .trim_start_matches('@')
        .split(':')
        .next()
        .unwrap_or(user_id)
}

/// "A", "A and B", "A, B and C", "A, B, C and 2 others"; "Empty room" for none.
pub fn join_names(names: &[String]) -> String {
    match names {
        [] => "Empty room".to_owned(),
        [one] => one.clone(),
        [init @ .., last] if names.len() <= 3 => format!("{} and {last}", init.join(", ")),
        _ => format!("{} and {} others", names[..3].join(", "), names.len() - 3),
    }
}
