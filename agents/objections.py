"""Which sentences of Agent B's review object to the proposal, read by code with no model.

The small local model's "review" is often no review: an apology, a refusal ("I am sorry, but I
do not have enough information…"), a question back to the user ("Could you please provide me
with more context…?"), praise, or the proposal said again. None of that is an objection, so
none of it is verified, sent to Agent A, or written into the plan's Decisions table.

A review is cut into items (its bullet or numbered lines, else its sentences), each item into
clauses at a contrast ("…, but …"), and a clause objects when it says something against the
proposal or the code:

- never when it is about the reviewer, not the proposal: an apology, an inability ("I cannot
  assist", "I do not have enough information"), or a request for more from the user;
- when it has a critique form: a negation or a deficiency ("does not", "missing", "forgets",
  "breaks", "instead"), a critical question ("Why does…?"), or an obligation, a change asked
  for or a consequence foreseen ("should", "must", "use …", "would") that no approval softens
  ("This should work fine." approves);
- when it names code (a path, a `symbol`, an identifier, [E#], a step, a test) and neither
  approves ("The change to `x.py` is correct.") nor narrates the proposal or the task ("The
  proposal modifies `x.py`."), unless it is only a title ("**Test file `x.py`:**" names what
  it is about and says nothing of it);
- and not otherwise (praise, agreement, filler).

An item that only restates what it reviews (most of its word 3-grams are in the proposal or the
task) is not an objection either. English forms always apply; Vietnamese ones, matched with
their diacritics folded away as agents.analysis does, apply to Vietnamese reviews only, since
unaccented syllables ("no", "sai", "nen") are English words too. Every pattern is linear.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agents.echoes import (
    ECHO_SHARE,
    MIN_WORDS,
    TERM_WORD,
    Problem,
    copied_share,
    shingles,
    stem,
)
from agents.language import detect_language
from rag.vietnamese import fold

MAX_OBJECTIONS = 6
OBJECTION_CHARS = 240
NO_OBJECTION = "no objection raised"
"""What the page and the plan say when a review holds no real objection."""

_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,2}[.)])\s+(.+)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_APP_NOTE = re.compile(r"^\s*_(?:Flagged|No objection raised)\b")
"""A note the app appended to a reply (a flag, "No objection raised: …"): not the reviewer's."""


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)")


