"""Claims that a name is absent from the code, read off a reply with no model (issue 19, item
12), and the check of a reply's language."""

import pytest

from agents.language import off_language
from agents.review_checks import absence_claims, false_absences

CLAIMS = [
    ("The class `TokenStore` is not defined in this codebase.", "TokenStore", ""),
    ("TokenStore does not exist, so we must create it.", "TokenStore", ""),
    ("There is no `TokenStore` class in the code.", "TokenStore", ""),
    ("There's no function named `expire_tokens`.", "expire_tokens", ""),
    ("`TokenStore.expire` isn't defined anywhere.", "TokenStore.expire", ""),
    ("Lớp `TokenStore` không tồn tại trong mã nguồn.", "TokenStore", ""),
    ("Hàm token_store không được định nghĩa.", "token_store", ""),
    ("Lop TokenStore chua duoc dinh nghia.", "TokenStore", ""),
    ("Không có lớp TokenStore trong `todo/auth.py`.", "TokenStore", "todo/auth.py"),
]

NOT_CLAIMS = [
    "TokenStore is defined in todo/auth.py.",
    "There is no `timeout` parameter in `fetch()`.",
    "We use TokenStore. There is no test for it.",
    "Không có kiểm thử cho TokenStore.",
    "Agent B said `TokenStore` does not exist; it does.",
    "The method `TokenStore.expire` is not implemented yet.",
    "the session does not exist yet when the request starts",
]


@pytest.mark.parametrize(("text", "name", "path"), CLAIMS)
def test_a_claim_that_a_name_is_absent_is_read_in_english_and_vietnamese(text, name, path):
    assert [(n, p) for n, p, _ in absence_claims(text)] == [(name, path)]


@pytest.mark.parametrize("text", NOT_CLAIMS)
def test_other_sentences_claim_nothing_absent(text):
    assert absence_claims(text) == []


def table(defined: dict[str, str]):
    return lambda name: [(where.split(":")[0], where)] if (where := defined.get(name)) else []


def test_only_a_claim_the_symbol_table_contradicts_is_false():
    text = "`TokenStore` does not exist. `TokenCache` does not exist either."
    found = false_absences(text, table({"TokenStore": "todo/auth.py:5-30"}))
    assert [(f.name, f.where) for f in found] == [("TokenStore", "todo/auth.py:5-30")]


def test_a_claim_about_one_file_is_false_only_if_that_file_defines_it():
    text = "There is no TokenStore in `todo/api.py`."
    assert false_absences(text, table({"TokenStore": "todo/auth.py:5-30"})) == []
    assert false_absences(text, table({"TokenStore": "todo/api.py:1-9"}))


VI = "Tôi đề xuất thêm thời điểm cấp vào mỗi mã thông báo rồi xoá những mã cũ hơn một ngày."
EN = "I propose to store the issue time with each token and drop the ones older than a day."


def test_a_vietnamese_sessions_reply_in_english_is_off_language():
    assert off_language(EN, "vi")
    assert not off_language(VI, "vi")
    assert not off_language(EN, "en")


def test_code_and_short_replies_are_not_judged():
    code = "```python\n" + "def expire(self, now):\n    return [t for t in self.tokens]\n" * 5
    assert not off_language(VI + "\n\n" + code + "```", "vi")
    assert not off_language("OK, fine by me.", "vi")


def test_prose_leaves_out_fenced_code_closed_or_not_in_one_pass():
    from agents.language import prose

    text = "a\n```python\ncode\n```\nb\n~~~\nx\n~~~~\nc\n````\n```\nstill code\n````\nd\n```\nopen"
    assert prose(text) == "a\nb\nc\nd"
