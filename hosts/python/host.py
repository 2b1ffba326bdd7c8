"""The esign engine and formats components in Python, through wasmtime-py's component API.

A smoke-test host: every import of `wit/esign.wit` in memory (an ordered key-value map
with a transaction per call, blobs, recorded effects; argon2id through argon2-cffi), a
fresh instance per call. With the formats component (`esign engine export --formats`)
it also runs jobs: their work orders go to a fresh formats instance (blobs from memory;
no sealing key, downloads or Word converter, each answering the error its WIT gives),
then the engine's `run-job` gets the outcome. The smoke test: the first-run bootstrap
through the admin origin, logging in, `GET /v1/test`, creating a document without files
and reading it; then, given a PDF, a document created from it, imported, sent and
rendered, with an image of its first page. Mail and webhooks stay recorded, not sent.
The recipient link key (`settings.link-key`) is `ESIGN_LINK_KEY`, else made for the
host's life, as long as its state in memory.

    python hosts/python/host.py engine.wasm [formats.wasm file.pdf]
"""

import bisect
import hashlib
import json
import os
import secrets
import sys
import time

import argon2
from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, Variant

ENGINE = "esign:engine/{}@0.5.0"
FORMATS = "esign:formats/{}@0.5.0"
PASSWORDS = argon2.PasswordHasher()  # argon2id
DUMMY = PASSWORDS.hash("esign dummy password")


def record(**fields):
    """A WIT record: wasmtime-py reads its fields as attributes named as in the WIT (and
    tells a record in a variant by its class)."""
    r = Record()
    for name, value in fields.items():
        setattr(r, name.replace("_", "-"), value)
    return r


