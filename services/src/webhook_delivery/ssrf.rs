//! The SSRF guard (OWASP API7) for endpoint URLs, run when an endpoint is
//! created or changed and again before every delivery (DNS may change).
//!
//! Rules:
//! - at most 2000 characters, an absolute URL with a host and no userinfo;
//! - `https` only, in live **and** test mode: test mode is held to live's
//!   rule (as Stripe does) so an integration that works in test mode keeps
//!   working in live mode. `http` is allowed only with the local development
//!   setting (`allow_local`);
//! - every address the host resolves to must be public: one loopback,
//!   private, shared (CGNAT), link-local (cloud metadata included),
//!   unique-local, multicast, unspecified, broadcast, documentation or
//!   otherwise reserved address refuses the URL, IPv4 forms embedded in IPv6
//!   included. `allow_local` lets loopback through, nothing else;
//!   [`Reach::LoopbackOnly`] (for test runs that must not reach the network)
//!   lets loopback through and refuses everything else, before any DNS lookup.
//!
//! The checked addresses are returned in [`Target`] so the delivery connects
//! to exactly those, without a second DNS lookup an attacker could answer
//! differently (DNS rebinding).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use url::{Host, Url};

use domain::issue::Issue;
use domain::tenant::Mode;

/// The longest endpoint URL accepted: the body's rule.
const MAX_URL_LEN: usize = domain::field::WebhookUrl::MAX;
/// How long a DNS lookup may take: a stalled resolver must not hold a
/// request or a delivery until the gateway gives up.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// A URL that passed the guard, with the addresses it was checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The endpoint URL, parsed.
    pub url: Url,
    /// The resolved addresses (with the port) a delivery may connect to.
    pub addrs: Vec<SocketAddr>,
}

/// Which addresses endpoint URLs may point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    /// Public addresses over `https` (the template).
    #[default]
    Public,
    /// Public and loopback addresses, `http` too (`WEBHOOK_ALLOW_LOCAL=true`).
    PublicAndLoopback,
    /// Loopback only, written as a literal address or `localhost`, never
    /// looked up in DNS (`WEBHOOK_ALLOW_LOCAL=only`): for test runs whose
    /// generated URLs must not reach anything beyond this machine.
    LoopbackOnly,
}

impl From<bool> for Reach {
    /// The `allow_local` setting.
    fn from(allow_local: bool) -> Reach {
        if allow_local {
            Reach::PublicAndLoopback
        } else {
            Reach::Public
        }
    }
}

/// Checks an endpoint URL and resolves its host. The issue is at path `url`
/// with code `invalid_string`, ready for `VALIDATION_FAILED`.
pub async fn check_url(raw: &str, mode: Mode, reach: impl Into<Reach>) -> Result<Target, Issue> {
    let reach = reach.into();
    let allow_local = reach != Reach::Public;
    let url = check_syntax(raw, mode, allow_local)?;
    if reach == Reach::LoopbackOnly && !names_loopback(&url) {
        return Err(invalid(
            "url must point to this machine's loopback address (local test setting)",
        ));
    }
    let addrs = resolve(&url).await?;
    if let Some(ip) = addrs
        .iter()
        .map(SocketAddr::ip)
        .find(|ip| refused(*ip, allow_local) || (reach == Reach::LoopbackOnly && !is_loopback(*ip)))
    {
        return Err(invalid(format!(
            "url must point to a public address; its host resolves to {ip}, which is not reachable from the internet"
        )));
    }
    Ok(Target { url, addrs })
}

/// Everything that can be decided without DNS.
fn check_syntax(raw: &str, mode: Mode, allow_local: bool) -> Result<Url, Issue> {
    if raw.chars().count() > MAX_URL_LEN {
        return Err(invalid(format!(
            "url must be at most {MAX_URL_LEN} characters"
        )));
    }
    let url = Url::parse(raw).map_err(|e| invalid(format!("url must be an absolute URL ({e})")))?;
    if !scheme_allowed(url.scheme(), mode, allow_local) {
        return Err(invalid(if allow_local {
            "url must use https or http"
        } else {
            "url must use https"
        }));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("url must not contain a user name or password"));
    }
    match url.host() {
        None => Err(invalid("url must name a host")),
        Some(Host::Domain("")) => Err(invalid("url must name a host")),
        Some(_) => Ok(url),
    }
}

/// Whether the URL's host is a loopback literal or `localhost`.
fn names_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => is_loopback(IpAddr::V6(ip)),
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// The scheme rule; both modes share it today (see the module doc).
fn scheme_allowed(scheme: &str, mode: Mode, allow_local: bool) -> bool {
    match (scheme, mode) {
        ("https", Mode::Live | Mode::Test) => true,
        ("http", Mode::Live | Mode::Test) => allow_local,
        _ => false,
    }
}

