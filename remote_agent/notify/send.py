"""One HTTP POST per target, standard library only (the agent's rule), with a short timeout: a
message that cannot go is said in the journal (without its URL: the URL may hold a token).

Targets, by their URL:
- `json://HOST[:PORT]/PATH` (http) and `jsons://…` (https): the message as a JSON object (apprise's
  plain JSON webhook form);
- `https://hooks.slack.com/…`: Slack's incoming webhook, `{"text": line}`;
- `https://discord.com/api/webhooks/…` (or discordapp.com): `{"content": line}`;
- `ntfy://HOST/TOPIC` (http) and `ntfys://HOST/TOPIC` (https): the line as the body, ntfy's way.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Tuple
from urllib.parse import urlsplit

TIMEOUT = 5.0
KINDS = ("json", "jsons", "ntfy", "ntfys", "slack", "discord")


def kind_of(url: str) -> Optional[str]:
    parts = urlsplit(url)
    if parts.scheme in ("json", "jsons", "ntfy", "ntfys"):
        return parts.scheme if parts.netloc else None
    if parts.scheme == "https" and parts.netloc == "hooks.slack.com":
        return "slack"
    if parts.scheme == "https" and parts.netloc in ("discord.com", "discordapp.com"):
        return "discord"
    return None


def request_for(url: str, message: Dict[str, Any]) -> Tuple[str, bytes, str]:
    """(the http(s) URL to POST to, the body, its content type)."""
    kind = kind_of(url)
    parts = urlsplit(url)
    line = str(message.get("text") or "")
    if kind in ("json", "jsons"):
        target = "%s://%s%s" % ("https" if kind == "jsons" else "http", parts.netloc, parts.path or "/")
        return target, json.dumps(message).encode("utf-8"), "application/json"
    if kind in ("ntfy", "ntfys"):
        target = "%s://%s%s" % ("https" if kind == "ntfys" else "http", parts.netloc, parts.path or "/")
        return target, line.encode("utf-8"), "text/plain; charset=utf-8"
    key = "text" if kind == "slack" else "content"
    return url, json.dumps({key: line}).encode("utf-8"), "application/json"


def deliver(url: str, message: Dict[str, Any]) -> Optional[str]:
    """None when it went; else why not, in words that do not repeat the URL."""
    if kind_of(url) is None:
        return "not a target this host can send to"
    target, body, content_type = request_for(url, message)
    import urllib.error  # here: http.client is a tenth of every CLI start, and most never send
    import urllib.request

    req = urllib.request.Request(target, data=body, method="POST", headers={"Content-Type": content_type})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=TIMEOUT) as answer:
            answer.read(1024)
        return None
    except urllib.error.HTTPError as exc:
        return "HTTP %d" % exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return type(reason).__name__ if not str(reason) else str(reason).split(":")[0][:80]
