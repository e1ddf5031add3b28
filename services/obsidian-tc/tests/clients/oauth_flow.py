"""Drives obsidian-tc's OAuth 2.1 authorization server with the Python MCP SDK's own OAuth client
(`mcp.client.auth.OAuthClientProvider`), end to end, for the Rust tests.

    python oauth_flow.py CONFIG_JSON < steps.json

CONFIG_JSON:
    {"server_url": "http://127.0.0.1:PORT/mcp",
     "redirect_uri": "http://127.0.0.1:PORT2/callback",   # never listened on: the walker stops there
     "registration": "dcr" | "cimd",
     "client_metadata_url": "http://127.0.0.1:PORT3/client.json",   # cimd only
     "scope": "read:notes write:notes",          # optional, see below
     "token_endpoint_auth_method": "none",       # optional, dcr only (default "none": a public client)
     "browser": [{"fields": {"email": "alice@acme.test"}},
                 {"fields": {"login": "alice", "password": "pw"}},
                 {"fields": {"decision": "allow"}}],
     "refresh": true}                            # optional

steps.json is a list of {"op": "list_tools"}, {"op": "call", "name": ..., "args": {...}} or
{"op": "raw_token"} (the current access token, as {"access_token": ...}; also kept in the output's
"access_token"). A request the server refused at the protocol level comes back as
{"error": {code, message, data}}.

Prints one JSON object:
    {"results": [...], "tokens": [every token response the storage was given, in order],
     "client_info": {...}, "browser_log": [...], "refreshed": bool, "refresh_rotated": bool,
     "error": null | text,
     # extras for assertions:
     "authorize_requests": [query parameters of each authorization URL the SDK built],
     "authorization_error": null | {"error": ..., "error_description": ...},
     "http_log": [every request the SDK's HTTP client sent (MCP, discovery, registration, token)],
     "access_token": the access token at the end, "browser_runs": how often the walker ran,
     "refresh_fell_back_to_reauth": bool, "cimd_https_check_bypassed": bool}

How the SDK (mcp 2.3.0) is driven:
  - `OAuthClientProvider` is an httpx2.Auth on the httpx2.AsyncClient given to
    `streamable_http_client`; on a 401 it discovers protected resource metadata, authorization
    server metadata, registers (DCR) or uses the CIMD URL as client_id, calls `redirect_handler`
    with the authorization URL and `callback_handler` for the code, and exchanges it (PKCE S256).
  - The redirect handler walks the authorization URL like a browser (cookies kept, redirects
    followed by hand, the first <form> of each page filled from the first "browser" entry whose
    field names it has) until the redirect to redirect_uri, whose code/state/iss it captures.
  - CIMD: the SDK uses client_metadata_url only when the AS metadata says
    client_id_metadata_document_supported=true, and its constructor rejects anything but an
    https URL with a non-root path. The tests serve the document over plain http on loopback, so
    for an http URL the driver passes none to the constructor and sets the provider's
    context.client_metadata_url afterwards (the later check, should_use_client_metadata_url, does
    not re-validate the scheme); "cimd_https_check_bypassed" says when that happened. If the SDK
    fell back to DCR in cimd mode, "error" says so.
  - "scope": the SDK itself requests the scope from the 401's WWW-Authenticate, else the protected
    resource metadata's scopes_supported, else the AS metadata's scopes_supported (plus
    offline_access when the AS lists it), and overwrites any scope in the client metadata with it.
    Given "scope", the driver replaces that selection (the module-level function
    get_client_metadata_scopes the provider calls) so exactly this scope is registered and requested.
  - "refresh": the provider refreshes when its access token has expired by its own clock
    (context.token_expiry_time, set from expires_in). The driver sets that clock into the past and
    makes one more list_tools call; the provider then sends the refresh_token grant itself.
"""
import asyncio
import http.cookiejar
import json
import sys
import time
import traceback
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import httpx2
import mcp.client.auth.oauth2 as sdk_oauth2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError

MAX_BROWSER_STEPS = 30
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class RecordingStorage:
    """The SDK's TokenStorage protocol, in memory, keeping every token set it is given."""

    def __init__(self):
        self.tokens: list[OAuthToken] = []
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens[-1] if self.tokens else None

    async def set_tokens(self, tokens):
        self.tokens.append(tokens.model_copy(deep=True))

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


# --- the browser -------------------------------------------------------------------------------


