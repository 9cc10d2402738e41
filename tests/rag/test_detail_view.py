import pytest

from rag.models import Codebase, CodeFile

pytestmark = pytest.mark.django_db


def test_it_shows_progress_while_indexing(alice_client, alice):
    codebase = Codebase.objects.create(
        owner=alice, name="big", status="indexing", progress=42, progress_stage="embedding"
    )
    response = alice_client.get(f"/codebases/{codebase.pk}/")
    assert response.status_code == 200
    assert b'aria-valuenow="42"' in response.content and b"style=" not in response.content
    assert b"embedding" in response.content
    assert f'data-status-url="/codebases/{codebase.pk}/status.json"'.encode() in response.content
    assert b"js/codebase.js" in response.content
    assert b"Indexing is under way" in response.content


def test_it_shows_stats_and_the_top_level_of_the_file_tree_when_ready(alice_client, indexed):
    response = alice_client.get(f"/codebases/{indexed.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<b>10</b>files" in html
    assert "python 6" in html
    assert '<details data-folder="todo/"><summary>todo/ <span class="muted">5</span>' in html
    assert f'href="/codebases/{indexed.pk}/file/pyproject.toml"' in html
    # Deeper files are fetched when their folder opens, not rendered up front.
    assert "todo/api.py" not in html.split('id="file-tree"')[1]  # the profile may name it
    assert f'data-tree-url="/codebases/{indexed.pk}/tree.json"' in html


def test_the_tree_endpoint_lists_one_folder(alice_client, indexed):
    response = alice_client.get(f"/codebases/{indexed.pk}/tree.json", {"folder": "todo"})
    assert response.status_code == 200
    data = response.json()
    assert data["folder"] == "todo/"
    names = [e["name"] for e in data["entries"]]
    assert names == ["__init__.py", "api.py", "auth.py", "export.py", "storage.py"]
    api = data["entries"][1]
    assert api["url"] == f"/codebases/{indexed.pk}/file/todo/api.py"
    assert api["dir"] is False and api["lines"] > 0 and api["role"] == "source"


def test_the_page_without_javascript_opens_a_folder_by_query(alice_client, indexed):
    html = alice_client.get(f"/codebases/{indexed.pk}/", {"folder": "todo/"}).content.decode()
    assert f'href="/codebases/{indexed.pk}/file/todo/api.py"' in html
    assert "pyproject.toml" not in html.split('id="file-tree"')[1]


def test_the_page_renders_one_level_of_a_big_codebase(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="big", status="ready")
    CodeFile.objects.bulk_create(
        CodeFile(codebase=codebase, path=f"pkg{n % 40}/sub{n % 7}/m{n}.py", sha256="x", content="")
        for n in range(4000)
    )
    html = alice_client.get(f"/codebases/{codebase.pk}/").content.decode()
    assert html.count("<details data-folder") == 40
    assert "m3999.py" not in html and "sub0" not in html


def test_a_path_seventy_folders_deep_opens_level_by_level(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="deep", status="ready")
    deep = "/".join(f"d{n}" for n in range(70))
    CodeFile.objects.create(codebase=codebase, path=f"{deep}/leaf.py", sha256="x", content="")
    assert alice_client.get(f"/codebases/{codebase.pk}/").status_code == 200
    folder = deep.rsplit("/", 1)[0]
    data = alice_client.get(f"/codebases/{codebase.pk}/tree.json", {"folder": folder}).json()
    assert [e["path"] for e in data["entries"]] == [f"{deep}/"]
    data = alice_client.get(f"/codebases/{codebase.pk}/tree.json", {"folder": deep}).json()
    assert [e["name"] for e in data["entries"]] == ["leaf.py"]


def test_a_stored_path_with_a_line_break_does_not_break_the_page(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="odd", status="ready")
    CodeFile.objects.create(codebase=codebase, path="bad\nname.py", sha256="x", content="")
    CodeFile.objects.create(codebase=codebase, path="good.py", sha256="x", content="")
    response = alice_client.get(f"/codebases/{codebase.pk}/")
    assert response.status_code == 200
    assert f'href="/codebases/{codebase.pk}/file/good.py"' in response.content.decode()
    data = alice_client.get(f"/codebases/{codebase.pk}/tree.json").json()
    assert {e["name"]: e["url"] for e in data["entries"]}["bad\nname.py"] == ""


def test_it_lists_withheld_files_with_their_reason(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="s", status="ready")
    reason = "Looks like an environment file (.env)."
    CodeFile.objects.create(codebase=codebase, path=".env", sha256="x", withheld_reason=reason)
    CodeFile.objects.create(codebase=codebase, path="app.py", sha256="x")
    html = alice_client.get(f"/codebases/{codebase.pk}/").content.decode()
    assert "Withheld from the agents (1)" in html
    assert f"<code>.env</code> — {reason}" in html


def test_it_shows_the_uploads_warnings_escaped(alice_client, alice):
    warning = "The pack's directory listing names 1 file(s) that are not in it: <b>x.py</b>."
    codebase = Codebase.objects.create(owner=alice, name="w", status="ready", warnings=[warning])
    html = alice_client.get(f"/codebases/{codebase.pk}/").content.decode()
    assert "Worth knowing about this upload" in html
    assert "names 1 file(s) that are not in it: &lt;b&gt;x.py&lt;/b&gt;" in html


def test_the_tree_endpoint_hides_other_peoples_codebases(alice_client, bob):
    codebase = Codebase.objects.create(owner=bob, name="theirs", status="ready")
    assert alice_client.get(f"/codebases/{codebase.pk}/tree.json").status_code == 404


def test_it_shows_why_indexing_failed(alice_client, alice):
    codebase = Codebase.objects.create(
        owner=alice, name="bad", status="failed", error="Expected a Repomix pack but found <b>"
    )
    response = alice_client.get(f"/codebases/{codebase.pk}/")
    assert b"Expected a Repomix pack but found &lt;b&gt;" in response.content


def test_it_hides_other_peoples_codebases(alice_client, bob):
    codebase = Codebase.objects.create(owner=bob, name="secret")
    assert alice_client.get(f"/codebases/{codebase.pk}/").status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "/codebases/abc/",
        "/codebases/%C2%B2/",
        "/codebases/99999999999999999999/",
        "/codebases/" + "9" * 5000 + "/",
        "/codebases/99999999999999999999/status.json",
        "/codebases/" + "9" * 5000 + "/tree.json",
        "/codebases/" + "9" * 5000 + "/file/a.py",
    ],
)
def test_crafted_ids_are_not_found(alice_client, url):
    assert alice_client.get(url).status_code == 404


@pytest.mark.parametrize("action", ["version", "retry"])
def test_crafted_ids_on_actions_are_not_found(alice_client, action):
    assert alice_client.post(f"/codebases/{'9' * 5000}/{action}/").status_code == 404


@pytest.mark.parametrize(
    "query",
    ["?folder=%00%FF", "?folder=" + "a/" * 5000, "?version=%C2%B2", "?version=" + "9" * 5000],
)
def test_crafted_query_strings_still_show_the_page(alice_client, indexed, query):
    assert alice_client.get(f"/codebases/{indexed.pk}/{query}").status_code == 200
    assert alice_client.get(f"/codebases/{indexed.pk}/tree.json{query}").status_code == 200
