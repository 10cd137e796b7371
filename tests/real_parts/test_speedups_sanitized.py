"""monitor._speedups under AddressSanitizer and UBSan: damaged events never touch bad memory.

The service runs for months on whatever the topic holds, so the C module is built again here
with -fsanitize=address,undefined and driven with thousands of damaged events (bit flips,
deletions, stray quotes, NUL and 0xFF bytes, tombstones) through `decode_events`,
`measure_codes`, `ideal_rows` and `JudgmentIndex.codes`, and with damaged run and qrels files
through the run coder (fed in chunks of every size) and `JudgmentIndex.from_qrels`, in a
subprocess with the sanitizer runtime preloaded: any out-of-bounds access, use after free or
undefined behaviour aborts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Every C source under monitor/ (test_deploy.py checks that setup.py builds each of them).
SOURCES = sorted((ROOT / "monitor").rglob("*.c"))


def runtime(gcc: str, name: str) -> str:
    found = subprocess.run(
        [gcc, f"-print-file-name={name}"], check=True, capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(found):
        pytest.skip(f"gcc has no {name}")
    return found


def test_the_c_module_survives_damaged_events_under_sanitizers(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        if os.environ.get("CI"):
            pytest.fail("gcc is missing on CI: the sanitized build of monitor._speedups must run")
        pytest.skip("gcc is not installed")
    module = tmp_path / "_speedups_sanitized.so"
    build = [
        gcc,
        "-shared",
        "-fPIC",
        "-std=c99",
        "-O1",
        "-g",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
        "-fno-omit-frame-pointer",
        "-pthread",
        f"-I{sysconfig.get_paths()['include']}",
        "-o",
        str(module),
        *map(str, SOURCES),
    ]
    compiled = subprocess.run(build, check=False, capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    env = {
        **os.environ,
        "LD_PRELOAD": f"{runtime(gcc, 'libasan.so')} {runtime(gcc, 'libubsan.so')}",
        "ASAN_OPTIONS": "detect_leaks=0",  # CPython itself keeps memory until exit
        "PYTHONMALLOC": "malloc",  # past pymalloc's pools, so ASan sees every object
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    }
    driver = ROOT / "tests" / "native" / "fuzz_speedups.py"
    run = subprocess.run(
        [sys.executable, str(driver), str(module), "7", "300"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    ok, accepted, punted, records, corrupt = run.stdout.split()
    assert ok == "ok" and int(accepted) > 100 and int(punted) > 100
    assert int(records) > 1000 and int(corrupt) > 100  # record batches: read and refused