class FormParser(HTMLParser):
    """The page's <title> and its first <form>: action, method, fields (name -> value, as a browser
    would submit them without a click) and submit buttons [(name, value)]."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title = None
        self._in_title = False
        self.form = None  # {"action", "method", "fields": [(name, value)], "names": [...], "submits": [...]}
        self._in_form = False
        self._done = False
        self._textarea = None
        self._select = None  # [name, first_value, selected_value]
        self._option = None  # [value_or_None, text, selected]

    def handle_starttag(self, tag, attrs):
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "title" and self.title is None:
            self._in_title = True
            self.title = ""
        if self._done:
            return
        if tag == "form" and not self._in_form:
            self._in_form = True
            self.form = {"action": a.get("action", ""), "method": (a.get("method") or "get").lower(),
                         "fields": [], "names": [], "submits": []}
            return
        if not self._in_form:
            return
        name = a.get("name")
        if tag == "input":
            kind = (a.get("type") or "text").lower()
            if not name or kind in ("reset", "file"):
                if kind in ("submit", "image") and name:
                    self.form["submits"].append((name, a.get("value", "")))
                return
            if kind in ("submit", "image", "button"):
                if kind != "button":
                    self.form["submits"].append((name, a.get("value", "")))
                self._name(name)
                return
            self._name(name)
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.form["fields"].append((name, a.get("value", "on")))
                return
            self.form["fields"].append((name, a.get("value", "")))
        elif tag == "button":
            kind = (a.get("type") or "submit").lower()
            if kind == "submit" and name:
                self.form["submits"].append((name, a.get("value", "")))
                self._name(name)
        elif tag == "textarea" and name:
            self._name(name)
            self._textarea = [name, ""]
        elif tag == "select" and name:
            self._name(name)
            self._select = [name, None, None]
        elif tag == "option" and self._select is not None:
            self._option = [a.get("value"), "", "selected" in a]

    def _name(self, name):
        if name not in self.form["names"]:
            self.form["names"].append(name)

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if not self._in_form:
            return
        if tag == "form":
            self._in_form = False
            self._done = True
        elif tag == "textarea" and self._textarea is not None:
            self.form["fields"].append(tuple(self._textarea))
            self._textarea = None
        elif tag == "option" and self._option is not None:
            self._close_option()
        elif tag == "select" and self._select is not None:
            if self._option is not None:
                self._close_option()
            name, first, selected = self._select
            value = selected if selected is not None else first
            if value is not None:
                self.form["fields"].append((name, value))
            self._select = None

    def _close_option(self):
        value, text, selected = self._option
        value = value if value is not None else text.strip()
        if self._select[1] is None:
            self._select[1] = value
        if selected:
            self._select[2] = value
        self._option = None

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._textarea is not None:
            self._textarea[1] += data
        if self._option is not None:
            self._option[1] += data


class LoopbackSecureCookies(http.cookiejar.DefaultCookiePolicy):
    """Send Secure cookies to http://127.0.0.1 / localhost too, as browsers do for loopback."""

    def return_ok_secure(self, cookie, request):
        if urlsplit(request.get_full_url()).hostname in LOOPBACK:
            return True
        return super().return_ok_secure(cookie, request)


class BrowserError(Exception):
    pass


