"""Model calls: one client interface, a real HTTP client, and a recorded one.

* :class:`OpenAICompatibleClient` speaks ``POST {base_url}/chat/completions`` — the API
  that a local vLLM, Ollama or llama.cpp server exposes — with a JSON-schema
  ``response_format``, so the server constrains the output to the step's schema.
* :class:`RecordedClient` serves responses that were recorded earlier: from a run's
  journal (strict replay) or from a recording file (tests). Responses from a file carry
  ``source="recorded"`` and the file's label, so a journal always says when an answer did
  not come from a live model.

The client only transports: checking the answer against the step's schema is the
engine's job (``model_validate_json``, never a hand-written parser).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..canonical import content_hash
from ..environment_proxies import EnvironmentTransport, deadline, url_origin
from ..errors import InputError, ModelCredentialsInClearError, ReplayDivergenceError
from ..inputs import load_json_file
from ..records import AuditEvent
from ..storage.graph_config import in_clear, opted_in
from ..tls import tls_context
from .errors import ModelError

#: ``1``: the model server's key may go over plain ``http://`` to another host
PLAIN_HTTP_OPT_IN_ENV = "CRADLE_MODEL_ALLOW_PLAIN_HTTP_CREDENTIALS"
#: packages whose versions every run records (with the prompt version and the model id)
RECORDED_PACKAGES = ("cradle-kg", "pydantic", "httpx", "cedarpy")


def package_versions(names: Iterable[str] = RECORDED_PACKAGES) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not-installed"
    return out


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChatMessage(_Frozen):
    role: Literal["system", "user", "assistant"]
    content: str


class ModelRequest(_Frozen):
    """Everything sent to the model — journaled in full with the response."""

    model: str
    messages: tuple[ChatMessage, ...]
    schema_name: str
    response_schema: dict[str, Any]
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = 0

    def body(self) -> dict[str, Any]:
        """The OpenAI-compatible request body."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": self.schema_name, "schema": self.response_schema, "strict": True}},
        }
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    @property
    def hash(self) -> str:
        return content_hash(self.model_dump(mode="json"))


class ModelUsage(_Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ModelResponse(_Frozen):
    model: str
    content: str
    finish_reason: str | None = None
    usage: ModelUsage = ModelUsage()
    #: the server's whole answer, as received
    raw: dict[str, Any] = Field(default_factory=dict)
    source: Literal["live", "recorded"] = "live"
    #: for a recorded response: where it was recorded (a file label or a journal event)
    recorded_from: str | None = None


class ModelClient(Protocol):
    """What the engine needs from a model: one chat completion per request."""

    @property
    def kind(self) -> str: ...

    def complete(self, request: ModelRequest) -> ModelResponse: ...


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Completion(BaseModel):
    """The envelope of an OpenAI-compatible answer (validated, not hand-parsed)."""

    model: str = ""
    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage = _Usage()


#: the most bytes of a model server's answer read (uncompressed, as asked): as a tool's
#: answer (``input_limits.max_output_bytes``' default) — read whole and journaled whole,
#: a 20 MiB answer grew the journal by ~100 MiB a step (``tests/security/test_326``)
MAX_ANSWER_BYTES = 16 << 20


class OpenAICompatibleClient:
    """A real HTTP client for ``/v1/chat/completions`` servers (vLLM, Ollama, llama.cpp)."""

    kind = "openai-compatible"

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 120.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        #: how the server is named in every message (journaled when a step fails): its
        #: origin — the URL may carry a key (``user:key@``, ``?api-key=``): test_610
        self.name = url_origin(self.base_url)
        # a loopback model server is never proxied, whatever the environment names
        # (its key in clear to the proxy: test_401)
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout,
            verify=tls_context(),
            transport=transport or EnvironmentTransport(verify=tls_context()))
        url = self._http.base_url
        #: a key (the bearer header, ``user:key@`` sent as basic auth) that would go in
        #: clear to another machine: refused at each request unless opted in (test_617)
        self._in_clear = bool(api_key or url.userinfo) and in_clear(url.scheme, url.host)

    def close(self) -> None:
        self._http.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        self._refuse_in_clear()
        try:
            status, data = self._answer(request)
            if not 200 <= status < 300:
                text = data[:200].decode("utf-8", "replace")
                raise ModelError(f"model server `{self.name}` answered {status}: {text}")
            body = json.loads(data)
        except httpx.HTTPError as exc:
            raise ModelError(f"cannot reach the model server `{self.name}`: {exc}") from exc
        except (ValueError, RecursionError) as exc:
            raise ModelError(f"model server `{self.name}` did not answer JSON") from exc
        try:
            completion = _Completion.model_validate(body)
        except ValidationError as exc:
            raise ModelError(f"model server `{self.name}` answered an unexpected "
                             f"envelope: {exc.errors()[0]['msg'].lower()}") from exc
        choice = completion.choices[0]
        return ModelResponse(model=completion.model or request.model,
                             content=choice.message.content or "",
                             finish_reason=choice.finish_reason,
                             usage=ModelUsage(**completion.usage.model_dump()),
                             raw=body, source="live")

    def _refuse_in_clear(self) -> None:
        """A key over plain ``http://`` to a host not loopback, as the graph store's
        credentials (``graph_config.in_clear``): a :class:`ModelCredentialsInClearError`
        before any request, unless :data:`PLAIN_HTTP_OPT_IN_ENV` is ``1`` (read only
        then) — ``tests/security/test_617``."""
        if not self._in_clear or opted_in(PLAIN_HTTP_OPT_IN_ENV, ModelCredentialsInClearError,
                                          f"model server `{self.name}`"):
            return
        raise ModelCredentialsInClearError(
            f"model server `{self.name}`: sends its key in clear: plain `http://` to "
            f"`{self._http.base_url.host}`, not a loopback address",
            hint=f"use `https://`; on a network you trust, `{PLAIN_HTTP_OPT_IN_ENV}=1`")

    def _answer(self, request: ModelRequest) -> tuple[int, bytes]:
        """The answer's status and body: asked uncompressed and read raw, at most
        :data:`MAX_ANSWER_BYTES`, whole within the client's timeout of its headers and
        twice it of the request (a server sending its headers a byte at a time:
        ``tests/security/test_611``) — a :class:`ModelError` past either, or in an
        encoding not asked for (a 20 KB gzip stream is 20 MiB of text:
        ``tests/security/test_326``)."""
        sent = self._http.build_request("POST", "/chat/completions", json=request.body(),
                                        headers={"Accept-Encoding": "identity"})
        timeout = self._http.timeout.read or 120.0
        with deadline(2 * timeout):
            return self._read(sent, timeout)

    def _read(self, sent: httpx.Request, timeout: float) -> tuple[int, bytes]:
        streamed = self._http.send(sent, stream=True)
        try:
            encoding = streamed.headers.get("content-encoding", "").strip().lower()
            if encoding not in ("", "identity"):
                raise ModelError(f"model server `{self.name}` answered in an encoding "
                                 f"not asked for: {encoding[:40]!r}")
            until = time.monotonic() + timeout
            body = bytearray()
            for raw in streamed.iter_raw():
                body += raw
                if len(body) > MAX_ANSWER_BYTES:
                    raise ModelError(f"model server `{self.name}` answered more than "
                                     f"{MAX_ANSWER_BYTES} bytes")
                if time.monotonic() > until:
                    raise ModelError(f"model server `{self.name}` did not send its "
                                     "whole answer in time")
            return streamed.status_code, bytes(body)
        finally:
            streamed.close()


