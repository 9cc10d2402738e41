import pytest

from tests.browser.live import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, through Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()
