"""What a Repomix pack says about itself: its directory listing and the options it was made with.

Every pack starts with a summary and a listing of the repository's files (binary files included,
though their contents are left out). Comparing that listing with the files parsed tells a pack
cut off in transit from a complete one; the summary's notes tell whether lines were changed
(`--compress`, `--remove-comments`, `--remove-empty-lines`), which makes cited line numbers
approximate. Everything here is `str.find` and line splitting: linear in the pack.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.parsers.repomix import Pack, ParsedFile

MAX_LISTED_PATH = 1000
"""Listing entries longer than this are not real paths (CodeFile.path holds 1000)."""
SHOW_MISSING = 20
"""How many missing paths a warning names before saying "and N more"."""

_SECTIONS = {  # style → where the listing starts and ends inside the pack's preamble
    "repomix-xml": ("<directory_structure>", "</directory_structure>"),
    "repomix-xml-parsable": ("<directory_structure>", "</directory_structure>"),
    "repomix-markdown": ("# Directory Structure\n```", "\n```"),
    "repomix-plain": ("Directory Structure\n" + "=" * 64 + "\n", "\n" + "=" * 16),
}

_LINE_CHANGING_NOTES = (
    (
        "content has been compressed",
        "This pack was made with Repomix --compress: files hold only extracted code blocks, so "
        "line numbers cited from it count lines in the pack, not in your repository, and are "
        "approximate. Upload a pack made without --compress for exact lines.",
    ),
    (
        "comments have been removed",
        "This pack was made with Repomix --remove-comments: line numbers cited from it are "
        "approximate. Upload a pack made without that option for exact lines.",
    ),
    (
        "empty lines have been removed",
        "This pack was made with Repomix --remove-empty-lines: line numbers cited from it are "
        "approximate. Upload a pack made without that option for exact lines.",
    ),
)
LINE_WARNINGS = tuple(warning for _, warning in _LINE_CHANGING_NOTES)
"""The warnings that say a pack's line numbers are not the repository's."""
REPOMIX_SUMMARY = "by repomix"
"""The pack's summary opens "…combined into a single document by Repomix." (lowercased);
`--no-file-summary` leaves it out."""
SECURITY_OFF = "security check has been disabled"
"""Repomix's note in a pack made with `--no-security-check` (lowercased)."""
INCLUDE_ONLY = "only files matching these patterns are included"
"""Repomix's note in a pack made with `--include` (lowercased)."""
CUT_OFF = "it looks cut off"
"""The words that mark the note about a part with no closing line (`incomplete` finds it)."""
_COMPRESS_DELIMITER = "\n⋮----\n"

BINARY_EXTENSIONS = frozenset(
    """png jpg jpeg gif bmp ico icns webp tif tiff psd ai heic avif pdf zip gz tgz bz2 xz 7z rar
    zst jar war ear class exe dll so dylib o a lib obj bin woff woff2 ttf otf eot mp3 mp4 m4a
    wav ogg flac avi mov webm mkv pyc pyo pyd whl egg db sqlite sqlite3 npy npz pkl pickle h5
    hdf5 parquet onnx pt pth ckpt safetensors gguf xls xlsx doc docx ppt pptx odt ods jks
    keystore p12 pfx der swf iso img dmg wasm
    """.split()  # noqa: SIM905 (a word list reads best)
) | frozenset(
    # Repomix's own list (the binary-extensions package, 3.2.0, that is-binary-path reads):
    # files it skips by name alone, text or not (astropy's `.dat` tables).
    """
    3dm 3ds 3g2 3gp aac adp afdesign afphoto afpub aif aiff alz ape apk appimage ar arj asf
    au bak baml bh bk btif bzip2 cab caf cgm cmx cpio cr2 cr3 cur dat dcm dds deb dex djvu
    dng docm dot dotm dra ds_store dsk dts dtshd dvb dwg dxf ecelp4800 ecelp7470 ecelp9600
    eol epub f4v fbs fh fla flatpak fli flv fpx fst fvt g3 gh graffle gzip h261 h263 h264
    ief ipa jpgv jpm jxr key ktx lha lvp lz lzh lzma lzo m3u m4v mar mdi mht mid midi mj2
    mka mmr mng mobi movie mp4a mpeg mpg mpga msi msp mxu nef npx numbers nupkg odp oga ogv
    ott pages pbm pcx pdb pea pgm pic pnm pot potm potx ppa ppam ppm pps ppsm ppsx pptm pya
    pyv qt ras raw resources rgb rip rlc rmf rmvb rpm rtf rz s3m s7z scpt sgi shar sil
    sketch slk smv snap snk stl sub suo tar tbz tbz2 tga thmx tlz ttc txz udf uvh uvi uvm
    uvp uvs uvu viv vob wax wbmp wdp weba wim wm wma wmv wmx wrm wvx xbm xif xla xlam xlsb
    xlsm xlt xltm xltx xm xmind xpi xpm xwd z zipx
    """.split()  # noqa: SIM905
)
"""Files Repomix lists but never packs, so their absence is not a sign of a cut-off pack."""