# Everything below matches folded text: lower case, no diacritics ("Tôi" → "toi").
# Clauses: a contrast word, or a semicolon (two independent clauses: "X is untested; add a
# test" asks for a change in its second).
_CONTRAST = re.compile(
    r"[,;:]?\s+(?:but|however|although|though|yet|nhung|tuy nhien)(?!\w),?\s*|\s*;\s*"
)
_APOLOGY_LEAD = re.compile(
    r"^\W*(?:(?:i am|i[’']m|we are|we[’']re) )?(?:very |so |really |truly )?"
    r"(?:sorry|apologies|unfortunately|xin loi|rat tiec)(?!\w)[,;:.!]?\s*"
)
_SELF = {
    "en": _words(
        r"(?:i|we) (?:sincerely |truly )?apologi[sz]e",
        r"(?:i am|i[’']m|we are|we[’']re) (?:very |so |really )?(?:sorry|not able|unable)",
        r"as an ai",
        r"(?:i|we) (?:can ?not|can[’']t|could not|couldn[’']t|won[’']t|am unable to|"
        r"[’']m unable to|are unable to) (?:\w+ )?(?:assist|help|provide|review|comply|complete|"
        r"answer|evaluate|assess|determine|comment|give|offer|fulfil|fulfill|perform|proceed|"
        r"continue|understand|access|say|tell|judge|do (?:this|that|so))",
        r"i (?:do not|don[’']t) have",
        r"i (?:would |will )?need (?:more|additional|further|the full|to see|access|enough)",
        # The same lack said of what the reviewer was given (pylint-4604, xarray-3095 on
        # local-1.5b: "The code context provided does not contain any relevant information
        # about `pylint/checkers/imports.py`", "The code context provided is untrusted data").
        # And of the files it was shown (astropy-14096: "The code context provided does not
        # contain any files or tests that are relevant to the proposed changes", "The code
        # structure provided does not contain any files that are relevant"): what the
        # reviewer saw, not what the proposal does.
        r"(?:code )?(?:context|structure)(?: provided)? (?:does not|doesn[’']t|do not|don[’']t) "
        r"(?:provide|contain|include|give|have|offer|mention|show)(?: any)?(?: relevant| "
        r"specific| enough| sufficient| useful)? (?:information|details|context|documentation|"
        r"comments|files?|tests?|code)",
        r"(?:code )?context(?: provided)? (?:is|are) untrusted",
    ),
    "vi": _words(
        r"(?:toi|chung toi) (?:khong the|khong co|chua co|can them|can xem)",
        r"(?:toi )?xin loi",
        r"rat tiec",
    ),
}
"""The reviewer speaking of itself: an apology, an inability, a lack of information."""
_REQUEST = {
    "en": _words(
        r"(?:could|can|would|will) you (?:please )?(?:provide|share|send|give|clarify|specify|"
        r"tell|confirm|elaborate|paste|upload|describe|let me know)",
        r"please (?:provide|share|send|give|clarify|specify|paste|upload|let me know)",
        r"(?:more|additional|further|enough|sufficient) (?:context|information|info|details)",
    ),
    "vi": _words(
        r"(?:ban|anh|chi) (?:co the )?(?:vui long )?(?:cung cap|chia se|gui|lam ro|cho biet)",
        r"vui long (?:cung cap|chia se|gui|lam ro|cho biet)",
        r"them (?:thong tin|ngu canh|chi tiet)",
    ),
}
"""A request back to the user for more to go on."""
_APPROVAL = {
    "en": _words(
        r"(?:is|are|looks?|seems?|sounds?|appears?) (?:\w+ )?(?:good|great|fine|correct|solid|"
        r"sound|reasonable|sensible|ok|okay|right|clear|appropriate|adequate|complete|thorough|"
        r"well[- ]\w+)",
        r"(?:i|we) (?:fully |completely )?agree(?: with)?",
        r"agreed",
        r"lgtm",
        r"makes sense",
        r"(?:would |should |will )?works? (?:fine|well|correctly|as expected)",
        r"(?:would|should|will) work",
        r"well done",
        r"good (?:job|work|proposal|plan|approach|start)",
        r"no (?:further |other |major |real |more )?(?:objections?|concerns?|issues?|problems?|"
        r"comments?)",
        r"no (?:further |other )?changes? (?:are |is )?(?:needed|required|necessary)",
        # A change called harmless (seaborn-3010 on local-1.5b: "This is a minor issue, as the
        # line remains unchanged. It does not affect the functionality or the code context."),
        # not the complaint that it misses what should change ("the output of `render()`").
        r"(?:does|do|will|would|should)(?: not|n[’']t) (?:affect|impact|break|alter) (?:the |its "
        r"|any )?(?:functionality|behaviou?r|results?|output|correctness)(?! (?:of|in|for|at)\b)",
        r"^\W*(?:good|great|fine|ok|okay|yes|correct|nice)",
    ),
    "vi": _words(
        r"dong y",
        r"hop ly",
        r"tot",
        r"on",
        r"chinh xac",
        r"khong co (?:van de|y kien|phan doi|gi)",
        r"khong can (?:thay doi|sua)",
    ),
}
"""Praise or agreement: removed before the critique forms are looked for, so "no concerns"
is not read as a negation."""
_CRITIQUE = {
    "en": _words(
        r"not",
        r"cannot",
        r"\w+n[’']t",
        r"never",
        r"nothing",
        r"none",
        r"no longer",
        r"without",
        r"missing",
        r"miss(?:es|ed)?",
        r"lacks?",
        r"lacking",
        r"forget(?:s|ting)?",
        r"forgot(?:ten)?",
        r"ignor(?:es|ed|ing)",
        r"overlook\w*",
        r"omit\w*",
        r"leaves? out",
        r"left out",
        r"fails?(?: to)?",
        r"break(?:s|ing)?",
        r"broken",
        r"wrong",
        r"incorrect\w*",
        r"instead",
        r"rather than",
        r"unnecessary",
        r"redundant",
        r"unsafe",
        r"risk\w*",
        r"leak\w*",
        r"race",
        r"too (?:broad|narrow|many|few|much|little|late|early)",
        r"^\W*(?:why|what about|what happens|how (?:does|do|will|would|is|are)|"
        r"did (?:you|agent a) consider|has (?:anyone|agent a) considered)",
    ),
    "vi": _words(
        r"khong",
        r"chua",
        r"thieu",
        r"quen",
        r"bo sot",
        r"bo qua",
        r"sai",
        r"thay vi",
        r"tai sao",
    ),
}
"""A negation, a deficiency, a contrast with what should be, a critical question."""
_NO = _words("no")
"""A negation in English only: folded Vietnamese "no" is "nó" (it)."""
_OBLIGATION = {
    "en": _words(
        r"should",
        r"must",
        r"needs? to",
        r"ha(?:ve|s) to",
        r"ought to",
        r"(?:i|we) (?:suggest|recommend)",
        # A consequence foreseen: "so two workers would each allow five attempts".
        r"would",
        r"could",
        r"might",
        r"better to",
        r"consider\w*",
    ),
    "vi": _words(r"nen", r"phai", r"can phai", r"de nghi", r"thay bang"),
}
"""An obligation, a change asked for or a consequence foreseen: critique unless an approval
softens it ("This should work fine.")."""
_IMPERATIVE = _words(
    r"^\W*(?:please )?(?:use|add|move|replace|remove|delete|drop|keep|handle|reset|call|"
    r"check|change|rename|split|extract|cover|include|update|wrap|guard|validate|catch|"
    r"raise|return|fix|avoid|test|document|log)"
)
"""An imperative opening the clause: the reviewer asks for a change. Not in a title, where the
same word names a heading's topic ("**Test file `x.py`:**", "**Update Documentation**:")."""
_NARRATION = {
    "en": re.compile(
        r"^\W*(?:(?:the|this|that|agent a[’']?s?) )?(?:proposal|proposed (?:change|fix|plan)|"
        r"plan|change|changes|patch|fix|task|issue|approach|solution|step \d+)(?!\w)"
        r"|^\W*(?:agent a|it|they|the user)(?!\w)"
    ),
    "vi": re.compile(r"^\W*(?:de xuat|ke hoach|nhiem vu|thay doi|buoc \d+|agent a|no)(?!\w)"),
}
"""A clause about what the proposal or the task is: narration, unless it criticises."""
_CODE = re.compile(
    r"`[^`\n]{1,200}`"
    r"|\[E\d{1,4}\]"
    r"|(?<![\w/])[\w.-]+/[\w./-]*\w"
    r"|(?<![\w.])[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java|kt|rb|php|cs|c|h|cpp|hpp|swift|"
    r"scala|sql|sh|toml|cfg|ini|json|ya?ml|md|rst|txt|html|css)(?!\w)"
    r"|(?<!\w)[A-Za-z]\w*_\w+"  # snake_case
    r"|(?<!\w)[a-z]+[A-Z]\w*"  # camelCase
    r"|(?<!\w)[A-Z][a-z0-9]+[A-Z]\w*"  # CamelCase
    r"|(?<!\w)\w+\(\)"
)
_STEP_OR_TEST = _words(r"step \d+", r"buoc \d+", r"tests?", r"testing", r"kiem thu")


