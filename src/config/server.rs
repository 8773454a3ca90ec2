//! `[server]`: where to listen, TLS, connection limits and which reverse proxies to believe.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ConfigError, HumanDuration};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// Public URL of this service, used in messages to users; defaults to `http://{listen}`.
    pub base_url: Option<String>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Open connections at most; a connection past it is answered `503 busy` and closed.
    pub max_connections: usize,
    /// Time a client has to send a complete request head once it has started.
    pub header_timeout: HumanDuration,
    /// The longest a keep-alive connection may sit idle between requests (announced in
    /// each response's `Keep-Alive: timeout=`, a second short).
    pub idle_timeout: HumanDuration,
    /// Reverse proxies whose `X-Forwarded-For` is believed (CIDRs or single addresses).
    pub trusted_proxies: TrustedProxies,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            base_url: None,
            tls_cert: None,
            tls_key: None,
            max_connections: 1024,
            header_timeout: HumanDuration::from_secs(30),
            idle_timeout: HumanDuration::from_secs(60),
            trusted_proxies: TrustedProxies::default(),
        }
    }
}

impl ServerConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.max_connections == 0 {
            return Err(ConfigError::key(
                "server.max_connections",
                "must be at least 1",
            ));
        }
        let timeout = self.header_timeout.0;
        if timeout.is_zero() || timeout.as_secs() > 30 {
            return Err(ConfigError::key(
                "server.header_timeout",
                "must be between 1s and 30s",
            ));
        }
        let idle = self.idle_timeout.0;
        if idle < std::time::Duration::from_secs(2) || idle.as_secs() > 3600 {
            return Err(ConfigError::key(
                "server.idle_timeout",
                "must be between 2s and 1h",
            ));
        }
        Ok(())
    }
}

/// The `trusted_proxies` list. Empty (the default) means `X-Forwarded-For` is ignored and
/// the peer address is the client address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client address of a request from `peer` carrying `forwarded_for` (the
    /// `X-Forwarded-For` values in order). Only a trusted peer's header is read, and only
    /// from the right: the right-most address that is not itself a trusted proxy is the
    /// client, since everything left of it was written by the client and may be forged.
    pub fn client_addr(&self, peer: IpAddr, forwarded_for: &[&str]) -> IpAddr {
        let peer = canonical(peer);
        if !self.contains(peer) {
            return peer;
        }
        let hops = forwarded_for
            .iter()
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Ok(addr) = hop.parse::<IpAddr>() else {
                // An unparsable hop ends the chain we can vouch for.
                break;
            };
            client = canonical(addr);
            if !self.contains(client) {
                break;
            }
        }
        client
    }
}

/// IPv4-mapped IPv6 addresses (a dual-stack listener's view of IPv4 peers) as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl<'de> Deserialize<'de> for TrustedProxies {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entries = Vec::<String>::deserialize(d)?;
        entries
            .iter()
            .map(|text| {
                let text = text.trim();
                text.parse::<IpNet>()
                    .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        serde::de::Error::custom(format!(
                            "{text:?} is not an IP address or CIDR (e.g. \"10.0.0.0/8\", \"::1\")"
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(TrustedProxies)
    }
}

impl Serialize for TrustedProxies {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(ToString::to_string))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(list: &[&str]) -> TrustedProxies {
        let toml = format!(
            "v = [{}]",
            list.iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        #[derive(Deserialize)]
        struct W {
            v: TrustedProxies,
        }
        toml::from_str::<W>(&toml).unwrap().v
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let p = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            p.client_addr(ip("203.0.113.9"), &["1.2.3.4"]),
            ip("203.0.113.9")
        );
        assert_eq!(
            TrustedProxies::default().client_addr(ip("10.0.0.1"), &["1.2.3.4"]),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let p = proxies(&["10.0.0.0/8", "::1"]);
        // The client forged "6.6.6.6"; the proxy appended the real peer address.
        assert_eq!(
            p.client_addr(ip("10.0.0.2"), &["6.6.6.6, 198.51.100.7"]),
            ip("198.51.100.7")
        );
        // Two proxies in a chain, two header lines.
        assert_eq!(
            p.client_addr(ip("::1"), &["198.51.100.7", "10.1.1.1"]),
            ip("198.51.100.7")
        );
        // Garbage ends the chain: the last vouched-for hop is used.
        assert_eq!(p.client_addr(ip("10.0.0.2"), &["nonsense"]), ip("10.0.0.2"));
        // Mapped IPv4 peers are matched as IPv4.
        assert_eq!(
            p.client_addr(ip("::ffff:10.0.0.2"), &["198.51.100.7"]),
            ip("198.51.100.7")
        );
    }

    #[test]
    fn bad_entries_are_refused_by_name() {
        #[derive(Deserialize, Debug)]
        struct W {
            #[allow(dead_code)]
            v: TrustedProxies,
        }
        let err = toml::from_str::<W>("v = [\"10.0.0.0/33\"]").unwrap_err();
        assert!(err.to_string().contains("10.0.0.0/33"), "{err}");
    }
}
