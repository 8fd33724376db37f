"""A restricted unpickler for the pickled numpy datasets (MNIST's ``mnist.pkl.gz``, CIFAR-10's python batches).

``pickle.load`` runs whatever callable a file names, so a downloaded pickle is a program. This unpickler admits
only the callables numpy uses to rebuild arrays and dtypes, and plain containers; any other global (``os.system``,
``builtins.eval``, a user class) raises :class:`UnsafePickle` before anything is called.
"""

from __future__ import annotations

import codecs
import pickle
from typing import IO
from typing import Any

__all__ = ["UnsafePickle", "load_restricted"]


class UnsafePickle(pickle.UnpicklingError, ValueError):
    """The pickle names a global outside the allow-list."""


def _numpy_globals() -> dict[tuple[str, str], Any]:
    import numpy as np

    try:  # numpy >= 2 (and the forward-compatible shim in numpy 1.26)
        from numpy._core import multiarray
        from numpy._core import numeric
    except ImportError:  # pragma: no cover - numpy < 1.26
        from numpy.core import multiarray
        from numpy.core import numeric

    allowed: dict[tuple[str, str], Any] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        # Python 3 pickles at protocol <= 2 store bytes as codecs.encode(latin-1 text).
        ("_codecs", "encode"): codecs.encode,
    }
    for mod in (
        "numpy.core.multiarray",
        "numpy._core.multiarray",
    ):  # numpy 1 and numpy 2 spell it differently
        allowed[(mod, "_reconstruct")] = multiarray._reconstruct
        allowed[(mod, "scalar")] = multiarray.scalar  # a numpy scalar: dtype + raw bytes
        allowed[(mod.replace("multiarray", "numeric"), "_frombuffer")] = numeric._frombuffer  # protocol 5
    for t in (tuple, list, dict, set, frozenset, bytes, bytearray):
        allowed[("builtins", t.__name__)] = t
        allowed[("__builtin__", t.__name__)] = t  # Python 2 pickles
    return allowed


class _ArrayUnpickler(pickle.Unpickler):
    def __init__(self, file: IO[bytes], allowed: dict[tuple[str, str], Any]) -> None:
        # latin-1 decodes Python 2 ``str`` byte-for-byte, which is what numpy's array state needs
        super().__init__(file, encoding="latin1")
        self._allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise UnsafePickle(
                f"refusing to unpickle {module}.{name}: only numpy arrays, dtypes and plain containers are "
                "allowed in a data file"
            ) from None


def load_restricted(file: IO[bytes]) -> Any:
    """Unpickle ``file`` admitting only numpy arrays/dtypes/scalars and tuple/list/dict/set/bytes."""
    return _ArrayUnpickler(file, _numpy_globals()).load()
