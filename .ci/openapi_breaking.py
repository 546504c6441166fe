"""Judges the OpenAPI guard's diff (`.ci/release-guards.sh openapi`).

Optic's breaking-changes ruleset says which operations of today's
`openapi.json` break a client written against the last release's
`release/openapi.json`; it cannot know which of those breaks were meant.
The changelog says so: every operation with a breaking change is listed
under `## [Unreleased]`, `### Breaking`, in an item that begins with the
operation in a code span (``- `POST /shipments/{code}/rate`: ...``), as
server/CHANGELOG.md's preamble describes. A break not listed fails, and so
does a failed diff that names no operation (a document Optic could not
read, a rule outside any operation), since nothing could then be listed.

    python3 .ci/openapi_breaking.py OPTIC_OUTPUT OPTIC_EXIT_STATUS CHANGELOG

Exits 0 when every break is listed, 1 otherwise.
"""

import re
import sys

METHODS = "GET|PUT|POST|DELETE|OPTIONS|HEAD|PATCH|TRACE"
# Optic's text report heads each operation with `x` (a rule failed) or `✔`
# at the start of a line, then the method and the path as the document has
# them, then a colon.
BROKEN = re.compile(rf"^x ({METHODS}) (/\S*):")
LISTED = re.compile(rf"^[-*] `({METHODS}) (/[^`\s]*)`")
# Colours, should a terminal or a CI variable have turned them on.
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def broken_operations(report: str) -> list[str]:
    found = []
    for line in ANSI.sub("", report).splitlines():
        match = BROKEN.match(line)
        if match:
            found.append(f"{match[1]} {match[2]}")
    return found


def intended_breaks(changelog: str) -> set[str]:
    """The operations listed in the `### Breaking` section of `## [Unreleased]`."""
    listed = set()
    in_unreleased = in_breaking = False
    for line in changelog.splitlines():
        if line.startswith("## "):
            in_unreleased = line.strip() in ("## [Unreleased]", "## Unreleased")
            in_breaking = False
        elif line.startswith("### "):
            in_breaking = in_unreleased and line.strip() == "### Breaking"
        elif in_breaking:
            match = LISTED.match(line)
            if match:
                listed.add(f"{match[1]} {match[2]}")
    return listed


def main() -> int:
    report_path, status, changelog_path = sys.argv[1:]
    with open(report_path, encoding="utf-8") as f:
        report = f.read()
    with open(changelog_path, encoding="utf-8") as f:
        intended = intended_breaks(f.read())
    broken = broken_operations(report)
    if status == "0" and not broken:
        print("openapi: no breaking change since the last release")
        return 0
    if not broken:
        print(f"openapi: the diff failed (exit {status}) without naming an operation; its output is above")
        return 1
    unlisted = [op for op in broken if op not in intended]
    for op in broken:
        verdict = "listed as intended" if op in intended else "NOT listed"
        print(f"openapi: breaking change to {op}: {verdict} in {changelog_path}")
    if unlisted:
        print(
            f"openapi: {len(unlisted)} breaking change(s) not listed under `## [Unreleased]`, "
            f"`### Breaking` in {changelog_path} (an item beginning with the operation in a "
            "code span, as its preamble says); list them if they are meant, or undo them"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
