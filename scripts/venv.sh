# shellcheck shell=bash disable=SC2034 # (sourced: the variables it sets are read by the sourcing script)
# Sourced by scripts/test.sh, scripts/build-wheel.sh and scripts/check-wheel.sh (bash): the tool
# venvs kept in FAIRPIPE_CACHE (default ~/.cache/fairpipe). The sourcing script defines `say`.
#
# A venv at $1 holding the pinned packages $2…; its marker file lists them once pip has succeeded,
# so an interrupted install or a changed pin installs again. One script at a time installs a given
# venv (flock on DIR.lock): .ci/run provisions the test venvs in the background while it builds, and
# a second script asking for the same venv waits, then finds it installed.
venv() {
  local dir=$1
  shift
  local want="$*"
  mkdir -p "$(dirname "$dir")"
  local lock
  exec {lock}>"$dir.lock"
  flock "$lock"
  if [ -f "$dir/.fairpipe-installed" ] && [ "$(cat "$dir/.fairpipe-installed")" = "$want" ]; then
    exec {lock}>&-
    return
  fi
  local start=$SECONDS
  say "installing $want into $dir"
  rm -f "$dir/.fairpipe-installed"
  python3 -m venv "$dir" || {
    say "python3 cannot make a venv: install it with \`sudo apt-get install python3-venv\`, then run $0 again"
    exit 1
  }
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  echo "$want" >"$dir/.fairpipe-installed"
  exec {lock}>&-
  say "installed $want in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))"
}


# The tools scripts/build-wheel.sh and scripts/build-cli.sh build the release artifacts with
# (FAIRPIPE_CACHE/wheel-venv): maturin, zig (links against an old glibc's symbols), auditwheel,
# cargo-zigbuild.
WHEEL_TOOLS=("maturin==1.16.0" "ziglang==0.17.0" "auditwheel==6.8.2" "cargo-zigbuild==0.24.0")

# For the release scripts: add rustup's target TRIPLE when missing, make the target folder
# (CARGO_TARGET_DIR, else target/) and OUT, and set `target` and `out` (absolute) and `version`
# (the workspace's).
release_paths() { # TRIPLE OUT
  if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$1"; then
    rustup target add "$1"
  fi
  target="${CARGO_TARGET_DIR:-target}"
  mkdir -p "$target" "$2"
  target=$(cd "$target" && pwd)
  out=$(cd "$2" && pwd)
  version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
}

# A build's measure, for --record: `build_clock start` before it, `build_clock stop` after it.
# Sets build_wall_s (wall seconds), build_cpu_s (user + system CPU seconds of the processes this
# shell waited for during the build: cargo, rustc, the linkers — /proc/self/stat's cutime and
# cstime), build_load_before/after (/proc/loadavg) and build_cold (true when TARGET/TRIPLE/release
# did not exist before: nothing to reuse; TARGET/TRIPLE/debug for `build_clock start TRIPLE debug`).
# Call `build_clock start TRIPLE [release|debug]` after release_paths.
build_clock() { # start TRIPLE [DIR] | stop
  local ticks
  ticks=$(getconf CLK_TCK)
  case "$1" in
    start)
      build_cold=false
      [ -d "$target/$2/${3:-release}" ] || build_cold=true
      build_load_before=$(cut -d' ' -f1-3 /proc/loadavg)
      build_start_ns=$(date +%s%N)
      build_cpu_start=$(awk '{print $16 + $17}' /proc/$$/stat)
      ;;
    stop)
      build_wall_s=$(awk -v a="$build_start_ns" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
      build_cpu_s=$(awk -v a="$build_cpu_start" -v t="$ticks" '{printf "%.1f", ($16 + $17 - a) / t}' /proc/$$/stat)
      build_load_after=$(cut -d' ' -f1-3 /proc/loadavg)
      ;;
  esac
}
