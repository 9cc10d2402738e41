"""Events stay far below the channel layer's frame limit: huge deltas are split in order."""

from planagents.streaming import MAX_DELTA_CHARS, MAX_EVENT_BYTES, _size, fit


def test_a_small_event_goes_as_it_is():
    event = {"type": "message.delta", "seq": 3, "offset": 10, "text": "hello"}
    assert list(fit(event)) == [event]


def test_a_huge_delta_is_split_into_deltas_that_rebuild_the_text():
    text = "é" * (MAX_DELTA_CHARS * 2 + 7)
    parts = list(fit({"type": "message.delta", "seq": 3, "offset": 100, "text": text}))
    assert len(parts) == 3
    assert all(_size(p) <= MAX_EVENT_BYTES for p in parts)
    rebuilt = "x" * 100
    for part in parts:
        assert part["offset"] == len(rebuilt)
        rebuilt += part["text"]
    assert rebuilt[100:] == text


def test_a_huge_message_drops_its_html_then_is_cut_and_marked():
    big = "word " * (MAX_EVENT_BYTES // 4)
    [event] = fit({"type": "message.end", "message": {"seq": 4, "content": big, "html": big}})
    assert "html" not in event["message"]
    assert event["message"]["truncated"] is True
    assert _size(event) <= MAX_EVENT_BYTES
