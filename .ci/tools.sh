# shellcheck shell=bash
# The cargo-installed tools CI uses, at pinned versions, and the one way they
# are installed. Sourced by .ci/run (which installs them all at its start,
# beside the first builds) and .ci/release-guards.sh (which installs the one a
# guard needs when it runs alone). A newer version may add lints or rules, so
# a version is raised by a change of its own.
MDBOOK_VERSION=0.5.4
SEMVER_CHECKS_VERSION=0.51.0
CARGO_HACK_VERSION=0.6.46
CARGO_DENY_VERSION=0.20.2
CARGO_FUZZ_VERSION=0.13.1

# Installs a tool when `COMMAND --version` does not print VERSION
# (`cargo install --version` replaces another version).
#
#   cargo_tool "cargo deny" cargo-deny "$CARGO_DENY_VERSION" [cargo install options]
#
# No registry reachable here ships these prebuilt, so a fresh machine
# compiles them: about 20 CPU-minutes with their own release profiles. They
# are built with the dev profile instead (what their runs here do is small:
# a book, four crates' APIs, a dependency list), in one target directory, so
# the dependencies they share are built once (BENCHMARKS.md, "CI").
cargo_tool() {
  local command=$1 crate=$2 version=$3 start=$SECONDS
  shift 3
  # shellcheck disable=SC2086 # "cargo deny" is a command and its subcommand
  if ! $command --version 2>/dev/null | grep -qE " v?${version//./\\.}\$"; then
    CARGO_TARGET_DIR="${CI_TOOLS_TARGET_DIR:-${TMPDIR:-/tmp}/shipment-ci-tools}" \
      nice -n 19 cargo install --quiet --debug --locked "$crate" --version "$version" "$@"
    echo "installed $crate $version in $((SECONDS - start)) s"
  fi
}

# Every tool .ci/run needs.
cargo_tools() {
  cargo_tool mdbook mdbook "$MDBOOK_VERSION" --no-default-features
  cargo_tool "cargo hack" cargo-hack "$CARGO_HACK_VERSION"
  cargo_tool "cargo fuzz" cargo-fuzz "$CARGO_FUZZ_VERSION"
  cargo_tool "cargo deny" cargo-deny "$CARGO_DENY_VERSION"
  cargo_tool "cargo semver-checks" cargo-semver-checks "$SEMVER_CHECKS_VERSION"
}
