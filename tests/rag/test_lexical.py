from rag.lexical import document_tokens, tokenize


def test_it_splits_camel_and_snake_case_identifiers():
    tokens = tokenize("def checkPassword(user_id, HTTPServer)")
    assert {"checkpassword", "check", "password", "user_id", "user", "id", "http", "server"} <= set(
        tokens
    )
    assert "def" not in tokens


def test_it_keeps_non_english_words():
    assert tokenize("sửa lỗi đăng nhập") == ["sửa", "lỗi", "đăng", "nhập"]


def test_it_adds_the_path_tokens():
    assert document_tokens("todo/rate_limit.py", "")[:4] == ["todo", "rate_limit", "rate", "limit"]
