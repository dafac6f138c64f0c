"""Exchange with other libraries' array types.

``tack.interop.vtk`` moves arrays between Tack and VTK without copies;
``tack.interop.vtk_dlpack`` provides VTK's DLPack functions for VTK builds that lack
``vtkmodules.util.dlpack_support``. Neither is imported by ``import tack``: VTK is an
optional dependency.
"""
