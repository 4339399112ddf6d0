"""The package as a whole: its import graph, where ipywidgets may be imported, and
the docstrings' chapter and ``Shapes`` conventions."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
import tomllib

import attn_course
from attn_course import shapes
from tools.toc import ROOT

PACKAGE = Path(attn_course.__file__).resolve().parent
WIDGET_MODULE = "attn_course.explorer"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_package(name: str) -> bool:
    return (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``import from`` statement in ``module`` names."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """``module -> modules it imports`` for attn_course, functions' imports too."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, node)
                imported.add(target)
                for alias in node.names:  # `from . import plot` imports a module
                    if (
                        _is_package(target)
                        and (
                            PACKAGE.parent
                            / target.replace(".", "/")
                            / f"{alias.name}.py"
                        ).exists()
                    ):
                        imported.add(f"{target}.{alias.name}")
        graph[name] = imported
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle among the modules (``__init__`` not a target), or []."""
    inside = {
        name: {t for t in targets if t in graph and not _is_package(t)}
        for name, targets in graph.items()
    }
    state = {}  # name -> "open" while on the stack, "done" when finished

    def visit(name, stack):
        state[name] = "open"
        stack.append(name)
        for target in sorted(inside[name]):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state:
                cycle = visit(target, stack)
                if cycle:
                    return cycle
        stack.pop()
        state[name] = "done"
        return []

    for name in sorted(inside):
        if name not in state:
            cycle = visit(name, [])
            if cycle:
                return cycle
    return []


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_only_the_widget_module_imports_ipywidgets():
    importers = {
        name
        for name, targets in import_graph().items()
        if any(t == "ipywidgets" or t.startswith("ipywidgets.") for t in targets)
    }
    assert importers == {WIDGET_MODULE}


def test_nothing_but_the_package_face_imports_the_widget_module():
    importers = {
        name for name, targets in import_graph().items() if WIDGET_MODULE in targets
    }
    assert importers <= {"attn_course"}, importers


# --- docstring conventions --------------------------------------------------------


def _modules():
    names = ["attn_course"]
    for info in pkgutil.walk_packages(attn_course.__path__, "attn_course."):
        names.append(info.name)
    # Private modules (attn_course._validate, checks._kit) are not public objects'
    # homes, but their docstrings follow the Shapes convention too.
    return [importlib.import_module(name) for name in sorted(names)]


def public_objects():
    """(qualified name, object) for every name in a module's ``__all__``, once."""
    seen = {}
    for module in _modules():
        if module.__name__.rsplit(".", 1)[-1].startswith("_"):
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            home = getattr(obj, "__module__", module.__name__)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                home = module.__name__  # a constant: documented where it is defined
            key = f"{home}.{name}"
            if home == module.__name__ or key not in seen:
                seen[key] = obj
    return sorted(seen.items())


CHAPTER = re.compile(r"Introduced in Chapter \d+")


def _documentation(qualname, obj):
    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or callable(obj)) else None
    if doc is None or doc == inspect.getdoc(type(obj)):
        module = importlib.import_module(qualname.rsplit(".", 1)[0])
        source = inspect.getsource(module)
        name = qualname.rsplit(".", 1)[1]
        match = re.search(
            rf"^{re.escape(name)}\b[^\n]*=.*?\n\"\"\"(.*?)\"\"\"",
            source,
            flags=re.M | re.S,
        )
        doc = match.group(1) if match else ""
    return doc or ""


PUBLIC = public_objects()


@pytest.mark.parametrize("qualname, obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_every_public_object_names_the_chapter_that_introduces_it(qualname, obj):
    doc = _documentation(qualname, obj)
    assert CHAPTER.search(doc), (
        f"{qualname}: its docstring should say 'Introduced in Chapter N.'"
    )


def _shapes_sections(doc):
    """The lines of every ``Shapes`` section in a numpydoc docstring."""
    lines = doc.splitlines()
    sections = []
    for i, line in enumerate(lines[:-1]):
        if line.strip() == "Shapes" and set(lines[i + 1].strip()) == {"-"}:
            body = []
            for text in lines[i + 2 :]:
                if not text.strip():
                    break
                body.append(text.strip())
            sections.append(body)
    return sections


def _documented_things():
    """(where, docstring) for every module, class, function and method."""
    found = []
    for module in _modules():
        found.append((module.__name__, inspect.getdoc(module) or ""))
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                found.append((f"{module.__name__}.{name}", inspect.getdoc(obj) or ""))
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if inspect.isfunction(member) and member.__doc__:
                        found.append(
                            (f"{module.__name__}.{name}.{attr}", inspect.getdoc(member))
                        )
    return found


SHAPE = re.compile(r"\(([^()]*)\)")
NAME = re.compile(r"[A-Za-z_]\w*")
# Sizes that a Shapes line may also name: constructor arguments of the package.
ARGUMENTS = {"num_heads", "vocab_size", "context_length", "d_model", "max_len"}


def _bad_letters(line):
    """Dimension names in a Shapes line that the glossary does not define."""
    bad = []
    for group in SHAPE.findall(line):
        for name in NAME.findall(group):
            if name not in shapes.LETTERS and name not in ARGUMENTS:
                bad.append(name)
    return bad


def test_every_shapes_section_uses_the_glossary_letters():
    problems = []
    count = 0
    for where, doc in _documented_things():
        for body in _shapes_sections(doc):
            count += 1
            for line in body:
                bad = _bad_letters(line)
                if bad:
                    problems.append(f"{where}: unknown letters {bad} in {line!r}")
    assert count > 30, "fewer Shapes sections than expected: is the parser broken?"
    assert not problems, "\n".join(problems)


def test_the_glossary_table_lists_exactly_the_letters():
    table = re.findall(r"^(\S+)\s{2,}\S", shapes.__doc__, flags=re.M)
    letters = [word for word in table if word not in {"letter"} and "=" not in word]
    assert letters == list(shapes.LETTERS)


def test_the_licences_and_the_citation_agree_with_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "CC BY 4.0" in (ROOT / "LICENSE-text.md").read_text()
    citation = (ROOT / "CITATION.cff").read_text()
    assert f'version: "{project["version"]}"' in citation
