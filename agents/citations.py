"""Find `path:line` citations in agent text and check them against the codebase."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from agents.echoes import placeholders
from rag.models import Codebase, CodeFile
from rag.navigation import OutlineResult
from rag.parsers.listing import LINE_WARNINGS
from rag.paths import CITATION, FileSet, find_citations, parse_citation


@dataclass(frozen=True)
class Citation:
    path: str
    """The codebase's spelling of the file when it has it, else the path as written."""
    start: int
    end: int
    exists: bool
    """The file is in the codebase and the first cited line is in the file."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def extract_citations(codebase: Codebase, text: str) -> list[Citation]:
    """Every distinct citation in `text`, marked with whether that file and line exist.

    Paths resolve as everywhere else (rag.paths): `TODO/API.py:3` and `api.py#L3` cite
    `todo/api.py` when that is the one file they can mean.
    """
    cited = find_citations(text)
    if not cited:
        return []
    files = CodeFile.objects.filter(codebase=codebase)
    written = {c.path for c in cited}
    lines = dict(files.filter(path__in=written).values_list("path", "line_count"))
    real: dict[str, str | None] = {path: path for path in lines}
    if len(real) < len(written):  # some are spelled differently: resolve them
        known = FileSet(files.values_list("path", flat=True))
        real.update({path: known.resolve(path).path for path in written - real.keys()})
        more = {path for path in real.values() if path is not None and path not in lines}
        lines.update(files.filter(path__in=more).values_list("path", "line_count"))
    found: dict[tuple[str, int, int], bool] = {}
    for c in cited:
        path = real[c.path]
        key = (path or c.path, c.start, c.end)
        found[key] = path is not None and c.start <= lines[path]
    return [Citation(path, start, end, exists) for (path, start, end), exists in found.items()]


def line_note(codebase: Codebase) -> str:
    """The codebase's warning that cited line numbers are not its repository's (a pack made
    with `--compress`, `--remove-comments` or `--remove-empty-lines`); "" when they are."""
    warnings = codebase.warnings if isinstance(codebase.warnings, list) else []
    for warning in LINE_WARNINGS:
        if any(isinstance(w, str) and warning in w for w in warnings):
            return warning
    return ""


# ------------------------------------------------------------------ steps grounded in sources


@dataclass(frozen=True)
class Source:
    """Lines of code the agents were shown: an evidence item or a retrieved chunk."""

    path: str
    start: int
    end: int
    label: str = ""
    """The evidence's [E#] label; "" for a retrieved chunk."""
    text: str = field(default="", compare=False, repr=False)
    """The lines themselves, to tell which source a step is about."""

    def holds(self, path: str, line: int) -> bool:
        return path == self.path and self.start <= line <= self.end

    def cite(self) -> str:
        where = f"`{self.path}:{self.start}-{self.end}`"
        return f"{where} [{self.label}]" if self.label else where


def sources_of(evidence: Iterable[Any], hits: Iterable[Any]) -> list[Source]:
    """What a plan may cite: the found evidence (with its [E#]) first, then retrieval's hits."""
    found = [
        Source(e.path, e.start, max(e.end, e.start), e.label, e.text)
        for e in sorted(evidence, key=lambda e: e.number)
        if e.found and e.path and e.start > 0
    ]
    retrieved = [
        Source(h.path, h.start_line, h.end_line, text=h.text) for h in hits if h.start_line > 0
    ]
    return found + retrieved


class Definition(NamedTuple):
    """Where a definition the agents were shown lives: its file and its first and last line."""

    path: str
    line: int
    end: int


