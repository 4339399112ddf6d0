"""The exercise flow of every chapter, and the notebook copies made from it.

Each exercise is the same run of consecutive cells:

1. a Markdown cell with the ``{exercise}`` directive and its ``:label:``;
2. the learner's **answer cell**, tagged ``answer``: a comment that says what to
   write, and the names the check reads bound to ``...`` (``context_sun = ...``,
   or ``def stable_softmax(x):`` with a body of ``...``);
3. the **check cell**, tagged ``check``, which calls one ``checks.check_*`` on
   those names; stored, it says "not answered yet";
4. the solution: a Markdown cell opening with ``{solution-start}``, the solution's
   code and explanation, and a last Markdown cell ending with ``{solution-end}``.
   Every cell after the opening one is collapsed in JupyterLab (source and output
   hidden until clicked), and the code binds only names that start with ``our_``,
   so running it can never overwrite the learner's answer. One of its code cells
   runs the same check on its own names, which prints ✅.

:func:`flow_problems` says where a notebook breaks this; :func:`with_answers` puts
answers into the answer cells (the tests and the workshop check use it);
:func:`student_copy` and :func:`solutions_notebook` make the copies a workshop
hands out, with their Markdown made plain (:func:`plain_markdown`) so that they
read well in any notebook viewer.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import NamedTuple

import nbformat

ANSWER_TAG = "answer"
CHECK_TAG = "check"
SOLUTION_START = "```{solution-start}"
SOLUTION_END = "```{solution-end}"
OUR = "our_"
NOT_ANSWERED = "not answered yet"
HIDDEN = {"source_hidden": True, "outputs_hidden": True}


class Exercise(NamedTuple):
    """Where one exercise's cells are in a notebook (indices into its cells)."""

    label: str
    title: str
    prompt: int
    answer: int
    check: int
    solution: range  # from the solution-start cell to the solution-end cell


def _is_markdown(cell, start):
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith(start)


def _tags(cell):
    return cell.metadata.get("tags", [])


def _directive(text):
    """(title, label) of an ``{exercise}`` cell."""
    first = text.lstrip().splitlines()[0]
    title = first.partition("}")[2].strip()
    label = re.search(r"^:label:\s*(\S+)", text, re.M)
    return title, label.group(1) if label else ""


def exercises(notebook) -> list[Exercise]:
    """The exercises of a notebook, in order; raises ``ValueError`` where the run of
    cells of one does not follow the flow (see the module's docstring)."""
    cells, found = notebook.cells, []
    for i, cell in enumerate(cells):
        if not _is_markdown(cell, "```{exercise}"):
            continue
        title, label = _directive(cell.source)
        where = f"exercise {label or title!r} (cell {i})"
        if not label:
            raise ValueError(f"{where}: the exercise has no :label:")
        try:
            answer, check, start = cells[i + 1], cells[i + 2], cells[i + 3]
        except IndexError:
            raise ValueError(f"{where}: the notebook ends inside it") from None
        if answer.cell_type != "code" or ANSWER_TAG not in _tags(answer):
            raise ValueError(
                f"{where}: the next cell must be the answer cell, a code cell tagged "
                f"{ANSWER_TAG!r}"
            )
        if check.cell_type != "code" or CHECK_TAG not in _tags(check):
            raise ValueError(
                f"{where}: the cell after the answer must be the check, a code cell "
                f"tagged {CHECK_TAG!r}"
            )
        if not _is_markdown(start, SOLUTION_START):
            raise ValueError(f"{where}: the check must be followed by {SOLUTION_START}")
        end = next(
            (j for j in range(i + 3, len(cells)) if SOLUTION_END in cells[j].source),
            None,
        )
        nested = [
            j
            for j in range(i + 4, end if end is not None else len(cells))
            if _is_markdown(cells[j], SOLUTION_START)
            or _is_markdown(cells[j], "```{exercise}")
        ]
        if end is None or nested:
            raise ValueError(f"{where}: its solution never ends with {SOLUTION_END}")
        if not cells[end].source.rstrip().endswith(SOLUTION_END + "\n```"):
            raise ValueError(f"{where}: {SOLUTION_END} must end its cell")
        found.append(Exercise(label, title, i, i + 1, i + 2, range(i + 3, end + 1)))
    return found


