#!/usr/bin/env bash
# The published crates, each checked from its packaged files alone, as a
# user of the published crate gets them: a file outside the crate
# (include_str!, a migration, a licence) fails here.
#
# `cargo package` would verify by building each package (code generation
# for every dependency, in the dev profile); this packs without that and
# then type-checks each unpacked crate instead, lib and binaries, each with
# its own features as `cargo package` does, in a scratch workspace where our
# crates find each other's packaged copies. Macros that read files
# (include_str!, sqlx's migrate!) and build scripts run as in a build, so
# what verification catches is caught, without code generation for every
# dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
metadata=$(cargo metadata --no-deps --format-version 1)
target=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' <<<"$metadata")

# Every member that may be published, as name@version (`publish = false`
# ones are left out).
published=$(python3 -c '
import json, sys
print(" ".join(p["name"] + "@" + p["version"] for p in json.load(sys.stdin)["packages"] if p["publish"] != []))' <<<"$metadata")
echo "publishable: $published"
packages=()
for crate in $published; do packages+=(-p "${crate%@*}"); done
cargo package --no-verify "${packages[@]}"

# Its README, and the texts its licence field names.
for crate in $published; do
  list=$(cargo package --list -p "${crate%@*}" 2>/dev/null)
  for file in README.md LICENSE-MIT LICENSE-APACHE; do
    grep -qx "$file" <<<"$list" || { echo "${crate%@*}: no $file in its package"; exit 1; }
  done
done
echo "every package holds its README.md, LICENSE-MIT and LICENSE-APACHE"

# Under the target directory, so the repository's .cargo/config.toml (the
# SQLite build flags) applies as it does to `cargo package`'s own unpacking.
scratch="$target/package-check"
rm -rf "$scratch"
mkdir -p "$scratch"
members=() patches=()
for crate in $published; do
  name=${crate%@*} version=${crate#*@}
  tar -xzf "$target/package/$name-$version.crate" -C "$scratch"
  members+=("\"$name-$version\"")
  patches+=("$name = { path = \"$name-$version\" }")
done
{
  echo '[workspace]'
  echo 'resolver = "3"'
  echo "members = [$(IFS=,; echo "${members[*]}")]"
  echo '# A dependency on one of our crates is on its published version:'
  echo '# the packaged copy beside it stands in for the registry.'
  echo '[patch.crates-io]'
  printf '%s\n' "${patches[@]}"
} >"$scratch/Cargo.toml"
# The versions the repository tested with.
cp Cargo.lock "$scratch/"
# Linted as well as checked: each crate builds here with its default
# features only, as a user's build does (the server without `otlp`), which
# the workspace's lint step (--all-features) does not see; clippy's
# dependencies are plain checks, shared with a `cargo check`.
for crate in $published; do
  echo "checking and linting ${crate%@*} from its package"
  (cd "$scratch" && cargo clippy --quiet -p "${crate%@*}" --lib --bins -- -D warnings)
done
echo "every package checks, and passes clippy, from its packaged files alone"
