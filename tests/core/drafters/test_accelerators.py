"""Where the OCR models run (``core.drafters.accelerators``): the provider choice from what onnxruntime
offers, the note, and the fall back to the CPU when an accelerator cannot open a model. None of it
needs a GPU: the choice is tested on the provider lists of each package, the fall back on this
machine's onnxruntime, which has no accelerator to start."""

from __future__ import annotations

import os
import warnings

import pytest

from core.drafters import accelerators
from core.drafters.accelerators import CPU, ProviderChoice, announce, choose_providers, make_session
from core.errors import HSDError, HSDWarning

#: What each onnxruntime package offers (``onnxruntime.get_available_providers()``).
CPU_BUILD = ["AzureExecutionProvider", CPU]
CUDA_BUILD = ["TensorrtExecutionProvider", "CUDAExecutionProvider", CPU]
DIRECTML_BUILD = ["DmlExecutionProvider", CPU]
MAC_BUILD = ["CoreMLExecutionProvider", "AzureExecutionProvider", CPU]


def detector_model() -> str:
    """The smallest model the OCR drafter ships with (rapidocr's text detector)."""
    rapidocr = pytest.importorskip("rapidocr")
    return os.path.join(os.path.dirname(rapidocr.__file__), "models", "PP-OCRv6_det_small.onnx")


@pytest.mark.parametrize("available, platform, expected, named", [
    (CUDA_BUILD, "linux", "CUDAExecutionProvider", "CUDA"),
    (CUDA_BUILD, "win32", "CUDAExecutionProvider", "CUDA"),
    (DIRECTML_BUILD, "win32", "DmlExecutionProvider", "DirectML"),
    (MAC_BUILD, "darwin", "CoreMLExecutionProvider", "CoreML"),
])
def test_auto_takes_the_accelerator_with_the_cpu_behind_it_and_names_it(available, platform, expected, named):
    choice = choose_providers("auto", available=available, platform=platform)
    assert choice.providers == [expected, CPU]
    assert choice.accelerated
    assert named in choice.note and "\n" not in choice.note and "--ocr-device cpu" in choice.note


def test_cuda_comes_before_directml_where_a_machine_offers_both():
    choice = choose_providers("auto", available=["DmlExecutionProvider", "CUDAExecutionProvider", CPU], platform="win32")
    assert choice.providers[0] == "CUDAExecutionProvider"


@pytest.mark.parametrize("available, platform", [
    (CPU_BUILD, "linux"), (CPU_BUILD, "darwin"), ([], "linux"),
    (DIRECTML_BUILD, "linux"),  # a DirectML provider only counts on Windows
    (MAC_BUILD, "linux"),
])
def test_auto_without_an_accelerator_is_the_cpu_and_says_nothing(available, platform):
    assert choose_providers("auto", available=available, platform=platform, gpu_packages=[]) == ProviderChoice([CPU], None)


@pytest.mark.parametrize("package, provider", [("onnxruntime-gpu", "CUDAExecutionProvider"),
                                               ("onnxruntime-directml", "DmlExecutionProvider")])
def test_a_gpu_package_the_cpu_package_was_installed_over_is_the_cpu_with_the_repair_named(package, provider):
    choice = choose_providers("auto", available=CPU_BUILD, platform="win32", gpu_packages=[package])
    assert choice.providers == [CPU]
    assert provider in choice.note and f"pip install --force-reinstall --no-deps {package}" in choice.note
    assert "\n" not in choice.note


def test_a_gpu_package_that_works_is_chosen_without_a_repair():
    choice = choose_providers("auto", available=CUDA_BUILD, platform="linux", gpu_packages=["onnxruntime-gpu"])
    assert choice.providers == ["CUDAExecutionProvider", CPU] and "reinstall" not in choice.note


def test_the_installed_gpu_packages_are_looked_up():
    assert set(accelerators.installed_gpu_packages()) <= set(accelerators.GPU_PACKAGES)


