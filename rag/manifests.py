"""What a codebase's manifests declare: dependencies, scripts, entry points, test set-up.

Plain functions over a file's text, no Django, no code run. TOML with tomllib, JSON with
json, setup.cfg with configparser; the formats without a parser here (setup.py, go.mod,
pom.xml, Gradle, Gemfile) are read with small linear-time patterns over at most
MAX_CHARS. A manifest that does not parse yields what could be read, never an error.
"""

from __future__ import annotations

import configparser
import contextlib
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

MAX_CHARS = 512 * 1024


@dataclass
class Manifest:
    path: str
    ecosystem: str
    """python, node, go, rust, java, ruby or php."""
    name: str = ""
    dependencies: list[str] = field(default_factory=list)
    """Normalized names (lower case, `_`/`.` as `-` for Python), runtime and dev together."""
    scripts: dict[str, str] = field(default_factory=dict)
    """Declared commands: console scripts (`name` → `module:function`), package.json
    scripts (`test` → `jest`), Cargo binaries (`name` → path)."""
    entry_files: list[str] = field(default_factory=list)
    """Files the manifest names as where the program starts (package.json main/bin)."""
    test_hints: list[str] = field(default_factory=list)
    """Test tools the manifest configures (`pytest` for [tool.pytest.ini_options], …)."""
    module: str = ""
    """go.mod's module path."""


MANIFEST_NAMES = {
    "pyproject.toml": "python",
    "setup.cfg": "python",
    "setup.py": "python",
    "pipfile": "python",
    "tox.ini": "python",
    "pytest.ini": "python",
    "package.json": "node",
    "go.mod": "go",
    "cargo.toml": "rust",
    "pom.xml": "java",
    "build.gradle": "java",
    "build.gradle.kts": "java",
    "gemfile": "ruby",
    "composer.json": "php",
}
_REQUIREMENTS = re.compile(r"^requirements([-_.][\w.-]*)?\.(txt|in)$", re.I)


def is_manifest(path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    if name in MANIFEST_NAMES:
        return True
    parent = PurePosixPath(path).parent.name.lower()
    return bool(_REQUIREMENTS.match(name)) or (parent == "requirements" and name.endswith(".txt"))


def read(path: str, text: str) -> Manifest | None:
    """The manifest at `path`, or None when `path` is no manifest."""
    if not is_manifest(path):
        return None
    name = PurePosixPath(path).name.lower()
    text = text[:MAX_CHARS]
    if name == "setup.py" and not _SETUP_CALL.search(text):
        return None  # a module that happens to be called setup.py
    reader = _READERS.get(name, _requirements)
    manifest = Manifest(path, MANIFEST_NAMES.get(name, "python"))
    # A manifest that stops parsing keeps what was read before the error.
    with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError, configparser.Error):
        reader(manifest, text)
    manifest.dependencies = list(dict.fromkeys(manifest.dependencies))
    return manifest


def python_name(requirement: str) -> str:
    """`Django[bcrypt]>=5.2; python_version>"3"` → `django` (PEP 503, lower case)."""
    match = _PY_NAME.match(requirement.strip())
    return re.sub(r"[-_.]+", "-", match.group(0)).lower() if match else ""


_PY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")


def _pyproject(m: Manifest, text: str) -> None:
    data = tomllib.loads(text)
    project = _table(data.get("project"))
    m.name = str(project.get("name", ""))
    m.dependencies += _py_names(project.get("dependencies"))
    for extra in _table(project.get("optional-dependencies")).values():
        m.dependencies += _py_names(extra)
    for group in _table(data.get("dependency-groups")).values():
        m.dependencies += _py_names(group)
    for key in ("scripts", "gui-scripts"):
        m.scripts.update({str(k): str(v) for k, v in _table(project.get(key)).items()})
    tool = _table(data.get("tool"))
    poetry = _table(tool.get("poetry"))
    if poetry:
        m.name = m.name or str(poetry.get("name", ""))
        m.dependencies += [python_name(k) for k in _table(poetry.get("dependencies"))]
        m.dependencies += [python_name(k) for k in _table(poetry.get("dev-dependencies"))]
        for group in _table(poetry.get("group")).values():
            m.dependencies += [python_name(k) for k in _table(_table(group).get("dependencies"))]
        m.scripts.update({str(k): str(v) for k, v in _table(poetry.get("scripts")).items()})
    if "pytest" in tool:
        m.test_hints.append("pytest")
    if "tox" in tool:
        m.test_hints.append("tox")
    m.dependencies = [d for d in m.dependencies if d and d != "python"]