def _top_level_names(source):
    """Names a cell binds at the top level: assignments, defs, imports, loops."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names]
        else:
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = [node.target]
            elif isinstance(node, ast.With):
                targets = [item.optional_vars for item in node.items]
            for target in targets:
                for sub in ast.walk(target) if target is not None else ():
                    if isinstance(sub, ast.Name):
                        names.append(sub.id)
        names += [
            sub.target.id
            for sub in ast.walk(node)
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name)
        ]
    return names


def _text_outputs(cell):
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
        elif "text/plain" in out.get("data", {}):
            parts.append(out.data["text/plain"])
    return "\n".join(parts)


def flow_problems(path: Path) -> list[str]:
    """Where the exercises of a notebook break the flow; empty when none do."""
    notebook = nbformat.read(path, as_version=4)
    try:
        found = exercises(notebook)
    except ValueError as error:
        return [str(error)]
    problems = []
    for ex in found:
        where = f"exercise {ex.label}"
        answer = notebook.cells[ex.answer]
        if "..." not in answer.source or not answer.source.lstrip().startswith("#"):
            problems.append(
                f"{where}: the answer cell must open with a comment saying what to "
                "write and leave the answer as ..."
            )
        if answer.get("outputs"):
            problems.append(f"{where}: the answer cell must show no output")
        check = notebook.cells[ex.check]
        if "checks.check_" not in check.source:
            problems.append(f"{where}: the check cell calls no checks.check_*")
        if NOT_ANSWERED not in _text_outputs(check):
            problems.append(
                f"{where}: the check cell's stored output must say "
                f"{NOT_ANSWERED!r} (the answer cell holds ...); run `make outputs`"
            )
        solution = [notebook.cells[j] for j in ex.solution]
        ticks = 0
        for cell in solution[1:]:
            if cell.metadata.get("jupyter", {}) != HIDDEN:
                problems.append(
                    f"{where}: a solution cell is not collapsed in JupyterLab; run "
                    "`make outputs`, which marks them"
                )
            if cell.cell_type != "code":
                continue
            foreign = [
                n for n in _top_level_names(cell.source) if not n.startswith(OUR)
            ]
            if foreign:
                problems.append(
                    f"{where}: the solution binds {sorted(set(foreign))}; a solution "
                    f"binds only names that start with {OUR!r}, so that it never "
                    "overwrites the learner's answer"
                )
            if "checks.check_" in cell.source and "✅" in _text_outputs(cell):
                ticks += 1
        if not ticks:
            problems.append(
                f"{where}: no solution code cell runs the check on its own names "
                "with a ✅"
            )
    return problems


def mark_solutions(notebook) -> None:
    """Collapse every solution cell after the opening one (JupyterLab metadata)."""
    for ex in exercises(notebook):
        for j in ex.solution[1:]:
            notebook.cells[j].metadata["jupyter"] = dict(HIDDEN)


def with_answers(notebook, answers: dict[str, str]):
    """``notebook`` with the answer cells of the exercises labelled in ``answers``
    holding those sources (a copy; unknown labels are an error)."""
    copy = nbformat.from_dict(notebook)
    found = {ex.label: ex for ex in exercises(copy)}
    unknown = sorted(set(answers) - set(found))
    if unknown:
        raise KeyError(f"no exercise labelled {unknown} (there are {sorted(found)})")
    for label, source in answers.items():
        copy.cells[found[label].answer].source = source
    return copy


# --- plain Markdown, for viewers that do not render MyST -------------------------

# A directive fenced by backticks or colons (colon_fence), its closing fence as long
# as its opening one.
_FENCE = re.compile(
    r"^(```+|:::+)\{([\w-]+)\}[ \t]*(.*?)\n(.*?)^\1[ \t]*$", re.M | re.S
)
# A MyST comment line, and a target label such as "(ch09-cost)=" before a heading:
# shown nowhere, so left out of plain Markdown.
_COMMENT = re.compile(r"^(?:%.*|\([\w.:-]+\)=[ \t]*)(?:\n|\Z)", re.M)
_ROLE = re.compile(r"\{(ref|doc|numref|eq|term)\}`([^`]*)`")
_NAMED = {"note": "Note", "tip": "Tip", "warning": "Warning", "important": "Important"}
# A citation: {cite}`key` and {cite:p}`key` in parentheses, {cite:t}`key` in the
# text; several keys are separated by commas.
_CITE = re.compile(r"\{cite(?::([pt]))?\}`([^`]*)`")
REFERENCES = Path(__file__).resolve().parent.parent / "references.bib"


@functools.cache
def _bibliography(path: Path):
    from pybtex.database import parse_file

    return parse_file(str(path), bib_format="bibtex").entries


def citation(key: str, bibfile: Path = REFERENCES) -> tuple[str, str]:
    """The authors and year of entry ``key`` of ``bibfile``, as the website's
    author-year citations show them: one or two family names, or the first one and
    "et al.".

    >>> citation("vaswani2017attention")
    ('Vaswani et al.', '2017')
    >>> citation("kingma2015adam")
    ('Kingma and Ba', '2015')
    """
    from pybtex.richtext import Text

    entries = _bibliography(Path(bibfile))
    if key not in entries:
        raise ValueError(
            f"no entry {key!r} in {Path(bibfile).name}: add it there, or cite one of "
            f"its keys (for example {next(iter(entries), 'none')!r})"
        )
    entry = entries[key]
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [
        str(Text.from_latex(" ".join(person.prelast_names + person.last_names)))
        for person in people
    ]
    if not names or "year" not in entry.fields:
        raise ValueError(
            f"entry {key!r} of {Path(bibfile).name} needs authors and a year"
        )
    if len(names) > 2:
        authors = f"{names[0]} et al."
    else:
        authors = " and ".join(names)
    return authors, entry.fields["year"]


def _cite(match):
    kind, keys = match.groups()
    cited = [citation(key.strip()) for key in keys.split(",") if key.strip()]
    if kind == "t":
        return ", ".join(f"{authors} ({year})" for authors, year in cited)
    return "(" + "; ".join(f"{authors}, {year}" for authors, year in cited) + ")"


def _role(match):
    role, text = match.groups()
    shown = re.match(r"(.*?)\s*<([^>]*)>$", text, re.S)
    if shown:
        return shown.group(1)
    # A bare {numref} shows "Fig. 3.2" on the website; plain Markdown has no numbers.
    return "the figure" if role == "numref" else text


def _quote(title, body):
    lines = [f"**{title}**", ""] if title else []
    lines += body.strip("\n").splitlines()
    return "\n".join(f"> {line}".rstrip() for line in lines)


def plain_markdown(source: str, number: str = "") -> str:
    """MyST directives and roles of a Markdown cell as plain Markdown.

    Exercises and admonitions become block quotes with a bold title, ``{math}``
    becomes ``$$ ... $$``, cross-references become their text, citations the
    authors and year of their entry in ``references.bib`` and the solution markers
    become a bold "Solution". Comments and target labels (``(name)=``) are left out.

    >>> print(plain_markdown("```{admonition} Why?\\n:class: tip\\nBecause.\\n```"))
    > **Why?**
    >
    > Because.
    >>> plain_markdown("see {ref}`the sources <sources>`")
    'see the sources'
    >>> print(plain_markdown(":::{admonition} Dive\\n:class: deep-dive\\nSkip\\n:::"))
    > **Dive**
    >
    > Skip
    >>> plain_markdown("% end of deep dive")
    ''
    >>> plain_markdown("(ch09-cost)=\\n## The cost, measured")
    '## The cost, measured'
    >>> plain_markdown("as {cite:t}`shaw2018self` showed {cite:p}`raffel2020exploring`")
    'as Shaw et al. (2018) showed (Raffel et al., 2020)'
    """

    def directive(match):
        _, name, argument, body = match.groups()
        body = re.sub(r"^:\w+:.*\n?", "", body, flags=re.M)
        if name == "exercise":
            title = f"Exercise {number}".strip() + (f": {argument}" if argument else "")
            return _quote(title, body)
        if name == "admonition":
            return _quote(argument, body)
        if name in _NAMED:
            return _quote(_NAMED[name], (argument + "\n" + body).strip())
        if name == "math":
            return "$$\n" + body.strip("\n") + "\n$$"
        if name == "solution-start":
            return "**Solution**"
        if name == "solution-end":
            return ""
        raise ValueError(f"no plain Markdown for the directive {{{name}}}")

    text = _FENCE.sub(directive, _COMMENT.sub("", source))
    return _CITE.sub(_cite, _ROLE.sub(_role, text)).strip("\n")


def _chapter_number(path: Path) -> str:
    """``"3"`` for ``03_causal_mask.ipynb``: the website numbers its exercises 3.1,
    3.2, ... and the plain copies do the same."""
    prefix = path.name.split("_")[0]
    return str(int(prefix)) if prefix.isdigit() else ""


def _plain_notebook(notebook, chapter="", *, keep_outputs=False, collapsed=False):
    """``notebook`` (changed in place) with plain Markdown and, unless
    ``keep_outputs``, no outputs; unless ``collapsed``, no cell is collapsed.
    Exercises are numbered ``chapter.k``."""
    number = 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            if _is_markdown(cell, "```{exercise}"):
                number += 1
            label = f"{chapter}.{number}" if chapter else str(number)
            cell.source = plain_markdown(cell.source, label)
        elif not keep_outputs:
            cell.outputs = []
            cell.execution_count = None
        if not collapsed:
            cell.metadata.pop("jupyter", None)  # nothing collapsed in a handout
    notebook.cells = [c for c in notebook.cells if c.source or c.cell_type == "code"]
    if not keep_outputs:
        notebook.metadata.pop("widgets", None)  # saved views of cleared outputs
    return notebook


def plain_copy(path: Path, *, collapsed: bool = False):
    """A whole chapter, outputs and solutions included, with plain Markdown, which
    reads well where MyST is not rendered (Colab, VS Code, GitHub). With
    ``collapsed``, the solutions stay collapsed as in the chapter (JupyterLab's
    ``jupyter`` cell metadata); ``tools.portable`` builds the website's copies on
    this."""
    notebook = nbformat.read(path, as_version=4)
    return _plain_notebook(
        notebook, _chapter_number(path), keep_outputs=True, collapsed=collapsed
    )


def student_copy(path: Path):
    """A chapter for a workshop: every solution left out, outputs cleared, plain
    Markdown. The answer cells keep their ``...`` and the checks stay, so each
    check says "not answered yet" until the learner has written an answer. Each
    answer cell keeps its exercise's label in its metadata (``exercise``)."""
    notebook = nbformat.read(path, as_version=4)
    found = exercises(notebook)
    for ex in found:  # the label stays with the answer cell, as metadata
        notebook.cells[ex.answer].metadata["exercise"] = ex.label
    dropped = {j for ex in found for j in ex.solution}
    notebook.cells = [c for j, c in enumerate(notebook.cells) if j not in dropped]
    return _plain_notebook(notebook, _chapter_number(path))


