"""The impact map: the plan's files coloured by action, with their importers and imports from
the codebase's import graph, drawn as SVG that parses, escapes every label and stays bounded."""

import json
import xml.etree.ElementTree as ET

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from conversations import impact
from conversations.impact import PlanFile
from conversations.models import Plan, PlanningSession
from rag import navigation
from rag.import_graph import ImportGraph
from rag.indexing import index_codebase
from rag.navigation import FileRow, Navigator
from rag.services import create_codebase_from_upload

NS = {"svg": "http://www.w3.org/2000/svg"}
FILES = {
    "shop/cart.py": "from shop.prices import price\n\ndef total(items):\n    return sum(map(price, items))\n",
    "shop/prices.py": "def price(item):\n    return item.cost\n",
    "shop/views.py": "from shop.cart import total\n\ndef show(items):\n    return total(items)\n",
    "shop/old.py": "from shop.prices import price\n",
}
STRUCTURED = {
    "summary": "Discounts.",
    "steps": [{"title": "Apply", "detail": "", "files": ["shop/cart.py"]}],
    "files": [
        {"path": "shop/cart.py", "action": "modify", "reason": "Totals"},
        {"path": "shop/discount.py", "action": "create", "reason": "The rule"},
        {"path": "shop/old.py", "action": "delete", "reason": "Unused"},
    ],
}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def nodes(root: ET.Element) -> dict[str, tuple[str, str, str]]:
    """path or label → (kind, fill, id)."""
    found = {}
    for g in root.iterfind(".//svg:g[@data-id]", NS):
        kind = g.get("class", "").split()[1]
        rect, text = g.find("svg:rect", NS), g.find("svg:text", NS)
        assert rect is not None and text is not None
        key = g.get("data-path") or text.text or ""
        found[key] = (kind, rect.get("fill", ""), g.get("data-id", ""))
    return found


def edges(root: ET.Element, found: dict[str, tuple[str, str, str]]) -> set[tuple[str, str]]:
    by_id = {node_id: key for key, (_, _, node_id) in found.items()}
    return {
        (by_id[e.get("data-from", "")], by_id[e.get("data-to", "")])
        for e in root.iterfind(".//svg:path[@class='edge']", NS)
    }


@pytest.mark.django_db
def test_the_map_draws_the_plan_files_by_action_with_their_neighbours(user):
    pack = SimpleUploadedFile("shop.json", json.dumps({"files": FILES}).encode())
    codebase = create_codebase_from_upload(user, "shop", [pack])
    index_codebase(codebase.pk)
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Discounts", task="Add discounts",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    plan = Plan.objects.create(
        session=session, version=1, markdown="# Plan\n", structured=STRUCTURED
    )

    root = parse(impact.render_svg(impact.for_plan(plan)))
    found = nodes(root)
    assert found["shop/cart.py"][:2] == ("modify", impact.COLOURS["modify"])
    assert found["shop/discount.py"][:2] == ("create", impact.COLOURS["create"])
    assert found["shop/old.py"][:2] == ("delete", impact.COLOURS["delete"])
    assert found["shop/views.py"][0] == "neighbour"
    assert found["shop/prices.py"][0] == "neighbour"
    assert edges(root, found) == {
        ("shop/views.py", "shop/cart.py"),  # views imports cart
        ("shop/cart.py", "shop/prices.py"),
        ("shop/old.py", "shop/prices.py"),  # one node for prices, two edges into it
    }


@pytest.mark.django_db
def test_the_plan_page_shows_the_impact_map(client, user):
    pack = SimpleUploadedFile("shop.json", json.dumps({"files": FILES}).encode())
    codebase = create_codebase_from_upload(user, "shop", [pack])
    index_codebase(codebase.pk)
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Discounts", task="Add discounts",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    Plan.objects.create(session=session, version=1, markdown="# Plan\n", structured=STRUCTURED)
    client.force_login(user)
    page = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    start = page.index("<svg")
    root = parse(page[start : page.index("</svg>", start) + len("</svg>")])
    assert nodes(root)["shop/views.py"][0] == "neighbour"


def test_a_path_with_markup_is_escaped():
    evil = 'x/<script>alert("hi")</script>.py'
    svg = impact.render_svg(impact.build([PlanFile(evil, "modify")], None))
    assert "<script>" not in svg
    root = parse(svg)
    assert evil in nodes(root)  # the data attribute holds the path, escaped and read back
    assert any("<script>" in (t.text or "") for t in root.iterfind(".//svg:title", NS))


def test_a_file_with_two_thousand_importers_draws_a_bounded_picture(tmp_path):
    hub = "core/util.py"
    importers = [f"pkg{n // 100}/mod{n}.py" for n in range(2000)]
    imports = [f"lib/dep{n}.py" for n in range(40)]
    paths = [hub, *importers, *imports]
    graph = ImportGraph(edges={**{p: [hub] for p in importers}, hub: imports})
    navigation.write(tmp_path, [FileRow(p, "python", "source", 1) for p in paths], {}, graph)
    related = impact.navigator_related(Navigator(tmp_path))

    built = impact.build([PlanFile(hub, "modify")], related)
    root = parse(impact.render_svg(built))
    found = nodes(root)
    assert len(found) <= 1 + 2 * (impact.PER_FILE + 1)
    assert found["+1995 more importers"][0] == "more"
    assert found["+35 more imports"][0] == "more"
    assert int(root.get("height", "0")) < 600
    shown = [k for k, (kind, _, _) in found.items() if kind == "neighbour"]
    assert len(shown) == 2 * impact.PER_FILE


def test_many_plan_files_are_capped_with_a_count():
    files = [PlanFile(f"f{n}.py", "modify") for n in range(impact.MAX_PLAN_FILES + 7)]
    found = nodes(parse(impact.render_svg(impact.build(files, None))))
    assert len([k for k, v in found.items() if v[0] == "modify"]) == impact.MAX_PLAN_FILES
    assert found["+7 more files"][0] == "more"


def test_a_codebase_without_an_import_graph_still_draws_the_plan_files(tmp_path):
    related = impact.navigator_related(Navigator(tmp_path))  # no symbols.sqlite there
    built = impact.build([PlanFile("a.py", "delete")], related)
    assert not built.graph_available
    assert nodes(parse(impact.render_svg(built))) == {
        "a.py": ("delete", impact.COLOURS["delete"], "f0")
    }
