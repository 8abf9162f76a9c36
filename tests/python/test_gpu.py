# test_gpu.py — the DDP hook and CanonicalGrads with CUDA tensors, a process per GPU (rank r on
# GPU r; the cuda backend refuses two ranks on one GPU): every bucket's result against trees.py's
# evaluation of the plan's trees over the buckets every rank handed in, as test_torch.py does
# on the CPU. Run by ctest's python.gpu, which prints [SKIP] unless torch sees a CUDA device.
import pytest
import torch

from test_torch import L, check_canonical, check_hook, results, start_job, wait_job

NDEV = torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.parametrize("n", [n for n in (1, 2, 4) if n <= NDEV])
def test_cuda_hook_and_canonical_grads_equal_plan_trees(tmp_path, n):
    wait_job(start_job(n, ["train", str(L)], tmp_path, {"SCHEDC_TEST_DEVICE": "cuda"}))
    res = results(tmp_path, n)
    assert all(x["backend"] == "shm" for x in res)  # the host communicator; buckets via its cuda one
    check_hook(res, n)
    check_canonical(res, n)
