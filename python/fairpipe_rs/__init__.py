"""fairpipe for Python: fairness testing of a classifier, in the notebook, by the fairpipe engine.

Audit the model you have, on the frame you have::

    import fairpipe_rs
    run = fairpipe_rs.audit(frame, model, label="income", protected=["gender"], favourable=">50K")
    run.figures("group_metrics")      # selection rates per group, intervals, parity ratios
    run.figures("estimate")["rate"]   # share of the domain treated differently for gender alone
    run.table("check")                # the real rows whose decision flips with gender
    run                               # in a notebook: the HTML report

or run a fairpipe TOML pipeline in memory::

    run = fairpipe_rs.run("pipelines/census-estimate.toml")

``frame`` is any table with the Arrow PyCapsule interface (pandas >= 2.2 with pyarrow, Polars,
pyarrow); ``model`` any object with ``predict_proba`` (scikit-learn estimators and Pipelines,
XGBoost, LightGBM and CatBoost's scikit-learn wrappers), an ONNX file, or a dict of a TOML
``load_model`` stage's keys (a served model's ``url``, a ``command``). The engine, the built-in
search methods (aequitas, eidig, maft, random, sg, testsgd) and the report are the command line's.
"""

from __future__ import annotations

import html
import os
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _frames, _native, _progress
from ._errors import GateFailed, PipelineError, Problem
from ._examples import example_data
from . import _llm
from ._llm import LLM
from ._model import ModelSpec

__all__ = ["audit", "bias_audit", "run", "Run", "Gate", "PipelineError", "GateFailed", "Problem", "example_data", "LLM", "__version__"]

__version__: str = _native.version()

#: The checks ``audit`` runs unless told otherwise.
DEFAULT_CHECKS = ("group_metrics", "estimate", "check")
#: Every check ``audit`` can run: the default ones, the Local Law 144 tables of the model's
#: decisions (``"bias_audit"``, with ``sex=`` and/or ``race=``) and an LLM's choices between two
#: candidates (``"pairwise"``, with its pair template in ``options={"pairwise": {"prompt": ...}}``)
#: and an LLM's pick among several candidates (``"ranking"``, with its list template in
#: ``options={"ranking": {"prompt": ...}}``).
CHECKS = DEFAULT_CHECKS + ("bias_audit", "pairwise", "ranking")

# Keys of a `generate` stage, from the engine's description of the kind (everything else in a
# `search=` dict is a parameter of the method).
_GENERATE_KEYS = frozenset(_native.kind_keys("generate"))


class Gate:
    """The verdict of a run's gate: ``passed`` and each condition with its value.

    ``conditions`` is a list of dicts (``condition``, ``value``, ``passed``, and ``note`` when the
    figure is missing), as in ``summary.json``'s ``gate`` section. ``bool(gate)`` is ``passed``.
    """

    def __init__(self, section: Mapping[str, Any]):
        self.passed: bool = bool(section.get("passed"))
        self.conditions: List[Dict[str, Any]] = list(section.get("conditions", []))

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        lines = [f"Gate({'passed' if self.passed else 'FAILED'})"]
        for c in self.conditions:
            lines.append(f"  {'pass' if c.get('passed') else 'FAIL'}  {c.get('condition')}  (value {c.get('value')})")
        return "\n".join(lines)


