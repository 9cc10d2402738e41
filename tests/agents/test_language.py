from agents.language import detect_language


def test_it_tells_vietnamese_from_english():
    assert detect_language("sửa lỗi đăng nhập khi mật khẩu sai") == "vi"
    assert detect_language("Thêm giới hạn tốc độ cho API đăng nhập") == "vi"
    assert detect_language("Add rate limiting to the login API") == "en"
    assert detect_language("Fix the café menu résumé parser") == "en"
