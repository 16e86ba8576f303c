"""README.md and docs/*.md name only what exists.

For every page this checks, in its code spans, code blocks and links:
- repository paths (`engine/contract/trace.py`, `tests/{engine,serving}/`, `bench/*.py`) exist;
- relative links and images lead to files, and a `#anchor` to a heading of the page it names;
- every `make <target>` is a target of the Makefile;
- every `python -m <module> [<command>] --flag` imports, and for this project's modules the command and
  each flag appear in that command's `--help` (a benchmark's, `python -m bench.NAME`, in its source: its
  --help would load torch); every `python <script>.py --flag` names a script that exists and a flag
  written in its source, and is not a benchmark (those run as modules);
- dotted names (`engine.contract.cost.trace_floors`) resolve, and the imports of ```python blocks import;
- every PREFILL_DECODE_* variable is read somewhere in the code.

Placeholders are not paths of this repository and are left alone: a token counts as a repository path
only when its first component is an entry of the repository's root (so `out/`, `DIR/x.json`,
`/srv/models/my-model` and `Qwen/Qwen2.5-0.5B` are not checked) and it holds no `<...>`, `...` or `$`
(so `assets/gallery/<device>/` is not either). A bare `name.py` must be a file somewhere in the tree.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents  # wherever tests/ puts this module
            if (p / "Makefile").is_file() and (p / "pyproject.toml").is_file())
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200

# Folders of the working tree that are not the repository's (environments, caches, build output).
NOT_SOURCE = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".ruff_cache", "node_modules"}
# Modules whose commands and flags are checked against their --help.
OWN_MODULES = ("engine", "lesson", "app_support", "app_pages")
DOTTED_NAME = re.compile(r"((?:engine|lesson|app_support|app_pages)(?:\.[A-Za-z_]\w*)+)")
BARE_FILE = re.compile(r"[\w.-]+\.(?:py|md)")
FILE_NAME = re.compile(r"[\w./-]+\.(?:py|md|json|jsonl|txt|svg|csv|toml|png)")
VARIABLE = re.compile(r"PREFILL_DECODE_[A-Z0-9_]*[A-Z0-9]")
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
MAKE = re.compile(r"(?:^|[\s;&|(])make((?:\s+[A-Za-z_]+=\S*)*)\s+([a-z][\w-]*)")
PYTHON = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?python3?\s+(?:-m\s+([\w.]+)|([\w./-]+\.py))([^\n]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]*")
TOKEN_SPLIT = re.compile(r"[\s=|]+")
TOKEN_STRIP = "()[],;:'\"`*."


@dataclass
class Page:
    """One markdown page split into prose (fenced blocks removed) and its fenced blocks."""

    path: Path
    text: str
    prose: str = field(init=False)
    blocks: list[tuple[str, str]] = field(init=False)  # (info string, body)

    def __post_init__(self):
        self.blocks = [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(self.text)]
        self.prose = FENCE.sub("\n", self.text)

    @property
    def name(self) -> str:
        return self.path.relative_to(ROOT).as_posix() if self.path.is_relative_to(ROOT) else self.path.name

    @functools.cached_property
    def spans(self) -> list[str]:
        """Inline code spans; one may wrap onto the next line, never past a blank line."""
        return [" ".join(s.split()) for para in re.split(r"\n\s*\n", self.prose) for s in SPAN.findall(para)]

    @functools.cached_property
    def code_lines(self) -> list[str]:
        """Spans, and the lines of the fenced blocks with continuations joined and comments cut."""
        lines = list(self.spans)
        for _, body in self.blocks:
            for line in body.replace("\\\n", " ").splitlines():
                lines.append(re.split(r"\s#\s|^#", line, maxsplit=1)[0])
        return lines


def read_page(path: Path) -> Page:
    return Page(path, path.read_text(encoding="utf-8"))


@functools.cache
def root_entries() -> frozenset[str]:
    return frozenset(p.name for p in ROOT.iterdir() if p.name not in NOT_SOURCE and not p.name.endswith(".egg-info"))


@functools.cache
def tree_file_names() -> frozenset[str]:
    names = set()
    for _, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_SOURCE and not d.endswith(".egg-info")]
        names.update(files)
    return frozenset(names)


def expand_braces(token: str) -> list[str]:
    """`lesson/text/{zh,en}/` -> `lesson/text/zh/`, `lesson/text/en/` (one level, left to right)."""
    match = re.search(r"\{([^{}]*)\}", token)
    if not match:
        return [token]
    head, tail = token[:match.start()], token[match.end():]
    return [out for choice in match.group(1).split(",") for out in expand_braces(head + choice + tail)]


def is_placeholder(token: str) -> bool:
    return any(mark in token for mark in ("<", ">", "...", "…", "$", "://")) or token.startswith(("/", "~"))


def repository_paths(line: str) -> list[str]:
    """The tokens of a code line that are paths of this repository (placeholders left out)."""
    found = []
    for raw in TOKEN_SPLIT.split(line):
        if is_placeholder(raw):
            continue
        token = raw.rstrip(TOKEN_STRIP) if raw.startswith(".") else raw.strip(TOKEN_STRIP)
        if not token:
            continue
        if "/" in token:  # a path of this repository starts at one of its root's entries
            is_path = token.split("/", 1)[0] in root_entries()
        else:  # a bare file name: only source and docs, not the outputs a command writes (trace.json)
            is_path = BARE_FILE.fullmatch(token) is not None
        if is_path:
            found.append(token)
    return found


def path_exists(token: str) -> bool:
    for candidate in expand_braces(token):
        if "/" not in candidate:
            if candidate not in tree_file_names():
                return False
        elif "*" in candidate:
            if not list(ROOT.glob(candidate.rstrip("/"))):
                return False
        elif not (ROOT / candidate).exists() or (candidate.endswith("/") and not (ROOT / candidate).is_dir()):
            if not written_by_a_run(candidate):
                return False
    return True


def written_by_a_run(path: str) -> bool:
    """A folder or file the repository ignores (.gitignore: tests/artifacts/, out/): what a run writes, not there
    in a fresh clone until something ran."""
    done = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, capture_output=True)
    return done.returncode == 0


def path_problems(page: Page) -> list[str]:
    return sorted({f"{page.name}: no such path `{token}`"
                   for line in page.code_lines for token in repository_paths(line) if not path_exists(token)})


def slugs(page: Page) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(page.prose):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def link_problems(page: Page) -> list[str]:
    problems = []
    for target in LINK.findall(page.prose):
        if re.match(r"[a-z][a-z+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.path.parent / file_part).resolve()
        if file_part and not dest.exists():
            problems.append(f"{page.name}: link to a missing file ({target})")
            continue
        linked = page if not file_part else read_page(dest) if dest.suffix == ".md" else None
        if anchor and linked is not None and anchor not in slugs(linked):
            problems.append(f"{page.name}: link to a missing heading ({target})")
    return problems


@functools.cache
def make_targets() -> frozenset[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    rules = re.findall(r"^([A-Za-z0-9_.-][A-Za-z0-9_. -]*?)\s*::?(?!=)", text, re.MULTILINE)
    return frozenset(name for rule in rules for name in rule.split())


def make_problems(page: Page) -> list[str]:
    return sorted({f"{page.name}: `make {target}` is not a Makefile target"
                   for line in page.code_lines for _, target in MAKE.findall(line) if target not in make_targets()})


def arguments(rest: str) -> str:
    """The arguments of one command: up to a pipe, `&&`, `;` or a redirection."""
    return re.split(r"\s(?:\||&&|>|2>)\s|;", rest, maxsplit=1)[0]


@functools.cache
def help_text(module: str, command: str | None) -> tuple[int, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    argv = [sys.executable, "-m", module, *([command] if command else []), "--help"]
    out = subprocess.run(argv, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return out.returncode, out.stdout + out.stderr


def names_in(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def module_problems(page: Page, module: str, args: str) -> list[str]:
    if importlib.util.find_spec(module) is None:
        return [f"{page.name}: `python -m {module}`: no such module"]
    if module.startswith("bench."):
        return flag_problems(page, f"python -m {module}", Path(importlib.util.find_spec(module).origin), args)
    if not module.startswith(OWN_MODULES):
        return []
    first = args.split()[0] if args.split() else ""
    command = first if re.fullmatch(r"[a-z][a-z-]*", first) else None
    if command:
        code, text = help_text(module, None)
        if code != 0 or not names_in(text, command):
            return [f"{page.name}: `python -m {module} {command}`: not a command in its --help"]
    code, text = help_text(module, command)
    if code != 0:
        return [f"{page.name}: `python -m {module} {command or ''} --help` failed: {text.strip()[-300:]}"]
    label = f"{module} {command}" if command else module
    return [f"{page.name}: `python -m {label}` has no flag {flag}" for flag in FLAG.findall(args)
            if not names_in(text, flag)]


def script_problems(page: Page, script: str, args: str) -> list[str]:
    path = ROOT / script
    if not path.is_file():
        return [f"{page.name}: `python {script}`: no such script"]
    if path.parent == ROOT / "bench":
        return [f"{page.name}: `python {script}`: a benchmark runs as `python -m bench.{path.stem}`"]
    return flag_problems(page, f"python {script}", path, args)


def flag_problems(page: Page, command: str, path: Path, args: str) -> list[str]:
    """Each flag of `args` that the source at `path` never writes as a string."""
    source = path.read_text(encoding="utf-8")
    return [f"{page.name}: `{command}` has no flag {flag}" for flag in FLAG.findall(args)
            if f'"{flag}"' not in source and f"'{flag}'" not in source]


def command_problems(page: Page) -> list[str]:
    problems = set()
    for line in page.code_lines:
        for module, script, rest in PYTHON.findall(line):
            args = arguments(rest)
            found = module_problems(page, module, args) if module else script_problems(page, script, args)
            problems.update(found)
    return sorted(problems)


def resolves(dotted: str) -> bool:
    """`engine.contract.cost.trace_floors`: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as error:
            if error.name is not None and not ".".join(parts[:cut]).startswith(error.name):
                raise  # the module exists but one of its own imports is missing: that is a real failure
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def name_problems(page: Page) -> list[str]:
    names = {m.group(1) for span in page.spans if (m := DOTTED_NAME.match(span)) and not FILE_NAME.fullmatch(span)}
    return sorted(f"{page.name}: `{name}` does not resolve" for name in names if not resolves(name))


