//! Which addresses a webhook may be delivered to.
//!
//! A webhook URL is chosen by a merchant, so without a check the server
//! could be made to POST into its own network (SSRF). Targets must be
//! globally routable unicast addresses; the check runs at registration and
//! again on every connection (after DNS), so a name that later resolves to
//! a private address is still refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a globally routable unicast address a webhook may reach.
///
/// Refused are the ranges of IANA's special-purpose address registries that
/// are not globally reachable, multicast, and everything else that is not
/// routed on the internet:
///
/// - IPv4: `0.0.0.0/8`, `10.0.0.0/8`, `100.64.0.0/10`, `127.0.0.0/8`,
///   `169.254.0.0/16`, `172.16.0.0/12`, `192.0.0.0/24`, `192.0.2.0/24`,
///   `192.88.99.0/24`, `192.168.0.0/16`, `198.18.0.0/15`,
///   `198.51.100.0/24`, `203.0.113.0/24`, `224.0.0.0/4`, `240.0.0.0/4`
///   (which holds `255.255.255.255`).
/// - IPv6 that carries an IPv4 address is judged by that address:
///   IPv4-mapped `::ffff:0:0/96`, NAT64 `64:ff9b::/96` (the last 32 bits)
///   and 6to4 `2002::/16` (bits 16 to 48).
/// - Other IPv6 must be global unicast (`2000::/3`), which leaves out `::`,
///   `::1`, the deprecated IPv4-compatible `::/96` (refused whole, whatever
///   it embeds: no stack routes it any more), the local-use NAT64 prefix
///   `64:ff9b:1::/48` (refused whole: its translator may embed the IPv4
///   address at any of RFC 6052's positions), `100::/64`, `fc00::/7`,
///   `fe80::/10`, `fec0::/10` and `ff00::/8`; and inside `2000::/3` the IETF
///   protocol assignments `2001::/23` (Teredo `2001::/32` among them; its
///   few anycast services are no webhook targets), documentation
///   `2001:db8::/32` and `3fff::/20`.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// IPv4 ranges that are not globally routable: network and prefix length.
const V4_REFUSED: &[(Ipv4Addr, u32)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8),       // "this network"
    (Ipv4Addr::new(10, 0, 0, 0), 8),      // private
    (Ipv4Addr::new(100, 64, 0, 0), 10),   // carrier-grade NAT
    (Ipv4Addr::new(127, 0, 0, 0), 8),     // loopback
    (Ipv4Addr::new(169, 254, 0, 0), 16),  // link-local (cloud metadata)
    (Ipv4Addr::new(172, 16, 0, 0), 12),   // private
    (Ipv4Addr::new(192, 0, 0, 0), 24),    // IETF protocol assignments
    (Ipv4Addr::new(192, 0, 2, 0), 24),    // documentation
    (Ipv4Addr::new(192, 88, 99, 0), 24),  // 6to4 relay anycast (deprecated)
    (Ipv4Addr::new(192, 168, 0, 0), 16),  // private
    (Ipv4Addr::new(198, 18, 0, 0), 15),   // benchmarking
    (Ipv4Addr::new(198, 51, 100, 0), 24), // documentation
    (Ipv4Addr::new(203, 0, 113, 0), 24),  // documentation
    (Ipv4Addr::new(224, 0, 0, 0), 4),     // multicast
    (Ipv4Addr::new(240, 0, 0, 0), 4),     // reserved, and broadcast
];

/// IPv6 ranges inside global unicast (`2000::/3`) that are not globally
/// routable: network and prefix length.
const V6_REFUSED: &[(Ipv6Addr, u32)] = &[
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23), // IETF protocol assignments, Teredo
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32), // documentation
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20), // documentation
];

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    !V4_REFUSED
        .iter()
        .any(|&(net, len)| bits & mask_v4(len) == u32::from(net))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let bits = u128::from(ip);
    // 2000::/3, global unicast: everything else is local, multicast,
    // reserved or unassigned.
    bits >> 125 == 0b001
        && !V6_REFUSED
            .iter()
            .any(|&(net, len)| bits & mask_v6(len) == u128::from(net))
}

/// The IPv4 address of the IPv6 forms that deliver to one: IPv4-mapped,
/// NAT64 with the well-known prefix, and 6to4.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    const MAPPED: u128 = 0xffff; // ::ffff:0:0/96, shifted right by 32
    const NAT64: u128 = 0x0064_ff9b << 64; // 64:ff9b::/96, likewise
    let bits = u128::from(ip);
    match bits >> 32 {
        MAPPED | NAT64 => Some(Ipv4Addr::from(bits as u32)),
        // 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
        _ if bits >> 112 == 0x2002 => Some(Ipv4Addr::from((bits >> 80) as u32)),
        _ => None,
    }
}

fn mask_v4(len: u32) -> u32 {
    u32::MAX.checked_shl(32 - len).unwrap_or(0)
}

