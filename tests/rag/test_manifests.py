import pytest

from rag import manifests
from rag.manifests import read


def test_pyproject_gives_dependencies_extras_scripts_and_pytest():
    text = """
[project]
name = "shop"
dependencies = ["Django>=5.2", "celery[redis]>=5.4; python_version>'3.8'", "Zope.Interface"]
[project.optional-dependencies]
dev = ["pytest-django"]
[project.scripts]
shop-admin = "shop.cli:main"
[tool.pytest.ini_options]
addopts = "-q"
"""
    m = read("pyproject.toml", text)
    assert m.ecosystem == "python" and m.name == "shop"
    assert m.dependencies == ["django", "celery", "zope-interface", "pytest-django"]
    assert m.scripts == {"shop-admin": "shop.cli:main"}
    assert m.test_hints == ["pytest"]


def test_poetry_dependencies_leave_python_itself_out():
    text = """
[tool.poetry]
name = "p"
[tool.poetry.dependencies]
python = "^3.11"
FastAPI = "*"
[tool.poetry.group.dev.dependencies]
pytest = "*"
"""
    assert read("pyproject.toml", text).dependencies == ["fastapi", "pytest"]


def test_setup_cfg_requirements_and_console_scripts():
    text = """
[metadata]
name = astropy
[options]
install_requires =
    numpy>=1.21
    PyYAML>=3.13
[options.extras_require]
test = pytest-doctestplus
[options.entry_points]
console_scripts =
    fitsheader = astropy.io.fits.scripts.fitsheader:main
[tool:pytest]
minversion = 7.0
"""
    m = read("setup.cfg", text)
    assert m.dependencies == ["numpy", "pyyaml", "pytest-doctestplus"]
    assert m.scripts == {"fitsheader": "astropy.io.fits.scripts.fitsheader:main"}
    assert m.test_hints == ["pytest"]


def test_setup_py_is_read_without_running_it():
    text = """
from setuptools import setup
setup(
    name="legacy",
    install_requires=["flask>=2", 'requests'],
    entry_points={"console_scripts": ["legacy = legacy.main:run"]},
)
"""
    m = read("setup.py", text)
    assert m.name == "legacy"
    assert m.dependencies == ["flask", "requests"]
    assert m.scripts == {"legacy": "legacy.main:run"}


def test_a_module_named_setup_py_is_no_manifest():
    assert read("pkg/config/setup.py", "def configure():\n    pass\n") is None


def test_requirements_files_skip_comments_options_and_urls():
    text = "# pinned\nDjango==5.2  # web\n-r base.txt\n-e .\ngit+https://x/y.git\nnumpy\n"
    assert read("requirements/dev.txt", text).dependencies == ["django", "numpy"]
    assert read("requirements-test.txt", "pytest\n").dependencies == ["pytest"]


def test_package_json_gives_dependencies_scripts_and_entry_files():
    text = (
        '{"name": "w", "main": "./lib/server.js", "bin": {"w": "bin/w.js"},'
        ' "scripts": {"test": "jest"}, "dependencies": {"React": "18"},'
        ' "devDependencies": {"@types/node": "20"}}'
    )
    m = read("web/package.json", text)
    assert m.dependencies == ["react", "@types/node"]
    assert m.entry_files == ["web/lib/server.js", "web/bin/w.js"]
    assert m.test_hints == ["npm test"]


def test_npms_placeholder_test_script_is_no_test_command():
    text = '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'
    assert read("package.json", text).test_hints == []


def test_go_mod_gives_the_module_and_requirements():
    text = "module example.com/svc\n\ngo 1.22\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.9.1\n)\nrequire golang.org/x/sync v0.7.0\n"
    m = read("go.mod", text)
    assert m.module == "example.com/svc"
    assert m.dependencies == ["github.com/gin-gonic/gin", "golang.org/x/sync"]


def test_cargo_toml_gives_crates_and_binaries():
    text = '[package]\nname = "cli"\n[dependencies]\nTokio = "1"\n[[bin]]\nname = "tool"\npath = "src/bin/tool.rs"\n'
    m = read("Cargo.toml", text)
    assert m.dependencies == ["tokio"]
    assert m.entry_files == ["src/bin/tool.rs"]


def test_pom_gradle_gemfile_and_composer():
    pom = read(
        "pom.xml",
        "<parent><groupId>org.springframework.boot</groupId>"
        "<artifactId>spring-boot-starter-parent</artifactId></parent>",
    )
    assert pom.dependencies == ["org.springframework.boot:spring-boot-starter-parent"]
    gradle = read(
        "build.gradle.kts",
        'plugins { id("org.springframework.boot") }\nimplementation("io.ktor:ktor-server-core:2.3")\n',
    )
    assert gradle.dependencies == ["io.ktor:ktor-server-core", "plugin:org.springframework.boot"]
    assert read("Gemfile", "source 'x'\ngem 'rails', '~> 7'\ngem \"rspec\"\n").dependencies == [
        "rails",
        "rspec",
    ]
    composer = read("composer.json", '{"require": {"laravel/framework": "^11"}}')
    assert composer.dependencies == ["laravel/framework"]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pyproject.toml", "[project\nname = "),
        ("package.json", "{not json"),
        ("package.json", "[1, 2]"),
        ("Cargo.toml", "= ="),
        ("setup.cfg", "no section header"),
        ("pyproject.toml", '[project]\ndependencies = "django"\n[project.scripts]\nx = 1\n'),
    ],
)
def test_a_broken_manifest_gives_what_could_be_read_and_never_raises(path, text):
    assert read(path, text) is not None


def test_a_file_that_is_no_manifest_gives_none():
    assert read("src/app.py", "import django") is None


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        (
            "pyproject.toml",
            '[project]\ndependencies = ["django", "celery"]\n',
            ["Django", "Celery"],
        ),
        ("package.json", '{"dependencies": {"express": "4", "react": "18"}}', ["React", "Express"]),
        ("go.mod", "module m\nrequire github.com/labstack/echo/v4 v4.11.0\n", ["Echo"]),
        ("Cargo.toml", '[dependencies]\naxum = "0.7"\ntokio = "1"\n', ["axum", "Tokio"]),
        (
            "pom.xml",
            "<dependency><groupId>org.springframework.boot</groupId>"
            "<artifactId>spring-boot-starter-web</artifactId></dependency>",
            ["Spring Boot"],
        ),
        ("Gemfile", "gem 'rails'\n", ["Rails"]),
        ("composer.json", '{"require": {"laravel/framework": "11"}}', ["Laravel"]),
        ("requirements.txt", "left-pad\n", []),
    ],
)
def test_the_stack_names_the_frameworks_declared(path, text, expected):
    assert manifests.stack([read(path, text)]) == expected
