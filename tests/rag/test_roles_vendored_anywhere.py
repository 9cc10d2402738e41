"""Vendored code is recognised wherever it lives, by what its code shows rather than by its
folder's name (issue 19: a package vendoring two libraries under `pkg/packages/`, as requests
once did with urllib3 and chardet, showed "Vendored and generated files (0)", and the agents
were told the copies were its entry points and its most imported files). The project's own
code is never marked vendored."""

from rag import profile
from rag.roles import classify, reason_for, vendored_packages

HOST = {
    "setup.py": "from setuptools import setup\nsetup(name='webby', packages=['webby'])\n",
    "webby/__init__.py": "from webby.api import get\n__version__ = '2.5.0'\n",
    "webby/api.py": "from . import sessions\n\n\ndef get(url):\n    return sessions.Session().get(url)\n",
    "webby/sessions.py": (
        "from webby.packages.urllib3 import PoolManager\n"
        "from .compat import urlparse\n\n\n"
        "class Session:\n    def get(self, url):\n        return PoolManager().request(url)\n"
    ),
    "webby/compat.py": "from urllib.parse import urlparse\n",
    "webby/packages/__init__.py": "from . import urllib3\n",
    # A copy with its own version, importing only itself (relative) and the standard library.
    "webby/packages/urllib3/__init__.py": (
        "from .poolmanager import PoolManager\n__version__ = '1.10.2'\n"
    ),
    "webby/packages/urllib3/poolmanager.py": (
        "import socket\nfrom .util.url import parse_url\n\n\n"
        "class PoolManager:\n    def request(self, url):\n        return parse_url(url)\n"
    ),
    "webby/packages/urllib3/util/__init__.py": "",
    "webby/packages/urllib3/util/url.py": (
        "from ..exceptions import LocationParseError\n\n\ndef parse_url(url):\n    return url\n"
    ),
    "webby/packages/urllib3/exceptions.py": "class LocationParseError(ValueError):\n    pass\n",
    # A copy with no version: the name of a library often vendored, importing itself by its
    # bare name as code written to be installed on its own does.
    "webby/packages/chardet/__init__.py": "from chardet.detector import detect\n",
    "webby/packages/chardet/detector.py": "def detect(data):\n    return 'ascii'\n",
    "webby/packages/chardet/cli.py": (
        "from chardet.detector import detect\n\n\ndef main():\n    print(detect(b''))\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
    "webby/__main__.py": "from webby.api import get\n\nget('http://example.org')\n",
    # The project's own subpackages: one with a version module of its own that uses its host,
    # one that imports nothing at all and shows no sign of coming from elsewhere.
    "webby/auth/__init__.py": "from webby.api import get\n",
    "webby/auth/version.py": "VERSION = '1'\n",
    "webby/auth/basic.py": "from ..compat import urlparse\n",
    "webby/hooks/__init__.py": "HOOKS = ['response']\n",
    "webby/hooks/dispatch.py": "def dispatch(hooks, data):\n    return data\n",
    "tests/test_api.py": "from webby.api import get\n",
}


def roles_of(files):
    items = list(files.items())
    return dict(zip(files, classify(items), strict=True))


def test_two_libraries_vendored_under_a_plain_folder_name_are_found_by_their_code():
    assert sorted(vendored_packages(list(HOST.items()))) == [
        "webby/packages/chardet/",
        "webby/packages/urllib3/",
    ]
    roles = roles_of(HOST)
    assert all(roles[p] == "vendored" for p in HOST if p.startswith("webby/packages/urllib3/"))
    assert all(roles[p] == "vendored" for p in HOST if p.startswith("webby/packages/chardet/"))


def test_the_projects_own_code_is_never_marked_vendored():
    roles = roles_of(HOST)
    own = [
        p for p in HOST if not p.startswith(("webby/packages/urllib3/", "webby/packages/chardet/"))
    ]
    assert [p for p in own if roles[p] == "vendored"] == []


def test_a_subpackage_that_reaches_into_its_host_is_not_a_copy_whatever_its_name():
    files = {
        **HOST,
        "webby/packages/six/__init__.py": "from webby.compat import urlparse\n__version__ = '1'\n",
        "webby/packages/idna/__init__.py": "from ... import compat\n",
    }
    found = vendored_packages(list(files.items()))
    assert "webby/packages/six/" not in found and "webby/packages/idna/" not in found


def test_the_codebase_page_says_why_a_file_of_a_copy_is_vendored():
    reason = reason_for("webby/packages/urllib3/poolmanager.py", "", "vendored")
    assert "copied from another project" in reason
    assert "its own version" in vendored_packages(list(HOST.items()))["webby/packages/urllib3/"]


def test_the_profile_offers_no_vendored_file_as_an_entry_point():
    entry_points = [e.path for e in profile.analyze(profile.sources(HOST)).profile.entry_points]
    assert "webby/__main__.py" in entry_points
    assert not [p for p in entry_points if p.startswith("webby/packages/")]


def test_the_profile_offers_no_vendored_file_as_a_most_imported_one():
    most = [p for p, _ in profile.analyze(profile.sources(HOST)).profile.most_imported]
    assert most, "the profile found no import at all to check"
    assert not [p for p in most if p.startswith("webby/packages/")]
