"""The web console (/console) in a real browser: headless Chromium driven by Selenium, against `chatctx serve`
seeded with a forum chat (tests/data/forum-chat.jsonl) and a few tool calls.

Run by the Rust test `console::the_console_works_in_a_real_browser` (CHATCTX_TEST_CONSOLE names this venv's
Python, CHATCTX_BIN the server). Screenshots go to CHATCTX_SCREENSHOTS (target/console-screenshots)."""

import json
import os
import pathlib
import socket
import subprocess
import time
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

HERE = pathlib.Path(__file__).resolve().parent
FORUM = HERE.parent / "data" / "forum-chat.jsonl"
CHAT = "-1001777000042"
TOKEN = "console-test-token-0123456789"
NOW = 1779703300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(base: str, path: str, body, request_id=None):
    headers = {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}
    if request_id:
        headers["x-request-id"] = request_id
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
        return json.load(r)


@pytest.fixture(scope="module")
def server():
    port = free_port()
    # Three older messages chosen, so that the record shows some left out.
    env = dict(os.environ, CHATCTX_SERVER__TOKENS=f'["{TOKEN}"]', CHATCTX_LOG="warn", CHATCTX_CONVERSATION__LEXICAL_KEEP="3")
    proc = subprocess.Popen(
        [os.environ["CHATCTX_BIN"], "serve", "--preset", "group-bot", "--store", "memory", "--listen", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    events = [json.loads(line)["event"] for line in FORUM.read_text().splitlines() if line.startswith("{")]
    post(base, "/v1/events", events)
    post(base, "/v1/tools/get_chat_history_context", {"chat_id": CHAT, "current_message_id": "521", "now": NOW}, "bob-asks-about-the-scree")
    post(base, "/v1/tools/resolve_reference_target",
         {"chat_id": CHAT, "current_message_id": "524", "sender_user_id": "102", "now": NOW,
          "normalized_reference_hints": {"target_kind_hint": "poll"}}, "which-poll")
    post(base, "/v1/tools/list_active_context_objects", {"chat_id": CHAT, "current_message_id": "524", "now": NOW}, "live-objects")
    post(base, "/v1/tools/update_scenario", {"chat_id": CHAT, "topic_id": "12", "patch": {"ridge_day": "Sunday", "bus": "6:05"}, "now": NOW})
    post(base, "/v1/tools/update_scenario", {"chat_id": CHAT, "topic_id": "12", "patch": {"bus": "6:05 from the station", "open": ["second gas cartridge"]}, "now": NOW + 60})
    post(base, "/v1/tools/get_chat_history_context", {"chat_id": CHAT, "current_message_id": "524", "now": NOW}, "bob-asks-about-the-chains")
    yield base
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    # A profile under pytest's own temporary directory, which pytest prunes, instead of one Chromium leaves in /tmp.
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.binary_location = os.environ.get("CHATCTX_CHROMIUM", "/usr/bin/chromium")
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--hide-scrollbars", "--force-device-scale-factor=1"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(os.environ.get("CHATCTX_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    yield driver
    driver.quit()


def shots() -> pathlib.Path:
    d = pathlib.Path(os.environ.get("CHATCTX_SCREENSHOTS", "target/console-screenshots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def wait(driver, css, timeout=10):
    return WebDriverWait(driver, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def set_size(driver, width, height):
    # The window's inner size, whatever the browser's frame adds.
    driver.set_window_size(width, height)
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    driver.set_window_size(width + (width - inner[0]), height + (height - inner[1]))


def test_the_console_shows_what_the_model_saw_and_why(server, browser):
    set_size(browser, 1280, 900)
    browser.get(server + "/console")
    # The server wants a token: the console asks once and keeps it in the tab's session.
    dialog = wait(browser, "dialog[open]")
    dialog.find_element(By.ID, "token-input").send_keys(TOKEN)
    dialog.find_element(By.ID, "token-save").click()
    chat = wait(browser, f'#chat-list li[data-chat="{CHAT}"]')
    # Chats and topics by the names the platform told (title events), the id beside.
    assert "Tatra weekend" in chat.text and CHAT in chat.text, chat.text
    chat.click()
    assert browser.find_element(By.ID, "chat-title").text == "Tatra weekend"

    # Each call says where it was and what it answered: topic, sender, the message's first words.
    call = wait(browser, '#call-list li[data-request="bob-asks-about-the-scree"]')
    assert "Route" in call.text and "Bob: Is the Zawrat descent OK" in call.text, call.text
    # The history call for Bob's reply to the photo: every message considered, with its reason.
    call.click()
    wait(browser, "table.verdicts tbody tr")
    rows = {r.get_attribute("data-message"): r for r in browser.find_elements(By.CSS_SELECTOR, "table.verdicts tbody tr")}
    assert "reply parent" in rows["505"].text and "Zawrat descent" in rows["505"].text, rows["505"].text
    assert "recent window" in rows["519"].text
    assert "in" in rows["505"].find_element(By.CSS_SELECTOR, ".badge").text
    reasons = {r.find_element(By.CSS_SELECTOR, ".reason").text for r in rows.values()}
    assert {"reply parent", "recent window", "lexical score", "not chosen"} <= reasons, reasons
    dropped = [r for r in rows.values() if "not chosen" in r.text]
    assert all("out" in r.find_element(By.CSS_SELECTOR, ".badge").text for r in dropped)
    assert "501" not in rows and "508" not in rows, "another topic's messages are not in this topic's prompt"
    # ... and the record says so: the general thread's and Gear's items were not considered.
    others = browser.find_element(By.CSS_SELECTOR, ".other-topics").text
    assert others.startswith("8 items in other topics were not considered"), others
    prompt = browser.find_element(By.CSS_SELECTOR, ".prompt").text
    assert "Cash only, bring złoty." in prompt and "Photo from last year" in prompt, prompt
    assert "Is the Zawrat descent OK" in prompt, "the current message closes the prompt"
    time.sleep(0.3)
    browser.save_screenshot(str(shots() / "desktop-history-call.png"))
    # The prompt panel says it is chatctx's part of what the model sees (the bot adds its own system prompt).
    heading = browser.find_element(By.XPATH, "//h4[contains(., 'part of the prompt')]")
    assert "the bot adds its own system prompt" in heading.text.lower(), heading.text
    browser.execute_script("arguments[0].scrollIntoView()", heading)
    time.sleep(0.2)
    browser.save_screenshot(str(shots() / "desktop-history-prompt.png"))
    browser.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.2)

    # The resolver's candidate table.
    browser.find_element(By.CSS_SELECTOR, '#call-list li[data-request="which-poll"]').click()
    wait(browser, "table.candidates tbody tr")
    first = browser.find_element(By.CSS_SELECTOR, "table.candidates tbody tr").text
    assert "513:poll" in first and "#1" in first, first
    # A candidate shows who posted it and its first words, not only its id.
    assert "TrailMate: Ridge day" in first, first
    browser.save_screenshot(str(shots() / "desktop-resolver.png"))

    # History, objects and state tabs.
    browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="history"]').click()
    item = wait(browser, '.hist-item[data-message="523"]')
    assert "TrailMate" in item.text and "↩ 522" in item.text, item.text
    assert "Route" in item.text, "the topic by its name"
    # A refresh that finds nothing new redraws nothing: the element drawn before is still the one on the page.
    browser.execute_script("arguments[0].dataset.seen = 'yes'", item)
    time.sleep(2.5)
    assert browser.find_element(By.CSS_SELECTOR, '.hist-item[data-message="523"]').get_attribute("data-seen") == "yes"
    browser.save_screenshot(str(shots() / "desktop-history.png"))
    browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="objects"]').click()
    wait(browser, ".tl-row")
    assert "513:poll" in browser.find_element(By.CSS_SELECTOR, ".timeline").text
    browser.save_screenshot(str(shots() / "desktop-objects.png"))
    browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="state"]').click()
    wait(browser, ".rev .diff")
    state = browser.find_element(By.ID, "tab-state").text
    assert '~ bus: "6:05" → "6:05 from the station"' in state, state
    browser.save_screenshot(str(shots() / "desktop-state.png"))

    # Live: a new message and a new call show up without a reload.
    browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="calls"]').click()
    post(server, "/v1/events", {"type": "message", "chat_id": CHAT, "chat_type": "supergroup", "message_id": "525",
                                "kind": "inbound_user", "sent_at": NOW + 120, "topic_id": "12", "triggered_agent": True,
                                "sender": {"user_id": "103", "username": "carol_m", "first_name": "Carol"},
                                "text": "@trailmate_bot remind us to buy złoty on Friday"})
    post(server, "/v1/tools/get_chat_history_context", {"chat_id": CHAT, "current_message_id": "525", "now": NOW + 125}, "carol-live")
    wait(browser, '#call-list li[data-request="carol-live"]', timeout=10)

    # The token stays for the session: loading the console again asks for nothing. (The address without its
    # `#…`: a reload of the linked view reopens the chat and call by itself, tested below.)
    browser.get(server + "/console")
    wait(browser, f'#chat-list li[data-chat="{CHAT}"]')
    assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]")

    # A phone: the chat list is a drawer, the call detail stacks.
    set_size(browser, 390, 844)
    browser.find_element(By.ID, "menu").click()
    wait(browser, f'#chat-list li[data-chat="{CHAT}"]')
    time.sleep(0.3)
    browser.save_screenshot(str(shots() / "phone-chats.png"))
    browser.find_element(By.CSS_SELECTOR, f'#chat-list li[data-chat="{CHAT}"]').click()
    wait(browser, '#call-list li[data-request="bob-asks-about-the-scree"]').click()
    wait(browser, "table.verdicts tbody tr")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone ({width} px)"
    detail = browser.find_element(By.ID, "call-detail")
    browser.execute_script("arguments[0].scrollIntoView()", detail)
    time.sleep(0.3)
    browser.save_screenshot(str(shots() / "phone-history-call.png"))


