"""Render a .vti image's point scalars to a PNG, offscreen, with VTK alone.

    python examples/vtk_render.py radius.vti radius.png [--array radius_squared]

``write_png`` renders with OpenGL in a child process (this script), so that a machine
whose OpenGL cannot start -- no X display, no EGL, no OSMesa, where VTK may crash
rather than raise -- cannot take the caller down. Without a display it asks VTK for an
EGL window (Mesa's llvmpipe renders on the CPU; VTK falls back to OSMesa by itself).
If the child fails, the picture is made by VTK's imaging pipeline without OpenGL: the
middle z slice, colour-mapped and enlarged.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from vtkmodules.vtkCommonCore import vtkLookupTable
from vtkmodules.vtkCommonDataModel import vtkImageData
from vtkmodules.vtkCommonExecutionModel import vtkAlgorithm


def read_vti(path: str) -> vtkImageData:
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader

    reader = vtkXMLImageDataReader(file_name=path)
    reader.Update()
    image: vtkImageData = reader.GetOutput()
    return image


def lookup_table(value_range: tuple[float, float]) -> vtkLookupTable:
    table = vtkLookupTable(hue_range=(0.667, 0.0), table_range=value_range)
    table.Build()
    return table


def render_gl(vti_path: str, png_path: str, array: str) -> None:
    """The image's faces, two isosurfaces, its outline and a colour bar, via OpenGL."""
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

    image = read_vti(vti_path)
    image.point_data.SetActiveScalars(array)
    value_range = image.point_data[array].GetRange()
    table = lookup_table(value_range)

    def actor(source: vtkAlgorithm, opacity: float = 1.0) -> vtkActor:
        mapper = vtkPolyDataMapper(lookup_table=table, scalar_range=value_range)
        mapper.SetInputConnection(source.GetOutputPort())
        result = vtkActor(mapper=mapper)
        result.property.opacity = opacity
        return result

    faces = vtkDataSetSurfaceFilter(input_data=image)
    low, high = value_range
    contours = vtkContourFilter(input_data=image)
    contours.SetValue(0, low + 0.15 * (high - low))
    contours.SetValue(1, low + 0.4 * (high - low))
    outline = actor(vtkOutlineFilter(input_data=image))
    outline.mapper.scalar_visibility = False
    outline.property.color = (0.1, 0.1, 0.1)

    renderer = vtkRenderer(background=(1.0, 1.0, 1.0))
    for item in (actor(faces, 0.35), actor(contours), outline):
        renderer.AddActor(item)
    bar = vtkScalarBarActor(lookup_table=table, title=array, number_of_labels=5)
    for text in (bar.title_text_property, bar.label_text_property):
        text.color = (0.0, 0.0, 0.0)
        text.shadow = False
    renderer.AddViewProp(bar)
    nx, ny, nz = image.GetDimensions()
    title = vtkTextActor(input=f"{array} on a {nx} x {ny} x {nz} image")
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
    writer = vtkPNGWriter(file_name=png_path)
    writer.SetInputConnection(vtkWindowToImageFilter(input=window).GetOutputPort())
    writer.Write()  # an image writer's Write() returns nothing
    if writer.GetErrorCode():
        raise RuntimeError(f"VTK could not write {png_path}")


def render_slice(vti_path: str, png_path: str, array: str) -> None:
    """Without OpenGL: the middle z slice, colour-mapped and enlarged 40 times."""
    from vtkmodules.vtkImagingCore import (
        vtkExtractVOI,
        vtkImageMapToColors,
        vtkImageResize,
    )
    from vtkmodules.vtkIOImage import vtkPNGWriter

    image = read_vti(vti_path)
    image.point_data.SetActiveScalars(array)
    nx, ny, nz = image.GetDimensions()
    value_range = image.point_data[array].GetRange()
    middle = vtkExtractVOI(input_data=image, voi=(0, nx - 1, 0, ny - 1, nz // 2, nz // 2))
    resize = vtkImageResize(output_dimensions=(40 * nx, 40 * ny, 1), interpolate=False)
    colours = vtkImageMapToColors(lookup_table=lookup_table(value_range))
    writer = vtkPNGWriter(file_name=png_path)
    resize.SetInputConnection(middle.GetOutputPort())
    colours.SetInputConnection(resize.GetOutputPort())
    writer.SetInputConnection(colours.GetOutputPort())
    writer.Write()  # an image writer's Write() returns nothing
    if writer.GetErrorCode():
        raise RuntimeError(f"VTK could not write {png_path}")


def write_png(vti_path: str, png_path: str, array: str = "radius_squared") -> str:
    """Render ``vti_path`` to ``png_path``; returns how: "opengl" or "slice"."""
    env = dict(os.environ)
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        env.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
    if os.path.exists(png_path):
        os.remove(png_path)
    child = subprocess.run(
        [
            sys.executable,
            os.path.abspath(__file__),
            vti_path,
            png_path,
            "--array",
            array,
        ],
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
        "libgl1-mesa-dri, or libosmesa6); drawing the middle slice without it",
        file=sys.stderr,
    )
    render_slice(vti_path, png_path, array)
    return "slice"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vti")
    parser.add_argument("png")
    parser.add_argument("--array", default="radius_squared")
    args = parser.parse_args()
    render_gl(args.vti, args.png, args.array)
