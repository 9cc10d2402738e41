import pytest

from rag.query import analyze
from rag.vietnamese import bridge, english_terms, fold, is_vietnamese


def test_it_folds_diacritics():
    assert fold("Đăng nhập") == "dang nhap"


def test_it_turns_a_vietnamese_task_into_english_terms():
    assert bridge("sửa lỗi đăng nhập") == "fix bug login sign in"


def test_it_understands_text_typed_without_diacritics():
    assert "password" in bridge("sua loi dang nhap va mat khau")


def test_it_keeps_identifiers_and_leaves_english_alone():
    bridged = bridge("Tham số `center` bị bỏ qua trong DataArrayRolling")
    assert "DataArrayRolling" in bridged and "`center`" in bridged and "ignore" in bridged
    assert bridge("add rate limiting to the API") == "add rate limiting to the API"


def test_accented_words_are_not_confused_by_folding():
    # "trọng" (in "tôn trọng", respect) folds like "trống" (empty)
    assert "empty" not in bridge("không tôn trọng tùy chọn")


@pytest.mark.parametrize("text", ["hello world", "fix the login page", "dang"])
def test_english_is_not_vietnamese(text):
    assert not is_vietnamese(text)


def test_analyze_searches_with_the_english_terms():
    terms = analyze("thêm giới hạn tốc độ cho API")
    assert {"rate", "limit", "api"} <= set(terms.tokens)


def test_phien_ban_is_a_version_not_a_session():
    assert english_terms("lỗi ở phiên bản mới") == ["error bug fails", "version"]
    assert "session" not in bridge("loi o phien ban moi")
    assert "session" in bridge("phiên đăng nhập hết hạn")  # "phiên" alone still is


def test_pham_vi_is_a_scope():
    assert "scope" in bridge("phạm vi của biến bị sai")
    assert "scope" in bridge("pham vi cua bien bi sai")


def test_bien_is_a_variable():
    assert "variable" in bridge("biến môi trường bị bỏ qua")
