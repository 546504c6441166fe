//! Why a command failed, how to say it, and which exit code it gives.

use std::fmt;
use std::io;

use shipment_sdk::Error as SdkError;
use shipment_sdk::model::ProblemCode;

/// Exit code 1: the command failed (an invalid signature or key included).
pub const FAILURE: u8 = 1;
/// Exit code 2: a wrong flag, argument or setting.
pub const USAGE: u8 = 2;
/// Exit code 3: not signed in, or the key or session was refused (401, 403).
pub const AUTH: u8 = 3;
/// Exit code 4: no such thing (404).
pub const NOT_FOUND: u8 = 4;
/// Exit code 5: a conflict or a state that does not allow it (409).
pub const CONFLICT: u8 = 5;
/// Exit code 6: the service or the network is unavailable (5xx, 429,
/// time-outs, no connection).
pub const UNAVAILABLE: u8 = 6;

/// A command that did not succeed: what to tell the user, the command that
/// fixes it (if one does), and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub code: u8,
    /// One line saying what went wrong; empty for a quiet exit.
    pub message: String,
    /// What to run to fix it.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure with exit code `code`.
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// A usage error (exit code 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(USAGE, message)
    }

    /// Adds the command that fixes it.
    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// The reader of stdout went away (`shipctl ... | head`): stop quietly,
    /// successfully.
    pub fn closed_pipe() -> Failure {
        Failure::new(0, "")
    }

    /// Maps an SDK error from a call about `what` to a message, a hint and
    /// an exit code.
    pub fn sdk(e: SdkError, what: Surface) -> Failure {
        let status = e.status();
        let code = match (status, &e) {
            (Some(401 | 403), _) => AUTH,
            (Some(404), _) => NOT_FOUND,
            (Some(409), _) => CONFLICT,
            (Some(429), _) => UNAVAILABLE,
            (Some(s), _) if s >= 500 => UNAVAILABLE,
            (Some(_), _) => FAILURE,
            (None, SdkError::Connect(_) | SdkError::Timeout(_) | SdkError::Transport(_)) => {
                UNAVAILABLE
            }
            (None, SdkError::Decode { .. }) => FAILURE,
            (None, _) => USAGE,
        };
        let hint = hint(&e, status, what);
        let message = match e {
            // One line naming what the key lacks, or when it ended: the
            // service's detail says it too, but a person reads the first
            // words.
            SdkError::InsufficientPermission { required, error } => format!(
                "this API key may not do this: it needs {required}{}",
                answer_suffix(&error)
            ),
            SdkError::ApiKeyExpired { expired_at, error } => format!(
                "this API key expired{}{}",
                expired_at
                    .map(|t| format!(" at {}", crate::output::short_time(&t)))
                    .unwrap_or_default(),
                answer_suffix(&error)
            ),
            SdkError::Api(api) => format!(
                "{}{}",
                api.detail
                    .as_deref()
                    .unwrap_or("the service answered without an explanation"),
                answer_suffix(&api)
            ),
            other => other.to_string(),
        };
        Failure {
            code,
            message,
            hint,
        }
    }
}

/// ` (HTTP 403 insufficient_permission, request id 01J...)`: what to quote
/// to support.
fn answer_suffix(api: &shipment_sdk::ApiError) -> String {
    let mut m = format!(" (HTTP {}", api.status);
    if let Some(c) = &api.code {
        m.push_str(&format!(" {c}"));
    }
    if let Some(id) = &api.request_id {
        m.push_str(&format!(", request id {id}"));
    }
    m.push(')');
    m
}

/// Which part of the service a call was about, for the hint that fixes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// API-key routes about shipments.
    Shipments,
    /// `GET /merchant-couriers`.
    Couriers,
    /// `POST /auth/login`.
    Login,
    /// Dashboard routes about API keys.
    Keys,
    /// Dashboard routes about webhooks.
    Webhooks,
}

impl Surface {
    fn is_dashboard(self) -> bool {
        matches!(self, Surface::Keys | Surface::Webhooks)
    }
}

