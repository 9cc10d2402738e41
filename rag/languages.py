"""Guess a file's language from its name."""

from __future__ import annotations

from pathlib import PurePosixPath

_BY_NAME = {
    "dockerfile": "dockerfile",
    "makefile": "makefile",
    "gnumakefile": "makefile",
    "cmakelists.txt": "cmake",
    "gemfile": "ruby",
    "rakefile": "ruby",
    "procfile": "config",
    "jenkinsfile": "groovy",
}

_BY_SUFFIX = {
    ".py": "python", ".pyi": "python", ".pyx": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin",
    ".scala": "scala", ".rb": "ruby", ".php": "php", ".cs": "csharp", ".swift": "swift",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".m": "objective-c", ".dart": "dart", ".lua": "lua", ".r": "r", ".jl": "julia",
    ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell", ".clj": "clojure",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".fish": "shell", ".ps1": "powershell",
    ".sql": "sql", ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss",
    ".sass": "scss", ".less": "less", ".vue": "vue", ".svelte": "svelte",
    ".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text", ".adoc": "asciidoc",
    ".json": "json", ".jsonl": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".ini": "ini", ".cfg": "ini", ".conf": "ini", ".env": "dotenv", ".xml": "xml",
    ".csv": "csv", ".tsv": "csv", ".proto": "protobuf", ".graphql": "graphql", ".gql": "graphql",
    ".tf": "terraform", ".gradle": "groovy", ".groovy": "groovy", ".lock": "lockfile",
}  # fmt: skip


def language_for(path: str) -> str:
    """The language of the file at `path` (lower case), or "" when the name gives no hint."""
    name = PurePosixPath(path).name.lower()
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name.startswith("dockerfile"):
        return "dockerfile"
    if name.startswith(".env"):
        return "dotenv"
    return _BY_SUFFIX.get(PurePosixPath(name).suffix, "")
