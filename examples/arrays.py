"""Tack's first example: arrays on the CPU, copies in and out, views and devices."""

import numpy as np

import tack


def main() -> None:
    tack.set_default_device("cpu")
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = tack.array(host)  # an independent copy
    host[:] = -1  # does not change the Tack array
    np.testing.assert_array_equal(
        data.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4)
    )
    tack.copyto(data, host)  # now it does
    np.testing.assert_array_equal(np.asarray(data), host)

    flat = data.reshape(-1)  # a view over the same memory
    flat.fill(2.5)
    assert data.numpy().sum() == 2.5 * 12

    points = tack.zeros(5, dtype=tack.vec3)
    points.fill((1.0, 2.0, 3.0))
    print("points:", points, "first:", points[0])
    print("data:", data, "on", data.device)
    print("Arrays: check passed")


if __name__ == "__main__":
    main()
