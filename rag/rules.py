"""Planning rules of a codebase: detected from the files a repository writes for its
contributors and coding agents (AGENTS.md, CONTRIBUTING.md, .cursorrules, …) or written by the
user, each `critical` or `normal`. Rules reach every agent prompt as one short numbered list;
`@file:path` in a rule shows that file's text with it, bounded.

A detected file becomes a few rule entries (its bullets, with the heading they sit under), never
the whole file: a long CONTRIBUTING.md would fill a small model's window on its own."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from rag.models import Codebase, CodeFile, Rule
from rag.paths import FileSet

RULE_CHARS = 2000
"""Longest rule a user may write."""
ENTRY_CHARS = 240
"""Longest detected entry; a longer bullet is cut at a word."""
ENTRIES_PER_FILE = 12
DETECT_FILES = 8
"""Rule files read per codebase (shallowest first): a monorepo may have an AGENTS.md per package."""
RULES_CHARS = 900
"""The whole rules section of a prompt, @file texts included (about 250 tokens)."""
REF_CHARS = 300
"""One @file reference's text in a prompt."""
REF_PAGE_CHARS = 2000
"""One @file reference's text on the codebase page."""

TAIL_CHARS = 48
"""Kept free for the line that counts the rules left out."""
_BASENAMES = {"agents.md", "claude.md", "contributing.md", ".cursorrules"}
_FILE_REF = re.compile(r"@file:([^\s`'\"<>()\[\]]{1,500})")
_BULLET = re.compile(r"^\s{0,8}(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def is_rule_file(path: str) -> bool:
    lower = path.lower()
    name = lower.rsplit("/", 1)[-1]
    return (
        name in _BASENAMES
        or lower == ".github/copilot-instructions.md"
        or lower.endswith("/.github/copilot-instructions.md")
        or "/.cursor/rules/" in f"/{lower}"
    )


def detect(codebase: Codebase) -> int:
    """Turn the codebase's rule files into rule entries, once per file: an entry the user edited,
    disabled or deleted is not detected again. Returns how many entries were added."""
    seen = set(codebase.rules.exclude(source="").values_list("source", flat=True).distinct())
    # Narrowed in SQL first: the codebase page calls this on every view of a large codebase.
    near = Q(path__icontains=".cursor/rules/") | Q(path__iendswith="copilot-instructions.md")
    for name in _BASENAMES:
        near |= Q(path__iendswith=name)
    rows = codebase.files.filter(near, withheld_reason="").values_list("path", flat=True)
    candidates = [p for p in rows if is_rule_file(p) and p not in seen]
    candidates.sort(key=lambda p: (p.count("/"), p))
    added = 0
    # The same file may be detected by two page views at once: one transaction each, and a
    # second look inside it, keep the entries single.
    for path in candidates[: max(0, DETECT_FILES - len(seen))]:
        with transaction.atomic():
            if codebase.rules.filter(source=path).exists():
                continue
            content = codebase.files.values_list("content", flat=True).get(path=path)
            entries = entries_from(content)
            if not entries:
                # Remember the file was read, so an empty one is not read on every page view.
                entries = [f"(nothing to follow was found in {path})"]
                Rule.objects.create(codebase=codebase, text=entries[0], source=path, enabled=False)
                continue
            Rule.objects.bulk_create(
                Rule(codebase=codebase, text=text, source=path, position=n)
                for n, text in enumerate(entries)
            )
            added += len(entries)
    return added


def entries_from(text: str) -> list[str]:
    """A rule file as at most ENTRIES_PER_FILE short entries: its bullets, each prefixed with
    the heading it sits under; a file with no bullets gives its first paragraphs."""
    bullets: list[str] = []
    paragraphs: list[str] = []
    heading = ""
    block: list[str] = []
    fenced = False
    lines = _without_front_matter(text[:200_000].splitlines())
    for raw in lines:
        line = raw.rstrip()
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        if not line.strip():
            _flush(block, paragraphs)
            continue
        if found := _HEADING.match(line):
            _flush(block, paragraphs)
            heading = found.group(1).strip()
            continue
        if found := _BULLET.match(line):
            _flush(block, paragraphs)
            item = found.group(1).strip()
            if item:
                bullets.append(f"{heading}: {item}" if heading else item)
            continue
        if bullets and raw.startswith((" ", "\t")) and not block:
            bullets[-1] += " " + line.strip()  # a bullet's wrapped continuation
            continue
        block.append(line.strip())
    _flush(block, paragraphs)
    chosen = bullets or paragraphs
    return [_clip(_tidy(e), ENTRY_CHARS) for e in chosen if _tidy(e)][:ENTRIES_PER_FILE]


def _without_front_matter(lines: list[str]) -> list[str]:
    if lines and lines[0].strip() == "---":
        for n, line in enumerate(lines[1:40], start=1):
            if line.strip() == "---":
                return lines[n + 1 :]
    return lines


def _flush(block: list[str], into: list[str]) -> None:
    if block:
        into.append(" ".join(block))
        block.clear()


def _tidy(text: str) -> str:
    return " ".join(text.replace("**", "").split())


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


# ---------------------------------------------------------------- @file references


@dataclass(frozen=True)
class Ref:
    """One `@file:path` of a rule: the file's text (bounded), or why it is unresolved."""

    path: str
    found: bool
    text: str = ""
    truncated: bool = False
    reason: str = ""


def references(text: str) -> list[str]:
    return list(dict.fromkeys(m.group(1).rstrip(".,;:") for m in _FILE_REF.finditer(text)))


def resolve_refs(
    codebase: Codebase, text: str, limit: int = REF_PAGE_CHARS, fileset: FileSet | None = None
) -> list[Ref]:
    """The files a rule names: a missing one is reported as unresolved, not an error."""
    names = references(text)
    if not names:
        return []
    if fileset is None:
        fileset = FileSet(codebase.files.values_list("path", flat=True))
    refs = []
    for name in names:
        real = fileset.resolve(name).path
        row = (
            CodeFile.objects.filter(codebase=codebase, path=real)
            .values_list("content", "withheld_reason")
            .first()
            if real
            else None
        )
        if row is None:
            refs.append(Ref(name, False, reason="no such file in this codebase"))
        elif row[1]:
            refs.append(Ref(real or name, False, reason="withheld: it may hold a secret"))
        else:
            content = row[0]
            refs.append(Ref(real or name, True, content[:limit], len(content) > limit))
    return refs


# ---------------------------------------------------------------- prompts


@dataclass(frozen=True)
class PromptRule:
    """A rule as the agents see it, numbered as in the prompt (R1, R2, …)."""

    number: int
    rule_id: int
    text: str
    severity: str

    @property
    def label(self) -> str:
        return f"R{self.number}"


def active_rules(codebase: Codebase) -> list[Rule]:
    """Enabled rules, critical ones first (they are what the prompt keeps when it must cut)."""
    rules = list(codebase.rules.filter(enabled=True))
    return sorted(rules, key=lambda r: (r.severity != Rule.Severity.CRITICAL, r.source, r.position))


def prompt_rules(codebase: Codebase, limit: int = RULES_CHARS) -> tuple[str, list[PromptRule]]:
    """The rules section of a prompt and the rules it holds; ("", []) with no rules. Rules that
    do not fit in `limit` are left out (and counted), never cut mid-way."""
    rules = active_rules(codebase)
    if not rules:
        return "", []
    head = "Codebase rules (a plan must follow them; [critical] ones above all):"
    used = len(head)
    lines: list[str] = []
    kept: list[PromptRule] = []
    with_refs = any("@file:" in r.text for r in rules)
    fileset = FileSet(codebase.files.values_list("path", flat=True)) if with_refs else None
    for rule in rules:
        number = len(kept) + 1
        mark = " [critical]" if rule.severity == Rule.Severity.CRITICAL else ""
        line = f"R{number}{mark}: {_clip(_tidy(rule.text), 400)}"
        for ref in resolve_refs(codebase, rule.text, REF_CHARS, fileset):
            if ref.found:
                fence = "```"
                while fence in ref.text:
                    fence += "`"
                more = "\n…" if ref.truncated else ""
                line += f"\n  {ref.path} (untrusted):\n{fence}\n{ref.text}{more}\n{fence}"
            else:
                line += f"\n  ({ref.path}: unresolved, {ref.reason})"
        if used + len(line) + 1 > limit - TAIL_CHARS:
            continue  # a shorter one further down may still fit
        lines.append(line)
        used += len(line) + 1
        kept.append(PromptRule(number, rule.pk, rule.text, rule.severity))
    if not kept:
        return "", []
    left = len(rules) - len(kept)
    tail = [f"({left} more rule(s) left out for length.)"] if left else []
    return "\n".join([head, *lines, *tail]), kept