class Run:
    """A finished run: its figures, tables, gate and report, in memory.

    - ``figures(stage)``: the stage's figures (a dict, as under ``summary.json``'s ``stages``);
    - ``table(stage)``: the stage's result table as a Polars DataFrame (``pandas=True``: pandas);
    - ``summary``: everything ``summary.json`` holds (a dict);
    - ``gate``: the gate's verdict (``Gate``), or ``None`` when the run had no gate;
    - ``report_html()``: the HTML report; in a notebook the run shows it inline;
    - ``files``: the files written, when the run was given ``out``;
    - ``model_usage``: for an in-process Python model, its calls, rows and the seconds spent in
      ``predict_proba`` (and in building its input).
    """

    def __init__(self, native: _native.NativeRun, specs: Sequence[ModelSpec] = ()):
        self._native = native
        self._summary: Optional[Dict[str, Any]] = None
        self._specs = list(specs)

    @property
    def summary(self) -> Dict[str, Any]:
        """What ``summary.json`` holds: the pipeline, seed, stage order, each stage's figures,
        warnings and the gate."""
        if self._summary is None:
            self._summary = self._native.summary()
        return self._summary

    @property
    def stages(self) -> List[str]:
        """The stages, in the order they ran."""
        return list(self.summary.get("stage_order", []))

    def figures(self, stage: str) -> Dict[str, Any]:
        """Stage ``stage``'s figures (a dict: ``kind``, ``elapsed_s``, ``model_queries`` and the
        stage kind's own figures, e.g. ``rate`` and its interval for ``estimate``)."""
        stages: Dict[str, Dict[str, Any]] = self.summary.get("stages", {})
        if stage not in stages:
            raise KeyError(f"no stage {stage!r} in the run; the stages are {', '.join(stages)}")
        return stages[stage]

    @property
    def tables(self) -> List[str]:
        """The names of the result tables (a stage's name, or ``STAGE_SUFFIX`` for its second
        table), as the CSV files of a written run are named."""
        return list(self._native.table_names())

    def table(self, stage: str, pandas: bool = False) -> Any:
        """Stage ``stage``'s result table: a Polars DataFrame, or with ``pandas=True`` a pandas
        DataFrame (through pyarrow). ``stage`` may name a second table as ``STAGE_SUFFIX``."""
        table = self._native.table(stage, not pandas)
        if table is None:
            raise KeyError(f"stage {stage!r} has no table; the tables are {', '.join(self.tables) or 'none'}")
        if pandas:
            try:
                import pyarrow as pa

                return pa.table(table).to_pandas()
            except ImportError:
                import polars as pl

                return pl.DataFrame(self._native.table(stage, True)).to_pandas()
        import polars as pl

        return pl.DataFrame(table)

    @property
    def gate(self) -> Optional[Gate]:
        """The gate's verdict (``passed``, ``conditions``), or ``None`` without a gate."""
        section = self.summary.get("gate")
        return Gate(section) if section is not None else None

    @property
    def files(self) -> List[str]:
        """The files written (empty unless the run was given ``out``)."""
        return list(self._native.files())

    @property
    def model_usage(self) -> List[Dict[str, Any]]:
        """For each in-process Python model: calls, rows, ``predict_proba_s`` (seconds inside
        ``predict_proba``) and ``prepare_s`` (seconds building its input)."""
        return [spec.usage() for spec in self._specs]

    def report_html(self) -> str:
        """The HTML report, as ``report.html`` of a written run."""
        return self._native.report_html()

    def _repr_html_(self) -> str:
        # The report is a whole page with its own styles: shown in a frame so it does not restyle
        # the notebook.
        page = html.escape(self.report_html(), quote=True)
        return f'<iframe srcdoc="{page}" style="width:100%;height:640px;border:1px solid #ddd"></iframe>'

    def __repr__(self) -> str:
        s = self.summary
        gate = self.gate
        verdict = "" if gate is None else f", gate {'passed' if gate.passed else 'FAILED'}"
        return f"<fairpipe_rs.Run {s.get('pipeline')!r}: {len(self.stages)} stages ({', '.join(self.stages)}){verdict}>"


def _gate_list(gate: Union[None, str, Iterable[str]]) -> List[str]:
    if gate is None:
        return []
    if isinstance(gate, str):
        return [gate]
    return [str(g) for g in gate]


def _finish(native: _native.NativeRun, specs: Sequence[ModelSpec], raise_on_gate: bool) -> Run:
    result = Run(native, specs)
    if raise_on_gate and result.gate is not None and not result.gate.passed:
        raise GateFailed(result)
    return result


def _blanks_as_text(data: Any, columns: Sequence[str]) -> Any:
    """``data`` with missing cells of the text columns ``columns`` written as "" (pandas' NaN and
    None, Polars' null): the bias audit counts a blank category as Unknown, as it does a blank cell
    of a CSV file."""
    present = [c for c in columns if c in list(getattr(data, "columns", []))]
    if hasattr(data, "fillna") and hasattr(data, "copy"):  # pandas
        data = data.copy()
        for c in present:
            if data[c].dtype == object or str(data[c].dtype) in ("string", "str"):
                data[c] = data[c].fillna("")
        return data
    if hasattr(data, "with_columns") and hasattr(data, "schema"):  # Polars
        import polars as pl

        text = [c for c in present if data.schema[c] == pl.String]
        return data.with_columns([pl.col(c).fill_null("") for c in text]) if text else data
    return data