fn mask_v6(len: u32) -> u128 {
    u128::MAX.checked_shl(128 - len).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every refused range, written out independently of the tables above,
    /// with whether the address just below its first and just above its
    /// last is public (`None`: there is no such address).
    const EDGES: &[(&str, Option<bool>, Option<bool>)] = &[
        ("0.0.0.0/8", None, Some(true)),
        ("10.0.0.0/8", Some(true), Some(true)),
        ("100.64.0.0/10", Some(true), Some(true)),
        ("127.0.0.0/8", Some(true), Some(true)),
        ("169.254.0.0/16", Some(true), Some(true)),
        ("172.16.0.0/12", Some(true), Some(true)),
        ("192.0.0.0/24", Some(true), Some(true)),
        ("192.0.2.0/24", Some(true), Some(true)),
        ("192.88.99.0/24", Some(true), Some(true)),
        ("192.168.0.0/16", Some(true), Some(true)),
        ("198.18.0.0/15", Some(true), Some(true)),
        ("198.51.100.0/24", Some(true), Some(true)),
        ("203.0.113.0/24", Some(true), Some(true)),
        ("224.0.0.0/4", Some(true), Some(false)),
        ("240.0.0.0/4", Some(false), None),
        ("255.255.255.255/32", Some(false), None),
        ("::/128", None, Some(false)),
        ("::1/128", Some(false), Some(false)),
        ("::/96", None, Some(false)),
        ("::ffff:0:0/96", Some(false), Some(false)),
        ("64:ff9b::/96", Some(false), Some(false)),
        ("64:ff9b:1::/48", Some(false), Some(false)),
        ("100::/64", Some(false), Some(false)),
        ("2002::/16", Some(true), Some(true)),
        ("2001::/32", Some(true), Some(false)),
        ("2001::/23", Some(true), Some(true)),
        ("2001:db8::/32", Some(true), Some(true)),
        ("3fff::/20", Some(true), Some(true)),
        ("fc00::/7", Some(false), Some(false)),
        ("fe80::/10", Some(false), Some(false)),
        ("fec0::/10", Some(false), Some(false)),
        ("ff00::/8", Some(false), None),
    ];

    /// First and last address of `cidr`, and the ones just outside.
    fn edges(cidr: &str) -> (IpAddr, IpAddr, Option<IpAddr>, Option<IpAddr>) {
        let (net, len) = cidr.split_once('/').unwrap();
        let len: u32 = len.parse().unwrap();
        match net.parse::<IpAddr>().unwrap() {
            IpAddr::V4(net) => {
                let first = u32::from(net);
                let last = first | !mask_v4(len);
                let v4 = |n: u32| IpAddr::V4(n.into());
                (
                    v4(first),
                    v4(last),
                    first.checked_sub(1).map(v4),
                    last.checked_add(1).map(v4),
                )
            }
            IpAddr::V6(net) => {
                let first = u128::from(net);
                let last = first | !mask_v6(len);
                let v6 = |n: u128| IpAddr::V6(n.into());
                (
                    v6(first),
                    v6(last),
                    first.checked_sub(1).map(v6),
                    last.checked_add(1).map(v6),
                )
            }
        }
    }

    #[test]
    fn every_refused_range_is_refused_from_edge_to_edge_and_not_beyond() {
        for &(cidr, below_public, above_public) in EDGES {
            let (first, last, below, above) = edges(cidr);
            assert!(!is_public(first), "{cidr}: first address {first} accepted");
            assert!(!is_public(last), "{cidr}: last address {last} accepted");
            assert_eq!(below.is_some(), below_public.is_some(), "{cidr}");
            assert_eq!(above.is_some(), above_public.is_some(), "{cidr}");
            if let (Some(ip), Some(public)) = (below, below_public) {
                assert_eq!(is_public(ip), public, "{cidr}: just below, {ip}");
            }
            if let (Some(ip), Some(public)) = (above, above_public) {
                assert_eq!(is_public(ip), public, "{cidr}: just above, {ip}");
            }
        }
    }

    #[test]
    fn ipv6_that_carries_an_ipv4_address_is_judged_by_that_address() {
        for (ip, public) in [
            // IPv4-mapped.
            ("::ffff:8.8.8.8", true),
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:169.254.169.254", false),
            // NAT64, well-known prefix: the last 32 bits.
            ("64:ff9b::808:808", true),
            ("64:ff9b::a00:1", false),
            ("64:ff9b::7f00:1", false),
            ("64:ff9b::a9fe:a9fe", false),
            // 6to4: bits 16 to 48.
            ("2002:808:808::", true),
            ("2002:808:808:1234:5678::1", true),
            ("2002:a00:1::", false),
            ("2002:7f00:1::", false),
            ("2002:c0a8:101::1", false),
            // IPv4-compatible and local-use NAT64: refused whole.
            ("::127.0.0.1", false),
            ("::8.8.8.8", false),
            ("64:ff9b:1::808:808", false),
            // Teredo: refused whatever it embeds.
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
        ] {
            assert_eq!(is_public(ip.parse().unwrap()), public, "{ip}");
        }
    }

    #[test]
    fn global_unicast_is_the_only_public_ipv6_outside_the_embedding_forms() {
        for (ip, public) in [
            ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2000::", true),
            ("3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("4000::", false),
            ("5f00::1", false),
        ] {
            assert_eq!(is_public(ip.parse().unwrap()), public, "{ip}");
        }
    }

    #[test]
    fn ordinary_internet_addresses_are_public() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "192.0.1.1",
            "192.31.196.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4860:4860::8888",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip} counted as private");
        }
    }
}
