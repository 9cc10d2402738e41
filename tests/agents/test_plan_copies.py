"""A final plan never shows the prompt's own words as its content (seen from the 0.5B model on
swe-dev seaborn-3010)."""

from agents.planning.nodes import without_copies

REQUEST = (
    "Write the final implementation plan as JSON. summary: a short paragraph on what the "
    "change does and why. decisions: the design choices, each with its reason. steps: "
    "ordered, each with a title, a detail citing `path:line`, and its files. testing: the "
    "concrete tests to add or run. risks: the concrete failure cases of this change and how "
    "to guard against them. effort: size S, M, L or XL and an estimate such as '2-3 days'."
)
# What the model wrote, verbatim, for those fields.
JUNK = {
    "summary": "A short paragraph on what the change does and why.",
    "decisions": ["Change to handle missing data in PolyFit"],
    "steps": [{"title": "Drop missing rows in PolyFit", "detail": "In regression.py:30."}],
    "testing": [
        "The concrete tests to add or run are not provided.",
        "The concrete failure cases of this change and how to guard against them are not provided.",
        "Effort is size S, M, L or XL and an estimate such as '2-3 days'.",
    ],
    "risks": [
        "The concrete failure cases of this change and how to guard against them",
        "PolyFit on all-missing data would now return an empty frame; test it.",
    ],
}


def test_fields_that_copy_the_request_are_replaced_by_what_code_knows():
    plan = without_copies(JUNK, REQUEST, "pytest")
    assert plan["summary"] == "The change, step by step: Drop missing rows in PolyFit."
    assert plan["testing"] == [
        "Add a test that reproduces the task's problem and fails before the change; run `pytest`."
    ]
    assert plan["risks"] == [JUNK["risks"][1]]
    assert plan["decisions"] == JUNK["decisions"]


def test_a_plan_in_its_own_words_is_left_as_it_is():
    own = {
        **JUNK,
        "summary": "PolyFit drops rows with missing x or y before fitting, so a None in the "
        "data no longer raises LinAlgError.",
        "testing": ["test_polyfit_missing_data: a None in x gives the same fit as without it"],
        "risks": JUNK["risks"][1:],
    }
    assert without_copies(own, REQUEST, "pytest") == own


def test_a_proposal_summary_that_copies_its_request_is_rebuilt_from_the_steps():
    request = "Propose the change as JSON. summary: two or three sentences on what changes and why."
    proposal = {
        "summary": "Two or three sentences on what changes and why.",
        "steps": [{"title": "Drop missing rows in PolyFit", "detail": "", "files": []}],
        "files": [],
    }
    cleaned = without_copies(proposal, request, "")
    assert cleaned["summary"] == "The change, step by step: Drop missing rows in PolyFit."
    assert "testing" not in cleaned  # a proposal has no Testing section to fill


# The app's checks of the proposal, as finalize_plan shows them to the model, and a plan that
# pastes one after its own words (local-1.5b on seaborn-2848, in every step, reason and test).
CHECKS = [
    "[E5] finds `iris` defined at `examples/jitter_stripplot.py:11-11`; the proposal changes "
    "nothing in that file.",
    "No test file changes, though `seaborn/_core/plot.py`, which changes, has tests: "
    "`tests/_core/test_plot.py`.",
]
PASTED = " [E5] finds `iris` defined at `examples/jitter_stripplot.py:11-11]; the proposal changes nothing in that file."  # noqa: E501


def test_sentences_that_paste_the_apps_checks_are_taken_out_of_every_field():
    plan = {
        "summary": "Map hue levels through the palette before lookup." + PASTED,
        "decisions": ["Keep the lookup table." + PASTED],
        "steps": [
            {
                "title": "Look up hue levels",
                "detail": "In `_lookup_single`, use the norm." + PASTED,
                "files": ["seaborn/_oldcore.py"],
            },
        ],  # fmt: skip
        "files": [
            {"path": "seaborn/_oldcore.py", "action": "modify", "reason": "Lookup." + PASTED}
        ],
        "testing": [
            "test_pairgrid_hue_in_map: categorical hue passed to map() draws without KeyError.",
            CHECKS[1],  # the whole item is a check
        ],
        "risks": [],
    }
    cleaned = without_copies(plan, REQUEST, "pytest", CHECKS)
    assert cleaned["summary"] == "Map hue levels through the palette before lookup."
    assert cleaned["decisions"] == ["Keep the lookup table."]
    assert cleaned["steps"][0]["detail"] == "In `_lookup_single`, use the norm."
    assert cleaned["steps"][0]["files"] == ["seaborn/_oldcore.py"]
    assert cleaned["files"][0]["reason"] == "Lookup."
    assert cleaned["testing"] == [plan["testing"][0]]
    # Without checks nothing is taken out.
    assert without_copies(plan, REQUEST, "pytest")["steps"] == plan["steps"]


