from rag import import_graph, profile
from rag.symbols import Import
from tests.rag.profile_projects import project


def graph_of(name: str):
    return profile.analyze(profile.sources(project(name))).graph


def test_python_relative_absolute_and_submodule_imports_resolve_to_files():
    edges = graph_of("shop").edges
    assert edges["shop/views.py"] == ["shop/models.py", "shop/utils.py"]  # `from . import utils`
    assert edges["shop/api/handlers.py"] == ["shop/models.py", "shop/utils.py"]
    assert edges["shop/tasks.py"] == ["shop/models.py"]
    assert edges["tests/test_models.py"] == ["shop/models.py"]
    assert edges["shop/__main__.py"] == ["shop/cli.py"]


def test_third_party_and_standard_imports_are_counted_apart_by_importing_files():
    graph = graph_of("shop")
    assert graph.external == {"django": 3, "celery": 1}
    assert graph.stdlib["decimal"] == 1
    assert graph.stdlib["argparse"] == 1
    assert "shop" not in graph.external


def test_importers_are_the_edges_reversed():
    importers = graph_of("shop").importers()
    assert importers["shop/models.py"] == [
        "shop/api/handlers.py",
        "shop/tasks.py",
        "shop/views.py",
        "tests/test_models.py",
    ]


def test_typescript_imports_resolve_extensions_index_files_and_js_spellings():
    graph = graph_of("webapp")
    assert graph.edges["src/app.ts"] == ["src/components/index.ts", "src/util.ts"]
    assert graph.edges["src/components/index.ts"] == ["src/components/Button.tsx"]
    assert graph.edges["lib/server.js"] == ["src/app.ts"]
    assert graph.edges["__tests__/app.spec.js"] == ["src/app.ts"]
    assert list(graph.external.items()) == [("express", 1), ("react", 1)]  # ties by name
    assert graph.stdlib == {"fs": 1, "path": 1}


def test_go_imports_under_the_module_path_link_to_the_package_files_but_not_its_tests():
    graph = graph_of("gosvc")
    assert graph.edges["main.go"] == ["internal/store/store.go"]
    assert graph.edges["cmd/tool/main.go"] == ["internal/store/store.go"]
    assert graph.external == {"github.com/gin-gonic/gin": 1}
    assert graph.stdlib == {"fmt": 1, "testing": 1}


def test_java_imports_resolve_by_package_path():
    graph = graph_of("javaapp")
    assert graph.edges["src/main/java/com/acme/App.java"] == [
        "src/main/java/com/acme/cart/Cart.java"
    ]
    assert graph.stdlib == {"java.util": 3}


def test_rust_mod_declarations_and_crate_paths_resolve():
    graph = graph_of("rustcli")
    assert graph.edges["src/main.rs"] == ["src/cli.rs"]


def test_resolution_by_hand_for_the_harder_cases():
    paths = [
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/sub/__init__.py",
        "src/pkg/sub/leaf.py",
        "scripts/run.py",
        "scripts/helpers.py",
        "web/a.ts",
        "web/b/index.tsx",
        "src/lib/x.ts",
        "java/com/acme/util/A.java",
        "java/com/acme/util/B.java",
        "java/com/acme/Main.java",
    ]
    imports = {
        # src layout: the module's name starts under src/
        "src/pkg/sub/leaf.py": ("python", [Import("pkg.core", 1), Import("...", 2, ("x",))]),
        # a script's sibling is on sys.path
        "scripts/run.py": ("python", [Import("helpers", 1), Import("pkg.sub", 2, ("leaf",))]),
        "web/a.ts": ("typescript", [Import("./b", 1), Import("@/lib/x", 2), Import("@scope/p/x", 3)]),
        "java/com/acme/Main.java": ("java", [Import("com.acme.util.*", 1), Import("com.acme.util.A.go", 2)]),
    }  # fmt: skip
    graph = import_graph.build(paths, imports)
    assert graph.edges["src/pkg/sub/leaf.py"] == [
        "src/pkg/core.py"
    ]  # `from ... import x`: no such file
    assert graph.edges["scripts/run.py"] == ["scripts/helpers.py", "src/pkg/sub/leaf.py"]
    assert graph.edges["web/a.ts"] == ["src/lib/x.ts", "web/b/index.tsx"]
    assert graph.external == {"@scope/p": 1}
    assert graph.edges["java/com/acme/Main.java"] == [
        "java/com/acme/util/A.java",
        "java/com/acme/util/B.java",
    ]


def test_an_import_that_climbs_above_the_top_resolves_to_nothing():
    graph = import_graph.build(["a.ts"], {"a.ts": ("typescript", [Import("../../x", 1)])})
    assert graph.edges == {}
    assert graph.external == {}