def _setup_cfg(m: Manifest, text: str) -> None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    if parser.has_section("metadata"):
        m.name = parser.get("metadata", "name", fallback="")
    if parser.has_section("options"):
        for key in ("install_requires", "tests_require", "setup_requires"):
            m.dependencies += _py_names(_lines(parser.get("options", key, fallback="")))
    if parser.has_section("options.extras_require"):
        for _, value in parser.items("options.extras_require"):
            m.dependencies += _py_names(_lines(value))
    if parser.has_section("options.entry_points"):
        for key in ("console_scripts", "gui_scripts"):
            m.scripts.update(_entry_points(parser.get("options.entry_points", key, fallback="")))
    if parser.has_section("tool:pytest"):
        m.test_hints.append("pytest")


def _tox_ini(m: Manifest, text: str) -> None:
    m.test_hints.append("tox")
    if re.search(r"^\[(pytest|tool:pytest)\]", text, re.M):
        m.test_hints.append("pytest")


def _pytest_ini(m: Manifest, text: str) -> None:
    m.test_hints.append("pytest")


_SETUP_CALL = re.compile(r"\bsetup\s*\(")
_SETUP_LIST = re.compile(r"\b(install_requires|tests_require|extras_require)\s*=")
_QUOTED = re.compile(r"""["']([^"'\n]{1,200})["']""")
_ENTRY = re.compile(r"""["']\s*([\w.-]{1,100})\s*=\s*([\w.]{1,200}(?::[\w.]{1,200})?)""")


def _setup_py(m: Manifest, text: str) -> None:
    """setup.py is code; read the literal lists it passes to setup() and nothing more."""
    for match in _SETUP_LIST.finditer(text):
        span = _bracketed(text, match.end())
        m.dependencies += _py_names(
            q.group(1) for q in _QUOTED.finditer(span) if ":" not in q.group(1)
        )
    start = text.find("console_scripts")
    if start >= 0:
        span = _bracketed(text, start)
        m.scripts.update({e.group(1): e.group(2) for e in _ENTRY.finditer(span)})
    name = re.search(r"""\bname\s*=\s*["']([\w.-]{1,100})["']""", text)
    m.name = name.group(1) if name else ""


def _bracketed(text: str, start: int, limit: int = 20000) -> str:
    """The text from the first bracket at or after `start` to its match (at most `limit`)."""
    opening = min((i for i in (text.find("[", start), text.find("{", start)) if i >= 0), default=-1)
    if opening < 0 or opening - start > 200:
        return ""
    depth = 0
    for n in range(opening, min(len(text), opening + limit)):
        char = text[n]
        if char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
            if depth == 0:
                return text[opening : n + 1]
    return text[opening : opening + limit]


def _pipfile(m: Manifest, text: str) -> None:
    data = tomllib.loads(text)
    for key in ("packages", "dev-packages"):
        m.dependencies += [python_name(k) for k in _table(data.get(key))]


def _requirements(m: Manifest, text: str) -> None:
    names = []
    for line in text.splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith(("#", "-", "git+", "http:", "https:", ".", "/")):
            continue
        names.append(line)
    m.dependencies += _py_names(names)


def _package_json(m: Manifest, text: str) -> None:
    data = json.loads(text)
    if not isinstance(data, dict):
        return
    m.name = str(data.get("name", ""))
    for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
        m.dependencies += [str(k).lower() for k in _table(data.get(key))]
    m.scripts.update({str(k): str(v) for k, v in _table(data.get("scripts")).items()})
    folder = PurePosixPath(m.path).parent.as_posix()
    targets: list[Any] = [data.get("main"), data.get("module")]
    bin_field = data.get("bin")
    targets += list(bin_field.values()) if isinstance(bin_field, dict) else [bin_field]
    for target in targets:
        if isinstance(target, str) and target.strip():
            m.entry_files.append(_under(folder, target.strip()))
    test = m.scripts.get("test", "")
    if test and "no test specified" not in test:
        m.test_hints.append("npm test")


_GO_MODULE = re.compile(r"^module\s+(\S{1,300})", re.M)
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([\w.-]{1,100}\.[\w.-]{1,100}/\S{1,200})\s+v\S", re.M)


