import importlib.metadata
import pathlib
import subprocess
import sys
import textwrap

import omkl
from omkl.parsing import read_conllu


def test_imports_installed_package_not_source_tree():
    path = pathlib.Path(omkl.__file__).resolve()
    assert "site-packages" in path.parts, path


def test_version_matches_native_module():
    assert omkl.__version__ == omkl._omkl.__version__
    assert omkl.__version__.count(".") == 2


def test_the_mit_licence_is_installed_with_the_metadata():
    dist = importlib.metadata.distribution("omkl")
    assert dist.metadata["License-Expression"] == "MIT"
    assert dist.metadata.get_all("License-File") == ["LICENSE"]
    (licence,) = [f for f in dist.files or [] if f.name == "LICENSE"]
    text = licence.read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 The omkl developers\n")
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_matplotlib_is_only_in_the_plot_and_test_extras():
    requires = importlib.metadata.requires("omkl") or []
    plotting = [r for r in requires if r.startswith("matplotlib")]
    markers = [r.split(";")[1].replace("'", '"').strip() for r in plotting]
    assert sorted(markers) == [
        'extra == "plot"',
        'extra == "test"',
    ], plotting
    assert "plot" in importlib.metadata.metadata("omkl").get_all("Provides-Extra")


def _without_matplotlib(code: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter where importing matplotlib fails
    as it does when it is not installed."""
    prelude = "import sys\nsys.modules['matplotlib'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


def test_omkl_and_its_commands_work_without_matplotlib(tmp_path):
    """Without matplotlib, ``import omkl``, the commands that draw nothing
    and ``omkl reproduce ocr`` work (the reproduction writes its table and
    skips its figure with a note naming the extra); a plot, or
    ``reproduce --plot``, raises ModuleNotFoundError naming the extra
    before any work."""
    r = _without_matplotlib(
        """
        import contextlib, io, pathlib
        import omkl
        from omkl.cli import main
        from omkl.datasets import sample_treebank
        from omkl.plotting import plot_kernel_weights

        assert "matplotlib.pyplot" not in sys.modules
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["--version"]) == 0
            assert main(["train", "tagger", "--train", str(sample_treebank()),
                         "--out", "tagger.omkl", "--epochs", "1", "--folds", "2"]) == 0
            pathlib.Path("in.txt").write_text("Dogs bark\\n")
            assert main(["tag", "tagger.omkl", "in.txt", "out.conllu"]) == 0
            assert main(["reproduce", "ocr", "--folds", "0", "--rows", "linear",
                         "--epochs", "1", "--out", "ocr"]) == 0
        print(sorted(p.name for p in pathlib.Path("ocr").iterdir()))
        for call in (
            lambda: plot_kernel_weights([(1, {"a": 1.0})]),
            lambda: main(["reproduce", "ocr", "--folds", "0", "--rows", "linear",
                          "--epochs", "1", "--out", "ocr-plot", "--plot"]),
        ):
            try:
                call()
            except ModuleNotFoundError as e:
                print(type(e).__name__, e.name, e)
        print(pathlib.Path("ocr-plot").exists())
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    extra = 'pip install "omkl[plot]"'
    message = "ModuleNotFoundError matplotlib plots need matplotlib, which is not installed; "
    message += f"install it with: {extra}"
    assert r.stdout.splitlines() == [
        "['results.json', 'table.md']",
        message,
        message,
        "False",
    ], r.stdout
    assert "omkl: beta.png not drawn: " in r.stderr and extra in r.stderr, r.stderr
    tagged = read_conllu(tmp_path / "out.conllu")
    assert [[t["form"] for t in s] for s in tagged] == [["Dogs", "bark"]]