def import_problems(page: Page) -> list[str]:
    problems = []
    for info, body in page.blocks:
        if info.split()[:1] != ["python"]:
            continue
        for node in ast.walk(ast.parse(body)):
            if isinstance(node, ast.Import):
                problems += [f"{page.name}: `import {a.name}` fails" for a in node.names if not resolves_module(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.module:
                problems += [f"{page.name}: `from {node.module} import {a.name}` fails" for a in node.names
                             if not resolves(f"{node.module}.{a.name}")]
    return problems


def resolves_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@functools.cache
def code_text() -> str:
    """Every source file that could read a PREFILL_DECODE_* variable (the docs themselves left out)."""
    files = [ROOT / "Makefile", *ROOT.glob(".ci/*"), *ROOT.glob(".streamlit/*")]
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_SOURCE and d != "docs" and not d.endswith(".egg-info")]
        files += [Path(folder) / n for n in names if n.endswith(".py")]
    this_test = Path(__file__).resolve()  # its trap page names a variable that must be read nowhere
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files
                     if f.is_file() and f.resolve() != this_test)


def variable_problems(page: Page) -> list[str]:
    return sorted({f"{page.name}: {name} is read nowhere in the code"
                   for name in VARIABLE.findall(page.text) if name not in code_text()})


CHECKS = [path_problems, link_problems, make_problems, command_problems, name_problems, import_problems,
          variable_problems]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removesuffix("_problems"))
