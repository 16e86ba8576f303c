"""A benchmark is a module of the bench package, run from the repository root as `python -m bench.NAME`: the
root is on sys.path as for the app and the tests, so no bench file edits sys.path (an edit there runs at import
time, also when a test imports the module) and each one's work starts from a `main` under
`if __name__ == "__main__"`, so importing it runs nothing."""

from __future__ import annotations

import ast

from tests.factories import ROOT

HELPERS = {"__init__", "app_server"}  # imported by the benchmarks and the browser tests, never run


def bench_modules() -> list[tuple[str, ast.Module]]:
    return [(path.stem, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted((ROOT / "bench").glob("*.py"))]


def edits_sys_path(tree: ast.Module) -> bool:
    """Any `sys.path` read as a target or through a call on it (insert, append, a slice assignment)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys":
            return True
    return False


def runs_main_when_run(tree: ast.Module) -> bool:
    """A top-level `def main` and a top-level `if __name__ == "__main__":` that calls it."""
    defines = any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)
    guards = [node for node in tree.body if isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
              and getattr(node.test.left, "id", "") == "__name__"]
    calls = any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "main" for g in guards for n in ast.walk(g))
    return defines and calls


def test_bench_is_a_package_whose_modules_leave_sys_path_alone():
    modules = bench_modules()
    assert (ROOT / "bench" / "__init__.py").is_file() and len(modules) >= 14
    assert [name for name, tree in modules if edits_sys_path(tree)] == []


def test_every_benchmark_starts_from_main_when_run():
    assert [name for name, tree in bench_modules() if name not in HELPERS and not runs_main_when_run(tree)] == []


def test_the_readers_find_a_path_edit_and_a_missing_main():
    edited = ast.parse("import sys\nsys.path.insert(0, '.')\ndef main():\n    return 0\n")
    assert edits_sys_path(edited) and not edits_sys_path(ast.parse("import sys\nsys.exit(0)\n"))
    assert runs_main_when_run(ast.parse("def main():\n    return 0\nif __name__ == '__main__':\n    main()\n"))
    assert not runs_main_when_run(edited)  # a main nothing calls when run
    assert not runs_main_when_run(ast.parse("print('work at import')\n"))
