#!/usr/bin/env bash
# The release guards: what keeps a change from breaking a merchant's build,
# a generated client or the licence terms by accident
# (docs/src/contributing.md, "Release guards").
#
#   .ci/release-guards.sh                 every guard, then every self-test (what CI runs)
#   .ci/release-guards.sh GUARD...        the named guards: semver, features, openapi, deny
#   .ci/release-guards.sh --self-test [GUARD...]
#                                         the self-tests (of semver, openapi, deny): each
#                                         guard run on an injected break (a throw-away
#                                         worktree, a scratch copy, a scratch workspace),
#                                         which it must refuse
#
# The last release is the commit and the OpenAPI document in release/. The
# tools are installed when missing, at the versions .ci/tools.sh pins: a newer
# one may add lints or rules, so a version is raised by a change of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

# The cargo tools' versions, and cargo_tool, which installs one.
source .ci/tools.sh
OPTIC_VERSION=1.0.9

# The libraries whose public API semver-checks guards. shipctl's library is
# its binary's own code (the command line is its interface), so it is not
# among them; the server's is, since its README offers it to embed the
# server and the published test kit builds on it.
SEMVER_CRATES=(shipment-sdk shipment-webhook-verify shipment-server shipment-testkit)
# The crates whose features users pick: each must build alone.
FEATURE_CRATES=(shipment-sdk shipment-webhook-verify)

