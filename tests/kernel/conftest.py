"""The real kernel of the kernel group: one per test module, shared by its tests.

It is `kernels.running_kernel` with the embedded provider's URL in `BASE` and the `%%stream`
magic loaded; a test names its own variables and awaits its own streams, so that the next test
finds the kernel idle. Tests that run a whole notebook (nbclient, nbconvert, papermill) start
their own kernels instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kernels import Kernel, running_kernel

from streamwidgets.server import DemoServer


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, demo_server: DemoServer) -> Iterator[Kernel]:
    yield from running_kernel(tmp_path_factory.mktemp("kernel"), demo_server, "%load_ext streamwidgets")
