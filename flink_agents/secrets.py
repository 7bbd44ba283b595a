"""The one secret rule of flink-agents: which names, values and parts of text are secrets,
and how they are masked.

Every place that keeps secrets out of what it shows uses this module: the plan (values
moved to a side table), the SQL layer (``SHOW CREATE``, ``DESC``), the event log (its
byte-level fast path included), error messages, ``repr`` and our loggers. The rule:

- **Names.** A name (an argument, a configuration key, a header, a JSON key, a query
  parameter) is secret when it ends, case ignored, with one of :data:`SECRET_WORDS`, also in
  the plural (``token`` only in the singular: ``max_tokens`` is a count), any separators
  (``-``, ``_``, ``.``, white space) allowed between the parts of a word (``api key``) and
  after it. So ``api_key``, ``api-key``,
  ``X-Api-Key``, ``api.key``, ``apiKey``, ``OPENAI_API_KEY``, ``webhook.token``,
  ``client_secret``, ``Authorization`` and ``Set-Cookie`` are; ``api_key_env`` (the name of
  a variable), ``token_url`` and ``max_tokens`` are not.
- **Values.** A ``SecretStr`` (pydantic's, or anything with ``get_secret_value``), and a
  header value that is a credential as a whole (``Bearer <token>``, ``Basic <token>``).
- **Text.** The password of a URL (``http://user:pw@host``), the value of a query
  parameter with a secret name (``?token=...``), the value after a secret name in
  ``name=value``, ``name: value``, ``"name": "value"`` (reprs, headers, JSON in messages), a
  ``Bearer`` token, and every *known* secret value (the plan's; see :class:`Masker`).

The API others build on: :func:`is_secret_name`, :func:`is_secret_value`, :func:`mask`
(text), :class:`Masker` (text and JSON-like values, with known secret values),
:func:`register_secrets` (values every ``flink_agents`` log record is masked of) and
:class:`SecretMaskingFilter` (the same for a handler of your own). The module imports
nothing of ours and nothing heavy: the event log's writer process imports it at start.
Trust model and where what is masked: docs/security.md.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

#: What every masked secret is replaced by.
MASK = "***"

#: The words a secret name ends with; a space stands for any separators between parts
#: (``api key``: ``api_key``, ``api-key``, ``api.key``, ``apikey``).
SECRET_WORDS: tuple[str, ...] = (
    "api key",
    "access key",
    "private key",
    "secret key",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "token",
    "credential",
    "authorization",
    "cookie",
)
#: Words that are not secret in the plural (a count: ``max_tokens``).
_SINGULAR_ONLY = frozenset({"token"})
#: The separators: ignored between the parts of a word and after it (case is ignored too).
NAME_SEPARATORS = b"-_. \t\r\n\f\v"
#: The last part of every secret word: a name can only be secret where one of these
#: appears (the event log's fast path looks for them first).
SECRET_TAILS: tuple[bytes, ...] = tuple(
    dict.fromkeys(w.rsplit(" ", 1)[-1].encode() for w in SECRET_WORDS)
)


def _name_pattern() -> str:
    sep = r"[-_. \t\r\n\f\v]*"
    words = []
    for word in SECRET_WORDS:
        body = sep.join(re.escape(part) for part in word.split(" "))
        words.append(body if word in _SINGULAR_ONLY else f"{body}s?")
    return rf"(?:{'|'.join(words)}){sep}\Z"


_SECRET_NAME = re.compile(_name_pattern())
_SECRET_NAME_BYTES = re.compile(_name_pattern().encode())

_MIN_KNOWN = 4  # shorter known values would mask ordinary text


def is_secret_name(name: object) -> bool:
    """Whether ``name`` (a key, argument, header or parameter name) says it holds a secret:
    it ends, case and separators ignored, with one of :data:`SECRET_WORDS`."""
    if not isinstance(name, str) or not name:
        return False
    return _SECRET_NAME.search(name.lower()) is not None


def secret_str_value(value: object) -> str | None:
    """The text of a ``SecretStr`` (pydantic's or alike: it has ``get_secret_value``),
    else None."""
    getter = getattr(value, "get_secret_value", None)
    if getter is None or isinstance(value, type) or not callable(getter):
        return None
    text = getter()
    return text if isinstance(text, str) else None


# A credential header value as a whole: a scheme and one token (a Basic token is base64,
# which has a capital, a digit or a symbol after its first character; English words do not).
_CREDENTIAL_VALUE = re.compile(r"(bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})\s*", re.I)


def is_secret_value(value: object) -> bool:
    """Whether ``value`` is a secret by itself, whatever its name: a ``SecretStr``, or a
    credential header value as a whole (``"Bearer abc..."``, ``"Basic dXNl..."``)."""
    if isinstance(value, str):
        if value[:1] not in ("b", "B"):
            return False
        match = _CREDENTIAL_VALUE.fullmatch(value)
        if match is None:
            return False
        token = match.group(2)
        return match.group(1).lower() == "bearer" or any(not c.islower() for c in token[1:])
    return secret_str_value(value) is not None


# -- text -----------------------------------------------------------------------------------

# The password of a URL's user information (``scheme://user:password@host``).
_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/?#@:'\"]{0,256}:)"
    r"([^\s/?#@'\"]{1,1024})(@)"
)
# A query (or form) parameter: its name and its value.
_PARAMETER = re.compile(r"([?&;])([^=&;#\s?'\"]{1,256})=([^&;#\s'\"]{0,4096})")
# ``name = value`` / ``name: value`` with an optionally quoted name and value (reprs,
# headers, JSON and YAML in messages). A quoted value ends at its quote, an unquoted one at
# white space or punctuation; a credential scheme (``Bearer x``) is taken with its token.
# Every pattern starts at a boundary and bounds the repeats it may backtrack over: masking
# is linear in the text (an unbounded name pattern backtracked quadratically over a
# 20,000-character word). A quoted value longer than 4,096 characters is not recognised.
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])(?P<q>["']?)(?P<name>[A-Za-z_][\w.-]{0,200})(?P=q)"""
    r"""(?P<sep>\s{0,16}[:=]\s{0,16})"""
    r"""(?:(?P<vq>["'])(?P<quoted>(?:\\.|(?!(?P=vq))[^\\]){0,4096})(?P=vq)"""
    r"""|(?P<bare>(?:(?:bearer|basic|token)\s{1,16})?[^\s,;&)}\]'"]+))""",
    re.I,
)
_BEARER = re.compile(r"\b(bearer\s{1,16})([A-Za-z0-9._~+/=-]{12,4096})", re.I)


