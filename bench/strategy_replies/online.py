{DECORATORS}@triton.jit
def softmax_online_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # One program per row. The first pass keeps, per lane, a running max and the sum of
    # exponentials rescaled to it (online softmax), so the row is read twice instead of three
    # times; the second pass writes the output.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    out_row = out_ptr + row * stride
    offsets = tl.arange(0, BLOCK)
    lane_max = tl.full([BLOCK], float("-inf"), tl.float32)
    lane_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"){FIRST_LOAD_HINT})
        new_max = tl.maximum(lane_max, x)
        seen = new_max > float("-inf")
        rescale = tl.where(seen, tl.exp(lane_max - new_max), 0.0)
        lane_sum = lane_sum * rescale + tl.where(seen, tl.exp(x - new_max), 0.0)
        lane_max = new_max
    row_max = tl.max(lane_max, axis=0)
    row_sum = tl.sum(tl.where(lane_max > float("-inf"), lane_sum * tl.exp(lane_max - row_max), 0.0), axis=0)
    inverse = 1.0 / row_sum
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0{SECOND_LOAD_HINT})
        tl.store(out_row + cols, tl.exp(x - row_max) * inverse, mask=cols < n_cols{STORE_HINT})
