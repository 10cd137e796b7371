"""Builds rankmon's optional C accelerators (monitor._speedups); metadata is in pyproject.toml.

Each stage's C code, and its CPython binding, sits next to the Python it speeds up;
`monitor/_speedups.c` is the module that ties them together (`bindings.h` what they share).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "monitor._speedups",
            sources=[
                "monitor/_speedups.c",
                "monitor/ingest/decode_binding.c",
                "monitor/ingest/event_scan.c",
                "monitor/kafka/record_batch.c",
                "monitor/scoring/index_binding.c",
                "monitor/scoring/judgments.c",
                "monitor/scoring/measure_kernel.c",
                "monitor/scoring/qrels_scan.c",
                "monitor/trec/run_binding.c",
                "monitor/trec/run_order.c",
            ],
            depends=[
                "monitor/_native/bindings.h",
                "monitor/scoring/ascii_text.h",
                "monitor/scoring/id_table.h",
                "monitor/ingest/event_scan.h",
                "monitor/kafka/record_batch.h",
                "monitor/scoring/index_binding.h",
                "monitor/scoring/judgments.h",
                "monitor/scoring/measure_kernel.h",
                "monitor/scoring/qrels_scan.h",
                "monitor/trec/run_order.h",
            ],
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-pthread"],
            # The run coder reads a large run in two parts at once (monitor/trec/run_order.c).
            extra_link_args=["-pthread"],
            # Without a C compiler rankmon installs anyway and takes the pure-Python path.
            optional=True,
        )
    ]
)
