//! The SSRF guard: a DNS resolver that drops addresses that are not public,
//! the same check for URLs that name an address directly, and the
//! registration-time check that uses both.
//!
//! Whatever the reason a host cannot be used (it does not resolve, resolves
//! to no public address, or is a private literal), the merchant is told the
//! same thing, [`UNUSABLE_HOST`]: different answers would let a merchant
//! probe which internal names exist. The real reason is logged.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::net::is_public;

/// The one message for every host a webhook may not use.
pub(crate) const UNUSABLE_HOST: &str = "its host does not resolve to a public internet address";

/// A webhook target the server may not deliver to. It displays as
/// [`UNUSABLE_HOST`] whatever the reason, which is logged instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnusableHost;

impl fmt::Display for UnusableHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(UNUSABLE_HOST)
    }
}

impl std::error::Error for UnusableHost {}

/// Resolves names with the system resolver and keeps only public addresses
/// (or every address when private targets are allowed). Resolution happens
/// at connect time, so a name that changes to a private address after
/// registration is still refused.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PublicOnlyResolver {
    /// `--allow-private-webhook-targets`: tests and local development.
    pub allow_private: bool,
}

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str();
            match usable_addrs(host, allow_private).await {
                Ok(addrs) => {
                    let addrs: Addrs = Box::new(addrs.into_iter());
                    Ok(addrs)
                }
                Err(reason) => {
                    tracing::warn!(host, %reason, "webhook target refused when connecting");
                    Err(Box::new(UnusableHost) as _)
                }
            }
        })
    }
}

/// The addresses of `host` a webhook may reach, or why there are none.
async fn usable_addrs(host: &str, allow_private: bool) -> Result<Vec<SocketAddr>, String> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| format!("{host} does not resolve: {e}"))?
        .collect();
    let usable: Vec<SocketAddr> = found
        .iter()
        .copied()
        .filter(|a| allow_private || is_public(a.ip()))
        .collect();
    if found.is_empty() {
        Err(format!("{host} resolves to no address"))
    } else if usable.is_empty() {
        let ips: Vec<String> = found.iter().map(|a| a.ip().to_string()).collect();
        Err(format!(
            "{host} resolves only to addresses that are not public: {}",
            ips.join(", ")
        ))
    } else {
        Ok(usable)
    }
}

/// Refuses a URL whose host is an IP literal that is not public (the
/// resolver never sees those). Names are left to [`PublicOnlyResolver`].
pub(crate) fn check_literal(url: &url::Url, allow_private: bool) -> Result<(), UnusableHost> {
    let ip: IpAddr = match url.host() {
        Some(url::Host::Ipv4(v4)) => v4.into(),
        Some(url::Host::Ipv6(v6)) => v6.into(),
        _ => return Ok(()),
    };
    if allow_private || is_public(ip) {
        return Ok(());
    }
    tracing::info!(%ip, "webhook target refused: not a public address");
    Err(UnusableHost)
}

/// The registration-time check: the URL's host must resolve, and to at
/// least one public address (unless private targets are allowed).
pub(crate) async fn check_target(url: &url::Url, allow_private: bool) -> Result<(), UnusableHost> {
    check_literal(url, allow_private)?;
    // Names are resolved only to find private addresses behind them; when
    // those are allowed there is nothing to find (and a name that does not
    // resolve today may tomorrow: deliveries record the failure).
    if allow_private {
        return Ok(());
    }
    let Some(url::Host::Domain(host)) = url.host() else {
        return Ok(());
    };
    match usable_addrs(host, allow_private).await {
        Ok(_) => Ok(()),
        Err(reason) => {
            tracing::info!(host, %reason, "webhook target refused");
            Err(UnusableHost)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(raw: &str) -> url::Url {
        url::Url::parse(raw).unwrap()
    }

    #[tokio::test]
    async fn private_literals_and_names_are_refused_unless_allowed() {
        for raw in [
            "https://127.0.0.1/h",
            "https://[::1]/h",
            "https://[::ffff:7f00:1]/h",
            "https://[64:ff9b::a00:1]/h",
            "https://[2002:a00:1::]/h",
            "https://localhost/h",
            "https://10.0.0.7/h",
        ] {
            assert_eq!(
                check_target(&url(raw), false).await,
                Err(UnusableHost),
                "{raw}"
            );
            assert_eq!(check_target(&url(raw), true).await, Ok(()), "{raw}");
        }
    }

    #[tokio::test]
    async fn every_unusable_host_gets_the_same_message() {
        let mut messages = Vec::new();
        for raw in [
            "https://no-such-host.invalid/h",
            "https://localhost/h",
            "https://127.0.0.1/h",
            "https://[64:ff9b::7f00:1]/h",
        ] {
            let err = check_target(&url(raw), false).await.unwrap_err();
            messages.push(err.to_string());
        }
        assert!(messages.iter().all(|m| m == UNUSABLE_HOST), "{messages:?}");
    }

    #[tokio::test]
    async fn the_resolver_refuses_with_the_same_message() {
        let resolver = PublicOnlyResolver {
            allow_private: false,
        };
        for host in ["no-such-host.invalid", "localhost"] {
            let err = match resolver.resolve(host.parse().unwrap()).await {
                Ok(_) => panic!("{host} resolved"),
                Err(e) => e,
            };
            assert_eq!(err.to_string(), UNUSABLE_HOST, "{host}");
        }
        let allowing = PublicOnlyResolver {
            allow_private: true,
        };
        assert!(allowing.resolve("localhost".parse().unwrap()).await.is_ok());
    }

    #[test]
    fn public_literals_pass() {
        for raw in [
            "https://8.8.8.8/h",
            "https://[2606:4700::1111]:8443/h",
            "https://[64:ff9b::808:808]/h",
        ] {
            assert_eq!(check_literal(&url(raw), false), Ok(()), "{raw}");
        }
    }
}
