//! Address checks that keep subscription URLs from reaching private networks (SSRF).
//!
//! A subscription URL must be `https` and resolve only to public addresses. The check
//! runs at creation (and update) and again at **every attempt**, because DNS can change
//! between the two: the HTTP client resolves names through [`CheckedResolver`], which
//! drops every blocked address, so the connection goes to an address that was checked a
//! moment before (there is no second, unchecked resolution). URLs with an IP literal are
//! checked directly. System proxies are never used, since a proxy would connect on our
//! behalf to an address we did not check.
//!
//! Blocked: loopback, private (RFC 1918, IPv6 ULA `fc00::/7`), link-local
//! (`169.254/16`, `fe80::/10`; this includes the cloud metadata address
//! `169.254.169.254`), CGNAT `100.64/10` (includes Alibaba's `100.100.100.200`),
//! multicast, unspecified, broadcast, "this network" `0/8`, the reserved `240/4`,
//! benchmarking `198.18/15`, documentation ranges, IETF `192.0.0/24`, and IPv6 forms
//! that embed an IPv4 address (mapped, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) when the
//! embedded address is blocked. AWS's IPv6 metadata address `fd00:ec2::254` falls in the
//! ULA range.
//!
//! [`AddressPolicy::allow_insecure_local`] — off by default, and named to look dangerous —
//! additionally allows `http` URLs and loopback addresses, for local development and
//! tests. Nothing else (private ranges, metadata) is ever allowed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::Url;

/// Which addresses deliveries may go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressPolicy {
    /// DANGEROUS: also allow `http` URLs and loopback addresses. For local development
    /// and tests only; never enable it in production.
    pub allow_insecure_local: bool,
}

/// Why an address or URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Blocked {
    /// The URL could not be parsed or is not acceptable in form.
    #[error("{0}")]
    InvalidUrl(&'static str),
    /// The scheme is not `https`.
    #[error("the URL must use https")]
    NotHttps,
    /// An address in a blocked range.
    #[error("{ip} is a {range} address; webhook URLs must point to public addresses")]
    Address {
        /// The refused address.
        ip: IpAddr,
        /// The range it is in, e.g. `private`.
        range: &'static str,
    },
    /// The host name did not resolve.
    #[error("the host name could not be resolved")]
    Unresolvable,
}

/// Added to a refusal that [`AddressPolicy::allow_insecure_local`] would have allowed (an
/// `http` URL, a loopback address), so whoever is trying a local receiver learns the
/// switch's name from the error itself.
pub const LOCAL_DEVELOPMENT_HINT: &str = "for local development only, a server started with \
     `--dangerously-allow-insecure-local-urls` (SenderConfig::dangerously_allow_insecure_local_urls) \
     accepts http and loopback URLs";

impl Blocked {
    /// Whether the local-development policy would have accepted what was refused: `raw`
    /// is the URL as given (its scheme tells an `http` URL from another scheme).
    pub fn allowed_for_local_development(&self, raw: &str) -> bool {
        match self {
            Blocked::NotHttps => raw.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://")),
            Blocked::Address { range, .. } => *range == "loopback",
            Blocked::InvalidUrl(_) | Blocked::Unresolvable => false,
        }
    }
}

/// Longest accepted subscription URL, in bytes.
pub const MAX_URL_LEN: usize = 2048;

impl AddressPolicy {
    /// Checks one address; `Ok` when deliveries may go there.
    ///
    /// ```
    /// use postwire_sender::ssrf::AddressPolicy;
    /// let p = AddressPolicy::default();
    /// assert!(p.check_ip("93.184.216.34".parse().unwrap()).is_ok());
    /// assert!(p.check_ip("169.254.169.254".parse().unwrap()).is_err());
    /// assert!(p.check_ip("::ffff:10.0.0.1".parse().unwrap()).is_err());
    /// ```
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Blocked> {
        match blocked_range(ip) {
            None => Ok(()),
            Some("loopback") if self.allow_insecure_local => Ok(()),
            Some(range) => Err(Blocked::Address { ip, range }),
        }
    }

