#!/usr/bin/env bash
# Installs the Debian packages the release build's packaging test made
# (BUILD_DIR/packages) with apt, as a user would, then uses them from the
# system: `cairn --version`, its man page, the embed example built with
# find_package and with pkg-config against /usr and run, the agent and serve
# examples built with find_package and run. It changes the system it runs
# on (root, a throwaway machine): .ci/run runs it after the suite;
# scripts/test does not.
# Usage: apt_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$(realpath "$1")
build_dir=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-apt.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "apt_install: $*" >&2; exit 1; }

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "$build_dir"/packages/cairn_*.deb "$build_dir"/packages/libcairn-dev_*.deb >/dev/null
[[ $(command -v cairn) == /usr/bin/cairn ]] || fail "cairn is not /usr/bin/cairn"
cairn --version
man -w cairn >/dev/null || fail "man cairn finds no page"

cmake -S "$source_dir/examples/embed" -B "$work/embed" -G Ninja >/dev/null
cmake --build "$work/embed" >/dev/null
(cd "$work" && "$work/embed/embed" "$work/a.db") | grep -qx 'answer: The sentence has 9 words.' \
  || fail "the embed example built with find_package against /usr did not answer"
# shellcheck disable=SC2046  # the flags are words
g++ -std=c++23 -Wall -Wextra -Werror "$source_dir/examples/embed/main.cpp" -o "$work/embed-pc" $(pkg-config --cflags --libs cairn)
(cd "$work" && "$work/embed-pc" "$work/b.db") | grep -qx 'answer: The sentence has 9 words.' \
  || fail "the embed example built with pkg-config against /usr did not answer"
cmake -S "$source_dir/examples/agent" -B "$work/agent" -G Ninja >/dev/null
cmake --build "$work/agent" >/dev/null
mkdir "$work/home" "$work/project"
# A home of its own: no user's MCP servers, settings or AGENTS.md.
output=$(cd "$work/project" && HOME=$work/home XDG_CONFIG_HOME= XDG_CACHE_HOME= "$work/agent/agent" "$work/project/d.db")
grep -qx 'run_end ok' <<<"$output" || fail "the agent example built with find_package against /usr did not run: $output"
pkg-config --exists cairn-agent cairn-serve || fail "pkg-config finds no cairn-agent or cairn-serve"
cmake -S "$source_dir/examples/serve" -B "$work/serve" -G Ninja >/dev/null
cmake --build "$work/serve" >/dev/null
# It listens, says its port, and stops when its stdin ends.
(cd "$work" && "$work/serve/serve" "$work/c.db" apt-install-token </dev/null) | grep -qE '^port [0-9]+$' \
  || fail "the serve example built with find_package against /usr did not start and stop"
echo "apt_install: cairn and libcairn-dev installed with apt; the examples build and run against them"
