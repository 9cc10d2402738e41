"""What code can tell about a proposal before Agent B reviews it, as points B starts from.

A small model asked to "review the proposal" mostly restates it. Given concrete facts about the
proposal, read off the code with no model, it has something to judge:

- a symbol the task names whose definition the investigation found, in a file the proposal does
  not change (the task is about that code; either it changes or the proposal says why not);
- a file listed in Files that no step mentions (what changes there?);
- a file the proposal deletes that other files still import (the 0.5B model "deletes" the
  module the task is about; every importer would break);
- no test file changed while the import graph knows the tests of a changed file;
- in a bug fix whose task never asks to delete or rename, a step that deletes a file or renames
  a public name (the 0.5B model marked the very file to fix "delete"); `action_risks` returns
  the same sentences for the final plan's Risks.

At most two of each kind and one about tests, so the block stays a few lines of the prompt.

Each point is a fact with its source (`[E#]`, `path:line`); whether it matters is B's call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agents.investigation.evidence import Evidence
from conversations.models import Message, PlanningSession
from conversations.store import message_payload
from planagents.streaming import publish
from rag import index
from rag.navigation import Navigator, RelatedResult
from rag.paths import FileSet, tidy
from rag.roles import role_for
from rag.vietnamese import fold

# On folded text (lower case, no diacritics); the Vietnamese words only for a Vietnamese task,
# where unaccented syllables could be English words too.
_ASKS = {
    "en": re.compile(
        r"(?<!\w)(?:delet\w*|remov\w*|drop\w*|renam\w*|deprecat\w*|get rid of|mov(?:e|es|ed|ing))"
        r"(?!\w)"
    ),
    "vi": re.compile(r"(?<!\w)(?:xoa|go bo|loai bo|bo di|doi ten|di chuyen)(?!\w)"),
}
_RENAME = re.compile(r"(?<!\w)(?:renam\w*|doi ten)(?!\w)")
_SPAN = re.compile(r"`([^`\n]{1,120})`")
_CODE_WORD = re.compile(r"(?<![\w.])(?:\w+(?:[._/]\w+)+(?:\(\))?|\w+\(\)|[a-z]+[A-Z]\w*)")


def review_points(
    proposal: dict[str, Any],
    evidence: Sequence[Evidence],
    paths: FileSet,
    related: Callable[[str], RelatedResult],
    *,
    task: str = "",
    analysis: Mapping[str, Any] | None = None,
) -> list[str]:
    """The facts about `proposal` worth a reviewer's look, most telling first. `related(path)`
    is the import graph around a file (rag.navigation's `Navigator.related`). With the `task`
    and its `analysis` (agents.analysis), an action the task does not call for is questioned
    too (`action_risks`)."""
    entries = [f for f in proposal.get("files") or [] if isinstance(f, dict) and f.get("path")]
    files = list(dict.fromkeys(str(f["path"]) for f in entries))  # the 0.5B lists a file twice
    real = list(dict.fromkeys(found for p in files if (found := paths.resolve(p).path)))
    deleted = [
        found
        for f in entries
        if f.get("action") == "delete" and (found := paths.resolve(str(f["path"])).path)
    ]
    points = _unasked_actions(task, analysis or {}, proposal, "the proposal")
    points += _untouched_definitions(evidence, set(real), paths)
    points += _deleted_but_imported(list(dict.fromkeys(deleted)), related)
    points += _files_without_a_step(proposal, files)
    points += _tests_left_out(real, lambda path: [t.path for t in related(path).tests])
    return points


def _untouched_definitions(
    evidence: Sequence[Evidence], changed: set[str], paths: FileSet
) -> list[str]:
    points: list[str] = []
    seen: set[str] = set()
    for item in evidence:
        if item.tool != "find_symbol" or not item.found or not item.path:
            continue
        if item.path in changed or item.path in seen or item.path not in paths:
            continue
        if role_for(item.path) != "source":
            continue  # a test or an example defining the name is not where the change goes
        seen.add(item.path)
        points.append(
            f"[{item.label}] finds `{item.argument}` defined at `{item.location}`; the proposal "
            "changes nothing in that file."
        )
        if len(points) == 2:
            break
    return points


def _deleted_but_imported(deleted: list[str], related: Callable[[str], RelatedResult]) -> list[str]:
    points = []
    for path in deleted:
        importers = [p for p in related(path).importers if p not in deleted]
        if importers:
            shown = ", ".join(f"`{p}`" for p in importers[:3])
            more = f" and {len(importers) - 3} more" if len(importers) > 3 else ""
            points.append(
                f"`{path}` is deleted, but {len(importers)} file(s) import it: {shown}{more}."
            )
    return points[:2]


def _files_without_a_step(proposal: dict[str, Any], files: list[str]) -> list[str]:
    steps = proposal.get("steps") or []
    named = " ".join(
        " ".join([str(s.get("detail", "")), str(s.get("title", "")), *map(str, s.get("files", []))])
        for s in steps
        if isinstance(s, dict)
    )
    return [
        f"`{path}` is in Files, but no step says what changes in it."
        for path in files
        if path not in named
    ][:2]


def _tests_left_out(changed: list[str], tests_of: Callable[[str], list[str]]) -> list[str]:
    if any(role_for(p) == "test" for p in changed):
        return []
    for path in changed:
        tests = tests_of(path)[:2] if role_for(path) == "source" else []
        if tests:
            listed = ", ".join(f"`{t}`" for t in tests)
            return [f"No test file changes, though `{path}`, which changes, has tests: {listed}."]
    return []


def action_risks(task: str, analysis: Mapping[str, Any], data: Mapping[str, Any]) -> list[str]:
    """The actions of a plan (or proposal) `data` that do not fit the task, one plain sentence
    each, for the plan's Risks: in a bug fix (`analysis["type"] == "bug_fix"`, agents.analysis)
    whose `task` never asks to delete, remove, drop, move or rename anything, each file the
    plan deletes ("Step 2 deletes `pkg/x.py`, which the task does not ask for; a bug fix usually
    modifies it.") and each public name a step renames (a name not starting with "_"). [] for
    any other kind of task, for a task that asks for such an action, and for a plan with none.
    `data` has the Proposal / PlanDraft shape: `files` (path, action), `steps` (title, detail,
    files). Read by code, no model."""
    return _unasked_actions(task, analysis, data, "the plan")


def _unasked_actions(
    task: str, analysis: Mapping[str, Any], data: Mapping[str, Any], whole: str
) -> list[str]:
    if analysis.get("type") != "bug_fix":
        return []
    folded = fold(task[:4000])
    languages = ("en", "vi") if analysis.get("language") == "vi" else ("en",)
    if any(_ASKS[lang].search(folded) for lang in languages):
        return []
    steps = [s for s in data.get("steps") or [] if isinstance(s, dict)]
    said = [f"{s.get('title', '')} {s.get('detail', '')}" for s in steps]
    points: list[str] = []
    deleted = [
        tidy(str(f.get("path", "")))
        for f in data.get("files") or []
        if isinstance(f, dict) and f.get("action") == "delete"
    ]
    for path in dict.fromkeys(p for p in deleted if p):
        number = next(
            (
                n
                for n, (step, text) in enumerate(zip(steps, said, strict=True), 1)
                if path in map(str, step.get("files") or []) or path in text
            ),
            None,
        )
        who = f"Step {number}" if number else whole.capitalize()
        points.append(
            f"{who} deletes `{path}`, which the task does not ask for; a bug fix usually "
            "modifies it."
        )
    for number, text in enumerate(said, 1):
        found = _RENAME.search(fold(text))
        name = _renamed(text[found.end() :]) if found else ""
        if name and not name.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[-1].startswith("_"):
            points.append(
                f"Step {number} renames `{name}`, a public name, which the task does not ask "
                "for; a bug fix keeps public names so that their callers do not break."
            )
    return points


def _renamed(after: str) -> str:
    """The name a step renames: the first code span after "rename", else the first word shaped
    like code (`snake_case`, `dotted.name`, `a/path`, `call()`, `camelCase`); "" when neither
    comes within a few words."""
    head = " ".join(after.split()[:6])
    span = _SPAN.search(head)
    if span:
        return span[1].removesuffix("()")
    shaped = _CODE_WORD.search(head)
    return shaped[0].removesuffix("()") if shaped else ""


def checks_block(points: list[str]) -> str:
    """The points as a prompt section (empty when there are none)."""
    if not points:
        return ""
    listed = "\n".join(f"- {p}" for p in points)
    return f"<checks>\nFacts the app found about the proposal by reading the code:\n{listed}\n</checks>"


# ---------------------------------------------------------------- claims that a name is absent

# On folded text (agents' replies in English or Vietnamese, diacritics or not): what is said
# after a name ("`Session` is not defined", "Session không tồn tại") or before it ("there is
# no `Session`", "không có lớp Session").
_ABSENT_AFTER = (
    r"(?:(?:is|are|was|were|has|have)\s+(?:not|never)(?:\s+been)?|isn['’]t|aren['’]t|wasn['’]t"
    r"|hasn['’]t\s+been)\s+(?:defined|declared)"
    r"|is\s+undefined|(?:does|do|did)\s*(?:not|n['’]t)\s+exist"
    r"|(?:khong|chua)\s+(?:duoc\s+)?(?:dinh\s+nghia|khai\s+bao)|khong\s+ton\s+tai"
)
_ABSENT_BEFORE = r"there\s+(?:is|are)\s+no|there['’]s\s+no|no\s+such|khong\s+(?:he\s+)?co"
_KIND_WORDS = r"class|function|method|module|type|constant|lop|ham|phuong\s+thuc|kieu|hang\s+so"
_OTHER_THINGS = re.compile(
    r"\s*`?\s*(?:argument|parameter|param|field|attribute|key|option|column|variable|test|"
    r"check|call|import|flag|setting|tham\s+so|thuoc\s+tinh|truong|bien)s?\b"
)
"""After a name, what makes a claim about something else than its definition ("there is no
`timeout` parameter")."""
_REPORTED = re.compile(
    r"\b(?:claim\w*|said|says|wrong\w*|incorrect\w*|false\w*|mistaken\w*|cho\s+rang|noi\s+rang"
    r"|khang\s+dinh|sai)\b"
)
"""A sentence that reports or corrects the claim ("B said `X` is not defined; it is") makes
none itself."""
_ABSENT_ANY = re.compile(rf"{_ABSENT_AFTER}|{_ABSENT_BEFORE}")
_SENTENCES = re.compile(r"\n+|(?<=[.!?;])\s+")
_NAME_IN_SPAN = re.compile(r"`([A-Za-z_]\w{0,80}(?:\.[A-Za-z_]\w{0,80}){0,4})(?:\(\))?`")
_BARE_NAME = re.compile(
    r"(?<![\w.`/])(?:[A-Z][a-z0-9]+[A-Z]\w*|[a-z][a-z0-9]*[A-Z]\w*|[A-Za-z]\w*_\w+)(?![\w`])"
)
_KIND_THEN_NAME = re.compile(
    r"(?i:\b(?:class|function|method|lớp|hàm|phương thức)\s+)"
    r"(?!(?i:named|called|that|which|the|an?|in|to|for|of|is|are|was|này|đó|nào)\b)"
    r"([A-Z_a-z]\w{0,80})(?![\w.`])"
)
_FILE_IN = re.compile(r"`?([\w./-]+\.[A-Za-z]{1,5})(?::\d+(?:-\d+)?)?`?")


@dataclass(frozen=True)
class FalseAbsence:
    """A claim that the codebase lacks a name it defines."""

    name: str
    where: str
    """path:start-end of a definition of it."""
    claim: str
    """The sentence that makes the claim, as written."""


def absence_claims(text: str) -> list[tuple[str, str, str]]:
    """(name, file the claim is about or "", sentence) for each claim in `text` that a name
    written as code (`Session`, `SessionStore`, session_store, "class Session") is not
    defined, does not exist, or that there is none, in English or Vietnamese."""
    found: list[tuple[str, str, str]] = []
    for sentence in _SENTENCES.split(text[:MAX_CLAIM_TEXT]):
        folded = fold(sentence)
        if not _ABSENT_ANY.search(folded) or _REPORTED.search(folded):
            continue
        names = dict.fromkeys(
            [m[1] for m in _NAME_IN_SPAN.finditer(sentence)]
            + [m[0] for m in _BARE_NAME.finditer(sentence)]
            + [m[1] for m in _KIND_THEN_NAME.finditer(sentence)]
        )
        for name in names:
            if _claims_absent(folded, fold(name)):
                found.append((name, _file_named(sentence, name), sentence.strip()))
    return found


MAX_CLAIM_TEXT = 20_000


def _claims_absent(folded: str, name: str) -> bool:
    n = re.escape(name)
    kind = rf"(?:(?:{_KIND_WORDS})\s+)?"
    after = re.search(
        rf"(?<![\w.]){n}(?:\(\))?`?(?:\s+(?:{_KIND_WORDS}))?\s+"
        rf"(?:(?:(?:still|also|actually|thuc\s+su|van)\s+)?)(?:{_ABSENT_AFTER})",
        folded,
    )
    before = re.search(
        rf"(?:{_ABSENT_BEFORE})\s+{kind}(?:nao\s+)?(?:(?:named|called|ten(?:\s+la)?)\s+)?`?{n}",
        folded,
    )
    if before is not None:
        rest = folded[before.end() :]
        if re.match(r"[\w.]", rest) or _OTHER_THINGS.match(rest.removeprefix("()")):
            before = None
    return after is not None or before is not None


def _file_named(sentence: str, name: str) -> str:
    """The file a sentence says the name is missing from ("… in `app/models.py`"), or ""."""
    for match in _FILE_IN.finditer(sentence):
        path = tidy(match[1]) if match[1] != name else ""
        if path and ("/" in path or path.rsplit(".", 1)[-1] in _CODE_EXTS):
            return path
    return ""


_CODE_EXTS = {"py", "js", "ts", "tsx", "jsx", "go", "java", "rs", "mjs", "cjs"}


def false_absences(text: str, find: Callable[[str], list[tuple[str, str]]]) -> list[FalseAbsence]:
    """The claims in `text` that a name is absent which the symbol table contradicts.
    `find(name)` gives (path, "path:start-end") of each definition named exactly `name`
    (rag.navigation's `Navigator.find_symbol`, exact or qualified matches); a claim about one
    file is contradicted only by a definition in that file."""
    out: list[FalseAbsence] = []
    seen: set[str] = set()
    for name, path, sentence in absence_claims(text):
        if name in seen:
            continue
        hits = find(name)
        if path:
            hits = [h for h in hits if h[0] == path or h[0].endswith("/" + path)]
        if hits:
            seen.add(name)
            out.append(FalseAbsence(name, hits[0][1], sentence))
    return out


FOUND_AS = ("exact", "qualified", "inherited")
"""find_symbol's matches that define the very name written (not a spelling or a case away)."""


def definitions_in(navigator: Navigator) -> Callable[[str], list[tuple[str, str]]]:
    """`false_absences`' lookup over a codebase's symbol table."""

    def find(name: str) -> list[tuple[str, str]]:
        result = navigator.find_symbol(name)
        if result.match not in FOUND_AS:
            return []
        return [(hit.path, hit.location) for hit in result.hits]

    return find


def absence_flag(found: Sequence[FalseAbsence]) -> str:
    """The line appended to a reply whose claims of absence the code contradicts."""
    said = "; ".join(
        f"the reply says `{f.name}` is not in the code, but the codebase defines it at `{f.where}`"
        for f in found
    )
    return f"_Flagged: {said}._"


def flag_false_absences(session: PlanningSession, message: Message) -> list[FalseAbsence]:
    """Check `message` once for claims that a name is absent which the symbol table
    contradicts; append the flag and store them (`data["false_absences"]`), shown on the page
    and read by the stop summary (agents.summary)."""
    data = message.data if isinstance(message.data, dict) else {}
    if "false_absences" in data:  # checked already (a re-run)
        return [FalseAbsence(**f) for f in data["false_absences"]]
    navigator = Navigator(index.index_dir(session.codebase_id))
    found = false_absences(message.content, definitions_in(navigator)) if navigator.exists() else []
    if not found:  # nothing stored: a re-check finds nothing again
        return []
    message.data = {**data, "false_absences": [asdict(f) for f in found]}
    message.content += "\n\n" + absence_flag(found)
    Message.objects.filter(pk=message.pk).update(content=message.content, data=message.data)
    publish(session.pk, {"type": "message.end", "message": message_payload(message)})
    return found