    /// Checks a URL's form: parseable, `https` (or `http` when insecure local is allowed),
    /// a host, no user name or password, no whitespace or control character, at most
    /// [`MAX_URL_LEN`] bytes, and an IP literal
    /// host must pass [`check_ip`](Self::check_ip). Host names are checked by
    /// [`resolve_checked`].
    pub fn check_url(&self, raw: &str) -> Result<Url, Blocked> {
        if raw.len() > MAX_URL_LEN {
            return Err(Blocked::InvalidUrl("the URL is longer than 2048 bytes"));
        }
        // The URL parser silently drops tabs and line breaks and trims spaces and control
        // characters, so what it parses would not be what was sent: refuse them instead.
        if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(Blocked::InvalidUrl(
                "the URL must not contain whitespace or control characters",
            ));
        }
        let url = Url::parse(raw).map_err(|_| Blocked::InvalidUrl("the URL is not a valid absolute URL"))?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_insecure_local => {}
            _ => return Err(Blocked::NotHttps),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Blocked::InvalidUrl("the URL must not carry a user name or password"));
        }
        match url.host() {
            None => return Err(Blocked::InvalidUrl("the URL has no host")),
            Some(url::Host::Ipv4(ip)) => self.check_ip(IpAddr::V4(ip))?,
            Some(url::Host::Ipv6(ip)) => self.check_ip(IpAddr::V6(ip))?,
            Some(url::Host::Domain(_)) => {}
        }
        Ok(url)
    }
}

/// Resolves `host` and returns the allowed addresses; an error if none is allowed.
pub async fn resolve_checked(policy: AddressPolicy, host: &str) -> Result<Vec<IpAddr>, Blocked> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        policy.check_ip(ip)?;
        return Ok(vec![ip]);
    }
    let addrs: Vec<IpAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|_| Blocked::Unresolvable)?
        .map(|a| a.ip())
        .collect();
    let mut first_refusal = None;
    let mut allowed = Vec::with_capacity(addrs.len());
    for ip in addrs {
        match policy.check_ip(ip) {
            Ok(()) => allowed.push(ip),
            Err(e) => {
                first_refusal.get_or_insert(e);
            }
        }
    }
    if allowed.is_empty() {
        return Err(first_refusal.unwrap_or(Blocked::Unresolvable));
    }
    Ok(allowed)
}

/// The HTTP client's DNS resolver: resolves, then keeps only allowed addresses, so the
/// connection goes to a checked address. Runs for every new connection; a pooled
/// connection stays with the address checked when it was made.
#[derive(Debug, Clone, Copy)]
pub struct CheckedResolver {
    policy: AddressPolicy,
}

impl CheckedResolver {
    /// A resolver applying `policy`.
    pub fn new(policy: AddressPolicy) -> Self {
        CheckedResolver { policy }
    }
}

impl tower_service::Service<hyper_util::client::legacy::connect::dns::Name> for CheckedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = Blocked;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Blocked>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Blocked>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: hyper_util::client::legacy::connect::dns::Name) -> Self::Future {
        let policy = self.policy;
        Box::pin(async move {
            let ips = resolve_checked(policy, name.as_str()).await?;
            Ok(ips
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect::<Vec<_>>()
                .into_iter())
        })
    }
}

