"""The web console (GET /ui) driven by a real headless browser (Debian's
chromium through chromedriver and selenium): it shows the pipelines and
their generations, live per-node rates, a replace progressing core by core
without a reload, a rollback clicked with the token, and stays readable
with 50 pipelines at 1280x800. Screenshots of each state are kept in
build/console/ for people to look at."""

import os
import shutil
import tempfile
import unittest

from harness import Admin, EngineTest, engine_yaml, free_port, wait_until

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

SHOTS = os.path.join(os.environ.get("DROVER_BIN", "build/bin"), "..", "console")
TOKEN = "console-test-token-0123456789"
# A script whose top level takes a moment: each new instance is slow to get
# ready, so a replace can be watched core by core.
SLOW_START = "local n = 0\nfor i = 1, 20000000 do n = n + i end\nfunction process(r) r.v = %d return r end\n"


def browser():
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,800", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)


class Console(EngineTest):
    def setUp(self):
        self.token_dir = tempfile.mkdtemp()
        token_file = os.path.join(self.token_dir, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        self.http_port = free_port()
        config = engine_yaml(engine_extra="  heartbeat_interval_ms: 200\n").replace(
            '{ http: "127.0.0.1:HTTP" }', '{ http: "127.0.0.1:HTTP", http_token_file: %s }' % token_file)
        self.start_engine(config.replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port, token=TOKEN)
        self.admin.wait_ready()
        self.driver = browser()
        self.addCleanup(self.driver.quit)
        self.addCleanup(shutil.rmtree, self.token_dir, True)
        os.makedirs(SHOTS, exist_ok=True)

    def put(self, name, value, cores=2, rate=200, wait="true"):
        spec = {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": rate, "count": 0, "record": {"m": "x"}},
                   "to": ["script"]},
            "script": {"type": "processor:lua", "config": {"script": SLOW_START % value, "max_instructions": 2000000000},
                       "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}?wait={wait}", body=spec,
                                          timeout=60)
        self.assertIn(status, (200, 202), body)

    def shot(self, name):
        self.driver.save_screenshot(os.path.join(SHOTS, name))

    def js(self, script):
        return self.driver.execute_script(script)

    def card(self, key):
        found = self.driver.find_elements(By.CSS_SELECTOR, f'article.card[data-pipeline="{key}"]')
        return found[0] if found else None

    def wait_card(self, key, what, predicate, timeout=20):
        def check():
            try:
                c = self.card(key)
                return c if c is not None and predicate(c) else None
            except StaleElementReferenceException:
                return None  # the page drew the card again meanwhile (once a second)
        return wait_until(check, timeout, f"{key}: {what}", interval=0.05)

    def click(self, key, action):
        def attempt():
            try:
                self.card(key).find_element(By.CSS_SELECTOR, f'button[data-action="{action}"]').click()
                return True
            except StaleElementReferenceException:
                return False
        wait_until(attempt, 10, f"a click on {action}", interval=0.05)

    def test_pipelines_rates_a_replace_core_by_core_and_a_rollback_with_the_token(self):
        self.put("p", 1)
        self.put("q", 1, cores=1)
        self.driver.get(f"http://127.0.0.1:{self.http_port}/ui")
        self.js("window.loadedOnce = true")  # gone if the page reloads
        self.wait_card("default:p", "generation 1 running",
                       lambda c: c.get_attribute("data-generation") == "1" and c.get_attribute("data-phase") == "running"
                       and c.get_attribute("data-source") == "api" and "from api" in c.text)
        self.assertIsNotNone(self.card("default:q"))
        nodes = self.wait_card("default:p", "its node graph", lambda c: len(c.find_elements(By.CSS_SELECTOR, "g[data-node]")) == 3)
        self.assertEqual([g.get_attribute("data-node") for g in nodes.find_elements(By.CSS_SELECTOR, "g[data-node]")],
                         ["in", "script", "out"])
        rate = self.wait_card("default:p", "a live rate on node in", lambda c: (lambda t: t.endswith("/s") and
                              t != "0.0/s")(c.find_element(By.CSS_SELECTOR, 'g[data-node="in"] text.rate').text))
        self.assertTrue(rate)
        self.wait_card("default:p", "both instances", lambda c: sorted(
            i.get_attribute("data-instance") for i in c.find_elements(By.CSS_SELECTOR, ".inst")) ==
            ["default/p@1#0", "default/p@1#1"])
        self.assertEqual(self.driver.find_element(By.ID, "conn").text, "live")
        self.shot("1-running.png")

        # A replace, watched as it goes: the page is not reloaded; SSE brings each core's steps.
        self.put("p", 2, wait="false")
        self.wait_card("default:p", "the replace under way",
                       lambda c: c.find_elements(By.CSS_SELECTOR, '.rollout[data-state="running"] .core.starting, '
                                                                  '.rollout[data-state="running"] .core.ready, '
                                                                  '.rollout[data-state="running"] .core.switched'))
        self.shot("2-replacing.png")
        self.wait_card("default:p", "generation 2", lambda c: c.get_attribute("data-generation") == "2" and
                       c.get_attribute("data-phase") == "running", timeout=30)
        self.shot("3-replaced.png")
        self.assertTrue(self.js("return window.loadedOnce === true"), "no reload")
        history = self.js("return window.droverConsole.history.filter(h => h.pipeline === 'default:p')")
        steps = [h["cores"] for h in history if h["rollout"] == "rollout-3"]
        self.assertTrue(any(s.get("0") == "retired" and s.get("1") in ("pending", "starting", "ready") for s in steps)
                        or any(s.get("1") == "retired" and s.get("0") in ("pending", "starting", "ready") for s in steps),
                        f"one core done while the other is not yet: {steps}")
        self.assertEqual(steps[-1], {"0": "retired", "1": "retired"})

        # Rollback without the token: refused; with it: generation 3 (generation 1's spec).
        self.click("default:p", "rollback")
        self.click("default:p", "rollback")  # the second click confirms
        wait_until(lambda: "401" in self.driver.find_element(By.ID, "toast").text, 10, "401 without the token")
        self.driver.find_element(By.ID, "token").send_keys(TOKEN)
        self.click("default:p", "rollback")
        self.click("default:p", "rollback")
        self.wait_card("default:p", "generation 3 after the rollback",
                       lambda c: c.get_attribute("data-generation") == "3" and c.get_attribute("data-phase") == "running",
                       timeout=30)
        events = [e.get_attribute("data-topic") for e in self.driver.find_elements(By.CSS_SELECTOR, "#events li")]
        self.assertIn("rollout.succeeded", events)
        self.assertIn("instance.ready", events)
        self.shot("4-rolled-back.png")
        self.assertTrue(self.js("return window.loadedOnce === true"), "no reload")

    def test_a_canary_is_steered_from_the_page(self):
        self.put("p", 1, cores=2, rate=200)
        self.driver.get(f"http://127.0.0.1:{self.http_port}/ui")
        self.driver.find_element(By.ID, "token").send_keys(TOKEN)
        self.wait_card("default:p", "generation 1 running", lambda c: c.get_attribute("data-phase") == "running")

        def canary_put(value, hold):
            spec = {"pipeline": {"cores": {"count": 2}, "nodes": {
                "in": {"type": "receiver:generator", "config": {"rate": 200, "count": 0, "record": {"m": value}},
                       "to": ["out"]},
                "out": {"type": "exporter:null"}},
                "policies": {"rollout": {"canary": {"cores": 1, "hold_secs": hold, "auto_promote": False}}}}}
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p?wait=false", body=spec)
            self.assertEqual(status, 202, body)
            return body["rollout_id"]

        # A canary holding: the page shows it paused with its verdict, and promote ends the hold.
        canary_put("a", 600)
        self.wait_card("default:p", "the canary holding",
                       lambda c: c.find_elements(By.CSS_SELECTOR, '.rollout[data-state="paused"] .canary[data-verdict="pending"]'))
        self.shot("6-canary-holding.png")
        self.click("default:p", "promote")
        self.click("default:p", "promote")  # confirm
        self.wait_card("default:p", "generation 2 after the promote",
                       lambda c: c.get_attribute("data-generation") == "2" and c.get_attribute("data-phase") == "running",
                       timeout=30)
        # Another: pause, resume, then abort from the page.
        rid = canary_put("b", 600)
        self.wait_card("default:p", "the second canary holding",
                       lambda c: c.find_elements(By.CSS_SELECTOR, f'.rollout[data-rollout="{rid}"][data-state="paused"]'))
        self.click("default:p", "pause")
        self.click("default:p", "pause")
        self.wait_card("default:p", "a resume button once paused",
                       lambda c: c.find_elements(By.CSS_SELECTOR, 'button[data-action="resume"]'))
        self.click("default:p", "resume")
        self.click("default:p", "resume")
        self.wait_card("default:p", "pause offered again",
                       lambda c: c.find_elements(By.CSS_SELECTOR, 'button[data-action="pause"]'))
        self.click("default:p", "abort")
        self.click("default:p", "abort")
        self.wait_card("default:p", "the rollout aborted",
                       lambda c: c.find_elements(By.CSS_SELECTOR, f'.rollout[data-rollout="{rid}"][data-state="failed"]'),
                       timeout=30)
        self.assertIn("aborted by the operator", self.card("default:p").text)
        status, r, _ = self.admin.http("GET", f"/api/v1/groups/default/pipelines/p/rollouts/{rid}")
        self.assertEqual([h["action"] for h in r["history"]], ["pause", "resume", "abort"])
        self.shot("7-canary-aborted.png")

    def test_fifty_pipelines_stay_readable_at_1280x800(self):
        for n in range(50):
            spec = {"pipeline": {"nodes": {
                "in": {"type": "receiver:generator", "config": {"rate": 5, "count": 0}, "to": ["out"]},
                "out": {"type": "exporter:null"}}}}
            status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/p{n:02d}?wait=false", body=spec)
            self.assertIn(status, (200, 202), body)
        self.driver.get(f"http://127.0.0.1:{self.http_port}/ui")
        wait_until(lambda: len(self.driver.find_elements(By.CSS_SELECTOR, 'article.card[data-phase="running"]')) == 50,
                   60, "50 running pipelines on the page", interval=0.2)
        self.assertIn("50 pipelines", self.driver.find_element(By.ID, "summary").text)
        self.assertLessEqual(self.js("return document.documentElement.scrollWidth"), 1280, "no sideways scrolling")
        width = self.js("return document.querySelector('article.card').getBoundingClientRect().width")
        self.assertGreaterEqual(width, 400, "cards wide enough to read")
        self.shot("5-fifty-pipelines.png")
        # A tap shows records: with a token configured it needs it, unlike the other GET routes.
        tap = "/api/v1/groups/default/pipelines/p00/tap?limit=1"
        self.assertEqual(self.admin.http("GET", tap, headers={"Authorization": "Bearer wrong"})[0], 401)
        self.assertEqual(self.admin.http("GET", tap, timeout=10)[0], 200)
        self.driver.find_element(By.ID, "filter").send_keys("p07")
        wait_until(lambda: len(self.driver.find_elements(By.CSS_SELECTOR, "article.card")) == 1, 10, "the filter")


if __name__ == "__main__":
    unittest.main()
