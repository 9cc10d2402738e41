import pytest

from rag import navigation, profile
from rag.navigation import Navigator
from tests.rag.profile_projects import project


@pytest.fixture
def shop(tmp_path) -> Navigator:
    profile.write(tmp_path, profile.analyze(profile.sources(project("shop"))))
    return Navigator(tmp_path)


def test_find_symbol_gives_each_definition_with_its_location(shop):
    result = shop.find_symbol("Cart")
    assert result.match == "exact"
    assert [h.location for h in result.hits] == ["shop/models.py:8-19"]
    assert result.hits[0].kind == "class"
    assert result.message == "1 definition(s) of `Cart`."


def test_find_symbol_falls_back_to_case_then_spelling_then_qualified_names(shop):
    assert shop.find_symbol("cart").match == "case-insensitive"
    spelled = shop.find_symbol("resolveRedirects")
    assert spelled.match == "spelling"
    assert [h.location for h in spelled.hits] == ["shop/utils.py:5-6"]
    qualified = shop.find_symbol("Cart.total")
    assert qualified.match == "qualified"
    assert [h.location for h in qualified.hits] == ["shop/models.py:14-15"]
    by_module = shop.find_symbol("shop.utils.format_price")
    assert [h.location for h in by_module.hits] == ["shop/utils.py:1-2"]
    assert shop.find_symbol("`format_price()`").match == "exact"


def test_a_symbol_that_is_not_defined_gets_suggestions_not_an_exception(shop):
    result = shop.find_symbol("Crat")
    assert not result.found
    assert result.match == "none"
    assert "Cart" in result.suggestions
    # Something close exists, so the message makes no claim that nothing is defined.
    assert result.message == "No definition matches `Crat` as written. Did you mean: Cart?"
    nothing = shop.find_symbol("zzqxv")
    assert nothing.message == "No symbol named `zzqxv` is defined in this codebase."
    assert shop.find_symbol("total_of_everything").suggestions == []
    assert shop.find_symbol("   ").found is False


def test_a_qualifier_that_does_not_fit_answers_with_the_name_and_says_so(shop):
    result = shop.find_symbol("CartItem.total")
    assert result.match == "name"
    assert [h.location for h in result.hits] == ["shop/models.py:14-15"]
    assert "No `CartItem` here defines or inherits `total`" in result.message
    assert not shop.find_symbol("CartItem.no_such_method").found


def test_find_references_lists_where_a_name_is_used_source_first(shop):
    result = shop.find_references("Cart")
    locations = [r.location for r in result.references]
    assert locations == [
        "shop/api/handlers.py:3-3",
        "shop/api/handlers.py:8-8",
        "shop/models.py:23-23",
        "shop/tasks.py:3-3",
        "shop/tasks.py:8-8",
        "shop/views.py:4-4",
        "shop/views.py:8-8",
        "tests/test_models.py:1-1",
        "tests/test_models.py:5-5",
    ]
    assert result.files == 5
    assert [d.location for d in result.definitions] == ["shop/models.py:8-19"]
    assert shop.find_references("Cart", limit=2).total == 9


def test_find_references_of_a_method_by_its_qualified_name(shop):
    result = shop.find_references("Cart.total")
    assert "shop/tasks.py:8-8" in [r.location for r in result.references]


def test_find_references_of_an_unknown_name_suggests(shop):
    result = shop.find_references("formt_price")
    assert not result.found
    assert result.suggestions[0] == "format_price"
    assert "Did you mean: format_price" in result.message


def test_a_name_defined_but_never_used_says_so(shop):
    result = shop.find_references("resolve_redirects")
    assert not result.found
    assert (
        result.message
        == "`resolve_redirects` is defined but nothing else in the codebase names it."
    )


