"""The same rows as a pandas, a Polars and a pyarrow frame (each read through the Arrow PyCapsule
interface) give the same audit, figure for figure."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest

import fairpipe_rs
from conftest import SMALL_ESTIMATE, without_timings


def _audit(frame, model, **kw):
    return without_timings(fairpipe_rs.audit(frame, model, seed=7, options=SMALL_ESTIMATE, **kw).summary["stages"])


def test_pandas_polars_and_pyarrow_inputs_give_the_same_audit(sklearn_pipeline, adult_frames):
    _, frame = adult_frames
    kw = dict(label="Y", favourable=">50K", protected=["sex", "race"])
    as_polars = pl.from_pandas(frame)
    as_arrow = pa.Table.from_pandas(frame, preserve_index=False)
    assert as_polars.schema["sex"] == pl.String
    sex = as_arrow.schema.field("sex").type
    assert pa.types.is_string(sex) or pa.types.is_large_string(sex)
    ours = _audit(frame, sklearn_pipeline, **kw)
    assert _audit(as_polars, sklearn_pipeline, **kw) == ours
    assert _audit(as_arrow, sklearn_pipeline, **kw) == ours
    # A record-batch reader (a stream, read once) as well.
    assert _audit(pa.RecordBatchReader.from_batches(as_arrow.schema, as_arrow.to_batches(max_chunksize=700)), sklearn_pipeline, **kw) == ours


def test_integer_frames_from_each_library_give_the_same_audit(xgb_model, census_frames):
    _, frame = census_frames
    kw = dict(label="income", protected=["gender", "race"])
    ours = _audit(frame, xgb_model, **kw)
    assert _audit(pl.from_pandas(frame), xgb_model, **kw) == ours
    assert _audit(pa.Table.from_pandas(frame, preserve_index=False), xgb_model, **kw) == ours


def test_an_object_without_the_arrow_interface_is_refused(xgb_model, census_frames):
    _, frame = census_frames
    with pytest.raises((TypeError, fairpipe_rs.PipelineError), match="__arrow_c_stream__"):
        fairpipe_rs.audit(frame.to_dict("list"), xgb_model, label="income", protected=["gender"])
