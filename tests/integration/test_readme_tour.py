"""The README's five-minute tour, typed as written into a real interactive
bash (inside tmux) beside a `make run` in another window, top to bottom:
every command line of every step's block, in order, each checked for its
exit status and for what the README says it prints (its trailing comment),
the commands that follow something until Ctrl-C given their Ctrl-C, and the
last step's Ctrl-C stopping droverd cleanly. A tour a reader cannot follow
fails here, not on a reader's machine.

It uses examples/drover.yaml's fixed ports (8080, 5555, 4317, 4318) and
paths (/tmp/drover, /tmp/drover-demo), cleared first: the fresh start of a
reader's `make run`."""

import json
import os
import re
import shutil
import subprocess
import time
import unittest
import urllib.request

from harness import BIN, SLOW, wait_until

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "../.."))
PROMPT = re.compile(r"TOUR\[(\d+)\]\$ ?$")  # at a line's end: output without a final newline comes before it
#  Commands that follow something until Ctrl-C: what shows they are following.
FOLLOWERS = {"tail -f": '"msg":"tick"', "droverctl events": "following", "rollout status default/ticker -w": "canary"}
#  What a trailing comment promises, when it is more than a pointer: checked in the output.
CHECKED = [r"sent=\d+ records=\d+ skipped=\d+", r'\{"message":"hello"', r'"body":"order placed"',
           r'"signal":"metric","name":"orders"', r"grpc-status: 0", r'\{"type":"disk"', r'"ready":true']


def tour_blocks(readme):
    """The tour's shell blocks, in order: (step number, [lines])."""
    tour = readme[readme.index("## Five-minute tour"):readme.index("## Layout")]
    blocks, step = [], 0
    for line in tour.splitlines():
        m = re.match(r"^(\d+)\. \*\*", line)
        if m:
            step = int(m.group(1))
    for m in re.finditer(r"```sh\n(.*?)```", tour, re.S):
        before = tour[:m.start()]
        step = max(int(n) for n in re.findall(r"(?m)^(\d+)\. \*\*", before))
        lines = [line[3:] if line.startswith("   ") else line for line in m.group(1).splitlines()]
        blocks.append((step, [line for line in lines if line.strip()]))
    return blocks


class Tmux:
    def __init__(self, name, env):
        self.name = name
        self.env = env
        subprocess.run(["tmux", "-L", name, "new-session", "-d", "-x", "250", "-y", "60", "-c", ROOT, "-n", "run",
                        "bash --norc --noprofile -i"], env=env, check=True)
        subprocess.run(["tmux", "-L", name, "new-window", "-c", ROOT, "-n", "tour", "bash --norc --noprofile -i"],
                       env=env, check=True)

    def keys(self, window, *keys, literal=False):
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", window] + (["-l"] if literal else []) + list(keys),
                       check=True)

    def screen(self, window):
        return subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-J", "-S", "-3000", "-t", window],
                              capture_output=True, text=True).stdout

    def clear(self, window):
        subprocess.run(["tmux", "-L", self.name, "clear-history", "-t", window], check=True)

    def close(self):
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)


