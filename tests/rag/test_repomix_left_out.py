"""A first upload that just works: an ordinary `npx repomix` pack (security check on, the
default) lacks the files the check found secrets in while its directory listing still names
them (as it names binary files). Such a pack is indexed with a note naming those files and
why; only a pack that is really cut off (it ends mid-file, or lacks most of what it lists) is refused.

`secret-left-out.xml` / `.json` are real Repomix 1.18.1 output, made with its defaults from a
four-file project whose `shop/settings.py` holds a database URL with a password:

    mkdir -p shop && printf 'DATABASE_URL = "postgres://shop:correct-horse-battery@db/x"\\n' \\
        > shop/settings.py   # plus shop/cart.py, shop/test_cart.py, README.md
    repomix --quiet -o secret-left-out.xml . && repomix --quiet --style json -o secret-left-out.json .
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.indexing import index_codebase
from rag.models import Codebase
from rag.parsers.listing import incomplete
from rag.parsers.repomix import parse_pack

pytestmark = pytest.mark.django_db

LEFT_OUT = "shop/settings.py"


@pytest.fixture(autouse=True)
def dispatched(monkeypatch):
    calls = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: calls.append((job, ids)))
    return calls


@pytest.mark.parametrize("name", ["secret-left-out.xml", "secret-left-out.json"])
def test_a_default_repomix_pack_missing_what_its_security_check_dropped_is_not_incomplete(
    pack_bytes, name
):
    pack = parse_pack(pack_bytes(name))

    assert LEFT_OUT not in [f.path for f in pack.files]
    assert pack.left_out == [LEFT_OUT]
    assert incomplete([pack]) == ""
    note = next(w for w in pack.warnings if LEFT_OUT in w)
    assert "Repomix left 1 file(s) its directory listing names out of the pack" in note
    assert "security check on (the default)" in note and "--no-security-check" in note


def test_the_upload_is_indexed_with_a_note_naming_the_left_out_file(
    alice_client, alice, pack_bytes, dispatched
):
    response = alice_client.post(
        "/codebases/upload/",
        {
            "name": "",
            "pack": SimpleUploadedFile("repomix-output.xml", pack_bytes("secret-left-out.xml")),
        },
    )

    assert response.status_code == 302
    codebase = Codebase.objects.get(owner=alice)
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == Codebase.Status.READY
    warnings = " ".join(codebase.warnings)
    assert "names out of the pack: shop/settings.py" in warnings
    # One note for the file, not a second one calling the pack cut off.
    assert "cut off or split" not in warnings and warnings.count(LEFT_OUT) == 1


def test_a_pack_made_with_the_security_check_off_says_only_what_else_leaves_files_out(
    pack_bytes,
):
    """Binary or undecodable content is left out with the check off too."""
    text = pack_bytes("secret-left-out.xml").decode()
    off = text.replace(
        "- Files matching default ignore patterns are excluded\n",
        "- Files matching default ignore patterns are excluded\n"
        "- Security check has been disabled - content may contain sensitive information\n",
    )
    assert off != text
    pack = parse_pack(off)
    assert pack.left_out == [LEFT_OUT] and incomplete([pack]) == ""
    note = next(w for w in pack.warnings if LEFT_OUT in w)
    assert "binary or not readable text" in note and "security check" not in note


def test_files_repomix_skips_by_name_are_not_missing(pack_bytes):
    """Repomix's binary-extensions list holds `.dat`: astropy's text tables are listed, never
    packed."""
    doc = json.loads(pack_bytes("secret-left-out.json"))
    doc["directoryStructure"] += "\ntables/stars.dat\nfonts/icon.woff2"
    pack = parse_pack(json.dumps(doc))
    assert pack.left_out == [LEFT_OUT]


def test_a_pack_cut_off_mid_file_is_refused_even_with_the_security_check_on(pack_bytes):
    text = pack_bytes("secret-left-out.xml").decode()
    cut = text[: text.index("def total") + 5]
    reason = incomplete([parse_pack(cut)])
    assert "is cut off" in reason and LEFT_OUT in reason


def test_a_pack_lacking_most_of_what_it_lists_is_refused_even_with_the_security_check_on(
    pack_bytes,
):
    doc = json.loads(pack_bytes("secret-left-out.json"))
    kept = sorted(doc["files"])[0]
    doc["files"] = {kept: doc["files"][kept]}  # 1 of the 4 listed files left
    pack = parse_pack(json.dumps(doc))
    assert pack.left_out == []
    reason = incomplete([pack])
    assert "names 3 file(s) that are not in it, most of what it lists" in reason
    assert "security check" not in reason


def test_a_pack_without_its_summary_says_nothing_of_the_check_and_is_judged_as_before(
    pack_bytes,
):
    doc = json.loads(pack_bytes("secret-left-out.json"))
    del doc["fileSummary"]
    reason = incomplete([parse_pack(json.dumps(doc))])
    assert LEFT_OUT in reason
    # Packing again the same way gives the same pack: the refusal says what else it may be.
    assert "files its security check finds secrets in" in reason


def test_a_listing_of_the_whole_repository_beside_include_patterns_is_not_incomplete(
    pack_bytes,
):
    """`--include 'shop/cart.py' --include-full-directory-structure`: the listing shows every
    file, the pack holds what --include chose, and its notes say so."""
    doc = json.loads(pack_bytes("secret-left-out.json"))
    doc["fileSummary"]["notes"] += (
        "\n- Only files matching these patterns are included: shop/cart.py"
    )
    doc["files"] = {"shop/cart.py": doc["files"]["shop/cart.py"]}
    pack = parse_pack(json.dumps(doc))
    assert incomplete([pack]) == ""
    assert sorted(pack.left_out) == ["README.md", LEFT_OUT, "shop/test_cart.py"]
    assert any("--include patterns chose" in w for w in pack.warnings)