class RecordedClient:
    """Serves recorded responses in order; never calls a model.

    Built from a journal (``from_events``) it also holds the request that was recorded
    with each response; in ``strict`` mode a different request is a divergence.
    """

    kind = "recorded"

    def __init__(self, responses: Sequence[ModelResponse], *, label: str,
                 expected: Sequence[tuple[AuditEvent, str]] = (), strict: bool = False) -> None:
        self.label = label
        self._responses = list(responses)
        self._expected = list(expected)
        self._strict = strict
        self.served = 0

    @classmethod
    def from_file(cls, path: Path) -> RecordedClient:
        """A recording file: ``{"label": ..., "responses": [{"model":..., "content":...}]}``."""
        data = load_json_file(path)  # strict: a key given twice is refused, not last-wins
        try:
            label = str(data.get("label") or path.name)
            responses = [ModelResponse.model_validate(
                {**r, "source": "recorded", "recorded_from": label}) for r in data["responses"]]
        except (AttributeError, KeyError, TypeError, ValidationError) as exc:
            raise InputError(f"cannot read the model recording `{path}`: {exc}") from exc
        return cls(responses, label=label)

    @classmethod
    def from_events(cls, events: Iterable[AuditEvent], run_id: str, *,
                    strict: bool = True) -> RecordedClient:
        """The ``model.called`` events of one run, served back exactly as journaled."""
        calls = [e for e in events if e.run_id == run_id and e.kind == "model.called"]
        return cls([ModelResponse.model_validate(e.payload["response"]) for e in calls],
                   label=f"journal:{run_id}", strict=strict,
                   expected=[(e, str(e.payload.get("request_hash", ""))) for e in calls])

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self.served >= len(self._responses):
            where = self._expected[-1][0] if self._expected else None
            raise ReplayDivergenceError(
                f"`{self.label}`: no recorded response left for call {self.served + 1}"
                + (f" (last recorded call at seq {where.seq})" if where else ""),
                seq=where.seq if where else None)
        if self._strict and self.served < len(self._expected):
            event, recorded_hash = self._expected[self.served]
            if recorded_hash and recorded_hash != request.hash:
                raise ReplayDivergenceError(
                    f"replay diverges at seq {event.seq} (`{event.kind}`): the request to the "
                    "model differs from the recorded one", seq=event.seq)
        response = self._responses[self.served]
        self.served += 1
        return response


class NoModelClient:
    """What a model step meets when no model server is configured: it fails closed
    (``model_unavailable``), never a guess and never a substitute model."""

    kind = "none"

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError(f"no model server is configured for `{request.model}`",
                         hint="pass --base-url or set CRADLE_MODEL_BASE_URL")


def client_for(base_url: str | None, api_key: str | None = None) -> ModelClient:
    """The real OpenAI-compatible client for ``base_url``, or the one that fails closed."""
    if not base_url:
        return NoModelClient()
    return OpenAICompatibleClient(base_url, api_key=api_key)
