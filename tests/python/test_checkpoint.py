# test_checkpoint.py — schedc.checkpoint (docs/recovery.md): a model, an optimizer, the RNG states and
# plain values come back bit for bit; the file is checked against this test's own reading of the
# format (struct and a bit-at-a-time CRC32C, nothing of the library's); the last K are kept; a
# flipped bit, a cut file or a damaged table in the newest is refused naming the file and what
# failed, and the one before it is loaded; none good raises; a CanonicalGrads of other leaves is
# refused; a crashed writer's temporary file is never taken for a checkpoint; train_mlp's C
# checkpoints read with the same reader.
import os
import random
import struct
import subprocess

import numpy as np
import pytest
import torch

import schedc
import schedc.torch as st
from schedc import checkpoint as ck


def ref_crc32c(data):
    """CRC32C one bit at a time (reflected Castagnoli polynomial): independent of the library."""
    c = 0xFFFFFFFF
    for b in bytes(data):
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def parse(path):
    """The format as docs/recovery.md writes it down, read with struct."""
    raw = open(path, "rb").read()
    magic, version, nblobs, step, _ = struct.unpack_from("<8sIIQQ", raw, 0)
    length, crc, _, end = struct.unpack_from("<QII8s", raw, len(raw) - 24)
    assert magic == b"SCCKPT01" and end == b"SCCKEND1" and version == 1 and length == len(raw)
    assert crc == ref_crc32c(raw[:-24])
    blobs = {}
    for i in range(nblobs):
        name, off, n, bcrc, _, _ = struct.unpack_from("<64sQQIIQ", raw, 32 + 96 * i)
        assert off % 64 == 0 and bcrc == ref_crc32c(raw[off:off + n])
        blobs[name.rstrip(b"\0").decode()] = raw[off:off + n]
    return step, blobs


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 2))


def trained():
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    for i in range(2):
        m(torch.randn(3, 5)).pow(2).sum().backward()
        opt.step()
        opt.zero_grad()
    return m, opt


def test_roundtrip_and_format(tmp_path):
    m, opt = trained()
    random.seed(5)
    np.random.seed(6)
    torch.manual_seed(7)
    data = {"next_step": 3, "samples": [1, 2.5, None, "x", (4, 5)], 7: torch.arange(4, dtype=torch.bfloat16)}
    path = ck.save(str(tmp_path), 3, {"model": m, "optimizer": opt, "data": data})
    step, blobs = parse(path)  # independent reading: every CRC, the layout
    assert step == 3 and "index" in blobs and len(blobs) > 8
    want = (random.random(), np.random.rand(3).tolist(), torch.rand(2))
    m2 = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 2))
    opt2 = torch.optim.Adam(m2.parameters(), lr=0.5)
    got = ck.load(str(tmp_path), {"model": m2, "optimizer": opt2, "data": None})
    assert got["step"] == 3 and got["path"] == path
    assert got["data"]["next_step"] == 3 and got["data"]["samples"] == [1, 2.5, None, "x", (4, 5)]
    assert torch.equal(got["data"][7], data[7]) and got["data"][7].dtype == torch.bfloat16
    for a, b in zip(m.state_dict().values(), m2.state_dict().values()):
        assert torch.equal(a, b)
    s1, s2 = opt.state_dict(), opt2.state_dict()
    assert s2["param_groups"][0]["lr"] == 0.01
    for k in s1["state"]:
        for n in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(s1["state"][k][n], s2["state"][k][n])
    # the generators are where save() left them
    assert random.random() == want[0] and np.random.rand(3).tolist() == want[1] and torch.equal(torch.rand(2), want[2])


