"""A small Kubernetes API server for the tests (no real one can run here):
pods, Events, ReplicaSets, Jobs and DroverPipelines in memory, served as
the real API serves them (docs/kubernetes.md, "Testing against a fake API
server") — discovery (/version, /api, /apis, the resource lists), lists
with resourceVersion, limit/continue, a fieldSelector on any field and a
labelSelector (k=v, k!=v, k), watches (newline-delimited events, chunked,
BOOKMARKs when asked, timeoutSeconds), create, get, delete and JSON merge
patches, a status subresource (DroverPipelines: status written only
through it, metadata.generation counting spec changes), bearer tokens
(401 when wrong), and what a test needs to break
things: expire() makes every watch end with a 410 ERROR event and every
older resourceVersion answer 410, drop_watches() cuts them, garbage makes
every GET answer bytes that are not JSON. It is proven
against clients nobody here wrote: kubectl and the kubernetes Python
client (test_kube_api.py)."""

import http.server
import json
import queue
import ssl
import threading
import time
import urllib.parse
import uuid

KINDS = [  # (path prefix, group/version, kind, plural)
    ("/api/v1", "v1", "Pod", "pods"),
    ("/api/v1", "v1", "Event", "events"),
    ("/apis/apps/v1", "apps/v1", "ReplicaSet", "replicasets"),
    ("/apis/batch/v1", "batch/v1", "Job", "jobs"),
    ("/apis/drover.dev/v1alpha1", "drover.dev/v1alpha1", "DroverPipeline", "droverpipelines"),
]
STATUS_SUBRESOURCE = {"droverpipelines"}  # a status written only through /status; spec changes bump generation


def _kind(plural):
    return next(k for k in KINDS if k[3] == plural)