def _heading(text: str) -> bool:
    """Whether a bullet only titles the bullets under it: `**Missing check**:`, `Issues:`,
    `**[E5] find_symbol(Line) — seaborn/_marks/line.py:120-136**:` (a `path:line` is no
    colon of a label)."""
    title = text.strip().rstrip("*_ ")
    return title.endswith(":") and ":" not in _LINE_COLON.sub("", title[:-1]) and len(title) <= 120


_LINE_COLON = re.compile(r":(?=\d)")


def _clip(text: str) -> str:
    return text if len(text) <= OBJECTION_CHARS else text[: OBJECTION_CHARS - 1].rstrip() + "…"


_FINISHED = re.compile(r"[.!?:;)\]`\"'»…*_|]\s*$")
"""How a finished sentence, bullet or table row ends."""


def without_unfinished_end(review: str) -> str:
    """A review that ran out of tokens, without the sentence it was cut in: its last line
    when that is a bullet or a line of its own, else the paragraph's words after the last
    finished sentence. A cut item ("A new test file `tests/test_x.py` is") says nothing, and
    must not become an objection that the plan keeps."""
    lines = review.rstrip().splitlines()
    if not lines or _FINISHED.search(lines[-1]):
        return review
    last = lines[-1]
    if _BULLET.match(last) or len(lines) == 1 and not _SENTENCE_END.search(last):
        return "\n".join(lines[:-1]).rstrip()
    ends = list(_SENTENCE_END.finditer(last))
    if not ends:
        return "\n".join(lines[:-1]).rstrip()
    return "\n".join([*lines[:-1], last[: ends[-1].start()]]).rstrip()


