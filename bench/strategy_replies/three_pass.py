@triton.jit
def softmax_three_pass_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # One program per row: the row's max, then the sum of exponentials, then the output.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    out_row = out_ptr + row * stride
    offsets = tl.arange(0, BLOCK)
    running_max = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)
    running_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
        running_sum += tl.exp(x - row_max)
    inverse = 1.0 / tl.sum(running_sum, axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_row + cols, tl.exp(x - row_max) * inverse, mask=cols < n_cols)
