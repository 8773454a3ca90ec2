//! Where a user's mail server may be. A user names any host and port; without a check a
//! public instance would connect wherever it is told (its own loopback, the operator's
//! LAN, a cloud metadata address) and report what answered. So the host is resolved once,
//! every address it resolves to must be public (or allowed by `[email]
//! allow_private_hosts`), and the connection goes to the address that was checked: a
//! second lookup at connect time could answer differently (DNS rebinding).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

pub use crate::config::PrivateHosts;

const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// `From<DialError>` for a mail protocol's error type, which reports a refused address as
/// `NotAllowed` and a name that did not resolve as `Unreachable` (IMAP and SMTP alike).
macro_rules! from_dial_error {
    ($error:ty) => {
        impl From<$crate::clients::mail::dial::DialError> for $error {
            fn from(e: $crate::clients::mail::dial::DialError) -> Self {
                use $crate::clients::mail::dial::DialError;
                match e {
                    DialError::NotAllowed { .. } | DialError::Cleartext { .. } => {
                        Self::NotAllowed(e.to_string())
                    }
                    DialError::Unresolvable(m) => Self::Unreachable(m),
                }
            }
        }
    };
}
pub(crate) use from_dial_error;

#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The host resolves to an address this server does not connect to. The message does
    /// not name the address: it would tell users what internal names resolve to.
    #[error("{host} is not allowed as a mail server on this instance")]
    NotAllowed { host: String },
    /// No address (unknown name, DNS failure or timeout).
    #[error("{0}")]
    Unresolvable(String),
    /// Cleartext (`security: "none"`) to a public address: passwords would cross the
    /// internet unencrypted.
    #[error(
        "{host}: security \"none\" (no encryption) is only used with private hosts allowed \
         by [email] allow_private_hosts; use tls or starttls"
    )]
    Cleartext { host: String },
}

/// [`resolve`], and for a connection without TLS (`cleartext`) every address must be a
/// non-public one the policy allows.
pub async fn resolve_for(
    host: &str,
    port: u16,
    policy: &PrivateHosts,
    cleartext: bool,
) -> Result<Vec<SocketAddr>, DialError> {
    let addrs = resolve(host, port, policy).await?;
    if cleartext && addrs.iter().any(|a| is_public(a.ip())) {
        return Err(DialError::Cleartext {
            host: host.to_owned(),
        });
    }
    Ok(addrs)
}

/// IPv4: global unicast, i.e. none of the special-purpose blocks (RFC 6890 and later).
fn v4_is_public(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0 // "this network": 0.x.y.z reaches the local host on Linux
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64/10 carrier-grade NAT
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0/24 protocol assignments
        || (o[0] == 192 && o[1] == 88 && o[2] == 99) // 192.88.99/24 6to4 relay anycast
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // 198.18/15 benchmarking
        || o[0] >= 240) // 240/4 reserved
}

fn embedded_v4(bits: u128) -> Ipv4Addr {
    Ipv4Addr::from((bits & 0xffff_ffff) as u32)
}

/// IPv6: an allowlist. Only global unicast (2000::/3) minus its special blocks, plus the
/// two forms that carry an IPv4 address to be judged as such: IPv4-mapped
/// (`::ffff:a.b.c.d`) and the well-known NAT64 prefix (`64:ff9b::/96`). Everything else
/// (loopback, unique and link-local, multicast, `64:ff9b:1::/48` local NAT64, the
/// IPv4-translated `::ffff:0:a.b.c.d`, discard, …) is not public.
fn v6_is_public(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_is_public(v4);
    }
    let bits = u128::from(ip);
    let seg = ip.segments();
    if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        return v4_is_public(embedded_v4(bits));
    }
    let global_unicast = (seg[0] & 0xe000) == 0x2000;
    let special = (seg[0] == 0x2001 && (seg[1] < 0x0200 || seg[1] == 0x0db8)) // 2001::/23 IETF assignments (Teredo 2001::/32, benchmarking, ORCHID); 2001:db8::/32 documentation
        || seg[0] == 0x2002 // 2002::/16 6to4: reaches an IPv4 address through a relay
        || (seg[0] & 0xfff0) == 0x3ff0 // 3ff0::/12 (3fff::/20 documentation)
        || (seg[0] == 0x2620 && seg[1] == 0x004f && seg[2] == 0x8000); // AS112
    global_unicast && !special
}

/// Whether `ip` is a public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_is_public(v4),
        IpAddr::V6(v6) => v6_is_public(v6),
    }
}

/// Resolves `host` and checks every address against `policy`; returns them in the
/// resolver's order. All must pass: a name with one public and one private address
/// could otherwise be steered to the private one.
pub async fn resolve(
    host: &str,
    port: u16,
    policy: &PrivateHosts,
) -> Result<Vec<SocketAddr>, DialError> {
    let addrs: Vec<SocketAddr> =
        tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| DialError::Unresolvable(format!("{host}: name lookup timed out")))?
            .map_err(|e| DialError::Unresolvable(format!("{host}: {e}")))?
            .collect();
    if addrs.is_empty() {
        return Err(DialError::Unresolvable(format!("{host}: no address")));
    }
    if let Some(bad) = addrs
        .iter()
        .find(|a| !is_public(a.ip()) && !policy.allows(a.ip()))
    {
        tracing::debug!(host, addr = %bad.ip(), "mail host refused: not a public address");
        return Err(DialError::NotAllowed {
            host: host.to_owned(),
        });
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_and_link_local_addresses_are_not_public() {
        for bad in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "::127.0.0.1",
            "64:ff9b:1::a00:1",
            "64:ff9b:1::101:101",
            "::ffff:0:101:101",
            "::ffff:0:0",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:db8::1",
            "2002:101:101::1",
            "192.88.99.1",
            "198.51.100.7",
            "203.0.113.9",
            "100::1",
            "3fff::1",
        ] {
            assert!(!is_public(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "2606:4700::1111",
            "64:ff9b::101:101",
            "2a00:1450:4001::1",
            "2001:4860:4860::8888",
        ] {
            assert!(is_public(good.parse().unwrap()), "{good}");
        }
    }

    #[tokio::test]
    async fn a_name_is_checked_after_resolution() {
        let e = resolve("localhost", 143, &PrivateHosts::None)
            .await
            .unwrap_err();
        assert!(matches!(e, DialError::NotAllowed { .. }), "{e}");
        let ok = resolve("localhost", 143, &PrivateHosts::All).await.unwrap();
        assert!(ok.iter().all(|a| a.ip().is_loopback() && a.port() == 143));
        let nets = PrivateHosts::Nets(vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(resolve("127.0.0.1", 143, &nets).await.is_ok());
        assert!(resolve("::1", 143, &nets).await.is_err());
    }
}
