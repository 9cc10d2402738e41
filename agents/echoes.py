"""Replies that answer nothing: a copy of the message they were asked to answer, a
placeholder from the instructions written out literally ("path:line", "<path>", "TODO: fill"),
or a stock refusal ("I'm sorry, but I cannot assist with that", "I am sorry, but I do not have
enough information…", "Could you please provide more context?") to an ordinary engineering
request. Small models do all three (the 0.5B model refused a code review after being told its
first review was a copy). agents.turns redoes such a turn once with a correction and, if the redo
is no better, keeps it with a visible flag.

Both checks are linear in the text: a set of word 3-grams, and one regex without nested
repetition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agents.plan_quality import as_dict
from rag.vietnamese import fold

SHINGLE_WORDS = 3
ECHO_SHARE = 0.8
"""A reply whose word 3-grams occur in the other message at least this often is a copy."""
MIN_WORDS = 8
"""Shorter replies ("Agreed.") are too short to call copies."""
MAX_CHARS = 20_000

_WORD = re.compile(r"\w+")
_PLACEHOLDER = re.compile(
    r"(?<![\w/.-])path:(?:start-end|start|lines?)\b"
    r"|(?<!\w)<(?:path|file|file_?path|line|function|symbol|name|placeholder)>"  # not List<Path>
    r"|\bTODO:?[ \t]*(?i:fill)\b"
    r"|\[(?i:insert|fill in)\b[^\]\n]{0,40}\]"
)
# A refusal is a short reply that opens with a stock apology, an inability, a claim of too
# little information, or a request for more ("Could you please provide…"); a long reply that
# declines one point among many is an answer.
_REFUSAL = re.compile(
    r"(?i)^\W{0,3}(?:I[’']?m sorry|I am sorry|I apologi[sz]e|sorry|unfortunately|as an ai)?"
    r"[ ,]*(?:but )?"
    r"(?:I (?:can[’']?t|cannot|can not|am unable to|[’']?m unable to|won[’']?t)"
    r" (?:assist|help|provide|do|comply|fulfil|fulfill|complete)"
    r"|I (?:do not|don[’']t) have (?:enough|sufficient|the necessary|any) "
    r"(?:information|context|details)"
    r"|(?:could|can|would) you (?:please )?provide)"
)
REFUSAL_MAX_WORDS = 40


@dataclass(frozen=True)
class Problem:
    kind: str  # "echo", "placeholder" or "refusal"
    correction: str  # the instruction appended to the prompt for the redo
    note: str  # shown on the message when the redo did not help


TERM_WORD = re.compile(r"[^\W_]+")
"""A word of prose for `stem` (snake_case names fall apart into their words)."""
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "s", "ly")


def stem(word: str) -> str:
    """A word folded (lower case, no diacritics) and, when English, without its ending:
    "locking", "locked", "locks" → "lock"; "shared", "share" → "shar"."""
    word = fold(word)
    if not (word.isascii() and word.isalpha()) or word.endswith("ss"):
        return word
    for suffix in _SUFFIXES:
        # A plural "s" comes off short words too (IPs, URLs); longer endings need a stem.
        least = 2 if suffix == "s" else 3
        if word.endswith(suffix) and len(word) - len(suffix) >= least:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text[:MAX_CHARS].lower())
    return {tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)}


def copied_share(reply: str, other: str) -> float:
    """The share of the reply's word 3-grams that also occur in `other`: 1.0 for a verbatim
    copy or a copied excerpt, near 0 for a reply in its own words."""
    if len(_WORD.findall(reply[:MAX_CHARS])) < MIN_WORDS:
        return 0.0
    mine = shingles(reply)
    return len(mine & shingles(other)) / len(mine) if mine else 0.0


def placeholders(reply: str) -> list[str]:
    """The literal placeholders in `reply`, each once, in order of appearance."""
    found = dict.fromkeys(m.group(0) for m in _PLACEHOLDER.finditer(reply[:MAX_CHARS]))
    return list(found)


def is_refusal(reply: str) -> bool:
    head = reply.strip()[:400]
    return bool(_REFUSAL.match(head)) and len(_WORD.findall(reply[:MAX_CHARS])) <= REFUSAL_MAX_WORDS


def check_reply(
    reply: str, other: str = "", other_label: str = "the other message"
) -> Problem | None:
    """What is wrong with `reply` as an answer to `other` (labelled for the model and the page
    as `other_label`, e.g. "Agent A's proposal"), or None."""
    if other and copied_share(reply, other) >= ECHO_SHARE:
        return Problem(
            "echo",
            f"Your previous reply copied {other_label} instead of answering it. Do not repeat "
            f"{other_label}: follow the instruction above in your own words.",
            f"Flagged: this reply repeats {other_label} almost word for word "
            "(asked once to write its own, it did not).",
        )
    if is_refusal(reply):
        return Problem(
            "refusal",
            "This is an ordinary software engineering request about the code above, and "
            "answering it is safe. Follow the instruction above: write the reply it asks for.",
            "Flagged: the model declined to answer (asked once more, it declined again).",
        )
    found = placeholders(reply)
    if found:
        listed = ", ".join(f"`{p}`" for p in found)
        return Problem(
            "placeholder",
            f"Your previous reply contained {listed}: a placeholder from the instructions, "
            "written out literally. Write the reply again, citing real file paths and line "
            "numbers from the code context above, or no citation at all.",
            f"Flagged: this reply contains the placeholder {listed} instead of a real citation.",
        )
    return None


SHORT_COPY_WORDS = 3
"""A field of 3–7 words ("How to test it") counts as copied only when every one of its word
3-grams is in the instructions."""
COPIED_RUN = 5
"""A field of up to COPIED_RUN_MAX_WORDS words that repeats a run of this many words of the
instructions is a copy with a few words changed ("The concrete tests to add or run are not
provided."): the instructions' own phrases are about plans, not about any one change."""
COPIED_RUN_MAX_WORDS = 20


def _runs(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def is_copied(text: str, instructions: str) -> bool:
    """Whether a field of a structured reply copies the instructions it was written under
    (`summary` = "Two or three sentences on what changes and why.") instead of answering them."""
    words = _WORD.findall(text[:MAX_CHARS].lower())
    if len(words) >= MIN_WORDS and copied_share(text, instructions) >= ECHO_SHARE:
        return True
    if SHORT_COPY_WORDS <= len(words) < MIN_WORDS:
        mine = shingles(text)
        if mine and mine <= shingles(instructions):
            return True
    if len(words) >= COPIED_RUN:
        theirs = _runs(_WORD.findall(instructions[:MAX_CHARS].lower()), COPIED_RUN)
        if len(words) <= COPIED_RUN_MAX_WORDS:
            return bool(_runs(words, COPIED_RUN) & theirs)
        # A longer field that opens with the instructions' words ("The concrete tests to add
        # or run are not provided. However, …") restates them and pads with the other agent's.
        return tuple(words[:COPIED_RUN]) in theirs
    return False


def without_repeated_steps(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a proposal or plan) without the steps that say nothing an earlier step on the
    same definition did not say, places aside (`_said`): the 0.5B model writes the same step
    three times when it has one idea, and on astropy-13977 the 1.5B model wrote "Modify
    `Quantity.__array_ufunc__()` in <file>" for seven files, one step each, every one changing
    the one method in quantity.py and saying nothing more. The Files rows whose reason is such
    a step's words, for files no kept step touches, go with them (`_borrowed_reasons`)."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data
    earlier: list[tuple[str, set[str]]] = []
    kept = []
    dropped = []
    for step in steps:
        if isinstance(step, dict):
            symbol = str(step.get("symbol") or "").strip()
            words = _said(step)
            if any(words <= theirs and symbol in (mine, "", "none") for mine, theirs in earlier):
                dropped.append(step)
                continue
            earlier.append((symbol, words))
        kept.append(step)
    if not dropped:
        return data
    return {**data, "steps": kept, "files": _borrowed_reasons(data.get("files"), kept, dropped)}


def _said(step: dict[str, Any]) -> set[str]:
    """The words a step's title and detail say, its places (paths, citations, "in", "see")
    aside."""
    text = f"{step.get('title', '')} {step.get('detail', '')}"[:MAX_CHARS]
    return {w.lower() for w in _SAYING.findall(_WHERE.sub(" ", text))}


def _borrowed_reasons(files: Any, kept: list[Any], dropped: list[dict[str, Any]]) -> Any:
    """`files` without the rows for a file that no kept step lists, whose reason is a step's
    own words: the row said why a dropped step touched it, and that step said nothing."""
    if not isinstance(files, list):
        return files
    touched = {str(f).strip() for s in kept if isinstance(s, dict) for f in s.get("files") or []}
    steps_said = [_said(s) for s in [*kept, *dropped] if isinstance(s, dict)]
    out = []
    for row in files:
        if isinstance(row, dict) and str(row.get("path", "")).strip() not in touched:
            reason = {w.lower() for w in _SAYING.findall(_WHERE.sub(" ", str(row.get("reason"))))}
            if reason and any(reason <= said for said in steps_said):
                continue
        out.append(row)
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def without_copied_sentences(text: str, source: str) -> str:
    """`text` without its sentences that copy `source` (at least ECHO_SHARE of their word
    3-grams are there): a plan step that pastes the app's own check ("[E5] finds `iris`
    defined at …; the proposal changes nothing in that file.") after its real content."""
    theirs = shingles(source)
    if not theirs or not text:
        return text
    kept = []
    for sentence in _SENTENCE_END.split(text[:MAX_CHARS]):
        mine = shingles(sentence)
        if len(mine) >= SHINGLE_WORDS and len(mine & theirs) >= ECHO_SHARE * len(mine):
            continue
        kept.append(sentence)
    return " ".join(kept).strip()


def without_looping(text: str) -> str:
    """`text` without the sentences that say an earlier sentence of it again, word for word,
    and, once one did, without a last fragment that starts one of them again: a small model that
    loops writes the same sentence until its tokens run out (seaborn-2848's 1.5B summary said
    "The changes are done in … first, followed by …" three times and stopped mid-word)."""
    sentences = _SENTENCE_END.split(text[:MAX_CHARS])
    if len(sentences) < 2:
        return text
    seen: list[tuple[str, ...]] = []
    kept: list[str] = []
    for n, sentence in enumerate(sentences):
        words = tuple(_WORD.findall(sentence.lower()))
        if words and words in seen:
            continue
        cut = (
            n == len(sentences) - 1
            and len(kept) < n
            and not sentence.rstrip().endswith((".", "!", "?", ";", ")", "`"))
        )
        if cut and len(words) > 1 and any(w[: len(words) - 1] == words[:-1] for w in seen):
            continue
        seen.append(words)
        kept.append(sentence)
    return " ".join(kept).strip() if len(kept) < len(sentences) else text


_WHERE = re.compile(
    r"\S*[/\\]\S*"  # a path, a citation
    r"|\S+\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java|rb|c|h|cpp)\b\S*"
    r"|(?i:\b(?:path|paths|line|lines|file|files|start|end|see|at|in|of)\b)"
)
_SAYING = re.compile(r"[^\W\d_]{2,}")
MIN_DETAIL_WORDS = 3


def says_only_where(detail: str) -> bool:
    """Whether a step's detail says where and nothing else: citations, paths and the request's
    own labels. The 1.5B model's final plan wrote "path:line: pylint/checkers/classes.py:1756-1781"
    as a step's whole detail, the request's "a detail citing path:line" taken literally."""
    return len(_SAYING.findall(_WHERE.sub(" ", detail[:MAX_CHARS]))) < MIN_DETAIL_WORDS


def with_details_from(data: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
    """`data`'s steps, each detail that says only where (`says_only_where`) replaced by the
    detail of the `earlier` step (the approved proposal's) that changes the same definition,
    has the same title or, failing both, the same files, when that one says what to do. Each
    earlier detail is given once: three plan steps on one file each took the same proposal
    step's detail, and the plan said one thing three times."""
    steps = data.get("steps")
    theirs = [s for s in earlier.get("steps") or [] if isinstance(s, dict)]
    if not isinstance(steps, list) or not theirs:
        return data

    def said(step: dict[str, Any]) -> str:
        detail = str(step.get("detail") or "")
        return "" if says_only_where(detail) else detail

    def same(a: dict[str, Any], b: dict[str, Any], key: str) -> bool:
        x, y = a.get(key), b.get(key)
        if key == "files":
            return bool(x) and isinstance(x, list) and isinstance(y, list) and x == y
        x, y = str(x or "").strip().lower(), str(y or "").strip().lower()
        return bool(x) and x not in ("none", "new") and x == y

    out = []
    given: set[int] = set()
    for step in steps:
        if isinstance(step, dict) and not said(step):
            for key in ("symbol", "title", "files"):
                match = next(
                    (
                        n
                        for n, s in enumerate(theirs)
                        if n not in given and same(step, s, key) and said(s)
                    ),
                    None,
                )
                if match is not None:
                    given.add(match)
                    old = str(step.get("detail") or "").strip()
                    step = {**step, "detail": f"{said(theirs[match])} {old}".strip()}
                    break
        out.append(step)
    return {**data, "steps": out}


def with_targets_from(
    data: dict[str, Any], earlier: dict[str, Any]
) -> tuple[dict[str, Any], list[int]]:
    """`data`'s steps, each that names no definition (no `target`) given the target of the
    `earlier` step (the approved proposal's) with the same title or, failing that, one of its
    files, when that one changes a real definition; with the numbers of the steps given one.
    The human approved the proposal at the checkpoint: the final plan of two grounding
    sessions named "none" where the approved proposal had `Variable.__setitem__` and
    `ClassChecker._check_first_arg_for_type`. Each earlier target is given once; a step that
    chose a new definition keeps its choice."""
    steps = data.get("steps")
    theirs = [
        s for s in earlier.get("steps") or []
        if isinstance(s, dict) and as_dict(s.get("target")).get("kind") == "definition"
    ]  # fmt: skip
    if not isinstance(steps, list) or not theirs:
        return data, []
    out: list[Any] = []
    given: set[int] = set()
    numbers: list[int] = []
    for number, step in enumerate(steps, 1):
        if isinstance(step, dict) and not step.get("target"):
            title = str(step.get("title") or "").strip().lower()
            files = {str(f) for f in step.get("files") or []}
            match = next(
                (n for n, s in enumerate(theirs)
                 if n not in given and title and str(s.get("title") or "").strip().lower() == title),
                None,
            )  # fmt: skip
            if match is None:
                match = next(
                    (n for n, s in enumerate(theirs)
                     if n not in given and as_dict(s.get("target")).get("path") in files),
                    None,
                )  # fmt: skip
            if match is not None:
                given.add(match)
                numbers.append(number)
                step = {**step, "target": dict(as_dict(theirs[match].get("target")))}
        out.append(step)
    return ({**data, "steps": out}, numbers) if numbers else (data, [])


# Verbs that only read. Not "find", "read" or "look up": "Read the limit from settings" and
# "Look up hue levels" change code.
_LOOKING = re.compile(
    r"^\W*(?:step\s*\d+\W*)?(?:identify|identifying|understand|understanding|investigate|"
    r"locate|review|analy[sz]e|examine|explore|research|find|finding|inspect|look\s+(?:at|for|"
    r"into)|xác định|tìm|phân tích|xem xét)\b",
    re.IGNORECASE,
)


def without_looking_steps(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`data` without the steps whose title only looks at the code ("Identify the problematic
    code", "Understand the issue"), and those steps' titles. Reading is what the investigation
    did; a plan's step changes the code (the 1.5B model wrote such steps with the rule against
    them in its request). A plan of nothing but such steps keeps them: an empty plan says less."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data, []
    looking = [
        s for s in steps if isinstance(s, dict) and _LOOKING.match(str(s.get("title") or ""))
    ]
    if not looking or len(looking) == len(steps):
        return data, []
    kept = [s for s in steps if not any(s is x for x in looking)]
    return {**data, "steps": kept}, [str(s.get("title") or "").strip() for s in looking]


_UNCHANGING = re.compile(
    r"^\W*(?:step\s*\d+\W*)?(?:no\s+(?:code\s+)?changes?\b|nothing\s+to\s+change\b|"
    r"do\s+not\s+(?:change|modify|touch)\b|không\s+(?:cần\s+)?(?:thay\s+đổi|sửa)\b)"
    r"|\b(?:unchanged|giữ\s+nguyên)\W*$",
    re.IGNORECASE,
)


def without_unchanging_steps(
    data: dict[str, Any],
) -> tuple[dict[str, Any], list[str], list[str]]:
    """`data` without the steps whose title says they change nothing ("No changes to
    `CaseInsensitiveDict` in `requests/structures.py`", "Keep `merge_setting` unchanged"),
    those steps' titles, and the files left out. The files only such steps named leave the
    plan's Files too: the plan
    itself says they do not change (the requests walk listed `requests/structures.py` as
    "modify" with the reason of another file). A plan of nothing but such steps keeps them."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data, [], []
    idle = [
        s for s in steps if isinstance(s, dict) and _UNCHANGING.search(str(s.get("title") or ""))
    ]
    if not idle or len(idle) == len(steps):
        return data, [], []
    kept = [s for s in steps if not any(s is x for x in idle)]

    def files(chosen: list[Any]) -> set[str]:
        return {str(f) for s in chosen if isinstance(s, dict) for f in s.get("files") or [] if f}

    unchanged = files(idle) - files(kept)
    listed, gone = [], []
    for entry in data.get("files") or []:
        if isinstance(entry, dict) and str(entry.get("path")) in unchanged:
            gone.append(str(entry.get("path")))
        else:
            listed.append(entry)
    titles = [str(s.get("title") or "").strip() for s in idle]
    return {**data, "steps": kept, "files": listed}, titles, gone
