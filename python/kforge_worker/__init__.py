"""kforge's worker runtime: the Python side of kernelforge.

Workers answer requests from the C++ orchestrator over length-prefixed JSON pipes. A trusted
worker loads tasks, runs references and compares outputs; a zygote forks one short-lived,
sandboxed child per untrusted candidate. Policy (what a result means) lives in C++.
"""
