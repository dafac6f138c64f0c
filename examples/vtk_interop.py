"""Share a VTK image's scalars with Tack on the CPU, compute on them, export them to VTK.

A 9 x 7 x 5 vtkImageData gets a float array that VTK allocates. Tack wraps that
allocation without copying, a Tack kernel writes each point's squared distance from
the centre into it, and the Tack array goes back to VTK as a second array over the
same memory. The values are checked against NumPy; ``--output`` writes the image as a
.vti file, and ``--png`` (by default next to the .vti) renders it offscreen.

Works with the PyPI VTK 9.7.1 wheel: where VTK lacks vtkmodules.util.dlpack_support,
Tack's own implementation of it shares the host memory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np
from vtkmodules.vtkCommonCore import vtkFloatArray
from vtkmodules.vtkCommonDataModel import vtkImageData

import tack
from tack.interop.vtk import array_to_vtk, vtk_to_array

DIMENSIONS = (9, 7, 5)


@tack.kernel
def radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


def expected_field() -> np.ndarray:
    """The NumPy reference. A VTK structured image's x index varies fastest."""
    nx, ny, nz = DIMENSIONS
    z, y, x = np.mgrid[:nz, :ny, :nx]
    centre = [(n - 1) / 2 for n in DIMENSIONS]
    r2 = (x - centre[0]) ** 2 + (y - centre[1]) ** 2 + (z - centre[2]) ** 2
    return r2.ravel().astype(np.float32)


def run() -> vtkImageData:
    """Build the image, fill it through Tack, export back to VTK, and check it."""
    tack.set_default_device("cpu")
    image = vtkImageData(dimensions=DIMENSIONS)
    initial = vtkFloatArray(number_of_tuples=image.number_of_points)  # VTK allocates it
    initial.Fill(0.0)
    image.point_data.SetScalars(
        initial
    )  # attribute data has no settable scalars property
    values = vtk_to_array(initial)  # shares VTK's allocation; retains its owner
    radius_squared(values, DIMENSIONS[0], DIMENSIONS[1])
    result = array_to_vtk(values, name="radius_squared")  # shares the Tack field
    image.point_data.SetScalars(result)

    expected = expected_field()
    np.testing.assert_array_equal(np.asarray(initial), expected)
    np.testing.assert_array_equal(np.asarray(result), expected)
    # Nothing was copied: the two VTK arrays and the Tack array are one allocation.
    assert values.ptr == int(initial.GetPointer(0).split("_")[1], 16)
    assert np.asarray(result).__array_interface__["data"][0] == values.ptr
    # An edit through Tack shows in both VTK arrays.
    values.fill(123.0)
    assert np.asarray(initial)[0] == 123 and np.asarray(result)[0] == 123
    radius_squared(values, DIMENSIONS[0], DIMENSIONS[1])
    np.testing.assert_array_equal(np.asarray(result), expected)
    return image


def write_vti(image: vtkImageData, path: str) -> None:
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    writer = vtkXMLImageDataWriter(file_name=path)
    image >> writer
    # Write(), not writer(image): the call returns None and only logs a failure.
    if writer.Write() != 1:
        raise RuntimeError(f"VTK could not write {path}")


def _read_vti(path: str) -> vtkImageData:
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader

    reader = vtkXMLImageDataReader(file_name=path)
    reader.Update()
    return reader.GetOutput()


def _lookup_table(value_range: tuple[float, float]):
    from vtkmodules.vtkCommonCore import vtkLookupTable

    table = vtkLookupTable(hue_range=(0.667, 0.0), table_range=value_range)
    table.Build()
    return table


