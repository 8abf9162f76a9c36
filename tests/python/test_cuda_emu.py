# test_cuda_emu.py — device buffers in a torch.distributed job: two processes, each driving its
# own (emulated) GPU, hand __cuda_array_interface__ buffers to Comm; the binding routes them to a
# cuda communicator over the shm one (schedc_comm_init_cuda_over, on the buffer's stream) — or, on
# two pretend hosts without MPI, over the net one (the NCCL id over it, SCHEDC_CUDA_NET=nccl). The
# emulated device of tests/emu (SCHEDC_CUDA_PLUGIN, set by ctest) runs the generated kernels on
# the host, so its "device memory" may be host memory. Results bit for bit against trees.py's
# evaluation of Plan.order(). CUDA tensors themselves need a GPU torch: tests/python/test_gpu.py.
import os

import numpy as np
import pytest

import schedc
from test_torch import results, start_job, wait_job
from trees import reduce_by_plan

N = 2


def _net_built():
    try:
        schedc.uid_net()
        return True
    except schedc.Error:
        return False


# one host: the shm host communicator; two pretend hosts without MPI: net's, the NCCL id over it
# and the payloads between the hosts through (emulated) NCCL
@pytest.fixture(scope="module", params=["one host", "two hosts"])
def device_job(request, tmp_path_factory):
    assert os.environ.get("SCHEDC_CUDA_PLUGIN"), "ctest sets SCHEDC_CUDA_PLUGIN to tests/emu's libschedc_emu.so"
    two = request.param == "two hosts"
    if two and not _net_built():
        pytest.skip("the library has no net backend (libucx-dev)")
    d = tmp_path_factory.mktemp("device")
    wait_job(start_job(N, ["device"], d, {"SCHEDC_TEST_HOSTS": "2", "SCHEDC_CUDA_NET": "nccl"} if two else None))
    res = results(d, N)
    assert all(x["backend"] == ("net" if two else "shm") for x in res)
    return res


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int32", "int64"])
def test_device_allreduce_equals_plan_trees(device_job, dt):
    ring = schedc.Plan("ring", ranks=N)
    ins = [x["ins"][dt] for x in device_job]
    for r in range(N):
        if dt == "float16":  # accumulated in f32, rounded once
            want = reduce_by_plan(ring, r, [a.astype(np.float32) for a in ins]).astype(np.float16)
        else:
            want = reduce_by_plan(ring, r, ins, acc=None)
        assert want.tobytes() == device_job[r]["outs"][dt].tobytes(), (dt, r)


def test_device_avg_reduce_scatter_allgather_broadcast(device_job):
    can = schedc.canonical_plan(N)
    ins = [x["ins"]["avg"] for x in device_job]
    rs = [x["ins"]["rs"] for x in device_job]
    for r in range(N):
        want = reduce_by_plan(can, r, ins) / np.float32(N)
        assert want.tobytes() == device_job[r]["outs"]["avg"].tobytes()
        want = reduce_by_plan(schedc.canonical_plan(N, "reduce_scatter"), r, rs)[r * 40:(r + 1) * 40]
        assert want.tobytes() == device_job[r]["outs"]["rs"].tobytes()
        assert (device_job[r]["outs"]["allgather"] == np.repeat(np.arange(1, N + 1, dtype=np.int64), 40)).all()
        assert (device_job[r]["outs"]["broadcast"] == float(N - 1)).all()
        assert device_job[r]["host_after_device"] == [N * (N + 1) / 2.0] * 5
        assert device_job[r]["mismatch"] == "SCHEDC_EMISMATCH"


def test_device_buffer_errors():
    class Cai:
        def __init__(self, **kw):
            self.__cuda_array_interface__ = dict({"data": (4096, False), "shape": (4,), "typestr": "<f4",
                                                  "version": 3}, **kw)
    c = schedc.Comm.threads(1)[0]
    with pytest.raises(TypeError, match="typestr|type '<c8' is not supported"):
        c.allreduce(Cai(typestr="<c8"))
    with pytest.raises(ValueError, match="read-only"):
        c.allreduce(Cai(data=(4096, True)))
    with pytest.raises(ValueError, match="not contiguous"):
        c.allreduce(Cai(shape=(2, 2), strides=(4, 8)))
    with pytest.raises(ValueError, match="set comm.cuda_device"):
        c.allreduce(Cai())
    c.cuda_device = 0
    with pytest.raises(TypeError, match="need a communicator from schedc.torch.init_comm"):
        c.allreduce(Cai())
    with pytest.raises(ValueError, match="both be host memory or both device memory"):
        c.reduce_scatter(Cai(), np.zeros(4, np.float32))
    c.close()