def history_reads(base: str) -> int:
    """How many history reads the server answered so far (from /metrics)."""
    req = urllib.request.Request(base + "/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("chatctx_http_requests_total") and 'route="/v1/chats/{chat_id}/history"' in line
    )


def test_a_chat_with_many_topics_is_read_once_per_refresh(server, browser):
    """Issue 28, point 10: the console reads a chat with many topics whole, once per refresh, not once per topic."""
    chat = "-1009000000001"
    events = [{"type": "message", "chat_id": chat, "message_id": str(i), "topic_id": str(1000 + i), "kind": "inbound_user",
               "sent_at": NOW + i, "sender": {"user_id": "1", "username": "ann"}, "text": f"topic {i}"} for i in range(40)]
    post(server, "/v1/events", events)
    set_size(browser, 1280, 900)
    browser.get(server + "/console")
    if browser.find_elements(By.CSS_SELECTOR, "dialog[open]"):
        dialog = wait(browser, "dialog[open]")
        dialog.find_element(By.ID, "token-input").send_keys(TOKEN)
        dialog.find_element(By.ID, "token-save").click()
    wait(browser, f'#chat-list li[data-chat="{chat}"]').click()
    before = history_reads(server)
    browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="history"]').click()
    wait(browser, '.hist-item[data-message="39"]')
    post(server, "/v1/events", {"type": "message", "chat_id": chat, "message_id": "40", "topic_id": "1000",
                                "kind": "inbound_user", "sent_at": NOW + 40, "sender": {"user_id": "1", "username": "ann"},
                                "text": "one more"})
    wait(browser, '.hist-item[data-message="40"]', timeout=10)
    reads = history_reads(server) - before
    assert reads <= 4, f"{reads} history reads for two refreshes of a chat with 40 topics"


def test_a_deep_link_opens_the_chat_and_the_call(server, browser):
    """Issue 30, point 5: what is on screen is in the address; a link (token included, for a plain screenshot of a
    server with tokens) opens that chat and that call, and the token leaves the address at once."""
    set_size(browser, 1280, 900)
    browser.get(server + "/console")
    browser.execute_script("sessionStorage.clear()")
    browser.get(f"{server}/console#chat={CHAT}&channel=telegram&tab=calls&call=which-poll&token={TOKEN}")
    browser.refresh()
    first = wait(browser, "table.candidates tbody tr").text
    assert "513:poll" in first, first
    assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the token came with the link"
    assert TOKEN not in browser.current_url, browser.current_url
    assert "call=which-poll" in browser.current_url and f"chat={CHAT}" in browser.current_url
    time.sleep(0.3)
    browser.save_screenshot(str(shots() / "desktop-deep-link.png"))
    # Picking another call puts it in the address.
    browser.find_element(By.CSS_SELECTOR, '#call-list li[data-request="live-objects"]').click()
    assert "call=live-objects" in browser.current_url