def test_keep_and_refusals(tmp_path, capsys):
    m, opt = trained()
    d = str(tmp_path)
    for s in (2, 4, 6, 8):
        ck.save(d, s, {"model": m, "data": {"s": s}})
    assert [s for s, _ in ck.checkpoints(d)] == [8, 6, 4]  # the last 3 kept
    p8, p6, p4 = (os.path.join(d, "ckpt-%010d.bin" % s) for s in (8, 6, 4))
    _, blobs = parse(p8)
    raw = bytearray(open(p8, "rb").read())
    off = raw.find(blobs["t2"])
    raw[off + 3] ^= 0x10  # one bit of a tensor
    open(p8, "wb").write(raw)
    got = ck.load(d, {"model": model()})
    err = capsys.readouterr().err
    assert got["data"] == {"s": 6}
    assert "refusing checkpoint %s: tensor 't2' fails its CRC32C" % p8 in err and "using the one before it" in err
    with open(p6, "r+b") as f:
        f.truncate(os.path.getsize(p6) - 100)
    logs = []
    got = ck.load(d, {"model": model()}, log=logs.append)
    assert got["data"] == {"s": 4} and any("%s: truncated or cut" % p6 in x for x in logs)
    raw = bytearray(open(p4, "rb").read())
    raw[40] ^= 1  # a name in the table: only the whole file's CRC covers it
    open(p4, "wb").write(raw)
    with pytest.raises(ck.CheckpointError) as e:
        ck.load(d, {"model": model()})
    assert "no good checkpoint" in str(e.value) and "the file fails its CRC32C" in str(e.value)
    assert ck.load(str(tmp_path / "empty"), {"model": model()}) is None


def test_crashed_writer_and_grads(tmp_path):
    d = str(tmp_path)
    m, _ = trained()
    ck.save(d, 1, {"model": m})
    # a writer killed halfway leaves only its temporary file, which is never taken for a checkpoint
    pid = os.fork()
    if pid == 0:
        try:
            ck.save(d, 2, {"model": m}, halfway=lambda: os._exit(9))
        finally:
            os._exit(1)
    os.waitpid(pid, 0)
    names = os.listdir(d)
    assert "ckpt-0000000002.bin" not in names and any(n.startswith(".ckpt-0000000002.bin.tmp.") for n in names)
    assert ck.load(d, {"model": model()})["step"] == 1
    ck.save(d, 3, {"model": m})  # the next save removes the dead writer's file
    assert not any(".tmp." in n for n in os.listdir(d))
    # a CanonicalGrads of other leaves or order: refused, it would change the weights
    comm = schedc.Comm.threads(1)[0]
    g = st.CanonicalGrads(m.parameters(), 4, comm, exact=True)
    ck.save(d, 4, {"model": m, "grads": g})
    assert ck.load(d, {"model": model(), "grads": g})["step"] == 4
    g8 = st.CanonicalGrads(m.parameters(), 8, comm, exact=True)
    with pytest.raises(ck.CheckpointError) as e:
        ck.load(d, {"grads": g8})
    assert "leaves=4, this job's 8: resuming would change the weights" in str(e.value)
    for leaf in g.my_leaves[:1]:
        m(torch.randn(2, 5)).sum().backward()
        g.add(leaf)
    with pytest.raises(ValueError):  # mid-step: leaves not reduced yet
        ck.save(d, 5, {"grads": g})
    g.close(), g8.close(), comm.close()


def test_reads_train_mlp(tmp_path):
    lib = os.environ.get("SCHEDC_LIBRARY", "")
    build = os.path.dirname(os.path.dirname(lib))
    tm, sc = os.path.join(build, "train_mlp"), os.path.join(build, "schedc")
    if not (os.path.exists(tm) and os.path.exists(sc)):
        pytest.skip("no train_mlp beside %s" % lib)
    d = str(tmp_path)
    subprocess.run([sc, "launch", "-n", "2", "--", tm, "--steps", "10", "--checkpoint", d, "--every", "5"], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    step, blobs = ck.read_container(os.path.join(d, "ckpt-0000000010.bin"))
    assert step == 10 and struct.unpack("<4q", blobs["meta"])[:2] == (10, 2) and len(blobs["params"]) == 161 * 4
    assert parse(os.path.join(d, "ckpt-0000000010.bin"))[0] == 10
