#!/usr/bin/env bash
# Builds omkl and runs every test suite: the Rust suite (fmt, clippy, cargo test,
# cargo doc with warnings denied, cargo package of the core crate), the checks of the
# GitHub workflows (schema, zizmor) and the Python suite (ruff, stubtest, mypy --strict,
# pytest and the docstring examples as doctests, against the installed release
# wheel). The wheel is the manylinux2014 (glibc 2.17)
# abi3 wheel, linked with zig; the script checks its platform tag (auditwheel), its
# abi3 symbols (abi3audit), and that it installs and runs the OCR experiment in a
# fresh virtualenv with no Rust toolchain on the PATH.
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

echo "== Rust: docs with warnings denied, and the core crate packages for crates.io (with LICENSE)"
RUSTDOCFLAGS="-D warnings" cargo doc -p omkl-core --no-deps
cargo package -p omkl-core --no-verify --allow-dirty
cargo package -p omkl-core --no-verify --allow-dirty --list | grep -x LICENSE >/dev/null

echo "== Python tools in a fresh virtualenv"
VENV=target/test-venv
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "maturin>=1.11.3,<2" "ruff==0.17.6" "mypy>=1.10" \
  ziglang auditwheel abi3audit check-jsonschema zizmor scipy-stubs types-tqdm

echo "== Python: ruff"
"$VENV/bin/ruff" check python tests benches studies
"$VENV/bin/ruff" format --check python tests benches studies

echo "== GitHub workflows: schema check and zizmor (offline)"
"$VENV/bin/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml
"$VENV/bin/zizmor" --offline .github/workflows/

echo "== Build the manylinux2014 abi3 release wheel (zig from the ziglang package)"
rm -rf target/wheels
PATH="$PWD/$VENV/bin:$PATH" "$VENV/bin/maturin" build --release --zig \
  --compatibility manylinux2014 --out target/wheels
arch=$(uname -m)
wheel=$(ls target/wheels/omkl-*.whl)
case "$(basename "$wheel")" in
  *-cp310-abi3-*manylinux_2_17_"$arch".whl) ;;
  *) echo "expected a cp310-abi3 manylinux_2_17_$arch wheel, got $wheel" >&2; exit 1 ;;
esac

echo "== Wheel: auditwheel show (manylinux_2_17) and abi3audit"
audit=$("$VENV/bin/auditwheel" show "$wheel")
echo "$audit"
if ! tr -s ' \n' '  ' <<<"$audit" \
  | grep -qF "consistent with the following platform tag: \"manylinux_2_17_$arch\""; then
  echo "auditwheel does not report manylinux_2_17_$arch compliance for $wheel" >&2
  exit 1
fi
"$VENV/bin/abi3audit" --strict --summary "$wheel"

echo "== Wheel: install into a fresh virtualenv with no cargo or rustc, run the OCR experiment"
# The bare wheel, as `pip install omkl` gives it: without the plot extra there
# is no matplotlib, and the run writes its table and results and skips the
# figure with a note (the figure is what the extra is for).
NORUST_VENV=$PWD/target/norust-venv
rm -rf "$NORUST_VENV" target/norust-ocr
"$PYTHON" -m venv "$NORUST_VENV"
norust_path="$NORUST_VENV/bin:$(tr ':' '\n' <<<"$PATH" | grep -v -e '/\.cargo/' -e '/\.rustup/' | paste -sd: -)"
env -u CARGO -u CARGO_HOME -u RUSTUP_HOME -u RUSTC PATH="$norust_path" bash -euc '
  if command -v cargo || command -v rustc; then
    echo "cargo or rustc is still on the PATH of the no-Rust virtualenv" >&2
    exit 1
  fi
  python -m pip install -q "$1"
  omkl reproduce ocr --folds 0 --rows linear --out "$2" | tee "$2.log"
' _ "$PWD/$wheel" "$PWD/target/norust-ocr"
grep -q '^| Linear (L) | ' target/norust-ocr.log
test -f target/norust-ocr/results.json
test ! -e target/norust-ocr/beta.png

echo "== Install the wheel into the test virtualenv"
"$VENV/bin/python" -m pip install -q "${wheel}[test]"

echo "== Python: stubtest"
"$VENV/bin/python" -m mypy.stubtest omkl._omkl --allowlist scripts/stubtest-allowlist.txt

echo "== Python: mypy --strict on python/omkl"
"$VENV/bin/python" -m mypy --strict python/omkl

echo "== Python: pytest (against the installed wheel)"
# A test that hangs fails after 15 minutes, with the stacks of every thread.
set +e
"$VENV/bin/python" -m pytest tests -q -p no:cacheprovider --timeout=900
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
"$VENV/bin/python" -m pytest --doctest-modules -q -p no:cacheprovider --timeout=900 "$pkg"
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
