"""The web console (GET /ui) driven by a real headless browser (Debian's
chromium through chromedriver and selenium): it shows the pipelines and
their generations, live per-node rates, a replace progressing core by core
without a reload, a rollback clicked with the token, and stays readable
with 50 pipelines at 1280x800; what an operator needs in an incident:
the events from before the page was opened, a dead backend turning its
pipeline degraded and red (and first), each rollout with what it changed
in the spec, a live tap, sparklines, buttons that cannot apply disabled.
Screenshots of each state are kept in build/console/ for people to look at."""

import os
import re
import shutil
import tempfile
import unittest

from harness import SLOW, Admin, EngineTest, engine_yaml, free_port, wait_until

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
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


class ConsoleBase(EngineTest):
    """A droverd with a token, and a headless chromium."""

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
            except (StaleElementReferenceException, NoSuchElementException):
                return None  # the page drew the card again meanwhile (once a second), or not yet what is looked for
        return wait_until(check, timeout, f"{key}: {what}", interval=0.05)

    def read(self, key, fn):
        """fn(the card), retried while the page draws the card again under it."""
        result = []

        def attempt():
            try:
                result[:] = [fn(self.card(key))]
                return True
            except StaleElementReferenceException:
                return False
        wait_until(attempt, 10, f"{key}: a read not raced by a redraw", interval=0.05)
        return result[0]

    def click(self, key, action):
        def attempt():
            try:
                self.card(key).find_element(By.CSS_SELECTOR, f'button[data-action="{action}"]').click()
                return True
            except StaleElementReferenceException:
                return False
        wait_until(attempt, 10, f"a click on {action}", interval=0.05)



class Console(ConsoleBase):
    def test_pipelines_rates_a_replace_core_by_core_and_a_rollback_with_the_token(self):
        self.put("p", 1)
        self.put("q", 1, cores=1)
        self.driver.get(f"http://127.0.0.1:{self.http_port}/ui")
        self.js("window.loadedOnce = true")  # gone if the page reloads
        self.wait_card("default:p", "generation 1 running",
                       lambda c: c.get_attribute("data-generation") == "1" and c.get_attribute("data-phase") == "running"
                       and c.get_attribute("data-source") == "api" and "from api" in c.text)
        self.assertIsNotNone(self.card("default:q"))
        # Read inside the wait: the page draws the card again once a second.
        self.wait_card("default:p", "its node graph: in, script, out", lambda c: [
            g.get_attribute("data-node") for g in c.find_elements(By.CSS_SELECTOR, "g[data-node]")] == ["in", "script", "out"])
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
        # Its words (issue 35): a hold, not a pause; which core is the canary; what each button would do.
        word, chips, titles = self.read("default:p", lambda c: (
            c.find_element(By.CSS_SELECTOR, ".rollout").get_attribute("data-word"),
            [x.text for x in c.find_elements(By.CSS_SELECTOR, ".rollout .core")],
            {b.get_attribute("data-action"): b.get_attribute("title") for b in c.find_elements(By.CSS_SELECTOR, ".steer button")}))
        self.assertRegex(word, r"^holding \(canary\) until \d\d:\d\d:\d\d$")
        self.assertTrue(any(re.match(r"core \d \(canary\): on new$", x) for x in chips), chips)
        self.assertTrue(any(re.match(r"core \d: waiting$", x) for x in chips), chips)
        self.assertIn("end the canary", titles["promote"])
        self.assertIn("old generation every core back", titles["abort"])
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
        # An abort reads as one, and the core it never reached does not wait for ever.
        word, chips, text = self.read("default:p", lambda c: (
            c.find_element(By.CSS_SELECTOR, f'.rollout[data-rollout="{rid}"]').get_attribute("data-word"),
            [x.text for x in c.find_elements(By.CSS_SELECTOR, ".rollout .core")], c.text))
        self.assertEqual(word, "aborted")
        self.assertNotIn("RolloutFailed", text)
        self.assertFalse([x for x in chips if "waiting" in x], chips)
        self.assertTrue(any(re.match(r"core \d: not reached$", x) for x in chips), chips)
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