def test_outline_lists_a_files_definitions_nested(shop):
    result = shop.outline("shop/models.py")
    assert result.path == "shop/models.py"
    assert result.lines == 27
    assert [(e.name, e.kind, e.location, e.depth) for e in result.entries] == [
        ("TAX_RATE", "constant", "5-5", 0),
        ("Cart", "class", "8-19", 0),
        ("__str__", "method", "11-12", 1),
        ("total", "method", "14-15", 1),
        ("empty", "method", "17-19", 1),
        ("CartItem", "class", "22-27", 0),
        ("__str__", "method", "26-27", 1),
    ]


def test_outline_accepts_a_path_spelled_another_way(shop):
    assert shop.outline("./Shop/Models.py").path == "shop/models.py"
    assert shop.outline("api/handlers.py").path == "shop/api/handlers.py"


def test_outline_of_a_missing_file_suggests_real_ones(shop):
    result = shop.outline("shop/model.py")
    assert result.path is None
    assert result.suggestions[0] == "shop/models.py"
    assert result.message.startswith("No file `shop/model.py` in this codebase. Did you mean: ")


def test_outline_of_a_file_without_a_grammar_says_to_read_it(shop):
    result = shop.outline("pyproject.toml")
    assert result.found and not result.parsed
    assert result.entries == []
    assert "read it instead" in result.message


def test_related_gives_imports_importers_and_tests(shop):
    result = shop.related("shop/models.py")
    assert result.imports == []
    assert result.importers == [
        "shop/api/handlers.py",
        "shop/tasks.py",
        "shop/views.py",
        "tests/test_models.py",
    ]
    assert [(t.path, t.why) for t in result.tests] == [
        ("tests/test_models.py", "imports it and is named after it")
    ]
    utils = shop.related("shop/utils.py")
    assert [(t.path, t.why) for t in utils.tests] == [("tests/test_utils.py", "named after it")]
    assert shop.related("shop/views.py").imports == ["shop/models.py", "shop/utils.py"]


def test_related_of_a_missing_file_suggests(shop):
    result = shop.related("shop/modles.py")
    assert not result.found
    assert "shop/models.py" in result.suggestions


def test_an_index_without_symbols_answers_not_found(tmp_path):
    nav = Navigator(tmp_path)
    assert not nav.exists()
    assert not nav.find_symbol("Cart").found
    assert not nav.find_references("Cart").found
    assert not nav.outline("a.py").found
    assert not nav.related("a.py").found


def test_a_rebuilt_index_is_seen_at_once(tmp_path):
    files = {"a.py": "def first():\n    pass\n"}
    profile.write(tmp_path, profile.analyze(profile.sources(files)))
    nav = Navigator(tmp_path)
    assert nav.find_symbol("first").found
    assert nav.find_symbol("secnd").suggestions == []
    files = {"a.py": "def second():\n    pass\n"}
    profile.write(tmp_path, profile.analyze(profile.sources(files)))
    assert not nav.find_symbol("first").found
    assert nav.find_symbol("secnd").suggestions == ["second"]


@pytest.mark.parametrize(
    ("path", "tests"),
    [
        ("shop/cart.py", ["tests/test_cart.py", "tests/unittest_cart.py"]),
        ("store/store.go", ["store/store_test.go"]),
        ("src/util.ts", ["src/util.test.ts", "src/util.spec.ts"]),
        ("src/com/acme/Cart.java", ["test/com/acme/CartTest.java"]),
        ("shop/__init__.py", ["tests/test_shop.py"]),
    ],
)
def test_tests_named_after_a_file(path, tests):
    candidates = [
        "tests/test_cart.py",
        "tests/unittest_cart.py",
        "tests/test_carts_extra.py",
        "store/store_test.go",
        "src/util.test.ts",
        "src/util.spec.ts",
        "test/com/acme/CartTest.java",
        "tests/test_shop.py",
    ]
    assert navigation.tests_named_after(path, candidates) == sorted(tests)


def test_an_index_folder_whose_name_looks_like_a_uri_still_opens(tmp_path):
    folder = tmp_path / "odd #1?mode=rw%20"
    profile.write(folder, profile.analyze(profile.sources({"a.py": "def f():\n    pass\n"})))
    assert Navigator(folder).find_symbol("f").found
