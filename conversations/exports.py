"""One plan version exported for other tools: JSON (docs/plan.schema.json), a GitHub-issue body
and a hand-off prompt for coding agents.

All three are built from `plan_data`, which re-checks every path and citation against the
codebase, so no export can present a file that is not there as if it were. The hand-off prompt
also carries the codebase's rules and the pins the plan was written with (`guidance`): a coding
agent handed the plan must follow what the planning agents were told to follow.

Every export is markdown that is safe to paste where markdown is rendered (a GitHub issue, a
chat, a coding agent's prompt): model-written text, which a pack can steer, could otherwise
carry a link or an image whose address smuggles out what the model read, or raw HTML. So
outside code, `[`, `]`, `<` and `>` are escaped (no link, image, autolink or HTML can form) and
every address is shown as inline code (no renderer links it) — `safe_markdown`, the same policy
as the pages' (conversations/rendering.py)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from agents.citations import extract_citations, line_note
from agents.plan import check_file, code_span, codebase_paths, unique_files
from conversations.models import Message, Plan
from rag.models import Rule
from rag.paths import InvalidPath, clean
from rag.rules import active_rules

SCHEMA_VERSION = "1"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "plan.schema.json"

_ACTIONS = ("modify", "create", "delete")
_SIZES = ("S", "M", "L", "XL")


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema every JSON export validates against."""
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def _text(value: Any) -> str:
    """A model-written string on one line (a line break could start a block of its own), safe
    to paste as markdown."""
    return safe_markdown(" ".join(value.split())) if isinstance(value, str) else ""


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ESCAPE = frozenset("[]<>")
_ADDRESS = re.compile(
    r"(?i)(?:[a-z][a-z0-9+.-]{1,20}://|(?:mailto|xmpp|javascript|data|vbscript|file|tel):|www\.|"
    r"//(?=[a-z0-9-]+\.))[^\s`<>]+"
    r"|[a-z0-9._+-]{1,64}@[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63}){1,20}"
)
"""Something a renderer could make a link of: https://…, mailto:…, www.…, //host.…, and a bare
e-mail address (GitHub links `d=secret@evil.example` as a mailto: link)."""
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def safe_markdown(text: str) -> str:
    """Markdown with no link, image, autolink or raw HTML left in it, and every address shown
    as inline code; code spans and fenced blocks kept as written (a renderer shows them as
    text). Each line stands alone: a code span the markdown carried across lines is escaped
    rather than trusted, which may show a backslash too many but never a live link."""
    out: list[str] = []
    fence = ""
    for line in text.split("\n"):
        if fence:
            out.append(line)
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = ""
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            out.append(line)
            continue
        # A blockquote's markers stay: a ">" opening a line starts no tag or autolink.
        quote = _QUOTE.match(line)
        prefix = quote.group(0) if quote else ""
        out.append(prefix + _safe_line(line[len(prefix) :]))
    return "\n".join(out)


_QUOTE = re.compile(r"^ {0,3}(?:> ?)+")


def _safe_line(line: str) -> str:
    out: list[str] = []
    i, end = 0, len(line)
    while i < end:
        char = line[i]
        if char == "\\":
            # An escape stays one (its character is literal already); a lone backslash at the
            # end is escaped so it cannot escape what the export puts after it.
            pair = line[i : i + 2]
            out.append(pair if len(pair) == 2 and pair[1] in _PUNCTUATION else "\\\\")
            i += len(pair) if len(pair) == 2 and pair[1] in _PUNCTUATION else 1
            continue
        if char == "`":
            run = _run(line, i)
            close = _closing_run(line, i + run, run)
            if close < 0:
                out.append("\\`" * run)  # unmatched: literal, and unable to pair later
                i += run
            else:
                out.append(line[i : close + run])
                i = close + run
            continue
        address = _ADDRESS.match(line, i) if char.isalnum() or char == "/" else None
        if address and (i == 0 or not line[i - 1].isalnum()):
            shown = address.group(0)
            # Not the sentence's full stop, nor the ")" closing the markdown around it.
            while shown[-1] in ".,;:!?'\"" or (
                shown[-1] == ")" and shown.count("(") < shown.count(")")
            ):
                shown = shown[:-1]
            # Never next to another backtick, which would make one longer run of them.
            before = " " if out and out[-1].endswith("`") else ""
            after = " " if line[i + len(shown) : i + len(shown) + 1] == "`" else ""
            out.append(f"{before}`{shown}`{after}")
            i += len(shown)
            continue
        out.append("\\" + char if char in _ESCAPE else char)
        i += 1
    return "".join(out)


