"""The device a model goes to, the GPU memory cap and how torch's CPU threads wait, decided
without any GPU: the choice logic, the refusal of a model whose weights leave no room, the share torch's
allocator is held to, the OpenMP wait policy and that it reaches the runtime torch loads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

import pytest

from core import tuning
from core.errors import HSDError, HSDWarning
from core.hardware import (MemoryCap, apply_cap, calm_cpu_threads, choose_device, parse_memory, plan_cap,
                           weights_bytes)

GIB = 1 << 30


def test_amounts_of_memory_are_read_as_people_write_them():
    assert parse_memory("12") == MemoryCap(bytes=12 * GIB)
    assert parse_memory("12GiB") == MemoryCap(bytes=12 * GIB)
    assert parse_memory("12 GB") == MemoryCap(bytes=12 * 10 ** 9)
    assert parse_memory("800MiB") == MemoryCap(bytes=800 << 20)
    assert parse_memory("80%").on(10 * GIB) == 8 * GIB
    for bad, said in (("12XB", "unknown unit"), ("lots", "not an amount"), ("0%", "above 0%"), ("1MiB", "64 MiB"),
                      ("150%", "at most 100%")):
        with pytest.raises(ValueError, match=said):
            parse_memory(bad)


def test_the_device_choice_prefers_cuda_then_apple_silicon_then_the_cpu():
    assert choose_device(None, cuda=True, mps=True) == "cuda"
    assert choose_device(None, cuda=False, mps=True) == "mps"
    assert choose_device(None, cuda=False, mps=True, family_on_mps=False) == "cpu"
    assert choose_device(None, cuda=False, mps=False) == "cpu"
    assert choose_device("cpu", cuda=True, mps=True) == "cpu"
    assert choose_device("mps", cuda=True, mps=False) == "mps"  # asked for: device_present says if it is missing


def test_the_cap_holds_the_allocator_or_refuses_a_model_that_cannot_fit():
    cap = MemoryCap(bytes=8 * GIB)
    assert plan_cap(cap, "cuda", 32 * GIB, 4 * GIB) == pytest.approx(0.25)
    assert plan_cap(MemoryCap(percent=50), "mps", 16 * GIB, 2 * GIB) == pytest.approx(0.5)
    assert plan_cap(cap, "cuda", 8 * GIB, 1 * GIB) is None  # the whole GPU: nothing to hold
    with pytest.raises(HSDError, match=r"weights alone take about 7.5 GiB of the 8.0 GiB allowed.*at least 8.3 GiB"):
        plan_cap(cap, "cuda", 80 * GIB, int(7.5 * GIB))
    with pytest.raises(HSDError, match="does not say how much memory"):
        plan_cap(cap, "cuda", None, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert plan_cap(cap, "cpu", None, 100 * GIB) is None
    assert any(issubclass(w.category, HSDWarning) and "nothing to hold" in str(w.message) for w in caught)


def test_the_weights_are_sized_in_the_dtype_they_load_in(tmp_path):
    (tmp_path / "model-00001.safetensors").write_bytes(b"\0" * 3000)
    (tmp_path / "model-00002.safetensors").write_bytes(b"\0" * 1000)
    assert weights_bytes(tmp_path, {"torch_dtype": "bfloat16"}, 4) == 8000   # bf16 saved, fp32 loaded
    assert weights_bytes(tmp_path, {"dtype": "float32"}, 2) == 2000
    assert weights_bytes(tmp_path / "none", {}, 2) is None


def test_a_tiny_model_under_a_cap_too_small_is_refused_before_it_loads(tiny_target_dir, monkeypatch):
    """The loader's path on a (pretended) 8 GiB CUDA device: the cap is checked against the real
    folder's weights before any weight is read, and the allocator's share is set when it fits."""
    import torch

    from core import hardware
    from core.targets import loader

    folder = tiny_target_dir("hunyuan_vl")
    size = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    monkeypatch.setattr(hardware, "device_memory", lambda device: 8 * GIB)
    held = []
    monkeypatch.setattr(hardware, "hold_memory", lambda device, fraction: held.append((device.type, fraction)))
    with pytest.raises(HSDError, match="leaving no room to decode"):
        loader.load_target(str(folder), device="cuda", dtype="fp32", max_gpu_memory=MemoryCap(bytes=size))
    assert not held
    apply_cap(MemoryCap(bytes=GIB), torch.device("cuda"), torch.float32, folder, {})
    assert held == [("cuda", pytest.approx(1 / 8))]


def test_a_cap_on_the_cpu_says_it_holds_nothing_and_the_model_loads(tiny_target_dir):
    from core.targets import loader

    with pytest.warns(HSDWarning, match="nothing to hold"):
        target = loader.load_target(str(tiny_target_dir("hunyuan_vl")), device="cpu",
                                    max_gpu_memory=MemoryCap(bytes=GIB))
    assert target.device.type == "cpu"


def test_the_command_line_and_the_engine_carry_the_cap():
    import argparse

    from core.api import engine_config
    from core.commands.convert import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["convert", "x.pdf", "-o", "x.md", "--max-gpu-memory", "6GiB"])
    assert engine_config(args).max_gpu_memory == MemoryCap(bytes=6 * GIB)
    assert engine_config(parser.parse_args(["convert", "x.pdf", "-o", "x.md"])).max_gpu_memory is None


def test_torch_threads_sleep_rather_than_spin_unless_the_user_chose():
    environ = {}
    calm_cpu_threads(environ)
    assert environ == {"OMP_WAIT_POLICY": tuning.OPENMP_WAIT_POLICY} and tuning.OPENMP_WAIT_POLICY == "PASSIVE"
    chosen = {"OMP_WAIT_POLICY": "ACTIVE"}
    calm_cpu_threads(chosen)
    assert chosen == {"OMP_WAIT_POLICY": "ACTIVE"}


def _openmp_spin_count(code: str) -> str | None:
    """GOMP_SPINCOUNT as the OpenMP runtime that torch loads reports it in a fresh process running
    ``code`` (None where that runtime is not GNU OpenMP, which alone reports it this way)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    done = subprocess.run([sys.executable, "-c", code + "; torch.ones(4) + 1"], env=env, capture_output=True,
                          text=True, timeout=tuning.PATIENCE_SECONDS)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r"GOMP_SPINCOUNT = '(\d+)'", done.stderr)
    return found.group(1) if found else None


def test_the_wait_policy_reaches_the_openmp_runtime_torch_loads_after_core():
    """Each entry point (``hsd``, the app, the drafting process) imports ``core`` before torch:
    the runtime then never spins (spin count 0); torch imported alone spins, which this probe sees."""
    alone = _openmp_spin_count("import torch")
    if alone is None:
        pytest.skip("torch's OpenMP runtime here is not GNU OpenMP, which reports its spin count")
    assert alone != "0"
    assert _openmp_spin_count("import core.cli, torch") == "0"