def cut(review: str) -> list[str]:
    """The items of a review: its bullet or numbered lines when it wrote some, else its
    sentences; each once (a small model that loops repeats its list), notes the app appended
    left out, items under three words dropped. A bullet that is only a heading
    ("**Missing check**:") is no item of its own: it leads each bullet under it, and stands
    alone only when nothing is under it."""
    lines = [ln for ln in review.splitlines() if not _APP_NOTE.match(ln)]
    items: list[str] = []
    heading, heading_indent, led = "", -1, False
    for line in lines:
        match = _BULLET.match(line)
        if match:
            text = match[1].strip()
            indent = len(line) - len(line.lstrip())
            if heading and indent <= heading_indent:
                if not led:
                    items.append(heading)
                heading, led = "", False
            if _heading(text):
                heading, heading_indent, led = text, indent, False
                continue
            if heading:
                text, led = f"{heading} {text}", True
            items.append(text)
        elif heading and not led and line.strip() and line[:1].isspace():
            items.append(f"{heading} {line.strip()}")  # the heading's own paragraph
            led = True
        elif items and line.strip() and line[:1].isspace():  # a bullet's continuation
            items[-1] += " " + line.strip()
    if heading and not led:
        items.append(heading)
    if not items:
        text = " ".join(ln.strip() for ln in lines if ln.strip())
        items = [s.strip() for s in _SENTENCE_END.split(text)]
    return list(dict.fromkeys(i for i in items if len(i.split()) >= 3))


def _objecting_clause(clause: str, original: str, language: str, *, title: bool = False) -> bool:
    langs = ("en", "vi") if language == "vi" else ("en",)
    if any(_SELF[lang].search(clause) or _REQUEST[lang].search(clause) for lang in langs):
        return False
    rest = _without_approval(clause, langs)
    approving = rest != clause
    if _critique(rest, langs, language):
        return True
    if not approving and (
        any(_OBLIGATION[lang].search(rest) for lang in langs)
        or not title
        and bool(_IMPERATIVE.search(rest))
    ):
        return True
    names_code = bool(_CODE.search(original) or _STEP_OR_TEST.search(clause))
    narrates = any(_NARRATION[lang].match(clause) for lang in langs)
    return names_code and not approving and not narrates and not title


