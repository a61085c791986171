#!/usr/bin/env bash
# The installed cairn as an embedder gets it: `cmake --install` into a
# temporary prefix; the examples built out of tree against it, once with
# find_package(cairn) and once with pkg-config, run, and their output
# checked; the Debian packages built with CPack and their contents listed;
# the bash completion driven as bash drives it.
# Usage: check_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$(realpath "$1")
build_dir=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() { echo "check_install: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "cmake --install into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
for f in bin/cairn include/cairn/harness/harness.hpp include/cairn/version.hpp include/cairn/store/store.hpp \
  include/cairn/serve/server.hpp lib/pkgconfig/cairn-serve.pc \
  include/cairn/agent/coding_agent.hpp include/cairn/agent/options.hpp lib/pkgconfig/cairn-agent.pc \
  lib/cmake/cairn/cairnConfig.cmake lib/cmake/cairn/cairnConfigVersion.cmake lib/cmake/cairn/cairnTargets.cmake \
  lib/pkgconfig/cairn.pc share/man/man1/cairn.1 share/bash-completion/completions/cairn; do
  [[ -e $prefix/$f ]] || fail "the install lacks $f"
done
for lib in libcairn libcairn_agent libcairn_serve; do
  compgen -G "$prefix/lib/$lib.*" >/dev/null || fail "the install lacks $lib"
done
# The CMake package exports every library.
for target in cairn::cairn cairn::agent cairn::serve; do
  grep -q "add_library($target " "$prefix/lib/cmake/cairn/cairnTargets.cmake" || fail "the CMake package does not export $target"
done
# readline (GPL-3) is the command's line editor and never part of the libraries.
for lib in "$prefix"/lib/libcairn.* "$prefix"/lib/libcairn_*.*; do
  if { nm -D --undefined-only "$lib" 2>/dev/null; nm --undefined-only "$lib" 2>/dev/null; } | grep -qE ' (rl_|readline|add_history)'; then
    fail "$lib refers to readline"
  fi
done
# The library's internals stay behind it.
for f in log/index.hpp log/checksum.hpp parallel.hpp agent/mcp_servers.hpp agent/harness_options.hpp; do
  [[ ! -e $prefix/include/cairn/$f ]] || fail "an internal header is installed: include/cairn/$f"
done
if grep -rq '#include "\(log\|util\|store\|harness\|llm\|tools\|mcp\|agent\|serve\)/' "$prefix/include/cairn"; then
  fail "an installed header includes one of the library's own headers"
fi
"$prefix/bin/cairn" --version | grep -qx "cairn $(sed -n 's/^#define CAIRN_VERSION_STRING "\(.*\)"/\1/p' "$prefix/include/cairn/version.hpp")" \
  || fail "cairn --version does not match version.hpp"
grep -q "coding agent" "$prefix/share/man/man1/cairn.1" || fail "the man page does not describe cairn"
# Every command has its section in it.
for command in $("$prefix/bin/cairn" --help | sed -n '/^Subcommands:/,$ s/^  \([a-z][a-z-]*\) .*/\1/p'); do
  grep -qx "\.SS cairn $command" "$prefix/share/man/man1/cairn.1" || fail "the man page lacks cairn $command"
done

# The session an example wrote (its "session: ID in FILE" line) is a valid log.
check_session() {  # BINARY OUTPUT DB
  local session
  session=$(sed -n 's/^session: \([^ ]*\) in .*/\1/p' <<<"$2")
  "$prefix/bin/cairn" --store "sqlite:$3" verify "$session" >/dev/null || fail "$1 wrote a log verify refuses"
}

# Runs an example in a fresh directory and checks what it printed.
check_embed() {  # BINARY
  local dir output
  dir=$(mktemp -d "$work/run.XXXXXX")
  output=$(cd "$dir" && "$1" "$dir/embed.db") || fail "$1 failed: $output"
  grep -qx 'tool_start seq=[0-9]* word_count {"text":"the quick brown fox jumps over the lazy dog"}' <<<"$output" \
    || fail "$1 did not run its tool: $output"
  grep -qx 'tool_end word_count -> \[{"type":"text","text":"9"}\]' <<<"$output" || fail "$1: wrong tool result: $output"
  grep -qx 'run_end seq=[0-9]* completed' <<<"$output" || fail "$1: the run did not complete: $output"
  grep -qx 'answer: The sentence has 9 words.' <<<"$output" || fail "$1: wrong answer: $output"
  check_session "$1" "$output" "$dir/embed.db"
}
check_watch() {  # BINARY
  local dir output
  dir=$(mktemp -d "$work/run.XXXXXX")
  output=$(cd "$dir" && "$1" "$dir/watch.db") || fail "$1 failed: $output"
  grep -qx 'snapshot: transcript [0-9]* entries, cursor [0-9]*, run running, tool lookup running' <<<"$output" \
    || fail "$1 did not attach mid-run: $output"
  grep -qx 'seq [0-9]* message_end toolResult' <<<"$output" || fail "$1 missed the tool's result: $output"
  grep -qx 'seq [0-9]* run_end' <<<"$output" || fail "$1 missed run_end: $output"
  grep -q '^run .* ended ok; session ' <<<"$output" || fail "$1: the run did not end ok: $output"
  # Each durable record once, in order.
  local seqs
  seqs=$(sed -n 's/^seq \([0-9][0-9]*\) .*/\1/p' <<<"$output")
  [[ $seqs == "$(sort -n -u <<<"$seqs")" ]] || fail "$1 printed a seq twice or out of order: $output"
}

check_agent() {  # BINARY
  local dir output
  dir=$(mktemp -d "$work/run.XXXXXX")
  mkdir "$dir/home" "$dir/project"
  # A home of its own: no user's MCP servers, settings or AGENTS.md.
  output=$(cd "$dir/project" && HOME=$dir/home XDG_CONFIG_HOME= XDG_CACHE_HOME= "$1" "$dir/project/agent.db") \
    || fail "$1 failed: $output"
  grep -qx 'tools: read ls' <<<"$output" || fail "$1: not the tools it chose: $output"
  grep -q '^tool_end ls -> agent\.db' <<<"$output" || fail "$1 did not list its directory: $output"
  grep -qx 'run_end ok' <<<"$output" || fail "$1: the run did not end ok: $output"
  check_session "$1" "$output" "$dir/project/agent.db"
}

check_serve() {  # BINARY
  local dir port word session reply
  dir=$(mktemp -d "$work/run.XXXXXX")
  coproc SERVE { cd "$dir" && exec "$1" "$dir/serve.db" example-token-0123; }
  read -r -t 30 word port <&"${SERVE[0]}" || fail "$1 did not say its port"
  [[ $word == port && $port =~ ^[0-9]+$ ]] || fail "$1 said: $word $port"
  http() {  # METHOD PATH [BODY]: the response's status line and body
    local body=${3:-}
    exec 5<>"/dev/tcp/127.0.0.1/$port"
    printf '%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer example-token-0123\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
      "$1" "$2" "${#body}" "$body" >&5
    tr -d '\r' <&5 | sed -n '1p; /^$/,$p'
    exec 5<&-
  }
  reply=$(http POST /v1/sessions '{}')
  grep -q '^HTTP/1.1 201' <<<"$reply" || fail "$1: creating a session gave: $reply"
  session=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' <<<"$reply" | head -n 1)
  reply=$(http POST "/v1/sessions/$session/refs/main/prompt" '{"text":"How many words?"}')
  grep -q '^HTTP/1.1 202' <<<"$reply" || fail "$1: the prompt gave: $reply"
  for _ in $(seq 100); do
    reply=$(http GET "/v1/sessions/$session/records")
    grep -q 'The sentence has 9 words.' <<<"$reply" && break
    sleep 0.1
  done
  grep -q '"toolName":"word_count"' <<<"$reply" || fail "$1: its tool never ran: $reply"
  grep -q 'The sentence has 9 words.' <<<"$reply" || fail "$1: the run never answered: $reply"
  grep -q '^HTTP/1.1 401' <<<"$(exec 5<>"/dev/tcp/127.0.0.1/$port"; printf 'GET /v1/sessions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&5; cat <&5)" \
    || fail "$1 answered a request without its token"
  local stdin_fd=${SERVE[1]}
  exec {stdin_fd}>&-  # its stdin ends: it stops
  wait "$SERVE_PID" || fail "$1 did not stop cleanly"
  "$prefix/bin/cairn" --store "sqlite:$dir/serve.db" verify "$session" >/dev/null || fail "$1 wrote a log verify refuses"
}

step "docs/embedding.md quotes examples/embed/main.cpp as it is"
awk '/^## A complete program/ { in_section = 1 } in_section && /^```cpp/ { in_code = 1; next }
     in_code && /^```/ { exit } in_code { print }' "$source_dir/docs/embedding.md" |
  diff -u - "$source_dir/examples/embed/main.cpp" >/dev/null || fail "docs/embedding.md's program differs from examples/embed/main.cpp"

for example in embed watch agent serve; do
  module=cairn
  [[ $example == agent || $example == serve ]] && module=cairn-$example
  step "examples/$example with find_package(cairn)"
  cmake -S "$source_dir/examples/$example" -B "$work/$example-cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS=-O0 >/dev/null  # compiled to be run once: no optimisation
  cmake --build "$work/$example-cmake" >/dev/null
  "check_$example" "$work/$example-cmake/$example"

  step "examples/$example with pkg-config"
  # A shared libcairn outside the loader's paths is found through the
  # program's run path, as an embedder's program would find it.
  # shellcheck disable=SC2046  # the flags are words
  g++ -std=c++23 -O0 -Wall -Wextra -Werror "$source_dir/examples/$example/main.cpp" -o "$work/$example-pc" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs "$module") \
    -Wl,-rpath,"$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --variable=libdir "$module")"
  "check_$example" "$work/$example-pc"
done

step "bash completion"
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
  completions=$(PATH="$prefix/bin:$PATH" bash -c '
    source /usr/share/bash-completion/bash_completion
    source "$1"
    complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
      COMPREPLY=(); _cairn cairn "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"; printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd " "; }
    complete_words cairn re
    complete_words cairn serve --li
    complete_words cairn --thinking h' _ "$prefix/share/bash-completion/completions/cairn")
  [[ $completions == $'repair resume\n--listen\nhigh' ]] || fail "bash completion gave: $completions"
else
  fail "bash-completion is not installed (scripts/install-deps installs it)"
fi

step "cpack -G DEB"
(cd "$work" && cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/packages" >/dev/null)
runtime=$(compgen -G "$work/packages/cairn_*.deb") || fail "no cairn package"
dev=$(compgen -G "$work/packages/libcairn-dev_*.deb") || fail "no libcairn-dev package"
runtime_files=$(dpkg -c "$runtime")
dev_files=$(dpkg -c "$dev")
for f in ./usr/bin/cairn ./usr/share/man/man1/cairn.1 ./usr/share/bash-completion/completions/cairn \
  ./usr/share/doc/cairn/copyright; do
  grep -q " $f\$" <<<"$runtime_files" || fail "the cairn package lacks $f"
done
for f in ./usr/include/cairn/harness/harness.hpp ./usr/include/cairn/version.hpp ./usr/lib/cmake/cairn/cairnConfig.cmake \
  ./usr/lib/cmake/cairn/cairnConfigVersion.cmake ./usr/lib/cmake/cairn/cairnTargets.cmake ./usr/lib/pkgconfig/cairn.pc \
  ./usr/include/cairn/agent/coding_agent.hpp ./usr/lib/pkgconfig/cairn-agent.pc ./usr/lib/pkgconfig/cairn-serve.pc \
  ./usr/share/doc/libcairn-dev/copyright; do
  grep -q " $f\$" <<<"$dev_files" || fail "the libcairn-dev package lacks $f"
done
grep -q ' ./usr/lib/libcairn\.\(a\|so\)' <<<"$dev_files" || fail "the libcairn-dev package lacks the library"
depends=$(dpkg-deb -f "$runtime" Depends)
for d in libc6 libstdc++6 libsqlite3-0 libpq5 libcurl4 libreadline8; do
  grep -q "$d" <<<"$depends" || fail "the cairn package does not depend on $d: $depends"
done
dpkg-deb -f "$dev" Depends | grep -q nlohmann-json3-dev || fail "libcairn-dev does not depend on nlohmann-json3-dev"
# Kept for .ci/run, which installs them with apt on its clean machine.
mkdir -p "$build_dir/packages"
cp "$runtime" "$dev" "$build_dir/packages/"
echo "packages: $build_dir/packages/$(basename "$runtime") $build_dir/packages/$(basename "$dev")"
echo "check_install: all good"
