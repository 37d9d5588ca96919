"""How drover is deployed: systemd's notify protocol (a datagram socket of
this test's stands in for systemd), and the deployment files under deploy/."""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import yaml

from harness import BIN, Admin, Engine, EngineTest, engine_yaml, free_port, wait_until

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "../.."))
DEPLOY = os.path.join(ROOT, "deploy")
BUILD = os.path.normpath(os.path.join(BIN, ".."))

PIPELINE = """
      gen:
        nodes:
          g: { type: receiver:generator, config: { rate: 10 }, to: [out] }
          out: { type: exporter:file, config: { path: "{OUT}/gen.ndjson" } }
"""


class FakeSystemd:
    """A NOTIFY_SOCKET: collects every datagram droverd sends, with its arrival time."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="drv-notify-")
        self.path = os.path.join(self.dir, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.05)
        self.messages = []  # (mono time, {key: value})

    def collect(self):
        try:
            while True:
                data = self.sock.recv(4096).decode()
                fields = dict(line.split("=", 1) for line in data.splitlines() if "=" in line)
                self.messages.append((time.monotonic(), fields))
        except socket.timeout:
            pass
        return self.messages

    def wait_for(self, key, value, after=0, timeout=10):
        """Index of the first message after `after` that sets key=value."""
        def found():
            for i, (_, fields) in enumerate(self.collect()[after:], after):
                if fields.get(key) == value:
                    return i + 1
            return None
        return wait_until(found, timeout, f"{key}={value} on NOTIFY_SOCKET") - 1

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


class Systemd(EngineTest):
    def test_ready_reloading_stopping_and_watchdog_over_notify_socket(self):
        systemd = FakeSystemd()
        self.addCleanup(systemd.close)
        http = free_port()
        engine = self.start_engine(engine_yaml(pipelines=PIPELINE).replace("HTTP", str(http)),
                                   env={"NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "200000"})
        admin = Admin(engine, http)
        ready = systemd.wait_for("READY", "1")
        # READY=1 means startup settled: the config's pipeline is up by then.
        status, body, _ = admin.http("GET", "/readyz")
        self.assertEqual(status, 200, body)
        self.assertIn("1 pipelines running", systemd.messages[ready][1]["STATUS"])
        engine.wait_log(r"systemd watchdog enabled interval_ms=100")

        # Watchdog pings every half of WATCHDOG_USEC, from the main loop.
        first = len(systemd.collect())
        wait_until(lambda: sum(1 for _, f in systemd.collect()[first:] if f.get("WATCHDOG") == "1") >= 5, 5,
                   "five watchdog pings")
        pings = [t for t, f in systemd.messages[first:] if f.get("WATCHDOG") == "1"]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        self.assertLess(max(gaps), 0.2, f"pings {gaps} must come well within WATCHDOG_USEC")

        # SIGHUP: RELOADING=1 (with MONOTONIC_USEC), then READY=1 once settled.
        mark = len(systemd.collect())
        engine.signal(signal.SIGHUP)
        reloading = systemd.wait_for("RELOADING", "1", after=mark)
        self.assertTrue(systemd.messages[reloading][1].get("MONOTONIC_USEC", "").isdigit())
        self.assertGreater(systemd.wait_for("READY", "1", after=reloading), reloading)

        # SIGTERM: STOPPING=1 before droverd drains and exits 0.
        mark = len(systemd.collect())
        engine.signal(signal.SIGTERM)
        systemd.wait_for("STOPPING", "1", after=mark)
        self.assertEqual(engine.wait_exit(), 0)

    def test_without_notify_socket_nothing_is_sent_and_nothing_breaks(self):
        http = free_port()
        engine = self.start_engine(engine_yaml(pipelines=PIPELINE).replace("HTTP", str(http)))
        Admin(engine, http).wait_ready()
        self.assertNotIn("sd_notify", engine.log_text())
        self.assertNotIn("watchdog", engine.log_text())


def read(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


def runtime_packages():
    """The runtime set of scripts/install-deps.sh: what the image installs."""
    return set(re.search(r'^RUNTIME="([^"]*)"', read(ROOT, "scripts/install-deps.sh"), re.M).group(1).split())


def kustomize(directory):
    """The manifests a kustomization directory applies (kubectl apply -k),
    following its resources: files, and directories with their own."""
    kustomization = yaml.safe_load(read(directory, "kustomization.yaml"))
    docs = []
    for resource in kustomization["resources"]:
        path = os.path.normpath(os.path.join(directory, resource))
        if os.path.isdir(path):
            docs += kustomize(path)
        else:
            docs += [d for d in yaml.safe_load_all(read(path)) if d]
    return docs


class Kubernetes(unittest.TestCase):
    def setUp(self):
        self.docs = []
        for shape in ("daemonset", "deployment"):
            self.docs += [d for d in kustomize(os.path.join(DEPLOY, "kubernetes", shape))
                          if d not in self.docs]  # the shared ConfigMap once
        self.docs += [d for d in yaml.safe_load_all(read(DEPLOY, "kubernetes/base/secret.example.yaml")) if d]
        self.by_kind = {}
        for d in self.docs:
            self.by_kind.setdefault(d["kind"], []).append(d)

    def test_every_manifest_is_valid_against_the_kubernetes_api_schema(self):
        import k8s_schema
        for d in self.docs:
            self.assertEqual(k8s_schema.validate(d), [], f"{d['kind']} {d['metadata']['name']}")
        # The checker does catch what the API server would refuse or drop.
        broken = yaml.safe_load(read(DEPLOY, "kubernetes/daemonset/daemonset.yaml"))
        container = broken["spec"]["template"]["spec"]["containers"][0]
        container["readinessprobe"] = container.pop("readinessProbe")
        container["ports"][0]["containerPort"] = "8080"
        problems = k8s_schema.validate(broken)
        self.assertEqual(len(problems), 2, problems)
        del broken["spec"]["selector"]
        del container["readinessprobe"]
        container["ports"][0]["containerPort"] = 8080
        self.assertIn("`selector`, must not be `None`", k8s_schema.validate(broken)[0])

    def test_one_kustomization_applies_one_shape(self):
        """kubectl apply -k deploy/kubernetes gives the DaemonSet alone (the
        node agent), with the ServiceAccount and ClusterRole it reads the
        API as; the gateway shape is applied on its own."""
        top = kustomize(os.path.join(DEPLOY, "kubernetes"))
        self.assertEqual(sorted(d["kind"] for d in top),
                         ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "ServiceAccount"])
        other = kustomize(os.path.join(DEPLOY, "kubernetes", "deployment"))
        self.assertEqual(sorted(d["kind"] for d in other),
                         ["ConfigMap", "Deployment", "PersistentVolumeClaim", "PodDisruptionBudget", "Service"])
        (pdb,) = [d for d in other if d["kind"] == "PodDisruptionBudget"]
        (deployment,) = [d for d in other if d["kind"] == "Deployment"]
        self.assertEqual(pdb["spec"]["selector"], deployment["spec"]["selector"])
        self.assertNotIn("minAvailable", pdb["spec"], "one replica with minAvailable 1 would block every drain")
        self.assertTrue(os.path.islink(os.path.join(DEPLOY, "k8s")))

    def test_the_crd_is_what_droverctl_crd_prints_and_takes_the_example(self):
        """deploy/kubernetes/crd: the CustomResourceDefinition is what
        droverctl crd makes from the node schemas, valid against the API's
        own model; the example resource passes its OpenAPI schema (as the
        API server would check it) and droverd's validation; the RBAC lets
        droverd read the resources, patch their status and record Events."""
        import jsonschema
        import k8s_schema
        crd_dir = os.path.join(DEPLOY, "kubernetes", "crd")
        printed = subprocess.run([f"{BIN}/droverctl", "crd"], capture_output=True, text=True, check=True).stdout
        self.assertEqual(read(crd_dir, "droverpipeline.yaml"), printed, "run: droverctl crd > "
                         "deploy/kubernetes/crd/droverpipeline.yaml")
        docs = kustomize(crd_dir)
        for d in docs:
            self.assertEqual(k8s_schema.validate(d), [], f"{d['kind']} {d['metadata']['name']}")
        (crd,) = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
        (version,) = crd["spec"]["versions"]
        self.assertEqual(version["subresources"], {"status": {}})
        schema = version["schema"]["openAPIV3Schema"]
        example = yaml.safe_load(read(crd_dir, "example.yaml"))
        self.assertEqual(example["apiVersion"], f"{crd['spec']['group']}/{version['name']}")
        jsonschema.validate(example, schema)
        broken = yaml.safe_load(read(crd_dir, "example.yaml"))
        broken["spec"]["pipeline"]["nodes"]["in"]["type"] = "receiver:nope"
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            yaml.safe_dump(example["spec"]["pipeline"], f)
            f.flush()
            check = subprocess.run([f"{BIN}/droverctl", "validate", "-f", f.name], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
        self.assertEqual({(r["resources"][0], tuple(r["verbs"])) for r in role["rules"]},
                         {("droverpipelines", ("get", "list", "watch")), ("droverpipelines/status", ("get", "patch")),
                          ("events", ("create",))})

    def configmap(self, name):
        (cm,) = [d for d in self.by_kind["ConfigMap"] if d["metadata"]["name"] == name]
        return cm

    def test_configmap_is_the_deploy_config_and_droverd_accepts_it(self):
        cm = self.configmap("drover-config")
        self.assertEqual(cm["data"]["drover.yaml"], read(DEPLOY, "drover.yaml"))
        # It serves OTLP as a collector does, and the image says so.
        otlp = yaml.safe_load(read(DEPLOY, "drover.yaml"))["groups"]["default"]["pipelines"]["otlp"]["nodes"]["in"]
        self.assertEqual((otlp["config"]["endpoint"], otlp["config"]["grpc_endpoint"]), ("0.0.0.0:4318", "0.0.0.0:4317"))
        self.assertEqual(re.search(r"^EXPOSE (.*)$", read(DEPLOY, "docker/Dockerfile"), re.M).group(1).split(),
                         ["8080", "5555", "4317", "4318"])
        # docker build -f deploy/docker/Dockerfile . reads the context root's .dockerignore.
        ignored = read(os.path.join(DEPLOY, ".."), ".dockerignore").split()
        self.assertTrue({"build*", ".git"} <= set(ignored), ignored)
        self.assertFalse(os.path.exists(os.path.join(DEPLOY, "docker", ".dockerignore")), "a file docker never reads")
        # --check fails on what would stop the start: here the token file the config names.
        check = subprocess.run([f"{BIN}/droverd", "--check", "-c", os.path.join(DEPLOY, "drover.yaml")],
                               capture_output=True, text=True)
        if not os.path.exists("/etc/drover/secrets/token"):
            self.assertEqual(check.returncode, 100, check.stderr)
            self.assertIn("engine.admin.http_token_file: cannot read /etc/drover/secrets/token", check.stderr)
        with tempfile.TemporaryDirectory(prefix="drv-check-") as d:
            with open(os.path.join(d, "token"), "w") as f:
                f.write("0123456789abcdef0123\n")
            config = os.path.join(d, "drover.yaml")
            with open(config, "w") as f:
                f.write(read(DEPLOY, "drover.yaml").replace("/etc/drover/secrets/token", os.path.join(d, "token")))
            check = subprocess.run([f"{BIN}/droverd", "--check", "-c", config], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stderr)

    def test_the_docs_name_the_shipped_configmaps_and_droverctl_finds_the_socket(self):
        names = {d["metadata"]["name"] for d in self.by_kind["ConfigMap"]}
        for doc in ("deploy.md", "kubernetes.md", "operations.md"):
            text = read(os.path.join(DEPLOY, "..", "docs"), doc)
            named = {a or b for a, b in re.findall(r"configmaps?/([a-z0-9-]+)|kubectl [a-z]+ configmaps? ([a-z0-9-]+)",
                                                   text)} | set(re.findall(r"`(drover[a-z0-9-]*-config)`", text))
            self.assertTrue(named <= names, (doc, named - names, names))
        # In the image droverctl finds the socket: DROVER_ADMIN is that of every shipped config's run_dir.
        admin = re.search(r"(?m)^ENV DROVER_ADMIN=(\S+)$", read(DEPLOY, "docker/Dockerfile")).group(1)
        for cm in self.by_kind["ConfigMap"]:
            run_dir = yaml.safe_load(cm["data"]["drover.yaml"])["engine"]["run_dir"]
            self.assertEqual(f"ipc://{run_dir}/admin.sock", admin, cm["metadata"]["name"])

    def test_workloads_are_guaranteed_whole_cpus_probed_and_drain_within_the_grace_period(self):
        shutdown = yaml.safe_load(read(DEPLOY, "drover.yaml"))["engine"]["shutdown_timeout_secs"]
        workloads = self.by_kind["DaemonSet"] + self.by_kind["Deployment"]
        self.assertEqual(len(self.by_kind["DaemonSet"]), 1)
        self.assertEqual(len(self.by_kind["Deployment"]), 1)
        image_uid = re.search(r"^USER (\d+)", read(DEPLOY, "docker/Dockerfile"), re.M).group(1)
        for w in workloads:
            name = w["metadata"]["name"]
            pod = w["spec"]["template"]["spec"]
            annotations = w["spec"]["template"]["metadata"]["annotations"]
            self.assertEqual((annotations["prometheus.io/scrape"], annotations["prometheus.io/path"],
                              int(annotations["prometheus.io/port"])),
                             ("true", "/metrics", int(yaml.safe_load(read(DEPLOY, "drover.yaml"))["engine"]["admin"]["http"].split(":")[1])), name)
            self.assertGreater(pod["terminationGracePeriodSeconds"], shutdown, name)
            self.assertTrue(pod["securityContext"]["runAsNonRoot"], name)
            self.assertEqual(str(pod["securityContext"]["runAsUser"]), image_uid, name)
            (c,) = pod["containers"]
            res = c["resources"]
            self.assertEqual(pod["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"}, name)
            if w["kind"] == "Deployment":
                # Pinned: Guaranteed QoS, requests == limits in whole CPUs, so
                # the static CPU manager hands out exclusive cores.
                self.assertEqual(res["requests"], res["limits"], name)
                self.assertEqual(set(res["limits"]), {"cpu", "memory"}, name)
                self.assertRegex(str(res["limits"]["cpu"]), r"^[1-9][0-9]*$", name)
            else:
                # A node agent: small and Burstable (no CPU limit, memory capped), everywhere, kept.
                self.assertNotIn("cpu", res["limits"], name)
                self.assertIn("memory", res["limits"], name)
                self.assertLessEqual(int(str(res["requests"]["cpu"]).rstrip("m")), 500, name)
                self.assertEqual(pod["tolerations"], [{"operator": "Exists"}], name)
                self.assertEqual(pod["priorityClassName"], "system-node-critical", name)
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            self.assertEqual((ports["otlp-grpc"], ports["otlp-http"]), (4317, 4318), name)
            http_port = int(yaml.safe_load(read(DEPLOY, "drover.yaml"))["engine"]["admin"]["http"].split(":")[1])
            self.assertEqual(ports["admin"], http_port, name)
            for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz"), ("startupProbe", "/livez")):
                self.assertEqual(c[probe]["httpGet"], {"path": path, "port": "admin"}, f"{name} {probe}")
            self.assertGreaterEqual(c["readinessProbe"]["failureThreshold"], 3, f"{name}: one slow answer is no outage")
            self.assertNotIn("lifecycle", c, f"{name}: SIGTERM drains, no preStop hook")
            mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
            # A directory mount (a subPath one never sees the kubelet's updates) of the
            # ConfigMap, and droverd watching the file: an edit is applied live.
            self.assertEqual(mounts["/etc/drover/config"], "config")
            self.assertFalse(any("subPath" in m for m in c["volumeMounts"] if m["name"] == "config"), name)
            self.assertEqual(c["args"], ["-c", "/etc/drover/config/drover.yaml"], name)
            self.assertTrue(yaml.safe_load(read(DEPLOY, "drover.yaml"))["engine"]["watch_config"])
            volumes = {v["name"]: v for v in pod["volumes"]}
            self.assertEqual(volumes["config"]["configMap"]["name"],
                             "drover-node-config" if w["kind"] == "DaemonSet" else "drover-config", name)
            self.assertIn("/etc/drover/secrets", mounts, f"{name}: the token file's directory")
            self.assertEqual(w["spec"]["selector"]["matchLabels"], w["spec"]["template"]["metadata"]["labels"])
        #  The buffer's volume outlives the pod, and the image's user owns it.
        self.assertEqual(yaml.safe_load(read(DEPLOY, "drover.yaml"))["engine"]["buffer_dir"], "/var/lib/drover/buffer")
        (daemonset,) = self.by_kind["DaemonSet"]
        pod = daemonset["spec"]["template"]["spec"]
        state = {v["name"]: v for v in pod["volumes"]}["state"]
        self.assertEqual(state["hostPath"]["path"], "/var/lib/drover")
        (init,) = pod["initContainers"]  # a hostPath is not chowned by fsGroup
        self.assertEqual(init["command"], ["chown", f"{image_uid}:{image_uid}", "/var/lib/drover"])
        self.assertEqual(init["securityContext"]["capabilities"], {"drop": ["ALL"], "add": ["CHOWN"]})
        (deployment,) = self.by_kind["Deployment"]
        pod = deployment["spec"]["template"]["spec"]
        state = {v["name"]: v for v in pod["volumes"]}["state"]
        (claim,) = self.by_kind["PersistentVolumeClaim"]
        self.assertEqual(state["persistentVolumeClaim"]["claimName"], claim["metadata"]["name"])
        self.assertEqual(str(pod["securityContext"]["fsGroup"]), image_uid)  # a claim is owned by fsGroup
        #  One engine per claim: the old pod lets the volume go before the new one mounts it.
        self.assertEqual((deployment["spec"]["replicas"], deployment["spec"]["strategy"]["type"]), (1, "Recreate"))


class Container(unittest.TestCase):
    def test_dockerfile_builds_with_the_make_scripts_and_runs_droverd_as_pid_1_unprivileged(self):
        text = read(DEPLOY, "docker/Dockerfile")
        stages = re.findall(r"^FROM (\S+)", text, re.M)
        self.assertEqual(len(stages), 2, "multi-stage")
        for base in stages:
            self.assertRegex(base, r"^debian:[a-z]+-slim$")
        build, runtime = re.split(r"^FROM ", text, flags=re.M)[1:]
        self.assertIn("scripts/install-deps.sh build", build)
        self.assertIn("scripts/build.sh", build)
        self.assertIn("install-deps.sh runtime", runtime)
        self.assertNotIn("install-deps.sh build", runtime)
        self.assertRegex(runtime, r'(?m)^ENTRYPOINT \["/usr/local/bin/droverd"\]$', "exec form: droverd is PID 1")
        self.assertRegex(runtime, r"(?m)^USER [1-9][0-9]*:[1-9][0-9]*$", "not root")
        self.assertRegex(runtime, r"(?m)^HEALTHCHECK .*\n.*/livez")

    def test_runtime_packages_cover_every_library_the_binaries_need(self):
        wanted = runtime_packages()
        for binary in ("droverd", "drover-worker", "drover-broker", "droverctl"):
            dynamic = subprocess.run(["readelf", "-d", f"{BIN}/{binary}"], capture_output=True, text=True,
                                     check=True).stdout
            for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dynamic):
                if re.match(r"lib(asan|ubsan|lsan)\.", lib):
                    continue  # make test-asan's build, never a release's
                owner = subprocess.run(["dpkg", "-S", f"*/{lib}"], capture_output=True, text=True).stdout
                packages = {line.split(":")[0] for line in owner.splitlines() if not line.startswith("diversion")}
                packages.discard("libc6-dev")
                self.assertTrue(packages & (wanted | {"libc6"}),
                                f"{binary} needs {lib} from {packages}; add it to RUNTIME in scripts/install-deps.sh")

    def test_the_installed_layout_starts_answers_its_healthcheck_and_drains_on_sigterm(self):
        prefix = tempfile.mkdtemp(prefix="drv-install-")
        self.addCleanup(shutil.rmtree, prefix, True)
        subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True, capture_output=True)
        port, ingest, grpc, otlp = free_port(), free_port(), free_port(), free_port()
        os.makedirs(f"{prefix}/secrets")
        with open(f"{prefix}/secrets/token", "w") as f:
            f.write("a-token-of-at-least-16-chars\n")
        config = (read(DEPLOY, "drover.yaml").replace("/run/drover", f"{prefix}/run")
                  .replace("/var/lib/drover", prefix).replace("/etc/drover/secrets", f"{prefix}/secrets")
                  .replace("0.0.0.0:8080", f"127.0.0.1:{port}").replace("0.0.0.0:5555", f"127.0.0.1:{ingest}")
                  .replace("0.0.0.0:4317", f"127.0.0.1:{grpc}").replace("0.0.0.0:4318", f"127.0.0.1:{otlp}"))
        with open(f"{prefix}/drover.yaml", "w") as f:
            f.write(config)
        proc = subprocess.Popen([f"{prefix}/bin/droverd", "-c", f"{prefix}/drover.yaml"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())

        def readyz():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/readyz")
                return conn.getresponse().status == 200
            except OSError:
                return False
        wait_until(readyz, 10, "the installed droverd ready")
        # The image's HEALTHCHECK command, with this run_dir.
        text = read(DEPLOY, "docker/Dockerfile")
        health = re.search(r'CMD (\["/usr/local/bin/droverctl".*\])', text).group(1)
        argv = [a.replace("/usr/local/bin", f"{prefix}/bin").replace("/run/drover", f"{prefix}/run")
                for a in yaml.safe_load(health)]
        self.assertEqual(subprocess.run(argv, capture_output=True).returncode, 0, argv)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=30), 0)

    def test_the_image_builds_and_runs_where_a_docker_engine_is(self):
        if subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode != 0 if shutil.which(
                "docker") else True:
            self.skipTest("no Docker engine here; the Dockerfile's scripts run in every other test of this file")
        tag = "drover-test:ci"
        subprocess.run(["docker", "build", "-q", "-f", os.path.join(DEPLOY, "docker/Dockerfile"), "-t", tag, ROOT],
                       check=True, capture_output=True, timeout=1800)
        out = subprocess.run(["docker", "run", "--rm", "--entrypoint", "/usr/local/bin/droverd", tag, "--check", "-c",
                              "/etc/drover/drover.yaml"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)


class Fleet(unittest.TestCase):
    """droverctl apply with several -e: one engine after another, each
    rollout followed to its end, stopping at the first that fails."""

    def setUp(self):
        self.engines = []
        for _ in range(3):
            port = free_port()
            engine = Engine(engine_yaml().replace("HTTP", str(port))).start()
            self.addCleanup(engine.cleanup)
            Admin(engine, port).wait_ready()
            self.engines.append((engine, Admin(engine, port)))
        self.out = tempfile.mkdtemp(prefix="drv-fleet-")
        self.addCleanup(shutil.rmtree, self.out, True)

    def apply(self, rate, code):
        spec = os.path.join(self.out, "p.yaml")
        with open(spec, "w") as f:
            f.write(f"nodes:\n  g: {{ type: receiver:generator, config: {{ rate: {rate} }}, to: [out] }}\n"
                    f"  out: {{ type: exporter:file, config: {{ path: \"{self.out}/data/p-{{generation}}.ndjson\" }} }}\n")
        argv = [f"{BIN}/droverctl"]
        for engine, _ in self.engines:
            argv += ["-e", f"ipc://{engine.run_dir}/admin.sock"]
        proc = subprocess.run(argv + ["apply", "-f", spec, "default/p"], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
        return proc.stdout + proc.stderr

    def rate(self, admin):
        status, body, _ = admin.http("GET", "/api/v1/groups/default/pipelines/p")
        return body["spec"]["nodes"]["g"]["config"]["rate"] if status == 200 else None

    def test_apply_goes_node_by_node_and_stops_at_the_first_failed_rollout(self):
        os.makedirs(f"{self.out}/data")
        out = self.apply(5, 0)
        marks = [out.index(f"==> ipc://{e.run_dir}/admin.sock ({i + 1}/3)") for i, (e, _) in enumerate(self.engines)]
        self.assertEqual(marks, sorted(marks), "one engine after another")
        self.assertEqual(out.count("succeeded"), 3)
        self.assertEqual([self.rate(a) for _, a in self.engines], [5, 5, 5])

        # On the second node only, the output directory becomes read-only
        # (a tmpfs over it in that droverd's own mount namespace): its new
        # generation cannot open its file, so its rollout fails and rolls back.
        subprocess.run(["nsenter", "-t", str(self.engines[1][0].pid), "-m", "--", "mount", "-t", "tmpfs", "-o",
                        "ro", "tmpfs", f"{self.out}/data"], check=True)
        out = self.apply(6, 1)
        self.assertIn("failed", out)
        self.assertIn(f"apply stopped at ipc://{self.engines[1][0].run_dir}/admin.sock (2/3); "
                      "1 later engine(s) not changed", out)
        self.assertNotIn("(3/3)", out)
        self.assertEqual([self.rate(a) for _, a in self.engines], [6, 5, 5],
                         "the first changed, the second rolled back, the third untouched")

    def test_several_endpoints_are_refused_by_commands_other_than_apply(self):
        argv = [f"{BIN}/droverctl"]
        for engine, _ in self.engines[:2]:
            argv += ["-e", f"ipc://{engine.run_dir}/admin.sock"]
        proc = subprocess.run(argv + ["status"], capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("only apply goes through several engines", proc.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
