"""Bridge Vietnamese task descriptions to the English words code is written in.

MiniLM and the identifiers in code are English, so "sửa lỗi đăng nhập" finds nothing as typed.
Offline and instant: a glossary of programming vocabulary, matched longest phrase first on
text with its diacritics stripped (people often type without them), adds English terms to the
query. Identifiers, paths and English words in the query pass through unchanged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

_GLOSSARY_TEXT = """
lỗi: error bug fails | sửa lỗi: fix bug | sửa: fix | báo lỗi: raises error
đăng nhập: login sign in | đăng xuất: logout | đăng ký: register signup
mật khẩu: password | người dùng: user | tài khoản: account | quyền: permission
phiên: session | phiên bản: version | mã thông báo: token | xác thực: authentication authenticate
phạm vi: scope range | biến: variable
tệp: file | tập tin: file | thư mục: directory folder | đường dẫn: path
cấu hình: configuration config | tệp cấu hình: config file | tùy chọn: option options
bỏ qua: ignore ignored skip | đệ quy: recursive | chế độ: mode | chạy: run running
kiểm tra mã: lint linting | kiểm tra: check validate test | kiểm thử: test
mô-đun: module | mô đun: module | gói: package | nhập: import | xuất: export output
trùng tên: same name | tên: name | in ra: print output | gặp: encounter
nhận dạng: recognized | không được nhận dạng: unrecognized | không hợp lệ: invalid
dữ liệu: data | giá trị: value values | thiếu: missing | bị thiếu: missing
rỗng: empty | trống: empty | mặc định: default | kiểu: type dtype | kiểu dữ liệu: dtype
chú giải: legend | chú thích: annotation comment | nhãn: label | tiêu đề: title header
biểu đồ: plot chart | vẽ: plot draw | trục: axis | lưới: grid | màu: color
ánh xạ: mapping map | thang đo: scale | tỉ lệ: scale ratio | khoảng: range interval
lớn: large | nhỏ: small | sai: wrong incorrect | đúng: correct
truyền: pass passing | trọng số: weights weighted | hàm: function | lớp: class
phương thức: method | thuộc tính: attribute attributes attrs | tham số: argument parameter kwarg
trung bình: mean average | tổng: sum | làm tròn: round | nội suy: interpolate
lặp: iterate iterating loop | vòng lặp: loop | cửa sổ trượt: rolling window
sao chép: copy | tham chiếu: reference references | đối tượng: object | đầu tiên: first
cuối cùng: last | tọa độ: coordinates coords | giống nhau: identical same
đơn điệu: monotonic | chiều: dimension dim | mảng: array | bảng: table
cột: column | hàng: row | dòng: line row | chỉ mục: index
gộp: merge combine | nối: concat join | ghép: concat combine | tách: split
nhóm: group groupby | lọc: filter | sắp xếp: sort | tìm kiếm: search find
đọc: read | ghi: write | lưu: save store | tải: load download | tải lên: upload
xóa: delete remove | thêm: add | cập nhật: update | tạo: create | thay đổi: change modify
đơn vị: unit units | số lượng: quantity | thời gian: time | ngày: date
chuỗi: string | số nguyên: integer int | số thực: float | danh sách: list
từ điển: dict dictionary | khóa: key | ngoại lệ: exception | cảnh báo: warning
định dạng: format | chuyển đổi: convert conversion | so sánh: compare | khác biệt: difference diff
giới hạn: limit | giới hạn tốc độ: rate limit | phân trang: pagination | bộ nhớ đệm: cache
bộ nhớ: memory | chậm: slow | hiệu năng: performance | treo: hang
dòng lệnh: command line | lệnh: command | đầu ra: output | đầu vào: input
thông báo: message | gây ra: cause raise | trả về: return returns | không: not
giỏ hàng: cart | giảm giá: discount | mã giảm giá: discount code | thanh toán: payment charge checkout
thẻ tín dụng: credit card | thẻ: card | đơn hàng: order | sản phẩm: product | giá: price
tôn trọng: respect honor | tuân theo: respect follow | hoạt động: work working
"""

_MARKS = re.compile(r"[\u0300-\u036f]")
_VIETNAMESE = re.compile(
    r"[ăâđêôơưĂÂĐÊÔƠƯ]|[àáảãạằắẳẵặầấẩẫậèéẻẽẹềếểễệìíỉĩịòóỏõọồốổỗộờớởỡợùúủũụừứửữựỳýỷỹỵ]",
    re.I,
)


def fold(text: str) -> str:
    """Lower case without diacritics: "Đăng nhập" → "dang nhap"."""
    text = text.replace("đ", "d").replace("Đ", "D")
    return _MARKS.sub("", unicodedata.normalize("NFD", text)).lower()


def _glossary(key: Callable[[str], str]) -> list[tuple[re.Pattern[str], str]]:
    entries: dict[str, str] = {}
    for line in _GLOSSARY_TEXT.strip().splitlines():
        for entry in line.split("|"):
            vi, en = entry.split(":", 1)
            entries.setdefault(key(vi.strip()), en.strip())
    ordered = sorted(entries, key=lambda k: -len(k))  # longest phrase first
    return [(re.compile(rf"(?<!\w){re.escape(k)}(?!\w)"), entries[k]) for k in ordered]


def _lower(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower()


GLOSSARY = _glossary(_lower)
"""Matched when the query has diacritics: folding them would merge words ("trọng", "trống")."""
FOLDED = _glossary(fold)
"""Matched when the query was typed without diacritics."""


# One Vietnamese syllable with its diacritics folded away: an onset, then a rhyme that is either
# a nucleus closed by a consonant or an open nucleus (a vowel, or one gliding into i/y/o/u).
# English words rarely fit ("fix", "login", "rate", "page"); the few short ones that do are in
# _ENGLISH. Anchored, no nested repetition, on words of a few letters: linear time.
_SYLLABLE = re.compile(
    r"(?:ngh|ng|nh|ch|gh|gi|kh|ph|th|tr|qu|[bcdghklmnprstvx])?"
    r"(?:(?:uye|oa|oe|ue|uy|ua|uo|ie|ye|oo|[aeiouy])(?:ch|nh|ng|[cmnpt])"
    r"|oai|oao|oay|oeo|uay|uoi|uou|ieu|yeu|uya|uyu"
    r"|ai|ao|au|ay|eo|eu|ia|iu|oi|ua|ui|uu|oa|oe|ue|uy|[aeiouy])"
)
_VIETNAMESE_LETTERS = frozenset(
    "abcdefghijklmnopqrstuvwxyzđàáảãạăằắẳẵặâầấẩẫậèéẻẽẹêềếểễệìíỉĩịòóỏõọôồốổỗộơờớởỡợùúủũụưừứửữựỳýỷỹỵ"
)
# Common English words that are also well-formed (unaccented) Vietnamese syllables.
_ENGLISH_TEXT = """
a am an at be bin but by can cap chat dim do get go he hi hot i in it let man map may me men my
no not on pay run say set so tab tap than that the them then thin thing tin tip to too top true
up via yet
"""
_ENGLISH = frozenset(_ENGLISH_TEXT.split())
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_EDGE_PUNCTUATION = ".,;:!?\"'“”‘’()[]{}<>…*"
VIETNAMESE_SHARE = 0.4
"""Vietnamese when at least this share of the words are Vietnamese syllables (and two or more)."""


def is_syllable(word: str) -> bool:
    """Whether `word` (one word, any case) is spelled like a Vietnamese syllable, with or without
    its diacritics."""
    lowered = unicodedata.normalize("NFC", word).lower()
    return (
        0 < len(lowered) <= 8
        and all(c in _VIETNAMESE_LETTERS for c in lowered)
        and _SYLLABLE.fullmatch(fold(lowered)) is not None
    )


def is_vietnamese(text: str) -> bool:
    """Whether `text` is written in Vietnamese, typed with diacritics or without them.

    The signal is the share of its words that are Vietnamese syllables: spelled like one, and,
    when typed without diacritics, not a common English word too. Code is left out of the
    count: `spans`, identifiers (snake_case, CamelCase, dotted.paths, ACRONYMS) and numbers."""
    words = syllables = 0
    for raw in _CODE_SPAN.sub(" ", text[:10_000]).split():
        word = raw.strip(_EDGE_PUNCTUATION)
        if not word.isalpha() or any(c.isupper() for c in word[1:]):
            continue  # code, numbers, acronyms, or not a word at all
        words += 1
        if is_syllable(word) and (not word.isascii() or word.lower() not in _ENGLISH):
            syllables += 1
    return syllables >= 2 and syllables >= VIETNAMESE_SHARE * words


def english_terms(text: str) -> list[str]:
    """English words for the Vietnamese phrases in `text`, in order of first appearance."""
    accented = bool(_VIETNAMESE.search(text))
    folded = _lower(text) if accented else fold(text)
    found: list[tuple[int, str]] = []
    for pattern, english in GLOSSARY if accented else FOLDED:
        for match in pattern.finditer(folded):
            found.append((match.start(), english))
        folded = pattern.sub(lambda m: " " * len(m.group(0)), folded)
    return [english for _, english in sorted(found)]


def bridge(text: str) -> str:
    """`text` for an English-only search: the ASCII words it holds (identifiers, English) and
    the English for its Vietnamese phrases; unchanged when it is not Vietnamese."""
    if not is_vietnamese(text):
        return text
    words = [w for w in re.findall(r"\S+", text) if w.isascii() and re.search(r"\w", w)]
    return " ".join([w for w in words if _looks_like_code_or_english(w)] + english_terms(text))


def _looks_like_code_or_english(word: str) -> bool:
    """Unaccented Vietnamese syllables ("khi", "qua", "cac") are short and plain lower case;
    identifiers have capitals, underscores, dots or brackets, and English words run longer."""
    core = word.strip(".,;:!?")
    return bool(re.search(r"[A-Z_.()`'\"=\[\]-]|\d", core)) or len(core) >= 5
