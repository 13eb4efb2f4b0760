"""Several modules' programs in one file: top-level names under a prefix, locals left alone."""
from __future__ import annotations

import ast

from kforge_worker.module_names import prefix_module_names

SOURCE = '''from __future__ import annotations
import torch
import triton
import triton.language as tl
BLOCK = 1024


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=offs < n), 0.0), mask=offs < n)


def launch(x, out):
    relu_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), BLOCK=BLOCK)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        launch(x, out)
        return out
'''


def test_top_level_names_get_the_prefix_and_locals_do_not():
    renamed = prefix_module_names(SOURCE, "kf_part0_")
    tree = ast.parse(renamed)
    top = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assert top == ["kf_part0_relu_kernel", "kf_part0_launch", "kf_part0_ModelNew"]
    assert "kf_part0_BLOCK = 1024" in renamed
    # The kernel's parameter BLOCK shadows the global: untouched inside; a keyword stays a keyword.
    assert "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)" in renamed
    assert "BLOCK=kf_part0_BLOCK" in renamed
    assert "kf_part0_launch(x, out)" in renamed and "def forward(self, x):" in renamed
    assert "__future__" not in renamed and "import triton.language as tl" in renamed


def test_two_renamed_modules_live_in_one_namespace():
    namespace: dict = {}
    exec(compile(prefix_module_names(SOURCE.replace("@triton.jit\n", ""), "a_") +
                 prefix_module_names(SOURCE.replace("@triton.jit\n", ""), "b_"), "<composed>", "exec"), namespace)
    assert {"a_ModelNew", "b_ModelNew", "a_BLOCK", "b_BLOCK"} <= set(namespace)