/// The name of the blocked range `ip` is in, or `None` for a public address.
pub fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match () {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() || a == 0 => "unspecified",
        _ if ip.is_private() => "private",
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) => "cloud metadata",
        _ if ip.is_link_local() => "link-local",
        _ if a == 100 && (b & 0xc0) == 64 => "CGNAT",
        _ if ip.is_multicast() => "multicast",
        _ if ip.is_broadcast() || a >= 240 => "reserved",
        _ if a == 192 && b == 0 && c == 0 => "IETF protocol assignment",
        _ if a == 198 && (b & 0xfe) == 18 => "benchmarking",
        _ if ip.is_documentation() => "documentation",
        _ => return None,
    })
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    // NAT64 64:ff9b::/96 and 6to4 2002::/16 carry an IPv4 address inside.
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        return blocked_v4(Ipv4Addr::new(
            (seg[6] >> 8) as u8,
            seg[6] as u8,
            (seg[7] >> 8) as u8,
            seg[7] as u8,
        ));
    }
    if seg[0] == 0x2002 {
        return blocked_v4(Ipv4Addr::new(
            (seg[1] >> 8) as u8,
            seg[1] as u8,
            (seg[2] >> 8) as u8,
            seg[2] as u8,
        ));
    }
    Some(match () {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_multicast() => "multicast",
        _ if (seg[0] & 0xfe00) == 0xfc00 => "private",
        _ if (seg[0] & 0xffc0) == 0xfe80 => "link-local",
        _ if (seg[0] & 0xffc0) == 0xfec0 => "site-local",
        // IPv4-compatible ::a.b.c.d (deprecated) and the discard prefix 100::/64.
        _ if seg[0..6] == [0, 0, 0, 0, 0, 0] => "IPv4-compatible",
        _ if seg[0] == 0x100 && seg[1..4] == [0, 0, 0] => "discard",
        _ if seg[0] == 0x2001 && seg[1] == 0xdb8 => "documentation",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_every_named_range() {
        let p = AddressPolicy::default();
        for bad in [
            "127.0.0.1",
            "127.9.9.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "100.100.100.200",
            "224.0.0.1",
            "239.1.1.1",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "240.0.0.1",
            "198.18.0.1",
            "192.0.0.8",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "2002:c0a8:101::1",
            "::7f00:1",
        ] {
            let ip: IpAddr = bad.parse().unwrap();
            assert!(p.check_ip(ip).is_err(), "{bad} should be blocked");
        }
        for good in [
            "93.184.216.34",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
        ] {
            assert!(p.check_ip(good.parse().unwrap()).is_ok(), "{good} should be allowed");
        }
    }

    #[test]
    fn insecure_local_allows_loopback_and_http_only() {
        let p = AddressPolicy {
            allow_insecure_local: true,
        };
        assert!(p.check_ip("127.0.0.1".parse().unwrap()).is_ok());
        assert!(p.check_ip("::1".parse().unwrap()).is_ok());
        assert!(p.check_ip("10.0.0.1".parse().unwrap()).is_err());
        assert!(p.check_ip("169.254.169.254".parse().unwrap()).is_err());
        assert!(p.check_url("http://127.0.0.1:8080/hook").is_ok());
        assert_eq!(
            AddressPolicy::default().check_url("http://example.com/"),
            Err(Blocked::NotHttps)
        );
    }

    #[test]
    fn url_form_rules() {
        let p = AddressPolicy::default();
        assert!(p.check_url("https://example.com/hook?x=1").is_ok());
        assert!(p.check_url("https://user:pw@example.com/").is_err());
        assert!(p.check_url("ftp://example.com/").is_err());
        assert!(p.check_url("not a url").is_err());
        for bad in [
            "https://example.com/a\r\nX-Injected: 1",
            "https://example.com/a b",
            "https://example.com/a\tb",
            " https://example.com/",
            "https://example.com/\u{0}",
            "https://example.com/\u{85}",
        ] {
            assert!(
                matches!(p.check_url(bad), Err(Blocked::InvalidUrl(m)) if m.contains("whitespace")),
                "{bad:?}"
            );
        }
        assert!(p.check_url("https://[::1]/").is_err());
        assert!(p.check_url("https://10.0.0.1/").is_err());
        assert!(
            p.check_url(&format!("https://example.com/{}", "a".repeat(3000)))
                .is_err()
        );
    }

    #[tokio::test]
    async fn localhost_resolves_to_blocked_loopback() {
        let p = AddressPolicy::default();
        assert!(matches!(
            resolve_checked(p, "localhost").await,
            Err(Blocked::Address { .. }) | Err(Blocked::Unresolvable)
        ));
        let local = AddressPolicy {
            allow_insecure_local: true,
        };
        assert!(resolve_checked(local, "127.0.0.1").await.is_ok());
    }
}