@unittest.skipIf(os.environ.get("DROVER_TEST_SANITIZED"), "the tour is about the docs, not memory: plain builds only")
class ReadmeTour(unittest.TestCase):
    def setUp(self):
        if not shutil.which("tmux"):
            self.fail("tmux is needed (scripts/install-deps.sh installs it)")
        for path in ("/tmp/drover", "/tmp/drover-demo"):
            shutil.rmtree(path, ignore_errors=True)
        env = dict(os.environ, TERM="xterm", HOME=os.environ.get("HOME", "/root"))
        for name in ("DROVER_ADMIN", "DROVER_TOKEN", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
            env.pop(name, None)  # a reader's shell: no make of ours around it
        self.tmux = Tmux(f"tour{os.getpid()}", env)
        self.addCleanup(self.tmux.close)
        self.addCleanup(self.stop_leftovers)
        for window in ("run", "tour"):
            self.tmux.keys(window, "export PS1='TOUR[$?]$ ' PS2='> '", "Enter")

    def stop_leftovers(self):
        subprocess.run(["pkill", "-TERM", "-f", "droverd -c examples/drover.yaml"], capture_output=True)

    def run_line_by_line(self, lines):
        """Types the lines as a reader would, one command at a time (a command
        may span lines: bash's "> " says it wants more). A comment line is
        not typed: it says what the command before it prints. Returns
        [(command, output, exit status, following, what it promises)]."""
        done, command = [], []
        for line in lines:
            if line.startswith("#") and not command:
                if done:
                    done[-1] = done[-1][:4] + (done[-1][4] + " " + line,)
                continue
            self.tmux.keys("tour", line, literal=True)
            self.tmux.keys("tour", "Enter")
            command.append(line)
            follower = next((f for f in FOLLOWERS if f in line), None)
            if follower:
                wait_until(lambda: self.shows_below(line, FOLLOWERS[follower]), 30 * SLOW,
                           f"'{line}' following ({FOLLOWERS[follower]})", interval=0.1)
                self.tmux.keys("tour", "C-c")
            #  Its prompt, not the one it was typed at: the last line must be
            #  a prompt below the command's own line (a busy machine's tmux
            #  may show the old prompt before the typed text).
            last = wait_until(lambda: self.last_line(after=line), 90 * SLOW, f"'{line}' to finish", interval=0.05)
            if last == "> ":
                continue  # the command goes on on the next line
            text = self.tmux.screen("tour")
            status = int(PROMPT.search(last).group(1))
            output, promise = self.output_of(text, command[-1]), command[-1].partition("  # ")[2]
            checks = [said for said in CHECKED if re.search(said, promise)]
            deadline = time.monotonic() + 10 * SLOW
            while (checks and len(command) == 1 and not follower and time.monotonic() < deadline
                   and not all(re.search(said, output) for said in checks)):
                #  What it shows may not be there yet (a record still on its way to
                #  the file): a reader would type it again a moment later.
                self.clear_screen()
                self.tmux.keys("tour", line, literal=True)
                self.tmux.keys("tour", "Enter")
                last = wait_until(lambda: self.last_line(after=line), 90 * SLOW, f"'{line}' again", interval=0.05)
                status = int(PROMPT.search(last).group(1))
                output = self.output_of(self.tmux.screen("tour"), line)
            done.append(("\n".join(command), output, status, follower, promise))
            command = []
            self.clear_screen()
        return done

    def clear_screen(self):
        self.tmux.clear("tour")
        self.tmux.keys("tour", "clear", "Enter")
        #  The screen read once per look: read twice, it may change in between.
        wait_until(lambda: (lambda screen: len(screen) == 1 and PROMPT.search(screen[0]))(
            self.tmux.screen("tour").strip().splitlines()), 10, "a clear screen", interval=0.02)

    def shows_below(self, typed, text):
        """True once text is on the screen below the typed line: the line's
        own comment may say the same words (the tour's "rollout holding
        (canary)"), and a Ctrl-C sent before the command runs is lost."""
        lines = self.tmux.screen("tour").splitlines()
        at = [i for i, line in enumerate(lines) if typed.strip() in line]
        return bool(at) and text in "\n".join(lines[at[-1] + 1:])

    def last_line(self, after=None):
        lines = [line for line in self.tmux.screen("tour").splitlines() if line.strip()]
        if after is not None:
            typed = [i for i, text in enumerate(lines) if after.strip() in text]
            if not typed or typed[-1] == len(lines) - 1:
                return None  # not echoed yet, or nothing below it yet
        last = lines[-1] if lines else ""
        return last if last == "> " or last.rstrip() == ">" or PROMPT.search(last) else None

    @staticmethod
    def output_of(text, last_command_line):
        lines = text.splitlines()
        at = max(i for i, line in enumerate(lines) if last_command_line.strip() in line)
        return "\n".join(PROMPT.sub("", line) for line in lines[at + 1:] if line.strip() != ">")

    def ready(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:8080/readyz", timeout=1) as r:
                return json.loads(r.read())["ready"]
        except OSError:
            return False

    def test_the_tour_runs_top_to_bottom_as_written(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        # Step 1: `make run` in its own window (with another build dir, its droverd).
        own_build = os.path.abspath(BIN) == os.path.join(ROOT, "build", "bin")
        start = "make run" if own_build else f"{os.path.abspath(BIN)}/droverd -c examples/drover.yaml"
        self.assertIn("make run", readme[:readme.index("## Five-minute tour") + 400])
        self.tmux.keys("run", start, "Enter")
        wait_until(self.ready, 300 * SLOW, "make run: droverd ready on 127.0.0.1:8080", interval=0.2)
        self.assertIn("three pipelines are created", readme)
        results = []
        for step, lines in tour_blocks(readme):
            for command, output, status, follower, promise in self.run_line_by_line(lines):
                results.append((step, command, output, status))
                if follower:
                    self.assertIn(status, (0, 130), f"step {step}: {command}\n{output}")
                    continue
                self.assertEqual(status, 0, f"step {step}: {command}\n{output}")
                for bad in ("command not found", "No such file", "droverctl: "):
                    self.assertNotIn(bad, output, f"step {step}: {command}")
                for said in CHECKED:
                    if re.search(said, promise):
                        self.assertRegex(output, said, f"step {step}: {command} promised: {promise}")
        steps = sorted({step for step, *_ in results})
        self.assertEqual(steps, [2, 3, 4, 5, 6, 7], "every step with commands was typed")
        self.assertGreaterEqual(len(results), 25)
        # Step 8: crash one; a new instance on the same core is ready.
        kill = re.search(r"`(kill -9 \$\(pgrep -f '[^`]*'\))`", readme).group(1)
        (done,) = self.run_line_by_line([kill])
        self.assertEqual(done[2], 0, done)
        wait_until(lambda: re.search(r"instance crashed instance=default/ticker@\d+#0 .*exit=137",
                                     self.tmux.screen("run")), 10, "the crash in the log")
        wait_until(self.ready, 10, "ready again")
        # Step 9: Ctrl-C stops it: every instance drains, droverd says so and is gone.
        self.tmux.keys("run", "C-c")
        wait_until(lambda: "shutdown complete" in self.tmux.screen("run"), 60 * SLOW, "the shutdown")
        wait_until(lambda: subprocess.run(["pgrep", "-f", "droverd -c examples/drover.yaml"],
                                          capture_output=True).returncode == 1, 30, "droverd gone")
        self.assertNotIn("ERROR", self.tmux.screen("run"))
        print(f"README tour: {len(results)} commands typed in steps {steps}, then a crash and a Ctrl-C", flush=True)


if __name__ == "__main__":
    unittest.main()