def bias_audit(
    data: Any,
    *,
    sex: Optional[str] = None,
    race: Optional[str] = None,
    ethnicity: Optional[str] = None,
    decision: Optional[str] = None,
    score: Optional[str] = None,
    selected: Union[None, str, int, Sequence[Union[str, int]]] = None,
    not_selected: Union[None, str, int, Sequence[Union[str, int]]] = None,
    exclude: Optional[Sequence[str]] = None,
    ignore_case: bool = False,
    unknown: Optional[Sequence[str]] = None,
    categories: Optional[Mapping[str, Mapping[str, str]]] = None,
    exclude_below: Optional[float] = None,
    exclusion_justification: Optional[str] = None,
    alpha: Optional[float] = None,
    qualifications: Optional[Sequence[str]] = None,
    applicant_id: Optional[str] = None,
    situation_k: Optional[int] = None,
    situation_t: Optional[float] = None,
    reference: Optional[Mapping[str, str]] = None,
    progress: _progress.Progress = None,
) -> Run:
    """The NYC Local Law 144 bias audit (6 RCNY §5-301) of a decision log: no model, no label.

    The tables per sex, race/ethnicity and their intersection (people, selected or scoring above
    the median, rate, impact ratio; unknown categories counted outside the ratios), as the
    ``bias_audit`` stage computes them (docs/bias-audit.md explains each key).

    Parameters
    ----------
    data:
        The log: a pandas or Polars DataFrame (or any table with ``__arrow_c_stream__``), one row
        per person. A blank (missing) sex, race or ethnicity is the Unknown category; no row is
        dropped.
    sex, race:
        The columns of sex and of race/ethnicity categories (give one or both).
    ethnicity:
        A Hispanic or Latino flag beside ``race``: Hispanic or Latino whatever the race, else the
        race's category (map its values in ``categories["ethnicity"]``).
    decision:
        The column of the tool's decisions (0/1, or the values ``selected`` and ``not_selected``
        name): selection rates.
    score:
        The column of the tool's scores (instead of ``decision``): scoring rates, the share above
        the whole sample's median.
    selected, not_selected, exclude, ignore_case:
        How the decision values are read: every value must be named, or its rows excluded; a value
        named nowhere is refused with its count.
    unknown, categories, exclude_below, exclusion_justification, alpha:
        As the stage's keys: values meaning Unknown, the mapping of data values to the rules'
        categories (``{"sex": {"M": "Male", "F": "Female"}}``), the share under which categories
        are left out of the ratios (with its justification), the tests' significance level.
    qualifications, applicant_id, situation_k, situation_t, reference:
        Beyond the rules, situation testing (Luong, Ruggieri and Turini 2011): the columns that
        say how qualified an applicant is; each applicant not selected is compared with the
        ``situation_k`` (16) most similar applicants of their own category and of the reference
        category (``reference``, e.g. ``{"sex": "Male"}``; default each table's most selected),
        and listed when the reference neighbours' rate is higher by at least ``situation_t``
        (0.3). ``applicant_id`` names the column printed beside each applicant listed.
    progress:
        What the run shows while it works, as for ``audit``.

    Returns
    -------
    Run
        ``run.table("bias_audit")`` is every category's row (a Polars DataFrame; ``pandas=True``
        for pandas); ``run.figures("bias_audit")`` the figures (``rate``, ``min_impact_ratio``,
        ``tables``, ``category_values``, ``situation_testing``, …); with ``qualifications``,
        ``run.table("bias_audit_situation")`` lists every applicant situation testing listed.

    Raises
    ------
    ValueError
        When neither or both of ``decision`` and ``score`` are given.
    PipelineError
        When a key cannot be applied to the data (a column that is not there, a value that no key
        names), with what to write.
    """
    if (decision is None) == (score is None):
        raise ValueError("give decision= (a column of decisions) or score= (a column of scores), one of them")
    keys: Dict[str, Any] = {
        "sex": sex,
        "race": race,
        "ethnicity": ethnicity,
        "column": decision if decision is not None else score,
        "outcome": "selection" if decision is not None else "score",
        "selected": list(selected) if isinstance(selected, (list, tuple)) else selected,
        "not_selected": list(not_selected) if isinstance(not_selected, (list, tuple)) else not_selected,
        "exclude": list(exclude) if exclude is not None else None,
        "ignore_case": ignore_case,
        "unknown": list(unknown) if unknown is not None else None,
        "categories": {k: dict(v) for k, v in categories.items()} if categories is not None else None,
        "exclude_below": exclude_below,
        "exclusion_justification": exclusion_justification,
        "alpha": alpha,
        "qualifications": list(qualifications) if qualifications is not None else None,
        "applicant_id": applicant_id,
        "situation_k": situation_k,
        "situation_t": situation_t,
        "reference": dict(reference) if reference is not None else None,
    }
    keys = {k: v for k, v in keys.items() if v is not None}
    text_columns = [c for c in (sex, race, ethnicity, decision) if c is not None]
    native = _native.bias_audit(_blanks_as_text(data, text_columns), keys, progress=_progress.native_progress(progress))
    return _finish(native, [], False)