class _Iface:
    """An object whose __cuda_array_interface__ is whatever the test says (a valid one, changed by kw:
    a value of DROP removes the key)."""
    DROP = object()

    def __init__(self, cai=None, **kw):
        self.a = np.ones(4, np.float32)
        d = {"data": (self.a.ctypes.data, False), "shape": (4,), "typestr": "<f4", "version": 3}
        d.update(kw)
        self.__cuda_array_interface__ = cai if cai is not None else {k: v for k, v in d.items() if v is not _Iface.DROP}
        self.device = type("Device", (), {"id": 0})()


@pytest.mark.parametrize("obj, exc, msg", [
    (_Iface(cai=5), TypeError, "__cuda_array_interface__ must be a dict, not int"),
    (_Iface(data=_Iface.DROP), ValueError, "has no 'data'"),
    (_Iface(shape=_Iface.DROP), ValueError, "has no 'shape'"),
    (_Iface(typestr=_Iface.DROP), ValueError, "has no 'typestr'"),
    (_Iface(version=_Iface.DROP), ValueError, "has no 'version'"),
    (_Iface(version="3"), TypeError, "'version' must be an integer"),
    (_Iface(data=None), TypeError, "'data' must be a \\(pointer, read_only\\) pair, not None"),
    (_Iface(data=(None, False)), ValueError, "data pointer is None for a buffer of 4 elements"),
    (_Iface(data=(0, False)), ValueError, "data pointer is 0 for a buffer of 4 elements"),
    (_Iface(data=("0x10", False)), TypeError, "data pointer must be an integer address, not '0x10'"),
    (_Iface(data=(-8, False)), TypeError, "data pointer must be an integer address, not -8"),
    (_Iface(shape=(-4,)), ValueError, "'shape' must be a tuple of non-negative integers, not \\(-4,\\)"),
    (_Iface(shape=(-2, -2)), ValueError, "non-negative integers"),
    (_Iface(shape=(4.7,)), ValueError, "non-negative integers, not \\(4.7,\\)"),
    (_Iface(shape=4), ValueError, "non-negative integers, not 4"),
    (_Iface(shape=(2 ** 70,)), ValueError, "larger than any device memory"),
    (_Iface(strides=(4, 4)), ValueError, "'strides' must be None or 1 integers"),
    (_Iface(shape=(1,), strides=(4, 4, 4)), ValueError, "'strides' must be None or 1 integers"),
    (_Iface(strides=4), ValueError, "'strides' must be None or 1 integers"),
    (_Iface(typestr=">f4"), TypeError, "type '>f4' is not supported"),
    (_Iface(typestr=np.dtype("float32")), TypeError, "is not supported: <f4"),
    (_Iface(stream="s"), TypeError, "'stream' must be None or a CUstream handle"),
    (_Iface(stream=0), TypeError, "0 is not allowed"),
])
def test_device_interface_checked(obj, exc, msg):
    """Each malformed __cuda_array_interface__ field raises naming it, before anything reaches C:
    these used to be raw KeyError/TypeError from inside the binding, and a negative pointer, a
    negative shape or a 2**70 one went to C as a huge size_t or a wild pointer (a segfault)."""
    c = schedc.Comm.threads(1)[0]
    c.cuda_device = 0
    try:
        with pytest.raises(exc, match=msg):
            c.allreduce(obj)
    finally:
        c.close()


def test_device_id_checked():
    obj = _Iface()
    obj.device = type("Device", (), {"id": "zero"})()
    c = schedc.Comm.threads(1)[0]
    with pytest.raises(TypeError, match="device.id must be a CUDA device number, not 'zero'"):
        c.allreduce(obj)
    c.close()
