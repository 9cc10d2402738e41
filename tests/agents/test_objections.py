"""Only real objections: a review sentence that apologises, refuses, asks the user for more,
praises or restates the proposal is no objection; one that criticises the proposal or names
the code it is about is. The reviews below are shaped like the small local model's replies
seen on real projects (issue 18)."""

import pytest

from agents.objections import (
    NO_OBJECTION,
    OBJECTION_CHARS,
    cut,
    is_objection,
    objections,
    review_problem,
)

PROPOSAL = (
    "**Proposal.** Throttle failed logins in `app/auth.py`.\n"
    "1. **Count failures** — Wrap the login handler at `app/auth.py:12` with a counter."
)
TASK = "Add rate limiting to login"

REFUSAL = (
    "I am sorry, but I do not have enough information to review this proposal. "
    "Could you please provide me with more context about the codebase and the changes?"
)
APOLOGY = "I apologize, but I am unable to assist with reviewing this code."
PRAISE = (
    "The proposal looks good and addresses the task. I have no objections to this proposal. "
    "This should work fine."
)
RESTATED = (
    "- Agent A proposes to wrap the login handler in `app/auth.py` with a counter.\n"
    "- The proposal modifies `app/auth.py` to throttle failed logins.\n"
    "- Wrap the login handler at `app/auth.py:12` with a counter."  # its own step, pasted
)


@pytest.mark.parametrize(
    "sentence",
    [
        "I am sorry, but I do not have enough information to review this proposal.",
        "Could you please provide me with more context about the codebase and the changes?",
        "I apologize, but I am unable to assist with reviewing this code.",
        "I'm sorry, but I cannot assist with that request.",
        "Unfortunately, I would need to see the full code of `app/auth.py` first.",
        "**Code Context**: The code context provided does not contain any relevant information "
        "about the `pylint/checkers/imports.py` file or its modifications.",
        "**File Existence**: The code context does not provide information about whether "
        "`pylint/checkers/imports.py` exists in the codebase.",
        "**Code context** — The code context provided is untrusted data from the uploaded "
        "codebase, which means it should not be followed.",
        # astropy-14096 on local-1.5b, kept as Decisions rows by the verifier.
        "**Code Context**: The code context provided does not contain any files or tests that "
        "are relevant to the proposed changes.",
        "**Inconsistent Code Structure**: The code structure provided does not contain any "
        "files that are relevant to the proposed changes.",
        "The proposal looks good and addresses the task.",
        "I have no objections to this proposal.",
        "This should work fine.",
        "The change to `app/auth.py` is correct.",
        "The proposal modifies `app/auth.py` to throttle failed logins.",
        "Xin lỗi, tôi không thể đánh giá đề xuất này.",
        "Bạn có thể cung cấp thêm thông tin về mã nguồn không?",
        "Đề xuất này hợp lý.",
        "Đề xuất sửa `app/auth.py` để giới hạn đăng nhập.",
        # xarray-2905 on local-1.5b: a title left alone at the end of the review.
        "**Test file `xarray/tests/test_variable.py`:**",
        "**Update Documentation**:",
        # seaborn-3010: an evidence item's heading, with its `path:line`, as a title.
        "**[E5] find_symbol(Line) — seaborn/_marks/line.py:120-136**:",
        "This is a minor issue, as the line remains unchanged. It does not affect the "
        "functionality or the code context.",
    ],
)
def test_a_sentence_about_the_reviewer_or_praise_or_narration_is_no_objection(sentence):
    assert not is_objection(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The proposal forgets the tests!",
        "TokenStore keeps tokens forever.",
        "The login view is in api/views.py.",
        "The counter must reset after a good login.",
        "Counters in memory break with two workers.",
        "`pylint/testutils/decorator.py` is in Files, but no step changes it.",
        "Why does step 2 leave `auth.py` alone?",
        "Use the database instead of a dict.",
        "Sorry, but step 2 deletes `auth.py`, which breaks its importers.",
        "I'm sorry, the proposal never resets the counter after a good login.",
        "The proposal looks good, but it never resets the counter after a good login.",
        "Đề xuất thiếu kiểm thử cho hàm `login()`.",
        "Nên đặt lại bộ đếm sau khi đăng nhập thành công.",
        "The code context shows `login()` called from `api/views.py:12`, which no step updates.",
        "The proposal does not contain any tests for the expired token in `todo/auth.py`.",
        # A title that says what is wrong, or asks for a change, in its own words.
        "**No test in `tests/test_requests.py`**:",
        "**`counter` must be locked in `app/auth.py`**:",
        "Use a lock around `counter` in `app/auth.py`.",
        "Step 2 does not affect the output of `render()`, which is where the bug shows.",
    ],
)
def test_a_critique_or_a_sentence_about_the_code_is_an_objection(sentence):
    assert is_objection(sentence)