def test_a_decision_or_risk_that_is_the_summary_again_is_taken_out():
    # seaborn-3010 on the 1.5B model: its one "decision" was its summary, word for word.
    summary = (
        "The `PolyFit` class in `seaborn/_stats/regression.py` is not robust to missing data. "
        "To fix this, we drop rows with missing values from the DataFrame before passing it "
        "to the `groupby.apply` method."
    )
    decision = "Drop the missing rows in `PolyFit.__call__`, not in `Plot`: only fits need it."
    plan = without_copies(
        {**JUNK, "summary": summary, "decisions": [summary, decision], "risks": [summary]},
        REQUEST,
        "pytest",
    )
    assert plan["summary"] == summary
    assert plan["decisions"] == [decision]
    assert plan["risks"] == []


# The requests 2.20.0 walk's plan (local-1.5b), verbatim but cut: one step's detail copied into
# Decisions, Testing, Risks and the next step's detail.
FIX = (
    "The function `should_strip_auth` is modified to check if the hostnames of the two URLs "
    "are different and if the scheme is not the same. If both conditions are met, the function "
    "returns `True`, indicating that the Authorization header should be removed."
)
REPEATED = {
    "summary": "The `should_strip_auth` function in `requests/sessions.py` is modified to "
    "correctly handle redirects to the same host and port.",
    "decisions": [FIX],
    "steps": [
        {"title": "Correct the function", "detail": FIX, "files": ["requests/sessions.py"]},
        {
            "title": "Add tests",
            "detail": FIX + " (see `requests/sessions.py:118-132`)",
            "files": ["requests/sessions.py"],
        },
    ],  # fmt: skip
    "testing": [FIX[:150]],
    "risks": [FIX[:150], "A redirect to a non-default port on the same host must still strip it."],
}


def test_a_step_repeated_in_decisions_testing_risks_and_the_next_step_is_said_once():
    plan = without_copies(REPEATED, REQUEST, "pytest")
    assert plan["steps"][0] == REPEATED["steps"][0]
    # The second step keeps its title and files, not the first step's words.
    assert plan["steps"][1] == {**REPEATED["steps"][1], "detail": ""}
    assert plan["decisions"] == []
    assert plan["risks"] == [REPEATED["risks"][1]]
    assert plan["testing"] == [
        "Add a test that reproduces the task's problem and fails before the change; run `pytest`."
    ]


# seaborn-2848 on local-1.5b: the summary said its last sentence three times and stopped
# mid-word, and the plan page showed all of it.
LOOPING = (
    "The proposal changes `seaborn/_oldcore.py` to handle categorical hue. "
    "The changes are done in `seaborn/categorical.py` first, followed by `seaborn/utils.py`. "
    "The changes are done in `seaborn/categorical.py` first, followed by `seaborn/utils.py`. "
    "The changes are done in `seaborn/categorical.py` first, followed by `seabор"
)


def test_a_summary_that_loops_keeps_each_sentence_once_and_drops_the_cut_repeat():
    plan = without_copies(
        {"summary": LOOPING, "steps": [{"title": "Fix", "detail": LOOPING}]}, REQUEST, "pytest"
    )
    once = (
        "The proposal changes `seaborn/_oldcore.py` to handle categorical hue. "
        "The changes are done in `seaborn/categorical.py` first, followed by `seaborn/utils.py`."
    )
    assert plan["summary"] == once
    assert plan["steps"][0]["detail"] == once


def test_text_that_does_not_loop_is_kept_as_written_even_when_it_ends_mid_sentence():
    text = "Change `f` in `a.py`. Then add a test for the empty case. Also update the"
    plan = without_copies({"summary": text, "steps": []}, REQUEST, "pytest")
    assert plan["summary"] == text
