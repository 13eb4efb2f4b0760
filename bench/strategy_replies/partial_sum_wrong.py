@triton.jit
def softmax_tiled_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # Tiles of BLOCK columns; the max and the sum are taken over the row's first tile.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    out_row = out_ptr + row * stride
    offsets = tl.arange(0, BLOCK)
    first = tl.load(x_row + offsets, mask=offsets < n_cols, other=float("-inf"))
    row_max = tl.max(first, axis=0)
    inverse = 1.0 / tl.sum(tl.exp(first - row_max), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_row + cols, tl.exp(x - row_max) * inverse, mask=cols < n_cols)
