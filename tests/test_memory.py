"""The CLI's allocator choice (memory.py), checked on this machine's real C allocator in fresh processes: after
a large block is freed, a block of vectors freed later leaves the RSS only with the choice made."""

import json
import os
import subprocess
import sys

import pytest

# A 24 MB block freed raises glibc's threshold for mapping blocks on their own to 24 MB (it rises up to 32 MB); a
# 16 MB block then comes from the heap, and a small block allocated after it keeps the heap from shrinking.
PROGRAM = """
import json, sys
import numpy as np
from semsearch.memory import release_large_blocks

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

chosen = release_large_blocks() if sys.argv[1] == "release" else False
first = np.ones(3 << 20)  # 24 MB
del first
block = np.ones(2 << 20)  # 16 MB, every page touched
after = np.ones(1 << 12)  # 32 KB, above it on the heap where the heap holds it
before = rss_mib()
del block
print(json.dumps({"chosen": chosen, "freed_mib": before - rss_mib()}))
"""


def freed(mode: str) -> dict:
    # glibc's defaults: a MALLOC_* variable (Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in this process for the
    # workers it starts) turns the rising threshold off
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux")
def test_freed_blocks_of_vectors_leave_the_rss_once_large_blocks_are_released():
    released, default = freed("release"), freed("default")
    assert released["chosen"] is True
    assert released["freed_mib"] > 15, released  # the 16 MB block went back to the system
    assert default["freed_mib"] < 4, default  # glibc's default kept it: what the choice changes
