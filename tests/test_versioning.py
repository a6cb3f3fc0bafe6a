"""One source for the version (the Cargo workspace), the changelog, and the
deprecated aliases: each warns, naming its new name and the release that
removes it, from the caller's line."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import warnings

import pytest

import omkl
from omkl._params import ALIASES_REMOVED_IN
from omkl.parsing import DependencyParser

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _release(version: str) -> tuple[int, ...]:
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    assert match, f"{version!r} is not MAJOR.MINOR.PATCH"
    return tuple(int(part) for part in match.groups())


def _section(text: str, header: str) -> str:
    """The lines of TOML section ``[header]`` in ``text``."""
    lines = text.splitlines()
    start = lines.index(f"[{header}]") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("[")), len(lines))
    return "\n".join(lines[start:end])


def test_version_of_the_installed_distribution_is_the_module_version():
    # maturin writes the Cargo version into the wheel's metadata (pyproject's
    # dynamic version); the binding exports the same Cargo version at run time.
    assert importlib.metadata.version("omkl") == omkl.__version__ == omkl._omkl.__version__
    _release(omkl.__version__)


def test_version_has_one_source_the_cargo_workspace():
    cargo = ROOT / "Cargo.toml"
    if not cargo.is_file():
        pytest.skip("not run from a source checkout")
    workspace = re.search(
        r'^version = "([^"]+)"$', _section(cargo.read_text(), "workspace.package"), re.M
    )
    assert workspace, "Cargo.toml's [workspace.package] has no version"
    assert workspace.group(1) == omkl.__version__
    for member in ("rust_core/Cargo.toml", "rust_core/py/Cargo.toml"):
        package = _section((ROOT / member).read_text(), "package")
        assert re.search(r"^version\.workspace = true$", package, re.M), member
    project = _section((ROOT / "pyproject.toml").read_text(), "project")
    assert re.search(r'^dynamic = \[[^]]*"version"', project, re.M)
    assert not re.search(r"^version\s*=", project, re.M)


def test_changelog_has_an_unreleased_section_and_no_release_beyond_this_version():
    changelog = ROOT / "CHANGELOG.md"
    if not (ROOT / "Cargo.toml").is_file():
        pytest.skip("not run from a source checkout")
    text = changelog.read_text(encoding="utf-8")
    headers = re.findall(r"^## \[([^]]+)\]", text, re.M)
    assert headers and headers[0] == "Unreleased", headers
    for version in headers[1:]:
        assert _release(version) <= _release(omkl.__version__), version


def test_aliases_are_removed_in_a_later_release():
    # When the version reaches ALIASES_REMOVED_IN, the aliases must go.
    assert _release(ALIASES_REMOVED_IN) > _release(omkl.__version__)


def _warns_from_here(make, message):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = make()
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1, [str(w.message) for w in caught]
    assert re.search(message, str(deprecations[0].message)), str(deprecations[0].message)
    assert deprecations[0].filename == __file__
    return model


@pytest.mark.parametrize(("old", "new"), [("l2", "l2_squared"), ("mkl", "squared_l21")])
def test_deprecated_value_names_its_replacement_and_removal_release(old, new):
    removal = re.escape(ALIASES_REMOVED_IN)
    message = (
        rf"^`regularizer='{old}'` is deprecated, use `regularizer='{new}'` instead; "
        rf"`'{old}'` is removed in omkl {removal}$"
    )
    model = _warns_from_here(lambda: DependencyParser(regularizer=old), message)
    assert model.regularizer == new


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (omkl.ProximalClassifier, {"schedule": "inv_linear", "average": True}),
        (omkl.ProximalRegressor, {"schedule": "constant", "average": True}),
        (DependencyParser, {"eta0": 0.25, "regularizer": "squared_l21"}),
    ],
)
def test_current_names_do_not_warn(cls, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls(**kwargs)