fn hint(e: &SdkError, status: Option<u16>, what: Surface) -> Option<String> {
    let hint = match (status, e.code(), e) {
        (_, _, SdkError::InsufficientPermission { .. }) => {
            "`shipctl whoami` shows what the key may do; a key with more permissions is made in \
             the dashboard or with `shipctl keys create --permissions`"
        }
        (_, _, SdkError::ApiKeyExpired { .. }) => {
            "an expired key never works again: make a new one in the dashboard or with \
             `shipctl keys create --save`"
        }
        (Some(401), _, _) if what == Surface::Login => {
            "check the e-mail and password; `shipctl config set email` stores the e-mail"
        }
        (Some(401), _, _) if what.is_dashboard() => {
            "the dashboard session is missing or has ended: run `shipctl login`"
        }
        (Some(401), _, _) => {
            "the API key was refused: check it with `shipctl config show`, or make a new one \
             with `shipctl login` and `shipctl keys create --save`"
        }
        (Some(404), _, _) => match what {
            Surface::Shipments => "`shipctl shipments list` shows your shipments",
            Surface::Keys => "`shipctl keys list` shows your keys",
            Surface::Webhooks => "`shipctl webhooks list` shows your webhooks",
            _ => "check the address with `shipctl config show`",
        },
        (Some(409), Some(ProblemCode::WebhookUrlTaken), _) => {
            "`shipctl webhooks list` shows it; delete it to register it again with a new key"
        }
        (Some(429), _, _) => "too many requests: wait a little and try again",
        (None, _, SdkError::Connect(_) | SdkError::Timeout(_)) => {
            "is the service running there? Start a local one with `shipment-server demo`, or set \
             the address with --base-url or `shipctl config set base-url`"
        }
        (None, _, SdkError::WrongEnvironment { .. }) => {
            "choose the key's environment: `shipctl config set environment production` (with \
             the production address as base-url) for an sk_live_ key, staging for sk_test_"
        }
        (None, _, SdkError::Config(_)) => "check the settings with `shipctl config show`",
        (_, _, SdkError::Redirect { .. }) => {
            "shipctl follows no redirects: set the base URL to the address the service names, \
             with --base-url or `shipctl config set base-url`"
        }
        _ => return None,
    };
    Some(hint.to_owned())
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::closed_pipe()
        } else {
            Failure::new(FAILURE, format!("cannot write the output: {e}"))
        }
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Failure {
        match e.io_error_kind() {
            Some(kind) => io::Error::from(kind).into(),
            None => Failure::new(FAILURE, format!("cannot write JSON: {e}")),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The innermost cause of an error ("Connection refused (os error 111)",
/// "invalid peer certificate: UnknownIssuer"): reqwest's and hyper's outer
/// layers only repeat the URL and "error sending request".
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_a_quiet_success() {
        let f = Failure::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!((f.code, f.message.as_str()), (0, ""));
        let f = Failure::from(io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(f.code, FAILURE);
    }

    #[test]
    fn checks_made_before_sending_are_usage_errors() {
        let f = Failure::sdk(SdkError::InvalidRating(11), Surface::Shipments);
        assert_eq!(f.code, USAGE);
        let f = Failure::sdk(
            SdkError::InvalidShipmentCode("nope".into()),
            Surface::Shipments,
        );
        assert_eq!(f.code, USAGE);
        assert!(f.message.contains("nope"), "{}", f.message);
    }

    #[test]
    fn a_redirect_names_where_it_points_and_how_to_set_the_base_url() {
        let f = Failure::sdk(
            SdkError::Redirect {
                status: 308,
                location: Some("https://new.example.com/api/v1/shipments".into()),
                request_id: None,
            },
            Surface::Shipments,
        );
        assert_eq!(f.code, FAILURE);
        assert!(f.message.contains("308"), "{}", f.message);
        assert!(
            f.message
                .contains("https://new.example.com/api/v1/shipments"),
            "{}",
            f.message
        );
        assert!(
            f.hint.as_deref().unwrap().contains("base-url"),
            "{:?}",
            f.hint
        );
    }
}