def test_a_refusal_an_apology_or_praise_yields_no_objections():
    for review in (REFUSAL, APOLOGY, PRAISE):
        assert objections(review, restating=f"{PROPOSAL}\n{TASK}") == []


def test_a_review_that_restates_the_proposal_yields_no_objections():
    assert objections(RESTATED, restating=f"{PROPOSAL}\n{TASK}") == []


def test_the_real_objections_of_a_mixed_review_are_kept_in_order():
    review = (
        "I am sorry, but I do not have enough information about the deployment.\n"
        "- The proposal forgets `tests/test_auth.py`: add a failing-login test there.\n"
        "- The proposal looks good overall.\n"
        "- Counters in memory break with two worker processes."
    )
    assert objections(review, restating=f"{PROPOSAL}\n{TASK}") == [
        "The proposal forgets `tests/test_auth.py`: add a failing-login test there.",
        "Counters in memory break with two worker processes.",
    ]


def test_a_vietnamese_review_is_judged_in_vietnamese():
    review = (
        "Xin lỗi, tôi không thể đánh giá đầy đủ. "
        "Đề xuất thiếu kiểm thử cho hàm `login()` trong `app/auth.py`."
    )
    assert objections(review) == ["Đề xuất thiếu kiểm thử cho hàm `login()` trong `app/auth.py`."]


def test_a_note_the_app_appended_is_not_read_as_the_reviewers():
    review = f"{PRAISE}\n\n_{NO_OBJECTION.capitalize()}: asked once, the review raised none._"
    assert cut(review) == [
        "The proposal looks good and addresses the task.",
        "I have no objections to this proposal.",
        "This should work fine.",
    ]


def test_a_review_with_no_real_objection_is_a_problem_to_redo_and_says_so():
    problem = review_problem(REFUSAL, f"{PROPOSAL}\n{TASK}")
    assert problem is not None and problem.kind == "no_objection"
    assert (
        "raised no objection" in problem.correction and "a file, a function" in problem.correction
    )
    assert problem.note.startswith("No objection raised")
    assert review_problem("Counters in memory break with two workers.", PROPOSAL) is None


def test_a_change_asked_for_after_a_semicolon_is_an_objection():
    # Seen while wiring the redo: the clause that asks for the change follows a semicolon.
    assert is_objection("The proposal leaves the 429 path untested; add a test for it.")


def test_a_heading_bullet_leads_the_bullets_under_it_and_is_no_objection_of_its_own():
    # requests #3829 with the 1.5B model: "**Environment Variable Ignored**:" was kept as an
    # objection of its own, an empty row in the checks and the plan's Decisions.
    review = (
        "The proposal contains several issues:\n\n"
        "1. **Certificate Verification Check Missing**:\n"
        "   - The `merge_environment_settings` method ignores `verify=False`.\n"
        "   - The `Session.verify` property is never read there.\n"
        "2. **Environment Variable Ignored**:\n"
        "   The `REQUESTS_CA_BUNDLE` value wins over the session's own.\n"
        "3. **No test in `tests/test_requests.py`**:\n"
    )
    assert cut(review) == [
        "**Certificate Verification Check Missing**: The `merge_environment_settings` method "
        "ignores `verify=False`.",
        "**Certificate Verification Check Missing**: The `Session.verify` property is never "
        "read there.",
        "**Environment Variable Ignored**: The `REQUESTS_CA_BUNDLE` value wins over the "
        "session's own.",
        "**No test in `tests/test_requests.py`**:",  # nothing under it: it stands alone
    ]
    assert not any(o.rstrip("*: ").endswith("Ignored") for o in objections(review))


# seaborn-3010 on the 1.5B model: the review ran out of tokens in the middle of its last bullet.
CUT_REVIEW = (
    "### Files and Tests\n\n"
    "- **Tests**\n"
    "  - The proposal forgets the tests in `tests/_stats/test_regression.py`.\n"
    "  - A new test file `tests/test_regression.py` is"
)


