"""The esign engine component in Python, through wasmtime-py's component API.

A smoke-test host: every import of `wit/esign.wit` in memory (an ordered key-value map
with a transaction per call, blobs, recorded effects; argon2id through argon2-cffi), a
fresh instance per call. It runs the calls that need no host work: the first-run
bootstrap through the admin origin, logging in, `GET /v1/test`, creating a document
without files and reading it. Jobs, work orders, mail and webhooks stay recorded, not
run.

    python hosts/python/host.py engine.wasm     # from `esign engine export engine.wasm`
"""

import bisect
import hashlib
import json
import os
import secrets
import sys
import time
from types import SimpleNamespace

import argon2
from wasmtime import Engine, Store
from wasmtime.component import Component, Linker

ENGINE = "esign:engine/{}@0.1.0"
PASSWORDS = argon2.PasswordHasher()  # argon2id
DUMMY = PASSWORDS.hash("esign dummy password")


def record(**fields):
    """A WIT record: wasmtime-py reads its fields as attributes named as in the WIT."""
    r = SimpleNamespace()
    for name, value in fields.items():
        setattr(r, name.replace("_", "-"), value)
    return r


class Host:
    def __init__(self, wasm, settings=None):
        self.engine = Engine()
        self.component = Component.from_file(self.engine, wasm)
        self.data = {}  # key bytes -> value bytes
        self.keys = []  # sorted
        self.blobs = {}
        self.jobs, self.mails, self.events = [], [], []
        self.settings = settings or {}
        self.txn = None
        self.linker = Linker(self.engine)
        self._define(self.linker)

    # One call: a fresh store and instance, one transaction, committed unless 503.
    def request(self, method, path, body=b"", headers=(), origin="http", query=""):
        self.txn = {"writes": {}, "blobs": {}, "effects": []}
        store = Store(self.engine)
        instance = self.linker.instantiate(store, self.component)
        handle = instance.get_func(store, "handle")
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
        res = handle(store, req)
        handle.post_return(store)
        if res.status != 503:
            self._commit()
        self.txn = None
        return res.status, json.loads(res.body) if res.body else None

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
            i.add_func("get", lambda _, b: self.txn["blobs"].get(b, self.blobs.get(b)))
            i.add_func("delete", lambda _, b: self.txn["blobs"].__setitem__(b, None))
        with root.add_instance(ENGINE.format("effects")) as i:
            effect = lambda f: self.txn["effects"].append(f)  # noqa: E731
            i.add_func("emit-event", lambda _, e, d: effect(lambda: self.events.append(e)))
            i.add_func("cancel-deliveries", lambda _, s: None)

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

    def _verify(self, password, hash_):
        try:
            return PASSWORDS.verify(hash_ or DUMMY, password) and bool(hash_)
        except argon2.exceptions.VerificationError:
            return False
        except argon2.exceptions.InvalidHashError:
            return False

    def _settings(self):
        s = {
            "token_ttl_secs": 5_184_000, "login_max_failures": 5, "login_lock_secs": 900,
            "token_min_interval_ms": 0, "base_url": "http://127.0.0.1:8080",
            "can_convert_word": False, "upload_ttl_secs": 48 * 3600, "eid_provider": "",
            "signing_certificate": "", "oauth_access_ttl_secs": 3600, "mcp_test_user": "",
        }
        s.update(self.settings)
        return record(**s)


def main(wasm):
    """The smoke test: exits non-zero on the first unexpected answer."""
    host = Host(wasm)
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
    token = expect(200, host.request("POST", "/v1/auth", account, json_), "log in")["access_token"]
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


if __name__ == "__main__":
    main(sys.argv[1])