def render_gl(vti_path: str, png_path: str) -> None:
    """Render the image offscreen with OpenGL: its faces, two isosurfaces, a colour bar.

    Runs in a child process (see write_png): a machine without a working OpenGL
    (no X display, no EGL, no OSMesa) can crash VTK rather than raise.
    """
    import vtkmodules.vtkRenderingFreeType  # text rendering
    import vtkmodules.vtkRenderingOpenGL2  # noqa: F401  the OpenGL render window
    from vtkmodules.vtkFiltersCore import vtkContourFilter
    from vtkmodules.vtkFiltersGeometry import vtkDataSetSurfaceFilter
    from vtkmodules.vtkFiltersModeling import vtkOutlineFilter
    from vtkmodules.vtkIOImage import vtkPNGWriter
    from vtkmodules.vtkRenderingAnnotation import vtkScalarBarActor
    from vtkmodules.vtkRenderingCore import (
        vtkActor,
        vtkPolyDataMapper,
        vtkRenderer,
        vtkRenderWindow,
        vtkTextActor,
        vtkWindowToImageFilter,
    )

    image = _read_vti(vti_path)
    image.point_data.SetActiveScalars("radius_squared")
    value_range = image.point_data["radius_squared"].GetRange()
    table = _lookup_table(value_range)

    def actor(source, opacity: float = 1.0) -> vtkActor:
        mapper = vtkPolyDataMapper(lookup_table=table, scalar_range=value_range)
        source >> mapper
        result = vtkActor(mapper=mapper)
        result.property.opacity = opacity
        return result

    faces = vtkDataSetSurfaceFilter(input_data=image)
    contours = vtkContourFilter(input_data=image)
    contours.SetValue(0, 4.0)
    contours.SetValue(1, 12.0)
    outline = vtkOutlineFilter(input_data=image)
    outline_actor = actor(outline)
    outline_actor.mapper.scalar_visibility = False
    outline_actor.property.color = (0.1, 0.1, 0.1)

    renderer = vtkRenderer(background=(1.0, 1.0, 1.0))
    for item in (actor(faces, 0.35), actor(contours), outline_actor):
        renderer.AddActor(item)
    bar = vtkScalarBarActor(lookup_table=table, title="r^2", number_of_labels=5)
    for text in (bar.title_text_property, bar.label_text_property):
        text.color = (0.0, 0.0, 0.0)
        text.shadow = False
    renderer.AddViewProp(bar)
    title = vtkTextActor(input="radius_squared on a 9 x 7 x 5 image, computed by Tack")
    title.text_property.color = (0.0, 0.0, 0.0)
    title.text_property.font_size = 16
    title.SetDisplayPosition(10, 10)
    renderer.AddViewProp(title)
    camera = renderer.active_camera
    camera.Azimuth(35)
    camera.Elevation(25)
    renderer.ResetCamera()
    camera.Zoom(0.9)

    window = vtkRenderWindow(size=(640, 480), off_screen_rendering=True)
    window.AddRenderer(renderer)
    window.Render()
    grab = vtkWindowToImageFilter(input=window)
    writer = vtkPNGWriter(file_name=png_path)
    grab >> writer
    writer.Write()


def render_slice(image: vtkImageData, png_path: str) -> None:
    """Without OpenGL: the middle z slice, colour-mapped and enlarged, as a PNG."""
    from vtkmodules.vtkImagingCore import (
        vtkExtractVOI,
        vtkImageMapToColors,
        vtkImageResize,
    )
    from vtkmodules.vtkIOImage import vtkPNGWriter

    nx, ny, nz = DIMENSIONS
    value_range = image.point_data.GetScalars().GetRange()
    middle = vtkExtractVOI(
        input_data=image, voi=(0, nx - 1, 0, ny - 1, nz // 2, nz // 2)
    )
    resize = vtkImageResize(output_dimensions=(40 * nx, 40 * ny, 1), interpolate=False)
    colours = vtkImageMapToColors(lookup_table=_lookup_table(value_range))
    writer = vtkPNGWriter(file_name=png_path)
    middle >> resize >> colours >> writer
    writer.Write()


def write_png(image: vtkImageData, vti_path: str, png_path: str) -> str:
    """Render ``vti_path`` to ``png_path``; returns how ("opengl" or "slice").

    The OpenGL render runs in a child process that reads the .vti file. Without a
    display it asks VTK for an EGL window (VTK falls back to OSMesa by itself). If
    that child fails, the picture is made without OpenGL instead.
    """
    env = dict(os.environ)
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        env.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--render-gl", vti_path, png_path],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if child.returncode == 0 and os.path.exists(png_path):
        return "opengl"
    print(
        "offscreen OpenGL rendering is not available here (install libegl1 and "
        "libgl1-mesa-dri, or libosmesa6); writing a colour-mapped slice instead",
        file=sys.stderr,
    )
    render_slice(image, png_path)
    return "slice"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="write the updated VTK image as a .vti file")
    parser.add_argument(
        "--png", help="render the image to this PNG (default: next to --output)"
    )
    parser.add_argument("--render-gl", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.render_gl:
        render_gl(*args.render_gl)
        return

    image = run()
    vti_path = args.output
    png_path = args.png
    if png_path is None and vti_path:
        png_path = os.path.splitext(vti_path)[0] + ".png"
    if png_path and not vti_path:
        vti_path = os.path.splitext(png_path)[0] + ".vti"
    if vti_path:
        write_vti(image, vti_path)
        print(f"wrote {vti_path}")
    if png_path:
        how = write_png(image, vti_path, png_path)
        print(f"wrote {png_path} ({how})")
    print("VTK interop: check passed")


if __name__ == "__main__":
    main()