class Browser:
    """Walks an authorization URL to the redirect back to redirect_uri."""

    def __init__(self, redirect_uri, entries, log, timeout):
        self.redirect_uri = redirect_uri
        self.entries = entries
        self.log = log
        self.timeout = timeout
        self.captured = None  # dict of the callback's query parameters
        self.error = None  # the text of the last BrowserError
        self.runs = 0
        self.authorize_requests = []

    async def walk(self, authorization_url):
        try:
            await self._walk(authorization_url)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"
            raise

    async def _walk(self, authorization_url):
        self.runs += 1
        self.captured = None
        self.authorize_requests.append(dict(parse_qsl(urlsplit(authorization_url).query)))
        jar = http.cookiejar.CookieJar(policy=LoopbackSecureCookies())
        async with httpx2.AsyncClient(cookies=jar, follow_redirects=False, timeout=self.timeout) as web:
            method, url, data = "GET", authorization_url, None
            for _ in range(MAX_BROWSER_STEPS):
                if method == "GET":
                    response = await web.get(url, params=data)
                else:
                    response = await web.post(
                        url, content=urlencode(data), headers={"content-type": "application/x-www-form-urlencoded"}
                    )
                page_url = str(response.url)
                entry = {"run": self.runs, "method": method, "url": page_url, "status": response.status_code}
                self.log.append(entry)
                if response.is_redirect or (300 <= response.status_code < 400 and "location" in response.headers):
                    location = urljoin(page_url, response.headers["location"])
                    entry["location"] = location
                    if location.startswith(self.redirect_uri):
                        self.captured = dict(parse_qsl(urlsplit(location).query))
                        return
                    method, url, data = "GET", location, None
                    continue
                text = response.text
                parser = FormParser()
                parser.feed(text)
                parser.close()
                entry["title"] = parser.title.strip() if parser.title is not None else None
                form = parser.form
                if form is None or not response.is_success:
                    entry["fields"] = form["names"] if form else []
                    raise BrowserError(
                        f"authorization page without a form: HTTP {response.status_code} at {page_url}: {text[:500]}"
                    )
                entry["fields"] = form["names"]
                available = set(name for name, _ in form["fields"]) | set(form["names"])
                chosen = next(
                    (i for i, e in enumerate(self.entries) if all(k in available for k in e.get("fields", {}))),
                    None,
                )
                if chosen is None:
                    raise BrowserError(
                        f"no browser entry matches the form at {page_url} (fields {form['names']}): {text[:500]}"
                    )
                fill = {k: str(v) for k, v in self.entries[chosen].get("fields", {}).items()}
                entry["entry"] = chosen
                entry["filled"] = sorted(fill)
                submit_names = [name for name, _ in form["submits"]]
                pairs = [(k, v) for k, v in form["fields"] if k not in fill]
                clicked = any(k in submit_names for k in fill)
                if not clicked and form["submits"]:
                    # A browser sends the name/value of the button that was clicked: the first one.
                    name, value = form["submits"][0]
                    if name not in fill:
                        pairs.append((name, value))
                pairs.extend(fill.items())
                method = "POST" if form["method"] == "post" else "GET"
                url = urljoin(page_url, form["action"]) if form["action"] else page_url
                if method == "GET":
                    url = url.split("?", 1)[0]  # a GET form's data replaces the action's query
                data = pairs
            raise BrowserError(f"authorization did not reach {self.redirect_uri} within {MAX_BROWSER_STEPS} steps")


# --- the run -------------------------------------------------------------------------------------


def leaf_errors(exc):
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaf_errors(sub)]
    return [exc]


def error_text(exc):
    return "; ".join(f"{type(e).__name__}: {e}" for e in leaf_errors(exc))


