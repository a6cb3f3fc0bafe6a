import pathlib

import omkl


def test_imports_installed_package_not_source_tree():
    path = pathlib.Path(omkl.__file__).resolve()
    assert "site-packages" in path.parts, path


def test_version_matches_native_module():
    assert omkl.__version__ == omkl._omkl.__version__
    assert omkl.__version__.count(".") == 2
