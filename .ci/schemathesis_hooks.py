"""Test data for schemathesis: ids that exist in the fixtures.

The document can say that `courier_company_id` and `driver_id` are positive
integers, but not which ones are linked to this merchant or employ this
driver; the service refuses others with 400 as DESIGN.md says. A positive
id in a generated body is therefore replaced by the fixture's own, the way
a stateful test would use the ids an earlier response returned. Values the
document forbids (negative, zero, wrong type) are left alone, so negative
tests still send them.

Webhook URLs are the other value the document can only describe in prose:
`format: uri` with `maxLength: 2048` says nothing of RFC 1123's limits on
host names (labels of at most 63 characters, names of at most 253), which
the service enforces with 400. A generated `https` URL whose host breaks
them gets a host that keeps them; everything else about it (port, path,
query, percent-escapes) is sent as generated.

A redelivery range is the third: two `format: date-time` fields, and the
service refuses a `failed_until` before `failed_since` with 400 (a range
that cannot match is more likely a mistake than a wish). When both are
valid instants in that order, they are swapped.

A list's `cursor` is the fourth: an opaque string of 1 to 200 characters
that only the server makes, bound to the filters and the account it was
made for, so any other is 400 (`invalid_field`, `cursor`). A generated one
that the document allows is left out of the query, so the rest of the
request is still tested; one the document forbids (empty, too long) is
sent, for the negative tests. Cursors the server made are walked by the
integration tests (server/tests/api/lists.rs).

A key's `expires_at` is the fifth: `format: date-time`, and the service
takes only an instant in the future and at most 366 days ahead (400
otherwise, as the operation's description says). A valid instant outside
that window becomes one 30 days ahead.
"""

import os
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit, urlunsplit

import schemathesis

FIXTURE_IDS = {
    "courier_company_id": int(os.environ["ST_COURIER_ID"]),
    "driver_id": int(os.environ["ST_DRIVER_ID"]),
}


def _fixture_ids(body):
    if isinstance(body, dict):
        for name, value in FIXTURE_IDS.items():
            current = body.get(name)
            # 7.0 is an integer too, to JSON Schema and to the service.
            integral = isinstance(current, int) or (
                isinstance(current, float) and current.is_integer()
            )
            if integral and not isinstance(current, bool) and current >= 1:
                body[name] = value


@schemathesis.hook
def before_call(context, case, kwargs):
    """Every phase (examples, coverage, fuzzing, stateful) passes here."""
    _fixture_ids(case.body)
    _webhook_urls(case.body)
    _redelivery_range(case.body)
    _cursor(case.query)
    _key_expiry(case.body)


def _key_expiry(body):
    if isinstance(body, dict):
        expires_at = _instant(body.get("expires_at"))
        if expires_at is None or expires_at.tzinfo is None:
            return
        now = datetime.now(timezone.utc)
        if not now < expires_at <= now + timedelta(days=366):
            body["expires_at"] = (now + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cursor(query):
    if isinstance(query, dict):
        value = query.get("cursor")
        if isinstance(value, str) and 1 <= len(value) <= 200:
            del query["cursor"]


def _instant(value):
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None


def _redelivery_range(body):
    if isinstance(body, dict):
        since = _instant(body.get("failed_since"))
        until = _instant(body.get("failed_until"))
        if since is not None and until is not None:
            try:
                backwards = until < since
            except TypeError:  # one of them has no offset
                return
            if backwards:
                body["failed_since"], body["failed_until"] = (
                    body["failed_until"],
                    body["failed_since"],
                )


def _host_too_long(host):
    labels = host.rstrip(".").split(".")
    return len(host.rstrip(".")) > 253 or any(len(label) > 63 for label in labels)


def _webhook_urls(body):
    if isinstance(body, dict):
        for name in ("webhook_url", "url"):
            value = body.get(name)
            if not isinstance(value, str):
                continue
            try:
                parts = urlsplit(value)
                host = parts.hostname or ""
            except ValueError:
                continue
            if parts.scheme.lower() == "https" and _host_too_long(host):
                port = f":{parts.port}" if parts.port is not None else ""
                body[name] = urlunsplit(parts._replace(netloc=f"hooks.example.com{port}"))