async def run(config, steps, out):
    server_url = config["server_url"]
    redirect_uri = config["redirect_uri"]
    registration = config.get("registration", "dcr")
    timeout = httpx2.Timeout(30, read=60)
    storage = RecordingStorage()
    browser = Browser(redirect_uri, config.get("browser", []), out["browser_log"], timeout)
    out["_storage"] = storage
    out["_browser"] = browser

    async def redirect_handler(authorization_url):
        await browser.walk(authorization_url)

    async def callback_handler():
        got = browser.captured or {}
        if "error" in got:
            out["authorization_error"] = {"error": got["error"], "error_description": got.get("error_description")}
            raise OAuthFlowError(f"authorization failed: {got['error']}: {got.get('error_description')}")
        if "code" not in got:
            raise OAuthFlowError(f"no code in the redirect to {redirect_uri}: {got}")
        return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))

    metadata = {
        "client_name": config.get("client_name", "obsidian-tc tests (python mcp sdk)"),
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": config.get("token_endpoint_auth_method", "none"),
    }
    if config.get("scope"):
        metadata["scope"] = config["scope"]
        forced = config["scope"]
        # Replaces the SDK's scope selection (WWW-Authenticate > PRM > AS metadata), see the docstring.
        sdk_oauth2.get_client_metadata_scopes = lambda *args, **kwargs: forced
    client_metadata = OAuthClientMetadata.model_validate(metadata)

    cimd_url = config.get("client_metadata_url") if registration == "cimd" else None
    if registration == "cimd" and not cimd_url:
        raise ValueError("registration cimd needs client_metadata_url")
    bypass = cimd_url is not None and not cimd_url.startswith("https://")
    provider = OAuthClientProvider(
        server_url=server_url,
        client_metadata=client_metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=None if bypass else cimd_url,
    )
    if bypass:
        # The constructor insists on https (see the docstring); the flow itself only reads this field.
        provider.context.client_metadata_url = cimd_url
    out["cimd_https_check_bypassed"] = bypass

    async def log_response(response):
        request = response.request
        item = {"method": request.method, "url": str(request.url), "status": response.status_code}
        if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = dict(parse_qsl(request.content.decode()))
            item["form"] = {k: form[k] for k in ("grant_type", "client_id", "scope", "resource", "redirect_uri") if k in form}
            item["form_keys"] = sorted(form)
        elif request.url.path.endswith("/register") or (
            provider.context.oauth_metadata is not None
            and str(provider.context.oauth_metadata.registration_endpoint) == str(request.url)
        ):
            try:
                item["json"] = json.loads(request.content)
            except ValueError:
                pass
        if request.url.path.startswith(urlsplit(server_url).path) and request.method == "POST":
            try:
                item["rpc"] = json.loads(request.content).get("method")
            except (ValueError, AttributeError):
                pass
        item["authorization"] = "Bearer" if request.headers.get("authorization", "").startswith("Bearer ") else None
        out["http_log"].append(item)

    http_client = httpx2.AsyncClient(auth=provider, timeout=timeout, event_hooks={"response": [log_response]})
    try:
        async with Client(streamable_http_client(server_url, http_client=http_client), mode="legacy") as client:
            for step in steps:
                op = step["op"]
                try:
                    if op == "list_tools":
                        listed = await client.list_tools()
                        out["results"].append([dump(t) for t in listed.tools])
                    elif op == "call":
                        result = await client.call_tool(step["name"], step.get("args", {}))
                        out["results"].append(dump(result))
                    elif op == "raw_token":
                        token = provider.context.current_tokens.access_token if provider.context.current_tokens else None
                        out["access_token"] = token
                        out["results"].append({"access_token": token})
                    else:
                        raise SystemExit(f"unknown op {op}")
                except MCPError as e:
                    out["results"].append({"error": {"code": e.code, "message": e.message, "data": e.data}})

            if config.get("refresh"):
                before = storage.tokens[-1] if storage.tokens else None
                seen, runs = len(storage.tokens), browser.runs
                # The provider's own expiry check is `time.time() <= context.token_expiry_time`.
                provider.context.token_expiry_time = time.time() - 1
                await client.list_tools()
                after = storage.tokens[-1] if storage.tokens else None
                refresh_sent = any(i.get("form", {}).get("grant_type") == "refresh_token" for i in out["http_log"])
                out["refresh_fell_back_to_reauth"] = browser.runs > runs
                out["refreshed"] = bool(
                    before is not None
                    and len(storage.tokens) > seen
                    and browser.runs == runs
                    and refresh_sent
                    and after.access_token != before.access_token
                )
                out["refresh_rotated"] = bool(
                    out["refreshed"] and after.refresh_token and after.refresh_token != before.refresh_token
                )
    finally:
        await http_client.aclose()

    if provider.context.current_tokens is not None:
        out["access_token"] = provider.context.current_tokens.access_token
    if registration == "cimd" and storage.client_info is not None and storage.client_info.client_id != cimd_url:
        raise OAuthFlowError(
            "registration cimd requested but the SDK registered dynamically "
            "(authorization server metadata lacks client_id_metadata_document_supported: true?)"
        )


async def main():
    out = {
        "results": [], "tokens": [], "client_info": None, "browser_log": [], "refreshed": False,
        "refresh_rotated": False, "error": None, "authorize_requests": [], "authorization_error": None,
        "http_log": [], "access_token": None, "browser_runs": 0, "refresh_fell_back_to_reauth": False,
        "cimd_https_check_bypassed": False,
    }
    try:
        config = json.loads(sys.argv[1])
        steps = json.loads(sys.stdin.read() or "[]")
        await asyncio.wait_for(run(config, steps, out), timeout=config.get("timeout_s", 120))
    except BaseException as e:  # noqa: BLE001 - everything goes into the JSON for the Rust test
        if isinstance(e, KeyboardInterrupt):
            raise
        traceback.print_exception(e, file=sys.stderr)
        text = error_text(e) if not isinstance(e, asyncio.TimeoutError) else "timed out"
        browser = out.get("_browser")
        # The transport may wrap the walker's own failure; name it first when it has one.
        if browser is not None and browser.error and browser.error not in text:
            text = f"{browser.error} ({text})"
        out["error"] = text or type(e).__name__
    storage = out.pop("_storage", None)
    browser = out.pop("_browser", None)
    if storage is not None:
        out["tokens"] = [dump(t) for t in storage.tokens]
        out["client_info"] = dump(storage.client_info) if storage.client_info is not None else None
    if browser is not None:
        out["browser_runs"] = browser.runs
        out["authorize_requests"] = browser.authorize_requests
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
