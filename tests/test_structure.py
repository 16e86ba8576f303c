"""The shape of the code, read from its source with `ast` (nothing is imported but in the last checks):

- no import circle among engine/, lesson/, app_support/, app_pages/ and app.py, counting the imports
  inside functions too (a function-local import hides a circle from Python, not from a reader);
- no private name (`_x`) of one project module imported or used by another;
- no function over 60 lines (the default model's training script excepted);
- engine and lesson import without streamlit (the data flows one way: engine -> lesson -> app);
- every project path (engine/..., tests/....py) a comment or docstring names exists;
- every test module that drives chromium lives in tests/browser/ and is marked `browser`, so the
  fast lane (`make test-fast`, `-m "not browser and not slow"`) never starts a browser.
"""

from __future__ import annotations

import ast
import functools
import re
import io
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.factories import ROOT

SOURCE = ("engine", "lesson", "app_support", "app_pages", "app.py")  # the import graph's nodes
PROJECT = (*SOURCE, "bench", "tests", "assets")  # where private names and function lengths are checked
LONG_FUNCTIONS_ALLOWED = {Path("assets/default_model/train.py")}
MAX_FUNCTION_LINES = 60


def python_files(roots: tuple[str, ...]) -> list[Path]:
    """Every .py file under `roots` (folders or files, relative to the repository), sorted."""
    files = []
    for root in roots:
        path = ROOT / root
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [f for f in files if "__pycache__" not in f.parts]


def module_name(path: Path) -> str:
    """engine/runtime/serving/core.py -> engine.runtime.serving.core; engine/__init__.py -> engine; app.py -> app."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


MODULES = {module_name(f): f for f in python_files(PROJECT)}


@functools.cache  # one parse per file for the whole module: the trees are only read
def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def absolute(importer: str, node: ast.ImportFrom) -> str:
    """The module an `from X import ...` names, relative levels resolved against `importer`."""
    if not node.level:
        return node.module or ""
    package = importer.split(".") if is_package(MODULES[importer]) else importer.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imported(importer: str, node: ast.AST) -> Iterator[tuple[str, str | None]]:
    """(project module, name taken from it or None) for each thing an import statement brings in.
    `from pkg import sub` where pkg/sub.py exists names the module pkg.sub."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in MODULES:
                yield alias.name, None
    elif isinstance(node, ast.ImportFrom):
        source = absolute(importer, node)
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            if sub in MODULES:
                yield sub, None
            elif source in MODULES:
                yield source, alias.name


def import_graph() -> dict[str, set[str]]:
    """importer -> the project modules it imports, at module level or inside any function."""
    graph = {}
    for path in python_files(SOURCE):
        name = module_name(path)
        graph[name] = {target for node in ast.walk(parse(path)) for target, _ in imported(name, node)
                       if target != name and target.split(".")[0] in {"app", *SOURCE}}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                on_stack.discard(w)
                component.append(w)
            on_stack.discard(v)
            if component:
                found.append(sorted([v, *component]))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def cycle_path(graph: dict[str, set[str]], component: list[str]) -> str:
    """One circle inside a component, written a -> b -> ... -> a, so a reader can follow it."""
    members, start = set(component), component[0]
    path, seen = [start], {start}
    while True:
        nxt = sorted(graph[path[-1]] & members)
        back = [w for w in nxt if w == start]
        if back and len(path) > 1:
            return " -> ".join(path + [start])
        fresh = [w for w in nxt if w not in seen]
        if not fresh:
            return " -> ".join(path + [next(w for w in nxt if w in path)])
        path.append(fresh[0])
        seen.add(fresh[0])


