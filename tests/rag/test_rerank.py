from rag import profile
from rag.rerank import CodeFacts, called_names, rerank

API = """from shop.core import Inner


class Frame:
    def __init__(self):
        self._inner = Inner()

    def copy(self, deep=True):
        return Frame(self._inner.copy(deep))
"""
CORE = """class Inner:
    def copy(self, deep=True):
        return Inner()
"""
OTHER = "def helper():\n    return 1\n"
TASK = "Frame.copy(deep=True) loses the attrs: `f.copy(deep=True).attrs` is empty."
FIRST = ["shop/api.py", "shop/other.py", "shop/core.py"]


def facts_of(tmp_path, files):
    profile.build_into(tmp_path, profile.sources(files))
    return CodeFacts.load(tmp_path)


def paths(reranked):
    return [r.path for r in reranked]


def test_a_method_handed_down_moves_the_file_doing_the_work_up(tmp_path):
    files = {"shop/api.py": API, "shop/core.py": CORE, "shop/other.py": OTHER}
    result = rerank(TASK, FIRST, facts_of(tmp_path, files))
    assert paths(result) == ["shop/core.py", "shop/api.py", "shop/other.py"]
    assert result[0].first_rank == 3
    assert "`copy` is handed down" in result[0].reason


def test_modules_importing_each_other_leave_the_order_alone(tmp_path):
    core = "from shop import api\n\n" + CORE  # one layer: which calls which is not known
    files = {"shop/api.py": API, "shop/core.py": core, "shop/other.py": OTHER}
    assert paths(rerank(TASK, FIRST, facts_of(tmp_path, files))) == FIRST


def test_a_method_that_does_not_call_down_leaves_the_order_alone(tmp_path):
    api = API.replace("Frame(self._inner.copy(deep))", "Frame()")
    files = {"shop/api.py": api, "shop/core.py": CORE, "shop/other.py": OTHER}
    assert paths(rerank(TASK, FIRST, facts_of(tmp_path, files))) == FIRST


def test_a_task_calling_no_method_leaves_the_order_alone(tmp_path):
    files = {"shop/api.py": API, "shop/core.py": CORE, "shop/other.py": OTHER}
    facts = facts_of(tmp_path, files)
    assert paths(rerank("Copying frames loses attributes", FIRST, facts)) == FIRST


def test_without_a_symbol_table_the_order_stands(tmp_path):
    assert paths(rerank(TASK, FIRST, CodeFacts.load(tmp_path))) == FIRST


def test_called_names_are_methods_and_calls_not_builtins():
    assert called_names("x = len(ds.copy()) + print(a.__dict__)") == ["copy"]


def test_the_app_reranks_a_codebases_retrieved_files(alice, make_codebase):
    import json

    from rag.indexing import index_codebase
    from rag.retrieval import rerank_paths

    files = {"shop/api.py": API, "shop/core.py": CORE, "shop/other.py": OTHER}
    codebase = make_codebase(alice, json.dumps({"files": files}).encode())
    index_codebase(codebase.pk)
    assert rerank_paths(codebase, TASK, FIRST + ["shop/api.py"]) == [
        "shop/core.py",
        "shop/api.py",
        "shop/other.py",
    ]