@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_on_the_page_exists(path, check):
    problems = check(read_page(path))
    assert not problems, "\n".join(problems)


def test_readme_fits_on_a_screen_and_names_the_two_commands():
    page = read_page(ROOT / "README.md")
    assert len(page.text.splitlines()) <= README_MAX_LINES
    commands = {target for line in page.code_lines for _, target in MAKE.findall(line)}
    assert {"app", "test"} <= commands


def test_every_docs_page_is_linked_from_the_readme():
    targets = LINK.findall(read_page(ROOT / "README.md").prose)
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in targets}
    assert [p.name for p in PAGES[1:] if p.resolve() not in linked] == []


# The checks themselves, on a page written to trip them.
TRAP = """# Title

## A `heading` (with code)

Real: `engine/contract/trace.py`, `docs/`, `tests/{engine,serving}/`, `bench/*.py`, `app.py`.
Missing: `engine/no_such_module.py`, `engine/{trace,no_such}.py`, `no_such_file.py`.
Placeholders: `assets/gallery/<device>/`, `DIR/serving_run.json`, `out/`, `/srv/models/my-model`,
`Qwen/Qwen2.5-0.5B`, `engine/serving/...`, `http://127.0.0.1:8000/v1`.
Links: [ok](README.md), [gone](no_such_page.md), [anchor](#a-heading-with-code), [bad](#nowhere),
[web](https://example.org/x).

```bash
make app       # make believe, in a comment
make no-such-target
python -m engine trace --max-new-tokens 8 --no-such-flag
python -m engine no-such-command
python -m no_such_module_anywhere
python -m bench.render --prompt-len 8 --no-such-flag
python -m bench.no_such_bench
python bench/render.py
python assets/default_model/train.py --no-such-flag
```

`engine.contract.cost.trace_floors` and `engine.contract.cost.no_such_function`; PREFILL_DECODE_MODELS_DIR and
PREFILL_DECODE_NO_SUCH_VARIABLE.

```python
from engine.contract.trace import RequestTrace, NoSuchName
```
"""