/// The host's addresses: the literal itself, or a DNS lookup.
async fn resolve(url: &Url) -> Result<Vec<SocketAddr>, Issue> {
    let Some(port) = url.port_or_known_default() else {
        return Err(invalid("url must have a port"));
    };
    let domain = match url.host() {
        Some(Host::Ipv4(ip)) => return Ok(vec![SocketAddr::new(IpAddr::V4(ip), port)]),
        Some(Host::Ipv6(ip)) => return Ok(vec![SocketAddr::new(IpAddr::V6(ip), port)]),
        Some(Host::Domain(domain)) => domain,
        None => return Err(invalid("url must name a host")),
    };
    let unresolved = || invalid(format!("url host {domain} could not be resolved"));
    let addrs: Vec<SocketAddr> =
        tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((domain, port)))
            .await
            .map_err(|_| unresolved())?
            .map_err(|_| unresolved())?
            .collect();
    if addrs.is_empty() {
        return Err(unresolved());
    }
    Ok(addrs)
}

/// Whether the guard refuses `ip` under the local setting.
fn refused(ip: IpAddr, allow_local: bool) -> bool {
    is_forbidden(ip) && !(allow_local && is_loopback(ip))
}

fn invalid(message: impl Into<String>) -> Issue {
    Issue::new(&["url"], "invalid_string", message)
}

/// Whether `ip` is anything but a public unicast address.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_forbidden_v4(v4),
        IpAddr::V6(v6) => is_forbidden_v6(v6),
    }
}

/// Loopback in either family, IPv4-mapped included (`::ffff:127.0.0.1`).
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Non-public IPv4 ranges (IANA special-purpose registry), as (network, prefix).
const FORBIDDEN_V4: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network", unspecified
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGNAT)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local, cloud metadata
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, broadcast
];

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    FORBIDDEN_V4.iter().any(|&(net, prefix)| {
        let mask = u32::MAX << (32 - u32::from(prefix));
        bits & mask == u32::from_be_bytes(net)
    })
}

/// Non-public IPv6 ranges, as (network, prefix). Ranges that embed an IPv4
/// address are handled in [`is_forbidden_v6`].
const FORBIDDEN_V6: &[(u128, u8)] = &[
    (0, 96),                      // ::/96: unspecified, loopback, IPv4-compatible
    (0x0064_ff9b_0001 << 80, 48), // 64:ff9b:1::/48 local-use NAT64
    (0x0100 << 112, 64),          // 100::/64 discard-only
    (0x2001_0000 << 96, 32),      // 2001::/32 Teredo
    (0x2001_0db8 << 96, 32),      // 2001:db8::/32 documentation
    (0x3fff << 112, 20),          // 3fff::/20 documentation
    (0xfc00 << 112, 7),           // fc00::/7 unique-local
    (0xfe80 << 112, 10),          // fe80::/10 link-local
    (0xfec0 << 112, 10),          // fec0::/10 site-local (deprecated)
    (0xff00 << 112, 8),           // ff00::/8 multicast
];

