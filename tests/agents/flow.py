"""The whole agent flow with the official MCP Python client (mcp 2.3), against a real
esign on loopback:

  401 -> protected resource metadata -> authorization server metadata -> dynamic
  client registration -> /authorize (this script is the person's browser: it signs in
  through the real form with a cookie jar and approves consent) -> /token ->
  tools/list -> create_document + send_document -> get_document_status -> (access
  token expires) refresh -> get_document_status again.

usage: flow.py MCP_URL MODE EMAIL PASSWORD PDF_FILE WAIT_SECS
WAIT_SECS: how long after the access token's expiry the last call is made.
MODE is "legacy" (2025-11-25, initialize + session) or "2026-07-28" (stateless).
Prints one JSON object of what happened; exits non-zero on any failure.
"""
import base64, json, re, sys, time
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx
import httpx2
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

URL, MODE, EMAIL, PASSWORD, PDF, WAIT = sys.argv[1:7]
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never contacted: the code is read off the Location
report = {"mode": MODE, "authorize_pages": [], "token_sets": 0, "refresh_tokens": []}
expires_at = [0.0]


class Memory(TokenStorage):
    tokens = None
    client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        report["token_sets"] += 1
        expires_at[0] = time.monotonic() + (tokens.expires_in or 0)
        report["refresh_tokens"].append(tokens.refresh_token)
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, info):
        report["client_id"] = info.client_id
        self.client_info = info


captured = {}


def form(html, base):
    """The form's action and its inputs' names and values (hidden fields included)."""
    action = re.search(r'<form[^>]*action="([^"]*)"', html).group(1)
    fields = {}
    for m in re.finditer(r"<(?:input|select)[^>]*>", html):
        name = re.search(r'name="([^"]*)"', m.group(0))
        if name:
            value = re.search(r'value="([^"]*)"', m.group(0))
            fields[name.group(1)] = value.group(1) if value else ""
    return urljoin(base, action), fields


async def redirect_handler(url):
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as browser:
        page = await browser.get(url)
        assert page.status_code == 200, (page.status_code, page.text[:500])
        report["authorize_pages"].append("sign-in")
        action, fields = form(page.text, str(page.url))
        fields.update(email=EMAIL, password=PASSWORD)
        page = await browser.post(action, data=fields, headers={"origin": url.split("/authorize")[0]})
        assert page.status_code == 200 and "Allow" in page.text, (page.status_code, page.text[:800])
        report["authorize_pages"].append("consent")
        action, fields = form(page.text, str(page.url))
        fields["action"] = "approve"
        done = await browser.post(action, data=fields)
        assert done.status_code == 303, (done.status_code, done.text[:800])
        location = done.headers["location"]
        assert location.startswith(REDIRECT_URI), location
        q = parse_qs(urlparse(location).query)
        captured.update(code=q["code"][0], state=q["state"][0], iss=q["iss"][0])


async def callback_handler():
    return AuthorizationCodeResult(**captured)


def text_of(result):
    assert not result.is_error, [getattr(c, "text", c) for c in result.content]
    return json.loads(result.content[0].text)


async def status_after(client, doc, passing):
    """The document's status once it is no longer `passing` (at most 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        status = text_of(await client.call_tool("get_document_status", {"document_id": doc}))["status"]
        if status != passing or time.monotonic() > deadline:
            return status
        await anyio.sleep(0.2)


async def main():
    provider = OAuthClientProvider(
        server_url=URL,
        client_metadata=OAuthClientMetadata(
            client_name="esign agent test",
            redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="none",
        ),
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(URL, http_client=http), mode=MODE) as client:
            report["protocol"] = client.protocol_version
            listed = await client.list_tools()
            report["tools"] = sorted(t.name for t in listed.tools)
            with open(PDF, "rb") as f:
                content = base64.b64encode(f.read()).decode()
            created = text_of(await client.call_tool("create_document", {
                "name": f"Agent offer ({MODE})",
                "file_content": content,
                "file_name": "offer.pdf",
                "recipients": [{"email": "signer@example.com", "first_name": "Sam", "last_name": "Signer"}],
            }))
            doc = created["id"]
            report["document_id"] = doc
            report["status_before_send"] = await status_after(client, doc, "importing")
            sent = await client.call_tool("send_document", {"document_id": doc})
            assert not sent.is_error, sent.content
            # The send renders the final file first; the document is "sent" once it is out.
            report["status_after_send"] = await status_after(client, doc, "draft")
            # A tool error is a result with isError and the REST error body.
            missing = await client.call_tool("get_document", {"document_id": "nosuchdocument00"})
            report["missing_is_error"] = missing.is_error
            report["missing_body"] = json.loads(missing.content[0].text)
            # Let the access token expire: the client refreshes before its next request.
            report["expired_during_run"] = report["token_sets"] > 1
            await anyio.sleep(max(0.0, expires_at[0] - time.monotonic()) + float(WAIT))
            report["status_after_refresh"] = text_of(await client.call_tool("get_document_status", {"document_id": doc}))["status"]
    print(json.dumps(report))


anyio.run(main)
