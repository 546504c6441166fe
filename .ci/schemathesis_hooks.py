"""Test data for schemathesis: ids that exist in the fixtures.

The document can say that `courier_company_id` and `driver_id` are positive
integers, but not which ones are linked to this merchant or employ this
driver; the service refuses others with 400 as DESIGN.md says. A positive
id in a generated body is therefore replaced by the fixture's own, the way
a stateful test would use the ids an earlier response returned. Values the
document forbids (negative, zero, wrong type) are left alone, so negative
tests still send them.
"""

import os

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
