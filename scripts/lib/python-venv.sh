# Sourced by the scripts that run Python tools from a venv (schemathesis.sh and sdk-check.sh share
# .venv/, hadolint.sh has its own): `ensure_venv <venv> <requirements file> <tool>...` makes the
# venv when it is missing and installs the requirements' exact pins into it whenever the file
# changed since the last install (a stamp per requirements file, `.<file name>.sha256` in the venv)
# or one of the tools is missing from its bin/. Several requirements files share one venv, each
# with its stamp.
#
# The interpreter is $PYTHON (default python3), Python >= 3.10. Messages go to stderr under the
# sourcing script's name ($PROG); on failure the function says why and returns 1, so a caller
# writes `ensure_venv … || exit 1` (with `set -e`, a bare call stops the script too).

_venv_log() { echo "[${PROG:-python-venv.sh}] $*" >&2; }

ensure_venv() {
  local venv=$1 reqs=$2
  shift 2
  _venv_is_current "$venv" "$reqs" "$@" && return 0
  # One install at a time (two scripts, or two tests, may start at once): the second finds it done.
  # The lock lives in the venv's folder (`python -m venv` takes a folder that exists).
  mkdir -p "$venv"
  (
    flock 9
    _venv_is_current "$venv" "$reqs" "$@" || _venv_install "$venv" "$reqs"
  ) 9>"$venv/.install.lock"
}

# _venv_stamp <venv> <requirements file>: where the hash of the requirements last installed is kept.
_venv_stamp() { echo "$1/.$(basename "$2" .txt).sha256"; }

# _venv_is_current <venv> <requirements file> <tool>...: the file is installed as it is now, and every tool is there.
_venv_is_current() {
  local venv=$1 reqs=$2 want stamp tool
  shift 2
  stamp=$(_venv_stamp "$venv" "$reqs")
  want=$(sha256sum "$reqs" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $want && -f $stamp && $(cat "$stamp") == "$want" ]] || return 1
  for tool in "$@"; do [[ -x $venv/bin/$tool ]] || return 1; done
}

# _venv_install <venv> <requirements file>: makes the venv if missing and installs the file's pins.
_venv_install() {
  local venv=$1 reqs=$2 python=${PYTHON:-python3} want
  want=$(sha256sum "$reqs" | cut -d' ' -f1) || { _venv_log "error: cannot read $reqs"; return 1; }
  if [[ ! -x $venv/bin/python ]]; then
    command -v "$python" >/dev/null || { _venv_log "error: $python not found (need Python >= 3.10 for $reqs)"; return 1; }
    "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
      || { _venv_log "error: $("$python" --version 2>&1) is too old: $reqs needs Python >= 3.10"; return 1; }
    _venv_log "creating $venv"
    "$python" -m venv "$venv" || { _venv_log "error: could not create the venv (on Debian: apt-get install -y python3-venv)"; return 1; }
  fi
  _venv_log "installing $reqs into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$reqs" >&2 \
    || { _venv_log "error: pip install -r $reqs failed"; return 1; }
  echo "$want" >"$(_venv_stamp "$venv" "$reqs")"
}
