"""Tell Vietnamese from English in a task, without a model."""

import re

# Letters that occur in Vietnamese and (almost) never in English text.
_VI_LETTERS = re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]", re.IGNORECASE)
_VI_WORDS = {
    "và",
    "của",
    "cho",
    "không",
    "là",
    "một",
    "các",
    "những",
    "được",
    "trong",
    "sửa",
    "lỗi",
}


def detect_language(text: str) -> str:
    """Return "vi" for Vietnamese, "en" otherwise."""
    letters = len(_VI_LETTERS.findall(text))
    words = {w.lower() for w in re.findall(r"\w+", text)}
    if letters >= 2 or len(words & _VI_WORDS) >= 2:
        return "vi"
    return "en"


LANGUAGE_NAMES = {"en": "English", "vi": "Vietnamese"}