def _field(obj, dotted):
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _merge(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    target = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target


def _true(value):
    """A boolean query parameter, as Go's strconv.ParseBool reads it."""
    return (value or "").lower() in ("1", "t", "true")


def _resource_list(prefix):
    kinds = [k for k in KINDS if k[0] == prefix]
    resources = []
    for _, _, kind, plural in kinds:
        resources.append({"name": plural, "singularName": kind.lower(), "namespaced": True, "kind": kind,
                          "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                          "shortNames": {"pods": ["po"], "replicasets": ["rs"], "events": ["ev"],
                                         "droverpipelines": ["dp"]}.get(plural, [])})
        if plural in STATUS_SUBRESOURCE:
            resources.append({"name": plural + "/status", "singularName": "", "namespaced": True, "kind": kind,
                              "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": kinds[0][1], "resources": resources}


class KubeApi:
    def __init__(self, token="t0", certfile=None, keyfile=None):
        self.token = token
        self.lock = threading.Lock()
        self.rv = 100
        self.objects = {}    # (plural, namespace, name) -> object
        self.events = []     # (rv, plural, type, object), oldest first
        self.expired_below = 0
        self.watchers = set()  # queues of the watches being served
        self.requests = []   # (method, path, authorized)
        self.patches = []    # (plural, namespace, name, subresource, patch), in order
        self.stored_at = {}  # (plural, namespace, name) -> wall time its last create or change was stored
        self.garbage = False  # True: every GET answers 200 with bytes that are not JSON
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _status(self, code, reason, message):
                self._send(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": message, "reason": reason, "code": code})

            def _authorized(self):
                ok = self.headers.get("Authorization") == f"Bearer {api.token}" if api.token else True
                with api.lock:
                    api.requests.append((self.command, self.path, ok))
                if not ok:
                    self._status(401, "Unauthorized", "Unauthorized")
                return ok

            def _route(self):
                """(plural, namespace, name, query, subresource) of the path, or None."""
                url = urllib.parse.urlsplit(self.path)
                query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
                for prefix, _, _, plural in KINDS:
                    if not url.path.startswith(prefix + "/"):
                        continue
                    rest = url.path[len(prefix) + 1:].split("/")
                    namespace = None
                    if rest[0] == "namespaces" and len(rest) >= 3:
                        namespace, rest = rest[1], rest[2:]
                    if rest[0] != plural:
                        continue
                    if len(rest) > 3 or (len(rest) == 3 and (rest[2] != "status" or plural not in STATUS_SUBRESOURCE)):
                        return None
                    return (plural, namespace, rest[1] if len(rest) >= 2 else None, query,
                            rest[2] if len(rest) == 3 else None)
                return None

            def do_GET(self):
                if not self._authorized():
                    return
                if api.garbage:  # a broken server, or not one at all: 200 and no JSON
                    data = b"\xff\xfe not json {" * 100
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                path = urllib.parse.urlsplit(self.path).path
                if path == "/version":
                    return self._send(200, {"major": "1", "minor": "28", "gitVersion": "v1.28.0-drover-fake",
                                            "platform": "linux/amd64"})
                if path == "/api":
                    return self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
                if path == "/apis":
                    versions = [gv.split("/") for gv in dict.fromkeys(k[1] for k in KINDS) if "/" in gv]
                    return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                        {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                         "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}} for g, v in versions]})
                if any(path == k[0] for k in KINDS):
                    return self._send(200, _resource_list(path))
                route = self._route()
                if not route:
                    return self._status(404, "NotFound", f"the server could not find the requested resource {path}")
                plural, namespace, name, query, _ = route
                if name:
                    with api.lock:
                        obj = api.objects.get((plural, namespace, name))
                    return self._send(200, obj) if obj else self._status(404, "NotFound", f'{plural} "{name}" not found')
                if _true(query.get("watch")):
                    return self._watch(plural, namespace, query)
                return self._list(plural, namespace, query)

            def _matches(self, obj, plural, namespace, query):
                if namespace and obj["metadata"].get("namespace") != namespace:
                    return False
                for term in filter(None, query.get("fieldSelector", "").split(",")):
                    field, _, value = term.partition("=")
                    if str(_field(obj, field) or "") != value.lstrip("="):
                        return False
                labels = obj["metadata"].get("labels") or {}
                for term in filter(None, query.get("labelSelector", "").split(",")):
                    key, op, value = term.partition("!=") if "!=" in term else term.partition("=")
                    value = value.lstrip("=")
                    if (not op and key not in labels) or (op == "=" and labels.get(key) != value) or \
                            (op == "!=" and labels.get(key) == value):
                        return False
                return True

            def _list(self, plural, namespace, query):
                _, group_version, kind, _ = _kind(plural)
                with api.lock:
                    items = sorted((o for (p, _, _), o in api.objects.items()
                                    if p == plural and self._matches(o, plural, namespace, query)),
                                   key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
                    rv = str(api.rv)
                start = int(query.get("continue") or 0)
                limit = int(query.get("limit") or 0) or len(items) or 1
                page = items[start:start + limit]
                more = start + limit < len(items)
                self._send(200, {"kind": kind + "List", "apiVersion": group_version,
                                 "metadata": {"resourceVersion": rv, **({"continue": str(start + limit)} if more else {})},
                                 "items": page})

            def _chunk(self, obj):
                data = json.dumps(obj).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def _watch(self, plural, namespace, query):
                since = int(query.get("resourceVersion") or 0)
                bookmarks = _true(query.get("allowWatchBookmarks"))
                deadline = time.monotonic() + min(int(query.get("timeoutSeconds") or 1800), 1800)
                q = queue.Queue()
                with api.lock:
                    expired = since and since < api.expired_below
                    backlog = [] if expired else [e for e in api.events if e[0] > since and e[1] == plural]
                    api.watchers.add(q)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    if expired:
                        self._chunk({"type": "ERROR", "object": {
                            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                            "reason": "Expired", "message": f"too old resource version: {since}"}})
                        return
                    for _, p, kind, obj in backlog:
                        if self._matches(obj, plural, namespace, query):
                            self._chunk({"type": kind, "object": obj})
                    last_bookmark = time.monotonic()
                    while time.monotonic() < deadline:
                        try:
                            event = q.get(timeout=0.2)
                        except queue.Empty:
                            event = None
                        if event == "expire":
                            self._chunk({"type": "ERROR", "object": {
                                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                                "reason": "Expired", "message": "too old resource version"}})
                            return
                        if event == "drop":
                            return
                        if event and event[1] == plural and self._matches(event[3], plural, namespace, query):
                            self._chunk({"type": event[2], "object": event[3]})
                        if bookmarks and time.monotonic() - last_bookmark >= 1:
                            last_bookmark = time.monotonic()
                            with api.lock:
                                rv = str(api.rv)
                            self._chunk({"type": "BOOKMARK", "object": {
                                "kind": _kind(plural)[2],
                                "metadata": {"resourceVersion": rv}}})
                    self.wfile.write(b"0\r\n\r\n")
                except (OSError, ssl.SSLError):
                    pass  # the client went away (droverd stopped): a watch ends so
                finally:
                    with api.lock:
                        api.watchers.discard(q)
                    self.close_connection = True

            def _body(self):
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")

            def do_POST(self):
                body = self._body()
                if not self._authorized():
                    return
                route = self._route()
                if not route or route[2]:
                    return self._status(405, "MethodNotAllowed", "POST a collection")
                plural, namespace, _, _, _ = route
                body.setdefault("metadata", {})["namespace"] = namespace or "default"
                created = api.put(plural, body, create=True)
                if created is None:
                    return self._status(409, "AlreadyExists", f'{plural} "{body["metadata"].get("name")}" already exists')
                self._send(201, created)

            def do_DELETE(self):
                self._body()  # DeleteOptions: read, so that the connection stays in step
                if not self._authorized():
                    return
                route = self._route()
                if not route or not route[2]:
                    return self._status(405, "MethodNotAllowed", "DELETE an object")
                plural, namespace, name, _, _ = route
                gone = api.delete(plural, namespace or "default", name)
                if not gone:
                    return self._status(404, "NotFound", f'{plural} "{name}" not found')
                self._send(200, gone)

            def do_PATCH(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if not self._authorized():
                    return
                route = self._route()
                ctype = self.headers.get("Content-Type", "")
                if not route or not route[2]:
                    return self._status(405, "MethodNotAllowed", "PATCH an object")
                if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                    return self._status(415, "UnsupportedMediaType", f"the body of the request was in an unknown "
                                        f"format - accepted media types include: application/merge-patch+json")
                try:
                    patch = json.loads(raw)
                except ValueError as e:
                    return self._status(400, "BadRequest", f"error decoding patch: {e}")
                plural, namespace, name, _, sub = route
                with api.lock:
                    api.patches.append((plural, namespace, name, sub, patch))
                patched = api.patch(plural, namespace or "default", name, patch, sub)
                if patched is None:
                    return self._status(404, "NotFound", f'{plural} "{name}" not found')
                self._send(200, patched)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if certfile:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile, keyfile)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}"

    def _event(self, plural, kind, obj):
        self.events.append((self.rv, plural, kind, obj))
        for q in self.watchers:
            q.put((self.rv, plural, kind, obj))

    def put(self, plural, obj, create=False):
        """Creates or replaces obj (its metadata.namespace and name say
        which): the stored object, or None when create finds one."""
        obj = json.loads(json.dumps(obj))
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        key = (plural, meta["namespace"], meta["name"])
        _, group_version, kind, _ = _kind(plural)
        obj.setdefault("apiVersion", group_version)
        obj.setdefault("kind", kind)
        with self.lock:
            old = self.objects.get(key)
            if old and create:
                return None
            return self._store(plural, key, obj, old)

    def _store(self, plural, key, obj, old):
        """obj as the new state of key (self.lock held): a new resourceVersion,
        and for a kind with a status subresource a generation that counts
        spec changes and the status kept from before."""
        meta = obj["metadata"]
        if plural in STATUS_SUBRESOURCE:
            obj.pop("status", None)
            if old and "status" in old:
                obj["status"] = old["status"]
            generation = (old or {}).get("metadata", {}).get("generation", 0)
            meta["generation"] = generation + 1 if not old or old.get("spec") != obj.get("spec") else generation
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self.objects[key] = obj
        self.stored_at[key] = time.time()
        self._event(plural, "MODIFIED" if old else "ADDED", obj)
        return obj

    def patch(self, plural, namespace, name, patch, sub=None):
        """A JSON merge patch of an object, or of its status alone (sub
        "status"): the object as stored, or None when there is none."""
        with self.lock:
            key = (plural, namespace, name)
            old = self.objects.get(key)
            if not old:
                return None
            if sub == "status":
                obj = dict(old, status=_merge(old.get("status"), patch.get("status")))
                obj["metadata"] = dict(old["metadata"])
                self.rv += 1
                obj["metadata"]["resourceVersion"] = str(self.rv)
                self.objects[key] = obj
                self._event(plural, "MODIFIED", obj)
                return obj
            obj = _merge(old, patch)
            obj["metadata"] = dict(obj["metadata"], name=name, namespace=namespace, uid=old["metadata"]["uid"])
            return self._store(plural, key, obj, old)

    def delete(self, plural, namespace, name):
        with self.lock:
            obj = self.objects.pop((plural, namespace, name), None)
            if obj:
                self.rv += 1
                obj = dict(obj, metadata=dict(obj["metadata"], resourceVersion=str(self.rv)))
                self._event(plural, "DELETED", obj)
        return obj

    def expire(self):
        """etcd compacted: every watch ends with a 410, and so does any
        watch from a resourceVersion before now."""
        with self.lock:
            self.expired_below = self.rv + 1
            self.events.clear()
            for q in self.watchers:
                q.put("expire")

    def drop_watches(self):
        with self.lock:
            for q in self.watchers:
                q.put("drop")

    def watch_count(self):
        with self.lock:
            return len(self.watchers)

    def close(self):
        self.drop_watches()
        self.server.shutdown()
        self.server.server_close()


def pod(name, node, namespace="default", ip=None, labels=None, annotations=None, owner=None, containers=None,
        uid=None):
    """A pod object as the API holds it (owner: (kind, name))."""
    meta = {"name": name, "namespace": namespace, "labels": labels or {}, "annotations": annotations or {}}
    if uid:
        meta["uid"] = uid
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1],
                                    "uid": str(uuid.uuid4()), "controller": True}]
    return {"metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": c, "image": i} for c, i in
                                                       (containers or {"app": "nginx:1.25"}).items()]},
            "status": {"phase": "Running", "podIP": ip, "startTime": "2026-11-29T10:00:00Z"}}


def owned(kind, name, namespace, owner):
    """A ReplicaSet or Job owned by owner (kind, name)."""
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": str(uuid.uuid4()), "controller": True}]}}


def kubectl_env(api, ca, token, directory):
    """The environment that points Debian's kubectl at api (HTTPS, with ca
    and a bearer token: kubectl sends no token over plain HTTP)."""
    import os
    path = os.path.join(directory, "kubeconfig")
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{api.url()}", certificate-authority: "{ca}"}}}}]
users: [{{name: test, user: {{token: {token}}}}}]
contexts: [{{name: fake, context: {{cluster: fake, user: test, namespace: default}}}}]
current-context: fake
""")
    return dict(os.environ, KUBECONFIG=path, HOME=directory)