fn is_forbidden_v6(ip: Ipv6Addr) -> bool {
    // An address that carries an IPv4 address reaches that address.
    if let Some(v4) = embedded_v4(ip) {
        return is_forbidden_v4(v4);
    }
    let bits = u128::from(ip);
    FORBIDDEN_V6.iter().any(|&(net, prefix)| {
        let mask = u128::MAX << (128 - u32::from(prefix));
        bits & mask == net
    })
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:0:0/96`), NAT64
/// (`64:ff9b::/96`) or 6to4 (`2002::/16`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let low = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if let Some(v4) = ip.to_ipv4_mapped() {
        Some(v4)
    } else if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        Some(low)
    } else if bits >> 112 == 0x2002 {
        Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_addresses_cover_every_non_public_range() {
        let forbidden = [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.169.254",
            "169.254.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
            "3fff::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "ff0e::1",
        ];
        for ip in forbidden {
            assert!(
                is_forbidden(ip.parse().unwrap()),
                "{ip} should be forbidden"
            );
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        let allowed = [
            "93.184.215.14",
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "169.253.255.255",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:93.184.215.14",
            "64:ff9b::808:808",
            "2002:5db8:d70e::1",
        ];
        for ip in allowed {
            assert!(!is_forbidden(ip.parse().unwrap()), "{ip} should be allowed");
        }
    }

    #[test]
    fn allow_local_lets_loopback_through_and_nothing_else() {
        let cases = [
            ("127.0.0.1", false),
            ("::1", false),
            ("::ffff:127.0.0.1", false),
            ("10.0.0.1", true),
            ("192.168.1.1", true),
            ("169.254.169.254", true),
            ("fd00::1", true),
            ("0.0.0.0", true),
        ];
        for (ip, refused_locally) in cases {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(refused(ip, false), "{ip}");
            assert_eq!(refused(ip, true), refused_locally, "{ip}");
        }
    }

    async fn message(raw: &str, mode: Mode, allow_local: bool) -> String {
        let issue = check_url(raw, mode, allow_local).await.unwrap_err();
        assert_eq!(issue.path, vec![serde_json::json!("url")]);
        assert_eq!(issue.code, "invalid_string");
        issue.message
    }

    #[tokio::test]
    async fn internal_targets_are_refused_in_the_live_configuration() {
        let cases = [
            (
                "https://169.254.169.254/latest/meta-data/",
                "public address",
            ),
            ("http://10.0.0.1/", "https"),
            ("https://10.0.0.1/", "public address"),
            ("https://[::1]/", "public address"),
            ("https://[::ffff:127.0.0.1]/", "public address"),
            ("https://localhost/", "public address"),
            ("https://2130706433/", "public address"),
            ("https://0x7f.1/", "public address"),
            ("http://127.0.0.1:8080/x", "https"),
        ];
        for mode in [Mode::Live, Mode::Test] {
            for (raw, expected) in cases {
                let msg = message(raw, mode, false).await;
                assert!(msg.contains(expected), "{raw}: {msg}");
            }
        }
    }

    #[tokio::test]
    async fn malformed_urls_are_refused() {
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        let cases = [
            ("ftp://x", "https"),
            ("file:///etc/passwd", "https"),
            ("not a url", "absolute URL"),
            ("/relative/path", "absolute URL"),
            ("https://user:pass@example.com/", "user name or password"),
            ("https://user@example.com/", "user name or password"),
            (long.as_str(), "at most 2000"),
        ];
        for (raw, expected) in cases {
            for allow_local in [false, true] {
                let msg = message(raw, Mode::Live, allow_local).await;
                assert!(msg.contains(expected), "{raw}: {msg}");
            }
        }
    }

    #[tokio::test]
    async fn the_local_setting_allows_http_and_loopback_only() {
        let target = check_url("http://127.0.0.1:8080/x", Mode::Live, true)
            .await
            .unwrap();
        assert_eq!(target.url.as_str(), "http://127.0.0.1:8080/x");
        assert_eq!(target.addrs, vec!["127.0.0.1:8080".parse().unwrap()]);

        let target = check_url("https://localhost/", Mode::Test, true)
            .await
            .unwrap();
        assert!(target
            .addrs
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 443));

        for raw in [
            "http://10.0.0.1/",
            "http://169.254.169.254/",
            "http://[fd00::1]/",
        ] {
            let msg = message(raw, Mode::Test, true).await;
            assert!(msg.contains("public address"), "{raw}: {msg}");
        }
    }

    #[tokio::test]
    async fn loopback_only_refuses_every_other_host_before_dns() {
        let target = check_url("http://127.0.0.1:9/x", Mode::Test, Reach::LoopbackOnly)
            .await
            .unwrap();
        assert_eq!(target.addrs, vec!["127.0.0.1:9".parse().unwrap()]);
        for raw in [
            "https://93.184.215.14/",
            "https://example.com/",
            "https://no-such-host.invalid/",
            "http://10.0.0.1/",
        ] {
            let issue = check_url(raw, Mode::Test, Reach::LoopbackOnly)
                .await
                .unwrap_err();
            assert!(
                issue.message.contains("loopback"),
                "{raw}: {}",
                issue.message
            );
        }
    }

    #[tokio::test]
    async fn public_literals_pass_with_their_default_port() {
        let target = check_url("https://93.184.215.14/hooks?x=1", Mode::Live, false)
            .await
            .unwrap();
        assert_eq!(target.addrs, vec!["93.184.215.14:443".parse().unwrap()]);
        let target = check_url("https://[2606:4700::1111]:8443/", Mode::Live, false)
            .await
            .unwrap();
        assert_eq!(
            target.addrs,
            vec!["[2606:4700::1111]:8443".parse().unwrap()]
        );
    }

    #[tokio::test]
    async fn an_unresolvable_host_is_refused() {
        let msg = message("https://no-such-host.invalid/", Mode::Live, false).await;
        assert!(msg.contains("could not be resolved"), "{msg}");
    }
}