def _url_password(match: re.Match[str]) -> str:
    return f"{match.group(1)}{MASK}{match.group(3)}"


def _parameter(match: re.Match[str]) -> str:
    if not is_secret_name(match.group(2)) or not match.group(3):
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}={MASK}"


def _assignment(match: re.Match[str]) -> str:
    if not is_secret_name(match.group("name")):
        return match.group(0)
    quote = match.group("vq")
    value = f"{quote}{MASK}{quote}" if quote else MASK
    return f"{match.group('q')}{match.group('name')}{match.group('q')}{match.group('sep')}{value}"


def _has_tail(lowered: str) -> bool:
    return any(tail.decode() in lowered for tail in SECRET_TAILS)


def mask(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with the secrets the rule finds in text masked, and every value of
    ``known`` (secret values, e.g. the plan's) replaced by :data:`MASK`."""
    if not isinstance(text, str) or not text:
        return text
    for value in known:
        if value and len(value) >= _MIN_KNOWN and value in text:
            text = text.replace(value, MASK)
    if "://" in text and "@" in text:
        text = _URL_PASSWORD.sub(_url_password, text)
    lowered = text.lower()
    if _has_tail(lowered):
        if "=" in text:
            text = _PARAMETER.sub(_parameter, text)
        if "=" in text or ":" in text:
            text = _ASSIGNMENT.sub(_assignment, text)
    if "bearer" in lowered:
        text = _BEARER.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return text


def url_secrets(text: str) -> list[str]:
    """The secret parts of the URLs in ``text`` (passwords, secret query values)."""
    found = [m.group(2) for m in _URL_PASSWORD.finditer(text)] if "://" in text else []
    found += [m.group(3) for m in _PARAMETER.finditer(text) if is_secret_name(m.group(2))]
    return [f for f in found if f]


def has_text_secret(text: str) -> bool:
    """Whether :func:`mask` (without known values) would change ``text``."""
    return mask(text) != text


# Bytes after a tail that keep a name's ending (separators, a plural s; escaped white space
# is handled apart), bytes of a name in text, escaped white space (``\n``) in JSON.
_AFTER_TAIL = frozenset(b"-_.s ")
_TEXT_NAME = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")
_ESCAPED_SPACE = frozenset(b"ntrf")
_QUOTE = ord('"')
_APOSTROPHE = ord("'")
_BACKSLASH = ord("\\")
_ASSIGN = frozenset(b":=")
#: ``(needle, tails)``: the tails are looked for only where the needle is found (tails
#: with the same first four bytes share one: ``pass``).
_PREFILTERS: tuple[tuple[bytes, tuple[bytes, ...]], ...] = tuple(
    (group[0] if len(group) == 1 else prefix, tuple(group))
    for prefix, group in {
        t[:4]: [u for u in SECRET_TAILS if u[:4] == t[:4]] for t in SECRET_TAILS
    }.items()
)
#: Whether a key that is just the tail (``"token":"...``) is a secret name.
_TAIL_ALONE = {tail: _SECRET_NAME_BYTES.search(tail) is not None for tail in SECRET_TAILS}


def json_may_hold_secret(data: bytes) -> bool:
    """Whether masking the compact JSON ``data`` value by value (:meth:`Masker.mask_value`
    without known values) may change it; conservative: True when in doubt, False only when
    certainly not. Byte checks, several times faster than a pattern (the event log's fast
    path).

    The rule needs a secret word's tail (``key``, ``token``...) at the end of a name:
    followed (after separators and a plural ``s``) by ``":"`` it ends a key with a
    string value (then the key decides), by ``:``, ``=``, ``'`` or a backslash it may end a
    name inside text (doubt). URLs with user information, ``bearer``, a string starting
    with ``basic `` and ``\\u`` escapes are doubts too.
    """
    if data.isascii():
        lowered = data.lower()
    else:  # lowered as text: a few non-ASCII letters lower to ASCII ones (KELVIN SIGN: k)
        lowered = data.decode("utf-8", "surrogatepass").lower().encode("utf-8", "surrogatepass")
    # (``find``, not ``in``: ``bytes in bytes`` first tries the needle as an integer and
    # formats the TypeError it gets, about as much work as the search itself. One-byte
    # needles first: memchr finds them.)
    find = lowered.find
    if find(b"@") >= 0 and find(b"://") >= 0:
        return True
    if find(b"\\") >= 0 and find(b"\\u") >= 0:
        return True
    if find(b"bearer") >= 0 or find(b'"basic ') >= 0:
        return True
    size = len(lowered)
    for needle, tails in _PREFILTERS:
        start = find(needle)
        if start < 0:
            continue
        for tail in tails:
            if tail is not needle:
                start = find(tail)
            while start >= 0:
                if _secret_after(lowered, start, start + len(tail), size, tail):
                    return True
                start = find(tail, start + 1)
    return False


def _secret_after(lowered: bytes, start: int, pos: int, size: int, tail: bytes) -> bool:
    """Whether the tail found at ``start`` (ending at ``pos``) may end a secret name that
    masking would act on: a JSON key with a string value, or a name before ``:`` / ``=`` in
    text (``api_key=...``, ``'password': ...``, ``\\"token\\": ...``); conservative."""
    after = lowered[pos] if pos < size else 0
    while True:  # what keeps the ending: separators, a plural s, escaped white space
        if after in _AFTER_TAIL:
            pos += 1
        elif after == _BACKSLASH and pos + 1 < size and lowered[pos + 1] in _ESCAPED_SPACE:
            pos += 2
        else:
            break
        after = lowered[pos] if pos < size else 0
    if after == _QUOTE:
        if lowered[pos + 1 : pos + 3] != b':"':
            return False  # the end of a string, or a key of a number, list or object
        # A key with a string value: the whole key decides (escapes: in doubt).
        opening = lowered.rfind(b'"', 0, start)
        if start and opening == start - 1:  # the key is the tail
            return _TAIL_ALONE[tail]
        name = lowered[opening + 1 : pos]
        return b"\\" in name or _SECRET_NAME_BYTES.search(name) is not None
    # In text: a name, an optional quote (escaped in JSON), white space, then : or =.
    if after == _BACKSLASH and lowered[pos + 1 : pos + 2] == b'"':
        pos += 2
    elif after == _APOSTROPHE:
        pos += 1
    after = lowered[pos] if pos < size else 0
    while after == 32 or (
        after == _BACKSLASH and pos + 1 < size and lowered[pos + 1] in _ESCAPED_SPACE
    ):
        pos += 1 if after == 32 else 2
        after = lowered[pos] if pos < size else 0
    if after not in _ASSIGN:
        return False
    # The name is the run of name bytes around the tail (masking compares its ending).
    first = start
    while first and lowered[first - 1] in _TEXT_NAME:
        first -= 1
    last = start + len(tail)
    while last < size and lowered[last] in _TEXT_NAME:
        last += 1
    return _SECRET_NAME_BYTES.search(lowered, first, last) is not None


# -- values ---------------------------------------------------------------------------------


class Masker:
    """Masks text and JSON-like values by the rule and by known secret values.

    Args:
        known: secret values (e.g. ``plan.secrets.values()``); non-strings (a ``SecretStr``
            gives its text) and values shorter than 4 characters are skipped.
    """

    def __init__(self, known: Iterable[Any] = ()) -> None:
        self._known: list[str] = []
        self.add(*known)

    def add(self, *values: Any) -> None:
        """Know these secret values too."""
        known = set(self._known)
        for value in values:
            text = secret_str_value(value) if not isinstance(value, str) else value
            if text and len(text) >= _MIN_KNOWN:
                known.add(text)
                known.update(s for s in url_secrets(text) if len(s) >= _MIN_KNOWN)
        # Longest first: a secret that contains another is masked whole.
        self._known = sorted(known, key=len, reverse=True)

    @property
    def known(self) -> tuple[str, ...]:
        """The known secret values, longest first."""
        return tuple(self._known)

    def mask(self, text: str) -> str:
        """``text`` masked (see :func:`mask`)."""
        return mask(text, self._known)

    def mask_value(self, value: Any) -> Any:
        """A JSON-like ``value`` with strings under secret names, secret values and the
        secrets inside strings masked (a new value; ``value`` is not changed)."""
        if isinstance(value, str):
            return MASK if is_secret_value(value) else self.mask(value)
        if isinstance(value, Mapping):
            return {
                (self.mask(k) if isinstance(k, str) else k): (
                    MASK if is_secret_name(k) and isinstance(v, str) and v else self.mask_value(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.mask_value(v) for v in value]
        if secret_str_value(value) is not None:
            return MASK
        return value

    def __bool__(self) -> bool:
        return bool(self._known)


def masked_mapping(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the values of secret names replaced by :data:`MASK` and the secrets
    inside the other values masked (for showing configuration: ``SHOW CREATE``)."""
    return {
        k: MASK
        if is_secret_name(k) or is_secret_value(v)
        else (mask(v) if isinstance(v, str) else v)
        for k, v in options.items()
    }


def mask_exception(exc: BaseException, masker: Masker | None = None) -> BaseException:
    """Mask the text arguments of ``exc`` in place (best effort: an exception whose message
    does not come from its ``args`` keeps it) and return it. For exceptions that are kept
    (a failed durable call in keyed state) or passed on as the cause of ours."""
    masker = _REGISTERED if masker is None else masker
    args = getattr(exc, "args", ())
    if any(isinstance(a, str) for a in args):
        masked = tuple(masker.mask(a) if isinstance(a, str) else a for a in args)
        if masked != args:
            try:
                exc.args = masked
            except (AttributeError, TypeError):
                pass
    if isinstance(getattr(exc, "message", None), str):
        try:
            exc.message = masker.mask(exc.message)  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            pass
    return exc


def masked_field(name: str, value: Any) -> Any:
    """A field's value as a ``repr`` may show it: masked when its name or the value is a
    secret, secrets inside text and JSON-like values masked."""
    if value and (is_secret_name(name) or is_secret_value(value)):
        return MASK
    if isinstance(value, (str, Mapping, list, tuple)):
        return _REGISTERED.mask_value(value)
    return value


# -- logs -----------------------------------------------------------------------------------

_REGISTERED = Masker()
_REGISTER_LOCK = threading.Lock()


def register_secrets(values: Iterable[Any]) -> None:
    """Make ``values`` known to every ``flink_agents`` log record (the plans' secrets are
    registered when a plan is made or read with its secrets)."""
    values = list(values)
    if not values:
        return
    with _REGISTER_LOCK:
        _REGISTERED.add(*values)
    install_log_masking()


def registered_masker() -> Masker:
    """The masker of every secret registered in this process."""
    return _REGISTERED


def _mask_record(record: logging.LogRecord, masker: Masker) -> None:
    """Mask a record's message and traceback in place."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a record that cannot format stays as it is
        return
    masked = masker.mask(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        record.exc_text = masker.mask(text)
    if record.stack_info:
        record.stack_info = masker.mask(record.stack_info)


class SecretMaskingFilter(logging.Filter):
    """A filter that masks secrets (the rule's and the registered values) in every record
    it sees; add it to a handler to mask your own loggers too
    (``handler.addFilter(SecretMaskingFilter())``). Our own loggers (``flink_agents.*``)
    are masked without it."""

    def filter(self, record: logging.LogRecord) -> bool:
        _mask_record(record, _REGISTERED)
        return True


_installed = False


def install_log_masking() -> None:
    """Mask every record of the ``flink_agents`` loggers as it is made (idempotent).

    A filter on the ``flink_agents`` logger would see only that logger's own records (a
    child's records reach the parent's handlers, not its filters), so this wraps the log
    record factory: records of other loggers pass untouched.
    """
    global _installed
    if _installed:
        return
    with _REGISTER_LOCK:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if record.name.startswith("flink_agents"):
                _mask_record(record, _REGISTERED)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True


install_log_masking()
