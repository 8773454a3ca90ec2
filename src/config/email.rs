//! `[email]`: the users' own mailboxes (IMAP/SMTP; docs/design.md).

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::HumanDuration;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmailConfig {
    /// How often mailboxes other than INBOX are polled (INBOX is watched with IDLE, and
    /// re-checked at this interval too).
    pub poll_interval: HumanDuration,
    /// The first sync of a mailbox fetches at most this many of its newest messages; paging
    /// past the oldest cached mail fetches the next older batch of this size.
    pub first_sync_limit: u32,
    /// Mail servers on private, loopback or link-local addresses: refused unless allowed
    /// here (`true` for any, or a list of CIDRs), so that users of a public instance cannot
    /// make it probe the operator's network.
    pub allow_private_hosts: PrivateHosts,
    /// The largest mail cached in full, and the largest IMAP literal read at all (MiB); a
    /// larger mail is cached with its headers and the first part of its body, marked
    /// truncated.
    pub max_message_mb: u32,
    /// Mail whose announced size (RFC822.SIZE) is above this many KiB, up to
    /// `max_message_mb`, is cached from its structure: its header, its text and HTML parts
    /// and the names, types and sizes of its files (`BODYSTRUCTURE`), without fetching the
    /// files, so that caching a mail with a large file costs little memory.
    pub large_message_kb: u32,
    /// Deadline of every network step with a mail server: TCP connect, TLS handshake,
    /// greeting, login, each IMAP command, each SMTP step (connect/EHLO, AUTH, the
    /// message, QUIT).
    pub network_timeout: HumanDuration,
    /// IMAP sessions open at once, over every user, and per user (sync tasks, account
    /// checks, actions, attachment downloads).
    pub max_sessions: u32,
    pub max_sessions_per_user: u32,
    /// One UID FETCH asks for at most this many MiB of mail (by RFC822.SIZE).
    pub fetch_batch_mb: u32,
    /// One sync round caches at most this many new messages and MiB, over every mailbox
    /// of the account (the rest comes in the next rounds).
    pub round_max_messages: u32,
    pub round_max_mb: u32,
    /// Mailboxes of one account that are synced (the rest is ignored).
    pub max_mailboxes: u32,
    /// Messages cached for one account; past it new mail is left on the server.
    pub max_messages_per_account: u32,
    /// Cached mail of one user (every account, MiB): past it new mail is left on the server
    /// and the accounts say `quota`.
    pub quota_mb: u32,
    /// Attachments of one outgoing message (uploads, a forward's files, a draft's), MiB in
    /// all; an upload over it is refused with 413, and so is a message whose files add up
    /// past it. A user's spooled uploads may add up to four times this.
    pub max_attachments_mb: u32,
}

impl Default for EmailConfig {
    fn default() -> Self {
        Self {
            poll_interval: HumanDuration::from_secs(60),
            first_sync_limit: 500,
            allow_private_hosts: PrivateHosts::None,
            max_message_mb: 50,
            large_message_kb: 1024,
            network_timeout: HumanDuration::from_secs(30),
            max_sessions: 256,
            max_sessions_per_user: 24,
            fetch_batch_mb: 16,
            round_max_messages: 2000,
            round_max_mb: 256,
            max_mailboxes: 200,
            max_messages_per_account: 100_000,
            quota_mb: 4096,
            max_attachments_mb: 25,
        }
    }
}

const MIB: u64 = 1024 * 1024;

impl EmailConfig {
    pub fn max_message_bytes(&self) -> u64 {
        u64::from(self.max_message_mb) * MIB
    }
    pub fn large_message_bytes(&self) -> u64 {
        u64::from(self.large_message_kb) * 1024
    }
    pub fn fetch_batch_bytes(&self) -> u64 {
        u64::from(self.fetch_batch_mb) * MIB
    }
    pub fn round_max_bytes(&self) -> u64 {
        u64::from(self.round_max_mb) * MIB
    }
    pub fn quota_bytes(&self) -> u64 {
        u64::from(self.quota_mb) * MIB
    }
    pub fn max_attachments_bytes(&self) -> u64 {
        u64::from(self.max_attachments_mb) * MIB
    }
    pub fn timeout(&self) -> std::time::Duration {
        self.network_timeout.0
    }
}

/// Which non-public addresses a user's mail server may have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PrivateHosts {
    /// Only public addresses (the default).
    #[default]
    None,
    /// Any address (a private instance whose users may reach the LAN anyway).
    All,
    /// Public addresses and these networks (e.g. the operator's own Dovecot).
    Nets(Vec<IpNet>),
}

impl PrivateHosts {
    /// Whether a non-public `ip` is allowed as a mail server's address.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match self {
            Self::None => false,
            Self::All => true,
            Self::Nets(nets) => nets.iter().any(|n| n.contains(&ip)),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Flag(bool),
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for PrivateHosts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bad = |text: &str| {
            serde::de::Error::custom(format!(
                "{text:?} is not an IP address or CIDR (e.g. \"192.168.1.0/24\", \"fd00::/8\")"
            ))
        };
        match Raw::deserialize(d)
            .map_err(|_| serde::de::Error::custom("must be true, false or a list of CIDRs"))?
        {
            Raw::Flag(true) => Ok(Self::All),
            Raw::Flag(false) => Ok(Self::None),
            Raw::List(items) => items
                .iter()
                .map(|t| {
                    let t = t.trim();
                    t.parse::<IpNet>()
                        .or_else(|_| t.parse::<IpAddr>().map(IpNet::from))
                        .map_err(|_| bad(t))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Self::Nets),
        }
    }
}

impl Serialize for PrivateHosts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::None => s.serialize_bool(false),
            Self::All => s.serialize_bool(true),
            Self::Nets(nets) => s.collect_seq(nets.iter().map(ToString::to_string)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        v: PrivateHosts,
    }

    fn parse(text: &str) -> Result<PrivateHosts, toml::de::Error> {
        toml::from_str::<T>(&format!("v = {text}")).map(|t| t.v)
    }

    #[test]
    fn a_flag_or_a_list_of_networks() {
        assert_eq!(parse("true").unwrap(), PrivateHosts::All);
        assert_eq!(parse("false").unwrap(), PrivateHosts::None);
        let nets = parse(r#"["192.168.1.0/24", "::1"]"#).unwrap();
        assert!(nets.allows("192.168.1.7".parse().unwrap()));
        assert!(nets.allows("::ffff:192.168.1.7".parse().unwrap()));
        assert!(nets.allows("::1".parse().unwrap()));
        assert!(!nets.allows("192.168.2.7".parse().unwrap()));
        assert!(!PrivateHosts::None.allows("10.0.0.1".parse().unwrap()));
        assert!(parse(r#"["nope"]"#).is_err());
        assert!(parse("3").is_err());
    }
}
