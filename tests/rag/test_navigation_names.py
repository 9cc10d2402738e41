"""Names the way issue writers write them: `Class.method` (inherited from a mixin too),
`pkg.module.func`, `pkg/mod.py::Class.method`, a module-level `text_type = str`; an ambiguous
qualified name lists its candidates; "No symbol named" only when nothing close exists; and a
quoted line of code found word for word."""

import sqlite3

import pytest

from rag import navigation, profile
from rag.navigation import Navigator

FILES = {
    "pkg/__init__.py": "",
    "pkg/mixins.py": ("class ClosingMixin:\n    def close(self):\n        return 'closed'\n"),
    "pkg/base.py": (
        "from pkg.mixins import ClosingMixin\n"
        "\n"
        "\n"
        "class BaseSession(ClosingMixin):\n"
        "    def send(self):\n"
        "        return 1\n"
    ),
    "pkg/sessions.py": (
        "from pkg.base import BaseSession\n"
        "\n"
        "\n"
        "class Session(BaseSession):\n"
        "    def request(self, x):\n"
        "        x = str(x)\n"
        "        return self.send()\n"
    ),
    "pkg/compat.py": (
        "import sys\n"
        "\n"
        "if sys.version_info[0] == 2:\n"
        "    text_type = unicode\n"
        "else:\n"
        "    text_type = str\n"
        "FOO: int = 3\n"
        "__all__ = ['text_type']\n"
    ),
    "pkg/a.py": "class Cart:\n    def total(self):\n        return 1\n",
    "pkg/b.py": "class Cart:\n    def total(self):\n        return 2\n",
    "pkg/use.py": "from pkg.compat import text_type\n\nname = text_type(3)\n",
}


@pytest.fixture
def nav(tmp_path) -> Navigator:
    profile.write(tmp_path, profile.analyze(profile.sources(FILES)))
    return Navigator(tmp_path, texts=lambda needles: FILES.items())


def test_an_inherited_method_resolves_to_the_mixin_that_defines_it(nav):
    result = nav.find_symbol("Session.close")
    assert result.match == "inherited"
    assert [h.location for h in result.hits] == ["pkg/mixins.py:2-3"]
    assert "`Session` inherits `close` from `ClosingMixin`" in result.message
    # Through a dotted module path and through a file path too.
    assert nav.find_symbol("pkg.sessions.Session.close").hits == result.hits
    assert nav.find_symbol("pkg/sessions.py::Session.close").hits == result.hits


def test_a_dotted_module_path_and_a_file_path_with_names_resolve(nav):
    for written in ("pkg.sessions.Session.request", "pkg/sessions.py::Session.request",
                    "sessions.py::Session.request", "self.request", "Session.request(x)"):  # fmt: skip
        result = nav.find_symbol(written)
        assert [h.location for h in result.hits] == ["pkg/sessions.py:5-7"], written
    assert [h.location for h in nav.find_symbol("pkg.mixins.ClosingMixin").hits] == [
        "pkg/mixins.py:1-3"
    ]
    in_file = nav.find_symbol("pkg/b.py::Cart.total")
    assert [h.location for h in in_file.hits] == ["pkg/b.py:2-3"]
    assert not in_file.ambiguous


def test_an_ambiguous_qualified_name_lists_its_candidates_with_their_paths(nav):
    result = nav.find_symbol("Cart.total")
    assert result.ambiguous
    assert {h.location for h in result.hits} == {"pkg/a.py:2-3", "pkg/b.py:2-3"}
    assert result.message.startswith("`Cart.total` could mean 2 definitions: ")
    assert "(pkg/a.py:2-3)" in result.message and "(pkg/b.py:2-3)" in result.message


def test_a_qualifier_from_another_library_still_answers_with_the_real_method(nav):
    result = nav.find_symbol("requests.Session.request")
    assert result.found and result.match == "name"
    assert [h.location for h in result.hits] == ["pkg/sessions.py:5-7"]
    assert "No symbol named" not in result.message


def test_a_module_level_assignment_is_a_definition_find_symbol_finds(nav):
    result = nav.find_symbol("text_type")
    assert result.match == "exact"
    assert [(h.kind, h.location) for h in result.hits] == [
        ("variable", "pkg/compat.py:4-4"),
        ("variable", "pkg/compat.py:6-6"),
    ]
    assert nav.find_symbol("pkg.compat.text_type").found
    assert [h.kind for h in nav.find_symbol("FOO").hits] == ["constant"]
    assert not nav.find_symbol("__all__").found
    outline = nav.outline("pkg/compat.py")
    assert [(e.name, e.kind, e.depth) for e in outline.entries] == [
        ("text_type", "variable", 0),
        ("text_type", "variable", 0),
        ("FOO", "constant", 0),
    ]
    # Where it is used counts as references now that it is defined.
    assert "pkg/use.py:3-3" in [r.location for r in nav.find_references("text_type").references]


def test_no_symbol_named_is_said_only_when_nothing_close_exists(nav):
    close = nav.find_symbol("Session.closee")
    assert not close.found and "close" in close.suggestions
    assert not close.message.startswith("No symbol named")
    far = nav.find_symbol("Zyzzyva.qwxv")
    assert far.message == "No symbol named `Zyzzyva.qwxv` is defined in this codebase."


def test_find_references_of_an_inherited_method_shows_its_real_definition(nav):
    result = nav.find_references("Session.close")
    assert [d.location for d in result.definitions] == ["pkg/mixins.py:2-3"]


def test_an_index_written_before_bases_were_kept_still_answers(nav):
    with sqlite3.connect(nav.path) as db:
        db.execute("DROP TABLE bases")
    result = nav.find_symbol("Session.close")
    assert result.match == "name"  # no bases to follow: the method by its name
    assert [h.location for h in result.hits] == ["pkg/mixins.py:2-3"]


def test_find_text_finds_a_quoted_line_word_for_word_whitespace_aside(nav):
    result = nav.find_text("x=str( x )")
    assert [h.location for h in result.hits] == ["pkg/sessions.py:6"]
    assert result.message == "`x=str( x )` appears word for word at pkg/sessions.py:6."
    assert not nav.find_text("y = str(x)").found
    assert not nav.find_text("ax = str(x)").found  # no word cut in two
    assert nav.find_text("return self.send()").hits[0].location == "pkg/sessions.py:7"


def test_find_text_without_file_texts_says_it_did_not_look(tmp_path):
    profile.write(tmp_path, profile.analyze(profile.sources(FILES)))
    result = Navigator(tmp_path).find_text("x = str(x)")
    assert not result.found and not result.searched
    assert "not looked for" in result.message


def test_a_quoted_line_is_capped_and_never_a_pattern(nav):
    assert not nav.find_text("x" * (navigation.verbatim.MAX_QUOTE + 1)).searched
    assert not nav.find_text("a.*b(").found  # read as text, not a regular expression


def test_a_name_a_package_re_exports_resolves_through_its_module(nav):
    # `pkg.Session` as users of the package write it: defined in pkg/sessions.py.
    result = nav.find_symbol("pkg.Session.request")
    assert result.match == "qualified"
    assert [h.location for h in result.hits] == ["pkg/sessions.py:5-7"]
