"""A large language model behind an OpenAI-compatible endpoint as the model under test of
:func:`fairpipe_rs.audit`: ``LLM(base_url=..., model=..., prompt="credit.j2")`` is the ``llm``
block of a ``load_model`` stage (docs/llm-audits.md lists its keys), read by the same engine as
``fairpipe run``: prompts rendered from each row, P(favourable) from the answer's logprobs,
requests retried and cached in SQLite.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Iterator, Optional, Sequence, Union

_YES_NO = {"favourable": ["yes", "Yes"], "unfavourable": ["no", "No"]}

#: The estimate ``audit`` runs for an LLM when ``options`` sizes none: at most 250 trials of 32
#: inputs, stopped as soon as the flip rate is known to ±0.02 (a confidence sequence, valid at
#: the stop). The standard estimate (100 trials × 1,000 inputs, each under every protected
#: combination) would be 200,000 prompts for one binary attribute.
LLM_ESTIMATE = {"trials": 250, "samples": 32, "precision": 0.02}


class LLM(Mapping[str, Any]):
    """An LLM endpoint as a model: pass it as ``audit``'s ``model``.

    Parameters
    ----------
    base_url:
        The API's base, e.g. ``"http://127.0.0.1:8080/v1"``.
    model:
        The model's name on the server.
    prompt:
        The prompt template file (minijinja / Jinja2): it sees each feature by its column name
        with its decoded value (``{{ sex }}``, ``{{ row["hours-per-week"] }}``).
    answers:
        ``{"favourable": [...], "unfavourable": [...]}``; default yes / no. A rating instead:
        ``{"scale": [0, 10]}`` (whole numbers LOW to HIGH): the score is the expected rating,
        and ``check`` and ``estimate`` give ``score_shift`` in the scale's points.
    system:
        A system message.
    names:
        Name proxies: ``{column: {value: [first names, ...]}}``, for ``{{ name }}``.
    cache:
        The SQLite response cache file (default ``llm-cache.sqlite`` in the current folder); ``""``
        for none.
    **keys:
        Any other key of the ``llm`` block: ``scores``, ``api``, ``temperature``, ``samples``,
        ``top_logprobs``, ``max_tokens``, ``seed``, ``api_key_env``, ``concurrency``,
        ``timeout_s``, ``retries``, ``backoff_s``, ``max_requests``, ``max_tokens_total``,
        ``max_unparsed``, ``grammar`` (llama.cpp: each request carries a grammar allowing only the
        expected answers), ``price`` (``{"prompt": 0.15, "completion": 0.60}`` per million tokens:
        the cost line before the audit gives the money, and ``remote.llm.cost`` what the answers
        cost). An unknown key is an error when the audit starts.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        prompt: "str | os.PathLike[str]",
        *,
        answers: Optional[Mapping[str, Sequence[Union[str, int]]]] = None,
        system: Optional[str] = None,
        names: Optional[Mapping[str, Mapping[str, Sequence[str]]]] = None,
        cache: "str | os.PathLike[str]" = "llm-cache.sqlite",
        **keys: Any,
    ) -> None:
        block: dict[str, Any] = {
            "base_url": str(base_url),
            "model": str(model),
            # Absolute: the engine resolves paths against the pipeline's folder, which an
            # in-process audit does not have.
            "prompt": os.path.abspath(os.fspath(prompt)),
            "answers": {k: [int(a) if k == "scale" else str(a) for a in v] for k, v in (answers or _YES_NO).items()},
        }
        if system is not None:
            block["system"] = str(system)
        if names is not None:
            block["names"] = {col: {str(v): [str(n) for n in ns] for v, ns in vals.items()} for col, vals in names.items()}
        cache = os.fspath(cache)
        block["cache"] = os.path.abspath(cache) if cache else ""
        block.update(keys)
        self._config = {"llm": block}

    def __getitem__(self, key: str) -> Any:
        return self._config[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._config)

    def __len__(self) -> int:
        return len(self._config)

    def __repr__(self) -> str:
        llm = self._config["llm"]
        return f"LLM(base_url={llm['base_url']!r}, model={llm['model']!r}, prompt={llm['prompt']!r})"
