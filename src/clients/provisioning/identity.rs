//! Who the configured bridges are on the homeserver: each platform's bot
//! (`[bridges.<platform>] bot_user_id`) and its ghost users.
//!
//! Anyone on the homeserver can create a room, put `m.bridge` state in it and invite the
//! user, so the sync worker trusts Matrix users, not room state:
//! - invites are joined automatically only when the inviter is a configured bot or one of
//!   its ghosts; every other invite waits for the user (`POST /api/rooms/{id}/accept`);
//! - `m.bridge` / `uk.half-shot.bridge` state counts only when the configured bot of the
//!   platform it names sent it.
//!
//! Ghosts are recognised the way mautrix names them: on the bot's server, with a per-bridge
//! localpart prefix (`ghost_prefix`, default `<platform>_`, e.g. `@whatsapp_4915…:example.org`).
//! This is sound because a bridge's appservice registration claims that namespace
//! exclusively: the homeserver refuses to register such users for anyone else.

pub use crate::config::matrix_ids::{check_ghost_prefix, server_of};
use crate::config::BridgesConfig;

fn localpart_of(user_id: &str) -> Option<&str> {
    user_id.strip_prefix('@')?.split_once(':').map(|(l, _)| l)
}

/// The default ghost prefix of a platform: `whatsapp_`, `telegram_`, `discord_`.
pub fn default_ghost_prefix(platform: &str) -> String {
    format!("{platform}_")
}

#[derive(Debug, Clone)]
struct Bridge {
    platform: &'static str,
    bot: String,
    server: String,
    ghost_prefix: String,
}

/// The configured bridges' bots and ghost namespaces.
#[derive(Debug, Clone, Default)]
pub struct BridgeIdentities {
    bridges: Vec<Bridge>,
}

impl BridgeIdentities {
    /// Every platform section with a `bot_user_id` (without one, nothing of that bridge is
    /// trusted: neither its state nor its ghosts).
    pub fn from_config(config: &BridgesConfig) -> Self {
        Self::new(config.iter().filter_map(|(platform, b)| {
            let bot = b.bot_user_id.clone()?;
            let prefix = b
                .ghost_prefix
                .clone()
                .unwrap_or_else(|| default_ghost_prefix(platform));
            Some((platform, bot, prefix))
        }))
    }

    /// From (platform, bot user ID, ghost prefix); bots that are no Matrix ID are skipped.
    pub fn new(bridges: impl IntoIterator<Item = (&'static str, String, String)>) -> Self {
        let bridges = bridges
            .into_iter()
            .filter_map(|(platform, bot, ghost_prefix)| {
                let server = server_of(&bot)?.to_owned();
                Some(Bridge {
                    platform,
                    bot,
                    server,
                    ghost_prefix,
                })
            })
            .collect();
        Self { bridges }
    }

    /// The platform whose configured bot `user` is.
    pub fn bot_platform(&self, user: &str) -> Option<&'static str> {
        self.bridges
            .iter()
            .find(|b| b.bot == user)
            .map(|b| b.platform)
    }

    /// The platform whose ghost `user` is (on the bot's server, under its prefix).
    pub fn ghost_platform(&self, user: &str) -> Option<&'static str> {
        let (local, server) = (localpart_of(user)?, server_of(user)?);
        self.bridges
            .iter()
            .find(|b| {
                b.server == server
                    && local.len() > b.ghost_prefix.len()
                    && local.starts_with(&b.ghost_prefix)
                    && b.bot != user
            })
            .map(|b| b.platform)
    }

    /// Whether `user` is a configured bot or one of its ghosts: its invites are joined
    /// automatically.
    pub fn is_trusted_inviter(&self, user: &str) -> bool {
        self.bot_platform(user).is_some() || self.ghost_platform(user).is_some()
    }

    /// The configured bots' Matrix IDs.
    pub fn bots(&self) -> impl Iterator<Item = &str> {
        self.bridges.iter().map(|b| b.bot.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BridgeConfig;

    fn ids() -> BridgeIdentities {
        let config = BridgesConfig {
            whatsapp: Some(BridgeConfig {
                bot_user_id: Some("@whatsappbot:hs.org".into()),
                ..BridgeConfig::default()
            }),
            telegram: Some(BridgeConfig {
                bot_user_id: Some("@telegrambot:hs.org".into()),
                ghost_prefix: Some("tg_".into()),
                ..BridgeConfig::default()
            }),
            // No bot: nothing of Discord is trusted.
            discord: Some(BridgeConfig::default()),
        };
        BridgeIdentities::from_config(&config)
    }

    #[test]
    fn bots_and_ghosts_on_the_bots_server_are_recognised() {
        let ids = ids();
        assert_eq!(ids.bot_platform("@whatsappbot:hs.org"), Some("whatsapp"));
        assert_eq!(ids.bot_platform("@whatsapp_1:hs.org"), None);
        assert_eq!(
            ids.ghost_platform("@whatsapp_4915:hs.org"),
            Some("whatsapp")
        );
        assert_eq!(ids.ghost_platform("@tg_99:hs.org"), Some("telegram"));
        assert!(ids.is_trusted_inviter("@telegrambot:hs.org"));
        assert!(ids.is_trusted_inviter("@tg_99:hs.org"));
        assert_eq!(ids.bots().count(), 2);
    }

    #[test]
    fn look_alikes_are_not_ghosts() {
        let ids = ids();
        for user in [
            "@whatsapp_4915:evil.org", // another server
            "@whatsapp_:hs.org",       // the bare prefix
            "@whatsappx:hs.org",       // no separator
            "@telegram_1:hs.org",      // telegram uses tg_ here
            "@discord_1:hs.org",       // discord has no bot configured
            "@mallory:hs.org",
            "whatsapp_1:hs.org",
            "@whatsapp_1",
        ] {
            assert!(!ids.is_trusted_inviter(user), "{user}");
        }
    }

    #[test]
    fn ghost_prefixes_are_checked() {
        assert!(check_ghost_prefix("whatsapp_").is_ok());
        assert!(check_ghost_prefix("tg.").is_ok());
        for bad in ["", "s", "sb_", "sb_x", "Upper_", "with space", "@wa_"] {
            assert!(check_ghost_prefix(bad).is_err(), "{bad}");
        }
        assert_eq!(server_of("@a:b"), Some("b"));
        assert_eq!(server_of("@:b"), None);
        assert_eq!(server_of("a:b"), None);
    }
}
