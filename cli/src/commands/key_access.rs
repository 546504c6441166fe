//! Which `shipctl` commands an API key's permissions allow: what `doctor`
//! says a restricted key cannot do, before a command is refused for it.
//!
//! The service decides (a refused command is 403 `insufficient_permission`,
//! naming what it needed); this table only lets `doctor` say it ahead, so
//! it lists every command that uses the API key.

use shipment_sdk::model::{Access, Permissions, Resource};

/// The commands that use the API key, grouped by the permission they need.
pub const COMMANDS: &[(&str, Resource, Access)] = &[
    (
        "shipments list/get/watch",
        Resource::Shipments,
        Access::Read,
    ),
    (
        "shipments create/cancel/rate/confirmation-code/import",
        Resource::Shipments,
        Access::Write,
    ),
    ("couriers list", Resource::Couriers, Access::Read),
    (
        "listen, listen --print-secret",
        Resource::Listen,
        Access::Read,
    ),
    ("listen --rotate-secret", Resource::Listen, Access::Write),
];

/// What a key with `permissions` cannot run, one entry per group:
/// `shipments create/cancel/rate/confirmation-code/import need shipments:
/// write`. Empty for a key that may run them all.
pub fn cannot_run(permissions: &Permissions) -> Vec<String> {
    COMMANDS
        .iter()
        .filter(|(_, resource, access)| !permissions.allows(*resource, *access))
        .map(|(commands, resource, access)| format!("{commands} need {resource}: {access}"))
        .collect()
}

/// A key's permissions as a person reads them: `full` for a full key,
/// else `shipments: read, couriers: read` (resources at `none` left out;
/// `none` when all are).
pub fn describe(restricted: bool, permissions: &Permissions) -> String {
    if !restricted {
        return "full".to_owned();
    }
    let granted: Vec<String> = Resource::ALL
        .into_iter()
        .filter(|r| permissions.get(*r) != Access::None)
        .map(|r| format!("{r}: {}", permissions.get(r)))
        .collect();
    if granted.is_empty() {
        "none (it can only tell what it is)".to_owned()
    } else {
        granted.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_key_can_run_everything() {
        assert_eq!(cannot_run(&Permissions::full()), Vec::<String>::new());
        assert_eq!(describe(false, &Permissions::full()), "full");
    }

    #[test]
    fn a_read_only_key_is_told_what_it_cannot_run() {
        let p = Permissions::read_only();
        assert_eq!(
            cannot_run(&p),
            [
                "shipments create/cancel/rate/confirmation-code/import need shipments: write",
                "listen, listen --print-secret need listen: read",
                "listen --rotate-secret need listen: write",
            ]
        );
        assert_eq!(describe(true, &p), "shipments: read, couriers: read");
        assert_eq!(
            describe(true, &Permissions::none()),
            "none (it can only tell what it is)"
        );
        assert_eq!(cannot_run(&Permissions::none()).len(), COMMANDS.len());
    }

    #[test]
    fn write_includes_read() {
        let p = Permissions::none().with(Resource::Listen, Access::Write);
        let cannot = cannot_run(&p);
        assert!(
            !cannot.iter().any(|c| c.starts_with("listen")),
            "{cannot:?}"
        );
    }
}
