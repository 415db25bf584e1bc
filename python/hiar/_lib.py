"""Finding and loading libhiar, the prototypes of its C API, and its enums.

The enums repeat src/hiar.h; tests/python/hiar_tests/test_api.py parses the
header and fails when they drift apart.
"""
import ctypes
import enum
import os
import subprocess
import sys

# HIAR_VERSION_CODE of the hiar.h this package was written against.
VERSION_CODE = 100
_NAME = "libhiar.so"
# dlopen's own search (LD_LIBRARY_PATH, the ldconfig cache): the soname first.
_SONAMES = ("libhiar.so.0", _NAME)


class Result(enum.IntEnum):
    SUCCESS = 0
    INVALID_ARGUMENT = 1
    UNSUPPORTED = 2
    NO_MEMORY = 3
    CUDA_ERROR = 4
    MPI_ERROR = 5
    SYSTEM_ERROR = 6
    TIMEOUT = 7
    COMM_FAILED = 8
    INVALID_USAGE = 9
    INTERNAL_ERROR = 10


class Dtype(enum.IntEnum):
    INT32 = 0
    INT64 = 1
    FLOAT16 = 2
    BFLOAT16 = 3
    FLOAT32 = 4
    FLOAT64 = 5
    UINT8 = 6
    INT8 = 7


class Op(enum.IntEnum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4


class Config(ctypes.Structure):
    """hiar_config_t; Config.make() is HIAR_CONFIG_INIT."""

    _fields_ = [("size", ctypes.c_size_t), ("version", ctypes.c_uint), ("settings", ctypes.c_char_p)]

    @classmethod
    def make(cls, settings=None):
        return cls(ctypes.sizeof(cls), VERSION_CODE, settings)


LOG_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)

_c = ctypes
_COMM = _c.c_void_p
_INT_P = _c.POINTER(_c.c_int)
# name: (restype, argtypes); every hiar_result_t call returns c_int.
_PROTOTYPES = {
    "hiar_strerror": (_c.c_char_p, [_c.c_int]),
    "hiar_last_error": (_c.c_char_p, []),
    "hiar_version": (_c.c_char_p, []),
    "hiar_log_set_handler": (_c.c_int, [LOG_HANDLER, _c.c_void_p]),
    "hiar_comm_create_f": (_c.c_int, [_c.c_int, _c.POINTER(Config), _c.POINTER(_COMM)]),
    "hiar_comm_destroy": (_c.c_int, [_COMM]),
    "hiar_comm_abort": (_c.c_int, [_COMM]),
    "hiar_comm_get_async_error": (_c.c_int, [_COMM, _INT_P]),
    "hiar_comm_describe": (_c.c_int, [_COMM, _c.c_void_p]),
    "hiar_comm_group": (_c.c_int, [_COMM, _c.c_int, _INT_P, _INT_P, _INT_P, _INT_P]),
    "hiar_comm_rank": (_c.c_int, [_COMM, _INT_P]),
    "hiar_comm_size": (_c.c_int, [_COMM, _INT_P]),
    "hiar_allreduce": (_c.c_int, [_c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _COMM, _c.c_void_p]),
    "hiar_allreduce_rmsnorm": (_c.c_int, [_c.c_void_p, _c.c_void_p, _c.c_void_p, _c.c_void_p, _c.c_size_t,
                                          _c.c_size_t, _c.c_int, _c.c_int, _c.c_float, _c.c_uint, _COMM,
                                          _c.c_void_p]),
}
# hiar_allreduce_rmsnorm's flags.
RMSNORM_GEMMA = 1


def _pkg_config_libdir():
    """The libdir of an installed hiar.pc (make install's prefix), or None."""
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "hiar"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def candidates():
    """Where libhiar is looked for, in order.

    HIAR_LIBRARY, when set, is the only place: the library file itself, or a
    build tree (DIR/.libs), an install prefix (DIR/lib) or a libdir (DIR).
    Otherwise: pkg-config's libdir of hiar, this Python's prefix and
    /usr/local (make install's default prefix), then dlopen's own search.
    """
    env = os.environ.get("HIAR_LIBRARY")
    if env:
        if os.path.isdir(env):
            return [os.path.join(env, sub, _NAME) for sub in (".libs", "lib", "")]
        return [env]
    dirs = [_pkg_config_libdir(), os.path.join(sys.prefix, "lib"), "/usr/local/lib"]
    return [os.path.join(d, _NAME) for d in dirs if d] + list(_SONAMES)


def _load():
    tried = []
    for path in candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            # RTLD_GLOBAL: Open MPI's plugins resolve libmpi's symbols globally.
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        return lib
    raise OSError("hiar: cannot load libhiar; tried: %s. Set HIAR_LIBRARY to the library, its build tree or "
                  "its install prefix" % "; ".join(tried))


_lib = None


def lib():
    """libhiar, loaded on first use (so that `import hiar` needs no library)."""
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


class Error(Exception):
    """A hiar call failed: code (a Result), the code's text, and hiar_last_error()."""

    def __init__(self, call, code):
        self.call = call
        self.code = Result(code)
        self.text = lib().hiar_strerror(code).decode()
        self.detail = lib().hiar_last_error().decode()
        # The detail names the call that failed; hiar_strerror the code.
        super().__init__("%s: %s" % (self.text, self.detail or call))


def check(call, rc):
    """Raises Error unless rc is HIAR_SUCCESS."""
    if rc != Result.SUCCESS:
        raise Error(call, rc)