@pytest.fixture(scope="module")
def trap() -> Page:
    return Page(ROOT / "TRAP.md", TRAP)


def test_paths_checked_are_real_paths_and_placeholders_are_not(trap):
    assert path_problems(trap) == [
        "TRAP.md: no such path `engine/no_such_module.py`",
        "TRAP.md: no such path `engine/{trace,no_such}.py`",
        "TRAP.md: no such path `no_such_file.py`",
    ]


def test_links_and_anchors_are_checked(trap):
    assert link_problems(trap) == [
        "TRAP.md: link to a missing file (no_such_page.md)",
        "TRAP.md: link to a missing heading (#nowhere)",
    ]


def test_make_targets_are_checked_outside_comments(trap):
    assert make_problems(trap) == ["TRAP.md: `make no-such-target` is not a Makefile target"]


def test_commands_flags_and_scripts_are_checked(trap):
    assert command_problems(trap) == [
        "TRAP.md: `python -m bench.no_such_bench`: no such module",
        "TRAP.md: `python -m bench.render` has no flag --no-such-flag",
        "TRAP.md: `python -m engine no-such-command`: not a command in its --help",
        "TRAP.md: `python -m engine trace` has no flag --no-such-flag",
        "TRAP.md: `python -m no_such_module_anywhere`: no such module",
        "TRAP.md: `python assets/default_model/train.py` has no flag --no-such-flag",
        "TRAP.md: `python bench/render.py`: a benchmark runs as `python -m bench.render`",
    ]


def test_dotted_names_imports_and_variables_are_checked(trap):
    assert name_problems(trap) == ["TRAP.md: `engine.contract.cost.no_such_function` does not resolve"]
    assert import_problems(trap) == ["TRAP.md: `from engine.contract.trace import NoSuchName` fails"]
    assert variable_problems(trap) == ["TRAP.md: PREFILL_DECODE_NO_SUCH_VARIABLE is read nowhere in the code"]