@pytest.mark.parametrize("available", [CUDA_BUILD, DIRECTML_BUILD, MAC_BUILD])
def test_cpu_keeps_the_models_on_the_cpu_whatever_is_offered(available):
    choice = choose_providers("cpu", available=available, platform="win32")
    assert choice == ProviderChoice([CPU], None) and not choice.accelerated


def test_auto_asks_onnxruntime_by_default(monkeypatch):
    onnxruntime = pytest.importorskip("onnxruntime")
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: list(CUDA_BUILD))
    assert choose_providers().providers == ["CUDAExecutionProvider", CPU]
    assert accelerators.available_providers() == CUDA_BUILD


def test_an_unknown_device_is_one_clear_error():
    with pytest.raises(HSDError, match="unknown OCR device 'gpu'; choose one of: auto, cpu"):
        choose_providers("gpu")


def test_the_cpu_opens_a_model_as_asked():
    session, choice = make_session(detector_model(), ProviderChoice([CPU]))
    assert session.get_providers() == [CPU]
    assert choice == ProviderChoice([CPU], None)


@pytest.mark.parametrize("accelerator", ["CUDAExecutionProvider", "DmlExecutionProvider", "CoreMLExecutionProvider"])
def test_an_accelerator_onnxruntime_cannot_start_falls_back_to_the_cpu_with_one_note(accelerator):
    onnxruntime = pytest.importorskip("onnxruntime")
    if accelerator in onnxruntime.get_available_providers():
        pytest.skip(f"this onnxruntime can start {accelerator}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # onnxruntime's own warning about the provider is not shown
        session, choice = make_session(detector_model(), ProviderChoice([accelerator, CPU], "on the accelerator"))
    assert session.get_providers() == [CPU]
    assert choice.providers == [CPU] and accelerator in choice.note and "\n" not in choice.note
    # the next model goes straight to the CPU, and says nothing more
    again, after = make_session(detector_model(), choice)
    assert again.get_providers() == [CPU] and after is choice


def test_an_accelerator_that_fails_to_open_the_model_falls_back_to_the_cpu():
    onnxruntime = pytest.importorskip("onnxruntime")
    asked = []

    def create(path, sess_options=None, providers=None):
        asked.append(list(providers))
        if providers[0] != CPU:
            raise RuntimeError("CUDA failure 100: no CUDA-capable device is detected\n  at cudaGetDevice")
        return onnxruntime.InferenceSession(path, sess_options=sess_options, providers=providers)

    session, choice = make_session(detector_model(), ProviderChoice(["CUDAExecutionProvider", CPU], "on CUDA"),
                                   create=create)
    assert asked == [["CUDAExecutionProvider", CPU], [CPU]]
    assert session.get_providers() == [CPU]
    assert choice.providers == [CPU]
    assert choice.note == ("OCR drafter on the CPU: CUDAExecutionProvider failed "
                           "(CUDA failure 100: no CUDA-capable device is detected at cudaGetDevice)")


def test_directml_gets_the_options_it_runs_with():
    onnxruntime = pytest.importorskip("onnxruntime")
    seen = {}

    def create(path, sess_options=None, providers=None):
        seen["options"] = sess_options
        return onnxruntime.InferenceSession(path, sess_options=sess_options, providers=[CPU])

    make_session(detector_model(), choose_providers("auto", available=DIRECTML_BUILD, platform="win32"), create=create)
    assert seen["options"].enable_mem_pattern is False
    assert seen["options"].execution_mode == onnxruntime.ExecutionMode.ORT_SEQUENTIAL


def test_announce_tells_the_note_once_and_the_cpu_nothing():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        announce(ProviderChoice([CPU]))
        announce(choose_providers("auto", available=CUDA_BUILD, platform="linux"))
    assert [str(w.message) for w in caught] == [choose_providers("auto", available=CUDA_BUILD, platform="linux").note]
    assert caught[0].category is HSDWarning