class Host:
    def __init__(self, wasm, formats=None, settings=None):
        self.engine = Engine()
        self.component = Component.from_file(self.engine, wasm)
        self.formats = Component.from_file(self.engine, formats) if formats else None
        self.warnings = []
        self.data = {}  # key bytes -> value bytes
        self.keys = []  # sorted
        self.blobs = {}
        self.jobs, self.mails, self.events, self.dead_jobs = [], [], [], []
        self.settings = settings or {}
        self.link_key = os.environ.get("ESIGN_LINK_KEY") or secrets.token_hex(32)
        self.txn = None
        self.linker = Linker(self.engine)
        self._define(self.linker)
        self.formats_linker = Linker(self.engine)
        self.formats_linker.add_wasip2()  # what Rust's std on wasm32-wasip2 imports
        self._define_formats(self.formats_linker)

    # One call: a fresh store and instance, one transaction, committed unless 503.
    def request(self, method, path, body=b"", headers=(), origin="http", query="", raw=False):
        req = record(
            method=method,
            path=path,
            query=query,
            headers=[(k.lower(), v) for k, v in headers],
            body=body if isinstance(body, bytes) else json.dumps(body).encode(),
            parts=[],
            origin=origin,
            remote_addr="127.0.0.1",
        )
        res = self._call("handle", req, keep=lambda r: r.status != 503)
        if raw:
            return res.status, res.body
        return res.status, json.loads(res.body) if res.body else None

    def _call(self, export, arg, keep=lambda _: True, blobs=()):
        self.txn = {"writes": {}, "blobs": dict(blobs), "effects": []}
        store = Store(self.engine)
        instance = self.linker.instantiate(store, self.component)
        func = instance.get_func(store, export)
        result = func(store, arg)
        func.post_return(store)
        if keep(result):
            self._commit()
        self.txn = None
        return result

    def run_jobs(self):
        """Runs the jobs that are due, work orders first (each in a fresh formats
        instance, outside the transaction; its new blobs commit with the job). Returns
        how many ran."""
        ran = 0
        now = time.time_ns() // 1_000_000
        while due := [j for j in self.jobs if getattr(j[1], "run-at-ms") <= now]:
            for job in due:
                self.jobs.remove(job)
                self._run_job(*job)
                ran += 1
        return ran

    def _run_job(self, job_id, spec, attempt=1):
        made = {}
        outcome = None
        if spec.work is not None:
            outcome = self._perform(spec.work, made)
        job = record(id=job_id, kind=spec.kind, payload=spec.payload, attempt=attempt, outcome=outcome)
        result = self._call("run-job", job, blobs=made)
        tag = result.tag if isinstance(result, Variant) else None
        if isinstance(result, int) or tag == "retry-at":
            retry = record(**{k.replace("-", "_"): getattr(spec, k) for k in vars(spec)})
            setattr(retry, "run-at-ms", result if isinstance(result, int) else result.payload)
            self.jobs.append((job_id, retry))
        elif isinstance(result, str) or tag == "failed":
            self.dead_jobs.append((job_id, spec.kind, result))

    def _perform(self, order, made):
        if self.formats is None:
            raise RuntimeError("this host was made without the formats component")
        store = Store(self.engine)
        store.set_wasi(WasiConfig())  # no files, environment or network
        self.made = made
        instance = self.formats_linker.instantiate(store, self.formats)
        work = instance.get_export_index(store, FORMATS.format("work"))
        perform = instance.get_func(store, instance.get_export_index(store, "perform", work))
        outcome = perform(store, order, time.time_ns() // 1_000_000)
        perform.post_return(store)
        return outcome

    def _commit(self):
        for k, v in self.txn["writes"].items():
            if v is None:
                if self.data.pop(k, None) is not None:
                    self.keys.remove(k)
            else:
                if k not in self.data:
                    bisect.insort(self.keys, k)
                self.data[k] = v
        for k, v in self.txn["blobs"].items():
            if v is None:
                self.blobs.pop(k, None)
            else:
                self.blobs[k] = v
        for apply in self.txn["effects"]:
            apply()

    def _get(self, key):
        w = self.txn["writes"]
        return w[key] if key in w else self.data.get(key)

    def _scan(self, start, end, limit, reverse):
        lo, hi = bisect.bisect_left(self.keys, start), bisect.bisect_left(self.keys, end)
        keys = set(self.keys[lo:hi]) | {k for k in self.txn["writes"] if start <= k < end}
        out = []
        for k in sorted(keys, reverse=reverse):
            v = self._get(k)
            if v is not None:
                out.append((k, v))
                if len(out) == limit:
                    break
        return out

    def _define(self, linker):
        root = linker.root()
        with root.add_instance(ENGINE.format("store")) as i:
            i.add_func("get", lambda _, k: self._get(k))
            i.add_func("put", lambda _, k, v: self.txn["writes"].__setitem__(k, v))
            i.add_func("delete", lambda _, k: self.txn["writes"].__setitem__(k, None))
            i.add_func("scan", lambda _, s, e, n, r: self._scan(s, e, n, r))
        with root.add_instance(ENGINE.format("files")) as i:
            def put(_, data):
                blob = secrets.token_hex(12)
                self.txn["blobs"][blob] = data
                return record(id=blob, size=len(data), sha256=hashlib.sha256(data).hexdigest())
            i.add_func("put", put)
            # This host stages no file part (it passes every part whole): nothing to keep.
            i.add_func("keep", lambda _, part: f"the request staged no file part {part}")
            i.add_func("get", lambda _, b: self.txn["blobs"].get(b, self.blobs.get(b)))
            i.add_func("delete", lambda _, b: self.txn["blobs"].__setitem__(b, None))
        with root.add_instance(ENGINE.format("effects")) as i:
            effect = lambda f: self.txn["effects"].append(f)  # noqa: E731
            i.add_func("emit-event", lambda _, e, d: effect(lambda: self.events.append(e)))
            i.add_func("cancel-deliveries", lambda _, s: None)
            # This host delivers no webhooks: it holds none.
            i.add_func("pending-deliveries", lambda _, s, u, n: [])

            def schedule(_, job):
                job_id = secrets.token_hex(12)
                effect(lambda: self.jobs.append((job_id, job)))
                return job_id
            i.add_func("schedule-job", schedule)
            i.add_func("send-mail", lambda _, m: effect(lambda: self.mails.append(m)))
            i.add_func("send-sms", lambda _, m: None)
        with root.add_instance(ENGINE.format("host")) as i:
            i.add_func("get-settings", lambda _: self._settings())
            i.add_func("hash-password", lambda _, p: PASSWORDS.hash(p))
            i.add_func("verify-password", lambda _, p, h: self._verify(p, h))
            i.add_func("log-error", lambda _, m: print("engine error:", m, file=sys.stderr))
            i.add_func("eid-start", lambda _, s, u: "this host has no eID provider")
            i.add_func("eid-finish", lambda _, s, q: "this host has no eID provider")
            i.add_func("verify-pdf", lambda _, d: record(
                signed=False, valid=False, whole_file=False, signer="", certificate_sha256="",
                by_this_service=False, signed_at_ms=None, timestamp_ms=None,
                timestamp_valid=False, document_id="", log_head="",
                problems=["this host does not check signatures"]))
            i.add_func("fetch-client-metadata", lambda _, u: "this host makes no outbound requests")
        with root.add_instance("wasi:clocks/wall-clock@0.2.12") as i:
            def now(_):
                ns = time.time_ns()
                return record(seconds=ns // 1_000_000_000, nanoseconds=ns % 1_000_000_000)
            i.add_func("now", now)
            i.add_func("resolution", lambda _: record(seconds=0, nanoseconds=1000))
        with root.add_instance("wasi:random/random@0.2.12") as i:
            i.add_func("get-random-bytes", lambda _, n: os.urandom(n))
            i.add_func("get-random-u64", lambda _: int.from_bytes(os.urandom(8), "little"))

    def _define_formats(self, linker):
        def put(_, data):
            blob = secrets.token_hex(12)
            self.made[blob] = data
            return record(id=blob, size=len(data), sha256=hashlib.sha256(data).hexdigest())

        def convert(_, docx):
            return record(code="conversion-unavailable", message="this host converts no Word files")

        root = linker.root()
        with root.add_instance(FORMATS.format("blobs")) as i:
            i.add_func("get", lambda _, b: self.made.get(b, self.blobs.get(b)))
            i.add_func("put", put)
            # This host stages no file part (it passes every part whole): nothing to keep.
            i.add_func("keep", lambda _, part: f"the request staged no file part {part}")
        with root.add_instance(FORMATS.format("download")) as i:
            i.add_func("fetch", lambda _, u: "this host makes no outbound requests")
        with root.add_instance(FORMATS.format("convert")) as i:
            i.add_func("docx-to-pdf", convert)
        with root.add_instance(FORMATS.format("signing")) as i:
            i.add_func("certificates", lambda _: "this host has no sealing key")
            i.add_func("sign", lambda _, d: "this host has no sealing key")
        with root.add_instance(FORMATS.format("timestamping")) as i:
            i.add_func("exchange", lambda _, r: None)
        with root.add_instance(FORMATS.format("log")) as i:
            i.add_func("warn", lambda _, m: self.warnings.append(m))

    def _verify(self, password, hash_):
        try:
            return PASSWORDS.verify(hash_ or DUMMY, password) and bool(hash_)
        except argon2.exceptions.VerificationError:
            return False
        except argon2.exceptions.InvalidHashError:
            return False

    def _settings(self):
        s = {
            # The policy members are options: None takes the engine's default
            # (engine/src/base/policy.rs); the smoke test asks tokens back to back.
            "token_ttl_secs": None, "login_max_failures": None, "login_lock_secs": None,
            "token_min_interval_ms": 0, "base_url": "http://127.0.0.1:8080",
            "can_convert_word": False, "blob_responses": False,
            "upload_ttl_secs": None, "eid_provider": "",
            "signing_certificate": "", "oauth_access_ttl_secs": None,
            "completion_attachment_max_bytes": None, "completion_link_days": None,
            "mcp_test_user": "",
            "link_key": self.link_key,
        }
        s.update(self.settings)
        return record(**s)


def main(wasm, formats=None, pdf=None):
    """The smoke test: exits non-zero on the first unexpected answer."""
    host = Host(wasm, formats)
    json_ = [("content-type", "application/json")]
    account = {"email": "admin@example.com", "password": "admin-password-1"}

    def expect(want, got, what):
        status, body = got
        assert status == want, f"{what}: {status} {body}"
        print(f"ok {what}: {status}")
        return body

    expect(401, host.request("GET", "/v1/test"), "GET /v1/test without a token")
    expect(201, host.request("POST", "/admin/bootstrap", account, json_, "admin"), "bootstrap")
    expect(404, host.request("POST", "/admin/bootstrap", account, json_), "admin route over HTTP")
    login = expect(200, host.request("POST", "/v1/auth", account, json_), "log in")
    # The token lifetime is left to the engine (None): its default is 60 days.
    assert login["expires_in"] == 60 * 86_400, login
    token = login["access_token"]
    auth = json_ + [("authorization", f"Bearer {token}")]
    me = expect(200, host.request("GET", "/v1/test", headers=auth), "GET /v1/test")
    assert me["first_name"] == "Admin", me
    doc = {"name": "From Python", "recipients": [{"email": "s@example.com", "role": "signer"}]}
    doc_id = expect(200, host.request("POST", "/v1/documents", doc, auth), "create")["id"]
    read = expect(200, host.request("GET", f"/v1/documents/{doc_id}", headers=auth), "read")
    assert read["name"] == "From Python" and read["status"] == "draft", read
    bad = expect(400, host.request("POST", "/v1/documents", {"name": 7}, auth), "a bad body")
    assert set(bad) >= {"error", "description", "status"}, bad
    assert [e.kind for e in host.events] == ["document.created"], host.events
    if pdf:
        file_work(host, auth, expect, pdf)


def file_work(host, auth, expect, pdf):
    """A document from the PDF: imported, sent and rendered by the formats component."""
    import base64

    with open(pdf, "rb") as f:
        content = base64.b64encode(f.read()).decode()
    doc = {"name": "A PDF from Python", "file_content": content, "file_name": "fixture.pdf",
           "recipients": [{"email": "s@example.com", "first_name": "Sam", "role": "signer"}]}
    doc_id = expect(200, host.request("POST", "/v1/documents", doc, auth), "create from a PDF")["id"]
    # The import, then the page previews it asks for (due from the import's time on).
    assert host.run_jobs() + host.run_jobs() == 2, host.jobs
    read = expect(200, host.request("GET", f"/v1/documents/{doc_id}", headers=auth), "imported")
    assert read["status"] == "draft" and read["page_count"] == 3, read
    assert read["thumb_url"].startswith("http://127.0.0.1:8080/v1/files/"), read
    expect(200, host.request("POST", f"/v1/documents/{doc_id}/send", {}, auth), "send")
    assert host.run_jobs() >= 1, host.jobs
    read = expect(200, host.request("GET", f"/v1/documents/{doc_id}", headers=auth), "rendered")
    assert read["status"] == "sent", read
    secret = read["recipients"][0]["document_url"].rsplit("/", 1)[1]
    status, png = host.request("GET", f"/v1/recipient/{secret}/pages/3", raw=True)
    assert status == 200 and png.startswith(b"\x89PNG"), (status, png[:40])
    print(f"ok a page image: {status}, {len(png)} bytes")
    assert host.dead_jobs == [], host.dead_jobs


if __name__ == "__main__":
    main(*sys.argv[1:4])