def audit(
    data: Any,
    model: Any,
    *,
    label: str,
    protected: Union[str, Sequence[str]],
    favourable: Any = None,
    test: Any = None,
    seed: int = 0,
    checks: Sequence[str] = DEFAULT_CHECKS,
    search: Union[None, str, Mapping[str, Any]] = None,
    gate: Union[None, str, Iterable[str]] = None,
    features: Optional[Sequence[str]] = None,
    drop: Sequence[str] = (),
    options: Optional[Mapping[str, Mapping[str, Any]]] = None,
    batch_size: int = 16384,
    raise_on_gate: bool = False,
    progress: _progress.Progress = None,
    sex: Optional[str] = None,
    race: Optional[str] = None,
) -> Run:
    """Audit ``model`` on ``data`` for discrimination on the ``protected`` attributes.

    Parameters
    ----------
    data:
        The rows: a pandas (>= 2.2, with pyarrow), Polars or pyarrow table, or any object with
        ``__arrow_c_stream__``, holding the features, the ``label`` column and the protected
        columns. Text columns are categories, whole numbers integers, other numbers continuous,
        as the ``load`` stage types a file's columns.
    model:
        An object with ``predict_proba`` (scikit-learn estimator or Pipeline, XGBoost, LightGBM,
        CatBoost sklearn wrappers), called in process in batches of ``batch_size`` rows with the
        features in the form it was fitted on: a pandas DataFrame with the original column names,
        dtypes and category values when it has ``feature_names_in_``, else a NumPy array of the
        feature columns in order. P(favourable) is its ``classes_`` column of the favourable
        label. Or a path to an ONNX file, or a dict of a ``load_model`` stage's keys (``{"url":
        ...}``, ``{"command": [...]}``), or an :class:`LLM` endpoint.
    label:
        The label column.
    protected:
        The protected attribute column(s).
    favourable:
        The favourable label value as written in the data (default: 1 for 0/1 labels).
    test:
        The rows to measure on: a boolean mask (one value per row), the name of a boolean column
        of ``data`` (then not a feature), or a second table with the same columns. A second table
        whose every row is also a row of ``data`` (``df.drop(train.index)``) marks those rows of
        ``data``: they are measured and the other rows are the training rows (the model's train
        accuracy); any other second table is measured after ``data``, whose rows are then the
        training rows. Default: all rows of ``data``.
    seed:
        The run seed (the same seed gives the same figures).
    checks:
        Which of ``"group_metrics"`` (selection rates, error rates and AUC per group with
        intervals, parity ratios with multiple-comparison control), ``"estimate"`` (the share of
        the input domain whose decision changes with the protected attributes alone, with its
        interval) and ``"check"`` (the measured rows whose decision changes) to run; each is a
        stage named as the check. The estimate draws 100 trials x 1,000 random inputs (100,000;
        ``options={"estimate": {"trials": ..., "samples": ...}}`` to change it). ``"bias_audit"``
        adds the NYC Local Law 144 tables of the model's decisions per ``sex`` and ``race``
        category and their intersection (a stage named ``bias_audit``; its other keys, such as
        ``categories``, go in ``options={"bias_audit": {...}}``). ``"pairwise"`` asks an
        :class:`LLM` to choose between two candidates of each row that differ in a protected
        attribute, each pair in both orders: the position effect, each value's chosen rate and
        its ratio to the reference's with a test (a stage named ``pairwise``; its template and
        other keys in ``options={"pairwise": {"prompt": "pair.j2", "labels": ["A", "B"]}}``;
        docs/llm-audits.md, "Pairwise choices"). ``"ranking"`` lists ``candidates`` (default 4)
        versions of each row, every protected value equally often under different names, in
        every rotation, and asks the :class:`LLM` to pick one: each value's share of the picks
        against parity with its impact ratio and test, and each position's share (a stage named
        ``ranking``; its template in ``options={"ranking": {"prompt": "list.j2"}}``;
        docs/llm-audits.md, "Rankings"). ``options={"check": {"precision": 0.02}}`` checks the
        rows in a random order until the flip rate is known to ±0.02.
    search:
        A search for discriminatory inputs, verified by the host: a method name (``"maft"``,
        ``"aequitas"``, ``"eidig"``, ``"sg"``, ``"random"`` or a plugin's), or a dict with
        ``"plugin"`` and the method's parameters (and ``generate`` stage keys such as
        ``random_seeds`` or ``max_seconds``). Stages ``search`` and ``verify``. Its budget by
        default: 1,000 random seeds (``random_seeds``) and at most 1,000,000 rows asked of the
        model (``max_queries``; 0 for no limit), the method's own parameters at their defaults.
        These are the budgets of the pipeline ``fairpipe init`` writes (the standard audit of
        ``fairpipe_core::preset``).
    gate:
        Condition(s) ``"STAGE.FIELD OP NUMBER"`` checked on the figures, e.g.
        ``"estimate.rate < 0.05"``; the verdict is ``Run.gate``.
    features:
        The feature columns (default: the model's ``feature_names_in_``, else every column but the
        label and ``drop``).
    drop:
        Columns that are not features (ids, row numbers).
    options:
        More keys per stage, as in TOML: ``{"estimate": {"trials": 200}, "group_metrics":
        {"threshold": 0.4}, "data": {"missing": "drop"}}``.
    batch_size:
        Rows per ``predict_proba`` call.
    raise_on_gate:
        Raise ``GateFailed`` when a gate condition fails (the run is its ``run``).
    progress:
        What the audit shows while it works: by default the command line's bars in a terminal, a
        tqdm bar per stage in a notebook (plain text lines without tqdm), nothing elsewhere;
        ``False`` for nothing, ``True`` for text lines where the default shows nothing,
        ``"terminal"``, ``"tqdm"``, ``"text"``, or a callable (``fairpipe_rs._progress``). Unless
        ``False``, an audit asking the model about a million rows or more says so in one line
        first (rows, model calls, each stage's budget).

    Returns
    -------
    Run
        Stages ``data``, ``model``, then the checks and the search, by those names.

    Raises
    ------
    PipelineError
        With ``problems`` when the audit cannot be set up or a stage fails, each said of the
        argument that caused it (``argument `protected`: ...``; ``file`` and ``line`` are
        ``None``); an exception raised by the model is its ``__cause__``.
    """
    if isinstance(protected, str):
        protected = [protected]
    protected = [str(p) for p in protected]
    drop = [str(d) for d in drop]
    unknown = [c for c in checks if c not in CHECKS]
    if isinstance(checks, str) or unknown:
        raise ValueError(f"checks: {checks!r}; give a list of {', '.join(CHECKS)}")
    axes = {k: v for k, v in (("sex", sex), ("race", race)) if v is not None}
    if "bias_audit" in checks and not axes and not dict((options or {}).get("bias_audit") or {}):
        raise ValueError('checks: "bias_audit" needs sex= and/or race= (the columns of sex and race categories)')
    if axes and "bias_audit" not in checks:
        raise ValueError(f'{" and ".join(f"{k}=" for k in axes)} name(s) the columns of the Local Law 144 tables: add "bias_audit" to checks')
    if axes:
        options = {**dict(options or {}), "bias_audit": {**axes, **dict((options or {}).get("bias_audit") or {})}}
    for llm_check, what, template in (("pairwise", "pair", "pair.j2"), ("ranking", "list", "list.j2")):
        if llm_check not in checks:
            continue
        keys = dict((options or {}).get(llm_check) or {})
        if not isinstance(model, LLM) or "prompt" not in keys:
            raise ValueError(f'checks: "{llm_check}" asks an LLM (model=fairpipe_rs.LLM(...)) with its {what} template: '
                             f'options={{"{llm_check}": {{"prompt": "{template}"}}}}')
        # Absolute, as LLM's own template: an in-process audit has no pipeline folder.
        keys["prompt"] = os.path.abspath(os.fspath(keys["prompt"]))
        options = {**dict(options or {}), llm_check: keys}
    test_mask = None
    test_frame = None
    if test is not None:
        if isinstance(test, str):
            mask = _frames.column_values(data, test)
            if mask.dtype != np.bool_:
                raise TypeError(f"test: column {test!r} must be boolean (True: measure the row), not {mask.dtype}")
            test_mask = mask.astype(np.uint8).tobytes()
            drop.append(test)
        elif _frames.is_frame(test):
            test_frame = _frames.prepare(test, "test")
        else:
            mask = np.asarray(test)
            if mask.dtype != np.bool_ or mask.ndim != 1:
                raise TypeError("test: give a boolean mask (one value per row), a boolean column's name, or a second table")
            test_mask = mask.astype(np.uint8).tobytes()
    specs: List[ModelSpec] = []
    model_spec: Optional[ModelSpec] = None
    model_config: Optional[Dict[str, Any]] = None
    if callable(getattr(model, "predict_proba", None)):
        dtypes, originals = _frames.column_facts(data)
        model_spec = ModelSpec(model, dtypes, originals, batch_size)
        specs.append(model_spec)
        if features is None and getattr(model, "feature_names_in_", None) is not None:
            features = [str(n) for n in np.asarray(model.feature_names_in_).tolist()]
    elif isinstance(model, (str, os.PathLike)):
        model_config = {"path": os.fspath(model)}
    elif isinstance(model, Mapping):
        model_config = dict(model)
    else:
        raise TypeError(
            f"model: a {type(model).__name__} has no predict_proba; pass a fitted classifier, an ONNX path or a dict of load_model keys"
        )
    search_keys: Optional[Dict[str, Any]] = None
    if isinstance(search, str):
        search_keys = {"plugin": search}
    elif search is not None:
        search_keys = dict(search)
        params = dict(search_keys.pop("params", None) or {})
        params.update({k: search_keys.pop(k) for k in list(search_keys) if k not in _GENERATE_KEYS})
        if params:
            search_keys["params"] = params
    options_keys = {str(k): dict(v) for k, v in (options or {}).items()}
    if isinstance(model, LLM) and "estimate" in checks:
        # An LLM's prompts cost money and time: an estimate sized for one unless the caller sized it.
        given = options_keys.get("estimate", {})
        if not any(k in given for k in ("trials", "samples", "precision")):
            options_keys["estimate"] = {**_llm.LLM_ESTIMATE, **given}
            options = options_keys
    shown = _progress.native_progress(progress)
    if progress is not False:
        llm_chars = None
        if isinstance(model, LLM):
            try:
                with open(model["llm"]["prompt"], encoding="utf-8") as f:
                    llm_chars = len(f.read())
            except OSError:
                llm_chars = 0  # the engine names the missing template
        llm_block = model["llm"] if isinstance(model, LLM) else {}
        _say_cost(data, test_mask, test_frame, protected, list(checks), options_keys, search_keys, batch_size, llm_chars,
                  llm_block.get("price"), int(llm_block.get("max_tokens", 1)))
    native = _native.audit(
        _frames.prepare(data),
        label=str(label),
        protected=protected,
        favourable=favourable,
        features=None if features is None else [str(f) for f in features],
        drop=drop,
        test_mask=test_mask,
        test_frame=test_frame,
        model_spec=model_spec,
        model_config=model_config,
        seed=int(seed),
        checks=list(checks),
        search=search_keys,
        gate=_gate_list(gate),
        options=options_keys if options is not None else None,
        progress=shown,
    )
    return _finish(native, specs, raise_on_gate)


