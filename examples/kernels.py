# mypy: allow-untyped-defs
# (Kernels take no annotations: their types come from the arguments of each call.)
"""Kernels on the CPU: fill_indices and radius_squared (the kernel of docs/kernels.md),
checked against NumPy."""

import numpy as np

import tack


@tack.kernel
def fill_indices(out):
    for i in range(out.shape[0]):
        out[i] = float(i)


@tack.kernel
def radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


def main() -> None:
    tack.set_default_device("cpu")
    out = tack.zeros(8, dtype=tack.f32)
    fill_indices(out)
    np.testing.assert_array_equal(out.numpy(), np.arange(8, dtype=np.float32))

    # A 9 x 7 x 5 image, x fastest (VTK's point order), as in docs/kernels.md.
    values = tack.zeros(9 * 7 * 5, dtype=tack.f32)
    radius_squared(values, 9, 7)
    z, y, x = np.mgrid[:5, :7, :9]
    expected = ((x - 4) ** 2 + (y - 3) ** 2 + (z - 2) ** 2).ravel().astype(np.float32)
    np.testing.assert_array_equal(values.numpy(), expected)
    print("radius_squared[:9]:", values.numpy()[:9])
    print("Kernels: check passed")


if __name__ == "__main__":
    main()