def shown_definitions(
    sources: list[Source], outline: Callable[[str], OutlineResult], limit: int = 40
) -> dict[str, Definition]:
    """The definitions (functions, classes, methods) whose code the agents were shown, by name
    (`Class.method` for a method), each with its file and lines: what a step may name as the
    code it changes. Those that start inside the lines shown, and the function or method each
    shown span begins inside (the innermost definition, when it is one): a long function's
    second chunk, or a search hit in its body, shows that function's code without its first
    line (xarray-2905: the fix's `as_compatible_data` was shown in part and not offered). A
    span beginning in a class between its methods shows no method's code, and offers nothing
    more: seaborn-2848's enum grew by two whole classes that way. In file order by the sources'
    order of files, at most `limit`; a name defined in two places keeps the first."""
    found: dict[str, Definition] = {}
    for path in dict.fromkeys(s.path for s in sources):
        result = outline(path)
        if not result.found:
            continue
        shown = [s for s in sources if s.path == path]
        entries = [e for e in result.entries if e.kind in DEFINITION_KINDS and e.depth <= 1]
        within = {
            innermost
            for s in shown
            if (enclosing := [e for e in entries if e.start_line < s.start <= e.end_line])
            and (innermost := max(enclosing, key=lambda e: (e.depth, e.start_line))).kind
            in CALLABLE_KINDS
        }
        for entry in entries:
            if entry not in within and not any(s.holds(path, entry.start_line) for s in shown):
                continue
            name = f"{entry.container}.{entry.name}" if entry.container else entry.name
            found.setdefault(name, Definition(path, entry.start_line, entry.end_line))
            if len(found) >= limit:
                return found
    return found


POINTED = 2
"""An evidence item holding at most this many definitions points at them (a quoted line, a
traceback frame, a function looked up); one holding more points at the definition it starts
with (a class looked up, not its methods), and a read of a whole file at none of its own."""


def offered_definitions(
    shown: list[Source],
    further: list[Source],
    outline: Callable[[str], OutlineResult],
    limit: int = 40,
) -> dict[str, Definition]:
    """The definitions a step may change, most likely first: those the agents were shown
    (`shown`: evidence, then retrieval's hits) and those of retrieval's next chunks
    (`further`, best first), whose code a step shows when it names one.

    Ordered by how directly the task leads to each: first what an [E#] evidence item points
    at (the task named it, a lookup found it: see POINTED), then
    everything else by its best chunk's place in retrieval's ranking, then in the order shown.
    On swe-dev the definitions of the 6 chunks shown held the one the real fix changed in 23
    of 41 tasks; the first 16 of this order hold it in 28 (bench/retrieval/definitions.py),
    and a file the task names (its whole outline, up to 40 names) no longer pushes the rest
    out of the 16 a prompt lists. A name defined in two places keeps the first in this order."""
    memo: dict[str, OutlineResult] = {}

    def cached(path: str) -> OutlineResult:
        if path not in memo:
            memo[path] = outline(path)
        return memo[path]

    ranked = [s for s in shown if not s.label] + list(further)
    keys: dict[str, tuple[int, int, int]] = {}
    where: dict[str, Definition] = {}
    for order, source in enumerate([*shown, *further]):
        found = shown_definitions([source], cached, limit=10_000)
        few = len(found) <= POINTED
        for name, definition in found.items():
            pointed = bool(source.label) and (few or definition.line == source.start)
            if name in where and where[name] != definition:
                continue  # another definition of the name came first
            rank = next(
                (i for i, s in enumerate(ranked) if s is source or _offers(s, definition)),
                len(ranked),
            )
            key = (0 if pointed else 1, rank, order)
            if name not in keys or key < keys[name]:
                keys[name], where[name] = key, definition
    best = sorted(keys, key=keys.__getitem__)[:limit]
    return {name: where[name] for name in best}


def _offers(source: Source, definition: Definition) -> bool:
    """Whether `source` shows `definition`: starts in it, or begins inside it."""
    return source.path == definition.path and (
        source.holds(definition.path, definition.line)
        or definition.line < source.start <= definition.end
    )


DEFINITION_KINDS = frozenset({"function", "method", "class", "constructor", "interface", "struct"})
CALLABLE_KINDS = frozenset({"function", "method", "constructor"})


NEW_DEFINITION = "new definition in "
"""How a step's `symbol` choice says it adds a definition to a file rather than changing one
(`new definition in pkg/util.py`): the explicit branch beside the real definitions."""