def listed_paths(text: str, style: str) -> list[str] | None:
    """File paths the pack's directory listing names, or None when it has no listing.

    `text` is the pack's preamble (for JSON: its `directoryStructure` string). The listing
    indents two spaces per level and marks folders with a trailing slash.
    """
    if style == "repomix-json":
        block = text
    else:
        start_mark, end_mark = _SECTIONS[style]
        start = text.find(start_mark)
        if start < 0:
            return None
        start += len(start_mark)
        end = text.find(end_mark, start)
        block = text[start : end if end >= 0 else len(text)]
        if style == "repomix-xml-parsable":
            block = html.unescape(block)
    if not block.strip():
        return None
    paths: list[str] = []
    prefixes: list[str | None] = [""]  # prefixes[d]: the folder path at depth d, "…/"
    for line in block.split("\n"):
        name = line.strip()
        if not name:
            continue
        depth = min((len(line) - len(line.lstrip(" "))) // 2, len(prefixes) - 1)
        del prefixes[depth + 1 :]
        prefix = prefixes[depth]
        # A prefix that is already too long stays None, so no line costs more than its length.
        too_long = prefix is None or len(prefix) + len(name) > MAX_LISTED_PATH
        if name.endswith("/"):
            prefixes.append(None if too_long else f"{prefix}{name}")
        elif not too_long:
            paths.append(f"{prefix}{name}")
    return paths


def summary_of(head: str, text: str, style: str) -> str:
    """The pack's summary (its header and notes), lowercased: where Repomix says which options
    made it. For JSON, everything before the "files" object."""
    return (head if style != "repomix-json" else text[: max(text.find('"files"'), 0)]).lower()


def pack_notes(head: str, text: str, style: str, files: Sequence[ParsedFile]) -> list[str]:
    """Warnings about the pack as a whole: cut off, or made with options that move lines."""
    notes = []
    summary = summary_of(head, text, style)
    for phrase, warning in _LINE_CHANGING_NOTES:
        compressed_body = phrase.startswith("content") and _compressed(files)
        if phrase in summary or compressed_body:
            notes.append(warning)
    ending = {"repomix-xml": "</files>", "repomix-plain": "End of Codebase"}.get(style)
    if ending and files and text.rfind(ending) < 0:
        notes.append(
            f"The pack ends without Repomix's closing “{ending}”: {CUT_OFF}, so its "
            f"last file ({files[-1].path}) may be incomplete. Pack it again and re-upload."
        )
    return notes


def _compressed(files: Sequence[ParsedFile]) -> bool:
    """Whether Repomix's `⋮----` fragment delimiter runs through the pack, not just through a
    file or two that happen to hold it (a repository that keeps a compressed pack as a test
    fixture is not itself compressed)."""
    marked = sum(_COMPRESS_DELIMITER in f.content for f in files)
    return marked >= 2 and marked * 10 >= len(files)


def missing_paths(listed: Sequence[str], parsed: Sequence[str]) -> list[str]:
    """Text files the listing names but the upload lacks, in listing order, each once."""
    have = set(parsed)
    return [
        path
        for path in dict.fromkeys(listed)
        if path not in have
        and PurePosixPath(path).suffix.lower().lstrip(".") not in BINARY_EXTENSIONS
    ]


def left_out(
    summary: str, listed: Sequence[str], held: Sequence[str], *, cut_off: bool
) -> tuple[list[str], str]:
    """Listed text files the pack lacks because Repomix chose to leave them out, and a note
    naming them and why; ([], "") when none are missing or their absence is not explained.

    Repomix's listing names every file it found; the pack then leaves out files by name
    (BINARY_EXTENSIONS, never counted missing), by content (binary, or not decodable as
    text) and, with its security check on (secretlint, the default), files in which it finds
    a key, token or password. An ordinary pack of a real repository often lacks a file or
    two, and packing again gives the same pack. The pack does not say which files it dropped
    or why, so files missing from a pack whose summary shows Repomix made it are taken for
    its choice, unless they are most of what it lists (a cut-off or split pack, not a few
    secrets). The summary says whether the security check ran (a "Security check has been
    disabled" note when not), which the note repeats. With
    `--include-full-directory-structure` the listing shows the whole repository while the pack
    holds what `--include` chose ("Only files matching these patterns are included"). Not
    explained: a pack that ends mid-file, and one without its summary (nothing says Repomix
    made it as it is). `summary` is `summary_of`'s."""
    missing = missing_paths(listed, held)
    if not missing or cut_off or REPOMIX_SUMMARY not in summary:
        return [], ""
    if INCLUDE_ONLY in summary:
        return missing, (
            "The pack's directory listing shows the whole repository, but the pack holds only "
            f"the files its --include patterns chose: {len(missing)} listed file(s) are not in "
            f"it ({_shown(missing)}). Plans cannot see them; widen --include and upload a new "
            "version to add them."
        )
    if 2 * len(missing) > len(missing_paths(listed, ())):
        return [], ""
    note = (
        f"Repomix left {len(missing)} file(s) its directory listing names out of the pack: "
        f"{_shown(missing)}. Repomix leaves out files whose content is binary or not "
        "readable text"
    )
    if SECURITY_OFF in summary:
        return missing, f"{note}. Plans cannot see these files."
    return missing, (
        f"{note} and, with its security check on (the default), files in which it finds "
        "something like a key, token or password. Plans cannot see these files. If one holds "
        "text without a real secret, pack with --no-security-check and upload a new version: "
        "this app withholds files holding secrets from the agents itself."
    )


def missing_from_listing(listed: Sequence[str], parsed: Sequence[str]) -> str:
    """A warning naming text files the listing names but the upload lacks; "" when none."""
    missing = missing_paths(listed, parsed)
    if not missing:
        return ""
    return (
        f"The pack's directory listing names {len(missing)} file(s) that are not in it "
        f"(the pack may have been cut off or split): {_shown(missing)}. "
        "Plans cannot see these files; re-pack and upload a new version to include them."
    )


def incomplete(packs: Sequence[Pack]) -> str:
    """Why an upload made of `packs` (the parts of one pack) is incomplete, naming what is
    missing, for an uploader who asked to refuse such packs; "" when it is not.

    Incomplete: its own listing names text files it does not hold (other than those Repomix
    left out on purpose, `left_out`), or a part ends without Repomix's closing line (its last
    file cut off). A pack without a listing is judged by its ending alone: nothing else says
    what it should hold."""
    listed = [path for pack in packs for path in pack.listed or ()]
    held = [f.path for pack in packs for f in pack.files]
    reasons = []
    missing = missing_paths(listed, held)
    if missing:
        share = (
            ", most of what it lists" if 2 * len(missing) > len(missing_paths(listed, ())) else ""
        )
        reasons.append(
            f"its own directory listing names {len(missing)} file(s) that are not in it"
            f"{share}: {_shown(missing)}"
        )
    for pack in packs:
        if any(CUT_OFF in note for note in pack.warnings):
            reasons.append(
                "it ends without Repomix's closing line, so its last file "
                f"({pack.files[-1].path}) is cut off"
            )
    if not reasons:
        return ""
    cut = len(reasons) > 1 or not missing
    # Without its summary a pack cannot say Repomix left files out on purpose, and packing it
    # the same way again gives the same pack: say what else explains them.
    unsure = (
        ""
        if cut or any(REPOMIX_SUMMARY in pack.summary for pack in packs)
        else " Repomix also leaves out binary files and files its security check finds "
        "secrets in, which a pack made without its file summary cannot tell apart."
    )
    return (
        f"This pack is incomplete, so nothing was kept: {'; and '.join(reasons)}.{unsure} "
        "Pack the repository again and upload that, or choose “Index what is there and warn” "
        f"to plan on the {len(held)} file(s) it holds."
    )


def _shown(paths: list[str]) -> str:
    """The first SHOW_MISSING paths, and how many more there are."""
    more = f" and {len(paths) - SHOW_MISSING} more" if len(paths) > SHOW_MISSING else ""
    return ", ".join(paths[:SHOW_MISSING]) + more
