"""What hiar_allreduce needs to know of an array: pointer, count, dtype, memory, stream.

Arrays are read through the first protocol they speak, in this order:
a torch.Tensor directly (its dtype, device and the current CUDA stream of
that device), __cuda_array_interface__ (CuPy, Numba), __array_interface__
(NumPy), then DLPack (__dlpack__ and __dlpack_device__).  No framework is
imported here: torch is looked up in sys.modules, where it is once the
caller made a tensor.
"""
import ctypes
import sys
from collections import namedtuple

from ._lib import Dtype

# ptr: int; count: elements; shape: a tuple; dtype: Dtype; cuda: True for
# device memory; stream: a cudaStream_t as int (0: the legacy default) or
# None (host); keep: what must stay alive while hiar reads the buffer.
Buffer = namedtuple("Buffer", "ptr count shape dtype cuda stream readonly keep")

# NumPy type strings (byte order stripped) of the dtypes hiar has; NumPy has no bfloat16.
_TYPESTR = {"i4": Dtype.INT32, "i8": Dtype.INT64, "f2": Dtype.FLOAT16, "f4": Dtype.FLOAT32,
            "f8": Dtype.FLOAT64, "u1": Dtype.UINT8, "i1": Dtype.INT8}
_TORCH = {"int32": Dtype.INT32, "int64": Dtype.INT64, "float16": Dtype.FLOAT16, "bfloat16": Dtype.BFLOAT16,
          "float32": Dtype.FLOAT32, "float64": Dtype.FLOAT64, "uint8": Dtype.UINT8, "int8": Dtype.INT8}
# DLPack (type code, bits): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4.
_DLPACK = {(0, 32): Dtype.INT32, (0, 64): Dtype.INT64, (2, 16): Dtype.FLOAT16, (4, 16): Dtype.BFLOAT16,
           (2, 32): Dtype.FLOAT32, (2, 64): Dtype.FLOAT64, (1, 8): Dtype.UINT8, (0, 8): Dtype.INT8}
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3
# __cuda_array_interface__ stream values that are not pointers: 1 legacy default, 2 per-thread default.
_CAI_LEGACY, _CAI_PER_THREAD = 1, 2
_PER_THREAD_STREAM = 2  # cudaStreamPerThread


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _contiguous(shape, strides, itemsize):
    """C order with no gaps; dimensions of length 1 may have any stride."""
    want = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != want:
            return False
        want *= n
    return True


def _refuse_strided(name, shape, strides, itemsize):
    if strides is not None and _prod(shape) > 1 and not _contiguous(shape, strides, itemsize):
        raise ValueError("hiar: %s is not contiguous (shape %s, strides %s in bytes); hiar reduces one "
                         "contiguous block: pass a contiguous copy (x.contiguous(), numpy.ascontiguousarray)"
                         % (name, tuple(shape), tuple(strides)))


def _unsupported(name, what):
    return TypeError("hiar: %s has dtype %s; hiar reduces int8, uint8, int32, int64, float16, bfloat16, "
                     "float32 and float64" % (name, what))


def _torch_buffer(name, t, stream):
    dtype = _TORCH.get(str(t.dtype).replace("torch.", ""))
    if dtype is None:
        raise _unsupported(name, t.dtype)
    if not t.is_contiguous():
        _refuse_strided(name, t.shape, [s * t.element_size() for s in t.stride()], t.element_size())
    cuda = t.device.type == "cuda"
    if cuda and stream is None:
        stream = sys.modules["torch"].cuda.current_stream(t.device).cuda_stream
    elif t.device.type != "cpu" and not cuda:
        raise TypeError("hiar: %s is on %s; hiar takes CPU and CUDA tensors" % (name, t.device))
    return Buffer(t.data_ptr(), t.numel(), tuple(t.shape), dtype, cuda, stream if cuda else None, False, t)


def _interface_buffer(name, obj, iface, cuda, stream):
    typestr = iface["typestr"]
    dtype = _TYPESTR.get(typestr[1:])
    if dtype is None or typestr[0] == ">":
        raise _unsupported(name, typestr)
    shape = tuple(iface["shape"])
    _refuse_strided(name, shape, iface.get("strides"), int(typestr[2:]))
    if iface.get("mask") is not None:
        raise TypeError("hiar: %s is a masked array; hiar takes plain arrays" % name)
    ptr, readonly = iface["data"]
    if cuda and stream is None:
        s = iface.get("stream")
        stream = {None: 0, _CAI_LEGACY: 0, _CAI_PER_THREAD: _PER_THREAD_STREAM}.get(s, s)
    return Buffer(ptr or 0, _prod(shape), shape, dtype, cuda, stream if cuda else None, bool(readonly), obj)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dlpack_buffer(name, obj, stream):
    """Borrows the tensor: the capsule stays unconsumed, so its producer frees it when it dies."""
    device_type, _ = obj.__dlpack_device__()
    cuda = device_type == _DL_CUDA
    if device_type not in (_DL_CPU, _DL_CUDA, _DL_CUDA_HOST):
        raise TypeError("hiar: %s is in DLPack device type %d; hiar takes CPU and CUDA memory" % (name, device_type))
    if cuda and stream is None:
        stream = 0
    # The producer orders its work before `stream` (DLPack's stream argument; 1 is the legacy default).
    capsule = obj.__dlpack__(stream=stream or _CAI_LEGACY) if cuda else obj.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    dtype = _DLPACK.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    if dtype is None:
        raise _unsupported(name, "DLPack (code %d, %d bits, %d lanes)" % (t.dtype.code, t.dtype.bits, t.dtype.lanes))
    shape = [t.shape[i] for i in range(t.ndim)]
    itemsize = t.dtype.bits // 8
    if t.strides:
        _refuse_strided(name, shape, [t.strides[i] * itemsize for i in range(t.ndim)], itemsize)
    ptr = (t.data or 0) + t.byte_offset
    return Buffer(ptr, _prod(shape), tuple(shape), dtype, cuda, stream if cuda else None, False, (obj, capsule))


def describe(name, obj, stream=None):
    """A Buffer for obj, or TypeError/ValueError saying what is wrong with it."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _torch_buffer(name, obj, stream)
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is not None:
        return _interface_buffer(name, obj, iface, True, stream)
    iface = getattr(obj, "__array_interface__", None)
    if iface is not None:
        return _interface_buffer(name, obj, iface, False, stream)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _dlpack_buffer(name, obj, stream)
    raise TypeError("hiar: %s is a %s; expected a torch tensor or an array with DLPack, "
                    "__cuda_array_interface__ or __array_interface__ (NumPy, CuPy)" % (name, type(obj).__name__))
