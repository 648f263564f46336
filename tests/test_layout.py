"""The layout check (`layout.py`, run by `conftest.py` at every collection) and the guard that
keeps real kernels out of the fast suite."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest
from layout import layout_problems


def test_a_test_in_the_right_folder_with_the_right_mark_passes():
    tests = [
        (PurePath("kernel/test_kernel.py"), "tests/kernel/test_kernel.py::test_a", {"kernel"}),
        (PurePath("browser/test_voila.py"), "tests/browser/test_voila.py::test_b", {"browser", "slow"}),
        (PurePath("net/test_litellm.py"), "tests/net/test_litellm.py::test_c", {"gateway"}),
        (PurePath("core/test_sse.py"), "tests/core/test_sse.py::test_d", {"parametrize"}),
        (PurePath("test_package.py"), "tests/test_package.py::test_e", set()),
    ]
    assert layout_problems(tests) == []


def test_a_mark_outside_its_folder_a_folder_without_its_mark_and_a_shared_name_are_refused():
    tests = [
        (PurePath("apps/test_magic.py"), "tests/apps/test_magic.py::test_in_a_kernel", {"kernel"}),
        (PurePath("test_install.py"), "tests/test_install.py::test_wheel", {"kernel", "slow"}),
        (PurePath("kernel/test_export.py"), "tests/kernel/test_export.py::test_pure", set()),
        (PurePath("browser/test_voila.py"), "tests/browser/test_voila.py::test_x", {"kernel"}),
        (PurePath("net/test_leaks.py"), "tests/net/test_leaks.py::test_y", set()),
        (PurePath("kernel/test_leaks.py"), "tests/kernel/test_leaks.py::test_z", {"kernel"}),
    ]
    assert layout_problems(tests) == [
        "tests/apps/test_magic.py::test_in_a_kernel is marked `kernel`: it belongs in tests/kernel/",
        "tests/test_install.py::test_wheel is marked `kernel`: it belongs in tests/kernel/",
        "tests/kernel/test_export.py::test_pure is in tests/kernel/ but not marked `kernel`",
        "tests/browser/test_voila.py::test_x is in tests/browser/ but not marked `browser`",
        "tests/browser/test_voila.py::test_x is marked `kernel`: it belongs in tests/kernel/",
        "2 test files are named test_leaks.py: kernel/test_leaks.py, net/test_leaks.py",
    ]


def test_a_kernel_started_outside_the_kernel_group_fails_the_test(tmp_path: Path):
    from kernels import kernel_env, kernel_manager

    manager = kernel_manager(tmp_path)
    with pytest.raises(RuntimeError, match=r"test_layout\.py::test_a_kernel_started.* starts a real kernel"):
        manager.start_kernel(env=kernel_env(tmp_path))
    assert not manager.has_kernel
