"""The shape of the code: layers point downward (import-linter contracts in pyproject.toml), no import
cycle among flopcast's modules, and rooms small enough to hold in one's head."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "flopcast"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80

# Rooms over the limits, named while they are being split (issue 15: claims.py, simulate/training.py's
# evaluate and _layer, plan/search.py's candidates were, and are split now). These may only shrink: an entry
# back under its limit fails the test until it is removed here.
FILES_OVER: set[str] = set()
FUNCTIONS_OVER: set[str] = set()


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_layer_contracts_hold():
    pytest.importorskip("importlinter")
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_no_import_cycle():
    pytest.importorskip("grimp")  # comes with import-linter; the graph is built over this checkout's sources
    code = ("import grimp\n"
            "g = grimp.build_graph('flopcast', exclude_type_checking_imports=True)\n"
            "for m in sorted(g.modules):\n"
            "    for i in sorted(g.find_modules_directly_imported_by(m)):\n"
            "        chain = g.find_shortest_chain(importer=i, imported=m)\n"
            "        if chain:\n"
            "            print(m, '->', ' -> '.join(chain))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=300, check=True)
    assert out.stdout == "", "import cycles:\n" + out.stdout


def _is_data_table(node: ast.stmt) -> bool:
    """A module-level NAME = literal (dict, list, tuple or set): a data table, not counted in a file's size."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return False
    return isinstance(node.value, (ast.Dict, ast.List, ast.Tuple, ast.Set))


def _sizes():
    files, functions = {}, {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        table_lines = sum(n.end_lineno - n.lineno + 1 for n in tree.body if _is_data_table(n))
        files[rel] = text.count("\n") - table_lines
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[f"{rel}:{node.name}"] = node.end_lineno - node.lineno + 1
    return files, functions


def test_rooms_are_small():
    files, functions = _sizes()
    big_files = {f for f, n in files.items() if n > MAX_FILE_LINES}
    big_functions = {f for f, n in functions.items() if n > MAX_FUNCTION_LINES}
    assert big_files <= FILES_OVER, f"files over {MAX_FILE_LINES} lines: {sorted(big_files - FILES_OVER)}"
    assert big_functions <= FUNCTIONS_OVER, \
        f"functions over {MAX_FUNCTION_LINES} lines: {sorted(big_functions - FUNCTIONS_OVER)}"
    assert FILES_OVER <= big_files, f"back under the limit, remove from FILES_OVER: {sorted(FILES_OVER - big_files)}"
    assert FUNCTIONS_OVER <= big_functions, \
        f"back under the limit, remove from FUNCTIONS_OVER: {sorted(FUNCTIONS_OVER - big_functions)}"


def test_data_tables_are_told_apart():
    assert _is_data_table(ast.parse("T = {'a': 1}").body[0]) and not _is_data_table(ast.parse("x = f()").body[0])
