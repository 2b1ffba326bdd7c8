"""Prints an MCP access token for BASE, got the way an agent gets one: dynamic client
registration, the sign-in and consent forms of /authorize, PKCE, /token. Standard
library only. usage: mcp_token.py BASE EMAIL PASSWORD"""
import base64, hashlib, http.client, json, re, sys, urllib.parse

base, email, password = sys.argv[1:4]
u = urllib.parse.urlsplit(base)


def req(method, path, body=None, headers=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode()


redirect = "http://127.0.0.1:9/cb"
_, _, text = req("POST", "/register", json.dumps({"redirect_uris": [redirect], "client_name": "bench"}),
                 {"content-type": "application/json"})
client = json.loads(text)["client_id"]
verifier = "bench-verifier-" + "x" * 40
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
q = urllib.parse.urlencode({"response_type": "code", "client_id": client, "redirect_uri": redirect,
                            "code_challenge": challenge, "code_challenge_method": "S256"})
_, h, page = req("GET", "/authorize?" + q)
cookie = h["set-cookie"].split(";")[0]
csrf = re.search(r'name="csrf" value="([^"]*)"', page).group(1)
form = {"content-type": "application/x-www-form-urlencoded", "cookie": cookie}
_, _, page = req("POST", "/authorize", urllib.parse.urlencode(
    {"csrf": csrf, "action": "signin", "email": email, "password": password}), form)
entity = re.search(r'name="entity_id" value="([^"]*)"', page).group(1)
_, h, _ = req("POST", "/authorize", urllib.parse.urlencode(
    {"csrf": csrf, "action": "approve", "entity_id": entity}), form)
code = urllib.parse.parse_qs(urllib.parse.urlsplit(h["location"]).query)["code"][0]
_, _, text = req("POST", "/token", urllib.parse.urlencode(
    {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "client_id": client,
     "code_verifier": verifier}), {"content-type": "application/x-www-form-urlencoded"})
print(json.loads(text)["access_token"])