def _closing_run(line: str, start: int, run: int) -> int:
    """Where the next run of exactly `run` backticks starts, or -1 (CommonMark's code span)."""
    i = line.find("`" * run, start)
    while i >= 0:
        length = _run(line, i)
        if length == run:
            return i
        i = line.find("`" * run, i + length)
    return -1


def _run(line: str, i: int) -> int:
    """How many backticks start at `i`."""
    j = i
    while j < len(line) and line[j] == "`":
        j += 1
    return j - i


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _dict(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _strings(data: dict[str, Any], key: str) -> list[str]:
    return [t for t in dict.fromkeys(_text(i) for i in _list(data, key)) if t]


def _key(path: str) -> str:
    try:
        return clean(path)
    except InvalidPath:
        return path


def plan_data(plan: Plan) -> dict[str, Any]:
    """The plan as data in the shape of docs/plan.schema.json, paths and citations re-checked."""
    session = plan.session
    codebase = session.codebase
    data = plan.structured if isinstance(plan.structured, dict) else {}
    paths = codebase_paths(codebase)

    files: list[dict[str, Any]] = []
    for entry in unique_files(_list(data, "files")):
        action = _text(entry.get("action"))
        action = action if action in _ACTIONS else "modify"
        checked = check_file(entry["path"], action, paths)
        row = {
            "path": checked.path,
            "status": checked.status,
            "action": action,
            "reason": _text(entry.get("reason")),
        }
        if checked.written:
            row["written"] = checked.written
        files.append(row)
    actions = {_key(f["path"]): f["action"] for f in files}

    steps: list[dict[str, Any]] = []
    for number, step in enumerate((s for s in _list(data, "steps") if isinstance(s, dict)), 1):
        step_files: dict[str, dict[str, str]] = {}
        for written in _list(step, "files"):
            # Small models sometimes write the word "path" where a path belongs.
            if not _text(written) or " " in written.strip() or not set("/.") & set(written):
                continue
            checked = check_file(written, actions.get(_key(written), "modify"), paths)
            step_files.setdefault(checked.path, {"path": checked.path, "status": checked.status})
        steps.append(
            {
                "number": number,
                "title": _text(step.get("title")) or f"Step {number}",
                "detail": _text(step.get("detail")),
                "files": list(step_files.values()),
            }
        )

    effort = _dict(data, "effort")
    size = _text(effort.get("size"))
    return {
        "schema_version": SCHEMA_VERSION,
        "plan": {
            "session": session.pk,
            "title": session.title,
            "task": session.task,
            "version": plan.version,
            "review_status": plan.review_status,
            "created_at": plan.created_at.isoformat(),
            "codebase": codebase.name,
            "line_note": line_note(codebase),
        },
        "summary": _text(data.get("summary")),
        "decisions": _strings(data, "decisions"),
        "steps": steps,
        "files": files,
        "citations": [c.as_dict() for c in extract_citations(codebase, plan.markdown)],
        "testing": _strings(data, "testing"),
        "risks": _strings(data, "risks"),
        "effort": {"size": size, "estimate": _text(effort.get("estimate"))}
        if size in _SIZES
        else None,
        **({"implementation_checks": checks} if (checks := implementation_checks(plan)) else {}),
    }


def implementation_checks(plan: Plan) -> list[dict[str, Any]]:
    """The finished checks of an implementation against this version, oldest first: each
    step's status and evidence (path:line), the unplanned files, the tests, the rules broken,
    and what moved since the check before (conversations.implementation)."""
    out = []
    for check in plan.implementation_checks.filter(status="done").order_by("number"):
        report = check.report if isinstance(check.report, dict) else {}
        steps = []
        for row in report.get("steps") or []:
            judgement = row.get("judgement") or None
            steps.append(
                {
                    "number": row.get("number"),
                    "title": _text(row.get("title")),
                    "status": row.get("status"),
                    "by": row.get("by", "app"),
                    "reason": _text(row.get("reason")),
                    "evidence": [
                        {
                            "path": e.get("path"),
                            "line": e.get("line") or None,
                            "what": e.get("what"),
                            "hunk": [str(x) for x in e.get("hunk") or []],
                        }
                        for e in row.get("evidence") or []
                    ],
                    "sketch": [str(x) for x in row.get("sketch") or []],
                    "judgement": {
                        **_answer(judgement),
                        "undone": _answer(undone) if (undone := judgement.get("undone")) else None,
                    }
                    if judgement
                    else None,
                }
            )
        out.append(
            {
                "number": check.number,
                "source": check.source,
                "label": _text(check.label),
                "codebase_version": check.codebase_version,
                "finished_at": check.finished_at.isoformat() if check.finished_at else None,
                "model": check.judged_by,
                "counts": report.get("counts") or {},
                "steps": steps,
                "unplanned": list(report.get("unplanned") or []),
                "tests": report.get("tests") or {},
                "rules_broken": list((report.get("rules") or {}).get("broken") or []),
                "moved": list(report.get("moved") or []),
                "previous": report.get("previous"),
            }
        )
    return out


def _answer(judgement: dict[str, Any]) -> dict[str, Any]:
    return {
        "equivalent": judgement.get("equivalent"),
        "reason": _text(judgement.get("reason")),
        "error": _text(judgement.get("error")),
    }


_CHECK_WORDS = {"done": "done", "partly": "partly", "not_done": "not done", "deviated": "deviated"}


def implementation_markdown(checks: list[dict[str, Any]]) -> str:
    """The checks as a markdown section (empty when there are none)."""
    if not checks:
        return ""
    out = ["## Implementation checks", ""]
    for check in checks:
        source = "newer version" if check["source"] == "version" else "diff"
        out += [f"### Check {check['number']}: {check['label']} ({source})", ""]
        for step in check["steps"]:
            where = ", ".join(
                code_span(f"{e['path']}:{e['line']}" if e["line"] else e["path"])
                for e in step["evidence"]
            )
            by = " (the model's judgement)" if step["by"] == "model" else ""
            out.append(
                f"{step['number']}. {step['title']} — {_CHECK_WORDS.get(step['status'], '?')}{by}"
                f": {step['reason']}" + (f" Evidence: {where}." if where else "")
            )
            out += _step_answers(step)
            out += _step_hunks(step)
        out.append("")
        if check["unplanned"]:
            files = ", ".join(code_span(p) for p in check["unplanned"])
            out += [f"Files changed that no step mentions: {files}", ""]
        for test in check["tests"].get("named") or []:
            state = "changed" if test.get("changed") else "not changed"
            out.append(f"- Test {code_span(test['path'])} (named in the plan): {state}")
        for rule in check["rules_broken"]:
            paths = ", ".join(code_span(p) for p in rule.get("paths") or [])
            out.append(f"- Critical rule broken: {_text(rule.get('text'))} ({paths})")
        for m in check["moved"]:
            out.append(
                f"- Step {m['number']} moved from {_CHECK_WORDS.get(m['from'], '?')} to "
                f"{_CHECK_WORDS.get(m['to'], '?')} since check {check['previous']}"
            )
        out.append("")
    return "\n".join(out)


def _said(answer: dict[str, Any]) -> str:
    if answer.get("error"):
        return answer["error"]
    verdict = "equivalent" if answer.get("equivalent") else "not equivalent"
    return f"{verdict}. {answer.get('reason') or ''}".strip()


def _step_answers(step: dict[str, Any]) -> list[str]:
    """The model's answers on a step, its words on one line each (already made safe): on the
    change made and, after a yes, on that change undone (the control)."""
    judgement = step.get("judgement")
    if not judgement:
        return []
    pad = " " * len(f"{step['number']}. ")
    out = ["", f"{pad}The model, on the change made: {_said(judgement)}"]
    if judgement.get("undone"):
        out.append(f"{pad}The model, on this change undone: {_said(judgement['undone'])}")
    return out


def _diff_block(label: str, lines: list[str], pad: str) -> list[str]:
    """`lines` as a fenced diff inside a list item (indented by `pad`, the width of its
    number), the fence longer than any run of backticks the code holds."""
    text = "\n".join(lines)
    fence = "```"
    while fence in text:
        fence += "`"
    return ["", f"{pad}{label}", "", f"{pad}{fence}diff", *(f"{pad}{x}" for x in lines),
            f"{pad}{fence}"]  # fmt: skip


def _step_hunks(step: dict[str, Any]) -> list[str]:
    """The evidence hunk of a step (the change made to its target), beside its sketch when it
    has one: what a reader of the export checks the status against."""
    made: list[str] = next((e["hunk"] for e in step.get("evidence") or [] if e.get("hunk")), [])
    if not made:
        return []
    pad = " " * len(f"{step['number']}. ")
    out = _diff_block("The plan's sketch:", step["sketch"], pad) if step.get("sketch") else []
    out += _diff_block("The change made:", made, pad)
    return [*out, ""]


def plan_with_checks(plan: Plan) -> str:
    """The plan's markdown with its implementation checks after it."""
    section = implementation_markdown(implementation_checks(plan))
    text = safe_markdown(plan.markdown).rstrip("\n") + "\n"
    return text + ("\n" + section if section else "")


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_STATUS_WORDS = {
    "exists": "exists",
    "new": "new file",
    "missing": "NOT IN THE CODEBASE",
    "invalid": "INVALID PATH",
}


def _file_line(f: dict[str, Any]) -> str:
    reason = f" — {f['reason']}" if f["reason"] else ""
    return f"- {code_span(f['path'])} — {f['action']} — {_STATUS_WORDS[f['status']]}{reason}"


def _bullets(heading: str, items: list[str]) -> list[str]:
    return [f"## {heading}", "", *(f"- {item}" for item in items), ""] if items else []


def _citation(c: dict[str, Any]) -> str:
    lines = str(c["start"]) if c["start"] == c["end"] else f"{c['start']}-{c['end']}"
    return code_span(f"{c['path']}:{lines}") + ("" if c["exists"] else " (not found)")


def github_issue(data: dict[str, Any]) -> str:
    """A GitHub-issue body: the summary, one `- [ ]` task per step, the files with status."""
    out = [data["summary"] or _text(data["plan"]["title"]), ""]
    if data["steps"]:
        out += ["## Tasks", ""]
        for step in data["steps"]:
            detail = f" — {step['detail']}" if step["detail"] else ""
            files = ", ".join(code_span(f["path"]) for f in step["files"])
            out.append(
                f"- [ ] **{step['title']}**{detail}" + (f" (files: {files})" if files else "")
            )
        out.append("")
    if data["files"]:
        out += ["## Files", "", *(_file_line(f) for f in data["files"]), ""]
    out += _bullets("Decisions", data["decisions"])
    out += _bullets("Testing", data["testing"])
    out += _bullets("Risks", data["risks"])
    if data["citations"]:
        out += ["## Code cited", "", *(f"- {_citation(c)}" for c in data["citations"]), ""]
    out.append(f"_Plan v{data['plan']['version']} from PlanAgents._")
    return "\n".join(out) + "\n"


def _ranges(path: str, citations: list[dict[str, Any]]) -> str:
    spans = sorted({(c["start"], c["end"]) for c in citations if c["exists"] and c["path"] == path})
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


PINS_NODE = "pinned_context"
"""The node of the message that records the pins a session's agents were shown
(agents.rules.session_pins)."""
PIN_TEXT_CHARS = 1200
"""How much of one pinned snippet the hand-off prompt repeats."""


def guidance(plan: Plan) -> dict[str, Any]:
    """The codebase's rules (enabled ones, critical first, with what the plan's own rules check
    and the human's overrides said of them) and the pins the plan was written with: those it
    records (`pins_used`), else those its session's agents were shown."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    broken = {
        v.get("rule_id"): _text(v.get("explanation"))
        for v in _list(_dict(data, "rules_check"), "violations")
        if isinstance(v, dict)
    }
    overridden: dict[Any, str] = {}
    for override in _list(data, "rules_overrides"):
        if isinstance(override, dict):
            for rule in _list(override, "rules"):
                if isinstance(rule, dict):
                    overridden[rule.get("rule_id")] = _text(override.get("reason"))
    rules = [
        {
            "text": _text(rule.text),
            "severity": rule.severity,
            "source": rule.source,
            "broken": broken.get(rule.pk, ""),
            "overridden": overridden.get(rule.pk, ""),
        }
        for rule in active_rules(plan.session.codebase)
    ]
    pins = [p for p in _list(data, "pins_used") if isinstance(p, dict)]
    if "pins_used" not in data:
        shown = (
            Message.objects.filter(session_id=plan.session_id, node=PINS_NODE)
            .order_by("seq")
            .values_list("data", flat=True)
            .first()
        )
        pins = [p for p in _list(shown or {}, "pins") if isinstance(p, dict)]
    return {"rules": rules, "pins": pins}


def _rule_line(rule: dict[str, Any]) -> str:
    mark = "[critical] " if rule["severity"] == Rule.Severity.CRITICAL else ""
    where = f" (from {code_span(rule['source'])})" if rule["source"] else ""
    line = f"- {mark}{rule['text']}{where}"
    if rule["overridden"]:
        line += f" — the plan breaks it; the human accepted that: {rule['overridden']}"
    elif rule["broken"]:
        line += f" — the plan's rules check says it breaks it: {rule['broken']}"
    return line


def _pin_lines(pin: dict[str, Any]) -> list[str]:
    label = f"[P{pin.get('number')}]"
    kind, title, text = str(pin.get("kind")), _text(pin.get("title")), str(pin.get("text") or "")
    if kind == "note":
        return [f"- {label} {_text(text)}"]
    if not pin.get("found", True):
        return [f"- {label} {code_span(title)}: could not be read when the plan was written"]
    if kind == "file":
        return [f"- {label} read {code_span(title)} before you start"]
    shown = text if len(text) <= PIN_TEXT_CHARS else text[:PIN_TEXT_CHARS] + "\n…"
    fence = "```"
    while fence in shown:
        fence += "`"
    return [f"- {label} {title}:", "", fence, shown, fence, ""]


def handoff_prompt(data: dict[str, Any], guide: dict[str, Any] | None = None) -> str:
    """A prompt to paste into a coding agent (Claude Code, Codex, Aider, Cursor): goal,
    constraints and the codebase's rules, the pinned context, files with line ranges, ordered
    steps, tests to write, done-criteria. `guide` is what `guidance` found.

    Only files that exist (or are to be created) are listed as files to work on; a path the
    codebase does not have is listed apart, as something to check, never as a file to edit."""
    guide = guide or {"rules": [], "pins": []}
    meta = data["plan"]
    real = [f for f in data["files"] if f["status"] in ("exists", "new")]
    unsure = [f for f in data["files"] if f["status"] in ("missing", "invalid")]
    out = [f"# Task: {_text(meta['title'])}", "", "## Goal", ""]
    out += [data["summary"] or _text(meta["task"]), "", f"Requested: {_text(meta['task'])}", ""]
    out += [
        "## Constraints and rules",
        "",
        "- Follow the steps in order; keep each change as small as the step needs.",
        "- Touch only the files listed below unless a step cannot be done otherwise; "
        "say so when you do.",
        "- Follow the codebase's existing conventions, style and test layout.",
        "- Do not invent files, functions or APIs: check they exist before relying on them.",
        *(f"- Decision to respect: {d}" for d in data["decisions"]),
    ]
    if meta["line_note"]:
        out.append(f"- Line numbers: {meta['line_note']}")
    out.append("")
    if guide["rules"]:
        out += [
            "## The codebase's rules",
            "",
            "The project's own rules, as the planning agents were given them. Do not break a "
            "[critical] one without the human's say-so.",
            "",
            *(_rule_line(rule) for rule in guide["rules"]),
            "",
        ]
    if guide["pins"]:
        out += ["## Pinned context", "", "What the project pinned for every plan on it:", ""]
        for pin in guide["pins"]:
            out += _pin_lines(pin)
        if out[-1]:
            out.append("")
    if real:
        out += ["## Files", ""]
        for f in real:
            ranges = _ranges(f["path"], data["citations"])
            where = f" (lines {ranges})" if ranges else ""
            verb = "create" if f["status"] == "new" else f["action"]
            why = f" — {f['reason']}" if f["reason"] else ""
            out.append(f"- {code_span(f['path'])}{where}: {verb}{why}")
        out.append("")
    if unsure:
        out += [
            "## Paths the plan named that are not in the codebase",
            "",
            "Do not assume these exist; find the right file or ask before acting.",
            "",
            *(f"- {code_span(f['path'])} ({_STATUS_WORDS[f['status']].lower()})" for f in unsure),
            "",
        ]
    if data["steps"]:
        out += ["## Steps", ""]
        for step in data["steps"]:
            detail = f" — {step['detail']}" if step["detail"] else ""
            out.append(f"{step['number']}. {step['title']}{detail}")
            known = [f["path"] for f in step["files"] if f["status"] in ("exists", "new")]
            if known:
                out.append("   Files: " + ", ".join(code_span(p) for p in known))
        out.append("")
    out += _bullets("Tests to write", data["testing"])
    out += _bullets("Risks to guard against", data["risks"])
    out += [
        "## Done when",
        "",
        "- Every step above is implemented.",
        "- The tests above are written and pass, and the existing test suite still passes.",
        "- The linters and type checker the project uses pass.",
        "- No file outside the list above changed without a stated reason.",
        "",
    ]
    return "\n".join(out)
