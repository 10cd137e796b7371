"""Builds rankmon's optional C accelerators (monitor._speedups); metadata is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "monitor._speedups",
            sources=[
                "monitor/_native/speedups.c",
                "monitor/_native/event_scan.c",
                "monitor/_native/measure_kernel.c",
                "monitor/_native/record_batch.c",
            ],
            depends=[
                "monitor/_native/event_scan.h",
                "monitor/_native/judgments.h",
                "monitor/_native/measure_kernel.h",
                "monitor/_native/record_batch.h",
            ],
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"],
            # Without a C compiler rankmon installs anyway and takes the pure-Python path.
            optional=True,
        )
    ]
)