def _clauses(sentence: str) -> list[tuple[str, str]]:
    """(folded clause, its original text) of `sentence`, cut at each contrast, after an
    apology that only prefaces the rest ("Sorry, but step 2 deletes `x.py`")."""
    text = fold(sentence)
    # Folding keeps offsets for text typed in composed form; where it does not, the original
    # clause only feeds the code pattern, so the whole sentence serves.
    same = len(text) == len(sentence)
    lead = _APOLOGY_LEAD.match(text)
    if lead:
        text = text[lead.end() :]
        sentence = sentence[lead.end() :] if same else sentence
    clauses, start = [], 0
    for match in _CONTRAST.finditer(text):
        original = sentence[start : match.start()] if same else sentence
        clauses.append((text[start : match.start()], original))
        start = match.end()
    clauses.append((text[start:], sentence[start:] if same else sentence))
    return [(c.strip(), o) for c, o in clauses]


def is_objection(sentence: str, language: str = "") -> bool:
    """Whether `sentence` objects to the proposal (see the module's docstring). `language` is
    the review's ("en" or "vi"); by default the sentence's own."""
    language = language or detect_language(sentence)
    # A title names what it is about and says nothing of it ("**Test file `x.py`:**", alone
    # in xarray-2905's review on local-1.5b): it objects only in its own words ("**No test
    # in `x.py`**:", "**`counter` must be locked**:"), never by naming code, and its first
    # word is its topic ("**Test file …**:"), not an imperative.
    title = _heading(sentence)
    return any(_objecting_clause(c, o, language, title=title) for c, o in _clauses(sentence))


def criticises(sentence: str, language: str = "") -> bool:
    """Whether a clause of `sentence` has a critique form (a negation, a deficiency, a
    critical question) that no approval explains away: what the proposal or the code gets
    wrong, as against a demand ("should …") or a name."""
    language = language or detect_language(sentence)
    langs = ("en", "vi") if language == "vi" else ("en",)
    return any(
        _critique(_without_approval(c, langs), langs, language) for c, _ in _clauses(sentence)
    )


def _without_approval(clause: str, langs: tuple[str, ...]) -> str:
    for lang in langs:
        clause = _APPROVAL[lang].sub(" ", clause)
    return clause


def _critique(rest: str, langs: tuple[str, ...], language: str) -> bool:
    """A critique form in a clause with its approvals taken out: a negation, a deficiency, a
    critical question (English "no" only in English: folded Vietnamese "no" is "nó")."""
    return any(_CRITIQUE[lang].search(rest) for lang in langs) or (
        language != "vi" and bool(_NO.search(rest))
    )


def restates(item: str, said: str) -> bool:
    """Whether `item` says nothing that `said` did not: most of its word 3-grams are there (or,
    for a short line, all of them). An objection that quotes a few of the proposal's words to
    say what is wrong with them is not a restatement."""
    mine = shingles(item)
    if not mine:
        return False
    if len(mine) < MIN_WORDS:
        return mine <= shingles(said)
    return copied_share(item, said) >= ECHO_SHARE


_EVIDENCE_REF = re.compile(r"\[E(\d{1,4})\]")
_LABEL = re.compile(r"^\W*(?:[A-Za-z]+ ){0,2}[A-Za-z]+\**:\**\s")
"""A field's label opening an item ("Evidence: ", "**Files:** "): the proposal's own form
said again, not a word of the item."""
_FUNCTION_WORDS_TEXT = """
a an the this that these those it its they them their there here we you your our i me my he
she his her and or nor but so if then than as at by for from in into of on onto to with within
without about over under between through during before after above below up down out off is
are was were be been being am do does did has have had having can could should would must will
shall may might need needs also too very just only even still both either neither each every
all any some such no not same other another which who whom whose what when where why how
whether while because since until unless although though however therefore thus hence
show shows shown showed say says said state states stated indicate indicates confirm
confirms mention mentions note notes see seen make makes made ensure ensures
va cua cac nhung mot la cho khi voi nay do duoc co trong ve hay neu cung nhu the de vao ra o
tu den hon nua rang thi ma vi nen
"""
_FUNCTION_WORDS = frozenset(stem(w) for w in _FUNCTION_WORDS_TEXT.split())
"""Words that carry no claim of their own, English and (folded) Vietnamese: articles,
pronouns, prepositions, conjunctions, auxiliaries, quantifiers, and the verbs that report
("[E6] shows that …")."""


