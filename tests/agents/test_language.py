"""One language detector for the whole app: the session's language and retrieval's bridge to
English agree, whether Vietnamese is typed with its diacritics or without them."""

import pytest

from agents.language import detect_language
from rag.vietnamese import fold, is_syllable, is_vietnamese

ACCENTED = [
    "sửa lỗi đăng nhập khi mật khẩu sai",
    "Thêm giới hạn tốc độ cho API đăng nhập",
    "Kiểm tra mã bị lỗi nếu mô-đun chứa một mô-đun trùng tên",
]
UNACCENTED = [
    "sua loi dang nhap",
    "them nut dang xuat",
    "sua bug login khi user nhap sai password",
    *(fold(text) for text in ACCENTED),
]
ENGLISH = [
    "Add rate limiting to the login API",
    "Fix the café menu résumé parser",
    "fix the login page",
    "Cap the ban list at ten",
    "Return true if the cache is hot",
    "dang",
]
MIXED_CODE = {
    "sua loi dang nhap trong auth/views.py (LoginView.post)": "vi",
    "Tham số `center` bị bỏ qua trong DataArrayRolling": "vi",
    "them nut `logout_button` vao navbar.html": "vi",
    "Fix the off-by-one in parse_ranges() of utils/range.py": "en",
    "Rename `tinh_tong` to sum_all in math_utils.py": "en",
    "Fix the bug reported by Nguyễn Văn An in the payment module": "en",
}


@pytest.mark.parametrize("text", ACCENTED + UNACCENTED)
def test_vietnamese_is_vietnamese_with_or_without_diacritics(text):
    assert detect_language(text) == "vi"
    assert is_vietnamese(text)


@pytest.mark.parametrize("text", ENGLISH)
def test_english_is_english_even_when_its_words_look_like_syllables(text):
    assert detect_language(text) == "en"
    assert not is_vietnamese(text)


@pytest.mark.parametrize(("text", "language"), MIXED_CODE.items())
def test_code_identifiers_do_not_count_either_way(text, language):
    assert detect_language(text) == language


def test_it_reads_syllables_by_their_spelling():
    for word in ("nghiêng", "nghieng", "khuyên", "khuyen", "quan", "giờ", "gio", "ươu", "xoong"):
        assert is_syllable(word), word
    for word in ("fix", "login", "rate", "café", "über", "strict", "page"):
        assert not is_syllable(word), word
