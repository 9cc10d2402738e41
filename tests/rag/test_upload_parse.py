"""parse_upload: one entry point that parses, leaves out, flags secrets and warns."""

import io
import json
import zipfile

import pytest

from rag.parsers import PackError, check_upload, parse_upload
from rag.parsers.listing import SHOW_MISSING

STYLES = ["sample.xml", "sample.parsable.xml", "sample.json", "sample.md", "sample.txt"]


def make_zip(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def paths(result):
    return [f.path for f in result.files]


@pytest.mark.parametrize("name", STYLES)
def test_a_complete_pack_parses_without_warnings(pack_bytes, name):
    result = parse_upload([(name, pack_bytes(name))])
    assert len(result.files) == 10
    assert result.warnings == []
    assert not any(f.withheld_reason for f in result.files)


def test_a_truncated_pack_names_the_files_its_listing_promised(pack_bytes):
    data = pack_bytes("sample.xml")
    cut = data[: data.index(b'<file path="todo/auth.py">')] + b'<file path="todo/auth.py">\n"""Log'
    result = parse_upload([("cut.xml", cut)])
    text = " ".join(result.warnings)
    assert "looks cut off" in text and "todo/auth.py" in text
    complete = paths(parse_upload([("full.xml", data)]))
    missing = [p for p in complete if p not in paths(result)]
    assert missing and all(p in text for p in missing)
    assert f"names {len(missing)} file(s) that are not in it" in text


def test_a_long_missing_list_is_shortened(pack_bytes):
    listing = "\n".join(f"f{n}.py" for n in range(SHOW_MISSING + 5))
    pack = json.dumps({"directoryStructure": f"{listing}\nkept.py", "files": {"kept.py": "x"}})
    (warning,) = parse_upload([("p.json", pack.encode())]).warnings
    assert f"names {SHOW_MISSING + 5} file(s)" in warning and "and 5 more" in warning


def test_binary_files_in_the_listing_are_not_missing():
    pack = json.dumps({"directoryStructure": "logo.png\nkept.py", "files": {"kept.py": "x"}})
    assert parse_upload([("p.json", pack.encode())]).warnings == []


def test_a_compressed_pack_says_its_line_numbers_are_approximate(pack_bytes):
    result = parse_upload([("c.xml", pack_bytes("sample.compress.xml"))])
    assert any("--compress" in w and "approximate" in w for w in result.warnings)


def test_packs_with_comments_removed_say_so_too():
    pack = (
        "<file_summary>\n- Code comments have been removed from supported file types\n"
        '</file_summary>\n<files>\n<file path="a.py">\nx = 1\n</file>\n</files>\n'
    )
    (warning,) = parse_upload([("p.xml", pack.encode())]).warnings
    assert "--remove-comments" in warning


@pytest.mark.parametrize(
    ("path", "content", "reason"),
    [
        (".env", "DATABASE_URL=postgres://u:p@h/db\n", "environment file"),
        ("config/.env.production", "X=1", "environment file"),
        ("deploy/id_ed25519", "key", "SSH private key"),
        ("certs/server.pem", "cert", "PEM"),
        ("app/keys.txt", "ok\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", "private key (line 2)"),
        ("app/aws.py", 'KEY = "AKIAIOSFODNN7EXAMPLE"\n', "AWS access key (line 1)"),
        ("ci.yml", "token: ghp_" + "a" * 36 + "\n", "GitHub token"),
        ("slack.js", 'const t = "xoxb-1234567890-abcdefghij";', "Slack token"),
    ],
)
def test_files_that_hold_secrets_are_flagged_with_why(path, content, reason):
    pack = json.dumps({"files": {path: content, "main.py": "print(1)\n"}})
    files = {f.path: f.withheld_reason for f in parse_upload([("p.json", pack.encode())]).files}
    assert reason in files[path]
    assert files["main.py"] == ""


def test_templates_and_prose_about_secrets_are_not_flagged():
    files = {
        ".env.example": "DATABASE_URL=\n",
        "docs/auth.md": 'Set `password = "wonderland"` and an API_KEY env var.',
        "keys.py": "def private_key(): ...\n",
    }
    pack = json.dumps({"files": files}).encode()
    assert all(f.withheld_reason == "" for f in parse_upload([("p.json", pack)]).files)


def test_a_path_with_a_line_break_is_left_out_with_a_clear_message():
    pack = json.dumps({"files": {"ok.py": "x", "bad\nname.py": "y", "tab\there.py": "z"}})
    result = parse_upload([("p.json", pack.encode())])
    assert paths(result) == ["ok.py"]
    (warning,) = result.warnings
    assert "Left out 2 file(s) whose path holds a line break" in warning
    assert "bad\\nname.py" in warning and "\n" not in warning


def test_a_pack_of_only_unusable_paths_is_refused():
    pack = json.dumps({"files": {"a\nb.py": "x"}})
    with pytest.raises(PackError, match="usable path"):
        parse_upload([("p.json", pack.encode())])


def test_version_control_folders_are_left_out_of_packs_and_zips():
    pack = json.dumps({"files": {".git/config": "[core]", "src/.svn/entries": "x", "a.py": "y"}})
    assert paths(parse_upload([("p.json", pack.encode())])) == ["a.py"]
    data = make_zip([("repo/.git/HEAD", "ref"), ("repo/.hg/store", "x"), ("repo/a.py", "y")])
    assert paths(parse_upload([("r.zip", data)])) == ["a.py"]


def test_a_zip_honours_its_gitignore_files():
    data = make_zip(
        [
            ("repo/.gitignore", "build/\n*.log\n!keep.log\n"),
            ("repo/build/out.py", "x"),
            ("repo/debug.log", "x"),
            ("repo/keep.log", "x"),
            ("repo/src/main.py", "x"),
            ("repo/src/gen/.gitignore", "*.py\n"),
            ("repo/src/gen/made.py", "x"),
            ("repo/src/made.py", "x"),
        ]
    )
    assert sorted(paths(parse_upload([("r.zip", data)]))) == [
        ".gitignore",
        "keep.log",
        "src/gen/.gitignore",
        "src/made.py",
        "src/main.py",
    ]


def test_a_hostile_gitignore_pattern_cannot_backtrack():
    # `*a*a*…b` against a long name of a's is exponential for a backtracking matcher.
    data = make_zip([(".gitignore", "*a" * 30 + "b\n"), ("a" * 200 + ".py", "x"), ("m.py", "y")])
    assert sorted(paths(parse_upload([("r.zip", data)]))) == [
        ".gitignore",
        "a" * 200 + ".py",
        "m.py",
    ]


def test_the_cheap_check_does_not_inflate_zip_members():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("a.py", "x = 1\n" * 100)
    data = bytearray(buffer.getvalue())
    data[40:60] = b"\xff" * 20  # the member's bytes are corrupt; the directory is fine
    assert check_upload([("r.zip", bytes(data))]) == "zip"
    with pytest.raises(PackError, match="cannot be read"):
        parse_upload([("r.zip", bytes(data))])


def test_a_zip_with_other_parts_is_refused():
    with pytest.raises(PackError, match="on its own"):
        check_upload([("a.zip", make_zip([("a.py", "x")])), ("b.json", b'{"files": {}}')])


def test_errors_name_the_part_they_come_from():
    with pytest.raises(PackError, match=r"^two\.json: Expected a Repomix JSON pack"):
        parse_upload([("one.json", b'{"files": {"a.py": "x"}}'), ("two.json", b'{"files": 3')])
