"""Task analysis without a model: what kind of task it is, how big, what it names, which
language. Stored on the session (`PlanningSession.task_analysis`), shown as a card on the
session page and in the admin, and turned into one instruction line for prompts (`guidance`).

Everything here is deterministic: keyword tables (English, and Vietnamese matched with its
diacritics folded away, so "sửa lỗi" and "sua loi" read the same), names resolved against the
codebase (files through rag.paths.FileSet, symbols through rag.navigation.Navigator), and a
size from how many files those names reach. When the keywords cannot tell the type, the one
phase-1 routing call (agents.routing.classify) is the only model call that may settle it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from agents import routing
from agents.investigation.task_names import named_in_task
from agents.language import detect_language
from rag import index
from rag.models import Codebase, CodeFile
from rag.navigation import Navigator
from rag.paths import FileSet
from rag.vietnamese import fold

TEXT_CAP = 4000
"""Only the start of a task is analysed: every pattern below stays linear and cheap."""
MAX_NAMES = 10
"""At most this many named files or symbols are looked up in the codebase."""

TYPE_LABELS = {
    "bug_fix": "Bug fix",
    "feature": "Feature",
    "refactor": "Refactor",
    "question": "Question",
    "test": "Tests",
    "docs": "Docs",
    "performance": "Performance",
    "security": "Security",
}

# Keywords per type, on folded lower-case text. Vietnamese ones apply only to Vietnamese text:
# unaccented, "them" (thêm, add) or "sai" (wrong) are English words or parts of them too.
_ENGLISH_WORDS = {
    "security": r"security|secure|vulnerab\w*|xss|csrf|injection|sanitiz\w*|exploit\w*|cve"
    r"|secrets?|leak\w*|brute.?force|authoriz\w*|privilege\w*|csp",
    "performance": r"slow\w*|performance|perf|faster|speed\w*|optimi[sz]\w*|latency|memory"
    r"|cach(?:e|ing)|bottleneck|throughput|efficient\w*|n\+1",
    "test": r"tests?|testing|unit.?tests?|coverage|pytest|test.?cases?|specs?",
    "docs": r"docs?|documentation|document|readme|docstrings?|changelog|tutorial|guide",
    "refactor": r"refactor\w*|clean.?up|cleanup|renam\w*|extract\w*|simplif\w*|restructur\w*"
    r"|reorgani[sz]\w*|deduplicat\w*|split|tidy|dead.?code|move",
    "bug_fix": r"fix\w*|bugs?|error|errors|crash\w*|broken|fail\w*|exception|traceback|wrong"
    r"|incorrect|regression|\w+error|(?:does ?n[o']?t|not) work\w*",
    "feature": r"add\w*|implement\w*|support\w*|new|allow\w*|enabl\w*|introduc\w*|creat\w*"
    r"|build|feature",
}
_VIETNAMESE_WORDS = {
    "security": r"bao mat|lo hong|tan cong|ma hoa|phan quyen",
    "performance": r"cham|hieu nang|toi uu|tang toc|bo nho dem|do tre|nhanh hon",
    "test": r"kiem thu|viet test|ca kiem thu",
    "docs": r"tai lieu|chu thich|huong dan",
    "refactor": r"tai cau truc|doi ten|don dep|viet lai|tach|gop",
    "bug_fix": r"sua loi|loi|khac phuc|bi hong|khong hoat dong|khong chay|bao loi|sai",
    "feature": r"them|tao|ho tro|cho phep|tinh nang|bo sung|trien khai|xay dung",
}
_PRIORITY = ["security", "performance", "test", "docs", "refactor", "bug_fix", "feature"]
"""On a tie the more specific type wins: "fix the slow query" is about performance."""


def _compile(table: dict[str, str]) -> dict[str, re.Pattern[str]]:
    return {kind: re.compile(rf"(?<!\w)(?:{words})(?!\w)") for kind, words in table.items()}


_ENGLISH = _compile(_ENGLISH_WORDS)
_VIETNAMESE = _compile(_VIETNAMESE_WORDS)
_BROAD = re.compile(
    r"(?<!\w)(?:all|every\w*|across|whole|entire|migrat\w*|rewrit\w*|redesign\w*|overhaul"
    r"|toan bo|tat ca|moi noi|viet lai)(?!\w)"
)

GUIDANCE = {
    "bug_fix": "This is a bug fix: find where the failure starts, fix the cause there (not the "
    "symptom), and add a test that fails before the fix.",
    "feature": "This is a new feature: follow the patterns the codebase already uses, name every "
    "file it touches, and add tests for the new behaviour.",
    "refactor": "This is a refactor: behaviour must not change; list every caller that moves, "
    "and rely on the existing tests (add one where none covers the code).",
    "question": "This is a question: answer it from the code, citing `path:line`, and do not "
    "propose changes.",
    "test": "This is about tests: find the code under test and where its tests live, and follow "
    "the existing test style and command.",
    "docs": "This is about documentation: change docs and docstrings only, and check each "
    "statement against the code.",
    "performance": "This is about performance: find the hot path in the code, say what makes it "
    "slow, and say how the gain will be measured.",
    "security": "This is about security: find where untrusted input enters, fix it at that "
    "boundary, and add a test with hostile input.",
}
_SIZE_HINTS = {
    "L": "It is large: order the steps so each one can be reviewed on its own.",
    "XL": "It is very large: split it into independently shippable steps and say which comes "
    "first.",
}


@dataclass
class Entities:
    files: list[str] = field(default_factory=list)
    """Codebase files the task names (resolved: the codebase's own spelling)."""
    symbols: list[dict[str, str]] = field(default_factory=list)
    """Named symbols found in the codebase: {"name", "kind", "location"}."""
    modules: list[str] = field(default_factory=list)
    """Files implied by a plain word that is a module's name ("auth" → todo/auth.py)."""
    endpoints: list[str] = field(default_factory=list)
    """URL paths and HTTP routes the task names ("POST /login")."""
    unresolved: list[str] = field(default_factory=list)
    """Names that look like files or symbols but that the codebase does not have."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "symbols": self.symbols,
            "modules": self.modules,
            "endpoints": self.endpoints,
            "unresolved": self.unresolved,
        }

    def implicated_files(self) -> list[str]:
        paths = [*self.files, *(s["location"].rsplit(":", 1)[0] for s in self.symbols)]
        return list(dict.fromkeys([*paths, *self.modules]))


def first_look(codebase: Codebase, task: str) -> dict[str, Any]:
    """What a session starts with: the analysis and the phase-0 route (no model). A route the
    patterns are unsure of is settled by the session's job (agents.answers)."""
    analysis = analyse(codebase, task)
    route = routing.match(task)
    analysis.update(route.as_dict())
    if route.route == routing.QUESTION:
        analysis.update(type="question", type_label=TYPE_LABELS["question"])
        analysis["confidence"] = max(analysis["confidence"], route.confidence)
    elif route.route == routing.GREETING:
        analysis["language"] = route.language  # "cam on" is too short for the detector
    return analysis


def analyse(codebase: Codebase, task: str) -> dict[str, Any]:
    """The analysis of `task` on `codebase`, as stored in `task_analysis`."""
    text = task[:TEXT_CAP]
    language = detect_language(text)
    kind, confidence, signals = classify_type(text, language)
    entities = find_entities(codebase, text)
    size, reason = complexity(codebase, text, entities, kind)
    return {
        "type": kind,
        "type_label": TYPE_LABELS[kind],
        "confidence": confidence,
        "signals": signals,
        "complexity": size,
        "complexity_reason": reason,
        "entities": entities.as_dict(),
        "language": language,
    }


def classify_type(text: str, language: str) -> tuple[str, float, list[str]]:
    """(type, confidence, the words that decided it). Nothing matched: a feature, unsure."""
    folded = fold(text[:TEXT_CAP])
    tables = [_ENGLISH, _VIETNAMESE] if language == "vi" else [_ENGLISH]
    counts: dict[str, int] = {}
    signals: list[str] = []
    for table in tables:
        for kind, pattern in table.items():
            found = [m.group(0) for m in pattern.finditer(folded)]
            if found:
                counts[kind] = counts.get(kind, 0) + len(found)
                signals.extend(found)
    if not counts:
        return "feature", 0.3, []
    ranked = sorted(counts, key=lambda k: (-counts[k], _PRIORITY.index(k)))
    best = ranked[0]
    if len(ranked) == 1:
        confidence = 0.9
    elif counts[best] > counts[ranked[1]]:
        confidence = 0.75
    else:
        confidence = 0.55
    return best, confidence, list(dict.fromkeys(signals))[:8]


# ---------------------------------------------------------------- entities

_BACKTICKED = re.compile(r"`([^`\n]{1,120})`")
_PATHLIKE = re.compile(
    r"(?<![\w/.:-])((?:[\w.-]+/)+[\w.-]+|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])"
)
_ENDPOINT = re.compile(
    r"(?:\b(GET|POST|PUT|PATCH|DELETE)\s+)?(?<![^\s\"'(])(/[\w{}:.-]+(?:/[\w{}:.-]*)*)"
)
_WORD = re.compile(r"[a-z][a-z0-9_]{2,40}")
_TEXT_EXTENSIONS = {"e", "g", "i", "etc"}
"""Not file extensions: "e.g", "i.e", "etc."."""


def find_entities(codebase: Codebase, text: str) -> Entities:
    entities = Entities()
    paths = list(CodeFile.objects.filter(codebase=codebase).values_list("path", flat=True))
    files = FileSet(paths)
    navigator = Navigator(index.index_dir(codebase.pk))
    written_paths: list[str] = []
    for match in _BACKTICKED.finditer(text):
        inner = match.group(1).strip().removesuffix("()")
        if "/" in inner or _is_filename(inner):
            written_paths.append(inner)
    bare = _BACKTICKED.sub(" ", text)
    for match in _ENDPOINT.finditer(bare):
        route = match.group(2)
        if files.resolve(route.lstrip("/")).found:
            continue  # "/todo/api.py" is a file, not a route
        entities.endpoints.append(f"{match.group(1)} {route}" if match.group(1) else route)
    bare = _ENDPOINT.sub(" ", bare)
    for match in _PATHLIKE.finditer(bare):
        written = match.group(1)
        if "/" in written or (_is_filename(written) and files.resolve(written).found):
            written_paths.append(written)
        elif re.fullmatch(r"[A-Za-z_]\w*\.[A-Za-z_]\w*", written):
            continue  # `Cart.total`, not a file: a qualified name, read below
        elif _is_filename(written):
            written_paths.append(written)
    bare = _PATHLIKE.sub(" ", bare)

    for written in list(dict.fromkeys(written_paths))[:MAX_NAMES]:
        resolved = files.resolve(written)
        if resolved.found and resolved.path:
            entities.files.append(resolved.path)
        else:
            entities.unresolved.append(written)
    # Names are read the way the investigation reads them (agents.investigation.task_names):
    # what the reporter's own snippet defines (`def __init__(self, a)`), another library's
    # name and a definition only an example or vendored file has are not the project's.
    # Taking the first of 300 `__init__`s told every agent "the task names `__init__`
    # (pylint/graph.py:40-69)" about a task that never mentioned that file.
    for item in named_in_task(text, files, navigator, limit=MAX_NAMES + MAX_NAMES):
        if item.kind != "name":
            continue
        if item.found:
            span = f"{item.line}-{item.end_line}" if item.end_line > item.line else str(item.line)
            entry = {"name": item.written, "kind": item.definition_kind,
                     "location": f"{item.path}:{span}"}  # fmt: skip
            if entry not in entities.symbols:
                entities.symbols.append(entry)
        elif not navigator.find_symbol(item.written).found:
            entities.unresolved.append(item.written)  # defined nowhere, not even aside
    entities.modules = _modules(bare, paths, exclude=entities.implicated_files())
    entities.files = list(dict.fromkeys(entities.files))
    entities.endpoints = list(dict.fromkeys(entities.endpoints))
    entities.unresolved = list(dict.fromkeys(entities.unresolved))
    return entities


def _is_filename(word: str) -> bool:
    stem, dot, ext = word.rpartition(".")
    return bool(dot and stem and ext.isalnum() and ext.lower() not in _TEXT_EXTENSIONS | {""}
                and not ext.isdigit() and re.fullmatch(r"[\w.-]+", word))  # fmt: skip


def _modules(text: str, paths: Iterable[str], *, exclude: list[str]) -> list[str]:
    """Files whose name (without extension, not __init__/index) is a word of the task."""
    words = set(_WORD.findall(fold(text)))
    by_stem: dict[str, list[str]] = {}
    for path in paths:
        pure = PurePosixPath(path)
        stem = pure.stem.lower()
        if stem in ("__init__", "index", "main", "mod"):
            stem = pure.parent.name.lower()
        if stem:
            by_stem.setdefault(stem, []).append(path)
    found = []
    for word in sorted(words & by_stem.keys()):
        candidates = by_stem[word]
        if len(candidates) == 1 and candidates[0] not in exclude:
            found.append(candidates[0])  # "config" in a codebase with five config.py: no
    return found[:MAX_NAMES]


# ---------------------------------------------------------------- size


def complexity(codebase: Codebase, text: str, entities: Entities, kind: str) -> tuple[str, str]:
    """S, M, L or XL with the reason: files the task reaches, how widely its symbols are
    used, how long it is, and whether it says "everywhere"."""
    files = entities.implicated_files()
    navigator = Navigator(index.index_dir(codebase.pk))
    spread = 0
    for symbol in entities.symbols[:5]:
        spread = max(spread, navigator.find_references(symbol["name"]).files)
    words = len(text.split())
    broad = _BROAD.search(fold(text))
    points = 0
    points += 0 if len(files) <= 1 else 1 if len(files) <= 3 else 2 if len(files) <= 7 else 3
    points += 2 if spread >= 15 else 1 if spread >= 5 else 0
    points += 2 if words > 200 else 1 if words > 60 else 0
    points += 1 if broad else 0
    if kind == "question":
        points = min(points, 1)  # a question is read, not built
    size = "S" if points == 0 else "M" if points == 1 else "L" if points <= 3 else "XL"
    reasons = []
    if files:
        shown = ", ".join(files[:3]) + (" …" if len(files) > 3 else "")
        reasons.append(
            f"{len(files)} file{'s' if len(files) != 1 else ''} named or implied ({shown})"
        )
    else:
        reasons.append("no file named or implied")
    if spread:
        reasons.append(f"its symbols are used in up to {spread} files")
    reasons.append(f"{words} word{'s' if words != 1 else ''}")
    if broad:
        reasons.append(f"“{broad.group(0)}” suggests a broad change")
    return size, "; ".join(reasons)


# ---------------------------------------------------------------- prompts


def guidance(task_analysis: dict[str, Any]) -> str:
    """One instruction line for the agents' prompts, picked by type (and size); "" when the
    task was not analysed."""
    kind = task_analysis.get("type")
    if kind not in GUIDANCE:
        return ""
    parts = [GUIDANCE[kind]]
    hint = _SIZE_HINTS.get(str(task_analysis.get("complexity", "")))
    if hint and kind != "question":
        parts.append(hint)
    entities = task_analysis.get("entities") or {}
    named = [f"`{p}`" for p in entities.get("files", [])] + [
        f"`{s['name']}` ({s['location']})" for s in entities.get("symbols", [])
    ]
    if named:
        parts.append("The task names " + ", ".join(named[:6]) + ".")
    return " ".join(parts)