def _say_cost(
    data: Any,
    test_mask: Optional[bytes],
    test_frame: Any,
    protected: Sequence[str],
    checks: Sequence[str],
    options: Mapping[str, Mapping[str, Any]],
    search: Optional[Mapping[str, Any]],
    batch_size: int,
    llm_prompt_chars: Optional[int] = None,
    llm_price: Optional[Mapping[str, Any]] = None,
    llm_answer_tokens: int = 1,
) -> None:
    """Say what the audit will cost before it starts, when that is much or the model is an LLM
    (``_progress.cost_line``)."""
    rows = _frames.row_count(data) or 0
    if test_mask is not None:
        measured = int(np.frombuffer(test_mask, dtype=np.uint8).sum())
    elif test_frame is not None:
        measured = _frames.row_count(test_frame) or 0
    else:
        measured = rows
    combinations, value_pairs = 1, 0
    for name in protected:
        try:
            values = max(1, len(np.unique(_frames.column_values(data, name).astype(str))))
        except (KeyError, TypeError, ValueError, AttributeError):
            return  # a missing column: the engine says so, in the argument's terms
        combinations *= values
        value_pairs += values * (values - 1) // 2
    try:
        plan = _progress.planned_rows(measured, combinations, checks, options, search, value_pairs)
    except (TypeError, ValueError):
        return  # a budget that is not a number: the engine refuses it at its place in the argument
    line = _progress.cost_line(plan, batch_size, llm_prompt_chars, llm_price, llm_answer_tokens)
    if line is not None:
        print(line, file=sys.stderr, flush=True)


