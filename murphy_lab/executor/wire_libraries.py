"""numpy's and pandas' values on the wire: what `wire_encode` writes for them and `wire_decode` rebuilds.

Loaded by `wire.py` by path and handed to the encoder and the decoder. numpy arrays and scalars of the kinds of
`wire_format.NUMERIC_KINDS` cross as dtype, shape and bytes (never an object array), and are rebuilt with the
receiver's own numpy (an `np.int64` stays one); pandas `Index`, `RangeIndex`, `Series` and `DataFrame` cross as
dtype names, arrays and plain values, rebuilt with the receiver's own pandas; anything else of theirs (a
MultiIndex, a categorical column) stays a program object. Neither library is imported here: the encoder finds them
loaded by the program, the decoder imports them when such a value arrives.
"""

from __future__ import annotations

import re
import sys

fmt = globals()["wire_format"]  # set by wire.py before this file runs
NUMERIC_KINDS, Refused = fmt.NUMERIC_KINDS, fmt.Refused
_type, _len = type, len
_PANDAS_DTYPE = re.compile(r"[A-Za-z0-9_\[\], :/+\-]{1,48}")


def encode(encoder, x, t, d: int) -> bool:
    """Write `x` if it is a numpy or pandas value the format carries; whether it was."""
    np = sys.modules.get("numpy")
    if np is None:
        return False
    if isinstance(x, np.generic) and x.dtype.kind in NUMERIC_KINDS:  # np.float64 is a float: itself here
        encoder.out += b"n"
        encoder.value((x.dtype.str, x.tobytes()), d)
        return True
    if t is np.ndarray and x.dtype.kind in NUMERIC_KINDS:
        encoder.out += b"A"
        encoder.value((x.dtype.str, tuple(x.shape), np.ascontiguousarray(x).tobytes()), d)
        return True
    pd = sys.modules.get("pandas")
    if pd is None or t not in (pd.DataFrame, pd.Series, pd.Index, pd.RangeIndex):
        return False
    try:
        fields = _pandas_fields(pd, np, x)
    except (TypeError, ValueError):  # a shape the format does not carry (MultiIndex, categories): a reference
        return False
    encoder.out += b"p"
    encoder.value(fields, d)
    return True


def _pandas_fields(pd, np, x) -> tuple:
    """A pandas value as (kind, fields): an index as ("range", start, stop, step, name) or ("index", column,
    name); a series as ("series", column, index, name); a frame as ("frame", columns index, [column, ...],
    index). A column is (dtype name, values): a numpy array of a kind of the format, or a list of plain values
    (None where pandas has NA) for object and pandas' own dtypes."""
    t = type(x)
    if t is pd.RangeIndex:
        return ("range", x.start, x.stop, x.step, x.name)
    if t is pd.Index:
        return ("index", _column(pd, np, x), x.name)
    if t is pd.Series:
        return ("series", _column(pd, np, x), _pandas_fields(pd, np, x.index), x.name)
    if type(x.columns) not in (pd.Index, pd.RangeIndex) or type(x.index) not in (pd.Index, pd.RangeIndex):
        raise TypeError("a MultiIndex")
    columns = [_column(pd, np, x.iloc[:, k]) for k in range(x.shape[1])]
    return ("frame", _pandas_fields(pd, np, x.columns), columns, _pandas_fields(pd, np, x.index))


def _column(pd, np, x) -> tuple:
    dtype = x.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in NUMERIC_KINDS:
        return (str(dtype), np.ascontiguousarray(x.to_numpy()))
    if str(dtype) == "category":
        raise TypeError("categories")
    return (str(dtype), [None if v is pd.NA or v is pd.NaT else v for v in x.tolist()])


# --- the receiver's side ---------------------------------------------------------------------------------------
def _numpy_dtype(dtype):
    import numpy as np

    if _type(dtype) is not str or _len(dtype) > 12:
        raise Refused("not a numpy dtype")
    kind = np.dtype(dtype)
    if kind.kind not in NUMERIC_KINDS:
        raise Refused("not a numpy dtype of the format")
    return np, kind


def ndarray(dtype, shape, data):
    """A numpy array built here, with our own numpy, from its bytes (never an object array)."""
    np, kind = _numpy_dtype(dtype)
    if _type(data) is not bytes or not all(_type(n) is int and 0 <= n <= _len(data) + 1 for n in shape):
        raise Refused("not a numpy array")
    return np.frombuffer(data, kind).reshape(shape).copy()


def numpy_scalar(dtype, data):
    """A numpy scalar of its own type (np.int64, np.bool_, np.float32), built here from its bytes."""
    np, kind = _numpy_dtype(dtype)
    if _type(data) is not bytes or _len(data) != kind.itemsize:
        raise Refused("not a numpy scalar")
    return np.frombuffer(data, kind)[0]


def rebuild_pandas(fields: tuple):
    """A pandas Index, RangeIndex, Series or DataFrame, built with our own pandas (`_pandas_fields`)."""
    import pandas as pd

    kind = fields[0] if fields else None
    if kind == "range" and _len(fields) == 5 and all(_type(v) is int for v in fields[1:4]):
        return pd.RangeIndex(*fields[1:4], name=_label(fields[4]))
    if kind == "index" and _len(fields) == 3:
        return pd.Index(_pandas_column(pd, fields[1]), name=_label(fields[2]), copy=False)
    if kind == "series" and _len(fields) == 4 and _type(fields[2]) is tuple:
        index = rebuild_pandas(fields[2])
        return pd.Series(_pandas_column(pd, fields[1]), index=index, name=_label(fields[3]))
    if kind == "frame" and _len(fields) == 4 and _type(fields[2]) is list and _type(fields[3]) is tuple:
        columns, index = rebuild_pandas(fields[1]), rebuild_pandas(fields[3])
        if not isinstance(columns, pd.Index) or _len(columns) != _len(fields[2]):
            raise Refused("not a pandas frame")
        data = [pd.Series(_pandas_column(pd, c), index=index) for c in fields[2]]
        frame = pd.concat(data, axis=1) if data else pd.DataFrame(index=index)
        frame.columns = columns
        return frame
    raise Refused("not a pandas value")


def _pandas_column(pd, column):
    if _type(column) is not tuple or _len(column) != 2 or _type(column[0]) is not str:
        raise Refused("not a pandas column")
    dtype, data = column
    if not _PANDAS_DTYPE.fullmatch(dtype):
        raise Refused("not a pandas dtype")
    if _type(data) is list and dtype == "object":  # the values as they are (pd.array would infer a dtype)
        import numpy as np

        objects = np.empty(_len(data), dtype=object)
        for i, v in enumerate(data):
            objects[i] = v
        return objects
    if _type(data) is list:
        return pd.array(data, dtype=pd.api.types.pandas_dtype(dtype))
    if _type(data).__name__ != "ndarray" or str(data.dtype) != dtype:
        raise Refused("not a pandas column")
    return data


def _label(name):
    if name is not None and _type(name) not in (str, int, float, bool, tuple):
        raise Refused("not a pandas label")
    return name