def test_the_import_graph_has_no_circle():
    graph = import_graph()
    assert len(graph) > 50  # every source module was read
    found = [f"{cycle_path(graph, c)}  (the circle holds {', '.join(c)})" for c in circles(graph)]
    assert not found, "import circles:\n" + "\n".join(found)


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycle_path({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c"]) == "a -> b -> c -> a"
    assert circles({"a": {"b"}, "b": set()}) == []


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(name: str, tree: ast.Module, label: str) -> Iterator[str]:
    """`from m import _x` and `m._x` (m a project module bound by `import m [as n]` or `from p import m`)
    in module `name`, each as "label:line: what"."""
    bound = {}  # local name -> project module, for attribute reads
    for node in ast.walk(tree):
        for target, taken in imported(name, node):
            if target == name:
                continue
            if taken is not None and is_private(taken):
                yield f"{label}:{node.lineno}: from {target} import {taken}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    bound[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = absolute(name, node)
            for alias in node.names:
                if f"{source}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = ast.unparse(node.value)
            if bound.get(owner, name) != name:
                yield f"{label}:{node.lineno}: {owner}.{node.attr} ({bound[owner]})"


def test_no_private_name_crosses_modules():
    found = [use for path in python_files(PROJECT)
             for use in private_uses(module_name(path), parse(path), str(path.relative_to(ROOT)))]
    assert not found, "private names used from another module (make them public in a seam module):\n" + \
        "\n".join(found)


def long_functions(tree: ast.Module, label: str) -> Iterator[str]:
    """Every function (methods and nested ones too) over MAX_FUNCTION_LINES, from `def` to its last line."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                yield f"{label}:{node.lineno}: {node.name} is {lines} lines"


def test_no_function_is_over_sixty_lines():
    files = [f for f in python_files(PROJECT) if f.relative_to(ROOT) not in LONG_FUNCTIONS_ALLOWED]
    found = [long for path in files for long in long_functions(parse(path), str(path.relative_to(ROOT)))]
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(found)


def test_the_readers_find_a_private_import_a_private_attribute_and_a_long_function():
    assert is_private("_x") and not is_private("__version__") and not is_private("x")
    uses = ast.parse("from engine.contract.trace import _hidden, shown\nimport engine.contract.trace as tr\n"
                     "from engine.contract import trace\ntr._clock()\ntrace._clock()\nself._own = 1\n")
    assert list(private_uses("lesson.formats", uses, "m.py")) == [
        "m.py:1: from engine.contract.trace import _hidden", "m.py:4: tr._clock (engine.contract.trace)",
        "m.py:5: trace._clock (engine.contract.trace)"]
    assert list(private_uses("engine.contract.trace", uses, "m.py"))[:1] == []  # a module's own names are its own
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert list(long_functions(ast.parse(f"def f():\n{body}\n"), "m.py")) == ["m.py:1: f is 61 lines"]
    assert list(long_functions(ast.parse(f"def f():\n{body[:body.rindex(chr(10))]}\n"), "m.py")) == []


def drives_a_browser(tree: ast.Module) -> bool:
    """The module imports playwright or a test takes the session's `chromium` fixture."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if any(n and n.split(".")[0] == "playwright" for n in names):
                return True
        if isinstance(node, ast.FunctionDef) and any(a.arg == "chromium" for a in node.args.args):
            return True
    return False


def marked_browser(tree: ast.Module) -> bool:
    """A module-level `pytestmark` that holds pytest.mark.browser."""
    return any(isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
               and "pytest.mark.browser" in ast.unparse(node.value) for node in tree.body)


def test_every_module_that_drives_chromium_is_in_the_browser_lane():
    """Outside tests/browser/ a module could drive chromium only through playwright or the `chromium`
    fixture (the server and page fixtures live in tests/browser/conftest.py); inside, every module is
    marked, except the rule's own test, which runs the browser modules without a browser."""
    browser = ROOT / "tests" / "browser"
    tests = [f for f in python_files(("tests",)) if f.name.startswith("test_")]
    outside = [str(f.relative_to(ROOT)) for f in tests if f.parent != browser and drives_a_browser(parse(f))]
    inside = [f for f in tests if f.parent == browser and f.name != "test_browser_rule.py"]
    unmarked = [str(f.relative_to(ROOT)) for f in inside if not marked_browser(parse(f))]
    assert len(inside) >= 5
    assert not outside, f"drive chromium outside tests/browser/: {outside}"
    assert not unmarked, f"in tests/browser/ without pytestmark = pytest.mark.browser: {unmarked}"
    assert drives_a_browser(ast.parse("def test_x(chromium):\n    pass\n"))
    assert drives_a_browser(ast.parse("from playwright.sync_api import sync_playwright\n"))
    assert not drives_a_browser(ast.parse("def test_x(tmp_path):\n    pass\n"))


def engine_and_lesson_modules() -> list[str]:
    return sorted(name for name in MODULES if name.split(".")[0] in ("engine", "lesson"))


APP_SIDE = ("streamlit", "app_support", "app_pages", "app")  # what engine/ and lesson/ never import


def app_side_imports(name: str, tree: ast.Module) -> list[str]:
    """What in module `name` could load streamlit or plotly on import: any import of the app's side
    (inside functions too), and outside lesson/charts/ a top-level import of plotly or lesson.charts."""
    found = [f"{name}:{line}: imports {imp}" for line, imp in external_imports(tree) if imp.split(".")[0] in APP_SIDE]
    if name != "lesson.charts" and not name.startswith("lesson.charts."):
        top = top_level_modules(name, tree) | {target for node in tree.body for target, _ in imported(name, node)}
        found += [f"{name}: imports {imp} at its top" for imp in sorted(top)
                  if imp.split(".")[0] == "plotly" or imp == "lesson.charts" or imp.startswith("lesson.charts.")]
    return found


def test_engine_and_lesson_import_without_streamlit_and_plotly_only_in_lesson_charts():
    """Read, not run (the slow test below imports every module in a fresh interpreter, and the contract's
    own test imports it without torch): nothing under engine/ or lesson/ imports the app's side, so no
    import of theirs loads streamlit; only lesson/charts/ imports plotly at its top (the app's figures)."""
    found = [f for name in engine_and_lesson_modules() for f in app_side_imports(name, parse(MODULES[name]))]
    assert len(engine_and_lesson_modules()) > 100
    assert not found, "engine/ or lesson/ reaches the app's side:\n" + "\n".join(found)
    hostile = ast.parse("import plotly.graph_objects\ndef f():\n    import streamlit\n")
    assert [f.split(": ", 1)[1] for f in app_side_imports("lesson.x", hostile)] == [
        "imports streamlit", "imports plotly.graph_objects at its top"]


def test_lesson_imports_neither_torch_nor_streamlit():
    code = ("import sys, lesson.diagrams, lesson.export, lesson.layout; "
            "print(sorted(m for m in ('torch', 'streamlit', 'plotly') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_every_engine_and_lesson_module_imports_without_streamlit():
    modules = engine_and_lesson_modules()
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


# --- the engine's two halves -------------------------------------------------------------

HEAVY = ("torch", "transformers", "safetensors", "huggingface_hub")  # what only engine/runtime/ may import


def external_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, top-level name) of every absolute import in `tree`, inside functions too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.lineno, node.module


def contract_modules() -> list[str]:
    return sorted(name for name in MODULES if name == "engine.contract" or name.startswith("engine.contract."))


def test_the_contract_never_imports_the_runtime_torch_or_transformers():
    """Not even inside a function (a local import hides it from `import`, not from a reader): a process
    that imports only engine/contract/ never loads torch, whatever it calls."""
    found = []
    for name in contract_modules():
        label = str(MODULES[name].relative_to(ROOT))
        for line, imported_name in external_imports(parse(MODULES[name])):
            if imported_name.split(".")[0] in HEAVY or imported_name.startswith("engine.runtime") \
                    or imported_name.startswith("engine.cli"):
                found.append(f"{label}:{line}: imports {imported_name}")
    assert len(contract_modules()) >= 20
    assert not found, "the contract reaches into the runtime:\n" + "\n".join(found)


def test_every_contract_module_imports_without_torch_in_a_fresh_interpreter():
    code = ("import importlib, sys\n"
            f"for name in {contract_modules()!r}:\n"
            "    importlib.import_module(name)\n"
            f"heavy = sorted(m for m in sys.modules\n"
            f"               if m.split('.')[0] in {HEAVY!r} or m.startswith('engine.runtime'))\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_contract_rule_finds_a_local_torch_import():
    tree = ast.parse("def f():\n    import torch\n    from engine.runtime.model import load_model\n")
    assert [n for _, n in external_imports(tree)] == ["torch", "engine.runtime.model"]


# --- the one seam to transformers ----------------------------------------------------------

HF_SEAM = "engine.runtime.hf"  # the one module that imports transformers (docs/architecture.md)


def transformers_uses(tree: ast.Module, label: str) -> Iterator[str]:
    """Each import of transformers (inside functions too) and each touch of a config's `_attn_implementation*`
    (an attribute or a getattr/setattr string), as "label:line: what"."""
    for line, name in external_imports(tree):
        if name.split(".")[0] == "transformers":
            yield f"{label}:{line}: imports {name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_attn_implementation"):
            yield f"{label}:{node.lineno}: .{node.attr}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith("_attn_implementation"):
            yield f"{label}:{node.lineno}: {node.value!r}"


def test_only_hf_imports_transformers_or_touches_the_attention_implementation():
    """bench/ and tests/ measure and check transformers itself and may import it; the project's modules
    reach it only through engine/runtime/hf.py, so a transformers release that renames something is one edit."""
    found = [use for path in python_files(SOURCE) if module_name(path) != HF_SEAM
             for use in transformers_uses(parse(path), str(path.relative_to(ROOT)))]
    assert list(transformers_uses(parse(MODULES[HF_SEAM]), "hf.py")), "the seam itself imports transformers"
    assert not found, "transformers reached outside engine/runtime/hf.py:\n" + "\n".join(found)


def test_the_seam_rule_finds_a_local_import_and_an_attention_switch():
    tree = ast.parse("def f(m):\n    from transformers.masking_utils import sdpa_mask\n"
                     "    m.config._attn_implementation_internal = 'x'\n"
                     "    getattr(m.config, '_attn_implementation')\n")
    assert list(transformers_uses(tree, "m.py")) == [
        "m.py:2: imports transformers.masking_utils", "m.py:3: ._attn_implementation_internal",
        "m.py:4: '_attn_implementation'"]


# --- imports at the top ----------------------------------------------------------------------

# A function-local import is for a dependency that is heavy or optional, named here by its top-level package
# (lesson.charts: the plotly figures, which import plotly at their top), or for engine.runtime (torch) from
# engine/cli/ or lesson/, where a model runs only when asked for (a command after its arguments are checked,
# an export's --run), so those modules import without torch. Anything else goes at the top of its module;
# two modules that need each other share a third, never a local import.
LOCAL_IMPORTS_ALLOWED = ("torch", "transformers", "plotly", "cairosvg", "lesson.charts")
LAZY_RUNTIME_IMPORTERS = ("engine.cli", "lesson")


def top_level_modules(importer: str, tree: ast.Module) -> set[str]:
    """The modules the module's own top level imports (a `from m import x` counts as m)."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(absolute(importer, node))
    return found


def local_import_allowed(importer: str, imported_name: str) -> bool:
    if any(imported_name == a or imported_name.startswith(a + ".") for a in LOCAL_IMPORTS_ALLOWED):
        return True
    return imported_name.startswith("engine.runtime") and any(
        importer == p or importer.startswith(p + ".") for p in LAZY_RUNTIME_IMPORTERS)


def local_imports(importer: str, tree: ast.Module, label: str) -> Iterator[str]:
    """Each import inside a function that the rule above does not allow, or that the module's top already has."""
    top = top_level_modules(importer, tree)
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [absolute(importer, node)]
            else:
                continue
            for name in names:
                if name in top:
                    yield f"{label}:{node.lineno}: {fn.name} imports {name}, already imported at the top"
                elif not local_import_allowed(importer, name):
                    yield f"{label}:{node.lineno}: {fn.name} imports {name}"


def test_function_local_imports_are_only_for_heavy_or_optional_dependencies():
    found = sorted({use for path in python_files(SOURCE)
                    for use in local_imports(module_name(path), parse(path), str(path.relative_to(ROOT)))})
    assert not found, "imports inside functions (move them to the top of the module):\n" + "\n".join(found)


def test_the_local_import_rule_allows_heavy_and_lazy_runtime_imports_only():
    code = ("import json\nfrom engine.contract import limits\n"
            "def f():\n    import torch\n    from lesson.charts.run import x\n    from engine.runtime import hf\n"
            "    from engine.contract.cost import y\n    import json\n")
    assert list(local_imports("engine.cli.trace", ast.parse(code), "m.py")) == [
        "m.py:7: f imports engine.contract.cost", "m.py:8: f imports json, already imported at the top"]
    assert list(local_imports("app_support.lab", ast.parse(code), "m.py"))[0] == "m.py:6: f imports engine.runtime"


# --- words that stay true ---------------------------------------------------------------------

ISSUE_CITATION = re.compile(r"\bissues? #?\d+|\(#\d+\)", re.IGNORECASE)  # a word "issue", a number; "(#" a number ")"
CITATION_CHECKED = (*PROJECT, ".ci")


def issue_citations(text: str, label: str) -> Iterator[str]:
    """Each line that cites an issue by number: the code says why, not which ticket asked (history is git's)."""
    for number, line in enumerate(text.splitlines(), 1):
        if ISSUE_CITATION.search(line):
            yield f"{label}:{number}: {line.strip()[:100]}"


def test_no_source_comment_cites_an_issue_number():
    files = [f for root in CITATION_CHECKED if (ROOT / root).exists()
             for f in ([ROOT / root] if (ROOT / root).is_file() else sorted((ROOT / root).rglob("*")))
             if f.suffix in (".py", ".js", ".css", ".sh", ".toml") and "__pycache__" not in f.parts]
    found = [hit for f in files for hit in issue_citations(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert len(files) > 100
    assert not found, "issue numbers in the source:\n" + "\n".join(found)


def test_the_citation_finder_finds_issue_numbers_only():
    word = "issue"  # spelled apart, so this file does not cite one itself
    text = (f"x = 1  # {word} 8: slider\n# (#{12})\ncolor = '#336699'  # {word.title()}s 3 and 4\n"
            f"{word} = 'a t{word} 5'\n")
    assert [hit.split(":")[1] for hit in issue_citations(text, "m.py")] == ["1", "2", "3"]


# --- paths the words name ------------------------------------------------------------------------

NAMED_PATH = re.compile(r"\b(?:engine|lesson|app_support|app_pages|tests|bench)/[a-z0-9_/]*[a-z0-9_]\.py\b")


def words_of(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring in a module's source: what a reader is told."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "lineno", 1), doc


def missing_paths(source: str, label: str) -> Iterator[str]:
    """Each project path a comment or docstring names that is not in the repository (a file moved or removed)."""
    for line, text in words_of(source):
        yield from (f"{label}:{line}: {path}" for path in NAMED_PATH.findall(text) if not (ROOT / path).exists())


def test_every_path_a_comment_or_docstring_names_exists():
    files = python_files(PROJECT)
    found = [hit for f in files for hit in missing_paths(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert len(files) > 100
    assert not found, "comments and docstrings name files that are not there:\n" + "\n".join(found)


def test_the_path_reader_finds_a_missing_path_in_a_comment_and_a_docstring():
    source = ('"""Drawn by lesson/formats.py and engine/static.py."""\nx = 1  # see tests/engine/test_contract.py\n'
              'def f():\n    """bench/NAME.py is a placeholder; engine/runtime/runners.py is there."""\n'
              'y = "engine/gone.py"  # a string, not words\n')
    assert sorted(missing_paths(source, "m.py")) == ["m.py:1: engine/static.py",
                                                    "m.py:2: tests/engine/test_contract.py"]


# --- one module owns the number formats -------------------------------------------------------

FORMATS = Path("lesson/formats.py")


def number_formats_outside(tree: ast.Module, label: str) -> Iterator[str]:
    """Each top-level `def fmt_...` of a module, and each name bound to one (an alias: a second home)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("fmt_"):
            yield f"{label}:{node.lineno}: def {node.name}"
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id.startswith("fmt_"):
            yield f"{label}:{node.lineno}: an alias of {node.value.id}"


def test_the_number_formats_live_in_lesson_formats_only():
    files = [f for f in python_files(SOURCE) if f.relative_to(ROOT) != FORMATS]
    found = [hit for f in files for hit in number_formats_outside(parse(f), str(f.relative_to(ROOT)))]
    assert not found, "number formats outside lesson/formats.py (import them from there):\n" + "\n".join(found)
    assert sum(1 for _ in number_formats_outside(parse(ROOT / FORMATS), "f")) >= 7


def test_the_format_reader_finds_a_format_and_an_alias():
    tree = ast.parse("def fmt_x(v):\n    return v\nformat_bytes = fmt_bytes\ndef shown(v):\n    return v\n")
    assert list(number_formats_outside(tree, "m.py")) == ["m.py:1: def fmt_x", "m.py:3: an alias of fmt_bytes"]


def test_app_support_names_every_module_it_holds():
    doc = ast.get_docstring(parse(ROOT / "app_support" / "__init__.py"))
    words = set(re.findall(r"[a-z_]+", doc))
    missing = [f.stem for f in sorted((ROOT / "app_support").glob("*.py")) if f.stem != "__init__" and
               f.stem not in words]
    assert not missing, f"app_support/__init__.py does not describe: {', '.join(missing)}"


# --- names nothing uses ------------------------------------------------------------------------

DEFINED = ("engine", "lesson", "app_support")  # where every public top-level name must have a use
USERS = (*SOURCE, "bench", "assets")  # where a use counts; tests/ too, but a module's own tests do not
# Public API that the project itself need not call (each says who does): kept small on purpose.
PUBLIC_API: dict[str, str] = {}


def top_level_names(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, name) of each public function, class and constant a module defines at its top level."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [target.id for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        yield from ((node.lineno, name) for name in names if not name.startswith("_"))


def names_used(tree: ast.Module) -> set[str]:
    """Every name a module reads: names, attributes, imported names, and identifiers inside strings
    (a name looked up by its text: getattr, a dispatch table, a patch target). By name, as vulture reads:
    a use of any `x` keeps every `x` alive, so the check misses some dead code and never flags a live one."""
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            used.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.update(re.findall(r"[A-Za-z_]\w*", node.value))
    return used


def own_tests(module: Path) -> str:
    """A module's own tests are tests/**/test_<its name>*.py: a use there does not keep a name alive."""
    return f"test_{module.stem}"


def unused_names() -> list[str]:
    used = set().union(*(names_used(parse(path)) for path in python_files(USERS)))
    test_users: dict[str, set[str]] = {}  # name -> the test files (by stem) that use it
    for path in python_files(("tests",)):
        for name in names_used(parse(path)):
            test_users.setdefault(name, set()).add(path.stem)
    found = []
    for path in python_files(DEFINED):
        own = own_tests(path)
        for line, name in top_level_names(parse(path)):
            alive = name in used or any(not stem.startswith(own) for stem in test_users.get(name, ()))
            if not alive and f"{module_name(path)}.{name}" not in PUBLIC_API:
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    return found


def test_every_public_name_has_a_use_beyond_its_own_tests():
    """A name only its own tests call is dead code they keep alive: remove both (or make it private)."""
    found = unused_names()
    assert not found, "public names nothing uses (outside their own tests):\n" + "\n".join(found)


def test_the_unused_name_reader_sees_definitions_and_uses():
    tree = ast.parse("A = 1\n_B = 2\ndef f():\n    return g(A)\nclass C:\n    pass\nx: int = 3\n"
                     "getattr(m, 'h_name')\n")
    assert [name for _, name in top_level_names(tree)] == ["A", "f", "C", "x"]
    assert {"g", "A", "h_name", "getattr", "m"} <= names_used(tree) and "f" not in names_used(tree)


def test_only_one_fixture_forgets_the_servers_settings():
    """resources.server_settings' cached read is forgotten in one place, the fresh_settings fixture
    (tests/app/apptest.py, automatic in tests/app/), never by hand in a test."""
    found = [f"{path.relative_to(ROOT)}:{number}" for path in python_files(("tests",))
             if path != ROOT / "tests" / "app" / "apptest.py" and path.resolve() != Path(__file__).resolve()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "server_settings.clear" in line or "server_settings.cache_clear" in line]
    assert not found, "forget the settings with the fresh_settings fixture:\n" + "\n".join(found)