def _go_mod(m: Manifest, text: str) -> None:
    module = _GO_MODULE.search(text)
    m.module = m.name = module.group(1).strip('"') if module else ""
    m.dependencies += [r.group(1).lower() for r in _GO_REQUIRE.finditer(text)]


def _cargo(m: Manifest, text: str) -> None:
    data = tomllib.loads(text)
    m.name = str(_table(data.get("package")).get("name", ""))
    for key in ("dependencies", "dev-dependencies", "build-dependencies"):
        m.dependencies += [str(k).lower() for k in _table(data.get(key))]
    m.dependencies += [
        str(k).lower() for k in _table(_table(data.get("workspace")).get("dependencies"))
    ]
    folder = PurePosixPath(m.path).parent.as_posix()
    bins = data.get("bin")
    for item in bins if isinstance(bins, list) else []:
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            m.scripts[str(item.get("name", item["path"]))] = item["path"]
            m.entry_files.append(_under(folder, item["path"]))


_POM_DEPENDENCY = re.compile(
    r"<(?:dependency|parent|plugin)>\s*<groupId>\s*([\w.-]{1,200})\s*</groupId>\s*"
    r"<artifactId>\s*([\w.-]{1,200})\s*</artifactId>"
)


def _pom(m: Manifest, text: str) -> None:
    m.dependencies += [f"{g.group(1)}:{g.group(2)}".lower() for g in _POM_DEPENDENCY.finditer(text)]
    artifact = re.search(r"<artifactId>\s*([\w.-]{1,200})\s*</artifactId>", text)
    m.name = artifact.group(1) if artifact else ""
    m.test_hints.append("mvn test")


_GRADLE_DEPENDENCY = re.compile(
    r"""\b(?:implementation|api|compile|compileOnly|runtimeOnly|testImplementation|"""
    r"""testRuntimeOnly|kapt|annotationProcessor)\s*\(?\s*["']([\w.-]{1,200}):([\w.-]{1,200})"""
)
_GRADLE_PLUGIN = re.compile(r"""\bid\s*\(?\s*["']([\w.-]{1,200})["']""")


def _gradle(m: Manifest, text: str) -> None:
    m.dependencies += [
        f"{g.group(1)}:{g.group(2)}".lower() for g in _GRADLE_DEPENDENCY.finditer(text)
    ]
    m.dependencies += [f"plugin:{p.group(1)}".lower() for p in _GRADLE_PLUGIN.finditer(text)]
    m.test_hints.append("gradle test")


_GEM = re.compile(r"""^\s*gem\s+["']([\w.-]{1,100})["']""", re.M)


def _gemfile(m: Manifest, text: str) -> None:
    m.dependencies += [g.group(1).lower() for g in _GEM.finditer(text)]


def _composer(m: Manifest, text: str) -> None:
    data = json.loads(text)
    if not isinstance(data, dict):
        return
    m.name = str(data.get("name", ""))
    for key in ("require", "require-dev"):
        m.dependencies += [str(k).lower() for k in _table(data.get(key))]
    m.scripts.update({str(k): str(v) for k, v in _table(data.get("scripts")).items()})
    if "test" in m.scripts:
        m.test_hints.append("composer test")


_READERS: dict[str, Callable[[Manifest, str], None]] = {
    "pyproject.toml": _pyproject,
    "setup.cfg": _setup_cfg,
    "setup.py": _setup_py,
    "pipfile": _pipfile,
    "tox.ini": _tox_ini,
    "pytest.ini": _pytest_ini,
    "package.json": _package_json,
    "go.mod": _go_mod,
    "cargo.toml": _cargo,
    "pom.xml": _pom,
    "build.gradle": _gradle,
    "build.gradle.kts": _gradle,
    "gemfile": _gemfile,
    "composer.json": _composer,
}