def solutions_notebook(paths: list[Path], title: str):
    """One notebook with the solutions of every exercise of ``paths``, to hand out
    after a workshop: for each chapter its code cells (so that the solutions have
    what they use), and each exercise's prompt, solution and explanation."""
    book = nbformat.v4.new_notebook()
    book.metadata = nbformat.read(paths[0], as_version=4).metadata
    book.cells = [nbformat.v4.new_markdown_cell(f"# {title}")]
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        found = exercises(notebook)
        heading = notebook.cells[0].source.lstrip().splitlines()[0].lstrip("# ")
        chapter = _chapter_number(path)
        if chapter:
            heading = f"Chapter {chapter}: {heading}"
        book.cells.append(
            nbformat.v4.new_markdown_cell(
                f"## {heading}\n\nThe chapter's own code cells come first, so that "
                "the solutions have what they use; then each exercise and its "
                "solution."
            )
        )
        learner = {j for ex in found for j in (ex.answer, ex.check, *ex.solution)}
        part = nbformat.v4.new_notebook()
        part.cells = [
            cell
            for j, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and j not in learner
        ]
        for ex in found:
            part.cells.append(notebook.cells[ex.prompt])
            part.cells += [notebook.cells[j] for j in ex.solution[1:]]
        book.cells += _plain_notebook(part, _chapter_number(path)).cells
    book.metadata.pop("widgets", None)  # saved views of cleared outputs
    return book
