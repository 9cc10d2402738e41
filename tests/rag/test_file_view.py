import pytest

pytestmark = pytest.mark.django_db


def test_it_shows_the_file_with_line_anchors(alice_client, indexed):
    response = alice_client.get(f"/codebases/{indexed.pk}/file/todo/api.py")
    html = response.content.decode()
    assert response.status_code == 200
    lines = indexed.files.get(path="todo/api.py").line_count
    assert html.count('<div class="line') == lines
    assert '<div class="line" id="L12"><a class="ln" href="#L12">12</a>' in html


def test_it_escapes_the_content(alice_client, indexed):
    html = alice_client.get(f"/codebases/{indexed.pk}/file/todo/export.py").content.decode()
    assert "&lt;/file&gt;" in html
    assert '<file path="' not in html


def test_it_highlights_a_range(alice_client, indexed):
    html = alice_client.get(f"/codebases/{indexed.pk}/file/todo/api.py?hl=12-14").content.decode()
    assert html.count('class="line hl"') == 3
    assert '<div class="line hl" id="L12">' in html


def test_it_ignores_a_malformed_range(alice_client, indexed):
    response = alice_client.get(f"/codebases/{indexed.pk}/file/todo/api.py?hl=abc")
    assert response.status_code == 200
    assert b'class="line hl"' not in response.content


def test_it_404s_for_a_missing_file(alice_client, indexed):
    assert alice_client.get(f"/codebases/{indexed.pk}/file/nope.py").status_code == 404


def test_it_hides_other_peoples_files(client, bob, indexed):
    client.force_login(bob)
    assert client.get(f"/codebases/{indexed.pk}/file/todo/api.py").status_code == 404


@pytest.mark.parametrize("value", ["9" * 5000, "1-" + "9" * 5000, "²", "L١٢"])
def test_it_ignores_huge_or_odd_numbers_in_a_range(alice_client, indexed, value):
    response = alice_client.get(f"/codebases/{indexed.pk}/file/todo/api.py", {"hl": value})
    assert response.status_code == 200
    assert b'class="line hl"' not in response.content


def test_it_says_when_a_file_is_withheld_from_the_agents(alice_client, indexed):
    indexed.files.filter(path="todo/api.py").update(withheld_reason="Looks like a key.")
    html = alice_client.get(f"/codebases/{indexed.pk}/file/todo/api.py").content.decode()
    assert "Withheld from the agents: Looks like a key." in html
