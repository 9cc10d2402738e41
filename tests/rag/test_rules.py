"""Planning rules of a codebase: detected from the repository's rule files, bounded, with
`@file:path` references resolved (or shown unresolved), and cut to a small prompt section."""

import hashlib

import pytest

from rag import rules
from rag.models import Codebase, CodeFile, Rule

pytestmark = pytest.mark.django_db


def ready_codebase(owner, files: dict[str, str], name: str = "repo") -> Codebase:
    codebase = Codebase.objects.create(owner=owner, name=name, status=Codebase.Status.READY)
    for path, content in files.items():
        CodeFile.objects.create(
            codebase=codebase,
            path=path,
            content=content,
            size=len(content),
            line_count=content.count("\n") + 1,
            sha256=hashlib.sha256(content.encode()).hexdigest(),
        )
    return codebase


@pytest.mark.parametrize(
    "path",
    [
        "AGENTS.md",
        "CLAUDE.md",
        "CONTRIBUTING.md",
        "docs/CONTRIBUTING.md",
        ".cursorrules",
        ".cursor/rules/testing.mdc",
        ".github/copilot-instructions.md",
    ],
)
def test_it_detects_rules_from_each_rule_file(alice, path):
    codebase = ready_codebase(
        alice, {path: "# Tests\n- Use pytest, not unittest.\n", "app.py": "print(1)\n"}
    )

    assert rules.detect(codebase) == 1

    rule = codebase.rules.get()
    assert rule.source == path
    assert rule.text == "Tests: Use pytest, not unittest."
    assert rule.enabled and rule.severity == Rule.Severity.NORMAL


def test_it_leaves_other_files_and_withheld_rule_files_alone(alice):
    codebase = ready_codebase(
        alice, {"README.md": "- Use pytest.\n", "rules.md": "- x\n", "AGENTS.md": "- secret\n"}
    )
    CodeFile.objects.filter(codebase=codebase, path="AGENTS.md").update(withheld_reason="a key")

    assert rules.detect(codebase) == 0
    assert not codebase.rules.exists()


def test_it_keeps_a_long_contributing_file_to_a_few_short_entries(alice):
    sections = []
    for n in range(40):
        sections.append(f"## Section {n}\n\nSome prose about section {n}.\n")
        sections.append(f"- Rule {n}: " + "very long words " * 40 + "\n")
        sections.append("```python\n- not a rule, code\n```\n")
    codebase = ready_codebase(alice, {"CONTRIBUTING.md": "\n".join(sections)})

    rules.detect(codebase)

    texts = list(codebase.rules.values_list("text", flat=True))
    assert len(texts) == rules.ENTRIES_PER_FILE
    assert all(len(t) <= rules.ENTRY_CHARS for t in texts)
    assert texts[0].startswith("Section 0: Rule 0:") and texts[0].endswith("…")
    assert not any("not a rule" in t for t in texts)


def test_a_file_without_bullets_gives_its_paragraphs(alice):
    text = "---\ndescription: front matter\n---\nAlways run ruff.\n\nNever edit generated/.\n"
    codebase = ready_codebase(alice, {".cursorrules": text})

    rules.detect(codebase)

    assert list(codebase.rules.values_list("text", flat=True)) == [
        "Always run ruff.",
        "Never edit generated/.",
    ]


def test_it_detects_a_file_once_so_disabled_and_deleted_rules_stay_so(alice):
    codebase = ready_codebase(alice, {"AGENTS.md": "- one\n- two\n"})
    rules.detect(codebase)
    first, second = codebase.rules.all()
    Rule.objects.filter(pk=first.pk).update(enabled=False)
    second.delete()

    assert rules.detect(codebase) == 0
    assert list(codebase.rules.values_list("text", "enabled")) == [("one", False)]


def test_a_file_reference_resolves_to_the_files_text(alice):
    codebase = ready_codebase(alice, {"docs/style.md": "Use black.\n"})

    [ref] = rules.resolve_refs(codebase, "Follow @file:docs/style.md.")

    assert ref.found and ref.path == "docs/style.md" and ref.text == "Use black.\n"


def test_a_missing_file_reference_is_unresolved_not_an_error(alice):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})

    [ref] = rules.resolve_refs(codebase, "See @file:docs/gone.md")

    assert not ref.found and ref.reason == "no such file in this codebase"
    Rule.objects.create(codebase=codebase, text="See @file:docs/gone.md")
    text, kept = rules.prompt_rules(codebase)
    assert "(docs/gone.md: unresolved, no such file in this codebase)" in text
    assert len(kept) == 1


def test_a_huge_referenced_file_is_bounded_in_the_prompt(alice):
    codebase = ready_codebase(alice, {"big.txt": "line of text\n" * 100_000})
    Rule.objects.create(codebase=codebase, text="Respect @file:big.txt", severity="critical")

    [ref] = rules.resolve_refs(codebase, "Respect @file:big.txt")
    text, kept = rules.prompt_rules(codebase)

    assert ref.truncated and len(ref.text) == rules.REF_PAGE_CHARS
    assert len(kept) == 1 and "R1 [critical]: Respect @file:big.txt" in text
    assert len(text) <= rules.RULES_CHARS


def test_the_prompt_section_is_bounded_with_critical_rules_first(alice):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})
    for n in range(30):
        Rule.objects.create(codebase=codebase, text=f"Normal rule number {n} " + "x" * 60)
    Rule.objects.create(codebase=codebase, text="Never touch legacy/", severity="critical")
    Rule.objects.create(codebase=codebase, text="Disabled rule", enabled=False)

    text, kept = rules.prompt_rules(codebase)

    assert len(text) <= rules.RULES_CHARS
    assert text.splitlines()[1] == "R1 [critical]: Never touch legacy/"
    assert kept[0].text == "Never touch legacy/"
    assert "Disabled rule" not in text
    assert f"({31 - len(kept)} more rule(s) left out for length.)" in text


def test_no_enabled_rules_means_no_prompt_section(alice):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})
    Rule.objects.create(codebase=codebase, text="Off", enabled=False)

    assert rules.prompt_rules(codebase) == ("", [])