def test_a_review_cut_by_its_token_limit_loses_only_its_unfinished_item():
    from agents.objections import without_unfinished_end

    kept = without_unfinished_end(CUT_REVIEW)
    assert kept.endswith("`tests/_stats/test_regression.py`.")
    assert objections(kept) == [
        "The proposal forgets the tests in `tests/_stats/test_regression.py`."
    ]
    # A paragraph keeps its finished sentences; a finished review is left as it is.
    assert without_unfinished_end("It misses the tests. It also forg") == "It misses the tests."
    assert without_unfinished_end(PROPOSAL) == PROPOSAL


# The requests 2.20.0 walk (issue 18, local-1.5b): the proposal removes a condition of
# `should_strip_auth`; the review wrote the proposal's fields again and asked for what it does.
WALK_TASK = (
    "Authorization header is dropped on redirect when the URL has an explicit default port. "
    "A GET with `auth=('user', 'pass')` to https://example.com:443/api redirected to "
    "https://example.com/api/ arrives with no Authorization header."
)
WALK_PROPOSAL = (
    "**Proposal.** The header is preserved when redirecting URLs with explicit default ports.\n"
    "1. **Modify should_strip_auth Function** — Remove the condition that checks if the "
    "hostnames are different or if the scheme is changing. Files: `requests/sessions.py`\n"
    "2. **Modify request_url Function** — Remove the condition that checks if the scheme is "
    "not HTTPS. Files: `requests/adapters.py`"
)
WALK_SAID = f"{WALK_PROPOSAL}\n{WALK_TASK}"
E6 = (
    "3 match(es); best: requests/sessions.py:118-132.\n"
    "def should_strip_auth(self, old_url, new_url):\n"
    '    """Decide whether Authorization header should be removed when redirecting"""\n'
    "    old_parsed = urlparse(old_url)\n"
    "    if old_parsed.hostname != new_parsed.hostname:\n"
    "        return True\n"
)
AGREES = "Evidence: [E6] shows that the function checks if the hostnames are different or if "
AGREES += "the scheme is changing to decide whether to strip the Authorization header. This "
AGREES += "condition should be removed."
WALK_REVIEW = (
    f"- {AGREES}\n"
    "- Files: requests/sessions.py, requests/adapters.py\n"
    "- Change: Remove the conditions that check if the hostnames are different or if the "
    "scheme is changing in both functions.\n"
    "- Change: Add tests to verify that the Authorization header is preserved during redirects "
    "with explicit default ports.\n"
)


def test_a_demand_for_what_the_proposal_does_or_its_files_again_is_no_objection():
    found = objections(WALK_REVIEW, restating=WALK_SAID, cited={6: E6})

    assert found == [
        "Change: Add tests to verify that the Authorization header is preserved during "
        "redirects with explicit default ports."  # the proposal has no test: that is new
    ]


def test_words_from_the_evidence_an_item_cites_are_not_new_but_from_other_evidence_are():
    # "decide whether" comes from the docstring [E6] shows; without it the item says more.
    assert objections(f"- {AGREES}", restating=WALK_SAID, cited={6: E6}) == []
    assert objections(f"- {AGREES}", restating=WALK_SAID, cited={7: E6}) == [AGREES]


def test_a_long_item_is_judged_whole_and_shown_clipped():
    # An item past the display length was clipped before it was judged: a critique after the
    # first 240 characters ("It breaks redirects to another host") was cut off, and the item,
    # left agreeing with the proposal, was dropped as no objection.
    long = f"{AGREES} The check that the hostnames are different or the scheme is changing "
    long += "decides whether to strip the Authorization header on redirect."
    assert len(long) > OBJECTION_CHARS
    assert objections(f"- {long}", restating=WALK_SAID, cited={6: E6}) == []
    critique = f"{long} It breaks redirects to another host, which must still drop it."
    (shown,) = objections(f"- {critique}", restating=WALK_SAID, cited={6: E6})
    assert len(shown) <= OBJECTION_CHARS and shown.endswith("…")


@pytest.mark.parametrize(
    "item",
    [
        # It names code the proposal does not.
        "Use `urlparse(new_url).port` in `should_strip_auth` to compare the ports.",
        "Step 2 should also update `resolve_redirects` to pass the port.",
        # It criticises, in the proposal's own words.
        "Step 1 removes the condition that checks if the hostnames are different, which breaks "
        "the rule that redirects to another host drop the header.",
        # It asks for something the proposal does not say.
        "The condition on line 132 should compare default ports as equal.",
    ],
)
def test_a_demand_that_adds_something_or_a_critique_stays_an_objection(item):
    assert objections(f"- {item}", restating=WALK_SAID, cited={6: E6}) == [item]