def run(
    pipeline: Union[str, "os.PathLike[str]"],
    *,
    seed: Optional[int] = None,
    out: Union[None, str, "os.PathLike[str]"] = None,
    gate: Union[None, str, Iterable[str]] = None,
    data: Optional[Mapping[str, Any]] = None,
    models: Optional[Mapping[str, Any]] = None,
    batch_size: int = 16384,
    raise_on_gate: bool = False,
    progress: _progress.Progress = None,
) -> Run:
    """Run a fairpipe TOML pipeline, as ``fairpipe run`` does.

    Parameters
    ----------
    pipeline:
        A pipeline file's path, or the TOML text itself (relative paths then resolve against the
        current folder).
    seed:
        Replaces ``[pipeline] seed``.
    out:
        A folder to write the results to (tables as CSV, ``report.html``, ``summary.json``), as
        the command line does; ``None`` keeps everything in memory.
    gate:
        Condition(s) ``"STAGE.FIELD OP NUMBER"`` added to the pipeline's ``[gate]``.
    data:
        ``{"stage": frame}``: the ``load`` stage ``stage`` reads ``frame`` (any table with
        ``__arrow_c_stream__``) instead of its file; its other keys (label, protected, ...) stay.
    models:
        ``{"stage": model}``: the ``load_model`` stage ``stage`` uses ``model`` (an object with
        ``predict_proba``, called as ``audit`` calls it) instead of its file, server or command.
    batch_size:
        Rows per ``predict_proba`` call of the ``models``.
    raise_on_gate:
        Raise ``GateFailed`` when a gate condition fails.
    progress:
        What the run shows while it works, as for ``audit``.

    Returns
    -------
    Run

    Raises
    ------
    PipelineError
        With ``problems`` located as ``file:line:column`` when the pipeline is invalid (every
        problem at once), or when a stage fails.
    """
    text = None
    if isinstance(pipeline, str) and ("\n" in pipeline or pipeline.lstrip().startswith("[")):
        text, file = pipeline, "<string>"
    else:
        file = os.fspath(pipeline)
    data = dict(data or {})
    frames = {str(stage): _frames.prepare(frame, f"data[{stage!r}]") for stage, frame in data.items()}
    facts = _frames.column_facts(next(iter(data.values()))) if len(data) == 1 else ({}, {})
    specs = {str(stage): ModelSpec(model, facts[0], facts[1], batch_size) for stage, model in (models or {}).items()}
    native = _native.run_pipeline(
        file,
        text=text,
        seed=seed,
        out=None if out is None else os.fspath(out),
        gate=_gate_list(gate),
        data=list(frames.items()),
        models=list(specs.items()),
        progress=_progress.native_progress(progress),
    )
    return _finish(native, list(specs.values()), raise_on_gate)
