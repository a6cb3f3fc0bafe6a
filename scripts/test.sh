#!/usr/bin/env bash
# Builds omkl and runs every test suite: the Rust suite (fmt, clippy, cargo test)
# and the Python suite (ruff, stubtest, pytest and the docstring examples as doctests,
# against the installed release wheel).
#
#   bash scripts/test.sh
#
# Needs cargo (with rustfmt and clippy) and python3 >= 3.10; everything else is
# installed into a fresh virtualenv under target/.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

echo "== Rust: fmt, clippy, tests"
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test -p omkl-core --profile test-release

echo "== Python tools in a fresh virtualenv"
VENV=target/test-venv
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "maturin>=1.9,<2" "ruff==0.17.6" "mypy>=1.10"

echo "== Python: ruff"
"$VENV/bin/ruff" check python tests benches studies
"$VENV/bin/ruff" format --check python tests benches studies

echo "== Build the release wheel and install it"
rm -rf target/wheels
"$VENV/bin/maturin" build --release --out target/wheels
wheel=$(ls target/wheels/omkl-*.whl)
"$VENV/bin/python" -m pip install -q "${wheel}[test]"

echo "== Python: stubtest"
"$VENV/bin/python" -m mypy.stubtest omkl._omkl --allowlist scripts/stubtest-allowlist.txt

echo "== Python: pytest (against the installed wheel)"
set +e
"$VENV/bin/python" -m pytest tests -q -p no:cacheprovider
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests (exit 5): the Python suite is empty" >&2
  exit 1
fi
tests_rc=$rc

echo "== Python: docstring examples (doctest, against the installed wheel)"
# The installed package, never the source tree python/omkl (which has no compiled _omkl).
pkg=$("$VENV/bin/python" -c '
import os, sys
import omkl
pkg = os.path.dirname(os.path.realpath(omkl.__file__))
if not pkg.startswith(os.path.realpath(sys.prefix) + os.sep):
    sys.exit(f"omkl is imported from {pkg}, not from the wheel installed in {sys.prefix}")
print(pkg)
')
set +e
"$VENV/bin/python" -m pytest --doctest-modules -q -p no:cacheprovider "$pkg"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no docstring examples (exit 5) in $pkg" >&2
  exit 1
fi
if [ "$tests_rc" -ne 0 ]; then
  echo "the Python suite failed (pytest exit $tests_rc)" >&2
  exit "$tests_rc"
fi
exit "$rc"