def _table(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _py_names(values: object) -> list[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, Iterable):
        return []
    return [n for v in values if isinstance(v, str) and (n := python_name(v))]


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _entry_points(value: str) -> dict[str, str]:
    found = {}
    for line in _lines(value):
        name, _, target = line.partition("=")
        if target.strip():
            found[name.strip()] = target.strip()
    return found


def _under(folder: str, target: str) -> str:
    target = target.removeprefix("./")
    return target if folder in ("", ".") else f"{folder}/{target}"


# Dependency (as the manifest names it, normalized) → what the stack is called. The order
# within an ecosystem is the order the stack lists them: frameworks before libraries.
KNOWN: dict[str, dict[str, str]] = {
    "python": {
        "django": "Django", "flask": "Flask", "fastapi": "FastAPI", "starlette": "Starlette",
        "tornado": "Tornado", "aiohttp": "aiohttp", "pyramid": "Pyramid", "sanic": "Sanic",
        "bottle": "Bottle", "litestar": "Litestar", "streamlit": "Streamlit", "dash": "Dash",
        "djangorestframework": "Django REST framework", "channels": "Channels",
        "celery": "Celery", "sqlalchemy": "SQLAlchemy", "pydantic": "Pydantic",
        "torch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX",
        "scikit-learn": "scikit-learn", "transformers": "Transformers",
        "langchain": "LangChain", "numpy": "NumPy", "pandas": "pandas", "scipy": "SciPy",
        "xarray": "xarray", "matplotlib": "Matplotlib", "click": "Click", "typer": "Typer",
        "astroid": "astroid", "pytest": "pytest",
    },
    "node": {
        "next": "Next.js", "nuxt": "Nuxt", "@angular/core": "Angular", "react": "React",
        "vue": "Vue", "svelte": "Svelte", "@sveltejs/kit": "SvelteKit", "solid-js": "Solid",
        "express": "Express", "koa": "Koa", "fastify": "Fastify", "@nestjs/core": "NestJS",
        "hapi": "hapi", "electron": "Electron", "react-native": "React Native",
        "typescript": "TypeScript", "prisma": "Prisma", "typeorm": "TypeORM",
        "mongoose": "Mongoose", "vite": "Vite", "webpack": "webpack", "jest": "Jest",
        "vitest": "Vitest", "mocha": "Mocha",
    },
    "go": {
        "github.com/gin-gonic/gin": "Gin", "github.com/labstack/echo": "Echo",
        "github.com/gofiber/fiber": "Fiber", "github.com/go-chi/chi": "chi",
        "github.com/gorilla/mux": "Gorilla mux", "google.golang.org/grpc": "gRPC",
        "gorm.io/gorm": "GORM", "github.com/spf13/cobra": "Cobra",
    },
    "rust": {
        "actix-web": "Actix Web", "axum": "axum", "rocket": "Rocket", "warp": "warp",
        "tokio": "Tokio", "serde": "Serde", "diesel": "Diesel", "sqlx": "SQLx",
        "clap": "clap", "tauri": "Tauri", "bevy": "Bevy",
    },
    "java": {
        "plugin:org.springframework.boot": "Spring Boot",
        "org.springframework.boot:spring-boot-starter-parent": "Spring Boot",
        "org.springframework.boot:spring-boot-starter-web": "Spring Boot",
        "org.springframework.boot:spring-boot-starter": "Spring Boot",
        "org.springframework:spring-webmvc": "Spring MVC",
        "org.springframework:spring-core": "Spring", "io.quarkus:quarkus-core": "Quarkus",
        "io.micronaut:micronaut-core": "Micronaut", "org.hibernate:hibernate-core": "Hibernate",
        "junit:junit": "JUnit", "org.junit.jupiter:junit-jupiter": "JUnit",
        "org.junit.jupiter:junit-jupiter-api": "JUnit",
    },
    "ruby": {"rails": "Rails", "sinatra": "Sinatra", "hanami": "Hanami", "rspec": "RSpec",
             "sidekiq": "Sidekiq"},  # fmt: skip
    "php": {"laravel/framework": "Laravel", "symfony/framework-bundle": "Symfony",
            "symfony/symfony": "Symfony", "slim/slim": "Slim", "phpunit/phpunit": "PHPUnit"},  # fmt: skip
}  # fmt: skip


def stack(declared: Iterable[Manifest]) -> list[str]:
    """The frameworks and notable libraries the manifests declare, in KNOWN's order (Go
    modules match by prefix: `github.com/labstack/echo/v4` is Echo)."""
    names: dict[str, set[str]] = {}
    for m in declared:
        names.setdefault(m.ecosystem, set()).update(m.dependencies)
    found: list[str] = []
    for ecosystem, known in KNOWN.items():
        have = names.get(ecosystem, set())
        for dependency, shown in known.items():
            hit = dependency in have or (
                ecosystem == "go" and any(n.startswith(dependency + "/") for n in have)
            )
            if hit and shown not in found:
                found.append(shown)
    return found
