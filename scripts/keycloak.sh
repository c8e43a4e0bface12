#!/usr/bin/env bash
# Keycloak's Quarkus distribution for bench:token's `keycloak` peer (bench/token/keycloak.ts): fetched
# from Maven Central with mvn, unzipped into .tools/keycloak-<version>/ (ignored by git) and built for
# PostgreSQL (`kc.sh build --db=postgres`) once; later runs find it in place.
#
#   bash scripts/keycloak.sh --path     installs if needed, prints the distribution's folder
#
# A lock makes two processes that start at once install it once (as scripts/lib/go.sh's build_once);
# the folder appears whole (unzipped and built aside, then moved) or not at all.
# Needs: mvn, unzip, and a Java 17 or newer (`java` on PATH, or JAVA_HOME).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEYCLOAK_VERSION=26.7.3
TARGET=$ROOT/.tools/keycloak-$KEYCLOAK_VERSION
ARTIFACT=org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip
ZIP=${MAVEN_REPOSITORY:-$HOME/.m2/repository}/org/keycloak/keycloak-quarkus-dist/$KEYCLOAK_VERSION/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip

die() { echo "keycloak.sh: error: $*" >&2; exit 1; }

[[ ${1:-} == --path ]] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# The marker is written last: a folder without it is not a finished install.
if [[ ! -e $TARGET/.built-postgres ]]; then
  for tool in mvn unzip java; do command -v "$tool" >/dev/null 2>&1 || die "$tool not found (apt-get install maven unzip openjdk-17-jre-headless)"; done
  mkdir -p "$ROOT/.tools"
  (
    flock 9
    if [[ ! -e $TARGET/.built-postgres ]]; then
      echo "[keycloak] installing Keycloak $KEYCLOAK_VERSION into .tools/ (once; a minute or two)" >&2
      [[ -f $ZIP ]] || mvn -q dependency:get -Dartifact="$ARTIFACT" -Dtransitive=false >&2 || die "mvn could not fetch $ARTIFACT"
      tmp=$TARGET.partial.$$
      rm -rf "$tmp"
      mkdir -p "$tmp"
      unzip -q "$ZIP" -d "$tmp" || { rm -rf "$tmp"; die "unzip $ZIP failed"; }
      # The zip holds one folder, keycloak-<version>/.
      inner=$tmp/keycloak-$KEYCLOAK_VERSION
      if ! "$inner/bin/kc.sh" build --db=postgres >&2; then
        rm -rf "$tmp"
        die "kc.sh build --db=postgres failed"
      fi
      touch "$inner/.built-postgres"
      rm -rf "$TARGET"
      mv "$inner" "$TARGET"
      rm -rf "$tmp"
    fi
  ) 9>"$TARGET.lock"
fi
echo "$TARGET"
