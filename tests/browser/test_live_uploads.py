"""What a user is told about a pack, in a real browser: a pack cut off part way through is
refused by default, naming the files its own listing promises but it lacks, and nothing is
kept; asked to index what is there, it is indexed with the same names as a warning; the same
pack uploaded twice is caught before it is indexed again, with a way to the codebase already
made from it."""

from __future__ import annotations

import pytest

from tests.browser.live import ROOT, log_in, needs_chromium, serve

pytestmark = needs_chromium()

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
WAIT = 120_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("live-uploads")) as running:
        yield running


def upload(page, server, path, name, if_incomplete=""):
    page.goto(server.url + "/codebases/upload/")
    page.fill("input[name=name]", name)
    page.set_input_files("input[type=file]", str(path))
    if if_incomplete:
        page.check(f"input[name=if_incomplete][value={if_incomplete}]")
    page.click("main form button[type=submit]")


def cut_off(tmp_path):
    text = PACK.read_text()
    cut = tmp_path / "cut-off.xml"
    # Cut in the middle of todo/export.py: the listing still names every file.
    cut.write_text(text[: text.index('<file path="todo/export.py">') + 60])
    return cut


def test_a_truncated_pack_is_refused_by_default_naming_what_is_missing(server, browser, tmp_path):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    log_in(page, server)
    upload(page, server, cut_off(tmp_path), "refused-pack")
    alert = page.locator("main [role=alert]")
    expect(alert).to_contain_text("This pack is incomplete, so nothing was kept")
    expect(alert).to_contain_text("names 3 file(s) that are not in it")
    for lost in ("todo/storage.py", "pyproject.toml", "README.md"):
        expect(alert).to_contain_text(lost)
    expect(alert).to_contain_text("its last file (todo/export.py) is cut off")
    # Still on the form, refuse still chosen, the other choice offered.
    assert page.url.endswith("/codebases/upload/")
    expect(page.locator("input[name=if_incomplete][value=refuse]")).to_be_checked()
    expect(page.locator("label", has_text="Index what is there and warn")).to_be_visible()
    page.goto(server.url + "/codebases/")
    expect(page.locator("main")).not_to_contain_text("refused-pack")  # nothing half-made
    page.close()


def test_a_truncated_pack_indexed_anyway_names_the_files_it_lost(server, browser, tmp_path):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    log_in(page, server)
    upload(page, server, cut_off(tmp_path), "cut-off", if_incomplete="warn")
    expect(page.locator(".tree")).to_be_visible()
    warnings = page.locator(".warnings")
    expect(warnings).to_contain_text("directory listing names")
    for lost in ("todo/storage.py", "pyproject.toml", "README.md"):
        expect(warnings).to_contain_text(lost)
    expect(warnings).not_to_contain_text("todo/auth.py")  # it is in the pack
    page.close()


def test_the_same_pack_twice_is_caught_and_points_at_the_first(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    log_in(page, server)
    upload(page, server, PACK, "first-copy")
    expect(page.locator(".tree")).to_be_visible()
    first = page.url

    upload(page, server, PACK, "second-copy")
    expect(page.locator("[role=alert]")).to_contain_text(
        "You already uploaded exactly these bytes as “first-copy”"
    )
    expect(page.locator("input[name=allow_duplicate]")).to_be_visible()
    page.locator("a.button", has_text="Open “first-copy”").click()
    assert page.url == first
    page.goto(server.url + "/codebases/")
    expect(page.locator("main")).to_contain_text("first-copy")
    expect(page.locator("main")).not_to_contain_text("second-copy")  # nothing indexed twice
    page.close()
