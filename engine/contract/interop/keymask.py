"""The API key, masked in whatever a server sends (the one mask, applied where every reply is parsed).

The key is read only from the environment variable the user names (ProbeConfig.api_key), sent as
a Bearer header and never stored, printed or written: KeyMask replaces it with *** in error
text, every string of every JSON chunk and the streamed pieces (a key split across pieces too).
"""

from __future__ import annotations

from typing import Any

MASK = "***"


class KeyMask:
    """The one mask at the boundary where replies are parsed: the API key replaced by *** in
    everything a server sent, before any of it is kept. Called on a string; `json` masks every
    string (keys too) of a parsed JSON value; `pieces` masks the streamed pieces as one text, so a
    key split across pieces is caught: "".join(mask.pieces(p)) == mask("".join(p)).
    Without a key everything passes unchanged."""

    def __init__(self, key: str | None) -> None:
        self.key = key or None

    def __call__(self, text: str) -> str:
        return text.replace(self.key, MASK) if self.key else text

    def json(self, value: Any) -> Any:
        if not self.key or value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        return {self.json(k): self.json(v) for k, v in value.items()}  # a dict: parsed JSON holds nothing else

    def pieces(self, pieces: list[str]) -> list[str]:
        joined = "".join(pieces)
        if not self.key or self.key not in joined:
            return list(pieces)
        spans, at = [], joined.find(self.key)
        while at >= 0:
            spans.append((at, at + len(self.key)))
            at = joined.find(self.key, at + len(self.key))
        out, start, k = [], 0, 0
        for piece in pieces:
            end, parts, cur = start + len(piece), [], start
            while k < len(spans) and spans[k][0] < end:
                a, b = spans[k]
                parts.append(joined[cur:max(cur, a)])
                if a >= start:
                    parts.append(MASK)  # the key starts in this piece: its mask goes here
                cur = min(b, end)
                if b > end:
                    break  # the key goes on into the next piece
                k += 1
            parts.append(joined[cur:end])
            out.append("".join(parts))
            start = end
        return out
