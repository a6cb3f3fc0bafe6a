#!/usr/bin/env bash
# Builds the sdist and installs it into a fresh virtualenv, which compiles the Rust
# core from the sdist alone (needs cargo), then imports the package and makes an
# estimator from outside the source tree. Also checks that the core crate packages
# for crates.io.
#
#   bash scripts/check_sdist.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

VENV=target/sdist-venv
rm -rf "$VENV" target/sdist
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "maturin>=1.11.3,<2"

echo "== maturin sdist"
"$VENV/bin/maturin" sdist --out target/sdist
sdist=$(ls target/sdist/omkl-*.tar.gz)
echo "$sdist: $(tar tzf "$sdist" | wc -l) files"
if ! tar tzf "$sdist" | grep -x 'omkl-[^/]*/LICENSE' >/dev/null; then
  echo "$sdist has no LICENSE at its top" >&2
  exit 1
fi

echo "== pip install $sdist (builds the Rust core)"
"$VENV/bin/python" -m pip install "$sdist"

echo "== import omkl; omkl.ProximalClassifier()"
(cd "$VENV" && bin/python -c '
import omkl
print(omkl.__version__, omkl.__file__)
print(omkl.ProximalClassifier())
')

echo "== cargo package -p omkl-core (with LICENSE)"
cargo package -p omkl-core --no-verify --allow-dirty
cargo package -p omkl-core --no-verify --allow-dirty --list | grep -x LICENSE >/dev/null
