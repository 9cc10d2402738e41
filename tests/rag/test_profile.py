import json

import pytest

from rag import index, navigation, profile, symbols
from rag.models import Codebase
from rag.navigation import Navigator
from rag.profile import Profile, SourceFile
from tests.rag.profile_projects import project


def profile_of(files) -> Profile:
    if isinstance(files, dict):
        files = profile.sources(files)
    return profile.analyze(files).profile


def test_a_django_project_is_profiled_from_its_manifests_and_files():
    found = profile_of(project("shop"))
    assert found.languages == [{"name": "python", "files": 12, "bytes": 1846, "share": 1.0}]
    assert found.stack == ["Django", "Celery", "pytest"]
    assert found.manifests == ["pyproject.toml", "requirements-dev.txt"]
    assert [(e.path, e.kind, e.detail) for e in found.entry_points] == [
        ("shop/cli.py", "console script", "shop-admin = shop.cli:main"),
        ("manage.py", "django", "python manage.py"),
        ("shop/__main__.py", "module", "python -m shop"),
    ]
    assert found.test_files == 2
    assert found.test_folders == [("tests/", 2)]
    assert found.test_patterns == ["test_*.py"]
    assert (found.test_command, found.test_command_source) == (
        "pytest",
        "pyproject.toml configures pytest",
    )
    assert found.layout[:3] == [("shop/", 9), ("tests/", 2), ("vendor/", 2)]
    assert found.most_imported[0] == ("shop/models.py", 4)
    assert found.external_imports == [("django", 3), ("celery", 1)]
    assert found.definitions_by_kind == {"function": 7, "method": 5, "class": 3, "constant": 1}


def test_vendored_code_is_neither_parsed_nor_counted_as_the_projects_language():
    found = profile_of(project("shop"))
    assert found.skipped == {"no grammar": 2, "vendored": 2}
    assert found.parsed == 12


def test_a_typescript_project():
    found = profile_of(project("webapp"))
    assert [(lang["name"], lang["files"]) for lang in found.languages] == [
        ("typescript", 5),
        ("javascript", 3),
    ]
    assert found.stack == ["React", "Express", "TypeScript", "Jest"]
    assert [(e.path, e.kind) for e in found.entry_points] == [
        ("lib/server.js", "package main"),
        ("lib/cli.js", "package main"),
    ]
    assert found.test_command == "yarn test"  # yarn.lock says which tool runs the script
    assert found.test_patterns == ["*.test.js/ts", "*.spec.js/ts", "__tests__/"]


def test_a_go_service():
    found = profile_of(project("gosvc"))
    assert found.stack == ["Gin"]
    assert [(e.path, e.kind) for e in found.entry_points] == [
        ("main.go", "main"),
        ("cmd/tool/main.go", "main"),
    ]
    assert found.test_command == "go test ./..."
    assert found.test_patterns == ["*_test.go"]


def test_a_rust_cli_with_inline_tests():
    found = profile_of(project("rustcli"))
    assert found.stack == ["Tokio", "clap"]
    assert [e.path for e in found.entry_points] == ["src/main.rs"]
    assert found.test_files == 1
    assert found.test_command == "cargo test"


def test_a_spring_boot_app():
    found = profile_of(project("javaapp"))
    assert found.stack == ["Spring Boot"]
    assert [e.path for e in found.entry_points] == ["src/main/java/com/acme/App.java"]
    assert found.test_folders == [("src/test/", 1)]
    assert found.test_command == "mvn test"


def test_withheld_files_are_never_read():
    files = [
        SourceFile("app.py", "import os\n", "source"),
        SourceFile("secret.py", "API_KEY = 'x'\ndef leak():\n    pass\n", "source", "a token"),
        SourceFile("package.json", '{"dependencies": {"react": "18"}}', "config", "a token"),
    ]
    analysis = profile.analyze(files)
    assert analysis.profile.skipped == {"withheld": 2}
    assert "secret.py" not in analysis.symbols
    assert analysis.profile.stack == []
    assert analysis.profile.languages[0]["files"] == 1