scratch="$(mktemp -d)"
cleanup() {
  git -C "$repo" worktree remove --force "$scratch/worktree" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

release_field() { sed -n "s/^$1 = \"\(.*\)\"$/\1/p" "$repo/release/last-release.toml"; }

# Runs a guard or self-test and prints how long it took.
timed() {
  local name=$1 start=$SECONDS
  shift
  printf '\n--> %s\n' "$name"
  "$@"
  printf -- '--> %s: %d s\n' "$name" $((SECONDS - start))
}

# Optic, in a prefix of its own. Its ajv is held at 8.17.1: with the 8.20
# that npm otherwise picks for Stoplight's spectral-core, beside the
# ajv-errors that Optic's own ajv hoists, every run dies compiling a schema
# ("Unexpected token ':'") before it reads a document.
optic_prefix="${TMPDIR:-/tmp}/shipment-ci-optic-$OPTIC_VERSION"
optic="$optic_prefix/node_modules/.bin/optic"
ensure_optic() {
  [ -x "$optic" ] && return
  local start=$SECONDS
  mkdir -p "$optic_prefix"
  cat >"$optic_prefix/package.json" <<EOF
{
  "private": true,
  "dependencies": { "@useoptic/optic": "$OPTIC_VERSION" },
  "overrides": { "ajv": "8.17.1" }
}
EOF
  npm install --no-audit --no-fund --no-package-lock --prefix "$optic_prefix" >/dev/null
  echo "installed optic $OPTIC_VERSION in $((SECONDS - start)) s"
}

# --- the guards -------------------------------------------------------------

# semver-checks builds each crate's API twice (today's and the release's),
# each in a placeholder project whose target directory is, by default, its
# own: every dependency built eight times for four crates. Given one
# directory (CARGO_TARGET_DIR, which it follows), it builds each once.
# Under the workspace's target directory, apart from its other builds.
semver_target_dir() {
  cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"] + "/semver")'
}

# Runs semver-checks against the last release, with all features.
semver_checks() {
  local commit
  commit=$(release_field commit)
  git cat-file -e "$commit^{commit}" 2>/dev/null || {
    echo "semver: the last release's commit $commit is not in this clone (a shallow one? git fetch --unshallow)"
    return 1
  }
  # The repository's, also from the self-test's worktree.
  : "${semver_target:=$(cd "$repo" && semver_target_dir)}"
  CARGO_TARGET_DIR="$semver_target" cargo semver-checks check-release \
    --baseline-rev "$commit" --all-features "$@"
}

# The libraries' public API against the last release's, built from the
# repository's history: a break fails unless the version in Cargo.toml rose
# as semver asks (before 1.0, the minor version).
guard_semver() {
  cargo_tool "cargo semver-checks" cargo-semver-checks "$SEMVER_CHECKS_VERSION"
  local packages=()
  for crate in "${SEMVER_CRATES[@]}"; do packages+=(-p "$crate"); done
  semver_checks "${packages[@]}"
}

# Every feature of the SDK and the verifier builds on its own and with no
# default features, as a user who picks one gets it.
guard_features() {
  cargo_tool "cargo hack" cargo-hack "$CARGO_HACK_VERSION"
  local packages=()
  for crate in "${FEATURE_CRATES[@]}"; do packages+=(-p "$crate"); done
  cargo hack check --each-feature --no-dev-deps "${packages[@]}"
}

# Diffs two OpenAPI documents with Optic's breaking-changes rules
# (.ci/optic.yml) into a report, with Optic's exit status beside it.
openapi_diff() {
  local base=$1 head=$2 report=$3 status=0
  # Optic reports to its makers unless told not to; no colours in the report.
  OPTIC_TELEMETRY_LEVEL=off NO_COLOR=1 FORCE_COLOR=0 \
    "$optic" diff "$base" "$head" --check --standard .ci/optic.yml >"$report" 2>&1 || status=$?
  echo "$status" >"$report.status"
}

# Judges a report against a changelog (.ci/openapi_breaking.py). A removed
# operation repeats every field of every answer it had, so the report's
# head is shown: it names what broke.
openapi_judge() {
  local report=$1 changelog=$2
  grep -vE '^\s*$|--web flag' "$report" | head -40 || true
  python3 .ci/openapi_breaking.py "$report" "$(cat "$report.status")" "$changelog"
}

# Today's OpenAPI document against the last release's.
guard_openapi() {
  ensure_optic
  openapi_diff release/openapi.json openapi.json "$scratch/openapi.report"
  openapi_judge "$scratch/openapi.report" server/CHANGELOG.md
}

# Licences, sources and duplicate versions of every dependency (deny.toml).
guard_deny() {
  cargo_tool "cargo deny" cargo-deny "$CARGO_DENY_VERSION"
  cargo deny check licenses sources bans
}

# --- the self-tests: each guard must refuse an injected break ---------------

# Expects a command to fail, and its output to contain a text.
must_fail() {
  local what=$1 expect=$2 out status=0
  shift 2
  out=$(mktemp -p "$scratch")
  "$@" >"$out" 2>&1 || status=$?
  tail -30 "$out"
  if [ "$status" -eq 0 ]; then
    echo "SELF-TEST FAILED: the guard passed $what"
    return 1
  fi
  grep -qF -- "$expect" "$out" || {
    echo "SELF-TEST FAILED: the guard refused $what, but its output does not say \"$expect\""
    return 1
  }
  echo "self-test: the guard refused $what, as it must"
}

# A public method of the SDK made private, in a throw-away worktree of HEAD
# sharing this target directory, must fail the semver guard.
self_test_semver() {
  cargo_tool "cargo semver-checks" cargo-semver-checks "$SEMVER_CHECKS_VERSION"
  local worktree="$scratch/worktree"
  git worktree add --quiet --detach "$worktree" HEAD
  # The change a careless refactor makes: `Error::is_not_found` no longer public.
  sed -i 's/^    pub fn is_not_found(&self) -> bool {$/    pub(crate) fn is_not_found(\&self) -> bool {/' "$worktree/sdk/src/error.rs"
  grep -q 'pub(crate) fn is_not_found' "$worktree/sdk/src/error.rs" || {
    echo "SELF-TEST FAILED: could not inject the break (is Error::is_not_found still in sdk/src/error.rs?)"
    return 1
  }
  # As a patch release: the SDK's version may already have risen past the
  # last release's for breaks made since (0.1 to 0.2 allows any), and the
  # break injected here must be caught whatever the version says.
  (cd "$worktree" && must_fail "a public method made private" "is_not_found" \
    semver_checks -p shipment-sdk --release-type patch)
}

# An operation removed from a copy of today's document must fail the
# OpenAPI guard, and pass once a copy of the changelog lists it.
self_test_openapi() {
  ensure_optic
  local head="$scratch/openapi.json" changelog="$scratch/CHANGELOG.md" report="$scratch/broken.report"
  python3 - "$head" <<'EOF'
import json, sys
with open("openapi.json", encoding="utf-8") as f:
    document = json.load(f)
del document["paths"]["/shipments/{code}/rate"]["post"]
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump(document, f, indent=2)
EOF
  openapi_diff release/openapi.json "$head" "$report"
  must_fail "an operation removed from the document" "POST /shipments/{code}/rate: NOT listed" \
    openapi_judge "$report" server/CHANGELOG.md
  # The same break, listed as intended in a copy of the changelog.
  python3 - server/CHANGELOG.md "$changelog" <<'EOF'
import sys
with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
entry = "\n### Breaking\n\n- `POST /shipments/{code}/rate`: removed (the guard's self-test).\n"
text = text.replace("## [Unreleased]\n", "## [Unreleased]\n" + entry, 1)
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write(text)
EOF
  python3 .ci/openapi_breaking.py "$report" "$(cat "$report.status")" "$changelog"
  echo "self-test: the guard accepted the break once the changelog listed it"
}

# A scratch workspace whose crate depends on a GPL-3.0 path crate must fail
# the licence check under this deny.toml.
self_test_deny() {
  cargo_tool "cargo deny" cargo-deny "$CARGO_DENY_VERSION"
  local ws="$scratch/gpl-workspace"
  mkdir -p "$ws/app/src" "$ws/copyleft/src"
  cat >"$ws/Cargo.toml" <<'EOF'
[workspace]
resolver = "3"
members = ["app", "copyleft"]
EOF
  cat >"$ws/app/Cargo.toml" <<'EOF'
[package]
name = "app"
version = "0.1.0"
edition = "2024"
license = "MIT OR Apache-2.0"

[dependencies]
copyleft = { path = "../copyleft", version = "0.1.0" }
EOF
  cat >"$ws/copyleft/Cargo.toml" <<'EOF'
[package]
name = "copyleft"
version = "0.1.0"
edition = "2024"
license = "GPL-3.0-only"
EOF
  touch "$ws/app/src/lib.rs" "$ws/copyleft/src/lib.rs"
  must_fail "a dependency licensed GPL-3.0-only" "GPL-3.0-only" \
    cargo deny --manifest-path "$ws/Cargo.toml" --config "$repo/deny.toml" check licenses
}

guards=(semver features openapi deny)
self_tests=(semver openapi deny)
case "${1:-}" in
  "")
    for guard in "${guards[@]}"; do timed "guard $guard" "guard_$guard"; done
    for test in "${self_tests[@]}"; do timed "self-test $test" "self_test_$test"; done
    ;;
  --self-test)
    shift
    [ $# -gt 0 ] || set -- "${self_tests[@]}"
    for test in "$@"; do
      declare -F "self_test_$test" >/dev/null || { echo "no self-test $test (${self_tests[*]})"; exit 2; }
      timed "self-test $test" "self_test_$test"
    done
    ;;
  *)
    for guard in "$@"; do
      declare -F "guard_$guard" >/dev/null || { echo "no guard $guard (${guards[*]})"; exit 2; }
      timed "guard $guard" "guard_$guard"
    done
    ;;
esac