class Incident(ConsoleBase):
    """The console as the place an operator lives during an incident."""

    def open_page(self):
        self.driver.get(f"http://127.0.0.1:{self.http_port}/ui")
        wait_until(lambda: self.driver.find_element(By.ID, "conn").text == "live", 10, "the stream live")

    def simple(self, name, rate=50, extra=None, exporter=None):
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": rate, "record": {"m": "x", **(extra or {})}},
                   "to": ["out"]},
            "out": exporter or {"type": "exporter:null"}}}}
        return spec

    def test_events_from_before_the_page_and_rollback_disabled_at_generation_1(self):
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=self.simple("p"))
        pid = self.engine.wait_instances(["default/p@1#0"])["default/p@1#0"]
        os.kill(pid, 9)
        wait_until(lambda: self.engine.instances().get("default/p@1#0") not in (None, pid), 10, "the restart")
        # droverd keeps each pipeline's rates (a sample every 5 s): the sparkline is full at once.
        rates = wait_until(lambda: (lambda r: r if len(r["samples"]) >= 2 else None)(
            self.admin.http("GET", "/api/v1/groups/default/pipelines/p/rates")[1]), 20 * SLOW, "two rate samples")
        self.assertEqual(rates["interval_secs"], 5)
        self.assertGreater(rates["samples"][-1]["in"], 0)
        self.open_page()
        self.wait_card("default:p", "the kept rates drawn at once",
                       lambda c: int(c.find_element(By.CSS_SELECTOR, ".trend").get_attribute("data-samples")) >= 10,
                       timeout=5)
        # No event happens now: what the list shows came with the page.
        topics = wait_until(lambda: (lambda t: t if "instance.exited" in t else None)(
            [e.get_attribute("data-topic") for e in self.driver.find_elements(By.CSS_SELECTOR, "#events li")]), 10,
            "the events from before the page was opened")
        self.assertIn("rollout.succeeded", topics)
        self.assertIn("bad", self.driver.find_element(By.CSS_SELECTOR, '#events li[data-topic="instance.exited"]')
                      .get_attribute("class"), "a crash in red")
        self.wait_card("default:p", "generation 1, rollback disabled and saying why", lambda c: (
            lambda b: c.get_attribute("data-generation") == "1" and not b.is_enabled()
            and "no earlier generation" in b.get_attribute("title"))(
            c.find_element(By.CSS_SELECTOR, 'button[data-action="rollback"]')))
        self.shot("8-events-on-load.png")
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=self.simple("p", rate=60))
        self.wait_card("default:p", "rollback possible at generation 2",
                       lambda c: c.get_attribute("data-generation") == "2" and
                       c.find_element(By.CSS_SELECTOR, 'button[data-action="rollback"]').is_enabled())
        # The node graph says each node's type; the sparkline fills.
        self.wait_card("default:p", "five samples of rates and each node's type", lambda c: (
            int(c.find_element(By.CSS_SELECTOR, ".trend").get_attribute("data-samples")) >= 5
            and c.find_element(By.CSS_SELECTOR, 'g[data-node="in"]').get_attribute("data-type") == "receiver:generator"
            and "exporter:null" in c.find_element(By.CSS_SELECTOR, 'g[data-node="out"]').text))

    def test_a_dead_backend_turns_its_pipeline_degraded_red_and_first(self):
        from capture import Capture
        capture = Capture([(503, {}, b"backend down")] * 100000)
        self.addCleanup(capture.close)
        for name in ("a", "b"):
            self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=self.simple(name))
        spec = self.simple("z", exporter={"type": "exporter:http", "config": {
            "endpoint": capture.url("/in"), "batch": {"max_delay_ms": 20}, "retry": {"initial_ms": 50, "max_ms": 100}}})
        spec["pipeline"]["policies"] = {"health": {"exporter_failing_secs": 2}}
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/z", body=spec)
        self.open_page()
        self.wait_card("default:z", "degraded: ExporterFailing", lambda c: c.get_attribute("data-phase") == "degraded"
                              and c.find_elements(By.CSS_SELECTOR, '.condition.bad[data-reason="ExporterFailing"]'),
                              timeout=2 + 10 * SLOW)
        self.assertIn("answered 503", self.read("default:z", lambda c: c.find_element(By.CSS_SELECTOR, ".condition").text))
        self.assertIn("bad", self.read("default:z", lambda c: c.find_element(
            By.CSS_SELECTOR, 'g[data-node="out"] rect').get_attribute("class")))
        self.assertEqual(self.driver.find_element(By.CSS_SELECTOR, "article.card").get_attribute("data-pipeline"),
                         "default:z", "the degraded pipeline first, before the running ones")
        self.assertEqual(self.read("default:z", lambda c: c.find_element(By.CSS_SELECTOR, ".phase")
                                   .value_of_css_property("background-color")), "rgba(183, 121, 31, 1)")
        # Nothing is given up (retried for ever): no errors, and the retries and
        # the backlog shown, not in red.
        def waiting_not_lost(c):
            waiting = c.find_elements(By.CSS_SELECTOR, ".counts [data-retries]")
            errors = c.find_element(By.CSS_SELECTOR, ".counts [data-errors]")
            return (waiting and int(waiting[0].get_attribute("data-retries")) > 0
                    and int(waiting[0].get_attribute("data-backlog")) > 0
                    and errors.get_attribute("data-errors") == "0" and "bad" not in (errors.get_attribute("class") or ""))
        self.wait_card("default:z", "retries and a backlog, no errors", waiting_not_lost)
        # The branch lags: its node says how much its queue holds (issue 37).
        self.wait_card("default:z", "the exporter's node lagging", lambda c: (lambda g: int(
            g.get_attribute("data-lagging") or 0) > 0 and "lagging" in g.text)(c.find_element(By.CSS_SELECTOR,
                                                                                           'g[data-node="out"]')))
        self.shot("9-exporter-failing.png")

    def test_a_canary_s_new_node_is_drawn_beside_the_running_ones(self):
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=self.simple("p"))
        spec = self.simple("p")
        spec["pipeline"]["nodes"]["in"]["to"] = ["tag"]
        spec["pipeline"]["nodes"]["tag"] = {"type": "processor:transform", "config": {"set": {"v": 2}}, "to": ["out"]}
        spec["pipeline"]["policies"] = {"rollout": {"canary": {"cores": 1, "hold_secs": 600}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p?wait=false", body=spec)
        self.assertEqual(status, 202, body)
        self.open_page()
        self.wait_card("default:p", "the canary's node, marked with its generation", lambda c: any(
            g.get_attribute("data-generation") == "2" and "gen 2" in g.text
            for g in c.find_elements(By.CSS_SELECTOR, 'g[data-node="tag"]')))
        self.assertIsNone(self.read("default:p", lambda c: c.find_element(By.CSS_SELECTOR, 'g[data-node="out"]')
                                    .get_attribute("data-generation")), "a node both run is not marked")
        self.admin.http("POST", f"/api/v1/groups/default/pipelines/p/rollouts/{body['rollout_id']}/abort")

    def test_history_with_what_each_rollout_changed_and_a_live_tap(self):
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=self.simple("p", rate=20))
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=self.simple("p", rate=30))
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=self.simple("p", rate=30, extra={"env": "prod"}))
        self.open_page()
        self.wait_card("default:p", "generation 3", lambda c: c.get_attribute("data-generation") == "3")
        self.click("default:p", "history")
        self.wait_card("default:p", "three revisions", lambda c: len(c.find_elements(By.CSS_SELECTOR, ".revision")) == 3)
        changes = self.read("default:p", lambda c: {li.get_attribute("data-path"): li.text
                                                    for li in c.find_elements(By.CSS_SELECTOR, ".changes li")})
        self.assertEqual(changes["nodes.in.config.rate"], "nodes.in.config.rate: 20 → 30")
        self.assertEqual(changes["nodes.in.config.record.env"], 'nodes.in.config.record.env: (none) → "prod"')
        self.shot("10-history.png")
        # A script's change reads as a line diff, not as its size.
        def lua(step):
            return {"pipeline": {"cores": {"count": 1}, "nodes": {
                "in": {"type": "receiver:generator", "config": {"rate": 20}, "to": ["step"]},
                "step": {"type": "processor:lua", "config": {"script": "function process(r)\n  r.step = " + step +
                                                                      "\n  return r\nend\n"}, "to": ["out"]},
                "out": {"type": "exporter:null"}}}}
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/lua", body=lua("1"))
        self.admin.http("PUT", "/api/v1/groups/default/pipelines/lua", body=lua("2"))
        self.wait_card("default:lua", "generation 2", lambda c: c.get_attribute("data-generation") == "2")
        self.click("default:lua", "history")
        script_diff = '.changes li[data-path="nodes.step.config.script"] pre.diff span'
        #  The history is fetched when the panel opens: wait for it, then read it.
        self.wait_card("default:lua", "the script's line diff",
                       lambda c: len(c.find_elements(By.CSS_SELECTOR, script_diff)) >= 6)
        diff = self.read("default:lua", lambda c: [x.get_attribute("textContent").rstrip("\n") for x in c.find_elements(
            By.CSS_SELECTOR, script_diff)])
        self.assertEqual(diff, ["@@ -1,4 +1,4 @@", " function process(r)", "-  r.step = 1", "+  r.step = 2", "   return r", " end"])
        # The tap: records as they leave each node, with the token.
        self.driver.find_element(By.ID, "token").send_keys(TOKEN)
        self.click("default:p", "tap")
        self.wait_card("default:p", "records in the tap viewer",
                       lambda c: '"env":"prod"' in c.find_element(By.CSS_SELECTOR, ".tap pre.records").text)
        self.assertEqual(self.read("default:p", lambda c: c.find_element(By.CSS_SELECTOR, ".tap").get_attribute("data-state")),
                         "live")
        self.shot("11-tap.png")
        self.click("default:p", "tap")  # stop it
        wait_until(lambda: not self.read("default:p", lambda c: c.find_elements(By.CSS_SELECTOR, ".tap")), 10,
                   "the tap closed")


if __name__ == "__main__":
    unittest.main()