def test_a_file_over_a_megabyte_is_skipped_as_too_large():
    files = {"big.py": "x = 1\n" * (symbols.MAX_BYTES // 6 + 1), "small.py": "y = 2\n"}
    found = profile_of(files)
    assert found.skipped == {"too large": 1}
    assert found.parsed == 1


def test_a_grammar_error_on_one_file_costs_only_that_file(monkeypatch):
    real = symbols.extract

    def flaky(path, text, language):
        if path == "bad.py":
            raise RuntimeError("grammar bug")
        return real(path, text, language)

    monkeypatch.setattr(symbols, "extract", flaky)
    found = profile_of({"bad.py": "x = 1\n", "good.py": "def f():\n    pass\n"})
    assert found.parsed == 1
    assert found.skipped == {"parse error": 1}


@pytest.mark.parametrize(
    ("files", "command"),
    [
        ({"conftest.py": "", "tests/test_a.py": ""}, "pytest"),
        ({"requirements.txt": "pytest\n", "tests/test_a.py": ""}, "pytest"),
        ({"manage.py": "import django\n", "shop/tests/test_a.py": ""}, "python manage.py test"),
        ({"tests/test_a.py": "import unittest\n"}, "python -m unittest"),
        ({"tox.ini": "[tox]\n", "tests/test_a.py": ""}, "tox"),
        ({"tox.ini": "[tox]\n[pytest]\n", "tests/test_a.py": ""}, "pytest"),
        ({"src/a.py": "x = 1\n"}, ""),
        ({"build.gradle": "plugins {}\n", "gradlew": "#!/bin/sh\n"}, "./gradlew test"),
        ({"Gemfile": "gem 'rspec'\n"}, "bundle exec rspec"),
    ],
)
def test_the_test_command_is_read_from_config_first_then_inferred(files, command):
    assert profile_of(files).test_command == command


def test_the_main_languages_command_comes_first():
    big_python = "def f():\n    return 1\n" * 50
    files = {
        "app/core.py": big_python,
        "pyproject.toml": "[tool.pytest.ini_options]\n",
        "web/package.json": '{"scripts": {"test": "vitest"}}',
        "web/a.ts": "export const a = 1;\n",
    }
    found = profile_of(files)
    assert found.test_commands == [
        ("pytest", "pyproject.toml configures pytest"),
        ("npm test", "web/package.json scripts.test"),
    ]


def test_test_folders_beside_each_package_are_grouped():
    files = {f"pkg/m{n}/tests/test_x.py": "" for n in range(5)}
    files["tests/test_top.py"] = ""
    assert profile_of(files).test_folders == [("pkg/**/tests/", 5), ("tests/", 1)]


def test_scripts_in_hidden_folders_are_no_entry_points():
    guard = 'if __name__ == "__main__":\n    pass\n'
    found = profile_of({".github/scripts/ci.py": guard, "tools/run.py": guard})
    assert [(e.path, e.kind) for e in found.entry_points] == [("tools/run.py", "script")]


def test_the_summary_says_stack_entry_points_tests_and_layout_briefly():
    text = profile.summary(profile_of(project("shop")))
    assert text.splitlines() == [
        "Stack: Python 100%; Django, Celery, pytest",
        "Entry points: shop/cli.py (shop-admin), manage.py (python manage.py), "
        "shop/__main__.py (python -m shop)",
        "Tests: run `pytest`; tests/ (2)",
        "Layout: shop/ (9), tests/ (2), vendor/ (2)",
        "Most imported: shop/models.py, shop/utils.py, shop/cli.py",
    ]
    webapp = profile.summary(profile_of(project("webapp")))
    assert webapp.startswith("Stack: TypeScript 78%, JavaScript 22%; React, Express")


def test_the_summary_fits_600_characters_however_big_the_codebase():
    long = "very/deeply/nested/folder/structure/of/a/monorepo"
    big = Profile(
        languages=[{"name": "python", "share": 0.6}, {"name": "typescript", "share": 0.4}],
        stack=[f"Framework{n}" for n in range(30)],
        entry_points=[profile.EntryPoint(f"{long}/main{n}.py", "script") for n in range(12)],
        test_files=900,
        test_folders=[(f"{long}/tests{n}/", 100) for n in range(8)],
        test_command="pytest",
        layout=[(f"{long}{n}/", 50) for n in range(40)],
        most_imported=[(f"{long}/m{n}.py", 9) for n in range(10)],
    )
    text = profile.summary(big)
    assert len(text) <= 600
    assert text.startswith("Stack: Python 60%, TypeScript 40%; Framework0")
    assert "run `pytest`" in text
    assert [line.split(":")[0] for line in text.splitlines()] == [
        "Stack",
        "Entry points",
        "Tests",
        "Layout",
        "Most imported",
    ]
    assert profile.summary(None) == ""


def test_it_stores_and_loads_the_profile_and_symbols_in_the_index_folder(tmp_path):
    folder = tmp_path / "index"
    analysis = profile.analyze(profile.sources(project("shop")))
    profile.write(folder, analysis)
    assert profile.load(folder) == analysis.profile
    assert Navigator(folder).find_symbol("Cart").found
    assert sorted(p.name for p in folder.iterdir()) == ["profile.json", "symbols.sqlite"]


def test_a_missing_or_older_profile_loads_as_none(tmp_path):
    assert profile.load(tmp_path) is None
    (tmp_path / profile.PROFILE_FILE).write_text(json.dumps({"version": 0}))
    assert profile.load(tmp_path) is None
    (tmp_path / profile.PROFILE_FILE).write_text("{broken")
    assert profile.load(tmp_path) is None


def test_a_failed_build_leaves_no_stale_profile(tmp_path, monkeypatch, caplog):
    profile.build_into(tmp_path, profile.sources({"a.py": "def f():\n    pass\n"}))
    assert profile.load(tmp_path) is not None

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(navigation, "write", broken)
    assert profile.build_into(tmp_path, profile.sources({"b.py": "x = 1\n"})) is None
    assert profile.load(tmp_path) is None
    assert not Navigator(tmp_path).exists()
    assert "could not profile" in caplog.text


@pytest.mark.django_db
def test_indexing_a_codebase_computes_its_profile_and_the_page_shows_it(
    indexed, alice_client, settings
):
    folder = index.index_dir(indexed.pk)
    stored = profile.load(folder)
    assert stored is not None
    assert stored.file_count == indexed.file_count
    assert stored.test_command == "pytest"
    assert Navigator(folder).find_symbol("check_password").found
    page = alice_client.get(f"/codebases/{indexed.pk}/").content.decode()
    assert 'id="profile"' in page
    assert "run <code>pytest</code>" in page
    for entry in stored.entry_points:
        assert entry.path in page


@pytest.mark.django_db
def test_a_codebase_indexed_before_profiles_says_how_to_get_one(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="old", status="ready")
    page = alice_client.get(f"/codebases/{codebase.pk}/").content.decode()
    assert "No profile yet" in page