def cite_symbols(
    data: dict[str, Any],
    definitions: Mapping[str, Definition],
    paths: Collection[str] = (),
    sources: Collection[Source] = (),
    elsewhere: Callable[[str], list[tuple[str, Definition]]] | None = None,
) -> dict[str, Any]:
    """`data` whose steps no longer carry the `symbol` a file-choices schema asked for: a named
    definition that agrees with the rest of the step (one of its files, or its title or detail
    names the file or the definition) becomes the step's citation (`Name` at `path:line`),
    unless the step cites that file already, and the step's `target` (kind "definition", its
    name and lines), whose code the plan shows. `new definition in <path>` with a path of
    `paths` makes the target a new definition there, unless the step is plainly about one that
    exists (`_existing_definition`, read with the [E#] `sources`). "none" or an unknown name
    gives way to the definition the step writes as code, or, for a step on one file, to the
    one definition of that file its [E#] evidence holds. One the step says nothing else about
    is dropped: the 0.5B model picked the same unrelated method for all six steps of a pylint
    plan. A "new definition" whose name, written as code, is defined once in the codebase
    though not offered (`elsewhere`: its qualified name and place) changes that one, in its
    own file (pylint-4604: `_redefines_import`, in pylint/checkers/base.py, was to be "a new
    definition in pylint/checkers/imports.py" and the next step modified it)."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data
    out = []
    for step in steps:
        if not isinstance(step, dict) or "symbol" not in step:
            out.append(step)
            continue
        name = step.get("symbol")
        step = {k: v for k, v in step.items() if k != "symbol"}
        cited_lines = _cited_lines(step)
        files = [_without_line(f) for f in step.get("files") or [] if isinstance(f, str)]
        if files:
            step["files"] = list(dict.fromkeys(files))
            files = step["files"]
        if isinstance(name, str) and name.startswith(NEW_DEFINITION):
            path = name.removeprefix(NEW_DEFINITION)
            existing = _existing_definition(step, path, definitions, sources, cited_lines)
            found = None if existing or elsewhere is None else _defined_elsewhere(step, elsewhere)
            if found is not None:
                name, defined = found
                step["files"] = files = [f for f in files if f != path]
                definitions = {**definitions, name: defined}
            elif not existing:
                if path in paths:
                    step["target"] = {"kind": "new", "path": path}
                    step["files"] = files if path in files else [*files, path]
                out.append(step)
                continue
            else:
                name = existing
        where = definitions.get(name) if isinstance(name, str) else None
        written = _written_definition(step, definitions) if where is not None else ""
        if "." in written and written != name:
            # The step writes another offered definition by its qualified name (seaborn-2848
            # on local-1.5b: "Update `HueMapping._lookup_single` … [E2]" chose the first of
            # four `_lookup_single`, `SemanticMapping`'s): the words are the clearer answer.
            name, where = written, definitions[written]
        if where is None:
            # "none" or an unknown choice, while the step itself writes a shown definition
            # as code (`Session.merge_environment_settings`, `to_text()`): the model copied
            # an earlier step's words and left the choice; the words are the clearer answer.
            name = _written_definition(step, definitions)
            found = None if name or elsewhere is None else _written_pair(step, elsewhere)
            if found is not None:
                # "Modify `__setitem__` in `DataArray`": a method and its class, written
                # apart, the way people write them (xarray-2905 on local-1.5b).
                name, defined = found
                definitions = {**definitions, name: defined}
            if not name and len(files) == 1:
                # Nor written as code: a step on one file that cites by [E#] the evidence
                # holding exactly one definition of it changes that one (xarray-2905 with the
                # 1.5B model: "Add a check to handle objects with a `.values` property in
                # `xarray/core/variable.py` [E4]", [E4] being `Variable.__setitem__`, chose
                # "none", and the plan showed no code and no sketch).
                name = _existing_definition(step, files[0], definitions, sources, cited_lines)
            where = definitions.get(name) if name else None
        if where is not None and isinstance(name, str) and _agrees(step, name, where[0]):
            path, line = where[0], where[1]
            end = where[2] if len(where) > 2 else line
            detail = str(step.get("detail") or "").rstrip()
            if f"{path}:" not in detail:
                detail = f"{detail} (`{name}` at `{path}:{line}`)".strip()
            target = {"kind": "definition", "name": name, "path": path, "start": line, "end": end}
            step = {
                **step,
                "detail": detail,
                "files": files if path in files else [*files, path],
                "target": target,
            }
        out.append(step)
    return {**data, "steps": out}


def _defined_elsewhere(
    step: dict[str, Any], elsewhere: Callable[[str], list[tuple[str, Definition]]]
) -> tuple[str, Definition] | None:
    """The existing definition a step's title or detail writes as code by a bare name
    (`_redefines_import`, `resolve()`), found by `elsewhere` (every definition of a name, by
    qualified name and place). None when a name it writes is defined nowhere (the new
    definition's own, perhaps), or when not exactly one name is defined exactly once."""
    text = f"{step.get('title', '')} {step.get('detail', '')}"
    names = {
        span.removesuffix("()")
        for span in _CODE_SPAN.findall(text)
        if _BARE.fullmatch(span.removesuffix("()"))
    }
    found = [elsewhere(name) for name in sorted(names)]
    if not found or any(not hits for hits in found):
        return None
    once = [hits[0] for hits in found if len(hits) == 1]
    return once[0] if len(once) == 1 else None


PAIR_SPANS = 4
"""A title names a method and its class among its first few code names; more are a list."""


def _written_pair(
    step: dict[str, Any], elsewhere: Callable[[str], list[tuple[str, Definition]]]
) -> tuple[str, Definition] | None:
    """The one definition the step's title writes as a method and its class in two code spans
    ("Modify `__setitem__` in `DataArray`"), found by `elsewhere` (which takes `Class.method`),
    or None. The title's first PAIR_SPANS names are paired: a lookup each, in order."""
    spans = [s for s in dict.fromkeys(_CODE_SPAN.findall(str(step.get("title", ""))))
             if _BARE.fullmatch(s)][:PAIR_SPANS]  # fmt: skip
    found = {
        hit
        for owner in spans
        for method in spans
        if owner != method
        for hit in elsewhere(f"{owner}.{method}")
    }
    return found.pop() if len(found) == 1 else None


def _written_definition(step: dict[str, Any], definitions: Mapping[str, Definition]) -> str:
    """The one shown definition the step's title or detail writes as code in a form that
    names it exactly: qualified (`Class.method`) or called (`func()`); else a bare name
    written as code (`map`) that is the method name of exactly one shown method in one of the
    step's own files ("Modify the `map` function" in `seaborn/axisgrid.py`, where the
    evidence showed `PairGrid.map`). "" when none or several fit. A bare class or module name
    (`Session`) is read as said in passing, not as the step's target. Bare names come from
    the title when it writes some: it says what the step changes, where the detail also says
    how (xarray-2905 on local-1.5b: "Modify `__setitem__` in `DataArray`", whose detail's
    "objects with a `values` property" made `DataArray.values` the target)."""
    title = str(step.get("title", ""))
    text = f"{title} {step.get('detail', '')}"
    titled = {s for s in _CODE_SPAN.findall(title) if _BARE.fullmatch(s.removesuffix("()"))}
    spans = {span.removesuffix("()") for span in _CODE_SPAN.findall(title if titled else text)}
    exact = {
        span.removesuffix("()")
        for span in _CODE_SPAN.findall(text)
        if "." in span.removesuffix("()") or span.endswith("()")
    }
    named = [w for w in exact if w in definitions]
    if named:
        return named[0] if len(named) == 1 else ""
    files = {str(f).strip().lstrip("./") for f in step.get("files") or [] if isinstance(f, str)}
    bare = {w for w in spans if _BARE.fullmatch(w)}
    fits = {
        name
        for name, where in definitions.items()
        if "." in name and name.rsplit(".", 1)[-1] in bare and where[0] in files
    }
    return fits.pop() if len(fits) == 1 else ""


_BARE = re.compile(r"[A-Za-z_]\w{2,}")


def _cited_lines(step: dict[str, Any]) -> list[tuple[str, int]]:
    """The (path as written, line) pairs a step cites: in its files (`pkg/a.py:82-84`, the
    way a model lists a file it means a part of) and in its title and detail."""
    written = [str(f) for f in step.get("files") or [] if isinstance(f, str)]
    text = " ".join([str(step.get("title", "")), str(step.get("detail", "")), *written])
    return [(c.path, c.start) for c in find_citations(text)]


def _without_line(written: str) -> str:
    """A step's file as written, without the `:82-84` a model adds to say which part."""
    cited = parse_citation(written)
    return cited.path if cited is not None else written


def _existing_definition(
    step: dict[str, Any],
    path: str,
    definitions: Mapping[str, Definition],
    sources: Collection[Source],
    cited_lines: Collection[tuple[str, int]] = (),
) -> str:
    """The offered definition in `path` a step that chose "new definition in `path`" (or
    none) is about, or "". A step adds a definition under a name of its own; one that writes
    no such name and either writes an existing definition of that file as code, cites a line
    of that file inside one (the innermost), or cites by [E#] evidence holding exactly one
    definition of it, changes that definition. requests 2.20 with the 1.5B model: "Change
    the check in [E6] to treat the default port as the same port", where [E6] was
    `SessionRedirectMixin.should_strip_auth` and nothing else, chose a new definition and so
    showed no code and no sketch. seaborn-2848: a step whose files were
    `seaborn/_oldcore.py:82-84`, the first lines of `SemanticMapping._lookup_single`, chose
    "new definition in seaborn/_oldcore.py"."""
    written = _written_definition(step, definitions)
    if written and definitions[written].path == path:
        return written
    text = f"{step.get('title', '')} {step.get('detail', '')}"
    cited = [s for s in sources if s.label and s.path == path and f"[{s.label}]" in text]
    shown = " ".join(s.text for s in cited)
    known = {part for name in definitions for part in name.split(".")}
    for span in _CODE_SPAN.findall(text):
        bare = span.removesuffix("()")
        if _BARE.fullmatch(bare) and bare not in known and not re.search(rf"\b{bare}\b", shown):
            return ""  # a name of its own: the new definition's, perhaps
    at_lines = {
        min(holding, key=lambda n: definitions[n].end - definitions[n].line)
        for written, line in cited_lines
        if written == path or path.endswith(f"/{written}")
        if (
            holding := [
                name
                for name, where in definitions.items()
                if where.path == path and where.line <= line <= where.end
            ]
        )
    }
    if len(at_lines) == 1:
        return at_lines.pop()
    inside = {
        name
        for name, where in definitions.items()
        for s in cited
        if where.path == path and s.start <= where.line and where.end <= s.end
    }
    return inside.pop() if len(inside) == 1 else ""


def _agrees(step: dict[str, Any], name: str, path: str) -> bool:
    """Whether the step points at `name` (defined in `path`) by more than the choice itself."""
    files = [str(f).strip().lstrip("./") for f in step.get("files") or [] if isinstance(f, str)]
    if path in files:
        return True
    text = f"{step.get('title', '')} {step.get('detail', '')}"
    if path in text:
        return True
    words = set(_IDENTIFIER.findall(text))
    own = name.rsplit(".", 1)[-1]
    return name in text or (not own.startswith("__") and own in words)


def ground_steps(data: dict[str, Any], sources: list[Source], paths: FileSet) -> dict[str, Any]:
    """`data` (a proposal or plan) whose steps cite only lines the agents were shown.

    A small model writes line numbers it never saw (or the literal `path:line`): a citation no
    source holds loses its line number and keeps the path. A step left citing nothing gets a
    source in one of its files (or a file its detail names, or else one of the plan's files):
    the one whose lines name most of the code the step names (`share`, `Nominal.tick`), else
    the first; that file joins the step's files. Steps no source fits stay uncited."""
    steps = data.get("steps")
    if not isinstance(steps, list) or not sources:
        return data
    plan_files = [str(f.get("path", "")) for f in data.get("files") or [] if isinstance(f, dict)]
    grounded = [
        _ground_step(s, sources, paths, plan_files) if isinstance(s, dict) else s for s in steps
    ]
    return {**data, "steps": grounded}


def _ground_step(
    step: dict[str, Any], sources: list[Source], paths: FileSet, plan_files: list[str]
) -> dict[str, Any]:
    # A detail cut off by its length limit while copying an earlier grounded step ends in
    # "(see `path" with no line: that fragment goes, the step is cited afresh below.
    detail = _CUT_CITE.sub("", str(step.get("detail") or "")).rstrip()
    kept, out, last = 0, [], 0
    for match in CITATION.finditer(detail):
        cited = parse_citation(detail[match.start(1) : match.end()])
        real = paths.resolve(cited.path).path if cited else None
        if (
            cited is not None
            and real is not None
            and any(s.holds(real, cited.start) for s in sources)
        ):
            kept += 1
            continue
        # Keep the path as written, drop the line number no source holds.
        out += [detail[last : match.end(1)]]
        last = match.end()
    detail = "".join([*out, detail[last:]])
    files = [f for f in step.get("files") or [] if isinstance(f, str)]
    written = placeholders(detail)  # the literal `path:line` of the instructions
    if kept:
        return {**step, "detail": _without(detail, written, "")}
    wanted = [*files, *_named(detail, paths), *plan_files]
    resolved = [p for p in (paths.resolve(w).path for w in wanted) if p]
    source = _best_source(f"{step.get('title', '')} {detail}", dict.fromkeys(resolved), sources)
    if source is None:
        return {**step, "detail": _without(detail, written, "")}
    if written:  # the citation goes where the model wrote its placeholder
        detail = _without(detail, written, source.cite())
    else:
        detail = f"{detail.rstrip()} (see {source.cite()})".strip()
    if source.path not in resolved[: len(files)]:
        files = [*files, source.path]
    return {**step, "detail": detail, "files": files}


_CODE_SPAN = re.compile(r"`([^`\n]{1,120})`")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*+")


def _best_source(step: str, paths: Iterable[str], sources: list[Source]) -> Source | None:
    """Of the sources in `paths` (in that order of preference), the one whose lines name the
    most identifiers the step puts in code spans; the first one when none names any."""
    named = {
        word
        for span in _CODE_SPAN.findall(step)
        if "/" not in span  # a path, not code
        for word in _IDENTIFIER.findall(span)
        if len(word) > 2
    }
    best: tuple[int, int] | None = None
    chosen: Source | None = None
    for order, path in enumerate(paths):
        for source in sources:
            if source.path != path:
                continue
            found = set(_IDENTIFIER.findall(source.text)) if named else set()
            score = (len(named & found), -order)
            if best is None or score > best:
                best, chosen = score, source
    return chosen


_CUT_CITE = re.compile(r"\(see `[^`)]*`?$")


def _without(detail: str, written: list[str], first: str) -> str:
    """`detail` with its placeholders gone, the first one replaced by `first`."""
    for placeholder in written:
        quoted = f"`{placeholder}`"
        spelled = quoted if quoted in detail else placeholder
        detail = detail.replace(spelled, first, 1).replace(quoted, "").replace(placeholder, "")
        first = ""
    return " ".join(detail.split())


def _named(text: str, paths: FileSet) -> list[str]:
    """The codebase's files `text` names without a line number."""
    words = (w.strip("`'\"()[],.;:") for w in text.split())
    return [w for w in words if ("/" in w or "." in w) and paths.resolve(w).path]
