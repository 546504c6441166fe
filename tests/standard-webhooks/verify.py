"""Verifies recorded webhook deliveries with the official Standard Webhooks
library for Python (`standardwebhooks` on PyPI, the version pinned in
requirements.txt), as a receiver written in Python would: the `whsec_` key
exactly as the service showed it, the raw body bytes, the request headers.

Run by server/tests/api/standard_libraries.rs:

    python3 verify.py --version
    python3 verify.py [--clock-offset SECONDS] DELIVERIES

DELIVERIES holds one JSON object per line: {"key": "whsec_...", "headers":
{name: value}, "body_hex": "<the body, hex>"}. For each, one line is
printed: {"verified": true} or {"verified": false, "error": "<the
library's message>"}.

--clock-offset moves the library's clock that many seconds ahead, to show
what a receiver does with a delivery replayed that much later. The headers
and body are never changed: the library reads the time through the name
`datetime` of its module `standardwebhooks.webhooks` (`datetime.now(tz=
timezone.utc)` in `Webhook.__verify_timestamp`), and that name alone is
replaced, by a `datetime` whose `now` is ahead.
"""

import argparse
import datetime as _datetime
import json
import sys

import standardwebhooks
import standardwebhooks.webhooks as library


def ahead_by(seconds: float) -> type:
    """A `datetime` whose `now()` is `seconds` ahead of the real one."""
    offset = _datetime.timedelta(seconds=seconds)

    class Ahead(_datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return _datetime.datetime.now(tz) + offset

    return Ahead


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--clock-offset", type=float, default=0.0)
    parser.add_argument("deliveries", nargs="?")
    args = parser.parse_args()
    if args.version:
        print(f"standardwebhooks {standardwebhooks.__version__}")
        return 0
    if args.deliveries is None:
        parser.error("DELIVERIES is required")
    if args.clock_offset:
        library.datetime = ahead_by(args.clock_offset)
    with open(args.deliveries, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            delivery = json.loads(line)
            webhook = standardwebhooks.Webhook(delivery["key"])
            body = bytes.fromhex(delivery["body_hex"])
            try:
                webhook.verify(body, delivery["headers"])
                result = {"verified": True}
            except standardwebhooks.WebhookVerificationError as e:
                result = {"verified": False, "error": str(e)}
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
