"""Limit the BLAS thread pool while the bake computes (no bpy here).

The solver's systems are small or banded: several BLAS threads gain little on them, and on a
busy machine (Blender's own threads, a render, other bakes) OpenBLAS threads that spin while
waiting for a core slowed bakes down 4-60x. Environment variables such as OPENBLAS_NUM_THREADS
only count before numpy loads, which inside Blender is long before the add-on runs, so the
thread count is set through the libraries' own C functions, found with ctypes among the
libraries already loaded into the process: numpy's and scipy's bundled OpenBLAS
(``openblas_set_num_threads64_``, ``scipy_openblas_set_num_threads``), a system OpenBLAS
(Debian's blender: ``openblas_set_num_threads``) and MKL. Each library's count is restored
afterwards. A BLAS without such a function (reference BLAS, Accelerate) is left alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import sys

BAKE_THREADS = 1  # BLAS threads while the bake computes

# (set, get) function names; the get must return the count the set changed.
_SYMBOLS = [
    (f"{prefix}openblas_set_num_threads{suffix}", f"{prefix}openblas_get_num_threads{suffix}")
    for prefix in ("", "scipy_")
    for suffix in ("", "64_", "_64_")
] + [("MKL_Set_Num_Threads", "MKL_Get_Max_Threads")]

_cache: dict = {}  # tuple of library paths -> controls


def _is_blas(path: str) -> bool:
    return any(k in os.path.basename(path).lower() for k in ("blas", "mkl"))


def _loaded_libraries() -> list[str]:
    """Paths of the loaded shared libraries that may hold a BLAS (never loads one)."""
    try:
        with open("/proc/self/maps") as maps:  # Linux: exactly what is loaded
            paths = [line.rsplit(None, 1)[-1] for line in maps if "/" in line]
        return list(dict.fromkeys(os.path.realpath(p) for p in paths if _is_blas(p)))
    except OSError:
        pass
    paths = []
    for name in ("numpy", "scipy"):  # macOS / Windows: the bundled libraries of imported wheels
        module = sys.modules.get(name)
        root = os.path.dirname(getattr(module, "__file__", "") or "")
        if root:
            libs = os.path.join(root, "..", f"{name}.libs", "*"), os.path.join(root, ".dylibs", "*")
            paths += [os.path.realpath(p) for pattern in libs for p in glob.glob(pattern) if _is_blas(p)]
    return list(dict.fromkeys(paths))


def controls() -> list[tuple]:
    """[(name, get, set)] one per distinct BLAS thread pool found in the process."""
    paths = tuple(_loaded_libraries())  # scipy may have been imported since the last call
    if paths in _cache:
        return _cache[paths]
    found, seen = [], set()
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _SYMBOLS:
            setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if setter is None or getter is None:
                continue
            address = ctypes.cast(setter, ctypes.c_void_p).value
            if address not in seen:  # else the same library reached through another one
                seen.add(address)
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                found.append((f"{os.path.basename(path)}:{set_name}", getter, setter))
            break  # one pair per library (OpenBLAS exports aliases of the same function)
    _cache[paths] = found
    return found


def current() -> list[int]:
    """The thread count of each pool of :func:`controls`."""
    return [get() for _, get, _ in controls()]


def set_threads(counts) -> None:
    for (_, _, setter), n in zip(controls(), counts, strict=True):
        setter(int(n))


@contextlib.contextmanager
def limited(n: int | None = BAKE_THREADS):
    """Run the block with every BLAS pool at n threads (None: unchanged), then restore each
    pool's own count."""
    if n is None:
        yield
        return
    try:
        pools = [(setter, get()) for _, get, setter in controls()]
        for setter, _ in pools:
            setter(int(n))
    except Exception:  # a BLAS we cannot drive: run as it is
        pools = []
    try:
        yield
    finally:
        for setter, before in pools:
            setter(before)