def _terms(text: str) -> set[str]:
    return {stem(w) for w in TERM_WORD.findall(text)} - _FUNCTION_WORDS


def _bare(code: str) -> str:
    return code.strip("`").removesuffix("()").strip().lower()


def adds_nothing(item: str, said: str, cited: Mapping[int, str] | None = None,
                 language: str = "") -> bool:  # fmt: skip
    """Whether `item` criticises nothing and brings nothing `said` (the proposal it reviews and
    the task) has not: every name it writes as code is in `said`, and every other word of it
    is in `said` or in the evidence the item cites (`cited`: its text by [E#] number). The
    1.5B model's review of a proposal to remove a condition said "[E6] shows that the function
    checks … This condition should be removed." and "Files: requests/sessions.py, …": a demand
    for what the proposal already does, and the proposal's files listed again, are no
    objections. A demand that names other code, or asks for something the proposal does not
    mention (a test), adds something, and so does any critique."""
    if criticises(item, language):
        return False
    said_lower = said.lower()
    text = _LABEL.sub("", item)
    names = [m.group(0) for m in _CODE.finditer(text) if not _EVIDENCE_REF.fullmatch(m.group(0))]
    if any(_bare(name) not in said_lower for name in names):
        return False
    words = _terms(_CODE.sub(" ", text))
    if not words:
        return bool(names)
    shown = "\n".join((cited or {}).get(int(n), "") for n in _EVIDENCE_REF.findall(item))
    return words <= _terms(said) | _terms(shown)


def is_real(
    item: str, restating: str = "", language: str = "", cited: Mapping[int, str] | None = None
) -> bool:
    """Whether an item cut from a review is a real objection: it objects, and it is not the
    proposal or the task (`restating`) said again, in its words (`restates`) or in its
    substance (`adds_nothing`, with the evidence the item cites: `cited`)."""
    if not is_objection(item, language):
        return False
    if not restating:
        return True
    return not (restates(item, restating) or adds_nothing(item, restating, cited, language))


def objections(
    review: str,
    limit: int = MAX_OBJECTIONS,
    *,
    restating: str = "",
    cited: Mapping[int, str] | None = None,
) -> list[str]:
    """Agent B's real objections to the proposal, at most `limit`: the items of `review` (see
    `cut`) that object to something (`is_objection`) and do not only restate `restating` (the
    proposal it reviews and the task: the 0.5B model's "review" repeats the proposal's own
    sentences as bullets, which object to nothing), nor ask for what it already does."""
    language = detect_language(review)
    # Judged whole, shown clipped: a word cut in half ("reque…") is no new word of the item's.
    real = (_clip(i) for i in cut(review) if is_real(i, restating, language, cited))
    return list(dict.fromkeys(real))[:limit]


def review_problem(review: str, reviewed: str = "") -> Problem | None:
    """A review that raises no real objection to what it reviews (`reviewed`: the proposal and
    the task), as a problem agents.turns redoes once; None when it objects to something."""
    if objections(review, restating=reviewed):
        return None
    return Problem(
        "no_objection",
        "Your previous reply raised no objection to the proposal: it apologised, declined, "
        "asked for more, agreed, or said the proposal again. You have the code and the "
        "proposal above. Name what is wrong or missing in the proposal (a file, a function, a "
        "step or a test), citing the code. If nothing is wrong, write one sentence naming "
        "the step you checked and why it holds.",
        f"{NO_OBJECTION.capitalize()}: asked once for a concrete objection, the review still "
        "raised none.",
    )
