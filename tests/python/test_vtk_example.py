"""The main example (examples/vtk_interop.py) and the validator's VTK checks, run as a
user runs them, plus the picture it draws without OpenGL."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tack
from tack.interop.vtk import vtk_to_array

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))

# VTK is optional: without it the module is skipped, never an error (the examples
# below import it too).
vtkImageData = pytest.importorskip("vtkmodules.vtkCommonDataModel").vtkImageData
vtkPNGReader = pytest.importorskip("vtkmodules.vtkIOImage").vtkPNGReader

import vtk_interop  # noqa: E402  (from the examples folder, put on the path above)
import vtk_render  # noqa: E402


def run_script(*args, cwd):
    env = dict(os.environ)
    # The scripts run in another folder: keep a relative PYTHONPATH (the sanitized
    # build's stage) pointing where it points here.
    if env.get("PYTHONPATH"):
        parts = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in parts if p)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def read_png(path):
    reader = vtkPNGReader(file_name=str(path))
    reader.Update()
    picture = reader.GetOutput()
    pixels = np.asarray(picture.point_data.GetScalars())
    return picture.GetDimensions(), pixels


def test_the_example_writes_the_image_and_its_picture(tmp_path):
    script = os.path.abspath(os.path.join(EXAMPLES, "vtk_interop.py"))
    done = run_script(script, "--output", "radius.vti", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VTK interop: check passed" in done.stdout
    # The .vti reads back equal.
    image = vtk_render.read_vti(str(tmp_path / "radius.vti"))
    assert image.GetDimensions() == (9, 7, 5)
    values = vtk_to_array(image.point_data["radius_squared"])
    np.testing.assert_array_equal(values.numpy(), vtk_interop.expected_field())
    # The picture, next to the .vti, is not blank.
    dimensions, pixels = read_png(tmp_path / "radius.png")
    assert dimensions[0] >= 300 and dimensions[1] >= 200
    assert len(np.unique(pixels.reshape(len(pixels), -1), axis=0)) > 8


def test_the_png_can_be_named_alone(tmp_path):
    script = os.path.abspath(os.path.join(EXAMPLES, "vtk_interop.py"))
    done = run_script(script, "--png", "field.png", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "field.png").exists() and (tmp_path / "field.vti").exists()


def test_the_picture_without_opengl(tmp_path):
    vti = str(tmp_path / "radius.vti")
    vtk_interop.write_vti(vtk_interop.run(), vti)
    vtk_render.render_slice(vti, str(tmp_path / "slice.png"), "radius_squared")
    dimensions, pixels = read_png(tmp_path / "slice.png")
    assert dimensions[:2] == (360, 280)
    # The centre of the middle slice holds the smallest value: blue, not red.
    centre = pixels.reshape(280, 360, -1)[140, 180]
    assert centre[2] > centre[0]


def test_a_crashing_opengl_child_falls_back_to_the_slice(tmp_path, monkeypatch):
    # What VTK does on a machine with no X, EGL or OSMesa: the render child dies of
    # a segmentation fault. Here a stand-in interpreter dies the same way.
    vti = str(tmp_path / "radius.vti")
    vtk_interop.write_vti(vtk_interop.run(), vti)
    crash = tmp_path / "crash.sh"
    crash.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crash.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(crash))
    assert vtk_render.write_png(vti, str(tmp_path / "radius.png")) == "slice"
    assert read_png(tmp_path / "radius.png")[0][:2] == (360, 280)


def test_the_picture_when_opengl_cannot_start(tmp_path, monkeypatch):
    # No display and no EGL vendor: VTK's own fallbacks decide (OSMesa where it is
    # installed); either way the example must end with a PNG, never a crash.
    vti = str(tmp_path / "radius.vti")
    vtk_interop.write_vti(vtk_interop.run(), vti)
    monkeypatch.setenv("DISPLAY", "")
    monkeypatch.setenv("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent.json")
    how = vtk_render.write_png(vti, str(tmp_path / "radius.png"))
    assert how in ("opengl", "slice")
    assert read_png(tmp_path / "radius.png")[0][0] > 0


def test_run_shares_one_allocation():
    image = vtk_interop.run()
    assert isinstance(image, vtkImageData)
    scalars = image.point_data.GetScalars()
    assert scalars.GetName() == "radius_squared"
    shared = vtk_to_array(scalars)
    shared.fill(1.0)
    assert scalars.GetValue(10) == 1.0
    assert tack.get_default_device().name == "cpu"


def test_validate_with_vtk(tmp_path):
    script = os.path.abspath(os.path.join(EXAMPLES, "validate.py"))
    done = run_script(script, "--arch", "cpu", "--vtk", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "validate: all checks passed" in done.stdout
    assert done.stdout.count("ok    VTK") == 3
